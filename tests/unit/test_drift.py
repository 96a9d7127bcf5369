"""The drift report of playbooks/status.yml, from check-mode apply results."""
import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils import drift


def obj(kind, name, action, namespace=None, message=None):
    out = {"apiVersion": "v1", "kind": kind, "name": name, "action": action}
    if namespace:
        out["namespace"] = namespace
    if message:
        out["message"] = message
    return out


@pytest.mark.parametrize("action,state,present,matches", [
    ("unchanged", "in-sync", True, True),
    ("updated", "drifted", True, False),
    ("created", "missing", False, False),
    ("deleted", "orphaned", True, False),
    ("released", "orphaned", True, False),
    ("skipped", "foreign", True, True),
    ("failed", "error", True, False),
    ("conflict", "conflict", True, False),
])
def test_each_action_maps_to_a_state(action, state, present, matches):
    report = drift.report({"scc": {"objects": [obj("ConfigMap", "a", action, "ns")]}})
    row = report["objects"][0]
    assert (row["state"], row["present"], row["matches"]) == (state, present, matches)
    assert report["summary"][state] == 1
    assert report["in_sync"] is (state in ("in-sync", "foreign"))


def test_drifted_rows_name_the_differing_fields():
    result = {"objects": [obj("ConfigMap", "a", "updated", "ns")],
              "diff": [{"before_header": "ConfigMap ns/a", "after_header": "ConfigMap ns/a",
                        "before": {"data": {"x": "1", "y": "2"}, "metadata": {"resourceVersion": "1"}},
                        "after": {"data": {"x": "9", "y": "2"}, "metadata": {"resourceVersion": "2"}}}]}
    row = drift.report({"r": result})["objects"][0]
    assert row["fields"] == ["data.x"]


def test_unlisted_unchanged_objects_count_as_in_sync():
    result = {"summary": {"unchanged": 4}, "objects": [obj("ConfigMap", "a", "updated", "ns")]}
    report = drift.report({"r": result})
    assert report["summary"]["in-sync"] == 4 and report["summary"]["drifted"] == 1


def test_roles_without_result_skipped_or_failed_are_reported():
    report = drift.report({"a": None, "b": {"skipped": True, "changed": False},
                           "c": {"failed": True, "msg": "boom", "objects": []}}, ["c", "a", "b"])
    assert list(report["roles"]) == ["c", "a", "b"]
    assert "did not run" in report["roles"]["a"]["note"]
    assert report["roles"]["b"]["note"] == "skipped"
    assert report["roles"]["c"]["error"] == "boom"
    assert report["in_sync"] is False


def test_table_lists_objects_and_a_summary_line():
    report = drift.report({"scc": {"objects": [obj("Namespace", "team", "unchanged"),
                                               obj("RoleBinding", "rb", "created", "team")]}})
    lines = drift.table(report)
    assert lines[0].split() == ["ROLE", "STATE", "KIND", "NAMESPACE/NAME", "DETAIL"]
    assert lines[1].split() == ["scc", "in-sync", "Namespace", "team"]
    assert lines[2].split() == ["scc", "missing", "RoleBinding", "team/rb"]
    assert lines[-1] == "DRIFT: error=0, conflict=0, missing=1, drifted=0, orphaned=0, foreign=0, in-sync=1"


def test_bad_input_names_the_field():
    with pytest.raises(ValueError, match="results: must be a mapping"):
        drift.report(["scc"])


def test_a_role_with_several_sets_gives_one_merged_row_set():
    base = {"objects": [{"kind": "Subscription", "name": "a", "action": "unchanged"}],
            "summary": {"unchanged": 3, "created": 0}}
    operands = {"objects": [{"kind": "ClusterPolicy", "name": "p", "action": "created"}],
                "summary": {"unchanged": 1, "created": 1}}
    out = drift.report({"gpu": [base, operands, {"skipped": True, "changed": False}]}, ["gpu"])
    assert out["roles"]["gpu"]["states"]["missing"] == 1
    assert out["roles"]["gpu"]["states"]["in-sync"] == 4
    assert [row["name"] for row in out["objects"]] == ["a", "p"]
    assert not out["in_sync"]
    failed = drift.report({"gpu": [base, {"failed": True, "msg": "boom"}]}, ["gpu"])
    assert failed["roles"]["gpu"]["error"] == "boom" and not failed["in_sync"]
    only_skipped = drift.report({"gpu": [{"skipped": True}]}, ["gpu"])
    assert only_skipped["roles"]["gpu"]["note"] == "skipped"
