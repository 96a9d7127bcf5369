# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that expose the pure object builders of plugins/module_utils/builders to roles."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kfocp.kubeflow.plugins.module_utils import settings
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import pod_security, scc
from ansible_collections.kfocp.kubeflow.plugins.plugin_utils.filters import as_filter as _wrap


class FilterModule(object):
    def filters(self):
        return {
            # a tenancy role's settings from its variables (module_utils/settings.py): its defaults
            # and what is derived, e.g. "{{ __scc_input | kfocp.kubeflow.role_settings('scc') }}"
            "role_settings": _wrap(lambda variables, role: settings.resolve(role, variables)),
            "scc_objects": _wrap(scc.objects),
            "scc_rolebindings": _wrap(scc.rolebindings),
            "scc_audit": _wrap(scc.audit_table),
            "pod_security_level": _wrap(pod_security.pod_level),
            "pod_security_verify": _wrap(pod_security.verify_rows),
        }
