"""Knative Serving itself (cmd/controller and cmd/webhook of knative.dev/serving v0.48.1, Knative
Serving 1.21, OpenShift Serverless 1.38's, run by hack/knative_serving.py) beside KServe's controller
(hack/kserve.py) as the judges of what becomes of an InferenceService on the KServe the components
role installs from upstream's 26.03 tree, with the Knative configuration kfocp's KnativeServing
gives (the serverless role's spec.config merged into Knative's ConfigMaps as the Knative operator
does), on a control plane with Knative's CRDs and webhook configurations from the Knative
operator's manifests of Serving 1.21.1:

- Knative's webhook defaults and admits the Knative Service KServe writes; Knative's controller
  makes its Configuration, Route and Revision, and the Revision's Deployment, whose pod template
  carries the label kfocp's serverless AuthorizationPolicy for predictors selects;
- once the Revision is ready (the autoscaler's status of its PodAutoscaler is written here as
  Knative's autoscaler would: it scrapes the pods' queue-proxy, a data path this plane cannot run),
  the Route's KIngress has the ingress class kfocp configures (Kourier's) and the hosts Kourier is
  asked to serve: the cluster-local `<ksvc>.<ns>.svc.cluster.local` (those KServe's VirtualService
  sets as Host) and the external `<ksvc>.<ns>.<domain>`, split as Knative's visibilities;
- the reference check over the result reports nothing.

One accommodation: Knative resolves each image tag to a digest from its registry before it makes a
Deployment, and no registry is reachable here; the test adds KServe's image registry
(`index.docker.io`) to config-deployment's `registries-skipping-tag-resolving`.
"""
import json

import pytest

import knative_operator
import knative_serving
import kserve
from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o
from ansible_collections.kfocp.kubeflow.plugins.module_utils import references
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh, namespace_policies, serverless
from cluster import ClusterError
from helpers import ensure_namespace, wait_for
from standins import _status_patch
from test_components_releases import UPSTREAM, install_prerequisite_crds, remote_bases
from test_kserve_judge import (CHANNEL, INGRESS, ISVC, KOURIER_INTERNAL, KSVC, NAMESPACE, RELEASE, SERVING,
                               SERVING_VERSION, _created, apply_all, inject_ca)

pytestmark = pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/upstream (upstream's trees) is absent")
OWN_PLANE = True
KINGRESS = ("networking.internal.knative.dev/v1alpha1", "Ingress")
REVISION = ("serving.knative.dev/v1", "Revision")
PA = ("autoscaling.internal.knative.dev/v1alpha1", "PodAutoscaler")
INGRESS_CLASS = "networking.knative.dev/ingress.class"
DOMAIN = "apps.example.com"


def knative_objects():
    """Knative's CRDs, and the serving namespace's objects (service accounts, ConfigMaps with kfocp's
    KnativeServing spec.config as the operator merges it, webhook configurations and Secret), and
    Kourier's gateway and cluster-local Service in Serverless's ingress namespace."""
    kodata = knative_operator.kodata(CHANNEL)
    crds, core = knative_serving.manifests(kodata, SERVING_VERSION)
    [ks] = serverless.knative_serving({"serving_namespace": SERVING, "spec": {}})
    config = dict(ks["spec"]["config"])
    config["domain"] = {DOMAIN: ""}  # Serverless sets the cluster's ingress domain
    config["deployment"] = {"registries-skipping-tag-resolving": "kind.local,ko.local,dev.local,index.docker.io"}
    core = knative_serving.operator_config(core, config)
    kourier = kserve.kourier_objects((kodata / "ingress" / "1.21" / "kourier" / "kourier.yaml").read_text(), INGRESS)
    return crds, core + kourier, ks


def errors(log, last=5):
    """The distinct error messages of a JSON log (KServe's zap, Knative's), the last few."""
    found = []
    for line in log.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        text = entry.get("error") or (entry.get("message") if entry.get("severity") in ("ERROR", "WARNING") else None)
        if text and text not in found:
            found.append(text)
    return "\n".join(found[-last:])


def autoscaler_ready_status(pa):
    """What Knative's autoscaler writes on a PodAutoscaler whose first pod serves: Ready, Active,
    ScaleTargetInitialized and SKSReady, its private Service, one replica
    (knative.dev/serving pkg/apis/autoscaling/v1alpha1/pa_lifecycle.go)."""
    conditions = [{"type": t, "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
                  for t in ("Active", "Ready", "SKSReady", "ScaleTargetInitialized")]
    return {"observedGeneration": pa["metadata"].get("generation", 1), "conditions": conditions,
            "serviceName": pa["metadata"]["name"], "metricsServiceName": pa["metadata"]["name"] + "-private",
            "desiredScale": 1, "actualScale": 1}


def kourier_ready_status(kingress, gateway_namespace=INGRESS):
    """What net-kourier's controller writes on a KIngress once its Envoys serve it (it probes them:
    the data path this plane cannot run): NetworkConfigured, LoadBalancerReady and Ready, with its
    Services' names as the load balancers, `kourier` public and `kourier-internal` private, in the
    namespace Kourier runs in (knative.dev/net-kourier pkg/reconciler/ingress/ingress.go,
    config/config.go ServiceHostnames; Serverless runs it in <serving namespace>-ingress)."""
    conditions = [{"type": t, "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
                  for t in ("LoadBalancerReady", "NetworkConfigured", "Ready")]
    return {"observedGeneration": kingress["metadata"].get("generation", 1), "conditions": conditions,
            "publicLoadBalancer": {"ingress": [{"domainInternal": "kourier.%s.svc.cluster.local" % gateway_namespace}]},
            "privateLoadBalancer": {"ingress": [{"domainInternal": "kourier-internal.%s.svc.cluster.local"
                                                                   % gateway_namespace}]}}


def ready(obj):
    return obj if any(c["type"] == "Ready" and c["status"] == "True"
                      for c in (obj.get("status") or {}).get("conditions") or []) else None


def test_knative_makes_kserves_predictor_a_revision_kfocps_policy_selects_and_a_kourier_kingress(
        control_plane, kube, playbook, instance, tmp_path):
    try:
        kserve.build()
        knative_serving.build()
    except ClusterError as err:
        pytest.fail("the judges cannot be built (make build builds them): %s" % str(err)[:1000])
    install_prerequisite_crds(kube, RELEASE)
    crds, objs, ks = knative_objects()
    apply_all(kube, crds, "cluster-bootstrap")
    control_plane.wait_established()
    for name in (SERVING, INGRESS):
        ensure_namespace(kube, name)
    kube.resources(refresh=True)
    apply_all(kube, objs, "openshift-serverless")
    gateway = mesh.gateway_info({"flavour": "ossm3"})
    extra = {"kfocp_instance": instance, "components_source": "tarball", "components_release": RELEASE,
             "components_tarball": str(UPSTREAM / ("kubeflow-manifests-%s.tar.gz" % RELEASE)),
             "components_remote_bases": remote_bases(tmp_path), "components_components": {"kserve": "managed"},
             "service_mesh_gateway_info": {"principal": gateway["principal"]}, "components_no_log": False}
    first = playbook("components", extra)
    assert first.rc == 0, first.stdout[-4000:]

    profile = instance + "-profile"
    ensure_namespace(kube, profile, {"app.kubernetes.io/part-of": "kubeflow-profile"})
    live = kube.get(kube.resource("v1", "Namespace"), profile)
    policies = [p for p in namespace_policies.objects_for_namespace(live, {"namespace_policies_serverless": True})
                if p["kind"] in ("NetworkPolicy", "AuthorizationPolicy")]
    apply_all(kube, policies, o.MANAGER)

    with knative_serving.KnativeServing(control_plane) as knative, kserve.KServe(control_plane, NAMESPACE) as judge:
        def knative_webhook_ready():
            hook = kube.get(kube.resource("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"),
                            "webhook.serving.knative.dev")
            return all((h.get("clientConfig") or {}).get("caBundle") and h.get("rules") for h in hook["webhooks"])
        try:
            wait_for(knative_webhook_ready, 90, interval=1, what="Knative's webhook configured")
        except AssertionError:
            raise AssertionError("webhook log:\n" + knative.tail("webhook"))
        inject_ca(control_plane, kube, judge.ca)
        isvc = {"apiVersion": ISVC[0], "kind": ISVC[1], "metadata": {"name": "sklearn-iris", "namespace": profile},
                "spec": {"predictor": {"model": {"modelFormat": {"name": "sklearn"},
                                                 "storageUri": "gs://kfserving-examples/models/sklearn/1.0/model"}}}}
        try:
            wait_for(lambda: _created(kube, isvc), 60, interval=1, what="the InferenceService admitted")
        except AssertionError:
            raise AssertionError("manager log:\n" + judge.tail("manager"))

        ksvc_name, revision = "sklearn-iris-predictor", "sklearn-iris-predictor-00001"
        deployments = kube.resource("apps/v1", "Deployment")
        try:
            deployment = wait_for(lambda: kube.get(deployments, revision + "-deployment", profile), 120, interval=1,
                                  what="Knative's Deployment of the predictor's revision")
        except AssertionError:
            raise AssertionError("kserve's errors:\n%s\nKnative controller's errors:\n%s" % (
                errors(judge.tail("manager", 200000)), errors(knative.tail("controller", 400000))))
        ksvc = kube.get(kube.resource(*KSVC), ksvc_name, profile)
        print("Knative's defaults on KServe's Knative Service: traffic %s" % ksvc["spec"].get("traffic"))
        labels = deployment["spec"]["template"]["metadata"]["labels"]
        print("the revision's pod labels: %s" % labels)
        selector = next(p["spec"]["selector"]["matchLabels"] for p in policies
                        if p["metadata"]["name"] == "kfocp-knative-kserve-predictor")
        assert dict((k, labels.get(k)) for k in selector) == selector, (selector, labels)
        for kind, name in (("Configuration", ksvc_name), ("Route", ksvc_name), ("Revision", revision)):
            assert kube.get(kube.resource("serving.knative.dev/v1", kind), name, profile) is not None, kind

        # the autoscaler's report that the revision's first pod serves
        pas = kube.resource(*PA)
        pa = wait_for(lambda: kube.get(pas, revision, profile), 60, interval=1, what="the revision's PodAutoscaler")
        _status_patch(kube, pas, pa, autoscaler_ready_status(pa), "autoscaler")
        kingresses = kube.resource(*KINGRESS)
        try:
            kingress = wait_for(lambda: kube.get(kingresses, ksvc_name, profile), 90, interval=1,
                                what="the Route's KIngress")
        except AssertionError:
            rev = kube.get(kube.resource(*REVISION), revision, profile)
            route = kube.get(kube.resource("serving.knative.dev/v1", "Route"), ksvc_name, profile)
            raise AssertionError("revision %s\nroute %s\ncontroller:\n%s" % (
                json.dumps(rev.get("status")), json.dumps(route.get("status")), knative.tail("controller")))
        annotations = kingress["metadata"].get("annotations") or {}
        rules = [(r.get("visibility"), sorted(r.get("hosts") or [])) for r in kingress["spec"].get("rules") or []]
        print("KIngress: class %s, rules %s" % (annotations.get(INGRESS_CLASS), rules))
        # the class Kourier's controller serves (net-kourier's own source), so Kourier takes this KIngress
        assert annotations.get(INGRESS_CLASS) == knative_serving.kourier_ingress_class()
        hosts = dict(rules)
        local = "%s.%s.svc.cluster.local" % (ksvc_name, profile)
        assert local in hosts.get("ClusterLocal", []), rules
        assert "%s.%s.%s" % (ksvc_name, profile, DOMAIN) in hosts.get("ExternalIP", []), rules

        # net-kourier's report that Kourier serves the KIngress; then Knative's Route and Service are
        # ready, and KServe writes the InferenceService's VirtualService
        _status_patch(kube, kingresses, kingress, kourier_ready_status(kingress), "net-kourier-controller")
        ksvc = wait_for(lambda: ready(kube.get(kube.resource(*KSVC), ksvc_name, profile)), 90, interval=1,
                        what="Knative's Service Ready")
        print("Knative's Service status: url %s, address %s" % (ksvc["status"].get("url"), ksvc["status"].get("address")))
        assert ksvc["status"]["address"]["url"] == "http://" + local
        placeholder = kube.get(kube.resource("v1", "Service"), ksvc_name, profile)
        print("the Route's Service: %s %s" % (placeholder["spec"].get("type"), placeholder["spec"].get("externalName")))
        assert (placeholder["spec"]["type"], placeholder["spec"].get("externalName")) == ("ExternalName", KOURIER_INTERNAL)

        # KServe's VirtualService sets Host to a name the KIngress serves, and sends it to Kourier
        vs = wait_for(lambda: kube.get(kube.resource("networking.istio.io/v1beta1", "VirtualService"),
                                       "sklearn-iris", profile), 90, interval=1, what="KServe's VirtualService")
        set_hosts = set(http["headers"]["request"]["set"]["Host"] for http in vs["spec"]["http"])
        assert set_hosts == {local}, set_hosts
        assert set(r["destination"]["host"] for http in vs["spec"]["http"] for r in http["route"]) == {KOURIER_INTERNAL}

        objects, _not_served = references.read(kube, [NAMESPACE, profile, SERVING, INGRESS])
        check = references.check(objects, [gateway["principal"]], "", gateway["mesh_namespace"], [NAMESPACE, profile])
        print("reference check: checked %s, skipped %s" % (check["checked"], check["skipped"]))
        assert [f["msg"] for f in check["findings"]] == []
        assert set(check["skipped"]) <= {"keda"}, check["skipped"]
