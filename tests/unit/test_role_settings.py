"""One place for each role's defaults (module_utils/role_defaults.py) and for the tenancy roles'
derived settings (module_utils/settings.py).

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

from ansible_collections.kfocp.kubeflow.plugins.module_utils import role_defaults, settings
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import (
    auth, data_lake, mesh, namespace_policies, profiles, self_service)

ROOT = Path(__file__).resolve().parents[2]
# The code that reads the tenancy roles' settings: the builders, the module glue, the fast path.
READERS = ["plugins/module_utils/builders/profiles.py", "plugins/module_utils/builders/self_service.py",
           "plugins/module_utils/builders/scc.py", "plugins/module_utils/builders/namespace_policies.py",
           "plugins/module_utils/tenancy.py", "plugins/filter/builders.py", "operator/kfocp_operator/fastpath.py"]
# A value vars/main.yml may give a setting: the variable of that name, as it is, or as a boolean or number.
PASSED_ON = re.compile(r"^\{\{ (?P<name>[a-z_0-9]+)( \| (default\(none\)|bool|float))? \}\}$")
# Every role whose defaults role_defaults holds, and the builders that read the others' settings.
ALL_ROLES = tuple(role_defaults.DEFAULTS)
BUILDERS = {"auth": "auth", "service_mesh": "mesh", "data_lake": "data_lake", "gpu": "gpu", "autoscaler": "autoscaler",
            "serverless": "serverless"}
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


def test_every_role_has_its_defaults_in_one_place():
    assert sorted(ALL_ROLES) == sorted(p.name for p in (ROOT / "roles").iterdir() if p.is_dir())


@pytest.mark.parametrize("role", ALL_ROLES)
def test_the_role_defaults_are_the_contracts(role):
    expected = dict((k, role_defaults.DERIVED_IN_DEFAULTS.get(k, v)) for k, v in role_defaults.DEFAULTS[role].items())
    assert role_file(role, "defaults", "main.yml") == expected


@pytest.mark.parametrize("role", ALL_ROLES)
def test_no_role_default_is_a_template(role):
    """A derived default is null in defaults/main.yml and computed by the contract, or, for a role
    outside the fast path, the one template role_defaults.DERIVED_IN_DEFAULTS names."""
    found = [k for k, v in role_file(role, "defaults", "main.yml").items() if templated(v)]
    assert found == [k for k in role_defaults.DEFAULTS[role] if k in role_defaults.DERIVED_IN_DEFAULTS]
    if role in settings.ROLES:
        assert found == []


@pytest.mark.parametrize("role", ALL_ROLES)
def test_the_argument_specs_name_the_contracts_variables_with_its_defaults(role):
    specs = role_file(role, "meta", "argument_specs.yml")["argument_specs"]
    for entry in specs.values():
        options = entry.get("options") or {}
        assert set(options) == set(role_defaults.DEFAULTS[role]), entry.get("short_description")
        for name, option in options.items():
            if "default" in option:
                assert option["default"] == role_defaults.DERIVED_IN_DEFAULTS.get(name, role_defaults.DEFAULTS[role][name]), name


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
                          (namespace_policies, "namespace_policies"), (data_lake, "data_lake")):
        assert builder.DEFAULTS is settings.DEFAULTS[role], builder.__name__
    # the builders that name the settings without the role's prefix: the same values
    assert auth.DEFAULTS == role_defaults.unprefixed("auth", auth.DEFAULTS)
    top = [k for k in mesh.DEFAULTS if k not in mesh.NESTED and k not in ("openshift", "installed")]
    assert dict((k, mesh.DEFAULTS[k]) for k in top) == role_defaults.unprefixed("service_mesh", top)
    assert set(mesh.NESTED) == set(k for k, v in role_defaults.unprefixed("service_mesh").items() if v == {})


def _short_copies(path, role):
    """Where a builder that names a role's settings without the prefix keeps a default of its own:
    .get(key, value) or .get(key) or value, with a value that is not empty and not read from
    role_defaults, or a mapping of three or more of the role's keys."""
    keys = set(role_defaults.unprefixed(role))
    nested = set()
    for value in role_defaults.DEFAULTS[role].values():
        if isinstance(value, dict):
            nested |= set(k for k in value if isinstance(k, str))
    names = keys | nested

    tree = ast.parse((ROOT / path).read_text())
    # module constants bound to a value read from role_defaults
    from_defaults = set(ast.unparse(n.targets[0]) for n in tree.body
                        if isinstance(n, ast.Assign) and "defaults" in ast.unparse(n.value).lower())

    def empty(node):
        if isinstance(node, ast.Constant) and node.value in (None, "", 0, False):
            return True
        if isinstance(node, (ast.List, ast.Dict, ast.Tuple)) and not (getattr(node, "elts", None) or getattr(node, "keys", None)):
            return True
        if isinstance(node, ast.Name) and (not node.id.isupper() or node.id in from_defaults):
            return True  # a variable (a parameter, or a value read from role_defaults above) or such a constant
        return "defaults" in ast.unparse(node).lower()
    # the mesh builder's NESTED is the one place of the service_mesh role's nested settings
    tree.body = [n for n in tree.body if not (isinstance(n, ast.Assign) and ast.unparse(n.targets[0]) == "NESTED")]
    found = []
    for node in ast.walk(tree):
        get = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
            and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value in names
        if get and len(node.args) > 1 and not empty(node.args[1]):
            found.append("line %d: %s" % (node.lineno, ast.unparse(node)))
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
            first = node.values[0]
            if isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute) and first.func.attr == "get" \
                    and first.args and isinstance(first.args[0], ast.Constant) and first.args[0].value in names \
                    and not all(empty(v) for v in node.values[1:]):
                found.append("line %d: %s" % (node.lineno, ast.unparse(node)))
        if isinstance(node, ast.Dict) and sum(1 for k in node.keys if isinstance(k, ast.Constant) and k.value in keys) >= 3:
            found.append("line %d: a mapping of the role's settings" % node.lineno)
    return found


@pytest.mark.parametrize("role", sorted(BUILDERS))
def test_no_builder_keeps_a_default_of_its_own(role):
    assert _short_copies("plugins/module_utils/builders/%s.py" % BUILDERS[role], role) == []


def test_the_builders_guard_finds_a_default_of_its_own(tmp_path, monkeypatch):
    """The control: a copy of gpu_instance_type_fields' default as a fallback, of the watermark's
    priority_value, and a mapping of the auth role's settings."""
    (tmp_path / "gpu.py").write_text('b = params.get("instance_type_fields") or {"aws": "instanceType"}\n')
    (tmp_path / "autoscaler.py").write_text('p = spec.get("priority_value", -5)\n')
    (tmp_path / "auth.py").write_text('D = {"name": "x", "client_id": "kubeflow", "image": "y"}\n')
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert len(_short_copies("gpu.py", "gpu")) == 1  # nfd's keys are the play's, below
    assert len(_short_copies("auth.py", "auth")) == 1
    assert len(_short_copies("autoscaler.py", "autoscaler")) == 1


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


@pytest.mark.parametrize("play, principals", [
    ({}, {"ISTIO_INGRESS_GATEWAY_PRINCIPAL": settings.UPSTREAM_GATEWAY_PRINCIPAL,
          "KFP_UI_PRINCIPAL": "cluster.local/ns/kubeflow/sa/ml-pipeline-ui",
          "NOTEBOOK_CONTROLLER_PRINCIPAL": "cluster.local/ns/kubeflow/sa/notebook-controller-service-account"}),
    ({"service_mesh_gateway_info": {"principal": "cluster.local/ns/kubeflow-mesh/sa/gw"}, "components_namespace": "ml",
      "components_profile_principals": {"NOTEBOOK_CONTROLLER_PRINCIPAL": ""}},
     {"ISTIO_INGRESS_GATEWAY_PRINCIPAL": "cluster.local/ns/kubeflow-mesh/sa/gw",
      "KFP_UI_PRINCIPAL": "cluster.local/ns/ml/sa/ml-pipeline-ui", "NOTEBOOK_CONTROLLER_PRINCIPAL": ""}),
])
def test_the_profile_controllers_principals_are_the_ones_the_contributor_policies_name(play, principals):
    """The components role's principals come from the same derivation as the profiles role's
    contributor policies: the gateway's and the pipelines UI's."""
    derived = settings.components_settings(play)
    assert derived["components_profile_principals"] == principals
    authz = settings.resolve("profiles", play)["profiles_authz_principals"]
    assert [derived["components_profile_principals"][k] for k in ("ISTIO_INGRESS_GATEWAY_PRINCIPAL", "KFP_UI_PRINCIPAL")] == authz


def test_the_profile_namespaces_level_is_namespace_policies_unless_given():
    assert settings.profile_pod_security({}) == role_defaults.DEFAULTS["namespace_policies"]["namespace_policies_pod_security"]
    assert settings.profile_pod_security({"namespace_policies_pod_security": "restricted"}) == "restricted"
    assert settings.profile_pod_security({"namespace_policies_pod_security": "restricted",
                                         "components_profile_pod_security": "none"}) == "none"
