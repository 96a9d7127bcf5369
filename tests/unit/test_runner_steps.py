"""How one module run that applies several sets (the tenancy module's steps) merges the results
of its steps (module_utils/runner.py merge_results)."""
from ansible_collections.kfocp.kubeflow.plugins.module_utils.runner import merge_results

EMPTY = {"changed": False, "summary": {}, "objects": []}


def step(changed=False, **counts):
    return {"changed": changed, "summary": dict({"created": 0, "unchanged": 0}, **counts), "objects": []}


def test_counts_are_summed_and_a_change_in_any_step_is_a_change():
    merged = merge_results(merge_results(EMPTY, step(unchanged=3)), step(True, created=1, unchanged=2))
    assert merged["summary"] == {"created": 1, "unchanged": 5}
    assert merged["changed"] is True
    assert merge_results(merge_results(EMPTY, step(unchanged=3)), step(unchanged=2))["changed"] is False


def test_objects_diffs_and_failures_of_every_step_are_kept_in_order():
    first = dict(step(True, created=1), objects=[{"name": "a"}], diff=[{"after": "a"}])
    second = dict(step(True, created=1), objects=[{"name": "b"}], diff=[{"after": "b"}], failures=["b: refused"])
    merged = merge_results(merge_results(EMPTY, first), second)
    assert [o["name"] for o in merged["objects"]] == ["a", "b"]
    assert [d["after"] for d in merged["diff"]] == ["a", "b"]
    assert merged["failures"] == ["b: refused"]


def test_warnings_are_merged_once_and_each_steps_own_results_are_kept():
    first = dict(step(), api_warnings=["deprecated"], orphans=["old-team"], skipped=[])
    second = dict(step(), api_warnings=["deprecated", "unknown field"], pending=["new-team"])
    merged = merge_results(merge_results(EMPTY, first), second)
    assert merged["api_warnings"] == ["deprecated", "unknown field"]
    assert (merged["orphans"], merged["skipped"], merged["pending"]) == (["old-team"], [], ["new-team"])


def test_the_inputs_are_not_changed():
    first = dict(step(unchanged=1), objects=[{"name": "a"}])
    merge_results(merge_results(EMPTY, first), dict(step(), objects=[{"name": "b"}]))
    assert EMPTY == {"changed": False, "summary": {}, "objects": []} and first["objects"] == [{"name": "a"}]


def test_seconds_are_added_stage_by_stage():
    first = dict(step(), timing={"build": 0.5, "plan": 0.25, "read": 0.125})
    second = dict(step(), timing={"build": 0.25, "read": 0.5, "prune": 1.0})
    merged = merge_results(merge_results(EMPTY, first), second)
    assert merged["timing"] == {"build": 0.75, "plan": 0.25, "read": 0.625, "prune": 1.0}
