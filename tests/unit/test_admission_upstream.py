"""The profile self-service ValidatingAdmissionPolicy against Kubernetes 1.30 (OpenShift 4.17, the first
release it runs on): the API's fields (k8s.io/api v0.30.2) and the CEL environment
(k8s.io/apiserver v0.30.2), from the Go module cache at the versions tests/upstream/kube130/go.sum
pins; and the OpenShift releases that serve the API by default (openshift/api, recorded in
docs/readings/operator-bundle-awx-admission-readings.md)."""
import re

import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils import versions
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import self_service
from gomod import require_module

API = ("k8s.io/api", "v0.30.2")
APISERVER = ("k8s.io/apiserver", "v0.30.2")
SETTINGS = {"profile_self_service_group": "kubeflow-users", "profile_self_service_admin_groups": ["kubeflow-admins"],
            "profile_self_service_name_prefix": "my-", "profiles_reserved_names": ["default", "kube-*"],
            "profile_self_service_params_namespace": "kfocp-self-service",
            "profile_self_service_max_quota": {"cpu": "8", "memory": "32Gi", "requests.nvidia.com/gpu": "2"}}


def _objects():
    objs = self_service.objects(SETTINGS)
    return ([o for o in objs if o["kind"] == "ValidatingAdmissionPolicy"][0],
            [o for o in objs if o["kind"] == "ValidatingAdmissionPolicyBinding"][0])


def _struct_fields(source, struct):
    """{json name: Go type} of a struct, inline members flattened."""
    body = re.search(r"^type %s struct \{\n(.*?)^\}" % struct, source, re.M | re.S).group(1)
    out = {}
    for name, kind, tag in re.findall(r'^\t([\w.]+)(?:[ \t]+([^\s`]+))?[ \t]+`json:"([^"]*)"', body, re.M):
        json_name = tag.split(",")[0]
        if not json_name and "inline" in tag:
            if re.search(r"^type %s struct" % (kind or name), source, re.M):
                out.update(_struct_fields(source, kind or name))
        else:
            out[json_name] = kind
    return out


def _check(source, struct, value, where):
    """The keys of `value` that are no field of the Go struct (recursively through known structs)."""
    fields = _struct_fields(source, struct)
    unknown = []
    for key, item in value.items():
        if key not in fields:
            unknown.append("%s.%s" % (where, key))
            continue
        kind = fields[key].lstrip("*").replace("[]", "")
        if re.search(r"^type %s struct" % kind, source, re.M):
            for index, element in enumerate(item if isinstance(item, list) else [item]):
                if isinstance(element, dict):
                    unknown += _check(source, kind, element, "%s.%s[%d]" % (where, key, index))
    return unknown


def test_the_policy_and_binding_use_only_fields_of_the_v1_api():
    source = (require_module(pytest, *API) / "admissionregistration" / "v1" / "types.go").read_text()
    policy, binding = _objects()
    assert policy["apiVersion"] == binding["apiVersion"] == "admissionregistration.k8s.io/v1"
    assert _check(source, "ValidatingAdmissionPolicySpec", policy["spec"], "spec") == []
    assert _check(source, "ValidatingAdmissionPolicyBindingSpec", binding["spec"], "spec") == []
    # the values kfocp relies on are the API's constants
    assert re.search(r'\bDeny\s+ValidationAction = "Deny"', source)
    assert re.search(r'\bAllowAction\s+ParameterNotFoundActionType = "Allow"', source)
    assert re.search(r'\bFail\s+FailurePolicyType = "Fail"', source)
    # the check can fail
    assert _check(source, "ValidatingAdmissionPolicyBindingSpec", {"validationAction": ["Deny"]}, "spec") == [
        "spec.validationAction"]


def _cel_functions(policy):
    texts = [v.get(k, "") for v in policy["spec"]["validations"] + policy["spec"]["variables"] +
             policy["spec"]["matchConditions"] for k in ("expression", "messageExpression")]
    calls = set()
    for text in texts:
        text = re.sub(r"'(?:[^'\\]|\\.)*'", "''", text)  # string literals
        calls |= set(re.findall(r"(\w+)\(", text))
    return calls


# CEL's standard functions and macros (cel-spec langdef.md) kfocp's expressions may call.
CEL_STANDARD = {"has", "size", "string", "int", "exists", "all", "startsWith", "endsWith", "matches", "contains"}


def test_the_cel_the_policy_calls_is_in_the_environment_of_kubernetes_1_30():
    """apiserver pkg/cel/environment/base.go: expressions are compiled for
    DefaultCompatibilityVersion (1.29 in 1.30); library.Quantity (isQuantity, quantity, compareTo)
    is there from 1.28, ext.Strings (lowerAscii, split) version 2 from 1.29 (version 0 before), and
    HomogeneousAggregateLiterals always (kfocp's map literal holds only strings)."""
    cel = require_module(pytest, *APISERVER) / "pkg" / "cel"
    base = (cel / "environment" / "base.go").read_text()
    compat = re.search(r"func DefaultCompatibilityVersion\(\) \*version.Version \{\s+return version.MajorMinor\(1, (\d+)\)",
                       base).group(1)

    def introduced(option):
        block = re.search(r"IntroducedVersion: version.MajorMinor\(1, (\d+)\),(?:\s+RemovedVersion: version.MajorMinor\(1, "
                          r"(\d+)\),)?\s+EnvOptions: \[\]cel.EnvOption\{[^}]*?%s" % re.escape(option), base)
        return int(block.group(1)), int(block.group(2)) if block.group(2) else None

    assert introduced("library.Quantity()")[0] <= int(compat)
    assert introduced("ext.Strings(ext.StringsVersion(2))") == (29, None) and int(compat) >= 29
    assert introduced("cel.HomogeneousAggregateLiterals()")[0] == 0
    quantity = (cel / "library" / "quantity.go").read_text()
    library = set(re.findall(r'^\t"(\w+)": \{', quantity, re.M))
    assert {"isQuantity", "quantity", "compareTo"} <= library
    policy, _binding = _objects()
    used = _cel_functions(policy)
    assert used - CEL_STANDARD - library - {"lowerAscii", "split"} == set(), used
    assert {"isQuantity", "quantity", "compareTo", "lowerAscii", "split"} <= used
    literal = [v["expression"] for v in policy["spec"]["variables"] if v["name"] == "maxQuota"][0]
    assert re.match(r"^\{('[^']*': '[^']*'(, )?)+\}$", literal), literal


# openshift/api, the ValidatingAdmissionPolicy feature gate: TechPreviewNoUpgrade only on
# release-4.15 (config/v1/types_feature.go) and release-4.16 (features/features.go); in the Default
# feature set on release-4.17, 4.18 and 4.19; no gate (always on) from release-4.20.
OPENSHIFT_SERVES_VAP_V1 = {"4.14": False, "4.15": False, "4.16": False, "4.17": True, "4.18": True, "4.19": True,
                           "4.20": True}


@pytest.mark.parametrize("version", versions.SUPPORTED)
def test_self_service_is_offered_exactly_where_openshift_serves_the_policy_api(version):
    assert versions.feature("ValidatingAdmissionPolicy", version) is OPENSHIFT_SERVES_VAP_V1[version]
