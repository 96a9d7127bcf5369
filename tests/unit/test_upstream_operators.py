"""What the gpu, autoscaler and serverless roles (and the KServe and cert-manager objects of the
render) write and read for the operators they drive, held to those operators' own source: Go
modules in the module cache at the versions docs/contracts.md cites (tests/upstream/go.sum), the
kubeflow/manifests tarball of ../shared/upstream, and readings cited at a commit."""
import gzip
import json
import re
import tarfile

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import autoscaler, gpu, manifests, olm, serverless
from gomod import GPU_OPERATOR, KNATIVE_OPERATOR, json_fields, require_module
from helpers import ROOT

OPERATOR_FRAMEWORK_API = ("github.com/operator-framework/api", "v0.45.0")
OPENSHIFT_API = ("github.com/openshift/api", "v0.0.0-20260318185450-1f2fa3f09f4e")
MACHINE_API_OPERATOR = ("github.com/openshift/machine-api-operator", "v0.2.1-0.20260226113419-88465550a74b")
KSERVE = ("github.com/kserve/kserve", "v0.15.0")
CERT_MANAGER = ("github.com/cert-manager/cert-manager", "v1.21.2")
UPSTREAM = ROOT.parent / "shared" / "upstream"


def defaults(role):
    return yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())


def read(module, path):
    return (require_module(pytest, *module) / path).read_text()


# ---------------------------------------------------------------- NVIDIA GPU operator (v25.3.4)
def test_the_gpu_operator_is_subscribed_as_its_bundle_names_it_in_its_own_namespace():
    annotations = yaml.safe_load(read(GPU_OPERATOR, "bundle/metadata/annotations.yaml"))["annotations"]
    [entry] = [o for o in defaults("gpu")["gpu_operators"] if o["package"] == annotations[
        "operators.operatorframework.io.bundle.package.v1"]]
    assert entry["namespace"] == annotations["operatorframework.io/suggested-namespace"]
    [csv] = [yaml.safe_load(p.read_text()) for p in (require_module(pytest, *GPU_OPERATOR) / "bundle/manifests").glob(
        "*.clusterserviceversion.yaml")]
    modes = dict((m["type"], m["supported"]) for m in csv["spec"]["installModes"])
    [group] = [o for o in olm.objects([entry], "gpu_operators", [], "4.20") if o["kind"] == "OperatorGroup"]
    assert group["spec"] == {"targetNamespaces": [entry["namespace"]]}
    assert modes["OwnNamespace"] is True and modes["AllNamespaces"] is False


def _schema_problems(value, schema, where):
    found = []
    if "enum" in schema and value not in schema["enum"]:
        found.append("%s: %r not in %s" % (where, value, schema["enum"]))
    if isinstance(value, dict) and "properties" in schema:
        for key in schema.get("required") or []:
            if key not in value:
                found.append("%s.%s: required" % (where, key))
        for key, item in value.items():
            if key not in schema["properties"]:
                found.append("%s.%s: not in the schema" % (where, key))
            else:
                found += _schema_problems(item, schema["properties"][key], "%s.%s" % (where, key))
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            found += _schema_problems(item, schema["items"], "%s[%d]" % (where, index))
    return found


def test_the_cluster_policy_kfocp_writes_is_one_the_gpu_operators_crd_accepts():
    crd = yaml.safe_load(read(GPU_OPERATOR, "bundle/manifests/nvidia.com_clusterpolicies.yaml"))
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert tuple(sorted(schema["required"])) == tuple(sorted(gpu.CLUSTER_POLICY_SECTIONS))
    policy = gpu.cluster_policy("gpu-cluster-policy", defaults("gpu")["gpu_cluster_policy_spec"])
    assert policy["apiVersion"] == "%s/%s" % (crd["spec"]["group"], version["name"])
    assert _schema_problems(policy["spec"], schema, "spec") == []
    bad = gpu.cluster_policy("p", dict(defaults("gpu")["gpu_cluster_policy_spec"], mig={"strategy": "all"}))
    assert _schema_problems(bad["spec"], schema, "spec") == ["spec.mig.strategy: 'all' not in ['none', 'single', 'mixed']"]


def test_gpu_nodes_are_the_ones_nfd_labels_with_kfocps_worker_config():
    """The GPU operator deploys its operands on nodes labelled
    feature.node.kubernetes.io/pci-10de.present (controllers/state_manager.go); NFD's pci source
    names a device's label from deviceLabelFields joined with `_`, plus `.present`, for the classes of
    deviceClassWhitelist matched as prefixes (openshift/node-feature-discovery source/pci/pci.go
    @ 04e05497, register-gaps.md). An NVIDIA GPU is vendor 10de, class 0302 (3D) or 0300 (VGA)."""
    assert re.search(r'"feature\.node\.kubernetes\.io/pci-10de\.present":\s+"true"',
                     read(GPU_OPERATOR, "controllers/state_manager.go"))
    config = yaml.safe_load(defaults("gpu")["gpu_nfd_spec"]["workerConfig"]["configData"])["sources"]["pci"]
    device = {"vendor": "10de", "class": "0302", "device": "20b5"}
    assert any(device["class"].startswith(c) for c in config["deviceClassWhitelist"])
    assert "pci-" + "_".join(device[f] for f in config["deviceLabelFields"]) + ".present" == "pci-10de.present"


# ---------------------------------------------------------------- OLM (operator-framework/api v0.45.0)
def test_the_olm_fields_the_roles_read_and_write_are_olms():
    sub = json_fields(read(OPERATOR_FRAMEWORK_API, "pkg/operators/v1alpha1/subscription_types.go"), "SubscriptionStatus")
    plan = json_fields(read(OPERATOR_FRAMEWORK_API, "pkg/operators/v1alpha1/installplan_types.go"), "InstallPlanSpec")
    group = json_fields(read(OPERATOR_FRAMEWORK_API, "pkg/operators/v1/operatorgroup_types.go"), "OperatorGroupSpec")
    csv = read(OPERATOR_FRAMEWORK_API, "pkg/operators/v1alpha1/clusterserviceversion_types.go")
    copied = read(OPERATOR_FRAMEWORK_API, "pkg/operators/v1alpha1/clusterserviceversion.go")
    assert {"installedCSV", "installPlanRef"} <= set(sub.values())
    assert {"clusterServiceVersionNames", "approved"} <= set(plan.values())
    assert "targetNamespaces" in group.values()
    assert re.search(r'CSVPhaseSucceeded\s+ClusterServiceVersionPhase = "Succeeded"', csv)
    assert re.search(r'CopiedLabelKey\s*=\s*"olm.copiedFrom"', copied)
    for role in ("gpu", "serverless"):
        tasks = (ROOT / "roles" / role / "tasks" / "install_plans.yml").read_text()
        used = set(re.findall(r"status\.(\w+)", tasks)) | set(re.findall(r"spec\.(\w+)", tasks))
        assert used <= set(sub.values()) | set(plan.values()), used - set(sub.values()) - set(plan.values())


# openshift-knative/serverless-operator @ c9356eaa6eeaa2eb134b8c633d916104e50f2571 (release-1.37) and
# @ 02f6bc2c4dc6dc7509fd93379c8a6e90f4b5425f (main): the CSV's installModes support only AllNamespaces.
SERVERLESS_INSTALL_MODES = {"OwnNamespace": False, "SingleNamespace": False, "MultiNamespace": False,
                            "AllNamespaces": True}


def test_serverless_is_installed_in_the_one_install_mode_its_csv_supports():
    [entry] = defaults("serverless")["serverless_operators"]
    [group] = [o for o in olm.objects([entry], "serverless_operators", [], "4.20") if o["kind"] == "OperatorGroup"]
    # OLM: an OperatorGroup with no targetNamespaces and no selector targets all namespaces
    # (operatorgroup.go @ 992bb097, register-gaps.md)
    assert group["spec"] == {} and SERVERLESS_INSTALL_MODES["AllNamespaces"]


# ---------------------------------------------------------------- machine-api (openshift/api, machine-api-operator)
def test_the_gpu_machinesets_cloud_fields_and_node_settings_are_machine_apis():
    providers = dict((name, read(OPENSHIFT_API, "machine/v1beta1/types_%sprovider.go" % cloud))
                     for cloud, name in (("aws", "AWSMachineProviderConfig"), ("azure", "AzureMachineProviderSpec"),
                                         ("gcp", "GCPMachineProviderSpec")))
    for kind, cloud in gpu.PROVIDER_KINDS.items():
        fields = json_fields(providers[kind], kind)
        assert gpu.INSTANCE_TYPE_FIELDS[cloud] in fields.values(), (kind, fields)
    spec = json_fields(read(OPENSHIFT_API, "machine/v1beta1/types_machine.go"), "MachineSpec")
    assert spec["ObjectMeta"] == "metadata" and spec["Taints"] == "taints"
    nodelink = read(MACHINE_API_OPERATOR, "pkg/controller/nodelink/nodelink_controller.go")
    assert "for k, v := range machine.Spec.Labels {" in nodelink and "modNode.Labels[k] = v" in nodelink
    assert "for _, mTaint := range machine.Spec.Taints {" in nodelink


# ---------------------------------------------------------------- proactive-node-scaling-operator
# redhat-cop/proactive-node-scaling-operator api/v1alpha1/nodescalingwatermark_types.go @
# b0ade0180bf5b5c79b14df36247417c3c741e95e (v0.4.2): the spec's JSON fields, and
# `+kubebuilder:validation:Minimum=1`/`Maximum=100` on watermarkPercentage.
WATERMARK_SPEC_FIELDS = {"watermarkPercentage", "nodeSelector", "tolerations", "pausePodSize", "pausePodImage",
                         "priorityClassName"}


def test_the_watermark_writes_only_the_operators_fields_within_its_bounds():
    watermark = autoscaler.watermark({"namespace": "pns", "percentage": 100, "pause_pod_size": {"cpu": "1"}})[2]
    assert watermark["apiVersion"] == "redhatcop.redhat.io/v1alpha1"
    assert set(watermark["spec"]) <= WATERMARK_SPEC_FIELDS
    for bad in (0, 101):
        with pytest.raises(Exception, match="autoscaler_watermark.percentage"):
            autoscaler.watermark({"namespace": "pns", "percentage": bad})


# ---------------------------------------------------------------- Knative operator (v0.42.2)
def test_the_knative_serving_fields_kfocp_writes_are_the_knative_operators():
    base = KNATIVE_OPERATOR
    common = json_fields(read(base, "pkg/apis/operator/base/common.go"), "CommonSpec")
    ingress = read(base, "pkg/apis/operator/base/ingressconfiguration.go")
    types = read(base, "pkg/apis/operator/v1beta1/knativeserving_types.go")
    serving = json_fields(types, "KnativeServingSpec")
    assert json_fields(types, "IngressConfigs")["Kourier"] == "kourier"
    assert json_fields(ingress, "KourierIngressConfiguration")["Enabled"] == "enabled"
    assert {"config", "high-availability", "workloads"} <= set(common.values())
    assert serving["Ingress"] == "ingress"
    [ks] = serverless.knative_serving({"serving_namespace": "knative-serving", "spec": defaults("serverless")[
        "serverless_knative_serving_spec"], "mesh": {"enabled": True}})
    assert set(ks["spec"]) <= set(common.values()) | set(serving.values())
    assert ks["apiVersion"] == "operator.knative.dev/v1beta1"


# ---------------------------------------------------------------- KServe and cert-manager in the render
def _render(tag):
    path = UPSTREAM / ("example-render-%s.yaml.gz" % tag)
    if not path.is_file():
        pytest.skip("../shared/upstream holds no %s" % path.name)
    return [o for o in yaml.safe_load_all(gzip.open(path).read()) if o]


def test_kserves_ingress_gateway_is_moved_with_the_components_namespace():
    tag = json_fields(read(KSERVE, "pkg/apis/serving/v1beta1/configmap.go"), "IngressConfig")["IngressGateway"]
    objs = _render("v1.10.2")
    moved = manifests.set_namespace(objs, "kf")
    for before, after in ((objs, "kubeflow"), (moved, "kf")):
        [config] = [o for o in before if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "inferenceservice-config"]
        assert json.loads(config["data"]["ingress"])[tag] == after + "/kubeflow-gateway"
        assert [o for o in before if o["kind"] == "Gateway" and o["metadata"]["name"] == "kubeflow-gateway"
                and o["metadata"]["namespace"] == after]


def test_cert_manager_finds_the_certificate_of_every_moved_webhook():
    types = read(CERT_MANAGER, "pkg/apis/certmanager/v1/types.go")
    annotation = re.search(r'WantInjectAnnotation\s*=\s*"([^"]+)"', types).group(1)
    reconciler = read(CERT_MANAGER, "pkg/controller/cainjector/reconciler.go")
    # splitNamespacedName: "(<namespace>/<name>)", split at the first types.Separator ('/')
    assert "splitPoint := strings.IndexRune(nameStr, types.Separator)" in reconciler
    moved = manifests.set_namespace(_render("v1.10.2"), "kf")
    certificates = set((o["metadata"]["namespace"], o["metadata"]["name"]) for o in moved
                       if o["kind"] == "Certificate" and o["apiVersion"] == "cert-manager.io/v1")
    injected = [(o["kind"], o["metadata"]["name"], o["metadata"]["annotations"][annotation]) for o in moved
                if (o["metadata"].get("annotations") or {}).get(annotation)]
    assert injected and all(tuple(item[2].split("/", 1)) in certificates for item in injected), injected
    issuers = [o["spec"]["issuerRef"]["kind"] for o in moved
               if o["kind"] == "Certificate" and o["apiVersion"] == "cert-manager.io/v1"]
    assert set(issuers) == {"Issuer"}


def test_the_kserve_pods_are_selected_by_kserves_component_label():
    constants = read(KSERVE, "pkg/constants/constants.go")
    label = re.search(r'KServiceComponentLabel\s*=\s*"([^"]+)"', constants).group(1)
    components = set(re.findall(r'\w+\s+InferenceServiceComponent = "(\w+)"', constants))
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies
    selected = [w["match_labels"] for w in namespace_policies.DEFAULTS["namespace_policies_serverless_workloads"]]
    assert all(list(m) == [label] for m in selected)
    assert set(m[label] for m in selected) <= components and {"predictor", "transformer", "explainer"} <= components


def test_the_operator_rbac_covers_kserves_cluster_scoped_resources():
    path = UPSTREAM / "kubeflow-manifests-v1.10.2.tar.gz"
    if not path.is_file():
        pytest.skip("../shared/upstream holds no %s" % path.name)
    with tarfile.open(path) as tar:
        member = tar.extractfile("./applications/kserve/kserve/kserve-cluster-resources.yaml")
        kinds = set(o["kind"] for o in yaml.safe_load_all(member.read()) if o)
    rules = yaml.safe_load((ROOT / "operator" / "config" / "rbac" / "role.yaml").read_text())["rules"]
    granted = set(r for rule in rules if "serving.kserve.io" in rule.get("apiGroups", []) for r in rule["resources"])
    assert set(k.lower() + "s" for k in kinds) <= granted, (kinds, granted)


# ---------------------------------------------------------------- the version matrix's channels, read at commits
# openshift-knative/serverless-operator olm-catalog/serverless-operator/project.yaml
# (requirements.ocpVersion.list, olm.channels.list) at release-1.35 1f3f1f12fb28e1af390236a02d110bee4a841a26,
# release-1.36 126553b9077ecf64cc342f3d594589741bc5fd73, release-1.37 c9356eaa6eeaa2eb134b8c633d916104e50f2571,
# main 02f6bc2c4dc6dc7509fd93379c8a6e90f4b5425f (1.38).
SERVERLESS_PUBLISHED = {
    "stable-1.35": ["4.14", "4.15", "4.16", "4.17", "4.18"],
    "stable-1.36": ["4.14", "4.15", "4.16", "4.17", "4.18", "4.19", "4.20"],
    "stable-1.37": ["4.14", "4.15", "4.16", "4.17", "4.18", "4.19", "4.20", "4.21", "4.22", "4.23"],
    "stable-1.38": ["4.16", "4.17", "4.18", "4.19", "4.20", "4.21", "4.22"],
}
# openshift/cluster-nfd-operator manifests/nfd.package.yaml at release-4.14 a62d778a to release-4.20
# ae328811 (docs/readings/gpu-autoscaling-serverless-readings.md): one channel, stable, with nfd.v4.<minor>.0.
NFD_CHANNELS = dict(("4.%d" % minor, ["stable"]) for minor in range(14, 21))


@pytest.mark.parametrize("version", ["4.14", "4.15", "4.16", "4.17", "4.18", "4.19", "4.20"])
def test_the_default_serverless_and_nfd_channels_are_published_for_the_version(version):
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import versions
    channels = versions.DEFAULT_CHANNELS[version]
    assert version in SERVERLESS_PUBLISHED[channels[versions.SERVERLESS]]
    newest = max((c for c, published in SERVERLESS_PUBLISHED.items() if version in published),
                 key=lambda c: tuple(int(p) for p in c.split("-")[1].split(".")))
    assert channels[versions.SERVERLESS] == newest
    assert channels[versions.NFD] in NFD_CHANNELS[version]
    for channel, published in SERVERLESS_PUBLISHED.items():
        assert versions.published(versions.SERVERLESS, channel, version) == (version in published), channel


# proactive-node-scaling-operator v0.4.2 (b0ade0180bf5b5c79b14df36247417c3c741e95e,
# gpu-autoscaling-serverless-readings.md): the pause pods run in the watermark's namespace with its
# priorityClassName, requesting pausePodSize (default {memory: 200Mi, cpu: 200m}); pausePodImage
# defaults to k8s.gcr.io/pause; the operator watches every namespace (its OperatorGroup targets []).
WATERMARK_DEFAULT_PAUSE_POD_SIZE = {"memory": "200Mi", "cpu": "200m"}


def test_the_pause_pods_run_in_the_watermarks_namespace_with_kfocps_priority_class():
    settings = dict(yaml.safe_load((ROOT / "roles" / "autoscaler" / "defaults" / "main.yml").read_text())[
        "autoscaler_watermark"], enabled=True)
    namespace, pclass, watermark = autoscaler.watermark(settings)
    assert watermark["metadata"]["namespace"] == namespace["metadata"]["name"] == settings["namespace"]
    assert watermark["spec"]["priorityClassName"] == pclass["metadata"]["name"]
    assert pclass["preemptionPolicy"] == "Never" and pclass["value"] < 0
    size = watermark["spec"].get("pausePodSize") or WATERMARK_DEFAULT_PAUSE_POD_SIZE
    assert set(size) <= {"cpu", "memory"}, "the pause pods keep CPU and memory headroom"
    assert "pausePodImage" not in watermark["spec"]


def test_the_cert_manager_groups_named_in_errors_are_cert_managers():
    groups = set(re.search(r'const GroupName = "([^"]+)"', read(CERT_MANAGER, path)).group(1)
                 for path in ("pkg/apis/certmanager/doc.go", "pkg/apis/acme/doc.go"))
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import engine
    assert set(engine._PROVIDERS) == groups
