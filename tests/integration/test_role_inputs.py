"""kfocp.kubeflow.role_inputs against ansible-core's own check of a role's variables
(ansible.builtin.validate_argument_spec, what a role runs when it starts): for every entry point
of every role, the same variables, wrong in every way the spec's types and choices allow, and once
as templates that render to a number, give the same outcome and errors from both, one task beside
the other. No cluster is needed: both run on the controller."""
import json
import re

import pytest
import yaml

from helpers import ROOT, run_playbook

CLASS = re.compile(r"<class '(\w+)'>")
TAGGED = re.compile(r"(?:[\w.]*\.)?_AnsibleTagged(\w+)")
ROLES = sorted(path.name for path in (ROOT / "roles").iterdir() if (path / "meta" / "argument_specs.yml").is_file())


def _specs(role):
    return yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())["argument_specs"]


def _wrong(option):
    """A value that option's type or choices refuse (None where every value passes, type raw)."""
    if option.get("choices"):
        return "not-one-of-the-choices"
    return {"str": {"a": 1}, "bool": "perhaps", "int": "many", "float": "much", "dict": 5, "list": {"a": 1},
            "path": {"a": 1}}.get(option.get("type", "str"))


def _wrong_entries(option):
    """A list of dicts with an unknown key and each suboption wrong, for an option with suboptions."""
    entry = {"not_an_option": 1}
    for name, sub in (option.get("options") or {}).items():
        value = _wrong(sub)
        if value is not None:
            entry[name] = value
    return [entry] if option.get("type") == "list" else entry


def cases(role):
    """(entry point, {variable: value}, how), wrong values of each kind, and a template."""
    out = []
    for entry_point, spec in _specs(role).items():
        options = spec.get("options") or {}
        wrong = {}
        for name, option in options.items():
            value = _wrong_entries(option) if option.get("options") else _wrong(option)
            if value is not None:
                wrong[name] = value
        out.append((entry_point, wrong, "wrong"))
        # a template rendered before the check: a number where the spec wants a mapping or a boolean
        templated = dict((name, "{{ 40 + 2 }}") for name, option in options.items()
                         if option.get("type") in ("dict", "bool") and not option.get("options"))
        out.append((entry_point, templated, "templated"))
    return out


def _playbook(role, role_cases):
    tasks = []
    for index, (entry_point, values, _how) in enumerate(role_cases):
        spec = _specs(role)[entry_point].get("options") or {}
        for task in ({"name": "ansible %d" % index, "ansible.builtin.validate_argument_spec": {"argument_spec": spec}},
                     {"name": "kfocp %d" % index,
                      "kfocp.kubeflow.role_inputs": {"role": role, "entry_point": entry_point}}):
            tasks.append(dict(task, vars=values, ignore_errors=True))
    return [{"hosts": "localhost", "gather_facts": False, "tasks": tasks}]


def _types_named(messages):
    """The messages with each class named by its type: ansible-core names the tagged class of a
    value it was given (_AnsibleTaggedInt), where role_inputs, given plain values, names int."""
    return [CLASS.sub(r"\1", TAGGED.sub(lambda match: match.group(1).lower(), message)) for message in messages]


@pytest.mark.parametrize("role", ROLES)
def test_role_inputs_gives_the_errors_ansible_gives(role, tmp_path):
    role_cases = cases(role)
    playbook = tmp_path / "check.yml"
    # JSON is YAML: the values keep their types, and a template stays a string
    playbook.write_text(json.dumps(_playbook(role, role_cases)))
    result = run_playbook(None, str(playbook), {}, tmp_path)
    assert result.rc == 0, result.stdout[-3000:]
    outcomes = dict((action, []) for action in ("ansible.builtin.validate_argument_spec", "kfocp.kubeflow.role_inputs"))
    for event in result.events:
        data = event.get("event_data") or {}
        if event.get("event") in ("runner_on_ok", "runner_on_failed") and data.get("task_action") in outcomes:
            res = data.get("res") or {}
            # the errors; or the message, when the check itself failed on a value (as ansible-core's
            # does on some values of the wrong type in a list of entries)
            failed = event["event"] == "runner_on_failed"
            outcomes[data["task_action"]].append(
                (failed, _types_named(res.get("argument_errors") or [res.get("msg")]) if failed else []))
    ansible, ours = outcomes.values()
    assert len(ansible) == len(ours) == len(role_cases), result.stdout[-3000:]
    for (entry_point, values, how), theirs, mine in zip(role_cases, ansible, ours):
        assert mine == theirs, "%s %s (%s): %s" % (role, entry_point, how, sorted(values))
        if how == "wrong":
            assert mine[0], (role, entry_point, mine)
