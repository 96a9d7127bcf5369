"""The components pipeline on a render with the real `example` render's awkward properties
(tests/fixtures/example_tree.py): SCC least privilege, sidecars, mirroring, ownership policy,
remote bases."""
import json
import sys
from pathlib import Path

import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils import kustomize
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import manifests as m
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError, phase

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
import example_tree  # noqa: E402

INJECT = m.INJECT


@pytest.fixture(scope="module")
def rendered():
    return {"kubeflow-example": example_tree.objects()}


def by_name(objs):
    return dict(((o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]), o) for o in objs)


def template_meta(obj):
    return obj["spec"]["template"]["metadata"]


def test_assemble_keeps_every_object_of_the_render_once_and_makes_each_namespace(rendered):
    """Nothing of an example-sized render is lost or doubled on its way through every pass, each
    object names its component, every namespace an object lives in is made, and the apply order
    puts the CRDs first and the admission webhooks last."""
    def key(obj):
        return obj["apiVersion"], obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]

    objs = rendered["kubeflow-example"]
    out = m.assemble(rendered, {"sidecar": {}, "scc": {}})["objects"]
    keys = [key(o) for o in out]
    assert len(keys) == len(set(keys))
    grants = [k for k in keys if k[3].startswith("kfocp-components-scc-")]
    assert grants  # the SCC grants' RoleBindings
    assert set(k for k in keys if k[1] != "Namespace") - set(grants) == set(key(o) for o in objs if o["kind"] != "Namespace")
    lived_in = set(o["metadata"]["namespace"] for o in objs if o["metadata"].get("namespace"))
    assert set(k[3] for k in keys if k[1] == "Namespace") == lived_in | set(
        o["metadata"]["name"] for o in objs if o["kind"] == "Namespace")
    assert all(o["metadata"]["labels"][m.COMPONENT_LABEL] in ("kubeflow-example", "scc") for o in out
               if o["kind"] != "Namespace")
    phases = dict((o["kind"], phase(o["kind"])) for o in out)
    assert phases["CustomResourceDefinition"] == min(phases.values())
    assert phases["MutatingWebhookConfiguration"] == phases["ValidatingWebhookConfiguration"] == max(phases.values())


def test_scc_least_privilege_and_the_deciding_field(rendered):
    result = m.assemble(rendered, {"scc": {}})
    grants = dict(((g["namespace"], g["serviceaccount"]), g) for g in result["grants"])
    assert dict((k, g["scc"]) for k, g in grants.items()) == example_tree.EXPECTED_SCC
    assert grants[("kubeflow", "spark-operator-controller")]["field"] == "spec.securityContext.fsGroup"
    # root with a seccomp profile: hostnetwork-v2, just before privileged in OpenShift's order, refuses the UID
    assert grants[("kubeflow", "seaweedfs")]["field"] == "spec.securityContext.runAsUser"
    assert grants[("kubeflow-system", "hostport-exporter")]["field"] == "spec.containers[0].ports"
    # host network, host paths and privileged containers: hostnetwork-v2 refuses the host path volumes first
    assert grants[("kube-system", "istio-cni-node")]["field"] == "spec.volumes[0].hostPath"
    header = result["audit"][0]
    assert "FORCED BY" in header
    spark = next(line for line in result["audit"] if line.startswith("spark-operator-controller"))
    assert "nonroot-v2" in spark and "spec.securityContext.fsGroup" in spark and "185" in spark


def test_pod_security_level_of_each_namespace_and_the_workload_and_field_that_forced_it(rendered):
    result = m.assemble(rendered, {"scc": {}, "sidecar": {}})
    levels = dict((ns, (e["level"], e["workload"], e["field"])) for ns, e in result["pod_security"].items())
    assert levels == example_tree.EXPECTED_POD_SECURITY
    # every namespace of the render carries the labels of its level, at the pinned policy version
    spaces = dict((o["metadata"]["name"], o["metadata"].get("labels") or {}) for o in result["objects"]
                  if o["kind"] == "Namespace")
    assert sorted(spaces) == sorted(levels)
    for name, (level, _workload, _field) in levels.items():
        for mode in ("enforce", "warn", "audit"):
            assert spaces[name]["pod-security.kubernetes.io/" + mode] == level
            assert spaces[name]["pod-security.kubernetes.io/%s-version" % mode] == "v1.36"
        assert spaces[name]["security.openshift.io/scc.podSecurityLabelSync"] == "false"
    assert spaces["kubeflow"]["istio-injection"] == "enabled"  # beside the injection label
    # the report: one line per namespace, with what forced the level and the checks each workload fails
    table = result["pod_security_table"]
    assert "FORCED BY" in table[0] and len(table) == len(levels) + 1
    hostport = next(line for line in table if line.startswith("kubeflow-system"))
    assert "baseline refuses Deployment hostport-exporter (hostPorts)" in hostport
    minio = m.derive_pod_security(result["objects"], ["kubeflow"])["kubeflow"]["reason"]
    assert minio.startswith("restricted refuses ") and "and 18 more" in minio


def test_pod_security_fixed_level_fails_naming_the_workload_and_field(rendered):
    message = (r"components_pod_security: DaemonSet istio-cni-node in namespace kube-system needs the privileged "
               r"level, as spec.hostNetwork")
    with pytest.raises(DefinitionError, match=message):
        m.assemble(rendered, {"pod_security": "baseline"})
    result = m.assemble(rendered, {"pod_security": "privileged"})
    assert set(e["level"] for e in result["pod_security"].values()) == {"privileged"}
    result = m.assemble(rendered, {"pod_security": "none"})
    assert result["pod_security"] == {}
    assert not [o for o in result["objects"] if o["kind"] == "Namespace" and any(
        k.startswith("pod-security.kubernetes.io/") for k in o["metadata"].get("labels") or {})]
    with pytest.raises(DefinitionError, match="components_pod_security: must be one of"):
        m.assemble(rendered, {"pod_security": "strict"})


def test_sidecars_only_in_the_components_namespace_and_never_over_false(rendered):
    objs = by_name(m.assemble(rendered, {"sidecar": {}})["objects"])
    assert objs[("Namespace", "", "kubeflow")]["metadata"]["labels"]["istio-injection"] == "enabled"
    assert "istio-injection" not in (objs[("Namespace", "", "istio-system")]["metadata"].get("labels") or {})
    workloads = [o for o in objs.values() if m.pod_spec(o) is not None]
    for obj in workloads:
        meta = template_meta(obj)
        annotations, labels = meta.get("annotations") or {}, meta.get("labels") or {}
        if obj["metadata"]["namespace"] != "kubeflow":  # as upstream wrote them
            assert INJECT not in annotations, obj["metadata"]["name"]
            key = (obj["kind"], obj["metadata"]["namespace"], obj["metadata"]["name"])
            upstream = by_name(example_tree.workloads())[key]
            assert labels.get(INJECT) == template_meta(upstream)["labels"].get(INJECT)
            continue
        assert annotations[INJECT] == labels.get(INJECT, annotations[INJECT])  # never disagree
    kf = dict((o["metadata"]["name"], template_meta(o)) for o in workloads if o["metadata"]["namespace"] == "kubeflow")
    assert kf["ml-pipeline"]["annotations"][INJECT] == "true"
    assert kf["metadata-envoy-deployment"]["annotations"][INJECT] == "false"  # upstream's annotation
    assert kf["minio"]["labels"][INJECT] == "false" == kf["minio"]["annotations"][INJECT]  # upstream's label
    assert kf["cache-deployer"]["labels"][INJECT] == "false" == kf["cache-deployer"]["annotations"][INJECT]
    assert kf["app-00"]["labels"][INJECT] == "false"


def test_sidecars_never_into_mesh_cni_cert_manager_or_knative_even_when_named(rendered):
    namespaces = ["kubeflow", "istio-system", "kube-system", "cert-manager", "knative-serving"]
    objs = by_name(m.assemble(rendered, {"sidecar": {"namespaces": namespaces}})["objects"])
    for key in (("Deployment", "istio-system", "istiod"), ("Deployment", "istio-system", "istio-ingressgateway"),
                ("Deployment", "istio-system", "cluster-local-gateway"),
                ("DaemonSet", "kube-system", "istio-cni-node"), ("Deployment", "cert-manager", "cert-manager"),
                ("Deployment", "cert-manager", "cert-manager-webhook"),
                ("Deployment", "knative-serving", "activator")):
        assert template_meta(objs[key])["annotations"][INJECT] == "false", key
    assert objs[("Namespace", "", "istio-system")]["metadata"]["labels"]["istio-injection"] == "enabled"


def test_mirror_finds_every_image_reference(rendered):
    prefixes = {"docker.io": "mirror.example.com/dockerhub", "ghcr.io": "mirror.example.com/ghcr",
                "gcr.io": "mirror.example.com/gcr", "quay.io": "mirror.example.com/quay"}
    result = m.assemble(rendered, {"mirror": {"prefixes": prefixes}})
    sources = set(e["source"] for e in result["mirror"])
    for image in ("docker.io/library/busybox:1.28", "ghcr.io/containerd/busybox", "docker.io/kserve/art-explainer",
                  "docker.io/kserve/storage-initializer:v0.15.0", "docker.io/istio/proxyv2:1.29.0",
                  "gcr.io/ml-pipeline/sidecar", "quay.io/argoproj/argoexec:v3.5.14",
                  "ghcr.io/kubeflow/ml-pipeline:v1.10.0"):
        assert image in sources, image
    assert result["unmatched_images"] == [] and result["mirror_warnings"] == []
    objs = by_name(result["objects"])
    isvc = objs[("ConfigMap", "kubeflow", "inferenceservice-config")]["data"]
    assert json.loads(isvc["explainers"])["art"]["image"] == "mirror.example.com/dockerhub/kserve/art-explainer"
    injector = json.loads(objs[("ConfigMap", "istio-system", "istio-sidecar-injector")]["data"]["values"])
    assert injector["global"]["hub"] == "mirror.example.com/dockerhub/istio"
    assert injector["global"]["proxy"]["image"] == "proxyv2"
    katib = objs[("Deployment", "kubeflow", "katib-controller")]
    assert katib["spec"]["template"]["spec"]["containers"][0]["image"] == \
        "mirror.example.com/dockerhub/library/busybox:1.28"
    args = objs[("Deployment", "kubeflow-system", "hostport-exporter")]["spec"]["template"]["spec"]["containers"][0]
    assert args["args"] == ["--sidecar-image=mirror.example.com/gcr/ml-pipeline/sidecar", "--cfg=/etc/cfg.yaml"]
    # a second pass finds nothing left to rewrite
    again = m.mirror_images(result["objects"], prefixes)
    assert again[0] == result["objects"] and again[1] == [] and again[2] == []


def test_mirror_warns_naming_object_and_field(rendered):
    result = m.assemble(rendered, {"mirror": {"prefixes": {"ghcr.io": "mirror.example.com/ghcr"}}})
    warnings = result["mirror_warnings"]
    assert "busybox:1.28 (Deployment kubeflow/katib-controller, field spec.template.spec.containers[0].image)" \
        in warnings
    assert "hub docker.io/istio (ConfigMap istio-system/istio-sidecar-injector, field data.values.global.hub)" \
        in warnings
    assert any(w.startswith("kserve/art-explainer (ConfigMap kubeflow/inferenceservice-config, field "
                            "data.explainers.art.image") for w in warnings)
    assert "docker.io/istio/proxyv2:1.29.0" in result["unmatched_images"]


def test_ownership_policy_crds_left_alone_unless_taken_over(rendered):
    objs = m.assemble(rendered, {})["objects"]
    crds = [o for o in objs if o["kind"] == "CustomResourceDefinition"]
    assert all(o["metadata"]["annotations"]["kfocp.io/ownership"] == "ensure" for o in crds)
    assert not any("kfocp.io/ownership" in (o["metadata"].get("annotations") or {}) for o in objs
                   if o["kind"] not in ("CustomResourceDefinition", "Namespace"))
    taken = m.assemble(rendered, {"take_over": ["CustomResourceDefinition/*.kubeflow.org"]})["objects"]
    profile = next(o for o in taken if o["metadata"]["name"] == "profiles.kubeflow.org")
    assert profile["metadata"]["annotations"] == {"kfocp.io/adopt": "true"}
    with pytest.raises(Exception, match="components_take_over"):
        m.assemble(rendered, {"take_over": ["profiles.kubeflow.org"]})


def test_any_component_from_the_catalog():
    catalog = {"kubeflow-example": ["example"], "pipelines": ["applications/pipeline"]}
    assert m.select({"kubeflow-example": "managed"}, catalog) == {"kubeflow-example": ["example"]}
    assert m.select({"root": "managed"}, {"root": "."}) == {"root": ["."]}
    with pytest.raises(Exception, match="components_catalog.kubeflow-example"):
        m.select({"kubeflow-example": "managed"}, {"kubeflow-example": ["../elsewhere"]})
    with pytest.raises(Exception, match="components_components.other"):
        m.select({"other": "managed"}, catalog)


def test_remote_bases_fail_before_any_build_naming_each(tmp_path):
    example_tree.write(tmp_path)
    components = {"remote": ["remote"], "kubeflow-example": ["example"]}
    assert kustomize.remote_bases(str(tmp_path), "remote") == [("remote/kustomization.yaml",
                                                                example_tree.REMOTE_BASE)]
    with pytest.raises(kustomize.SourceError) as err:
        kustomize.localise(str(tmp_path), components, {}, str(tmp_path / "work"))
    assert example_tree.REMOTE_BASE in str(err.value) and "component remote" in str(err.value)
    assert "components_remote_bases" in str(err.value)
    # a tree without remote bases is built where it is
    assert kustomize.localise(str(tmp_path), {"kubeflow-example": ["example"]}, {}, "/nonexistent") == str(tmp_path)


def test_remote_bases_from_a_local_mirror(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    tmp_path = tmp_path / "tree"
    example_tree.write(tmp_path)
    mirrors = {"https://github.com/kubeflow/pipelines": str(tmp_path / "mirror" / "pipelines")}
    root = kustomize.localise(str(tmp_path), {"remote": ["remote"]}, mirrors, str(work))
    assert root != str(tmp_path)
    try:
        kubectl = kustomize.find_kubectl()
    except kustomize.SourceError:
        pytest.skip("no kubectl to build with")
    objs = kustomize.build_path(kubectl, root, "remote", "remote")
    assert [o["metadata"]["name"] for o in objs] == ["pipeline-install-config"]
    # the user's tree is untouched
    assert example_tree.REMOTE_BASE in (tmp_path / "remote" / "kustomization.yaml").read_text()
