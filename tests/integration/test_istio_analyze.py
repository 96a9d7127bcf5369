"""Istio's own analyzers on the mesh wiring the roles write, for each mesh flavour: `istioctl
analyze -A` against the live control plane, with the gateway's pods and every Service present, so
that its gateway analyzers run (from files alone they are skipped). What a mesh operator would
run (Service Mesh 2's gateway Deployment, istiod's injection webhook for Service Mesh 3, an
existing mesh's ingress gateway) is made as that operator makes it (tests/standins.py).

The control plane serves Istio's own CRDs (v1, v1beta1, v1alpha3): istioctl reads v1, and the
objects the ossm2 flavour writes in v1beta1 are the same resources."""
import json
import subprocess

import pytest

import standins
from cluster import ControlPlane, build_istioctl
from helpers import ROOT, components_only, mesh_vars, run_playbook, wait_for

ROLES = str(ROOT / "tests" / "fixtures" / "playbooks" / "roles.yml")
EXTERNAL_LABELS = {"app": "istio-ingressgateway", "istio": "ingressgateway"}
GATEWAY_PORTS = [{"name": "http2", "port": 80, "targetPort": 8080, "protocol": "TCP"},
                 {"name": "https", "port": 443, "targetPort": 8443, "protocol": "TCP"}]


@pytest.fixture
def plane(tmp_path):
    """A control plane of its own per flavour: the analyzers look at every namespace, and two
    flavours' gateways would conflict."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client
    plane = ControlPlane(tmp_path / "plane").up(install=False, workloads=True)
    try:
        plane.install("istio")
        plane.add_workers()
        yield plane, Client.from_params({"kubeconfig": str(plane.kubeconfig)})
    finally:
        plane.destroy()


def apply(plane, obj, manager):
    plane.kubectl("apply", "--server-side", "--field-manager=" + manager, "-f", "-", input=json.dumps(obj))


def analyze(plane, revision="default"):
    """istioctl analyze -A's messages, as JSON, for one control plane revision."""
    proc = subprocess.run([str(build_istioctl()), "analyze", "-A", "-o", "json", "--kubeconfig", str(plane.kubeconfig),
                           "--revision", revision, "--failure-threshold", "Error", "--timeout", "90s"],
                          capture_output=True, text=True, check=False, timeout=180)
    assert proc.stdout.strip().startswith("["), "istioctl analyze: rc %d\n%s\n%s" % (
        proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    return json.loads(proc.stdout)


def errors(messages):
    return sorted("%s %s: %s" % (m["code"], m.get("origin", ""), m["message"]) for m in messages if m["level"] == "Error")


def codes(messages, code):
    """The origins of the messages of one code."""
    return [m.get("origin", "") for m in messages if m["code"] == code]


def all_running(kube):
    pods = kube.list(kube.resource("v1", "Pod"))
    deployments = kube.list(kube.resource("apps/v1", "Deployment"))
    ready = [d for d in deployments if (d.get("status") or {}).get("availableReplicas") == d["spec"].get("replicas", 1)]
    return pods and len(ready) == len(deployments) and all(p["status"].get("phase") == "Running" for p in pods)


@pytest.mark.parametrize("flavour", ["ossm2", "ossm3", "external"])
def test_istioctl_analyze_finds_no_error_and_finds_a_broken_gateway(plane, flavour, instance, tmp_path):
    plane, kube = plane
    kf_ns = instance + "-kf"
    if flavour == "external":
        apply(plane, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "istio-system"}}, "istio-operator")
        for obj in standins.ingress_gateway_objects("istio-ingressgateway", "istio-system", EXTERNAL_LABELS,
                                                    GATEWAY_PORTS, "docker.io/istio/proxyv2:1.29.0"):
            apply(plane, obj, "istio-operator")
    extra = dict(components_only(instance, "istio-resources", "central-dashboard", "profiles", "jupyter-web-app"),
                 kfocp_roles=["kfocp.kubeflow.service_mesh", "kfocp.kubeflow.auth", "kfocp.kubeflow.components"],
                 service_mesh_flavour=flavour, service_mesh_olm=False, service_mesh_wait=False,
                 auth_host="kubeflow.apps.example.com", auth_client_id=instance, components_namespace=kf_ns,
                 **mesh_vars(flavour, instance))
    result = run_playbook(plane, ROLES, extra, tmp_path)
    assert result.rc == 0, result.stdout[-3000:]
    if flavour == "ossm2":
        smcp = kube.list(kube.resource("maistra.io/v2", "ServiceMeshControlPlane"), namespace=instance + "-mesh")[0]
        for obj in standins.maistra_gateway_objects(smcp):
            apply(plane, obj, "istio-operator")
    wait_for(lambda: all_running(kube), timeout=120, what="every Deployment available on the kwok nodes")
    # Service Mesh 3's control plane is the revision named after the Istio resource
    revision = instance if flavour == "ossm3" else "default"
    if flavour == "ossm3":
        # kfocp's gateway is an injected Deployment (image: auto): it must match istiod's webhook
        gateway_deployment = "Deployment %s-mesh/kubeflow-ingressgateway" % instance
        assert gateway_deployment in codes(analyze(plane, revision), "IST0146")
        # istiod's Service and injection webhook, once the pods exist (no istiod answers it here)
        apply(plane, standins.istiod_service(revision, instance + "-mesh"), "sail-operator")
        apply(plane, standins.istiod_injector_webhook(revision, instance + "-mesh"), "sail-operator")

    messages = analyze(plane, revision)
    assert not codes(messages, "IST0146")
    # IST0147 reports each pod still holding image: auto, that is, not injected: no istiod injects
    # here; IST0146 above is the analyzer's check that the injector would take its Deployment
    found = [e for e in errors(messages) if not (flavour == "ossm3" and e.startswith("IST0147 Pod %s-mesh/" % instance))]
    assert not found, "\n".join(found)

    # the analyzers see a Gateway that selects no gateway pod, and a VirtualService bound to no Gateway
    gateway = kube.get(kube.resource("networking.istio.io/v1", "Gateway"), "kubeflow-gateway", kf_ns)
    selector = gateway["spec"]["selector"]
    plane.kubectl("patch", "gateways.networking.istio.io", "kubeflow-gateway", "-n", kf_ns, "--type=merge",
                  "-p", json.dumps({"spec": {"selector": {"istio": "no-such-gateway"}}}))
    found = errors(analyze(plane, revision))
    assert any(e.startswith("IST0101 Gateway %s/kubeflow-gateway" % kf_ns) for e in found), found
    plane.kubectl("patch", "gateways.networking.istio.io", "kubeflow-gateway", "-n", kf_ns, "--type=json",
                  "-p", json.dumps([{"op": "replace", "path": "/spec/selector", "value": selector}]))
    plane.kubectl("patch", "virtualservices.networking.istio.io", "centraldashboard", "-n", kf_ns, "--type=merge",
                  "-p", json.dumps({"spec": {"gateways": [kf_ns + "/no-such-gateway"]}}))
    found = errors(analyze(plane, revision))
    assert [e for e in found if "IST0101 VirtualService %s/centraldashboard" % kf_ns in e], found
    assert not [e for e in found if "Gateway %s/kubeflow-gateway" % kf_ns in e.split(":")[0]], found
