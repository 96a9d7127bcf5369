"""Static checks for the CRDs installed into the local (vanilla) kube-apiserver and the OpenShift seeds.

Pure Python (stdlib + PyYAML). It mirrors the parts of the apiserver's CRD validation that are cheap to
re-implement: names, versions, structural-schema rules, no conversion webhooks, and it validates the
seeded SCCs against the SCC CRD schema (types, required, nullable, enum, unknown fields).

OpenShift's own CRDs (SecurityContextConstraints, Route, MachineSet, ClusterVersion, ClusterAutoscaler,
MachineAutoscaler) are not kept here: they come from the modules of hack/openshift/go.mod, and the
seeds and sample objects are validated against them.
"""
import functools
import glob
import os
import re

import pytest
import yaml
from cluster import OPENSHIFT_CRDS, openshift_crds

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CRD_DIR = os.path.join(ROOT, "hack", "crds")
SEED_DIR = os.path.join(ROOT, "hack", "seed")
CRD_FILES = sorted(glob.glob(os.path.join(CRD_DIR, "*.yaml")) + glob.glob(os.path.join(CRD_DIR, "*", "*.yaml")))
SEED_FILES = sorted(glob.glob(os.path.join(SEED_DIR, "*.yaml")))
MAX_BYTES = 64 * 1024
# OpenShift's own CRD manifests, taken from its Go modules (hack/cluster.py openshift_crds) in place
# of hand-written copies
OPENSHIFT_CRD_FILES = sorted(str(path) for path in openshift_crds())

SCHEMA_KEYS = {
    "type", "format", "description", "title", "properties", "required", "items", "additionalProperties",
    "enum", "default", "nullable", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
    "multipleOf", "allOf", "anyOf", "oneOf", "not", "example", "externalDocs",
    "x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string", "x-kubernetes-embedded-resource",
    "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type", "x-kubernetes-validations",
}
# keywords forbidden inside allOf/anyOf/oneOf/not (structural schema rule)
VALUE_VALIDATION_FORBIDDEN = {"description", "default", "additionalProperties", "nullable", "type",
                              "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
                              "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
                              "x-kubernetes-validations"}
TYPES = {"object", "array", "string", "integer", "number", "boolean"}


def load_docs(path):
    """The objects of a file: its YAML documents, with a v1 List expanded into its items."""
    with open(path) as f:
        docs = [d for d in yaml.safe_load_all(f) if d is not None]
    out = []
    for doc in docs:
        out.extend(doc["items"] if doc.get("kind") == "List" else [doc])
    return out


def load_crd(path):
    docs = load_docs(path)
    assert len(docs) == 1, f"{path}: expected exactly one YAML document, got {len(docs)}"
    return docs[0]


def walk(node, path, errors, in_value_validation=False):
    """Walk a schema node (properties/items/additionalProperties) and collect structural errors."""
    if not isinstance(node, dict):
        errors.append(f"{path}: schema node is not a mapping")
        return
    for k in node:
        if k not in SCHEMA_KEYS:
            errors.append(f"{path}: unknown schema keyword {k!r}")
    ios = node.get("x-kubernetes-int-or-string") is True
    pres = node.get("x-kubernetes-preserve-unknown-fields") is True
    t = node.get("type")
    if not in_value_validation:
        if t is None and not (ios or pres):
            errors.append(f"{path}: no type (and neither int-or-string nor preserve-unknown-fields)")
        if t is not None and t not in TYPES:
            errors.append(f"{path}: bad type {t!r}")
        if ios and t is not None:
            errors.append(f"{path}: x-kubernetes-int-or-string must not set a type")
        if t == "array" and "items" not in node:
            errors.append(f"{path}: array without items")
        if "properties" in node and "additionalProperties" in node:
            errors.append(f"{path}: properties and additionalProperties are mutually exclusive")
        if ("properties" in node or "additionalProperties" in node) and t not in ("object", None):
            errors.append(f"{path}: properties on a non-object node")
        for r in node.get("required", []):
            if "properties" in node and r not in node["properties"] and not pres:
                errors.append(f"{path}: required field {r!r} is not declared in properties")
        if "enum" in node and t in TYPES:
            for e in node["enum"]:
                if e is not None and not type_ok(e, t):
                    errors.append(f"{path}: enum value {e!r} does not match type {t}")
        if "default" in node and t in TYPES and node["default"] is not None:
            derr = []
            validate(node["default"], node, path + ".default", derr, strict_unknown=True)
            errors.extend(derr)
        for rule in node.get("x-kubernetes-validations", []):
            if not isinstance(rule, dict) or "rule" not in rule:
                errors.append(f"{path}: x-kubernetes-validations entry without rule")
    else:
        for k in node:
            if k in VALUE_VALIDATION_FORBIDDEN:
                errors.append(f"{path}: {k!r} not allowed inside a value validation (allOf/anyOf/oneOf/not)")
    for name, sub in (node.get("properties") or {}).items():
        walk(sub, f"{path}.{name}", errors, in_value_validation)
    if isinstance(node.get("items"), dict):
        walk(node["items"], f"{path}[]", errors, in_value_validation)
    if isinstance(node.get("additionalProperties"), dict):
        walk(node["additionalProperties"], f"{path}{{*}}", errors, in_value_validation)
    for comb in ("allOf", "anyOf", "oneOf"):
        for idx, sub in enumerate(node.get(comb, [])):
            if ios and comb == "anyOf" and sub in ({"type": "integer"}, {"type": "string"}):
                continue  # the one allowed exception: int-or-string anyOf
            walk(sub, f"{path}.{comb}[{idx}]", errors, True)
    if isinstance(node.get("not"), dict):
        walk(node["not"], f"{path}.not", errors, True)


def type_ok(value, t):
    return {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
        "array": isinstance(value, list),
        "object": isinstance(value, dict),
    }[t]


def validate(value, schema, path, errors, strict_unknown=True):
    """Tiny OpenAPI validator: types, nullable, required, enum, bounds, patterns, unknown fields."""
    if value is None:
        if not schema.get("nullable"):
            errors.append(f"{path}: null but not nullable")
        return
    if schema.get("x-kubernetes-int-or-string"):
        if not (isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))):
            errors.append(f"{path}: expected int-or-string")
        return
    t = schema.get("type")
    if t is None:
        return  # preserve-unknown without a type accepts anything
    if not type_ok(value, t):
        errors.append(f"{path}: expected {t}, got {type(value).__name__}")
        return
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} not in enum {schema['enum']}")
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        errors.append(f"{path}: {value!r} does not match {schema['pattern']}")
    if "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{path}: below minimum")
    if "maximum" in schema and value > schema["maximum"]:
        errors.append(f"{path}: above maximum")
    if t == "object":
        props = schema.get("properties") or {}
        for r in schema.get("required", []):
            if r not in value:
                errors.append(f"{path}: missing required field {r!r}")
        for k, v in value.items():
            if k in props:
                validate(v, props[k], f"{path}.{k}", errors, strict_unknown)
            elif isinstance(schema.get("additionalProperties"), dict):
                validate(v, schema["additionalProperties"], f"{path}.{k}", errors, strict_unknown)
            elif strict_unknown and props and not schema.get("x-kubernetes-preserve-unknown-fields"):
                errors.append(f"{path}: unknown field {k!r} (would be pruned)")
    if t == "array" and isinstance(schema.get("items"), dict):
        for idx, v in enumerate(value):
            validate(v, schema["items"], f"{path}[{idx}]", errors, strict_unknown)


def crd_path(rel):
    """The CRD file of `rel` (the CRD's name, with the mesh flavour's folder for Istio's): a hand-written
    one of hack/crds, or one of OpenShift's own."""
    path = os.path.join(CRD_DIR, rel + ".yaml")
    if os.path.exists(path):
        return path
    path = _openshift_by_name().get(rel)
    assert path, f"no CRD {rel} in hack/crds nor in OpenShift's modules"
    return path


@functools.lru_cache(maxsize=None)
def _crd(rel):
    return load_crd(crd_path(rel))


@functools.lru_cache(maxsize=None)
def _openshift_by_name():
    return {load_crd(path)["metadata"]["name"]: path for path in OPENSHIFT_CRD_FILES}


def test_files_exist():
    assert len(CRD_FILES) >= 24, CRD_FILES
    assert len(OPENSHIFT_CRD_FILES) == sum(len(paths) for paths in OPENSHIFT_CRDS.values())
    assert os.path.exists(os.path.join(SEED_DIR, "sccs.yaml"))
    assert os.path.exists(os.path.join(SEED_DIR, "scc-clusterroles.yaml"))


@pytest.mark.parametrize("path", SEED_FILES + CRD_FILES, ids=lambda p: os.path.relpath(p, ROOT))
def test_yaml_parses(path):
    assert load_docs(path)


@pytest.mark.parametrize("path", CRD_FILES, ids=lambda p: os.path.relpath(p, CRD_DIR))
def test_crd(path):
    crd = load_crd(path)
    with open(path) as f:
        head = f.read()
    assert re.search(r"^# Source: \S+/\S+ \S+", head, re.M), "missing '# Source:' header"
    assert "# Trimmed for the kfocp local control plane:" in head, "missing '# Trimmed' header"
    assert os.path.getsize(path) <= MAX_BYTES, f"{path} is {os.path.getsize(path)} bytes"

    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    spec = crd["spec"]
    names = spec["names"]
    assert crd["metadata"]["name"] == f"{names['plural']}.{spec['group']}"
    assert os.path.basename(path) == crd["metadata"]["name"] + ".yaml"
    for key in ("kind", "plural", "singular", "listKind"):
        assert names.get(key), f"names.{key} missing"
    assert names["plural"] == names["plural"].lower()
    assert spec["scope"] in ("Namespaced", "Cluster")

    versions = spec["versions"]
    assert sum(1 for v in versions if v.get("storage")) == 1, "exactly one storage version"
    assert len({v["name"] for v in versions}) == len(versions)
    conv = spec.get("conversion")
    assert conv is None or conv.get("strategy", "None") == "None", "no conversion webhook allowed"
    assert "webhook" not in (conv or {})

    schemas = []
    for v in versions:
        if not v.get("served"):
            continue
        schema = (v.get("schema") or {}).get("openAPIV3Schema")
        assert schema, f"served version {v['name']} has no schema"
        errors = []
        walk(schema, f"{v['name']}", errors)
        assert not errors, "\n".join(errors)
        assert schema.get("type") == "object"
        props = schema.get("properties") or {}
        assert not schema.get("x-kubernetes-preserve-unknown-fields"), "whole object is preserve-unknown"
        if "metadata" in props:
            assert props["metadata"] == {"type": "object"}, "metadata may only be {type: object}"
        if "spec" in props:
            assert not props["spec"].get("x-kubernetes-preserve-unknown-fields"), "spec is preserve-unknown"
            assert props["spec"].get("properties"), "spec has no typed properties"
        subs = v.get("subresources") or {}
        if "scale" in subs:
            for k in ("specReplicasPath", "statusReplicasPath"):
                assert subs["scale"].get(k, "").startswith(".")
        if "status" in subs:
            assert "status" in props, "status subresource without a status field"
        schemas.append(schema)
    if len(schemas) > 1 and (conv is None or conv.get("strategy", "None") == "None"):
        assert all(s == schemas[0] for s in schemas), "served versions must share one schema with strategy None"


EXPECTED = {
    "securitycontextconstraints.security.openshift.io": ("Cluster", {"v1"}, "v1"),
    "users.user.openshift.io": ("Cluster", {"v1"}, "v1"),
    "groups.user.openshift.io": ("Cluster", {"v1"}, "v1"),
    "identities.user.openshift.io": ("Cluster", {"v1"}, "v1"),
    "oauthclients.oauth.openshift.io": ("Cluster", {"v1"}, "v1"),
    "routes.route.openshift.io": ("Namespaced", {"v1"}, "v1"),
    "servicemeshcontrolplanes.maistra.io": ("Namespaced", {"v2"}, "v2"),
    "servicemeshmemberrolls.maistra.io": ("Namespaced", {"v1"}, "v1"),
    "servicemeshmembers.maistra.io": ("Namespaced", {"v1"}, "v1"),
    "ossm2/envoyfilters.networking.istio.io": ("Namespaced", {"v1alpha3"}, "v1alpha3"),
    "ossm2/virtualservices.networking.istio.io": ("Namespaced", {"v1alpha3", "v1beta1"}, "v1alpha3"),
    "ossm2/gateways.networking.istio.io": ("Namespaced", {"v1alpha3", "v1beta1"}, "v1alpha3"),
    "ossm2/authorizationpolicies.security.istio.io": ("Namespaced", {"v1beta1", "v1"}, "v1beta1"),
    "istio/envoyfilters.networking.istio.io": ("Namespaced", {"v1alpha3"}, "v1alpha3"),
    "istio/virtualservices.networking.istio.io": ("Namespaced", {"v1", "v1beta1", "v1alpha3"}, "v1"),
    "istio/gateways.networking.istio.io": ("Namespaced", {"v1", "v1beta1", "v1alpha3"}, "v1"),
    "istio/authorizationpolicies.security.istio.io": ("Namespaced", {"v1", "v1beta1"}, "v1"),
    "istios.sailoperator.io": ("Cluster", {"v1"}, "v1"),
    "istiocnis.sailoperator.io": ("Cluster", {"v1"}, "v1"),
    "istiorevisions.sailoperator.io": ("Cluster", {"v1"}, "v1"),
    "knativeservings.operator.knative.dev": ("Namespaced", {"v1beta1"}, "v1beta1"),
    "assignmetadata.mutations.gatekeeper.sh": ("Cluster", {"v1", "v1beta1", "v1alpha1"}, "v1"),
    "assign.mutations.gatekeeper.sh": ("Cluster", {"v1", "v1beta1", "v1alpha1"}, "v1"),
    "subscriptions.operators.coreos.com": ("Namespaced", {"v1alpha1"}, "v1alpha1"),
    "clusterserviceversions.operators.coreos.com": ("Namespaced", {"v1alpha1"}, "v1alpha1"),
    "operatorgroups.operators.coreos.com": ("Namespaced", {"v1", "v1alpha2"}, "v1"),
    "machinesets.machine.openshift.io": ("Namespaced", {"v1beta1"}, "v1beta1"),
    "clusterautoscalers.autoscaling.openshift.io": ("Cluster", {"v1"}, "v1"),
    "machineautoscalers.autoscaling.openshift.io": ("Namespaced", {"v1beta1"}, "v1beta1"),
    "clusterversions.config.openshift.io": ("Cluster", {"v1"}, "v1"),
    "clusterpolicies.nvidia.com": ("Cluster", {"v1"}, "v1"),
    "nodefeaturediscoveries.nfd.openshift.io": ("Namespaced", {"v1"}, "v1"),
    "profiles.kubeflow.org": ("Cluster", {"v1", "v1beta1"}, "v1"),
    "nodescalingwatermarks.redhatcop.redhat.io": ("Namespaced", {"v1alpha1"}, "v1alpha1"),
}


def test_no_hand_written_copy_of_an_openshift_crd():
    upstream = set(_openshift_by_name())
    assert upstream == {"securitycontextconstraints.security.openshift.io", "routes.route.openshift.io",
                        "machinesets.machine.openshift.io", "clusterversions.config.openshift.io",
                        "clusterautoscalers.autoscaling.openshift.io", "machineautoscalers.autoscaling.openshift.io",
                        "authentications.config.openshift.io", "cloudcredentials.operator.openshift.io"}
    assert not upstream & {load_crd(path)["metadata"]["name"] for path in CRD_FILES}


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_expected_crd(rel):
    crd = load_crd(crd_path(rel))
    scope, served, storage = EXPECTED[rel]
    assert crd["spec"]["scope"] == scope
    assert {v["name"] for v in crd["spec"]["versions"] if v["served"]} == served
    assert [v["name"] for v in crd["spec"]["versions"] if v["storage"]] == [storage]


def _schema(rel, ver=None):
    crd = _crd(rel)
    for v in crd["spec"]["versions"]:
        if ver is None and v["storage"] or v["name"] == ver:
            return v
    raise AssertionError(ver)


def test_specific_shapes():
    v = _schema("machinesets.machine.openshift.io")
    assert v["subresources"]["scale"]["labelSelectorPath"] == ".status.labelSelector"
    spec = v["schema"]["openAPIV3Schema"]["properties"]["spec"]
    taint = spec["properties"]["template"]["properties"]["spec"]["properties"]["taints"]["items"]
    assert taint["required"] == ["effect", "key"]
    v = _schema("servicemeshcontrolplanes.maistra.io")
    gw = v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["gateways"]
    add = gw["properties"]["additionalIngress"]["additionalProperties"]["properties"]
    assert {"enabled", "namespace", "service", "runtime", "routeConfig"} <= set(add)
    assert add["service"]["properties"]["ports"]["type"] == "array"
    v = _schema("groups.user.openshift.io")
    assert v["schema"]["openAPIV3Schema"]["properties"]["users"]["nullable"] is True
    v = _schema("profiles.kubeflow.org")
    owner = v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["owner"]
    assert owner["required"] == ["kind", "name"]
    rq = v["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["resourceQuotaSpec"]
    assert rq["properties"]["hard"]["additionalProperties"]["x-kubernetes-int-or-string"] is True
    v = _schema("routes.route.openshift.io")
    rules = yaml.safe_dump(v["schema"]["openAPIV3Schema"])
    assert "spec.tls.certificate and spec.tls.externalCertificate" in rules
    assert "header actions are not permitted when tls termination is passthrough" in rules


SCC_REQUIRED = ["allowHostDirVolumePlugin", "allowHostIPC", "allowHostNetwork", "allowHostPID", "allowHostPorts",
                "allowPrivilegedContainer", "allowedCapabilities", "defaultAddCapabilities", "priority",
                "readOnlyRootFilesystem", "requiredDropCapabilities", "volumes"]
SEEDED_SCCS = {"restricted-v2", "nonroot-v2", "nonroot", "anyuid", "privileged", "hostnetwork-v2", "hostmount-anyuid"}


def test_seed_sccs_validate_against_crd():
    v = _schema("securitycontextconstraints.security.openshift.io")
    schema = v["schema"]["openAPIV3Schema"]
    assert set(SCC_REQUIRED) <= set(schema["required"])
    docs = load_docs(os.path.join(SEED_DIR, "sccs.yaml"))
    assert {d["metadata"]["name"] for d in docs} == SEEDED_SCCS
    for d in docs:
        assert d["apiVersion"] == "security.openshift.io/v1" and d["kind"] == "SecurityContextConstraints"
        for field in SCC_REQUIRED:
            assert field in d, f"{d['metadata']['name']}: missing required {field}"
        errors = []
        validate(d, schema, d["metadata"]["name"], errors)
        assert not errors, "\n".join(errors)
    # the literal nulls of the upstream manifests survive (that is why nullable matters)
    restricted = next(d for d in docs if d["metadata"]["name"] == "restricted-v2")
    assert restricted["priority"] is None and restricted["defaultAddCapabilities"] is None


def test_seed_scc_clusterroles():
    docs = load_docs(os.path.join(SEED_DIR, "scc-clusterroles.yaml"))
    roles = {d["metadata"]["name"]: d for d in docs if d["kind"] == "ClusterRole"}
    # the seeded SCCs', and those of the SCCs 4.17 and 4.20 add (hack/seed/sccs-4.<minor>.yaml)
    later = {"hostmount-anyuid-v2", "restricted-v3", "nested-container"}
    shipped = set()
    for minor in range(14, 21):
        shipped |= {d["metadata"]["name"] for d in load_docs(os.path.join(SEED_DIR, "sccs-4.%d.yaml" % minor))
                    if d["kind"] == "SecurityContextConstraints"}
    assert later <= shipped
    assert set(roles) == {f"system:openshift:scc:{n}" for n in SEEDED_SCCS | later}
    for name, role in roles.items():
        scc = name.rsplit(":", 1)[1]
        assert role["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"] == "true"
        assert role["rules"] == [{"apiGroups": ["security.openshift.io"], "resourceNames": [scc],
                                  "resources": ["securitycontextconstraints"], "verbs": ["use"]}]
    bindings = [d for d in docs if d["kind"] == "ClusterRoleBinding"]
    assert len(bindings) == 1
    crb = bindings[0]
    assert crb["metadata"]["name"] == "system:openshift:scc:restricted-v2"
    assert crb["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                              "name": "system:openshift:scc:restricted-v2"}
    assert crb["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                "name": "system:authenticated"}]


# --------------------------------------------------------------------------------------------------
# Objects shaped like the ones a Kubeflow-on-OpenShift installer writes must validate (types, required,
# enums, no pruned fields); obviously broken ones must not.
SAMPLES = [
    ("servicemeshcontrolplanes.maistra.io", {
        "apiVersion": "maistra.io/v2", "kind": "ServiceMeshControlPlane",
        "metadata": {"name": "data-science-smcp", "namespace": "istio-system"},
        "spec": {
            "version": "v2.5", "mode": "ClusterWide", "profiles": ["default"],
            "tracing": {"type": "None"}, "security": {"dataPlane": {"mtls": True}},
            "addons": {"kiali": {"enabled": False}, "prometheus": {"enabled": False}, "grafana": {"enabled": False}},
            "gateways": {
                "ingress": {"enabled": True, "routeConfig": {"enabled": False}},
                "egress": {"enabled": True},
                "openshiftRoute": {"enabled": False},
                "additionalIngress": {"kubeflow-gateway": {
                    "enabled": True, "namespace": "kubeflow",
                    "service": {"type": "ClusterIP", "metadata": {"labels": {"istio": "kubeflow-gateway"}},
                                "ports": [{"name": "http2", "port": 80, "targetPort": 8080}]},
                    "runtime": {"deployment": {"replicas": 1}}, "routeConfig": {"enabled": False}}},
            },
            "meshConfig": {"discoverySelectors": [{"matchLabels": {"istio-discovery": "enabled"}}]},
        }}),
    ("servicemeshmemberrolls.maistra.io", {
        "apiVersion": "maistra.io/v1", "kind": "ServiceMeshMemberRoll",
        "metadata": {"name": "default", "namespace": "istio-system"},
        "spec": {"members": ["kubeflow", "knative-serving"]}}),
    ("servicemeshmembers.maistra.io", {
        "apiVersion": "maistra.io/v1", "kind": "ServiceMeshMember",
        "metadata": {"name": "default", "namespace": "kubeflow"},
        "spec": {"controlPlaneRef": {"name": "data-science-smcp", "namespace": "istio-system"}}}),
    ("routes.route.openshift.io", {
        "apiVersion": "route.openshift.io/v1", "kind": "Route",
        "metadata": {"name": "kubeflow", "namespace": "istio-system"},
        "spec": {"host": "kubeflow.apps.example.com", "to": {"kind": "Service", "name": "istio-ingressgateway", "weight": 100},
                 "port": {"targetPort": "https"},
                 "tls": {"termination": "passthrough", "insecureEdgeTerminationPolicy": "Redirect"},
                 "wildcardPolicy": "None"}}),
    ("profiles.kubeflow.org", {
        "apiVersion": "kubeflow.org/v1", "kind": "Profile", "metadata": {"name": "alice"},
        "spec": {"owner": {"kind": "User", "name": "alice@example.com"},
                 "resourceQuotaSpec": {"hard": {"cpu": "8", "memory": "16Gi", "requests.nvidia.com/gpu": 1}},
                 "plugins": [{"kind": "WorkloadIdentity", "spec": {"gcpServiceAccount": "x@y"}}]}}),
    ("istios.sailoperator.io", {
        "apiVersion": "sailoperator.io/v1", "kind": "Istio", "metadata": {"name": "default"},
        "spec": {"namespace": "istio-system", "version": "v1.26.0",
                 "updateStrategy": {"type": "RevisionBased", "inactiveRevisionDeletionGracePeriodSeconds": 30},
                 "values": {"meshConfig": {"discoverySelectors": [{"matchLabels": {"istio-discovery": "enabled"}}],
                                           "accessLogFile": "/dev/stdout"},
                            "pilot": {"env": {"PILOT_ENABLE_GATEWAY_API": "false"}},
                            "global": {"istioNamespace": "istio-system"}}}}),
    ("istiocnis.sailoperator.io", {
        "apiVersion": "sailoperator.io/v1", "kind": "IstioCNI", "metadata": {"name": "default"},
        "spec": {"namespace": "istio-cni", "version": "v1.26.0", "profile": "openshift", "values": {"cni": {"logLevel": "info"}}}}),
    ("knativeservings.operator.knative.dev", {
        "apiVersion": "operator.knative.dev/v1beta1", "kind": "KnativeServing",
        "metadata": {"name": "knative-serving", "namespace": "knative-serving"},
        "spec": {"high-availability": {"replicas": 2},
                 "config": {"istio": {"local-gateway.knative-serving.knative-local-gateway": "x"}, "domain": {"example.com": ""}},
                 "ingress": {"istio": {"enabled": True}, "kourier": {"enabled": False}},
                 "workloads": [{"name": "activator", "replicas": 2, "env": [{"container": "activator", "envVars": []}]}]}}),
    ("assignmetadata.mutations.gatekeeper.sh", {
        "apiVersion": "mutations.gatekeeper.sh/v1", "kind": "AssignMetadata", "metadata": {"name": "inject"},
        "spec": {"match": {"scope": "Namespaced", "kinds": [{"apiGroups": [""], "kinds": ["Pod"]}],
                           "namespaces": ["kubeflow-*"]},
                 "location": "metadata.labels.sidecar.istio.io/inject",
                 "parameters": {"assign": {"value": "true"}}}}),
    ("assign.mutations.gatekeeper.sh", {
        "apiVersion": "mutations.gatekeeper.sh/v1", "kind": "Assign", "metadata": {"name": "tolerate-gpu"},
        "spec": {"applyTo": [{"groups": [""], "kinds": ["Pod"], "versions": ["v1"]}],
                 "match": {"scope": "Namespaced", "kinds": [{"apiGroups": ["*"], "kinds": ["Pod"]}]},
                 "location": "spec.tolerations",
                 "parameters": {"assign": {"value": [{"key": "nvidia.com/gpu", "operator": "Exists"}]},
                                "pathTests": [{"subPath": "spec.tolerations", "condition": "MustExist"}]}}}),
    ("subscriptions.operators.coreos.com", {
        "apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
        "metadata": {"name": "servicemeshoperator", "namespace": "openshift-operators"},
        "spec": {"channel": "stable", "installPlanApproval": "Automatic", "name": "servicemeshoperator",
                 "source": "redhat-operators", "sourceNamespace": "openshift-marketplace",
                 "config": {"env": [{"name": "X", "value": "y"}], "nodeSelector": {"a": "b"}}}}),
    ("operatorgroups.operators.coreos.com", {
        "apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
        "metadata": {"name": "og", "namespace": "openshift-nfd"}, "spec": {"targetNamespaces": ["openshift-nfd"]}}),
    ("machinesets.machine.openshift.io", {
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
        "metadata": {"name": "gpu", "namespace": "openshift-machine-api"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"machine.openshift.io/cluster-api-machineset": "gpu"}},
                 "template": {"metadata": {"labels": {"machine.openshift.io/cluster-api-machineset": "gpu"}},
                              "spec": {"metadata": {"labels": {"nvidia.com/gpu.present": "true"}},
                                       "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}],
                                       "providerSpec": {"value": {"instanceType": "g5.xlarge", "kind": "AWSMachineProviderConfig"}}}}}}),
    ("clusterautoscalers.autoscaling.openshift.io", {
        "apiVersion": "autoscaling.openshift.io/v1", "kind": "ClusterAutoscaler", "metadata": {"name": "default"},
        "spec": {"resourceLimits": {"maxNodesTotal": 20, "gpus": [{"type": "nvidia-a10g", "min": 0, "max": 8}]},
                 "scaleDown": {"enabled": True, "delayAfterAdd": "10m", "unneededTime": "5m"}}}),
    ("machineautoscalers.autoscaling.openshift.io", {
        "apiVersion": "autoscaling.openshift.io/v1beta1", "kind": "MachineAutoscaler",
        "metadata": {"name": "gpu", "namespace": "openshift-machine-api"},
        "spec": {"minReplicas": 0, "maxReplicas": 4,
                 "scaleTargetRef": {"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet", "name": "gpu"}}}),
    ("clusterpolicies.nvidia.com", {
        "apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "gpu-cluster-policy"},
        "spec": {"operator": {"defaultRuntime": "crio", "use_ocp_driver_toolkit": True},
                 "daemonsets": {}, "dcgm": {"enabled": True}, "dcgmExporter": {"config": {"name": ""}},
                 "devicePlugin": {"enabled": True}, "driver": {"enabled": True, "rdma": {"enabled": False}},
                 "gfd": {}, "nodeStatusExporter": {"enabled": True}, "toolkit": {"enabled": True},
                 "migManager": {"enabled": True}, "mig": {"strategy": "single"}, "validator": {"plugin": {"env": []}}}}),
    ("nodefeaturediscoveries.nfd.openshift.io", {
        "apiVersion": "nfd.openshift.io/v1", "kind": "NodeFeatureDiscovery",
        "metadata": {"name": "nfd-instance", "namespace": "openshift-nfd"},
        "spec": {"operand": {"image": "registry.redhat.io/openshift4/ose-node-feature-discovery:v4.14", "servicePort": 12000},
                 "workerConfig": {"configData": "core:\n  sleepInterval: 60s\n"}}}),
    ("nodescalingwatermarks.redhatcop.redhat.io", {
        "apiVersion": "redhatcop.redhat.io/v1alpha1", "kind": "NodeScalingWatermark",
        "metadata": {"name": "gpu", "namespace": "proactive-node-scaling-operator"},
        "spec": {"watermarkPercentage": 20, "nodeSelector": {"nvidia.com/gpu.present": "true"},
                 "pausePodSize": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1}}}),
    ("oauthclients.oauth.openshift.io", {
        "apiVersion": "oauth.openshift.io/v1", "kind": "OAuthClient", "metadata": {"name": "kubeflow"},
        "secret": "s3cr3t", "redirectURIs": ["https://kubeflow.apps.example.com/oauth2/callback"], "grantMethod": "auto"}),
    ("groups.user.openshift.io", {
        "apiVersion": "user.openshift.io/v1", "kind": "Group", "metadata": {"name": "kubeflow-admins"}, "users": None}),
    ("users.user.openshift.io", {
        "apiVersion": "user.openshift.io/v1", "kind": "User", "metadata": {"name": "alice"},
        "fullName": "Alice", "identities": ["htpasswd:alice"], "groups": None}),
    ("ossm2/envoyfilters.networking.istio.io", {
        "apiVersion": "networking.istio.io/v1alpha3", "kind": "EnvoyFilter",
        "metadata": {"name": "x-forwarded", "namespace": "istio-system"},
        "spec": {"workloadSelector": {"labels": {"istio": "ingressgateway"}},
                 "configPatches": [{"applyTo": "NETWORK_FILTER",
                                    "match": {"context": "GATEWAY", "listener": {"filterChain": {"filter": {
                                        "name": "envoy.filters.network.http_connection_manager"}}}},
                                    "patch": {"operation": "MERGE", "value": {"typed_config": {"@type": "x", "xff_num_trusted_hops": 1}}}}]}}),
    ("istio/virtualservices.networking.istio.io", {
        "apiVersion": "networking.istio.io/v1", "kind": "VirtualService",
        "metadata": {"name": "dashboard", "namespace": "kubeflow"},
        "spec": {"gateways": ["kubeflow/kubeflow-gateway"], "hosts": ["*"],
                 "http": [{"match": [{"uri": {"prefix": "/"}}], "rewrite": {"uri": "/"}, "timeout": "300s",
                           "route": [{"destination": {"host": "centraldashboard.kubeflow.svc.cluster.local",
                                                      "port": {"number": 80}}}]}]}}),
    ("ossm2/gateways.networking.istio.io", {
        "apiVersion": "networking.istio.io/v1beta1", "kind": "Gateway",
        "metadata": {"name": "kubeflow-gateway", "namespace": "kubeflow"},
        "spec": {"selector": {"istio": "ingressgateway"},
                 "servers": [{"hosts": ["*"], "port": {"name": "http", "number": 80, "protocol": "HTTP"}}]}}),
    ("istio/authorizationpolicies.security.istio.io", {
        "apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
        "metadata": {"name": "ns-owner-access-istio", "namespace": "alice"},
        "spec": {"action": "ALLOW", "rules": [
            {"when": [{"key": "request.headers[kubeflow-userid]", "values": ["alice@example.com"]}]},
            {"from": [{"source": {"principals": ["cluster.local/ns/kubeflow/sa/notebook-controller-service-account"]}}],
             "to": [{"operation": {"methods": ["GET"], "paths": ["*/api/kernels"]}}]}]}}),
]

BROKEN = [
    ("routes.route.openshift.io", {"apiVersion": "route.openshift.io/v1", "kind": "Route", "metadata": {"name": "r"},
                                   "spec": {"host": "a.example.com"}}, "missing required field 'to'"),
    ("routes.route.openshift.io", {"apiVersion": "route.openshift.io/v1", "kind": "Route", "metadata": {"name": "r"},
                                   "spec": {"to": {"kind": "Service", "name": "s"}, "tls": {"termination": "bogus"}}},
     "not in enum"),
    ("profiles.kubeflow.org", {"apiVersion": "kubeflow.org/v1", "kind": "Profile", "metadata": {"name": "p"},
                               "spec": {"owner": {"kind": "User"}}}, "missing required field 'name'"),
    ("servicemeshcontrolplanes.maistra.io", {"apiVersion": "maistra.io/v2", "kind": "ServiceMeshControlPlane",
                                             "metadata": {"name": "x"}, "spec": {"mode": "Cluster"}}, "not in enum"),
    ("servicemeshcontrolplanes.maistra.io", {"apiVersion": "maistra.io/v2", "kind": "ServiceMeshControlPlane",
                                             "metadata": {"name": "x"},
                                             "spec": {"gateways": {"additionalIngress": {"g": {"enabled": "yes"}}}}},
     "expected boolean"),
    ("servicemeshcontrolplanes.maistra.io", {"apiVersion": "maistra.io/v2", "kind": "ServiceMeshControlPlane",
                                             "metadata": {"name": "x"}, "spec": {"gatways": {}}}, "unknown field"),
    ("subscriptions.operators.coreos.com", {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
                                            "metadata": {"name": "s"}, "spec": {"name": "x", "sourceNamespace": "y"}},
     "missing required field 'source'"),
    ("machineautoscalers.autoscaling.openshift.io", {"apiVersion": "autoscaling.openshift.io/v1beta1",
                                                     "kind": "MachineAutoscaler", "metadata": {"name": "m"},
                                                     "spec": {"minReplicas": 0, "maxReplicas": 0,
                                                              "scaleTargetRef": {"kind": "MachineSet", "name": "x"}}},
     "below minimum"),
    ("clusterpolicies.nvidia.com", {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "c"},
                                    "spec": {"driver": {"enabled": True}}}, "missing required field 'operator'"),
    ("istios.sailoperator.io", {"apiVersion": "sailoperator.io/v1", "kind": "Istio", "metadata": {"name": "default"},
                                "spec": {"namespace": "istio-system", "version": "v1.26.0",
                                         "updateStrategy": {"type": "Rolling"}}}, "not in enum"),
    ("securitycontextconstraints.security.openshift.io", {
        "apiVersion": "security.openshift.io/v1", "kind": "SecurityContextConstraints", "metadata": {"name": "x"},
        "allowHostDirVolumePlugin": False}, "missing required field 'priority'"),
]


def _storage_schema(rel):
    crd = _crd(rel)
    return next(v for v in crd["spec"]["versions"] if v["storage"])["schema"]["openAPIV3Schema"]


@pytest.mark.parametrize("rel,obj", SAMPLES, ids=[f"{r}:{o['metadata']['name']}" for r, o in SAMPLES])
def test_installer_shaped_objects_validate(rel, obj):
    errors = []
    validate(obj, _storage_schema(rel), obj["kind"], errors)
    assert not errors, "\n".join(errors)
    # every flavour of the Istio CRDs must accept the same object (same schemas, other versions)
    if rel.startswith(("ossm2/", "istio/")):
        other = ("istio/" if rel.startswith("ossm2/") else "ossm2/") + rel.split("/", 1)[1]
        errors = []
        validate(obj, _storage_schema(other), obj["kind"], errors)
        assert not errors, "\n".join(errors)


@pytest.mark.parametrize("rel,obj,expected", BROKEN, ids=[f"{r}:{e}" for r, unused, e in BROKEN])
def test_broken_objects_are_rejected(rel, obj, expected):
    errors = []
    validate(obj, _storage_schema(rel), obj["kind"], errors)
    assert any(expected in e for e in errors), errors
