# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that expose the service mesh and ingress auth builders to roles and playbooks."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import auth, mesh
from ansible_collections.kfocp.kubeflow.plugins.plugin_utils.filters import as_filter as _wrap


def _istio_api_versions(settings):
    s = mesh.normalise(settings)
    return mesh.istio_api_versions(s["flavour"], s["external"]["api"])


class FilterModule(object):
    def filters(self):
        return {
            "mesh_settings": _wrap(mesh.normalise),
            "mesh_objects": _wrap(mesh.objects),
            "mesh_gateway_info": _wrap(mesh.gateway_info),
            "mesh_operator_package": _wrap(mesh.operator_package),
            "mesh_control_plane_ref": _wrap(mesh.control_plane_ref),
            "mesh_membership": _wrap(mesh.mesh_membership),
            "mesh_istio_api_versions": _wrap(_istio_api_versions),
            "mesh_migration_plan": _wrap(mesh.migration_plan),
            "auth_settings": _wrap(auth.check),
            "auth_objects": _wrap(auth.objects),
        }
