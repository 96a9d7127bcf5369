"""The Kubeflow CR's spec: ansible-operator's key conversion, the schema generated from the
roles' argument specs, and the committed CRD being the generated one."""
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "operator"))

from kfocp_operator import paramconv  # noqa: E402
from kfocp_operator.spec import OPERATOR_ONLY, SpecError, SpecModel, crd, load_roles  # noqa: E402

# ansible-operator-plugins internal/ansible/paramconv/paramconv_test.go, case by case.
TO_SNAKE = [
    ("var", "var"), ("888", "888"), ("k8s_var", "k8s_var"), ("_k8s_var", "_k8s_var"), ("k8s var", "k8s_var"),
    ("ThisShouldHaveUnderscores", "_this_should_have_underscores"), ("sizeK8sBuckets", "size_k8s_buckets"),
    ("_CanYou_Handle_mixedVars", "_can_you_handle_mixed_vars"), ("this_should_be_a_noop", "this_should_be_a_noop"),
    ("egressIPs", "egress_ips"), ("egressIPsEgress", "egress_ips_egress"), ("egressIPsegress", "egress_ips_egress"),
    ("IPsegress", "_ips_egress"), ("egressIP", "egress_ip"), ("egressIPEgress", "egress_ip_egress"),
    ("egressIPegress", "egress_ip_egress"), ("URLegressIPEgressHTTP", "url_egress_ip_egress_http"),
    ("URLsegressIPsEgressHTTPs", "_urls_egress_ips_egress_https"),
    ("THIS_IS_SKIP_NOT_SK_IP", "_this_is_skip_not_sk_ip"),
    ("sccGrantsExtra", "scc_grants_extra"), ("namespacePoliciesGpuToleration", "namespace_policies_gpu_toleration"),
]
TO_CAMEL = [
    ("app_test", "appTest"), ("_app_test", "AppTest"), ("_app_test_k8s", "AppTestK8s"), ("var_k8s", "varK8s"),
    ("egressIPs", "egressIPs"), ("app_8sk_", "app8Sk"), ("_app_8sk_test", "App8SkTest"),
    ("auth_proxy_url", "authProxyURL"), ("scc_grants_extra", "sccGrantsExtra"),
]


@pytest.mark.parametrize("camel, snake", TO_SNAKE)
def test_to_snake_matches_ansible_operator(camel, snake):
    assert paramconv.to_snake(camel) == snake


@pytest.mark.parametrize("snake, camel", TO_CAMEL)
def test_to_camel_matches_ansible_operator(snake, camel):
    assert paramconv.to_camel(snake) == camel


def test_map_to_snake_converts_every_key_like_ansible_operator():
    assert paramconv.map_to_snake({"var": 1, "sizeK8sTest": [{"innerKey": 2}], "888": 3}) == \
        {"var": 1, "size_k8s_test": [{"inner_key": 2}], "888": 3}


ROLES = {
    "demo": {
        "description": "",
        "options": {
            "demo_state": {"type": "str", "choices": ["present", "absent"], "default": "present"},
            "demo_items": {"type": "list", "elements": "dict", "options": {
                "name": {"type": "str", "required": True},
                "target_namespace": {"type": "str"},
                "extra_labels": {"type": "dict"},
            }},
            "demo_quota": {"type": "dict", "description": ["Quota, as C(resource: quantity); see O(demo_items)."]},
            "demo_count": {"type": "int"},
            "demo_templated": {"type": "list", "elements": "str"},
            "demo_anything": {},
        },
        "defaults": {"demo_count": 3, "demo_templated": "{{ demo_items | map(attribute='name') }}"},
    },
}


def test_schema_types_enums_patterns_defaults():
    spec = crd(SpecModel(ROLES))["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    props = spec["properties"]
    assert props["demoState"] == {"type": "string", "enum": ["present", "absent"], "default": "present"}
    assert props["demoCount"] == {"type": "integer", "default": 3}
    item = props["demoItems"]["items"]
    assert item["required"] == ["name"]
    assert item["properties"]["targetNamespace"]["pattern"].startswith("^[a-z0-9]")
    assert item["properties"]["extraLabels"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True,
                                                 "maxProperties": 256}
    assert props["demoQuota"]["description"] == "Quota, as resource: quantity; see demoItems."
    assert "default" not in props["demoTemplated"], "a Jinja default is the role's business, not the schema's"
    assert props["demoAnything"] == {"x-kubernetes-preserve-unknown-fields": True}
    assert props["reconcilePeriod"]["pattern"]


def test_strings_and_free_form_mappings_are_bounded():
    """Sizes the API server refuses, so that a huge or deeply nested value never reaches a run."""
    spec = crd(SpecModel.from_collection(ROOT))["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    props = spec["properties"]
    assert props["authImage"]["maxLength"] == 8192
    assert props["namespacePoliciesMeshNamespace"]["maxLength"] == 63
    assert props["namespacePoliciesSelector"]["additionalProperties"] == {"type": "string", "maxLength": 63}
    assert "x-kubernetes-preserve-unknown-fields" not in props["namespacePoliciesSelector"]
    assert props["gpuNfdSpec"]["maxProperties"] == 256

    def walk(schema, path):
        if schema.get("type") == "string" and "enum" not in schema:
            assert schema.get("maxLength"), path
        if schema.get("type") == "object" and "properties" not in schema:
            assert schema.get("maxProperties"), path
        for key, sub in (schema.get("properties") or {}).items():
            walk(sub, path + "." + key)
        for key in ("items", "additionalProperties"):
            if isinstance(schema.get(key), dict):
                walk(schema[key], path + "." + key)
    for field, schema in props.items():
        walk(schema, field)


def test_spec_to_variables_keeps_free_form_keys():
    model = SpecModel(ROLES)
    spec = {"demoItems": [{"name": "a", "targetNamespace": "ns", "extraLabels": {"app.kubernetes.io/part-of": "x"}}],
            "demoQuota": {"requests.nvidia.com/gpu": "1", "limitsCpu": "2"}, "reconcilePeriod": "1m"}
    assert model.to_variables(spec) == {
        "demo_items": [{"name": "a", "target_namespace": "ns", "extra_labels": {"app.kubernetes.io/part-of": "x"}}],
        "demo_quota": {"requests.nvidia.com/gpu": "1", "limitsCpu": "2"}, "reconcile_period": "1m"}


def test_a_variable_that_does_not_survive_the_round_trip_is_refused():
    roles = {"bad": {"description": "", "defaults": {}, "options": {"bad_Mixed": {"type": "str"}}}}
    with pytest.raises(SpecError, match="bad_Mixed.*rename"):
        SpecModel(roles)


def test_two_roles_cannot_define_one_variable():
    roles = {"one": {"description": "", "defaults": {}, "options": {"shared_x": {"type": "str"}}},
             "two": {"description": "", "defaults": {}, "options": {"shared_x": {"type": "str"}}}}
    with pytest.raises(SpecError, match="shared_x: defined by both one and two"):
        SpecModel(roles)


def test_every_role_variable_is_a_spec_field():
    model = SpecModel.from_collection(ROOT)
    roles = load_roles(ROOT / "roles")
    assert roles, "no role found"
    fields = crd(model)["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    for data in roles.values():
        for name in data["options"]:
            assert (paramconv.to_camel(name) in fields) != (name in OPERATOR_ONLY), name


@pytest.mark.parametrize("name", sorted(OPERATOR_ONLY))
def test_fields_that_act_on_the_operators_host_are_not_in_the_crd(name):
    """A CR editor must not choose a file the operator writes or a program it runs."""
    text = (ROOT / "operator" / "config" / "crd" / "bases" / "kfocp.io_kubeflows.yaml").read_text()
    assert paramconv.to_camel(name) not in text
    assert any(name in data["options"] for data in load_roles(ROOT / "roles").values())


def test_committed_crd_is_the_generated_one():
    proc = subprocess.run([sys.executable, str(ROOT / "operator" / "hack" / "gen_crd.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    doc = yaml.safe_load((ROOT / "operator" / "config" / "crd" / "bases" / "kfocp.io_kubeflows.yaml").read_text())
    assert doc["metadata"]["name"] == "kubeflows.kfocp.io"


def test_an_empty_default_is_allowed_by_the_pattern():
    roles = {"demo": {"description": "", "defaults": {"demo_namespace": ""},
                      "options": {"demo_namespace": {"type": "str"}}}}
    props = crd(SpecModel(roles))["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    schema = props["demoNamespace"]
    assert schema["default"] == "" and schema["pattern"] == "^([a-z0-9]([-a-z0-9]*[a-z0-9])?)?$"


def _defaults(schema, path="spec"):
    """(path, default, schema) for every schema node of the CRD that has a default."""
    if "default" in schema:
        yield path, schema["default"], schema
    for name, child in (schema.get("properties") or {}).items():
        yield from _defaults(child, path + "." + name)
    if isinstance(schema.get("items"), dict):
        yield from _defaults(schema["items"], path + "[]")


def test_every_default_of_the_generated_crd_passes_its_own_schema():
    """The API server refuses a CRD whose default breaks its schema (a pattern, a length), and the
    operator cannot be installed: a nested option whose parent's default holds '' is one such case."""
    jsonschema = pytest.importorskip("jsonschema")
    doc = yaml.safe_load((ROOT / "operator" / "config" / "crd" / "bases" / "kfocp.io_kubeflows.yaml").read_text())
    spec = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    bad = ["%s: %s" % (path, err.message) for path, default, schema in _defaults(spec)
           for err in jsonschema.Draft7Validator(schema).iter_errors(default)]
    assert not bad, bad


def _crd_defaults(schema):
    """The spec the API server stores for an empty one: every default of the CRD's schema."""
    out = {}
    for field, sub in (schema.get("properties") or {}).items():
        if "default" in sub:
            out[field] = sub["default"]
    return out


def test_the_key_map_gives_the_variables_kfocps_operator_gives():
    """Under ansible-operator (snakeCaseParameters: false) site.yml renames the spec's keys by the
    key map (plugins/module_utils/spec_keys.py); kfocp's operator by SpecModel.to_variables. Both
    give the same variables for the sample resource over the CRD's defaults, nested keys as written."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import spec_keys  # pylint: disable=import-outside-toplevel

    model = SpecModel.from_collection(ROOT)
    doc = yaml.safe_load((ROOT / "operator" / "config" / "crd" / "bases" / "kfocp.io_kubeflows.yaml").read_text())
    spec = _crd_defaults(doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"])
    sample = yaml.safe_load((ROOT / "operator" / "config" / "samples" / "kfocp_v1alpha1_kubeflow.yaml").read_text())
    spec.update(sample["spec"])
    spec["componentsComponents"] = {"admission-webhook": "managed", "katib": "removed"}
    spec["autoscalerCluster"] = {"scaleDown": {"delayAfterAdd": "10m"}, "maxNodesTotal": 5}
    keys = yaml.safe_load((ROOT / "playbooks" / "vars" / "spec_keys.yml").read_text())["__kfocp_spec_keys"]
    variables = spec_keys.variables(spec, keys)
    assert variables == model.to_variables(spec)
    # the keys ansible-operator's MapToSnake renamed arrive as written
    assert "admission-webhook" in variables["components_components"]
    assert variables["autoscaler_cluster"] == {"scale_down": {"delay_after_add": "10m"}, "max_nodes_total": 5}
    assert variables["scc_grants_extra"] == sample["spec"]["sccGrantsExtra"]


def test_the_key_map_leaves_out_fields_it_does_not_name():
    """A field only the operator's configuration may set (not in the CRD) is no variable under
    ansible-operator either, should an older CRD let it through."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import spec_keys  # pylint: disable=import-outside-toplevel

    keys = SpecModel.from_collection(ROOT).key_map()
    for name in OPERATOR_ONLY:
        assert paramconv.to_camel(name) not in keys
    assert spec_keys.variables({"componentsKubectl": "/bin/sh", "sccState": "present"}, keys) == {"scc_state": "present"}
