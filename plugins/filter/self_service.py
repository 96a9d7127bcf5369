# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the profile_self_service role."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import self_service
from ansible_collections.kfocp.kubeflow.plugins.plugin_utils.filters import as_filter as _wrap


class FilterModule(object):
    def filters(self):
        return {"self_service_objects": _wrap(self_service.objects)}
