"""What the operator's fast path keeps of the namespaces and kfocp objects it watches, and which
namespace changes call for an apply: pure functions, on managedFields shaped as kube-apiserver
1.36 writes them."""
import copy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "operator"))

from kfocp_operator import collection  # noqa: E402

collection.importable()

from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o  # noqa: E402
from kfocp_operator.fastpath import outside_edit, own_label_change, slim_namespace, slim_owned  # noqa: E402

PROFILE = "app.kubernetes.io/part-of"
ENFORCE = "pod-security.kubernetes.io/enforce"
PATCHED = "patched.kfocp.io/kf"


def entry(manager, labels=(), annotations=(), operation="Apply", time="2026-11-25T04:00:00Z"):
    meta = {}
    if labels:
        meta["f:labels"] = dict(("f:" + k, {}) for k in labels)
    if annotations:
        meta["f:annotations"] = dict(("f:" + k, {}) for k in annotations)
    return {"manager": manager, "operation": operation, "apiVersion": "v1", "time": time,
            "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": meta}}


def namespace(labels, fields, annotations=None, version="1", phase="Active"):
    meta = {"name": "team-a", "uid": "u-1", "resourceVersion": version, "creationTimestamp": "t",
            "labels": dict(labels), "managedFields": fields}
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta,
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": phase}}


CREATED = namespace({PROFILE: "kubeflow-profile"}, [entry("profile-controller", [PROFILE], operation="Update")])
LABELLED = namespace({PROFILE: "kubeflow-profile", ENFORCE: "baseline", PATCHED: "namespace-policies"},
                     CREATED["metadata"]["managedFields"] + [entry("kfocp", [ENFORCE, PATCHED],
                                                                   ["kfocp.io/hash-namespace-policies"])],
                     annotations={"kfocp.io/hash-namespace-policies": "abc"}, version="2")


def test_label_owners_keeps_who_set_which_label_and_nothing_else():
    fields = LABELLED["metadata"]["managedFields"]
    assert o.label_owners(fields) == [
        {"manager": "profile-controller", "operation": "Update",
         "fieldsV1": {"f:metadata": {"f:labels": {"f:" + PROFILE: {}}}}},
        {"manager": "kfocp", "operation": "Apply",
         "fieldsV1": {"f:metadata": {"f:labels": {"f:" + ENFORCE: {}, "f:" + PATCHED: {}}}}}]
    assert o.label_owners(fields, "pod-security.kubernetes.io/") == [
        {"manager": "kfocp", "operation": "Apply", "fieldsV1": {"f:metadata": {"f:labels": {"f:" + ENFORCE: {}}}}}]
    assert o.label_owners([entry("x", annotations=["a"])]) == []


def test_labels_held_by_a_manager_or_by_the_others():
    meta = LABELLED["metadata"]
    assert o.labels_held_by(meta, "kfocp") == {ENFORCE: "baseline", PATCHED: "namespace-policies"}
    assert o.labels_held_by(meta, "kfocp", others=True) == {PROFILE: "kubeflow-profile"}


def test_a_slim_namespace_keeps_what_the_builders_read():
    slim = slim_namespace(LABELLED)
    assert slim == {"apiVersion": "v1", "kind": "Namespace", "status": {"phase": "Active"},
                    "metadata": {"name": "team-a", "resourceVersion": "2",
                                 "labels": LABELLED["metadata"]["labels"],
                                 "annotations": LABELLED["metadata"]["annotations"],
                                 "managedFields": o.label_owners(LABELLED["metadata"]["managedFields"])}}
    # what the namespace_policies builder concludes is the same from either
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies as np
    other = namespace({PROFILE: "kubeflow-profile", ENFORCE: "privileged"},
                      [entry("profile-controller", [PROFILE, ENFORCE], operation="Update")])
    settings = {"namespace_policies_pod_security": "baseline"}
    assert np._pod_security_set_by_others(slim_namespace(other), settings) == \
        np._pod_security_set_by_others(other, settings) == [(ENFORCE, "privileged", "profile-controller")]


def test_a_slim_namespace_without_a_name_has_no_name_key():
    # the key is left out, as every other absent field is (never a None written in its place)
    nameless = copy.deepcopy(LABELLED)
    del nameless["metadata"]["name"]
    assert "name" not in slim_namespace(nameless)["metadata"]


def test_slim_namespaces_of_one_shape_hold_one_copy_of_their_label_owners_and_phase():
    other = namespace(LABELLED["metadata"]["labels"], LABELLED["metadata"]["managedFields"],
                      LABELLED["metadata"]["annotations"], version="9")
    other["metadata"]["name"] = "team-b"
    one, two = slim_namespace(LABELLED), slim_namespace(other)
    assert one["metadata"]["managedFields"] == two["metadata"]["managedFields"]
    assert all(a is b for a, b in zip(one["metadata"]["managedFields"], two["metadata"]["managedFields"]))
    assert one["status"] is two["status"] and one["metadata"]["labels"] is not two["metadata"]["labels"]


def test_the_shared_table_is_bounded_and_keeps_values_apart():
    from kfocp_operator import fastpath
    saved = dict(fastpath._SHARED)
    try:
        fastpath._SHARED.clear()
        assert fastpath.shared({"a": ["b"]}) is not fastpath.shared({"a": "b"})  # a list is not a string
        assert fastpath.shared({"a": "b"}) == {"a": "b"} and fastpath.shared([1]) == [1]
        first = [{"n": i} for i in range(fastpath.SHARED_MAX + 5)]
        assert all(fastpath.shared(v) is v for v in first[2:])  # none was seen before
        assert len(fastpath._SHARED) == fastpath.SHARED_MAX
        late = {"n": fastpath.SHARED_MAX + 4}
        assert fastpath.shared(late) is late and fastpath.shared({"n": 3}) is first[3]
    finally:
        fastpath._SHARED.clear()
        fastpath._SHARED.update(saved)


def test_a_slim_owned_object_still_shows_another_writers_edit():
    limits = {"apiVersion": "v1", "kind": "LimitRange",
              "metadata": {"name": "kfocp-limits", "namespace": "team-a", "resourceVersion": "5",
                           "labels": {"app.kubernetes.io/instance": "kf"},
                           "managedFields": [{"manager": "kfocp", "operation": "Apply", "fieldsV1": {"f:spec": {}}}]},
              "spec": {"limits": [{"type": "Container"}]}}
    edited = dict(limits, metadata=dict(limits["metadata"], resourceVersion="6", managedFields=limits["metadata"][
        "managedFields"] + [{"manager": "kubectl-patch", "operation": "Update", "fieldsV1": {"f:spec": {"f:x": {}}}}]))
    again = dict(edited, metadata=dict(edited["metadata"], managedFields=edited["metadata"]["managedFields"][:1] + [
        {"manager": "kubectl-patch", "operation": "Update", "fieldsV1": {"f:spec": {"f:y": {}}}}]))
    slim = slim_owned(limits)
    assert "spec" not in slim and "managedFields" not in slim["metadata"]
    assert slim["metadata"]["labels"] == limits["metadata"]["labels"]
    assert [e["manager"] for e in slim_owned(edited)["metadata"]["managedFields"]] == ["kubectl-patch"]
    assert not outside_edit(slim, slim_owned(dict(limits, metadata=dict(limits["metadata"], resourceVersion="7"))))
    assert outside_edit(slim, slim_owned(edited)) and outside_edit(slim_owned(edited), slim_owned(again))


def test_only_kfocps_own_labelling_of_a_namespace_calls_for_no_apply():
    old = slim_namespace(CREATED)
    assert own_label_change(old, slim_namespace(LABELLED))  # kfocp added its labels
    # another writer removed kfocp's label: it left kfocp's entry
    removed = namespace({PROFILE: "kubeflow-profile", PATCHED: "namespace-policies"},
                        CREATED["metadata"]["managedFields"] + [entry("kfocp", [PATCHED])], version="3")
    assert not own_label_change(slim_namespace(LABELLED), slim_namespace(removed))
    # another writer took kfocp's label with another value
    taken = namespace({PROFILE: "kubeflow-profile", ENFORCE: "privileged", PATCHED: "namespace-policies"},
                      CREATED["metadata"]["managedFields"] + [entry("kfocp", [PATCHED]), entry("admin", [ENFORCE])],
                      version="3")
    assert not own_label_change(slim_namespace(LABELLED), slim_namespace(taken))
    # the profile label changed, a label was added by someone else, the whitelist changed
    relabelled = namespace(dict(LABELLED["metadata"]["labels"], team="b"), LABELLED["metadata"]["managedFields"] + [
        entry("kubectl-label", ["team"], operation="Update")], version="3")
    assert not own_label_change(slim_namespace(LABELLED), slim_namespace(relabelled))
    whitelisted = namespace(CREATED["metadata"]["labels"], CREATED["metadata"]["managedFields"],
                            annotations={"scheduler.alpha.kubernetes.io/tolerationsWhitelist": "[]"})
    assert not own_label_change(old, slim_namespace(whitelisted))
    # a label another manager set too, with the same value, then kfocp applies it: still its own
    shared = namespace(dict(CREATED["metadata"]["labels"], **{ENFORCE: "baseline"}),
                       [entry("profile-controller", [PROFILE, ENFORCE], operation="Update")])
    both = namespace(shared["metadata"]["labels"], shared["metadata"]["managedFields"] + [entry("kfocp", [ENFORCE])])
    assert own_label_change(slim_namespace(shared), slim_namespace(both))
