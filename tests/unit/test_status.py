"""Table tests of the pure status helpers behind kfocp.kubeflow.cr_status."""
import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils import status as s
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError

T0, T1 = "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"


def cond(ctype, status, reason="R", message="", ltt=T0, generation=None):
    out = {"type": ctype, "status": status, "reason": reason, "message": message, "lastTransitionTime": ltt}
    if generation is not None:
        out["observedGeneration"] = generation
    return out


@pytest.mark.parametrize("current, wanted, expected", [
    # a new type is appended, stamped now
    ([], [{"type": "Ready", "status": "True", "reason": "Converged"}],
     [cond("Ready", "True", "Converged", ltt=T1)]),
    # same status: the transition time stays, even when reason and message change
    ([cond("Ready", "True")], [{"type": "Ready", "status": "True", "reason": "Again", "message": "m"}],
     [cond("Ready", "True", "Again", "m", ltt=T0)]),
    # status flips: the transition time moves
    ([cond("Ready", "True")], [{"type": "Ready", "status": "False", "reason": "Failed"}],
     [cond("Ready", "False", "Failed", ltt=T1)]),
    # other types are kept, in their order
    ([cond("Degraded", "False"), cond("Ready", "False")], [{"type": "Ready", "status": "True", "reason": "Ok"}],
     [cond("Degraded", "False"), cond("Ready", "True", "Ok", ltt=T1)]),
    # a booleanised status from YAML is read as the string the API wants
    ([], [{"type": "Ready", "status": True, "reason": "Ok"}], [cond("Ready", "True", "Ok", ltt=T1)]),
    # a condition without a transition time gets one
    ([{"type": "Ready", "status": "True", "reason": "R"}], [{"type": "Ready", "status": "True", "reason": "R"}],
     [cond("Ready", "True", ltt=T1)]),
])
def test_merge_conditions(current, wanted, expected):
    assert s.merge_conditions(current, wanted, T1) == expected


def test_merge_conditions_records_the_observed_generation():
    out = s.merge_conditions([], [{"type": "Ready", "status": "True", "reason": "Ok"}], T1, observed_generation=3)
    assert out == [cond("Ready", "True", "Ok", ltt=T1, generation=3)]


@pytest.mark.parametrize("before, after, patch", [
    ({}, {}, {}),
    ({"a": 1}, {"a": 1}, {}),
    ({"a": 1}, {"a": 2}, {"a": 2}),
    ({"a": 1}, {}, {"a": None}),
    ({"c": {"x": 1, "y": 2}}, {"c": {"x": 1}}, {"c": {"y": None}}),
    ({"c": {"x": 1}}, {"c": {"x": 1, "z": 3}}, {"c": {"z": 3}}),
    ({"l": [1, 2]}, {"l": [1]}, {"l": [1]}),
    ({"c": "text"}, {"c": {"x": 1}}, {"c": {"x": 1}}),
    ({}, {"n": None}, {"n": None}),
])
def test_merge_patch(before, after, patch):
    assert s.merge_patch(before, after) == patch


def test_desired_status_is_unchanged_when_nothing_changes():
    current = {"observedGeneration": 2, "conditions": [cond("Ready", "True", "Converged", generation=2)],
               "components": {"scc": {"state": "Ready"}}}
    after = s.desired_status(current, [{"type": "Ready", "status": "True", "reason": "Converged"}],
                             {"components": {"scc": {"state": "Ready"}}}, 2, T1)
    assert after == current
    assert s.merge_patch(current, after) == {}


def test_desired_status_replaces_a_field_key_and_keeps_the_others():
    current = {"components": {"scc": {"state": "Ready"}, "gone": {"state": "Ready"}}, "lastRun": {"ok": 3}}
    after = s.desired_status(current, None, {"components": {"scc": {"state": "Degraded"}}}, None, T1)
    assert after == {"components": {"scc": {"state": "Degraded"}}, "lastRun": {"ok": 3}}
    assert s.merge_patch(current, after) == {"components": {"scc": {"state": "Degraded"}, "gone": None}}


def test_desired_status_does_not_modify_its_input():
    current = {"conditions": [cond("Ready", "False")]}
    s.desired_status(current, [{"type": "Ready", "status": "True", "reason": "R"}], None, 1, T1)
    assert current == {"conditions": [cond("Ready", "False")]}


@pytest.mark.parametrize("key", ["conditions", "observedGeneration"])
def test_desired_status_refuses_reserved_keys_in_fields(key):
    with pytest.raises(DefinitionError, match="status.%s" % key):
        s.desired_status({}, None, {key: 1}, None, T1)


@pytest.mark.parametrize("conditions, message", [
    ([{"type": "Ready", "status": "yes", "reason": "R"}], r"conditions\[0\].status: 'yes' is not True, False or Unknown"),
    ([{"type": "", "status": "True", "reason": "R"}], r"conditions\[0\].type"),
    ([{"type": "Not ready", "status": "True", "reason": "R"}], r"conditions\[0\].type"),
    ([{"type": "Ready", "status": "True"}], r"conditions\[0\].reason: None is not a CamelCase reason"),
    ([{"type": "Ready", "status": "True", "reason": "two words"}], r"conditions\[0\].reason"),
    ([{"type": "Ready", "status": "True", "reason": "R"}, {"type": "Ready", "status": "False", "reason": "R"}],
     r"conditions\[1\].type: Ready is listed twice"),
    ([{"type": "Ready", "status": "True", "reason": "R", "message": "x" * 40000}], r"conditions\[0\].message"),
    (["Ready"], r"conditions\[0\]: must be a mapping"),
])
def test_validate_conditions_names_the_field(conditions, message):
    with pytest.raises(DefinitionError, match=message):
        s.validate_conditions(conditions)


def test_validate_conditions_accepts_qualified_types_and_reasons_with_colons():
    s.validate_conditions([{"type": "kfocp.io/Ready", "status": "Unknown", "reason": "Step:scc_1"}])
