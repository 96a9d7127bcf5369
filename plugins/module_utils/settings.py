# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The settings of the tenancy roles (profiles, profile_self_service, scc, namespace_policies), in
one place: each role's defaults, and what is derived from them and from the other roles'
variables before a builder reads them (the gateway's and the pipelines UI's principals, the
self-service prefix, mesh membership, the SCC grants).

Every road reads it: the roles (their filters and the tenancy module; `defaults/main.yml` holds the
same values, `vars/main.yml` only passes the variables under their own names), the builders for a
setting they are not given, and the operator's fast path (`resolve` on the run's variables, after
`site_facts`). tests/unit/test_role_settings.py fails when a role default, an argument spec default
or a builder's own default differs from these.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh
from ansible_collections.kfocp.kubeflow.plugins.module_utils.role_defaults import DEFAULTS

ROLES = ("profiles", "profile_self_service", "scc", "namespace_policies")
# The principal of upstream Kubeflow's ingress gateway (istio-system), when no service_mesh role
# runs in the play.
UPSTREAM_GATEWAY_PRINCIPAL = "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"
# Upstream Kubeflow runs the pipelines UI as this service account in the components' namespace.
PIPELINES_UI_ACCOUNT = "ml-pipeline-ui"
COMPONENTS_NAMESPACE = "kubeflow"
# ... and its notebook controller as this one, whose kernel checks the profile controller admits.
NOTEBOOK_CONTROLLER_ACCOUNT = "notebook-controller-service-account"
# Settings of the play (not of one role) that the builders read.
PLAY_DEFAULTS = {"kfocp_instance": "kfocp"}
# The role's variables that are booleans or numbers: an inventory may give them as text.
BOOLEANS = frozenset(("profiles_auto_from_users", "profiles_prune", "scc_create_namespaces",
                      "namespace_policies_whitelist_others", "namespace_policies_serverless", "namespace_policies_data_lake"))
FLOATS = frozenset(("namespace_policies_prune_max_share",))


def boolean(value, field):
    """Ansible's reading of a boolean (ansible.module_utils.parsing.convert_bool)."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("y", "yes", "on", "1", "true", "t"):
        return True
    if text in ("n", "no", "off", "0", "false", "f", ""):
        return False
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError
    raise DefinitionError("%s: %r is not a boolean. Use true or false" % (field, value))


def enabled(variables, role):
    """Whether site.yml (or playbooks/profiles.yml) runs `role`: kfocp_<role>_enabled, default true."""
    value = variables.get("kfocp_%s_enabled" % role)
    return True if value is None else boolean(value, "kfocp_%s_enabled" % role)


def default(role, key):
    """A copy of one plain default of `role` (or of the play)."""
    return copy.deepcopy(DEFAULTS[role][key] if key in DEFAULTS[role] else PLAY_DEFAULTS[key])


# ---------------------------------------------------------------- what is derived

def service_mesh_input(variables):
    """The service_mesh role's settings that decide its gateway and mesh membership, from its
    variables (service_mesh_<key>); the keys not set take the builder's defaults."""
    keys = mesh.MEMBERSHIP_KEYS + ("gateway", "olm")
    out = dict((key, variables["service_mesh_" + key]) for key in keys
               if variables.get("service_mesh_" + key) is not None)
    openshift = variables.get("kfocp_openshift") or variables.get("kfocp_openshift_version")
    if openshift:
        out["openshift"] = openshift
    return out


def site_facts(variables):
    """The variables as the tenancy roles see them in site.yml, after its pre-flight: with the
    service_mesh role on, its gateway (service_mesh_gateway_info, as its tasks/validate.yml sets it
    from the same settings)."""
    out = dict(variables)
    if out.get("service_mesh_gateway_info") is None and enabled(variables, "service_mesh"):
        out["service_mesh_gateway_info"] = mesh.gateway_info(service_mesh_input(variables))
    return out


def gateway_principal(variables):
    """The principal of the ingress gateway contributors' requests come through: the service_mesh
    role's (service_mesh_gateway_info), else upstream's istio-system gateway."""
    info = variables.get("service_mesh_gateway_info") or {}
    return info.get("principal") or UPSTREAM_GATEWAY_PRINCIPAL


def _components_account(variables, account):
    """The principal of a service account of the components role, in components_namespace."""
    return "cluster.local/ns/%s/sa/%s" % (variables.get("components_namespace") or COMPONENTS_NAMESPACE, account)


def pipelines_ui_principal(variables):
    """The principal of the pipelines UI the components role runs in components_namespace."""
    return _components_account(variables, PIPELINES_UI_ACCOUNT)


def profile_principals(variables):
    """The principals the components role gives the profile controller (components_profile_principals,
    its ISTIO_INGRESS_GATEWAY_PRINCIPAL, KFP_UI_PRINCIPAL and NOTEBOOK_CONTROLLER_PRINCIPAL): the
    gateway's, the pipelines UI's and the notebook controller's in components_namespace, each
    replaced by a key given ("" keeps upstream's). A value that is not a mapping is given on as it
    is, for the builder to name."""
    given = variables.get("components_profile_principals")
    if given is not None and not isinstance(given, dict):
        return given
    out = {"ISTIO_INGRESS_GATEWAY_PRINCIPAL": gateway_principal(variables),
           "KFP_UI_PRINCIPAL": pipelines_ui_principal(variables),
           "NOTEBOOK_CONTROLLER_PRINCIPAL": _components_account(variables, NOTEBOOK_CONTROLLER_ACCOUNT)}
    out.update(given or {})
    return out


def profile_pod_security(variables):
    """The Pod Security level of the profile namespaces the profile controller creates
    (components_profile_pod_security): the namespace_policies role's level unless given (None or "")."""
    value = variables.get("components_profile_pod_security")
    if value:
        return value
    level = variables.get("namespace_policies_pod_security")
    return default("namespace_policies", "namespace_policies_pod_security") if level is None else level


def kserve_ingress_domain(variables):
    """The host KServe writes into an InferenceService's external URL and its VirtualService's
    path-based rule (components_kserve_ingress_domain, KServe's `ingressDomain`): the front door's,
    the auth role's auth_host (its Route, oauth-proxy, then the gateway with that Host), when the
    auth role runs and has one; else "" (upstream's example.com is kept). A value given (not null)
    wins; "" keeps upstream's."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.manifests import kserve_ingress_host
    given = variables.get("components_kserve_ingress_domain")
    if given is not None:
        return kserve_ingress_host(given, "components_kserve_ingress_domain")
    host = variables.get("auth_host") if enabled(variables, "auth") else None
    return kserve_ingress_host(host, "auth_host") if host else ""


def components_settings(variables):
    """What the components role derives from the play before its module sees it."""
    return {"components_profile_principals": profile_principals(variables),
            "components_profile_pod_security": profile_pod_security(variables),
            "components_kserve_ingress_domain": kserve_ingress_domain(variables)}


def _authz_principals(variables):
    return [gateway_principal(variables), pipelines_ui_principal(variables)]


def _self_service_prefix(variables):
    """The self-service creators' names (the profile_self_service role's prefix when it runs): an
    automatic profile never takes one."""
    if not enabled(variables, "profile_self_service"):
        return ""
    prefix = variables.get("profile_self_service_name_prefix")
    return default("profile_self_service", "profile_self_service_name_prefix") if prefix is None else prefix


def _reserved_names(variables):
    """One reserved-namespace list for every profile: the profiles role's."""
    names = variables.get("profiles_reserved_names")
    return default("profiles", "profiles_reserved_names") if names is None else names


def _scc_grants(variables):
    """Every grant: the defaults plus the extra ones, unless scc_grants replaces them. A value that
    is not a list is given on as it is, for the builder to name."""
    grants = variables.get("scc_grants_default")
    extra = variables.get("scc_grants_extra")
    grants = default("scc", "scc_grants_default") if grants is None else grants
    extra = [] if extra is None else extra
    if not isinstance(grants, list):
        return grants
    return grants + extra if isinstance(extra, list) else extra


def _mesh_membership(variables):
    """The service_mesh role's variables that decide mesh membership (mesh.MEMBERSHIP_KEYS)."""
    return mesh.service_mesh_settings(variables)


# {role: {setting: function of the play's variables}}: computed when the setting is not given.
DERIVED = {
    "profiles": {"profiles_authz_principals": _authz_principals,
                 "profiles_self_service_prefix": _self_service_prefix},
    "profile_self_service": {"profiles_reserved_names": _reserved_names},
    "scc": {"scc_grants": _scc_grants},
    "namespace_policies": {"namespace_policies_service_mesh": _mesh_membership},
}
# Other roles' variables each role reads (through DERIVED): vars/main.yml passes them to its
# filter or module under their own names.
INPUTS = {
    "profiles": ("kfocp_instance", "service_mesh_gateway_info", "components_namespace",
                 "profile_self_service_name_prefix", "kfocp_profile_self_service_enabled"),
    "profile_self_service": ("profiles_reserved_names",),
    "scc": (),
    "namespace_policies": tuple("service_mesh_" + key for key in mesh.MEMBERSHIP_KEYS),
}


def setting(role, variables, key):
    """One setting of `role` that `variables` do not give: derived, or its default."""
    derive = DERIVED[role].get(key)
    return derive(variables) if derive is not None else default(role, key)


def resolve(role, variables):
    """Every setting `role`'s builder reads: the role's variables (None is not given) over its
    defaults, the derived ones, and the play's (kfocp_instance). A second call on its own result
    returns the same."""
    out = {}
    for key in list(DEFAULTS[role]) + list(DERIVED[role]) + list(PLAY_DEFAULTS):
        value = variables.get(key)
        if value is None:
            value = setting(role, variables, key)
        elif key in BOOLEANS:
            value = boolean(value, key)
        elif key in FLOATS and isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                pass  # named by the builder's checks
        out[key] = value  # given values are read, never changed: no copy of thousands of profiles
    return out
