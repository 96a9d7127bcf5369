"""Table tests of the profiles report: owners, sources, contributors by who added them, quota and usage."""
import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils import profiles_report as r

KFOCP = {"app.kubernetes.io/managed-by": "kfocp", "kfocp.io/instance": "prod"}


def profile(name, owner, kind="User", labels=None, hard=None, deleting=False):
    meta = {"name": name, "labels": dict(labels or {})}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    spec = {"owner": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": owner}}
    if hard is not None:
        spec["resourceQuotaSpec"] = {"hard": hard}
    return {"apiVersion": "kubeflow.org/v1", "kind": "Profile", "metadata": meta, "spec": spec}


def binding(namespace, name, annotations, labels=None):
    meta = {"name": name, "namespace": namespace, "annotations": annotations, "labels": dict(labels or {})}
    return {"metadata": meta}


def quota(namespace, hard, used=None, name="kf-resource-quota"):
    status = {"hard": hard}
    if used is not None:
        status["used"] = used
    return {"metadata": {"name": name, "namespace": namespace}, "spec": {"hard": hard}, "status": status}


@pytest.mark.parametrize("labels, source", [
    (dict(KFOCP, **{"kfocp.io/profile-source": "declared"}), "declared"),
    (dict(KFOCP, **{"kfocp.io/profile-source": "auto"}), "automatic"),
    ({"app.kubernetes.io/managed-by": "kfocp", "kfocp.io/instance": "dev"}, "kfocp instance dev"),
    ({}, "self-service"),
    ({"kfocp.io/instance": "prod"}, "self-service"),  # the label alone does not make it kfocp's
])
def test_source_tells_kfocp_profiles_from_self_service_ones(labels, source):
    (row,) = r.report([profile("p", "alice", labels=labels)], instance="prod")["profiles"]
    assert row["source"] == source


def test_contributors_come_from_dashboard_bindings_of_the_namespace_and_say_who_added_them():
    bindings = [
        binding("p", "namespaceAdmin", {"user": "alice", "role": "admin"}),  # the owner, not a contributor
        binding("p", "user-bob-clusterrole-edit", {"user": "bob", "role": "edit"}),  # the owner's, via the dashboard
        binding("p", "user-carol-clusterrole-view", {"user": "carol", "role": "view"}, KFOCP),
        binding("p", "group-ml-clusterrole-view", {"group": "ml", "role": "view"}, KFOCP),
        binding("p", "default-editor", {}),
        binding("p", "odd", {"role": "edit"}),  # neither user nor group
        binding("other", "user-dave-clusterrole-edit", {"user": "dave", "role": "edit"}),
    ]
    (row,) = r.report([profile("p", "alice")], bindings, instance="prod")["profiles"]
    assert [(c["kind"], c["name"], c["role"], c["by"]) for c in row["contributors"]] == [
        ("Group", "ml", "view", "kfocp"), ("User", "bob", "edit", "owner"), ("User", "carol", "view", "kfocp")]


@pytest.mark.parametrize("hard, quotas, expected, has_object", [
    # the ResourceQuota's status: what is enforced and counted
    ({"cpu": "8"}, [quota("p", {"cpu": "8", "memory": "32Gi"}, {"cpu": "500m", "memory": "0"})],
     {"cpu": {"hard": "8", "used": "500m"}, "memory": {"hard": "32Gi", "used": "0"}}, True),
    # not counted yet: the status has no used
    ({"cpu": "8"}, [quota("p", {"cpu": "8"})], {"cpu": {"hard": "8", "used": None}}, True),
    # no ResourceQuota yet (the controller has not made the namespace): the Profile's spec
    ({"cpu": 8}, [], {"cpu": {"hard": "8", "used": None}}, False),
    # another quota in the namespace, or the right name in another namespace, does not count
    ({"cpu": "8"}, [quota("p", {"cpu": "1"}, name="other"), quota("q", {"cpu": "2"})],
     {"cpu": {"hard": "8", "used": None}}, False),
    (None, [], {}, False),
])
def test_quota_and_usage(hard, quotas, expected, has_object):
    (row,) = r.report([profile("p", "alice", hard=hard)], [], quotas)["profiles"]
    assert row["quota"] == expected
    assert row["quota_object"] is has_object


def test_rows_are_sorted_and_counted():
    data = r.report([profile("b", "x"), profile("a", "team", kind="Group", deleting=True)])
    assert [row["name"] for row in data["profiles"]] == ["a", "b"] and data["count"] == 2
    assert data["profiles"][0]["owner"] == {"kind": "Group", "name": "team"} and data["profiles"][0]["deleting"]
    assert r.report([]) == {"profiles": [], "count": 0}


def test_table():
    data = r.report([profile("team-a", "ml", kind="Group", hard={"cpu": "8"}, labels=dict(
        KFOCP, **{"kfocp.io/profile-source": "declared"})), profile("alice", "alice", deleting=True)],
        [binding("team-a", "user-bob-clusterrole-edit", {"user": "bob", "role": "edit"})],
        [quota("team-a", {"cpu": "8", "memory": "1Gi"}, {"cpu": "1500m"})], instance="prod")
    lines = r.table(data)
    assert lines[0].split() == ["PROFILE", "OWNER", "SOURCE", "CONTRIBUTORS", "(role,", "added", "by)", "QUOTA",
                                "(used/hard)"]
    assert lines[1].split() == ["alice", "(deleting)", "alice", "self-service", "-", "no", "quota", "(unlimited)"]
    assert lines[2].split() == ["team-a", "group", "ml", "declared", "bob", "(edit,", "owner)", "cpu", "1500m/8,",
                                "memory", "-/1Gi"]
    assert lines[-1] == "2 profile(s)"
    # columns line up
    assert lines[1].index("self-service") == lines[2].index("declared") == lines[0].index("SOURCE")
    assert r.table(r.report([profile("p", "x", hard={"cpu": "1"})]))[1].endswith("cpu -/1 (no ResourceQuota yet)")
