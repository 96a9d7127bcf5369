"""role_inputs renders a role's variable before checking it only when the value holds a template:
which values do (plugin_utils/inputs.has_template). That the checks then give what ansible-core's
give, templates rendered, is tests/integration/test_role_inputs.py."""
import pytest

from ansible_collections.kfocp.kubeflow.plugins.plugin_utils.inputs import has_template


@pytest.mark.parametrize("value", [
    "{{ x }}", "a {% if y %}b{% endif %}", "{# note #}", ["a", ["b", {"c": "{{ d }}"}]],
    {"key": {"deeper": [1, 2, "{{ 3 }}"]}}, {"{{ name }}": 1},
])
def test_a_template_anywhere_is_found(value):
    assert has_template(value)


@pytest.mark.parametrize("value", [
    None, 5, 1.5, True, "", "plain text", "{ not jinja }", "a{b}c", "{ {", [], {},
    [{"name": "team-a", "owner": {"kind": "User", "name": "alice"}, "quota": {"cpu": "4"}}] * 3,
])
def test_plain_values_are_not_templates(value):
    assert not has_template(value)
