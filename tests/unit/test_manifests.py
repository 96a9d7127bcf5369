"""The components role's pure transforms: a table test and a property test for each."""
import copy
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from ansible_collections.kfocp.kubeflow.plugins.module_utils import releases
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import manifests as m
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import scc_policies
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "manifests"
# the catalog of the release whose layout the fixture tree has
CATALOG = releases.catalog("v1.10.2")


def deployment(name, image="docker.io/kubeflownotebookswg/app:v1", namespace="kubeflow", sa=None, ctx=None,
               pod_ctx=None, volumes=None, kind="Deployment", **spec_extra):
    container = {"name": name, "image": image}
    if ctx:
        container["securityContext"] = ctx
    pod = {"containers": [container]}
    if sa:
        pod["serviceAccountName"] = sa
    if pod_ctx:
        pod["securityContext"] = pod_ctx
    if volumes:
        pod["volumes"] = volumes
    pod.update(spec_extra)
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": namespace},
            "spec": {"template": {"metadata": {"labels": {"app": name}}, "spec": pod}}}


def rendered_fixture():
    """The fixture tree rendered with the kubectl the control plane builds, when it is there."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import kustomize
    try:
        kubectl = kustomize.find_kubectl()
    except kustomize.SourceError:
        pytest.skip("no kubectl to render the fixture with")
    selected = m.select(dict((name, "managed") for name in CATALOG), CATALOG)
    return dict((name, [obj for path in paths for obj in kustomize.build_path(kubectl, str(FIXTURE), name, path)])
                for name, paths in selected.items())


# ---------------------------------------------------------------- components

def test_select_returns_managed_components_with_their_paths():
    chosen = m.select({"pipelines": "managed", "katib": "removed"}, CATALOG)
    assert chosen == {"pipelines": CATALOG["pipelines"]}


@pytest.mark.parametrize("components,message", [
    ({"pipeline": "managed"}, "components_components.pipeline: unknown component. Use one of"),
    ({"katib": "enabled"}, "components_components.katib: 'enabled' is not managed or removed"),
    ("katib", "components_components: must be a mapping"),
])
def test_select_rejects_bad_input_naming_the_field(components, message):
    with pytest.raises(DefinitionError, match=message.replace(".", r"\.").replace("(", r"\(")):
        m.select(components, CATALOG)


def test_select_rejects_a_path_outside_the_tree():
    with pytest.raises(DefinitionError, match="not a path inside the manifests tree"):
        m.select({"katib": "managed"}, {"katib": ["../../etc"]})


def test_label_components_labels_and_dedupes_identical_objects():
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "x"}}
    objs = m.label_components({"a": [role], "b": [copy.deepcopy(role)]})
    assert len(objs) == 1 and objs[0]["metadata"]["labels"] == {m.COMPONENT_LABEL: "a"}


def test_label_components_rejects_two_different_objects_with_one_identity():
    one = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "k"}, "data": {"a": "1"}}
    two = dict(one, data={"a": "2"})
    with pytest.raises(DefinitionError, match="also rendered by a, differently"):
        m.label_components({"a": [one], "b": [two]})


# ---------------------------------------------------------------- namespace

def test_set_namespace_moves_objects_subjects_webhooks_and_hosts():
    objs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubeflow"}},
        deployment("a"),
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "b"},
         "subjects": [{"kind": "ServiceAccount", "name": "a", "namespace": "kubeflow"},
                      {"kind": "ServiceAccount", "name": "c", "namespace": "other"}]},
        {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
         "metadata": {"name": "w", "annotations": {"cert-manager.io/inject-ca-from": "kubeflow/cert"}},
         "webhooks": [{"name": "w", "clientConfig": {"service": {"name": "s", "namespace": "kubeflow"}}}]},
        {"apiVersion": "networking.istio.io/v1beta1", "kind": "VirtualService",
         "metadata": {"name": "v", "namespace": "kubeflow"},
         "spec": {"http": [{"route": [{"destination": {"host": "ml-pipeline-ui.kubeflow.svc.cluster.local"}}]}]}},
    ]
    out = m.set_namespace(objs, "ml")
    assert out[0]["metadata"]["name"] == "ml"
    assert out[1]["metadata"]["namespace"] == "ml"
    assert [s["namespace"] for s in out[2]["subjects"]] == ["ml", "other"]
    assert out[3]["webhooks"][0]["clientConfig"]["service"]["namespace"] == "ml"
    assert out[3]["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == "ml/cert"
    assert out[4]["spec"]["http"][0]["route"][0]["destination"]["host"] == "ml-pipeline-ui.ml.svc.cluster.local"
    assert objs[1]["metadata"]["namespace"] == "kubeflow"  # input untouched


def test_set_namespace_moves_every_reference_to_the_kubeflow_gateway():
    objs = [{"apiVersion": "networking.istio.io/v1alpha3", "kind": "VirtualService",
             "metadata": {"name": "ui", "namespace": "kubeflow"},
             "spec": {"gateways": ["kubeflow/kubeflow-gateway", "mesh", "other/kubeflow-gateway"]}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "config-istio", "namespace": "knative-serving"},
             "data": {"gateway.kubeflow.kubeflow-gateway": "istio-ingressgateway.istio-system.svc.cluster.local",
                      "ingress": '{"ingressGateway": "kubeflow/kubeflow-gateway", "image": "quay.io/kubeflow/kubeflow-gateway2"}'}},
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "nb", "namespace": "kubeflow"},
             "spec": {"template": {"spec": {"containers": [
                 {"name": "c", "env": [{"name": "ISTIO_GATEWAY", "value": "kubeflow/kubeflow-gateway"}]}]}}}}]
    vs, config, deployment = m.set_namespace(objs, "kf")
    assert vs["spec"]["gateways"] == ["kf/kubeflow-gateway", "mesh", "other/kubeflow-gateway"]
    assert sorted(config["data"]) == ["gateway.kf.kubeflow-gateway", "ingress"]
    assert config["data"]["ingress"] == '{"ingressGateway": "kf/kubeflow-gateway", "image": "quay.io/kubeflow/kubeflow-gateway2"}'
    assert deployment["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] == "kf/kubeflow-gateway"
    # a Gateway of another name in the render moves too, and nothing changes when the namespace does not
    gateway = {"apiVersion": "networking.istio.io/v1", "kind": "Gateway", "metadata": {"name": "gw2", "namespace": "kubeflow"}}
    moved = m.set_namespace([gateway, dict(vs, spec={"gateways": ["kubeflow/gw2"]})], "kf")
    assert moved[1]["spec"]["gateways"] == ["kf/gw2"]
    assert m.set_namespace(objs, "kubeflow") == objs


def test_set_namespace_rejects_a_bad_name():
    with pytest.raises(DefinitionError, match="components_namespace"):
        m.set_namespace([], "Not_A_Label")


@given(st.lists(st.sampled_from(["kubeflow", "istio-system", "other", None]), max_size=12),
       st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True))
def test_set_namespace_property_moves_exactly_the_old_namespace(namespaces, new):
    objs = [deployment("d%d" % i, namespace=ns) if ns else
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c%d" % i}} for i, ns in enumerate(namespaces)]
    out = m.set_namespace(objs, new)
    assert len(out) == len(objs)
    for before, after in zip(objs, out):
        old = before["metadata"].get("namespace")
        assert after["metadata"].get("namespace") == (new if old == "kubeflow" else old)
    assert m.set_namespace(out, new) == out if new != "kubeflow" else True


# ---------------------------------------------------------------- API versions

def test_set_api_versions_rewrites_only_listed_kinds():
    vs = {"apiVersion": "networking.istio.io/v1alpha3", "kind": "VirtualService", "metadata": {"name": "v"}}
    gw = {"apiVersion": "networking.istio.io/v1alpha3", "kind": "Gateway", "metadata": {"name": "g"}}
    out = m.set_api_versions([vs, gw], {"networking.istio.io/VirtualService": "v1beta1"})
    assert [o["apiVersion"] for o in out] == ["networking.istio.io/v1beta1", "networking.istio.io/v1alpha3"]


@given(st.lists(st.tuples(st.sampled_from(["networking.istio.io", "apps", "security.istio.io"]),
                          st.sampled_from(["v1", "v1beta1", "v1alpha3"]),
                          st.sampled_from(["VirtualService", "Deployment", "AuthorizationPolicy"])), max_size=10),
       st.dictionaries(st.sampled_from(["networking.istio.io/VirtualService", "security.istio.io/AuthorizationPolicy"]),
                       st.sampled_from(["v1", "v1beta1"])))
def test_set_api_versions_property(kinds, versions):
    objs = [{"apiVersion": "%s/%s" % (g, v), "kind": k, "metadata": {"name": "o%d" % i}}
            for i, (g, v, k) in enumerate(kinds)]
    out = m.set_api_versions(objs, versions)
    for before, after in zip(objs, out):
        group = before["apiVersion"].split("/")[0]
        want = versions.get("%s/%s" % (group, before["kind"]))
        assert after["apiVersion"] == ("%s/%s" % (group, want) if want else before["apiVersion"])
        assert after["kind"] == before["kind"] and after["metadata"] == before["metadata"]
    assert m.set_api_versions(out, versions) == out


# ---------------------------------------------------------------- image mirroring

PREFIXES = {"docker.io/kubeflownotebookswg": "registry.example.com/kf", "ghcr.io/kubeflow": "registry.example.com/kfp",
            "docker.io/kubeflowkatib": "registry.example.com/katib"}


@pytest.mark.parametrize("image,target", [
    ("docker.io/kubeflownotebookswg/jupyter:v1", "registry.example.com/kf/jupyter:v1"),
    ("kubeflownotebookswg/jupyter:v1", "registry.example.com/kf/jupyter:v1"),
    ("ghcr.io/kubeflow/kfp-driver:2.5.0", "registry.example.com/kfp/kfp-driver:2.5.0"),
    ("ghcr.io/kubeflowx/other:1", None),
    ("mysql:8.4", None),
])
def test_map_image(image, target):
    assert m.map_image(image, PREFIXES) == target


def test_map_image_longest_prefix_wins_and_digest_pins():
    prefixes = {"ghcr.io": "mirror/all", "ghcr.io/kubeflow": "mirror/kf"}
    digest = "sha256:" + "a" * 64
    assert m.map_image("ghcr.io/kubeflow/x:1", prefixes) == "mirror/kf/x:1"
    assert m.map_image("ghcr.io/kubeflow/x:1", prefixes, {"ghcr.io/kubeflow/x:1": digest}) == "mirror/kf/x:1@" + digest
    with pytest.raises(DefinitionError, match="components_image_digests"):
        m.map_image("ghcr.io/kubeflow/x:1", prefixes, {"ghcr.io/kubeflow/x:1": "latest"})


def test_mirror_images_rewrites_containers_args_env_configmaps_and_custom_resources():
    dep = deployment("ml-pipeline", image="ghcr.io/kubeflow/kfp-api-server:2.5.0")
    container = dep["spec"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "V2_LAUNCHER_IMAGE", "value": "ghcr.io/kubeflow/kfp-launcher:2.5.0"}]
    container["args"] = ["--executor-image", "ghcr.io/kubeflow/argoexec:v3", "--other=ghcr.io/kubeflow/x:1"]
    dep["spec"]["template"]["spec"]["initContainers"] = [{"name": "init", "image": "busybox:1.36"}]
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "kubeflow"},
          "data": {"config.yaml": "image:\n  value: kubeflownotebookswg/jupyter-scipy:v1.10.0\n"
                                  "other: quay.io/unknown/image:v2\nurl: http://ml-pipeline.kubeflow.svc:8888/apis\n"}}
    cr = {"apiVersion": "serving.kserve.io/v1alpha1", "kind": "ClusterServingRuntime", "metadata": {"name": "s"},
          "spec": {"containers": [{"name": "k", "image": "docker.io/kubeflowkatib/x:1"}]}}
    objs, mirror, unmatched, _warnings = m.mirror_images([dep, cm, cr], PREFIXES)
    c = objs[0]["spec"]["template"]["spec"]["containers"][0]
    assert c["image"] == "registry.example.com/kfp/kfp-api-server:2.5.0"
    assert c["env"][0]["value"] == "registry.example.com/kfp/kfp-launcher:2.5.0"
    assert c["args"] == ["--executor-image", "registry.example.com/kfp/argoexec:v3", "--other=registry.example.com/kfp/x:1"]
    assert "registry.example.com/kf/jupyter-scipy:v1.10.0" in objs[1]["data"]["config.yaml"]
    assert "http://ml-pipeline.kubeflow.svc:8888/apis" in objs[1]["data"]["config.yaml"]
    assert objs[2]["spec"]["containers"][0]["image"] == "registry.example.com/katib/x:1"
    assert unmatched == ["busybox:1.36", "quay.io/unknown/image:v2"]
    assert {"source": "docker.io/kubeflownotebookswg/jupyter-scipy:v1.10.0",
            "target": "registry.example.com/kf/jupyter-scipy:v1.10.0"} in mirror
    assert m.mirror_lines(mirror)[0].count("=") == 1
    assert dep["spec"]["template"]["spec"]["containers"][0]["image"].startswith("ghcr.io")  # input untouched


def test_mirror_images_with_an_empty_map_reports_every_image_unmatched():
    objs, mirror, unmatched, _warnings = m.mirror_images([deployment("a", image="ghcr.io/kubeflow/a:1")], {})
    assert mirror == [] and unmatched == ["ghcr.io/kubeflow/a:1"]


def test_mirror_images_rejects_a_prefix_with_a_tag():
    with pytest.raises(DefinitionError, match="components_image_prefixes"):
        m.mirror_images([], {"ghcr.io/kubeflow/x:1": "mirror"})


_IMAGE = st.builds(lambda reg, path, tag: "%s/%s:%s" % (reg, path, tag),
                   st.sampled_from(["docker.io/kubeflownotebookswg", "ghcr.io/kubeflow", "quay.io/other", "gcr.io/x"]),
                   st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True), st.from_regex(r"v[0-9]{1,2}", fullmatch=True))


@settings(max_examples=60)
@given(st.lists(st.lists(_IMAGE, min_size=1, max_size=3), max_size=6))
def test_mirror_images_property(image_sets):
    objs = []
    for i, images in enumerate(image_sets):
        dep = deployment("d%d" % i, image=images[0])
        dep["spec"]["template"]["spec"]["initContainers"] = [
            {"name": "i%d" % j, "image": img} for j, img in enumerate(images[1:])]
        objs.append(dep)
    before = copy.deepcopy(objs)
    out, mirror, unmatched, _warnings = m.mirror_images(objs, PREFIXES)
    assert objs == before
    targets = set(PREFIXES.values())
    for obj in out:
        for container in m.containers(m.pod_spec(obj)):
            image = container["image"]
            assert any(image.startswith(t + "/") for t in targets) or image in unmatched
    sources = set(e["source"] for e in mirror)
    for images in image_sets:
        for image in images:
            assert (m.normalise_image(image) in sources) != (image in unmatched)
    again, mirror_again, unmatched_again, _warnings = m.mirror_images(out, PREFIXES)
    assert again == out and mirror_again == [] and unmatched_again == unmatched


# ---------------------------------------------------------------- sidecars

def test_inject_sidecars_labels_namespace_and_annotates_its_workloads_only():
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kubeflow"}}
    other_ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "istio-system"}}
    auth = deployment("authservice", kind="StatefulSet", namespace="istio-system")
    envoy = deployment("metadata-envoy-deployment")
    envoy["spec"]["template"]["metadata"]["annotations"] = {m.INJECT: "false"}
    labelled = deployment("labelled")
    labelled["spec"]["template"]["metadata"]["labels"] = {m.INJECT: "false"}
    both = deployment("both")
    both["spec"]["template"]["metadata"]["labels"] = {m.INJECT: "true"}
    cron = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "c", "namespace": "kubeflow"},
            "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": []}}}}}}
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "kubeflow"}}
    istiod = deployment("istiod", namespace="istio-system")
    out = m.inject_sidecars([ns, other_ns, auth, envoy, labelled, both, cron, svc, deployment("skipped"), istiod],
                            ["kubeflow"], authservice=("authservice",), exclude=("skipped",))
    assert out[0]["metadata"]["labels"] == {"istio-injection": "enabled"}
    assert "labels" not in out[1]["metadata"]
    # outside the named namespaces: only authservice's outbound exclusion
    assert out[2]["spec"]["template"]["metadata"]["annotations"] == {m.EXCLUDE_OUTBOUND: "443"}
    # upstream's "false", label or annotation, stays; label and annotation agree
    assert out[3]["spec"]["template"]["metadata"]["annotations"] == {m.INJECT: "false"}
    assert out[4]["spec"]["template"]["metadata"]["labels"] == {m.INJECT: "false"}
    assert out[4]["spec"]["template"]["metadata"]["annotations"] == {m.INJECT: "false"}
    assert out[5]["spec"]["template"]["metadata"]["labels"] == {m.INJECT: "true"}
    assert out[5]["spec"]["template"]["metadata"]["annotations"] == {m.INJECT: "true"}
    assert out[6]["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["annotations"] == {m.INJECT: "true"}
    assert "annotations" not in out[7]["metadata"]
    assert out[8]["spec"]["template"]["metadata"]["annotations"] == {m.INJECT: "false"}
    assert "annotations" not in out[9]["spec"]["template"]["metadata"]


@pytest.mark.parametrize("obj", [
    deployment("istiod", namespace="kubeflow"),
    deployment("istio-ingressgateway", namespace="kubeflow"),
    deployment("knative-local-gateway", namespace="kubeflow"),
    deployment("istio-cni-node", namespace="kubeflow", kind="DaemonSet"),
    deployment("cert-manager-webhook", namespace="kubeflow"),
    deployment("controller", namespace="knative-serving"),
    deployment("x", namespace="cert-manager"),
    deployment("cni", namespace="kube-system", kind="DaemonSet"),
])
def test_inject_sidecars_never_into_system_workloads(obj):
    namespace = obj["metadata"]["namespace"]
    out = m.inject_sidecars([obj], [namespace])
    assert out[0]["spec"]["template"]["metadata"]["annotations"] == {m.INJECT: "false"}
    assert m.sidecar_system_workload(obj)


def test_inject_sidecars_knative_by_label():
    obj = deployment("activator")
    obj["metadata"]["labels"] = {"app.kubernetes.io/name": "knative-serving"}
    assert m.inject_sidecars([obj], "kubeflow")[0]["spec"]["template"]["metadata"]["annotations"] == {m.INJECT: "false"}


def test_inject_sidecars_with_a_revision_uses_the_revision_label():
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kf", "labels": {"istio-injection": "enabled"}}}
    assert m.inject_sidecars([ns], "kf", revision="basic")[0]["metadata"]["labels"] == {"istio.io/rev": "basic"}


@given(st.lists(st.tuples(st.sampled_from(["Deployment", "StatefulSet", "DaemonSet", "Job"]),
                          st.sampled_from(["authservice", "a", "b"]), st.booleans()), max_size=8, unique_by=lambda t: t[1]))
def test_inject_sidecars_property(workloads):
    objs = []
    for kind, name, annotated in workloads:
        obj = deployment(name, kind=kind)
        if annotated:
            obj["spec"]["template"]["metadata"]["annotations"] = {m.INJECT: "false", "keep": "me"}
        objs.append(obj)
    out = m.inject_sidecars(objs, "kubeflow", authservice=("authservice",))
    for before, after in zip(objs, out):
        annotations = after["spec"]["template"]["metadata"]["annotations"]
        old_inject = (before["spec"]["template"]["metadata"].get("annotations") or {}).get(m.INJECT)
        assert annotations[m.INJECT] == ("false" if old_inject == "false" else "true")
        assert (annotations.get(m.EXCLUDE_OUTBOUND) == "443") == (before["metadata"]["name"] == "authservice")
        old = before["spec"]["template"]["metadata"].get("annotations") or {}
        assert all(annotations[k] == v for k, v in old.items() if k != m.INJECT)
    assert m.inject_sidecars(out, "kubeflow") == out


# ---------------------------------------------------------------- VirtualServices

def test_adapt_virtualservices_sets_gateway_hosts_and_export_to():
    vs = {"apiVersion": "networking.istio.io/v1beta1", "kind": "VirtualService", "metadata": {"name": "v"},
          "spec": {"gateways": ["kubeflow/kubeflow-gateway", "mesh"], "hosts": ["*"]}}
    out = m.adapt_virtualservices([vs], "istio-system/corp-gateway", ["kubeflow.example.com"], ["."])
    assert out[0]["spec"] == {"gateways": ["istio-system/corp-gateway", "mesh"], "hosts": ["kubeflow.example.com"],
                              "exportTo": ["."]}
    assert m.adapt_virtualservices([vs]) == [vs]
    with pytest.raises(DefinitionError, match="components_vs_gateway"):
        m.adapt_virtualservices([vs], "corp-gateway")


@given(st.lists(st.lists(st.sampled_from(["kubeflow-gateway", "kubeflow/kubeflow-gateway", "mesh"]), min_size=1,
                         max_size=3), max_size=5),
       st.lists(st.from_regex(r"[a-z]{1,6}\.example\.com", fullmatch=True), max_size=2))
def test_adapt_virtualservices_property(gateway_lists, hosts):
    objs = [{"apiVersion": "networking.istio.io/v1beta1", "kind": "VirtualService", "metadata": {"name": "v%d" % i},
             "spec": {"gateways": gws, "hosts": ["*"]}} for i, gws in enumerate(gateway_lists)]
    out = m.adapt_virtualservices(objs, "corp/gw", hosts or None)
    for before, after in zip(objs, out):
        assert len(after["spec"]["gateways"]) == len(before["spec"]["gateways"])
        assert set(after["spec"]["gateways"]) <= {"corp/gw", "mesh"}
        assert after["spec"]["hosts"] == (hosts or ["*"])
    assert m.adapt_virtualservices(out, "corp/gw", hosts or None) == out


# ---------------------------------------------------------------- metadata-envoy

@pytest.mark.parametrize("container,args", [
    ({}, ["/etc/envoy.yaml", "--base-id", "1"]),
    ({"args": ["/cfg.yaml"]}, ["/cfg.yaml", "--base-id", "1"]),
    ({"args": ["/cfg.yaml", "--base-id", "7"]}, ["/cfg.yaml", "--base-id", "1"]),
    ({"command": ["envoy"]}, ["--base-id", "1"]),
])
def test_metadata_envoy_base_id(container, args):
    dep = deployment("metadata-envoy-deployment")
    dep["spec"]["template"]["spec"]["containers"][0].update(container)
    out = m.metadata_envoy_base_id([dep, deployment("other")])
    assert out[0]["spec"]["template"]["spec"]["containers"][0]["args"] == args
    assert "args" not in out[1]["spec"]["template"]["spec"]["containers"][0]


@given(st.lists(st.sampled_from(["/etc/envoy.yaml", "-l", "debug", "--base-id", "3"]), max_size=4),
       st.integers(min_value=0, max_value=9))
def test_metadata_envoy_base_id_property(args, base_id):
    if args and args[-1] == "--base-id":
        args = args + ["2"]
    dep = deployment("metadata-envoy-deployment")
    if args:
        dep["spec"]["template"]["spec"]["containers"][0]["args"] = args
    out = m.metadata_envoy_base_id([dep], base_id=base_id)
    got = out[0]["spec"]["template"]["spec"]["containers"][0]["args"]
    at = got.index("--base-id")
    assert got[at + 1] == str(base_id) and got.count("--base-id") == 1
    assert got[-2:] == ["--base-id", str(base_id)]
    assert m.metadata_envoy_base_id(out, base_id=base_id) == out


# ---------------------------------------------------------------- external Argo

ARGO_CM = {"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": "workflow-controller-configmap", "namespace": "kubeflow"},
           "data": {"artifactRepository": "archiveLogs: true\ns3:\n  endpoint: minio-service.kubeflow:9000\n"
                                          "  bucket: mlpipeline\n  keyFormat: artifacts/{{workflow.name}}\n"
                                          "  accessKeySecret:\n    name: mlpipeline-minio-artifact\n"
                                          "    key: accesskey\n"}}
S3 = {"endpoint": "s3.example.com", "bucket": "kfp", "secret": "kfp-s3", "region": "eu-1"}


def test_external_argo_drops_argo_and_points_at_s3_by_secret_reference():
    objs = [ARGO_CM, deployment("workflow-controller"), deployment("ml-pipeline"),
            {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
             "metadata": {"name": "workflows.argoproj.io"}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "argo-aggregate-to-admin"}}]
    out = m.external_argo(objs, S3)
    assert [o["metadata"]["name"] for o in out] == ["workflow-controller-configmap", "ml-pipeline"]
    repo = yaml.safe_load(out[0]["data"]["artifactRepository"])
    assert repo["s3"] == {"endpoint": "s3.example.com", "bucket": "kfp", "region": "eu-1", "insecure": False,
                          "keyFormat": "artifacts/{{workflow.name}}",
                          "accessKeySecret": {"name": "kfp-s3", "key": "accesskey"},
                          "secretKeySecret": {"name": "kfp-s3", "key": "secretkey"}}
    assert repo["archiveLogs"] is True


def test_external_argo_writes_plain_yaml_from_str_subclasses():
    class Tagged(str):
        """A str subclass, as templated values can be; safe_dump refuses them."""
    out = m.external_argo([ARGO_CM], dict((k, Tagged(v)) for k, v in S3.items()))
    assert yaml.safe_load(out[0]["data"]["artifactRepository"])["s3"]["bucket"] == "kfp"


@pytest.mark.parametrize("s3,message", [({"bucket": "b", "secret": "s"}, "components_argo_s3.endpoint: is required"),
                                        ({"endpoint": "e", "bucket": "b"}, "components_argo_s3.secret: is required")])
def test_external_argo_requires_endpoint_bucket_and_secret(s3, message):
    with pytest.raises(DefinitionError, match=message):
        m.external_argo([ARGO_CM], s3)


def test_external_argo_without_the_configmap_fails():
    with pytest.raises(DefinitionError, match="components_argo_external: no ConfigMap workflow-controller-configmap"):
        m.external_argo([deployment("x")], S3)


@given(st.lists(st.sampled_from(["workflow-controller", "argo", "ml-pipeline", "katib", "argo-x"]), max_size=6,
                unique=True),
       st.from_regex(r"[a-z][a-z0-9-]{2,10}", fullmatch=True))
def test_external_argo_property(names, secret):
    objs = [ARGO_CM] + [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": n, "namespace": "kubeflow"}}
                        for n in names]
    out = m.external_argo(objs, dict(S3, secret=secret))
    kept = [o["metadata"]["name"] for o in out[1:]]
    assert kept == [n for n in names if n != "argo"]
    text = out[0]["data"]["artifactRepository"]
    assert text.count("name: %s" % secret) == 2 and "mlpipeline-minio-artifact" not in text


# ---------------------------------------------------------------- SCC derivation

RANGE = {"start": 1000660000, "size": 10000}
HOSTPATH = [{"name": "x", "hostPath": {"path": "/x"}}]
DEFAULT_SECCOMP = {"seccompProfile": {"type": "RuntimeDefault"}}


# One row per SCC strategy: the pod's security context, the least privileged SCC that admits it, and
# the field that forced it (None: restricted-v2, no grant).
@pytest.mark.parametrize("obj,scc,field", [
    # runAsUser: MustRunAsRange (restricted-v2), MustRunAsNonRoot (nonroot-v2), RunAsAny (anyuid)
    (deployment("ranged", sa="s", ctx={"runAsUser": 1000660005}), None, None),
    (deployment("fixed", sa="s", ctx={"runAsUser": 1000}), "nonroot-v2", "runAsUser"),
    (deployment("fixed", sa="s", pod_ctx={"runAsUser": 1000, "runAsNonRoot": True}), "nonroot-v2", "runAsUser"),
    (deployment("root", sa="s", pod_ctx={"runAsUser": 0}), "anyuid", "runAsUser"),
    (deployment("nonroot-false", sa="s", ctx={"runAsNonRoot": False}), None, None),
    # MustRunAsNonRoot refuses runAsNonRoot false whatever the UID (user/nonroot.go Validate)
    (deployment("nonroot-false-uid", sa="s", ctx={"runAsUser": 1000, "runAsNonRoot": False}), "anyuid",
     "runAsNonRoot"),
    # runAsGroup: no SCC has a strategy for it
    (deployment("group", sa="s", pod_ctx={"runAsGroup": 0}), None, None),
    # fsGroup: MustRunAs allows only the first group of the namespace's block (restricted-v2 and
    # hostnetwork-v2: sccmatching/matcher.go getPreallocatedFSGroup, Min = Max = blocks[0].Start),
    # RunAsAny (nonroot-v2); fsGroup 185 without runAsUser
    (deployment("spark", sa="s", pod_ctx={"fsGroup": 185}), "nonroot-v2", "fsGroup"),
    (deployment("fs-first", sa="s", pod_ctx={"fsGroup": 1000660000}), None, None),
    (deployment("fs-in-range", sa="s", pod_ctx={"fsGroup": 1000660001}), "nonroot-v2", "fsGroup"),
    (deployment("fs-hostnet", sa="s", hostNetwork=True, securityContext={"fsGroup": 1000669999}), "privileged",
     "fsGroup"),
    (deployment("fs-and-root", sa="s", pod_ctx={"fsGroup": 185, "runAsUser": 0}), "anyuid", "runAsUser"),
    # supplementalGroups: RunAsAny on restricted-v2
    (deployment("groups", sa="s", pod_ctx={"supplementalGroups": [5, 7]}), None, None),
    # capabilities: NET_BIND_SERVICE allowed; anything else only on privileged (anyuid allows none)
    (deployment("bind", sa="s", ctx={"capabilities": {"add": ["NET_BIND_SERVICE"], "drop": ["ALL"]}}), None, None),
    (deployment("netadmin", sa="s", ctx={"capabilities": {"add": ["NET_ADMIN"]}}), "privileged", "capabilities.add"),
    # privileged containers and privilege escalation
    (deployment("priv", sa="s", ctx={"privileged": True}), "privileged", "privileged"),
    (deployment("escalate", sa="s", ctx={"allowPrivilegeEscalation": True}), "anyuid", "allowPrivilegeEscalation"),
    # host namespaces and ports
    (deployment("hostnet", sa="s", hostNetwork=True), "hostnetwork-v2", "hostNetwork"),
    (deployment("hostpid", sa="s", hostPID=True), "privileged", "hostPID"),
    (deployment("hostipc", sa="s", hostIPC=True), "privileged", "hostIPC"),
    # host network as root: hostnetwork-v2, the SCC just before privileged, refuses the UID
    (deployment("hostnet-root", sa="s", hostNetwork=True, securityContext={"runAsUser": 0}), "privileged",
     "runAsUser"),
    # volumes: hostPath (hostmount-anyuid), other types outside the list, nfs
    (deployment("hostpath", sa="s", volumes=HOSTPATH), "hostmount-anyuid", "hostPath"),
    (deployment("nfs", sa="s", volumes=[{"name": "n", "nfs": {"server": "s", "path": "/"}}]), "hostmount-anyuid",
     "nfs"),
    (deployment("iscsi", sa="s", volumes=[{"name": "i", "iscsi": {}}]), "privileged", "iscsi"),
    (deployment("ok-volumes", sa="s", volumes=[{"name": "c", "configMap": {"name": "c"}},
                                               {"name": "e", "emptyDir": {}}]), None, None),
    # seccomp: runtime/default only on the -v2 SCCs; anyuid and hostmount-anyuid allow none to be set
    (deployment("seccomp", sa="s", pod_ctx=DEFAULT_SECCOMP), None, None),
    (deployment("unconfined", sa="s", pod_ctx={"seccompProfile": {"type": "Unconfined"}}), "privileged",
     "seccompProfile"),
    # root with a seccomp profile: anyuid refuses the profile, hostnetwork-v2 (just before privileged) the UID
    (deployment("root-seccomp", sa="s", pod_ctx=dict(DEFAULT_SECCOMP, runAsUser=0)), "privileged", "runAsUser"),
    # SELinux: MustRunAs everywhere but privileged
    (deployment("selinux", sa="s", ctx={"seLinuxOptions": {"type": "spc_t"}}), "privileged", "seLinuxOptions"),
])
def test_derive_scc_table(obj, scc, field):
    grants = m.derive_scc([obj], uid_range=RANGE)
    if scc is None:
        assert grants == []
        return
    assert len(grants) == 1 and grants[0]["scc"] == scc, grants
    assert field in grants[0]["field"] and field in grants[0]["reason"]
    assert grants[0]["namespace"] == "kubeflow" and grants[0]["serviceaccount"] == "s"
    # the grant admits the pod, and the SCC just before it does not
    spec = m.pod_spec(obj)
    assert scc_policies.refusals(scc, spec, RANGE) == []
    before = scc_policies.ORDER[scc_policies.ORDER.index(scc) - 1]
    assert scc_policies.refusals(before, spec, RANGE)


def test_derive_scc_without_a_known_range_treats_fixed_values_as_outside():
    assert m.derive_scc([deployment("r", sa="r", ctx={"runAsUser": 1000660005})])[0]["scc"] == "nonroot-v2"
    grant = m.derive_scc([deployment("f", sa="f", pod_ctx={"fsGroup": 185})])[0]
    assert grant["scc"] == "nonroot-v2" and "components_scc_uid_range is not set" in grant["reason"]


def pinned(name, scc, **extra):
    obj = deployment(name, sa="s", **extra)
    obj["spec"]["template"]["metadata"]["annotations"] = {scc_policies.REQUIRED_SCC_ANNOTATION: scc}
    return obj


def test_a_pod_pinned_by_required_scc_gets_that_scc_and_no_other():
    """openshift.io/required-scc: admission lists that SCC alone (sccadmission/admission.go
    listSortedSCCs, release-4.14 on). Unpinned, this pod would get nonroot-v2."""
    grants = m.derive_scc([pinned("p", "anyuid", ctx={"runAsUser": 1000})], uid_range=RANGE)
    assert [(g["serviceaccount"], g["scc"]) for g in grants] == [("s", "anyuid")]
    assert grants[0]["field"] == "metadata.annotations[openshift.io/required-scc]"
    assert grants[0]["reason"] == "Deployment p: metadata.annotations[openshift.io/required-scc] pins anyuid"
    assert m.derive_scc([pinned("p", "restricted-v2")], uid_range=RANGE) == []


@pytest.mark.parametrize("objs, message", [
    ([pinned("p", "nonroot-v2", pod_ctx={"runAsUser": 0})], "spec.securityContext.runAsUser: nonroot-v2, the SCC "
     "Deployment p pins with openshift.io/required-scc, refuses it"),
    ([pinned("p", "restricted-v2", hostNetwork=True)], "spec.hostNetwork: restricted-v2"),
    ([pinned("p", "anyuid"), deployment("q", sa="s", hostNetwork=True)], "spec.hostNetwork: anyuid"),
    ([pinned("p", "anyuid"), pinned("q", "privileged")], "pin different SCCs (anyuid, privileged)"),
    ([pinned("p", "custom")], "custom (on Deployment p) is not one of the SCCs kfocp models"),
])
def test_a_pin_that_admission_would_refuse_is_an_error_naming_the_field(objs, message):
    with pytest.raises(DefinitionError, match="service account kubeflow/s: .*" + re.escape(message)):
        m.derive_scc(objs, uid_range=RANGE)


def test_derive_scc_rejects_a_bad_range():
    with pytest.raises(DefinitionError, match="components_scc_uid_range.size"):
        m.derive_scc([deployment("a", sa="a")], uid_range={"start": 1, "size": "x"})


def test_derive_scc_grants_per_account_admit_all_its_pods():
    objs = [deployment("a", sa="shared", ctx={"runAsUser": 1000}),
            deployment("b", sa="shared", hostNetwork=True), deployment("c", sa="other", ctx={"runAsUser": 1000})]
    grants = m.derive_scc(objs, uid_range=RANGE)
    # nonroot-v2, anyuid and hostmount-anyuid refuse b's host network, hostnetwork-v2 refuses a's UID:
    # of the single SCCs only privileged admits both, so each gets its own (admission admits a pod
    # under any SCC its account may use)
    assert [(g["serviceaccount"], g["scc"]) for g in grants] == [
        ("other", "nonroot-v2"), ("shared", "nonroot-v2"), ("shared", "hostnetwork-v2")]
    assert grants[1]["reason"].startswith("restricted-v2 refuses: Deployment a:") and "Deployment b" not in grants[1]["reason"]
    assert grants[2]["reason"].startswith("hostmount-anyuid refuses: Deployment b:") and "Deployment a" not in grants[2]["reason"]
    bindings = m.scc_objects(grants)
    assert sorted(b["metadata"]["name"] for b in bindings) == ["kfocp-components-scc-hostnetwork-v2-shared",
                                                               "kfocp-components-scc-nonroot-v2-other",
                                                               "kfocp-components-scc-nonroot-v2-shared"]
    table = m.audit_table(grants)
    assert table[0].split() == ["SERVICE", "ACCOUNT", "NAMESPACE", "SCC", "FORCED", "BY", "REASON"]
    assert "spec.containers[0].securityContext.runAsUser" in table[1]


def test_scc_policies_are_the_seed_definitions():
    """The strategies evaluated are those of the SCC definitions OpenShift ships (hack/seed)."""
    seed = dict((d["metadata"]["name"], d) for d in yaml.safe_load_all(
        (ROOT / "hack" / "seed" / "sccs.yaml").read_text()) if d for d in (d.get("items") or [d]))
    assert set(scc_policies.ORDER) <= set(seed)
    for name, data in scc_policies.SCCS.items():
        live = scc_policies.strategies(seed[name])
        assert sorted(live) == sorted(data), name
        for key, value in data.items():
            assert (sorted(live[key]) if isinstance(live[key], list) else live[key]) == \
                (sorted(value) if isinstance(value, list) else value), (name, key)


_CTX = st.fixed_dictionaries({}, optional={"runAsUser": st.sampled_from([0, 999, 1000660001]),
                                           "privileged": st.booleans(),
                                           "capabilities": st.fixed_dictionaries(
                                               {"add": st.lists(st.sampled_from(["NET_BIND_SERVICE", "SYS_ADMIN"]),
                                                                max_size=2)})})


@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), _CTX, st.booleans(), st.sampled_from([None, 185])),
                max_size=8))
def test_derive_scc_property(pods):
    """Each account's grants, with restricted-v2 (every authenticated user's), admit every pod of it
    (admission admits a pod under any SCC the account may use that admits it), and no SCC before a
    single grant in the order does. Several grants stand where only privileged admits all the pods
    alone: none of them is privileged, and without any one of them a pod is refused."""
    objs = [deployment("w%d" % i, sa=sa, ctx=ctx, volumes=HOSTPATH if host else None,
                       pod_ctx={"fsGroup": fs} if fs else None) for i, (sa, ctx, host, fs) in enumerate(pods)]
    grants = m.derive_scc(objs, uid_range=RANGE)

    def admitted(spec, usable):
        return any(scc_policies.refusals(name, spec, RANGE) == [] for name in usable)

    for sa in set(p[0] for p in pods):
        specs = [m.pod_spec(o) for o in objs if m.pod_spec(o)["serviceAccountName"] == sa]
        mine = [g["scc"] for g in grants if g["serviceaccount"] == sa] or ["restricted-v2"]
        assert len(set(mine)) == len(mine)
        assert all(admitted(spec, ["restricted-v2"] + mine) for spec in specs)
        single = mine[0] if len(mine) == 1 else "privileged"
        for lower in scc_policies.ORDER[:scc_policies.ORDER.index(single)]:
            assert not all(admitted(spec, ("restricted-v2", lower)) for spec in specs)
        if len(mine) > 1:
            assert "privileged" not in mine
            for left_out in mine:
                rest = ["restricted-v2"] + [scc for scc in mine if scc != left_out]
                assert not all(admitted(spec, rest) for spec in specs), left_out


# ---------------------------------------------------------------- the whole pipeline on the fixture tree

def test_assemble_on_the_fixture_tree():
    rendered = rendered_fixture()
    options = {"namespace": "ml", "api_versions": {"networking.istio.io/VirtualService": "v1beta1"},
               "mirror": {"prefixes": PREFIXES}, "sidecar": {}, "virtualservice": {"gateway": "istio-system/gw"},
               "metadata_envoy": {}, "argo": {"s3": S3}, "scc": {}}
    result = m.assemble(rendered, options)
    objs = result["objects"]
    kinds = dict(((o["kind"], o["metadata"]["name"]), o) for o in objs)
    assert ("Deployment", "workflow-controller") not in kinds and ("CustomResourceDefinition", "workflows.argoproj.io") \
        not in kinds
    assert ("CustomResourceDefinition", "clusterservingruntimes.serving.kserve.io") in kinds
    ns = kinds[("Namespace", "ml")]
    assert ns["metadata"]["labels"]["istio-injection"] == "enabled"
    assert ns["metadata"]["annotations"] == {"kfocp.io/ownership": "ensure", "kfocp.io/set": "namespaces"}
    envoy = kinds[("Deployment", "metadata-envoy-deployment")]
    assert envoy["metadata"]["namespace"] == "ml"
    assert envoy["spec"]["template"]["spec"]["containers"][0]["args"] == ["/etc/envoy.yaml", "--base-id", "1"]
    assert envoy["spec"]["template"]["metadata"]["annotations"][m.INJECT] == "false"  # upstream's own "false"
    vs = kinds[("VirtualService", "ml-pipeline-ui")]
    assert vs["apiVersion"] == "networking.istio.io/v1beta1" and vs["spec"]["gateways"] == ["istio-system/gw"]
    grants = dict((g["serviceaccount"], g["scc"]) for g in result["grants"])
    assert grants["kserve-localmodelnode-agent"] == "privileged" and grants["mysql"] == "nonroot-v2"
    assert grants["katib-mysql"] == "anyuid" and "argo" not in grants
    assert ("RoleBinding", "kfocp-components-scc-privileged-kserve-localmodelnode-agent") in kinds
    assert "mysql:8.4" in result["unmatched_images"] and "docker.io/library/mysql:8.4" not in \
        [e["source"] for e in result["mirror"]]
    assert all(o["metadata"]["labels"].get(m.COMPONENT_LABEL) for o in objs if o["kind"] != "Namespace")
    render = m.assemble(rendered, dict(options, render=True))
    assert not any("kfocp.io/ownership" in (o["metadata"].get("annotations") or {}) for o in render["objects"])


def test_aggregated_clusterroles_are_applied_without_rules():
    """The aggregation controller owns `rules` of upstream's kubeflow-admin/-edit/-view."""
    rendered = rendered_fixture()
    roles = dict((o["metadata"]["name"], o) for o in m.assemble(rendered, {})["objects"] if o["kind"] == "ClusterRole")
    for name in ("kubeflow-admin", "kubeflow-edit", "kubeflow-view"):
        assert roles[name]["aggregationRule"] and "rules" not in roles[name]
    assert roles["kubeflow-kubernetes-edit"]["rules"]
    # the render too: with upstream's `rules: []`, Argo CD reports them OutOfSync for ever
    # (tests/integration/test_fleet.py syncs the render with a real Argo CD)
    render = dict((o["metadata"]["name"], o) for o in m.assemble(rendered, {"render": True})["objects"])
    assert render["kubeflow-admin"]["aggregationRule"] and "rules" not in render["kubeflow-admin"]


def test_the_render_gives_no_namespace_to_what_its_crds_make_cluster_scoped():
    """kustomize gives upstream's ClusterServingRuntime a namespace; the API server ignores it, and
    the render, whose CRD says the kind is cluster-scoped, leaves it out."""
    objs = m.assemble(rendered_fixture(), {"render": True})["objects"]
    crd = next(o for o in objs if o["metadata"]["name"] == "clusterservingruntimes.serving.kserve.io")
    assert crd["spec"]["scope"] == "Cluster"
    runtime = next(o for o in objs if o["kind"] == "ClusterServingRuntime")
    assert "namespace" not in runtime["metadata"]
    assert all(o["metadata"].get("namespace") for o in objs if o["kind"] in ("Deployment", "ServiceAccount"))


def test_assemble_property_input_untouched_and_deterministic():
    rendered = rendered_fixture()
    before = copy.deepcopy(rendered)
    options = {"mirror": {"prefixes": PREFIXES}, "sidecar": {}, "metadata_envoy": {}, "scc": {}}
    first = m.assemble(rendered, options)
    assert rendered == before
    assert m.assemble(rendered, options) == first


def test_kustomize_names_the_malformed_file(tmp_path):
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import kustomize
    try:
        kubectl = kustomize.find_kubectl()
    except kustomize.SourceError:
        pytest.skip("no kubectl")
    tree = tmp_path / "tree"
    subprocess.run(["cp", "-r", str(FIXTURE), str(tree)], check=True)
    bad = tree / "applications/katib/upstream/installs/katib-with-kubeflow/katib-config.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n data: [\n")
    with pytest.raises(kustomize.SourceError) as err:
        kustomize.build_path(kubectl, str(tree), "katib", CATALOG["katib"][0])
    text = str(err.value)
    assert text.startswith("component katib: kustomize build of applications/katib")
    assert "MalformedYAMLError" in text
    assert "malformed YAML in applications/katib/upstream/installs/katib-with-kubeflow/katib-config.yaml" in text


def test_kustomize_builds_each_path_once_and_gives_each_component_its_own_objects(tmp_path):
    """The components' paths are built side by side, each once: a path that two components share
    is not built twice, and each of them gets objects of its own (the transforms change them)."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import kustomize
    try:
        kubectl = kustomize.find_kubectl()
    except kustomize.SourceError:
        pytest.skip("no kubectl")
    tree = tmp_path / "tree"
    for name in ("x", "y", "z"):
        (tree / name).mkdir(parents=True)
        (tree / name / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
        (tree / name / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\n" % name)
    log = tmp_path / "built.log"
    wrapper = tmp_path / "kubectl"
    wrapper.write_text('#!/bin/sh\necho "$2" >> %s\nexec %s "$@"\n' % (log, kubectl))
    wrapper.chmod(0o755)
    rendered, _info = kustomize.build({"source": "dir", "dir": str(tree), "kubectl": str(wrapper),
                                       "components": {"a": ["x", "y"], "b": ["y"], "c": ["z"]}})
    assert sorted(Path(line).name for line in log.read_text().split()) == ["x", "y", "z"]
    assert dict((c, [o["metadata"]["name"] for o in objs]) for c, objs in rendered.items()) == \
        {"a": ["x", "y"], "b": ["y"], "c": ["z"]}
    assert rendered["a"][1] == rendered["b"][0] and rendered["a"][1] is not rendered["b"][0]
    rendered["b"][0]["metadata"]["name"] = "changed"
    assert rendered["a"][1]["metadata"]["name"] == "y"


@pytest.mark.parametrize("url, ref, field", [
    ("--upload-pack=touch /tmp/kfocp-pwned", "v1", "components_git_url"),
    ("ext::sh -c touch% /tmp/kfocp-pwned", "v1", "components_git_url"),
    ("https://example.com/repo.git", "--upload-pack=touch /tmp/kfocp-pwned", "components_git_ref"),
])
def test_a_git_source_cannot_run_a_program(tmp_path, url, ref, field):
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.kustomize import SourceError, fetch_git
    with pytest.raises(SourceError, match=field):
        fetch_git(url, ref, str(tmp_path / "tree"), timeout=10)
    assert not Path("/tmp/kfocp-pwned").exists()


def test_a_revision_goes_in_the_profile_controllers_namespace_labels_file():
    import yaml
    labels_file = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "namespace-labels-data-h8k2", "namespace": "kubeflow"},
                   "data": {"namespace-labels.yaml": "app.kubernetes.io/part-of: kubeflow-profile\n"
                                                     "pipelines.kubeflow.org/enabled: 'true'\n"}}
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "kubeflow"}, "data": {"a": "b"}}
    out = m.profile_namespace_labels([labels_file, other], "r1-26")
    assert yaml.safe_load(out[0]["data"]["namespace-labels.yaml"]) == {
        "app.kubernetes.io/part-of": "kubeflow-profile", "pipelines.kubeflow.org/enabled": "true",
        "istio-injection": "", "istio.io/rev": "r1-26"}  # the empty value makes the controller remove it
    assert out[1] == other and labels_file["data"]["namespace-labels.yaml"].count("\n") == 2  # not changed in place
    assert m.profile_namespace_labels([labels_file], "") == [labels_file]


def test_the_profile_pod_security_level_goes_in_the_profile_controllers_namespace_labels_file():
    """Upstream's file sets enforce and warn to restricted; the controller only adds missing labels, so
    the level the namespace_policies role applies replaces those in the file, not on the namespaces."""
    import yaml
    labels_file = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "namespace-labels-data", "namespace": "kubeflow"},
                   "data": {"namespace-labels.yaml": "app.kubernetes.io/part-of: kubeflow-profile\n"
                                                     "pod-security.kubernetes.io/enforce: restricted\n"
                                                     "pod-security.kubernetes.io/enforce-version: latest\n"}}
    out = m.assemble({"profiles": [labels_file]}, {"profile_pod_security": "baseline"})["objects"]
    written = yaml.safe_load([o for o in out if o["kind"] == "ConfigMap"][0]["data"]["namespace-labels.yaml"])
    assert written["app.kubernetes.io/part-of"] == "kubeflow-profile"
    for mode in ("enforce", "warn", "audit"):
        assert written["pod-security.kubernetes.io/" + mode] == "baseline"
        assert written["pod-security.kubernetes.io/%s-version" % mode] == "v1.36"
    out = m.assemble({"profiles": [labels_file]}, {"profile_pod_security": "none"})["objects"]
    assert [o for o in out if o["kind"] == "ConfigMap"][0]["data"] == labels_file["data"]
    with pytest.raises(DefinitionError, match="components_profile_pod_security: must be one of"):
        m.assemble({"profiles": [labels_file]}, {"profile_pod_security": "auto"})
