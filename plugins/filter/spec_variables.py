# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Kubeflow resource's spec as role variables (plugins/module_utils/spec_keys.py)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kfocp.kubeflow.plugins.module_utils import spec_keys


class FilterModule(object):
    def filters(self):
        # Not wrapped in plugin_utils.filters.as_filter: that copies its arguments into plain data,
        # and the spec's values must reach the roles as they came (marked unsafe by ansible-operator).
        return {"spec_variables": spec_keys.variables}
