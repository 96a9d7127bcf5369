# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters of the Day 2 playbooks (status.yml): the drift report and its table."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.kfocp.kubeflow.plugins.module_utils import drift
from ansible_collections.kfocp.kubeflow.plugins.plugin_utils.filters import as_filter as _wrap


def drift_report(results, roles=None):
    try:
        return drift.report(results, roles)
    except ValueError as err:
        raise AnsibleFilterError(str(err))


class FilterModule(object):
    def filters(self):
        return {"drift_report": _wrap(drift_report), "drift_table": _wrap(drift.table)}
