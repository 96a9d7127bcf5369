# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that expose the multi-tenancy builders (profiles, namespace policies) to roles, and the
profiles report to playbooks."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kfocp.kubeflow.plugins.module_utils import profiles_report as report
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies, profiles
from ansible_collections.kfocp.kubeflow.plugins.plugin_utils.filters import as_filter as _wrap


def profiles_objects(settings, users=None, groups=None, live_profiles=None, namespaces=None):
    return profiles.objects(settings, users or (), groups or (), live_profiles or (), namespaces)


def namespace_policies_objects(namespaces, settings, all_namespaces=None, serviceaccounts=None, memberroll=None):
    return namespace_policies.objects(namespaces, settings, all_namespaces, serviceaccounts, memberroll)


def profiles_never_released(live_profiles, namespaces=None):
    return profiles.never_released(live_profiles or (), namespaces or ())


def profiles_report(live_profiles, rolebindings=None, quotas=None, instance="kfocp"):
    return report.report(live_profiles or (), rolebindings or (), quotas or (), instance)


def profiles_report_table(data):
    return report.table(data)


class FilterModule(object):
    def filters(self):
        return {
            "profiles_objects": _wrap(profiles_objects),
            "namespace_policies_objects": _wrap(namespace_policies_objects),
            "profiles_never_released": _wrap(profiles_never_released),
            "profiles_report": _wrap(profiles_report),
            "profiles_report_table": _wrap(profiles_report_table),
        }
