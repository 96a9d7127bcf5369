"""The object-by-object comparison of two snapshots of kfocp's objects (tests/clusterdiff.py)."""
import pytest

from clusterdiff import ABSENT, compare, field_differences, normalise, report, snapshot

LR = ("", "LimitRange", "ns-a", "kfocp-limits")
NS = ("", "Namespace", "", "ns-a")


def limitrange(**meta):
    return {"apiVersion": "v1", "kind": "LimitRange",
            "metadata": dict({"name": "kfocp-limits", "namespace": "ns-a",
                              "labels": {"kfocp.io/instance": "kf"},
                              "annotations": {"kfocp.io/applied-hash": "abc"}}, **meta),
            "spec": {"limits": [{"type": "Container", "max": {"memory": "8Gi"}}]}}


def test_what_the_server_sets_is_left_out_and_the_desired_state_digest_kept():
    live = limitrange(uid="u1", resourceVersion="9", creationTimestamp="2026-01-01T00:00:00Z", generation=3,
                      managedFields=[{"manager": "kfocp"}], selfLink="/x", ownerReferences=[
                          {"apiVersion": "kubeflow.org/v1", "kind": "Profile", "name": "p", "uid": "u0"}])
    live["status"] = {"phase": "x"}
    live["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
    out = normalise(LR, live)
    assert out["metadata"] == {"name": "kfocp-limits", "namespace": "ns-a", "labels": {"kfocp.io/instance": "kf"},
                               "annotations": {"kfocp.io/applied-hash": "abc"},
                               "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "Profile", "name": "p"}]}
    assert "status" not in out and out["spec"] == live["spec"]
    assert live["metadata"]["uid"] == "u1", "the input is left as it was"


def test_a_deletion_under_way_is_kept_whatever_its_time():
    a = normalise(NS, {"metadata": {"name": "ns-a", "deletionTimestamp": "2026-01-01T00:00:00Z"}})
    b = normalise(NS, {"metadata": {"name": "ns-a", "deletionTimestamp": "2026-02-02T00:00:00Z"}})
    assert a == b and a["metadata"]["deletionTimestamp"] == "<set>"
    assert compare({NS: a}, {NS: normalise(NS, {"metadata": {"name": "ns-a"}})}) == [
        (NS, "metadata.deletionTimestamp", "<set>", ABSENT)]


def test_a_services_allocated_addresses_are_left_out_only_for_services():
    svc = {"metadata": {"name": "s"}, "spec": {"clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"], "ports": []}}
    assert normalise(("", "Service", "n", "s"), svc)["spec"] == {"ports": []}
    other = {"metadata": {"name": "s"}, "spec": {"clusterIP": "10.0.0.1"}}
    assert normalise(("example.com", "Service", "n", "s"), other)["spec"] == {"clusterIP": "10.0.0.1"}


@pytest.mark.parametrize("left,right,expected", [
    ({"a": 1}, {"a": 1}, []),
    ({"a": 1}, {"a": 2}, [("a", 1, 2)]),
    ({"a": 1}, {"a": "1"}, [("a", 1, "1")]),
    ({"a": True}, {"a": 1}, [("a", True, 1)]),
    ({"a": {"b": 1}}, {"a": {}}, [("a.b", 1, ABSENT)]),
    ({}, {"a": None}, [("a", ABSENT, None)]),
    ({"l": [1, 2]}, {"l": [1]}, [("l[1]", 2, ABSENT)]),
    ({"l": [{"x": 1}]}, {"l": [{"x": 2}]}, [("l[0].x", 1, 2)]),
    ({"labels": {"kfocp.io/set": "a"}}, {"labels": {"kfocp.io/set": "b"}}, [('labels["kfocp.io/set"]', "a", "b")]),
    ({"a": [1]}, {"a": {"0": 1}}, [("a", [1], {"0": 1})]),
    (1, 2, [("<object>", 1, 2)]),
])
def test_field_differences_name_each_differing_leaf(left, right, expected):
    assert field_differences(left, right) == expected


def test_compare_reports_objects_on_one_side_and_fields_object_by_object():
    extra = ("rbac.authorization.k8s.io", "RoleBinding", "ns-a", "extra")
    gone = ("kubeflow.org", "Profile", "", "p")
    edited = limitrange()
    edited["spec"]["limits"][0]["max"]["memory"] = "64Ti"
    left = snapshot({LR: edited, extra: {"metadata": {"name": "extra"}}})
    right = snapshot({LR: limitrange(uid="other"), gone: {"metadata": {"name": "p"}}})
    rows = compare(left, right)
    assert rows == [
        (LR, "spec.limits[0].max.memory", "64Ti", "8Gi"),
        (gone, "<object>", ABSENT, "<present>"),
        (extra, "<object>", "<present>", ABSENT),
    ]
    assert compare(right, right) == []
    text = report(rows, names=("after the soak", "after a clean reconcile"))
    assert text.splitlines()[0] == ('LimitRange ns-a/kfocp-limits: spec.limits[0].max.memory: after the soak "64Ti", '
                                    'after a clean reconcile "8Gi"')
    assert "Profile.kubeflow.org p: <object>: after the soak <absent>, after a clean reconcile <present>" in text
    assert "RoleBinding.rbac.authorization.k8s.io ns-a/extra" in text


def test_report_is_bounded():
    rows = [(LR, "f%d" % i, i, i + 1) for i in range(5)]
    text = report(rows, limit=2)
    assert len(text.splitlines()) == 3 and text.endswith("and 3 more difference(s)")
