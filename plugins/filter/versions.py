# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the support matrix (plugins/module_utils/versions.py)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kfocp.kubeflow.plugins.module_utils import versions
from ansible_collections.kfocp.kubeflow.plugins.plugin_utils.filters import as_filter as _wrap


class FilterModule(object):
    def filters(self):
        return {
            "versions_choose": _wrap(versions.choose),
        }
