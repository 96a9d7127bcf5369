"""The tenancy builders take their inputs as they are given (JSON from the API, the module's
arguments, the operator's cache, the filter glue's plain data) without copying them: they must
leave every input as it was, and give objects that share no dict or list with any input, since
the engine and the operator change what the builders give (labels, digests) and the operator's
cache holds the live objects that went in."""
import copy

import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies as np
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import profiles

PROFILE_LABELS = {"app.kubernetes.io/part-of": "kubeflow-profile", "istio-injection": "enabled"}
MANAGED = [{"manager": "profile-controller", "operation": "Apply", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:pod-security.kubernetes.io/enforce": {}}}}}]


def namespace(name, labels=None, owner="alice"):
    labels = dict(labels or {}, **{"pod-security.kubernetes.io/enforce": "privileged"})
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": labels, "annotations": {"owner": owner},
                         "managedFields": copy.deepcopy(MANAGED)},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}}


def containers(value, found=None):
    """The ids of every dict and list in `value` (a tuple of inputs is walked, not counted)."""
    found = set() if found is None else found
    if isinstance(value, tuple):
        for child in value:
            containers(child, found)
    elif isinstance(value, (dict, list)):
        found.add(id(value))
        for child in value.values() if isinstance(value, dict) else value:
            containers(child, found)
    return found


def check_read_only(build, *inputs):
    before = copy.deepcopy(inputs)
    out = build(*inputs)
    assert inputs == before, "the builder changed its input"
    held = containers(inputs)
    assert held, "no input to compare with"
    shared = containers(out) & held
    assert not shared, "the builder's output shares %d dict(s) or list(s) with its input" % len(shared)
    return out


POLICIES = {
    "namespace_policies_scc": "nonroot", "namespace_policies_serverless": True,
    "namespace_policies_data_lake": True,
    "namespace_policies_data_lake_role_template": "arn:aws:iam::123456789012:role/kf-{namespace}",
    "namespace_policies_pod_security": "restricted", "namespace_policies_whitelist_others": True,
}


@pytest.mark.parametrize("mesh_mode", ["member", "memberroll", "mesh"])
def test_the_policies_builder_changes_and_shares_nothing_it_is_given(mesh_mode):
    settings = dict(POLICIES, namespace_policies_mesh_mode=mesh_mode)
    live = [namespace("team-a", PROFILE_LABELS), namespace("team-b", PROFILE_LABELS, owner="bob"),
            namespace("other")]
    accounts = [{"metadata": {"name": "default-editor", "namespace": n}} for n in ("team-a", "team-b")]
    roll = {"apiVersion": "maistra.io/v1", "kind": "ServiceMeshMemberRoll",
            "metadata": {"name": "default", "namespace": "kubeflow-mesh", "annotations": {}},
            "spec": {"members": ["kubeflow", "team-a"]}}
    objs = check_read_only(np.objects, live, settings, live, accounts, roll)
    assert {"LimitRange", "NetworkPolicy", "AuthorizationPolicy", "ServiceAccount"} <= set(o["kind"] for o in objs)
    check_read_only(np.objects_for_namespace, live[0], settings)
    check_read_only(np.whitelist_for_namespace, live[2], settings)
    check_read_only(np.pod_security_left_alone, live, settings)


def test_the_profiles_builder_changes_and_shares_nothing_it_is_given():
    settings = {"kfocp_instance": "kfocp", "profiles_auto_from_users": True,
                "profiles_list": [{"name": "team-a", "owner": {"group": "team-a"}, "quota": {"cpu": "4"},
                                   "contributors": [{"user": "carol", "role": "view"}]}],
                "profiles_authz_principals": ["cluster.local/ns/kubeflow/sa/kfam"]}
    users = [{"metadata": {"name": name}, "identities": ["htpasswd:" + name]} for name in ("alice", "bob")]
    groups = [{"metadata": {"name": "team-a"}, "users": ["alice", "dave"]}]
    live_profiles = [{"apiVersion": "kubeflow.org/v1", "kind": "Profile",
                      "metadata": {"name": "old", "labels": {"app.kubernetes.io/instance": "kfocp"},
                                   "finalizers": [profiles.FINALIZER]},
                      "spec": {"owner": {"kind": "User", "name": "erin"}}}]
    live = [namespace("team-a", PROFILE_LABELS, owner="team-a"), namespace("alice", PROFILE_LABELS)]
    desired = check_read_only(profiles.plan, settings, users, groups, live_profiles, live)
    assert sorted(p["name"] for p in desired) == ["alice", "bob", "team-a"]
    objs = check_read_only(profiles.objects, settings, users, groups, live_profiles, live)
    assert {"Profile", "RoleBinding", "AuthorizationPolicy"} <= set(o["kind"] for o in objs)
    check_read_only(profiles.pending, settings, users, groups, live_profiles, live)
    check_read_only(profiles.orphans, settings, live_profiles, users, groups)
    check_read_only(profiles.never_released, live_profiles, live)
