"""KServe's controller itself (cmd/manager of github.com/kserve/kserve v0.16.0, the kserve-controller
image of the Kubeflow 26.03 render, built and run by hack/kserve.py) as the judge of the KServe the
components role installs from upstream's own 26.03 tree (the tarball source and the remote bases
map, as test_components_releases.py installs a release), on a control plane that serves Knative
Serving's own CRDs (knative.dev/serving v0.48.1, OpenShift Serverless 1.38's Knative 1.21) and holds
what OpenShift Serverless runs that KServe's configuration names: Kourier's gateway and its
cluster-local Service `kourier-internal`, in `knative-serving-ingress` (taken from the Knative
operator v0.48.1's kourier.yaml, moved to the namespace Serverless runs Kourier in), and Knative's
service accounts (its 2-serving-core.yaml).

With KServe's webhooks served to the API server (its own defaulter and validators admit the
InferenceService), an InferenceService in a profile namespace that has kfocp's serverless policies
(namespace_policies with namespace_policies_serverless on), in Serverless mode (the 26.03
inferenceservice-config's defaultDeploymentMode):

- KServe makes the predictor's Knative Service `<isvc>-predictor`, whose revision template carries
  the labels kfocp's Knative AuthorizationPolicy for predictors selects on (`component: predictor`),
  so the pods Knative makes of it are the ones the activator and Kourier are admitted to; and the
  profile's NetworkPolicy selects every pod of the namespace;
- when that Knative Service is ready (its status written here as Knative's controllers would: the
  data path, Knative's revisions, Kourier's Envoy, cannot run on this plane), KServe writes the
  InferenceService's VirtualService, whose destination is the `localGatewayService` kfocp gives
  its configuration, and the ExternalName Service `<isvc>` for the same host: Kourier's
  `kourier-internal` in `knative-serving-ingress`;
- the InferenceService's URL is the front door's, `https://<auth_host>/serving/<ns>/<isvc>` (26.03's
  `pathTemplate` on the `ingressDomain` kfocp derives from the auth role's host, `urlScheme` https:
  the Route terminates TLS), and a request that comes through it (the Route on auth_host,
  oauth-proxy, then the gateway kfocp's Kubeflow gateway, `<components namespace>/kubeflow-gateway`,
  with Host auth_host and that path) matches a rule of KServe's own VirtualService, evaluated as
  Istio does (the first rule whose gateways, authority regex and URI match), that rewrites it to
  `/` for the predictor's cluster-local host on Kourier's local gateway; upstream's
  `example.com`/`http` matches no such request;
- the reference check over the result (the components' and the profile's namespaces, and the
  Knative namespaces) reports nothing, skips nothing, and has looked at KServe's VirtualService.
"""
import base64
import json
import re

import pytest
import yaml

import kserve
import knative_operator
from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o
from ansible_collections.kfocp.kubeflow.plugins.module_utils import references
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh, namespace_policies, serverless
from cluster import ClusterError
from helpers import ensure_namespace, wait_for
from standins import _status_patch
from test_components_releases import UPSTREAM, install_prerequisite_crds, remote_bases

pytestmark = pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/upstream (upstream's trees) is absent")
OWN_PLANE = True
RELEASE = "26.03"
NAMESPACE = "kubeflow"
SERVING = serverless.SERVING_NAMESPACE
INGRESS = SERVING + serverless.INGRESS_SUFFIX
# Serverless 1.38's channel: the Knative operator v0.48.1 (hack/knative/serverless-1.38/go.mod), Serving 1.21.1
CHANNEL, SERVING_VERSION = "stable-1.38", "1.21.1"
ISVC = ("serving.kserve.io/v1beta1", "InferenceService")
KSVC = ("serving.knative.dev/v1", "Service")
VIRTUAL_SERVICE = ("networking.istio.io/v1beta1", "VirtualService")
# The host users open (the auth role's auth_host: its Route, oauth-proxy's redirect URI); oauth-proxy
# passes the request's Host on to the gateway.
AUTH_HOST = "kubeflow.apps.cluster.example.com"
# The Istio Gateway of upstream's Kubeflow (common/istio kubeflow-istio-resources), in the components'
# namespace, which the gateway pods the auth role sends to serve.
FRONT_DOOR_GATEWAY = NAMESPACE + "/kubeflow-gateway"
# the cluster-local Service of Kourier kfocp names as KServe's local gateway
KOURIER_INTERNAL = "kourier-internal.%s.svc.cluster.local" % INGRESS
# The field manager of the webhook configurations' CA: cert-manager's CA injector on a real cluster
# (the render's cert-manager.io/inject-ca-from); here the CA of the judge's webhook certificate.
CA_INJECTOR = "cert-manager-cainjector"


def openshift_serverless_objects():
    """What OpenShift Serverless runs that kfocp's and KServe's objects name: Knative's service accounts
    (activator, controller) and its ConfigMaps (KServe reads config-autoscaler before it makes a
    Knative Service), Kourier's gateway and its cluster-local Service, from the Knative
    operator's manifests of the Serving release Serverless 1.38 ships, Kourier's moved to
    <serving namespace>-ingress as Serverless does."""
    kodata = knative_operator.kodata(CHANNEL)
    core = (kodata / "knative-serving" / SERVING_VERSION / "2-serving-core.yaml").read_text()
    knative = [obj for obj in yaml.safe_load_all(core) if obj and (
        (obj["kind"] == "ServiceAccount" and obj["metadata"]["name"] in ("activator", "controller"))
        or obj["kind"] == "ConfigMap")]
    kourier = kserve.kourier_objects((kodata / "ingress" / "1.21" / "kourier" / "kourier.yaml").read_text(), INGRESS)
    return knative + kourier


def apply_all(kube, objs, manager):
    for obj in objs:
        kube.apply(kube.resource(obj["apiVersion"], obj["kind"]), obj, manager, force=True)


def inject_ca(control_plane, kube, ca):
    """Write the judge's CA into every webhook of the installed configurations that calls KServe's
    webhook Service, as cert-manager's CA injector does."""
    found = []
    for api_version, kind in (("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"),
                              ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration")):
        found += [dict(c, kind=kind) for c in kube.list(kube.resource(api_version, kind))]
    targets = kserve.webhook_configurations(found, NAMESPACE)
    bundle = base64.b64encode(ca).decode()
    for kind, name, hooks in targets:
        patch = [{"op": "add", "path": "/webhooks/%d/clientConfig/caBundle" % i, "value": bundle} for i in hooks]
        control_plane.kubectl("patch", kind.lower(), name, "--type=json", "-p", json.dumps(patch),
                              "--field-manager=" + CA_INJECTOR)
    return targets


def knative_ready_status(ksvc, domain):
    """The status Knative Serving's service reconciler writes on a Knative Service whose first
    revision is ready and routed (knative.dev/serving pkg/apis/serving/v1 service_lifecycle.go, the
    route's URL by the default domain template {{.Name}}.{{.Namespace}}.{{.Domain}} and its
    cluster-local address <name>.<namespace>.svc.cluster.local)."""
    meta = ksvc["metadata"]
    revision = "%s-00001" % meta["name"]
    conditions = [{"type": t, "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
                  for t in ("ConfigurationsReady", "Ready", "RoutesReady")]
    return {"observedGeneration": meta.get("generation", 1), "conditions": conditions,
            "url": "http://%s.%s.%s" % (meta["name"], meta["namespace"], domain),
            "address": {"url": "http://%s.%s.svc.cluster.local" % (meta["name"], meta["namespace"])},
            "latestCreatedRevisionName": revision, "latestReadyRevisionName": revision,
            "traffic": [{"revisionName": revision, "latestRevision": True, "percent": 100}]}


def test_kserve_makes_the_knative_service_kfocps_policies_admit_and_routes_it_to_kouriers_local_gateway(
        control_plane, kube, playbook, instance, tmp_path):
    try:
        kserve.build()
    except ClusterError as err:
        pytest.fail("KServe's controller cannot be built (make build builds it): %s" % str(err)[:1000])
    install_prerequisite_crds(kube, RELEASE)
    kserve.prepare(control_plane, SERVING)
    ensure_namespace(kube, INGRESS)
    apply_all(kube, openshift_serverless_objects(), "openshift-serverless")
    kube.resources(refresh=True)
    gateway = mesh.gateway_info({"flavour": "ossm3"})
    extra = {"kfocp_instance": instance, "components_source": "tarball", "components_release": RELEASE,
             "components_tarball": str(UPSTREAM / ("kubeflow-manifests-%s.tar.gz" % RELEASE)),
             "components_remote_bases": remote_bases(tmp_path), "components_components": {"kserve": "managed"},
             "service_mesh_gateway_info": {"principal": gateway["principal"]}, "components_no_log": False,
             "auth_host": AUTH_HOST}
    first = playbook("components", extra)
    assert first.rc == 0, first.stdout[-4000:]
    config = kube.get(kube.resource("v1", "ConfigMap"), "inferenceservice-config", NAMESPACE)
    assert json.loads(config["data"]["deploy"])["defaultDeploymentMode"] == "Serverless"

    profile = instance + "-profile"
    ensure_namespace(kube, profile, {"app.kubernetes.io/part-of": "kubeflow-profile"})
    live = kube.get(kube.resource("v1", "Namespace"), profile)
    policies = namespace_policies.objects_for_namespace(live, {"namespace_policies_serverless": True})
    policies = [p for p in policies if p["kind"] in ("NetworkPolicy", "AuthorizationPolicy")]
    apply_all(kube, policies, o.MANAGER)

    with kserve.KServe(control_plane, NAMESPACE) as judge:
        injected = inject_ca(control_plane, kube, judge.ca)
        assert ("MutatingWebhookConfiguration", "inferenceservice.serving.kserve.io", [0, 1]) in injected, injected
        isvc = {"apiVersion": ISVC[0], "kind": ISVC[1], "metadata": {"name": "sklearn-iris", "namespace": profile},
                "spec": {"predictor": {"model": {"modelFormat": {"name": "sklearn"},
                                                 "storageUri": "gs://kfserving-examples/models/sklearn/1.0/model"}}}}
        try:
            wait_for(lambda: _created(kube, isvc), 60, interval=1, what="the InferenceService admitted by KServe's webhooks")
        except AssertionError:
            raise AssertionError("manager log:\n" + judge.tail("manager"))
        ksvcs = kube.resource(*KSVC)
        try:
            ksvc = wait_for(lambda: kube.get(ksvcs, "sklearn-iris-predictor", profile), 90, interval=1,
                            what="KServe's Knative Service for the predictor")
        except AssertionError:
            raise AssertionError("manager log:\n" + judge.tail("manager"))
        template = ksvc["spec"]["template"]["metadata"]
        print("KServe's Knative Service: labels %s; revision template labels %s"
              % (ksvc["metadata"].get("labels"), template.get("labels")))
        assert ksvc["metadata"]["ownerReferences"][0]["kind"] == "InferenceService"

        # kfocp's serverless policies in the profile select the pods Knative makes of that template
        selectors = dict((p["metadata"]["name"], p["spec"].get("selector", {}).get("matchLabels") or {})
                         for p in policies if p["kind"] == "AuthorizationPolicy")
        predictor = selectors["kfocp-knative-kserve-predictor"]
        missing = dict((k, v) for k, v in predictor.items() if template.get("labels", {}).get(k) != v)
        assert missing == {}, "kfocp's AuthorizationPolicy for predictors selects %s; KServe's revision template " \
                              "has labels %s" % (predictor, template.get("labels"))
        others = [name for name, sel in selectors.items() if name != "kfocp-knative-kserve-predictor"
                  and all(template.get("labels", {}).get(k) == v for k, v in sel.items())]
        assert others == [], others  # the transformer's and explainer's select other pods
        network = next(p for p in policies if p["kind"] == "NetworkPolicy")
        assert network["spec"]["podSelector"] == {}

        # Knative's controllers report the Service ready (they cannot run their data path here)
        _status_patch(kube, ksvcs, ksvc, knative_ready_status(ksvc, "apps.example.com"), "controller")
        services, vss = kube.resource("v1", "Service"), kube.resource(*VIRTUAL_SERVICE)
        try:
            external = wait_for(lambda: kube.get(services, "sklearn-iris", profile), 60, interval=1,
                                what="KServe's ExternalName Service")
            vs = wait_for(lambda: kube.get(vss, "sklearn-iris", profile), 60, interval=1,
                          what="KServe's VirtualService")
        except AssertionError:
            raise AssertionError("manager log:\n" + judge.tail("manager"))
        objects, _not_served = references.read(kube, [NAMESPACE, profile, SERVING, INGRESS])
        check = references.check(objects, [gateway["principal"]], "", gateway["mesh_namespace"],
                                 [NAMESPACE, profile])
        print("reference check: checked %s, skipped %s" % (check["checked"], check["skipped"]))
        assert [f["msg"] for f in check["findings"]] == []
        # Kourier's Service was looked up, not skipped; KEDA (KServe's optional autoscaler) is not installed
        assert set(check["skipped"]) <= {"keda"}, check["skipped"]
        assert check["checked"]["hosts"] >= 2 and check["checked"]["principals"] >= 3, check["checked"]
        assert (external["spec"]["type"], external["spec"]["externalName"]) == ("ExternalName", KOURIER_INTERNAL)
        hosts = sorted(set(r["destination"]["host"] for http in vs["spec"]["http"] for r in http["route"]))
        print("KServe's VirtualService: gateways %s, hosts %s, destinations %s"
              % (vs["spec"].get("gateways"), vs["spec"].get("hosts"), hosts))
        assert hosts == [KOURIER_INTERNAL], hosts
        print("KServe's VirtualService http: %s" % json.dumps(vs["spec"]["http"]))
        status = wait_for(lambda: (kube.get(kube.resource(*ISVC), "sklearn-iris", profile).get("status") or {})
                          .get("address"), 60, interval=1, what="the InferenceService's address")
        print("the InferenceService's status: url %s, address %s" % (
            kube.get(kube.resource(*ISVC), "sklearn-iris", profile)["status"].get("url"), status))
        # its cluster-local URL names the ExternalName Service KServe made for Kourier
        assert status["url"] == "http://sklearn-iris.%s.svc.cluster.local" % profile

        # its external URL is the front door's, and KServe's VirtualService routes what comes through it
        url = kube.get(kube.resource(*ISVC), "sklearn-iris", profile)["status"].get("url")
        assert url == "https://%s/serving/%s/sklearn-iris" % (AUTH_HOST, profile), \
            "KServe's URL for the InferenceService is %s; the front door serves https://%s" % (url, AUTH_HOST)
        assert FRONT_DOOR_GATEWAY in vs["spec"]["gateways"] and AUTH_HOST in vs["spec"]["hosts"], vs["spec"]
        path = "/serving/%s/sklearn-iris" % profile
        for uri, rewritten in ((path + "/v1/models/sklearn-iris:predict", "/v1/models/sklearn-iris:predict"),
                               (path, "/")):
            http = istio_route(vs, FRONT_DOOR_GATEWAY, AUTH_HOST, uri)
            assert http is not None, "no rule of KServe's VirtualService matches %s%s on %s: %s" % (
                AUTH_HOST, uri, FRONT_DOOR_GATEWAY, json.dumps(vs["spec"]["http"]))
            assert rewrite(http, uri) == rewritten, http
            assert http["headers"]["request"]["set"]["Host"] == "sklearn-iris-predictor.%s.svc.cluster.local" % profile
            assert [r["destination"]["host"] for r in http["route"]] == [KOURIER_INTERNAL]
        # upstream's host is not what the front door sends
        assert istio_route(vs, FRONT_DOOR_GATEWAY, "example.com", path) is None


def _string_match(match, value):
    """Istio's StringMatch (exact, prefix, or an RE2 regex that must match the whole value)."""
    if match is None:
        return True
    if "exact" in match:
        return value == match["exact"]
    if "prefix" in match:
        return value.startswith(match["prefix"])
    return re.fullmatch(match["regex"], value) is not None


def istio_route(vs, gateway, host, uri):
    """The first HTTP rule of a VirtualService a request on `gateway` for `host` and `uri` takes, as
    Istio picks it: a rule applies when one of its matches holds on every condition it sets (its
    gateways, else the VirtualService's; its authority; its uri). None when none applies, or when
    the VirtualService is not bound to the gateway or does not list the host."""
    if gateway not in vs["spec"].get("gateways", []) or host not in vs["spec"].get("hosts", []):
        return None
    for http in vs["spec"].get("http") or []:
        for match in http.get("match") or [{}]:
            if (gateway in (match.get("gateways") or vs["spec"]["gateways"]) and _string_match(match.get("authority"), host)
                    and _string_match(match.get("uri"), uri)):
                return http
    return None


def rewrite(http, uri):
    """The path a rule sends on: Istio's `rewrite.uri` replaces the prefix the rule matched (the
    whole path for an exact match)."""
    new = (http.get("rewrite") or {}).get("uri")
    if new is None:
        return uri
    for match in http.get("match") or []:
        prefix = (match.get("uri") or {}).get("prefix")
        if prefix and uri.startswith(prefix):
            return new + uri[len(prefix):]
        if (match.get("uri") or {}).get("exact") == uri:
            return new
    return uri


def _created(kube, isvc):
    """The InferenceService, created (None while the API server cannot reach KServe's webhooks yet)."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError
    res = kube.resource(*ISVC)
    try:
        return kube.apply(res, isvc, "kfocp-test-user")
    except KubeError as err:
        if "webhook" in str(err).lower() and ("refused" in str(err).lower() or "connect" in str(err).lower()):
            return None
        raise
