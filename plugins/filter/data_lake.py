# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the data_lake role's builder."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import data_lake
from ansible_collections.kfocp.kubeflow.plugins.plugin_utils.filters import as_filter as _wrap


class FilterModule(object):
    def filters(self):
        return {
            "data_lake_check": _wrap(data_lake.check),
            "data_lake_mode": _wrap(data_lake.cluster_mode),
            "data_lake_plan": _wrap(data_lake.plan),
            "data_lake_aws_roles": _wrap(data_lake.aws_roles),
            "data_lake_aws_role_candidates": _wrap(data_lake.aws_role_candidates),
            "data_lake_aws_roles_to_remove": _wrap(data_lake.aws_roles_to_remove),
        }
