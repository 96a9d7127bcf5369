"""One place for each tenancy role's defaults and derived settings (module_utils/settings.py).

These fail when another copy appears: a role default or an argument spec default that differs from
the contract, a template in defaults/main.yml, Jinja in vars/main.yml that derives a setting
instead of passing a variable on, a builder or the operator's fast path with a default of its own
for a role's variable (a dict literal keyed by it, .get(variable, default), .get(variable) or
default), or a fast path that reads the roles' files itself."""
import ast
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils import settings
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies, profiles, self_service

ROOT = Path(__file__).resolve().parents[2]
# The code that reads the tenancy roles' settings: the builders, the module glue, the fast path.
READERS = ["plugins/module_utils/builders/profiles.py", "plugins/module_utils/builders/self_service.py",
           "plugins/module_utils/builders/scc.py", "plugins/module_utils/builders/namespace_policies.py",
           "plugins/module_utils/tenancy.py", "plugins/filter/builders.py", "operator/kfocp_operator/fastpath.py"]
# A value vars/main.yml may give a setting: the variable of that name, as it is, or as a boolean or number.
PASSED_ON = re.compile(r"^\{\{ (?P<name>[a-z_0-9]+)( \| (default\(none\)|bool|float))? \}\}$")
SETTINGS_VARS = {"profiles": "__profiles_settings", "profile_self_service": "__profile_self_service_settings",
                 "scc": "__scc_input", "namespace_policies": "__namespace_policies_settings"}


def role_file(role, *parts):
    return yaml.safe_load((ROOT / "roles" / role / Path(*parts)).read_text()) or {}


def variables():
    return set(name for role in settings.ROLES for name in list(settings.DEFAULTS[role]) + list(settings.DERIVED[role]))


def templated(value):
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, dict):
        return any(templated(v) for v in value.values())
    if isinstance(value, list):
        return any(templated(v) for v in value)
    return False


@pytest.mark.parametrize("role", settings.ROLES)
def test_the_role_defaults_are_the_contracts(role):
    assert role_file(role, "defaults", "main.yml") == settings.DEFAULTS[role]


@pytest.mark.parametrize("role", settings.ROLES)
def test_no_role_default_is_a_template(role):
    """A derived default is null in defaults/main.yml and computed by the contract."""
    found = [k for k, v in role_file(role, "defaults", "main.yml").items() if templated(v)]
    assert found == []


@pytest.mark.parametrize("role", settings.ROLES)
def test_the_argument_specs_name_the_contracts_variables_with_its_defaults(role):
    specs = role_file(role, "meta", "argument_specs.yml")["argument_specs"]
    for entry in specs.values():
        options = entry.get("options") or {}
        assert set(options) == set(settings.DEFAULTS[role]), entry.get("short_description")
        for name, option in options.items():
            if "default" in option:
                assert option["default"] == settings.DEFAULTS[role][name], name


@pytest.mark.parametrize("role", settings.ROLES)
def test_vars_pass_the_variables_on_and_derive_nothing(role):
    """vars/main.yml gives the filter or module the variables under their own names: what is
    derived from them is the contract's."""
    passed = role_file(role, "vars", "main.yml")[SETTINGS_VARS[role]]
    for key, value in passed.items():
        match = PASSED_ON.match(str(value))
        assert match and match.group("name") == key, "%s: %r derives a setting" % (key, value)
    known = set(settings.DEFAULTS[role]) | set(settings.INPUTS[role])
    assert set(passed) <= known, "vars/main.yml passes a variable the contract does not know"
    for name in settings.INPUTS[role]:
        assert name in passed, "%s: the contract derives from %s, which vars/main.yml does not pass" % (role, name)


def _own_defaults(path):
    """Where the code at `path` keeps a default of its own for a role's variable."""
    tree = ast.parse((ROOT / path).read_text())
    names = variables()
    found = []

    def key(node):
        return node.value if isinstance(node, ast.Constant) and node.value in names else None

    for node in ast.walk(tree):
        if isinstance(node, ast.Dict) and any(key(k) for k in node.keys if k is not None):
            found.append("line %d: a mapping of role variables" % node.lineno)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and node.args and key(node.args[0]):
            if len(node.args) > 1:
                found.append("line %d: .get(%r, default)" % (node.lineno, key(node.args[0])))
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            first = node.values[0]
            if isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute) and first.func.attr == "get" \
                    and first.args and key(first.args[0]):
                found.append("line %d: .get(%r) or default" % (node.lineno, key(first.args[0])))
    return found


@pytest.mark.parametrize("path", READERS)
def test_no_reader_keeps_a_default_of_its_own(path):
    assert _own_defaults(path) == []


def test_the_guard_finds_a_default_of_its_own(tmp_path, monkeypatch):
    """The control: each kind of copy is found."""
    code = ('DEFAULTS = {"profiles_userid_header": "kubeflow-userid"}\n'
            'x = settings.get("scc_allowed") or ["anyuid"]\n'
            'y = settings.get("profiles_state", "present")\n')
    (tmp_path / "copy.py").write_text(code)
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert len(_own_defaults("copy.py")) == 3


def test_the_builders_defaults_are_the_contracts_mapping():
    for builder, role in ((profiles, "profiles"), (self_service, "profile_self_service"),
                          (namespace_policies, "namespace_policies")):
        assert builder.DEFAULTS is settings.DEFAULTS[role], builder.__name__


def test_the_fast_path_has_no_settings_of_its_own():
    source = (ROOT / "operator/kfocp_operator/fastpath.py").read_text()
    for name in ("def role_settings", "def policy_settings", "def scc_grants", '"defaults"', "main.yml", "_templated",
                 "import yaml"):
        assert name not in source, name


@pytest.mark.parametrize("role", settings.ROLES)
def test_resolving_twice_changes_nothing(role):
    once = settings.resolve(role, {"kfocp_instance": "kf", "service_mesh_flavour": "ossm3"})
    assert settings.resolve(role, once) == once
    assert set(once) >= set(settings.DEFAULTS[role])


def test_scc_grants_are_the_default_and_extra_ones_unless_given():
    extra = [{"namespace": "a", "serviceaccount": "b", "scc": "anyuid"}]
    assert settings.resolve("scc", {"scc_grants_extra": extra})["scc_grants"] == \
        settings.DEFAULTS["scc"]["scc_grants_default"] + extra
    assert settings.resolve("scc", {"scc_grants": [], "scc_grants_extra": extra})["scc_grants"] == []


def test_booleans_given_as_text_are_read_as_ansible_reads_them():
    assert settings.resolve("profiles", {"profiles_auto_from_users": "yes"})["profiles_auto_from_users"] is True
    assert settings.resolve("namespace_policies", {"namespace_policies_serverless": "false"})[
        "namespace_policies_serverless"] is False
