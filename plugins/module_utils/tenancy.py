# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The tenancy roles' desired state, built in the process that applies it.

The profiles and namespace_policies builders turn live objects (Users, Groups, Profiles,
Namespaces, ServiceAccounts, the member roll) into thousands of objects. Passed through Ansible
(k8s_info results, a filter, the apply module's arguments), every one of them is templated and
serialised several times on the way; here the module reads them with the engine's own client and
calls the same pure builders. Each function returns (definitions, extra results).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies, pod_security, profiles
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import UnknownKind
from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o
from ansible_collections.kfocp.kubeflow.plugins.module_utils import settings as role_settings
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError

USER_API = "user.openshift.io/v1"
PROFILE_API = "kubeflow.org/v1"
# The label Kubeflow's profile controller puts on every profile namespace.
PROFILE_NAMESPACES = "app.kubernetes.io/part-of=kubeflow-profile"
PENDING_POLL = 2.0
# The key under which build_profiles keeps its plan for build_profiles_access (run_steps' memo).
MEMO = "profiles"


def live(client, api_version, kind, label_selector=None, field_selector=None):
    """Every object of a kind, with apiVersion and kind set as a GET gives them; [] when the kind
    is not served (no OpenShift user API, no Profile CRD yet), as kubernetes.core.k8s_info does."""
    try:
        res = client.resource(api_version, kind)
    except UnknownKind:
        return []
    items = client.list(res, label_selector=label_selector, field_selector=field_selector)
    for item in items:
        item["apiVersion"], item["kind"] = api_version, kind
        # the builders read only who set a namespace's Pod Security labels; the rest is most of the bytes
        fields = item["metadata"].pop("managedFields", None)
        if kind == "Namespace" and fields:
            kept = o.label_owners(fields, pod_security.LABEL_PREFIX)
            if kept:
                item["metadata"]["managedFields"] = kept
    return items


def _profile_inputs(client, settings):
    users = live(client, USER_API, "User") if settings.get("profiles_auto_from_users") else []
    return users, live(client, USER_API, "Group"), live(client, PROFILE_API, "Profile")


def build_profiles(client, settings, prune=False, memo=None, **_):
    """The Profiles, the names of those kept although no longer desired (`orphans`, reported
    unless they are pruned), and the users who got no automatic profile because every name for
    them is taken (`skipped`, reported: the run goes on for everyone else). Names are checked
    against the live namespaces and their owners before anything is written. `memo`, when given,
    keeps the plan and the namespaces read for build_profiles_access in the same module run."""
    settings = role_settings.resolve("profiles", settings)
    users, groups, live_profiles = _profile_inputs(client, settings)
    skipped = []
    namespaces = _namespaces(client)
    desired = profiles.plan(settings, users, groups, live_profiles, namespaces, skipped)
    if memo is not None:
        memo[MEMO] = (desired, namespaces)
    orphans = [] if prune else profiles.orphans_of(desired, settings, live_profiles)
    # Every profile's contributor access is built too, though only the Profiles are applied here:
    # a wrong access setting stops the run before the first Profile is written.
    objs = [obj for obj in profiles.objects_of(desired, settings, None) if obj["kind"] == "Profile"]
    return objs, {"orphans": orphans, "skipped": skipped}


def _namespaces(client):
    """The live Namespaces' names and annotations (the owner of each)."""
    return live(client, "v1", "Namespace")


def build_profiles_access(client, settings, wait=0, check_mode=False, memo=None, **_):
    """The contributor access in every profile namespace that exists, after waiting up to `wait`
    seconds for the profile controller to create the new ones; `pending` names those it has not
    created yet. The plan and namespaces that build_profiles kept in `memo` are used when the
    Profiles it applied changed nothing since (the module run then reads nothing twice)."""
    settings = role_settings.resolve("profiles", settings)
    reused = (memo or {}).pop(MEMO, None)
    if reused:
        desired, namespaces = reused
        namespaces = [n for n in namespaces if _profile_namespace(n)]
    else:
        users, groups, live_profiles = _profile_inputs(client, settings)
        desired = profiles.plan(settings, users, groups, live_profiles, _namespaces(client), [])
        namespaces = None
    deadline = time.monotonic() + (0 if check_mode else wait or 0)
    while True:
        if namespaces is None:
            namespaces = live(client, "v1", "Namespace", label_selector=PROFILE_NAMESPACES)
        waiting = profiles.pending_of(desired, namespaces)
        if not waiting or time.monotonic() >= deadline:
            break
        time.sleep(PENDING_POLL)
        namespaces = None
    if waiting and wait and not check_mode:
        raise DefinitionError("the profile controller has not created the namespaces of %d profile(s) after %ds: "
                              "%s. Check that it runs, or raise profiles_namespace_wait"
                              % (len(waiting), wait, ", ".join(waiting[:20])))
    objs = [obj for obj in profiles.objects_of(desired, settings, namespaces) if obj["kind"] != "Profile"]
    return objs, {"pending": waiting}


def _profile_namespace(namespace):
    """True for a namespace PROFILE_NAMESPACES selects."""
    key, value = PROFILE_NAMESPACES.split("=", 1)
    return ((namespace.get("metadata") or {}).get("labels") or {}).get(key) == value


def build_namespace_policies(client, settings, **_):
    """The policies of every profile namespace, and the GPU whitelist of the other namespaces."""
    settings = role_settings.resolve("namespace_policies", settings)
    namespaces = live(client, "v1", "Namespace")
    accounts = None
    if settings.get("namespace_policies_data_lake"):
        accounts = live(client, "v1", "ServiceAccount", field_selector="metadata.name=%s"
                        % settings.get("namespace_policies_data_lake_serviceaccount"))
    roll = None
    if settings.get("namespace_policies_mesh_mode") == "memberroll":
        try:
            res = client.resource("maistra.io/v1", "ServiceMeshMemberRoll")
            roll = client.get(res, "default", settings.get("namespace_policies_mesh_namespace"))
        except UnknownKind:
            pass  # the builder says that there is no member roll
    left = namespace_policies.pod_security_left_alone(namespaces, settings)
    return (namespace_policies.objects(namespaces, settings, namespaces, accounts, roll),
            {"pod_security_left_alone": left} if left else {})


BUILDS = {
    "profiles": build_profiles,
    "profiles_access": build_profiles_access,
    "namespace_policies": build_namespace_policies,
}

# Every kind ((group, kind)) each build makes or patches, whatever its settings: prune looks for a
# set's objects that are no longer desired in these kinds only, not in every kind the cluster
# serves (about 85 on the local plane, hundreds on OpenShift, two LISTs each and set). Removing a
# kind from a builder means keeping it here until no install can still hold its objects.
# tests/unit/test_prune_kinds.py runs the builders over their settings and fails on a kind
# missing here. An uninstall (state absent) still looks in every kind.
_RBAC = "rbac.authorization.k8s.io"
_ISTIO = "security.istio.io"
KINDS = {
    "profiles": (("kubeflow.org", "Profile"),),
    "profiles_access": ((_RBAC, "RoleBinding"), (_ISTIO, "AuthorizationPolicy")),
    "namespace_policies": (("", "Namespace"), ("", "ServiceAccount"), ("", "LimitRange"),
                           ("networking.k8s.io", "NetworkPolicy"), (_RBAC, "RoleBinding"), (_ISTIO, "AuthorizationPolicy"),
                           ("maistra.io", "ServiceMeshMember"), ("maistra.io", "ServiceMeshMemberRoll"),
                           ("mutations.gatekeeper.sh", "AssignMetadata")),
}
