"""What the gpu, serverless and components roles rely on in OLM, Knative, KServe and cert-manager,
held to upstream's own source: Go modules at the versions tests/upstream/go.sum pins, the
kubeflow/manifests tarballs of ../shared/upstream, and readings at commits recorded in
docs/readings/gpu-olm-kserve-readings.md."""
import functools
import json
import re
import tarfile

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import manifests, namespace_policies, olm
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import serverless
from gomod import GPU_OPERATOR, KNATIVE_OPERATOR, KNATIVE_SERVING, json_fields, require_module
from helpers import ROOT

OPERATOR_FRAMEWORK_API = ("github.com/operator-framework/api", "v0.45.0")
KNATIVE_NETWORKING = ("knative.dev/networking", "v0.0.0-20240716111826-bab7f2a3e556")
KSERVE = ("github.com/kserve/kserve", "v0.15.0")
CERT_MANAGER = ("github.com/cert-manager/cert-manager", "v1.21.2")
UPSTREAM = ROOT.parent / "shared" / "upstream"
RELEASES = ("v1.10.2", "v1.11.0", "26.03")

# openshift/cluster-nfd-operator manifests/stable/manifests/nfd.clusterserviceversion.yaml, installModes, the same at
# release-4.14 a62d778acf51c76b9cbcffd14448bc8f4ec0ab84 and release-4.20 ae32881102fc0223d6077f0b6a67afa92e7c58e3;
# suggested-namespace openshift-nfd.
NFD_INSTALL_MODES = {"OwnNamespace": True, "SingleNamespace": True, "MultiNamespace": False, "AllNamespaces": False}
NFD_SUGGESTED_NAMESPACE = "openshift-nfd"
# openshift-knative/serverless-operator olm-catalog/serverless-operator/manifests/serverless-operator.clusterserviceversion.yaml
# at release-1.37 c9356eaa6eeaa2eb134b8c633d916104e50f2571 and main 02f6bc2c4dc6dc7509fd93379c8a6e90f4b5425f.
SERVERLESS_INSTALL_MODES = {"OwnNamespace": False, "SingleNamespace": False, "MultiNamespace": False,
                            "AllNamespaces": True}
# serverless-operator @ 02f6bc2c: the CSV's REQUIRED_SERVING_NAMESPACE, and Kourier's namespace
# (openshift-knative-operator/pkg/serving/kourier.go `kourierNamespace`: servingNs + "-ingress").
SERVING_NAMESPACE = "knative-serving"
KOURIER_NAMESPACE = SERVING_NAMESPACE + "-ingress"


def defaults(role):
    return yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text())


def read(module, path):
    return (require_module(pytest, *module) / path).read_text()


def tarball(release):
    path = UPSTREAM / ("kubeflow-manifests-%s.tar.gz" % release)
    if not path.is_file():
        pytest.skip("../shared/upstream holds no %s" % path.name)
    return path


def _install_mode(group, operator_namespace, supports):
    """The install mode OLM asks of a CSV for `group`: its target namespaces as OLM computes them
    (operatorgroup.go getOperatorGroupTargets: targetNamespaces when given, else every namespace, "",
    for no selector), then the branch of InstallModeSet.Supports that takes them."""
    targets = group["spec"].get("targetNamespaces") or ([""] if not group["spec"].get("selector") else None)
    assert targets, group
    # operator-framework/api: one namespace is OwnNamespace (the operator's), AllNamespaces ("") or
    # SingleNamespace; more than one MultiNamespace.
    for branch in ("case operatorNamespace:", "case v1.NamespaceAll:", "InstallModeTypeMultiNamespace"):
        assert branch in supports
    if len(targets) > 1:
        return "MultiNamespace"
    return {operator_namespace: "OwnNamespace", "": "AllNamespaces"}.get(targets[0], "SingleNamespace")


def test_each_default_operator_group_asks_an_install_mode_the_operators_csv_supports():
    """gpu_operators (NFD, the GPU operator) and serverless_operators: the OperatorGroup kfocp writes
    selects an install mode the CSV supports (the GPU operator's read from its bundle)."""
    supports = read(OPERATOR_FRAMEWORK_API, "pkg/operators/v1alpha1/clusterserviceversion.go")
    supports = supports[supports.index("func (set InstallModeSet) Supports"):]
    [gpu_csv] = [yaml.safe_load(p.read_text()) for p in (require_module(pytest, *GPU_OPERATOR) / "bundle/manifests").glob(
        "*.clusterserviceversion.yaml")]
    csvs = {"gpu-operator-certified": dict((m["type"], m["supported"]) for m in gpu_csv["spec"]["installModes"]),
            "nfd": NFD_INSTALL_MODES, "serverless-operator": SERVERLESS_INSTALL_MODES}
    entries = [("gpu_operators", e) for e in defaults("gpu")["gpu_operators"]]
    entries += [("serverless_operators", e) for e in defaults("serverless")["serverless_operators"]]
    assert sorted(e["package"] for _f, e in entries) == sorted(csvs)
    for field, entry in entries:
        [group] = [o for o in olm.objects([entry], field, [], "4.20") if o["kind"] == "OperatorGroup"]
        mode = _install_mode(group, entry["namespace"], supports)
        assert csvs[entry["package"]][mode], (entry["package"], mode)
    [nfd] = [e for _f, e in entries if e["package"] == "nfd"]
    assert nfd["namespace"] == NFD_SUGGESTED_NAMESPACE


def test_kfocps_ingress_class_is_read_after_serverless_default_and_names_kourier():
    """Serverless sets network `ingress.class` when unset (extension.go @ 02f6bc2c); Knative's
    networking config reads `ingress.class`, then `ingress-class` (the later one wins): kfocp's
    `ingress-class` decides, and it is the class Knative's own Kourier test setup names."""
    config = read(KNATIVE_NETWORKING, "pkg/config/config.go")
    key = re.search(r'DefaultIngressClassKey\s*=\s*"([^"]+)"', config).group(1)
    dotted = config.index('cm.AsString("ingress.class", &nc.DefaultIngressClass)')
    dashed = config.index("cm.AsString(DefaultIngressClassKey, &nc.DefaultIngressClass)")
    assert dotted < dashed
    kourier = yaml.safe_load(read(KNATIVE_SERVING, "test/config/ytt/ingress/kourier/kourier-ingress-class.yaml"))
    wanted = kourier["serving"]["ingress_class"]
    [ks] = serverless.knative_serving({"serving_namespace": SERVING_NAMESPACE, "spec": defaults("serverless")[
        "serverless_knative_serving_spec"], "mesh": {"enabled": True}})
    assert ks["spec"]["config"]["network"][key] == wanted


def test_the_namespaces_knative_runs_in_carry_the_label_kfocps_policies_admit_from():
    """No Serverless code writes `serving.knative.openshift.io/system-namespace` (serverless-operator
    @ 02f6bc2c, outside vendor/): kfocp writes it on the namespaces Knative's activator and Kourier
    run in, its own and someone else's, and the profile namespaces' NetworkPolicy admits from it."""
    settings = dict(namespace_policies.DEFAULTS, namespace_policies_serverless=True)
    policy = [o for o in namespace_policies.objects_for_namespace({"metadata": {"name": "team-a"}}, settings)
              if o["kind"] == "NetworkPolicy" and o["metadata"]["name"] == namespace_policies.NETWORKPOLICY]
    [selector] = [peer["namespaceSelector"]["matchLabels"] for p in policy for rule in p["spec"]["ingress"]
                  for peer in rule["from"]]
    someone_elses = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": KOURIER_NAMESPACE, "labels": {}}}
    for live in ({}, {KOURIER_NAMESPACE: [someone_elses]}):
        objs = serverless.objects({"serving_namespace": SERVING_NAMESPACE, "ingress_namespace": KOURIER_NAMESPACE,
                                   "live_namespaces": live, "operators": []})
        labels = dict((o["metadata"]["name"], o["metadata"].get("labels") or {}) for o in objs if o["kind"] == "Namespace")
        for name in (SERVING_NAMESPACE, KOURIER_NAMESPACE):
            assert selector.items() <= labels[name].items(), (name, labels.get(name))


@functools.lru_cache(maxsize=None)
def _kserve_text(release):
    with tarfile.open(tarball(release)) as tar:
        return tar.extractfile("./applications/kserve/kserve/kserve_kubeflow.yaml").read()


def _kserve(release):
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return [o for o in yaml.load_all(_kserve_text(release), Loader=loader) if o]


def _assembled(objs, namespace):
    return manifests.assemble({"kserve": objs}, {"namespace": namespace})["objects"]


@pytest.mark.parametrize("release", RELEASES)
def test_kserve_reaches_inference_services_through_kouriers_cluster_local_service(release):
    """KServe (Serverless mode) routes each InferenceService's VirtualService to
    `knativeLocalGatewayService` (falling back to `localGatewayService`) on port 80, and makes
    `<isvc>.<ns>.svc` an ExternalName Service for `localGatewayService`. The Knative kfocp runs has
    Kourier, whose cluster-local Service is `kourier-internal` (port 80) in `knative-serving-ingress`;
    upstream's value is net-istio's `knative-local-gateway.istio-system`, which kfocp does not run."""
    config = read(KSERVE, "pkg/apis/serving/v1beta1/configmap.go")
    fields = json_fields(config, "IngressConfig")
    assert "ingressConfig.KnativeLocalGatewayService = ingressConfig.LocalGatewayServiceName" in config
    reconciler = read(KSERVE, "pkg/controller/v1beta1/inferenceservice/reconcilers/ingress/ingress_reconciler.go")
    assert "createHTTPRouteDestination(config.KnativeLocalGatewayService)" in reconciler
    assert re.search(r"ExternalName:\s+config\.LocalGatewayServiceName", reconciler)
    port = int(re.search(r"CommonDefaultHttpPort\s*=\s*(\d+)", read(KSERVE, "pkg/constants/constants.go")).group(1))
    kodata = [o for o in yaml.safe_load_all(read(KNATIVE_OPERATOR, "cmd/operator/kodata/ingress/1.15/kourier/kourier.yaml"))
              if o and o["kind"] == "Service"]
    [internal] = [s for s in kodata if s["metadata"]["name"] == manifests.KOURIER_INTERNAL_SERVICE]
    assert port in [p["port"] for p in internal["spec"]["ports"]]
    kourier = "%s.%s.svc.cluster.local" % (internal["metadata"]["name"], KOURIER_NAMESPACE)
    for namespace in ("kubeflow", "kf"):
        [cm] = [o for o in _assembled(_kserve(release), namespace)
                if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "inferenceservice-config"]
        ingress = json.loads(cm["data"]["ingress"])
        routed = ingress.get(fields["KnativeLocalGatewayService"]) or ingress[fields["LocalGatewayServiceName"]]
        assert (routed, ingress[fields["LocalGatewayServiceName"]]) == (kourier, kourier)
        assert ingress[fields["IngressGateway"]] == namespace + "/kubeflow-gateway"


@pytest.mark.parametrize("release", RELEASES)
def test_every_moved_kserve_webhook_reaches_its_service_with_a_certificate_cert_manager_issues(release):
    """Upstream's KServe webhooks (6 validating and 1 mutating at v1.10.2), moved to another
    namespace: each names a Service of the render, its `cert-manager.io/inject-ca-from`
    (`<namespace>/<Certificate>`, cert-manager's WantInjectAnnotation) a Certificate of the render
    whose dnsNames hold `<service>.<namespace>.svc` (the name the API server checks), issued by a
    namespaced Issuer beside it. Outside common/cert-manager the tree has no other cert-manager kind,
    so the operator's RBAC `[certificates, issuers]` covers them."""
    annotation = re.search(r'WantInjectAnnotation\s*=\s*"([^"]+)"', read(CERT_MANAGER, "pkg/apis/certmanager/v1/types.go")).group(1)
    upstream = _kserve(release)
    kinds = [o["kind"] for o in upstream if o["kind"].endswith("WebhookConfiguration")]
    if release == "v1.10.2":
        assert sorted(kinds) == ["MutatingWebhookConfiguration"] + ["ValidatingWebhookConfiguration"] * 6
    for namespace in ("kubeflow", "kf"):
        objs = _assembled(upstream, namespace)
        services = set((o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs if o["kind"] == "Service")
        certificates = dict(((o["metadata"]["namespace"], o["metadata"]["name"]), o) for o in objs
                            if o["kind"] == "Certificate")
        issuers = set((o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs if o["kind"] == "Issuer")
        configs = [o for o in objs if o["kind"].endswith("WebhookConfiguration")]
        assert len(configs) == len(kinds)
        for config in configs:
            namespace_, name = config["metadata"]["annotations"][annotation].split("/", 1)
            certificate = certificates[(namespace_, name)]
            issuer = certificate["spec"]["issuerRef"]
            assert issuer["kind"] == "Issuer" and (namespace_, issuer["name"]) in issuers
            for webhook in config["webhooks"]:
                service = webhook["clientConfig"]["service"]
                assert (service["namespace"], service["name"]) in services, service
                assert service["namespace"] == namespace
                assert "%s.%s.svc" % (service["name"], service["namespace"]) in certificate["spec"]["dnsNames"]
    rules = yaml.safe_load((ROOT / "operator" / "config" / "rbac" / "role.yaml").read_text())["rules"]
    granted = set(r for rule in rules if "cert-manager.io" in rule.get("apiGroups", []) for r in rule["resources"])
    found = set()
    with tarfile.open(tarball(release)) as tar:
        for member in tar.getmembers():
            if not member.isfile() or not member.name.endswith((".yaml", ".yml")) or "/common/cert-manager/" in member.name:
                continue
            text = tar.extractfile(member).read().decode("utf-8", "replace")
            if "cert-manager.io/" not in text:
                continue
            for kind in re.findall(r"(?m)^apiVersion:\s*(?:acme\.)?cert-manager\.io/\S+\s*\nkind:\s*(\w+)", text):
                found.add(kind)
            found.update("issuerRef:" + k for k in re.findall(r"(?m)issuerRef:\s*\n(?:\s+\w+:.*\n)*?\s+kind:\s*(\w+)", text))
    assert {"Certificate", "Issuer"} <= found
    assert found <= {"Certificate", "Issuer", "issuerRef:Issuer"}, found
    assert set(k.lower() + "s" for k in found if ":" not in k) <= granted


def test_the_kserve_local_gateway_can_be_kept_or_given_and_a_bad_one_names_the_option():
    upstream = [o for o in _kserve("v1.10.2") if o["kind"] == "ConfigMap"]
    kept = manifests.kserve_local_gateway(upstream, "")
    assert kept == upstream
    once = manifests.kserve_local_gateway(upstream, "gw.mesh.svc.cluster.local")
    assert manifests.kserve_local_gateway(once, "gw.mesh.svc.cluster.local") == once
    [cm] = [o for o in once if o["metadata"]["name"] == "inferenceservice-config"]
    assert json.loads(cm["data"]["ingress"])["localGatewayService"] == "gw.mesh.svc.cluster.local"
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError
    with pytest.raises(DefinitionError, match="kserve_local_gateway_service"):
        manifests.kserve_local_gateway(upstream, "Not A Host")


# NVIDIA/gpu-operator bundle/manifests/nvidia.com_clusterpolicies.yaml (docs/readings/gpu-olm-kserve-readings.md):
# the required sections, the enums and operator.defaultRuntime of each channel's CRD, v24.9.2 a7551902 to v26.7.0 10ee5b36.
CLUSTER_POLICY_REQUIRED = {"daemonsets", "dcgm", "dcgmExporter", "devicePlugin", "driver", "gfd", "nodeStatusExporter",
                           "operator", "toolkit"}
CLUSTER_POLICY_ENUMS = {("daemonsets", "updateStrategy"): {"RollingUpdate", "OnDelete"},
                        ("mig", "strategy"): {"none", "single", "mixed"}}
DEFAULT_RUNTIME = {"v24.9": {"docker", "crio", "containerd"}, "v25.3": {"docker", "crio", "containerd"},
                   "v25.10": {"docker", "crio", "containerd"}, "v26.3": None, "v26.7": None}  # None: deprecated, any string


def test_the_cluster_policy_kfocp_writes_fits_the_crd_of_every_gpu_operator_channel():
    """The v25.3.4 CRD is read from the module (tests/unit/test_upstream_operators.py); the CRDs of the
    other channels, as read at their tags, agree with it on everything kfocp writes but
    operator.defaultRuntime, which from v26.3 is a deprecated free string."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import versions
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import gpu
    crd = yaml.safe_load(read(GPU_OPERATOR, "bundle/manifests/nvidia.com_clusterpolicies.yaml"))
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert set(schema["required"]) == CLUSTER_POLICY_REQUIRED
    assert all(set(schema["properties"][a]["properties"][b]["enum"]) == v for (a, b), v in CLUSTER_POLICY_ENUMS.items())
    assert set(schema["properties"]["operator"]["properties"]["defaultRuntime"]["enum"]) == DEFAULT_RUNTIME["v25.3"]
    spec = gpu.cluster_policy("gpu-cluster-policy", defaults("gpu")["gpu_cluster_policy_spec"])["spec"]
    assert CLUSTER_POLICY_REQUIRED <= set(spec)
    assert all(spec[a][b] in v for (a, b), v in CLUSTER_POLICY_ENUMS.items())
    # every channel kfocp may subscribe to (the floating `stable` follows the newest)
    channels = set(versions.CHANNELS[versions.GPU]) - {"stable"}
    assert channels == set(DEFAULT_RUNTIME), channels
    for channel in channels:
        assert DEFAULT_RUNTIME[channel] is None or spec["operator"]["defaultRuntime"] in DEFAULT_RUNTIME[channel]


@pytest.mark.parametrize("release", RELEASES)
def test_the_operator_rbac_covers_every_cluster_scoped_kserve_resource_of_each_release(release):
    """The objects of applications/kserve/kserve whose CRD (in the same files) is cluster-scoped
    (ClusterServingRuntime, ClusterStorageContainer in the three releases) are granted to the operator."""
    objs = []
    with tarfile.open(tarball(release)) as tar:
        for name in tar.getnames():
            if name.startswith("./applications/kserve/kserve/") and name.endswith(".yaml") and "kustomization" not in name:
                objs += [o for o in yaml.load_all(tar.extractfile(name).read(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
                         if o]
    scope = dict(((o["spec"]["group"], o["spec"]["names"]["kind"]), (o["spec"]["scope"], o["spec"]["names"]["plural"]))
                 for o in objs if o["kind"] == "CustomResourceDefinition")
    wanted = set((o["apiVersion"].split("/")[0], scope[(o["apiVersion"].split("/")[0], o["kind"])][1]) for o in objs
                 if scope.get((o["apiVersion"].split("/")[0], o["kind"]), ("",))[0] == "Cluster")
    assert wanted
    rules = yaml.safe_load((ROOT / "operator" / "config" / "rbac" / "role.yaml").read_text())["rules"]
    granted = set((g, r) for rule in rules for g in rule.get("apiGroups", []) for r in rule.get("resources", []))
    assert wanted <= granted, wanted - granted
