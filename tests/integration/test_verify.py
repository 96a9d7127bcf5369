"""playbooks/verify.yml on the local control plane, after site.yml, with what OpenShift would write.

The control plane runs pods (kwok) and holds OpenShift's ClusterVersion CRD (openshift/api,
verbatim), so verify.yml runs its checks here. site.yml converges scc, service_mesh (Service
Mesh 2), auth, gpu and components, with OLM and the mesh operator played in the background; the
machine API's nodes are made from the MachineSets. Then the stand-ins write what OpenShift's own
programs would (tests/standins.py, each after its upstream source): SCC admission's
openshift.io/scc on the pods, the router's Admitted condition on the Route, the Service Mesh 2
operator's member roll status, and oauth-proxy's redirect on loopback.

verify.yml passes on that install, and fails, naming the check, on each of five broken ones:
a pending mesh member, a Route the router rejected, a GPU node without the taint, a pod
admitted under an SCC its service account may not use, and a Kubeflow object whose value names a
Service that does not exist. One converge serves every case: each
breaks one thing and mends it, and each verify run must name exactly its check, so a case whose
mending failed shows in the next one.
"""
import json
import time

import pytest

import standins
from cluster import ControlPlane
from helpers import (PlayOperators, ensure_namespace, only_roles, play_cluster_version, play_installer_worker_machineset,
                     run_playbook, wait_for)

MESH_NAMESPACE = "kubeflow-mesh"  # the service_mesh role's default: the SMCP, its gateway, the auth Route
ROUTE = "kubeflow-oauth-proxy"  # the auth role's default name
GPU_SET = "verify-a10g"
HOST = "kubeflow.apps.local.example.com"
AUTHORIZE = "https://oauth-openshift.apps.local.example.com/oauth/authorize"


def extravars(instance, **more):
    out = dict(only_roles("scc", "service_mesh", "auth", "gpu", "components"), kfocp_instance=instance,
               kfocp_gpu_enabled=True, service_mesh_flavour="ossm2", service_mesh_wait_delay=1,
               # OpenShift 4.20: kfocp knows no Service Mesh 2 channel there, so the user names it
               service_mesh_ossm2={"subscription": {"channel": "stable"}},
               service_mesh_csv_timeout=120, service_mesh_ready_timeout=120, gpu_csv_timeout=120,
               gpu_csv_poll_interval=1, auth_host=HOST,
               gpu_machinesets=[{"name": GPU_SET, "accelerator": "nvidia-a10g", "instance_type": {"aws": "g5.2xlarge"}}])
    out.update(more)
    return out


def pods_made(kube, namespace):
    """Every Deployment and StatefulSet of `namespace` has made all its pods."""
    for api_version, kind in (("apps/v1", "Deployment"), ("apps/v1", "StatefulSet")):
        for obj in kube.list(kube.resource(api_version, kind), namespace=namespace):
            if (obj.get("status") or {}).get("replicas", 0) < obj["spec"].get("replicas", 1):
                return False
    return len(kube.list(kube.resource("v1", "Pod"), namespace=namespace)) > 0


@pytest.fixture(scope="module")
def platform(tmp_path_factory):
    """A converged platform on a control plane of its own (cluster-wide, fixed names), with what
    OpenShift writes: yields (plane, kube, run), where run(**more) runs verify.yml."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client
    plane = ControlPlane(tmp_path_factory.mktemp("verify")).up(workloads=True)
    work = tmp_path_factory.mktemp("verify-runs")
    try:
        kube = Client.from_params({"kubeconfig": str(plane.kubeconfig)})
        play_cluster_version(kube, "4.20.3")  # the local inventory's kfocp_openshift_version
        play_installer_worker_machineset(kube)
        ensure_namespace(kube, "openshift-operators")
        instance = "verify"
        with PlayOperators(kube):
            site = run_playbook(plane, "site", extravars(instance), work)
        assert site.rc == 0, site.stdout[-5000:]
        plane.add_machineset_nodes()
        wait_for(lambda: pods_made(kube, "kubeflow"), 120, what="the kubeflow workloads' pods")
        standins.play_scc_admission(kube, "kubeflow")
        standins.play_router(kube, MESH_NAMESPACE, ROUTE)
        standins.play_member_roll(kube, MESH_NAMESPACE)
        with standins.OAuthProxy(kube, MESH_NAMESPACE, ROUTE, AUTHORIZE) as proxy:
            def run(**more):
                # SCC admission annotates every pod when it is created: here, those made since the last run
                standins.play_scc_admission(kube, "kubeflow")
                return run_playbook(plane, "verify", extravars(instance, kfocp_verify_oauth_url=proxy.url,
                                                               kfocp_verify_validate_certs=False, **more), work)
            yield plane, kube, run
    finally:
        plane.destroy()


def daemonsets_scheduled(kube, namespace):
    """Every DaemonSet of `namespace` has a pod on each node it should run on."""
    return all((d.get("status") or {}).get("currentNumberScheduled") == (d.get("status") or {}).get(
        "desiredNumberScheduled") for d in kube.list(kube.resource("apps/v1", "DaemonSet"), namespace=namespace))


def failed_checks(result):
    """The checks verify.yml's last task names as failed, or None when it passed."""
    text = " ".join(result.stdout.split())
    if "failed checks: " not in text:
        return None
    return text.split("failed checks: ", 1)[1].split(" (", 1)[0].split(", ")


def rows(result):
    """(check, PASS/FAIL, target, detail) of every row verify.yml printed."""
    out = []
    for event in result.events:
        data = event.get("event_data") or {}
        if event.get("event") == "runner_item_on_ok" and data.get("task", "").startswith("Show the checks"):
            msg = (data.get("res") or {}).get("msg", "")
            check, verdict, rest = msg.split(None, 2)
            target, _sep, detail = rest.partition(" - ")
            out.append((check, verdict, target, detail))
    return out


def test_a_correct_install_passes_every_check(platform):
    _plane, _kube, run = platform
    result = run()
    table = rows(result)
    assert result.rc == 0, "\n".join(map(str, table)) or result.stdout[-5000:]
    assert "every check passed" in result.stdout
    checks = set(row[0] for row in table)
    assert checks == {"scc", "podsecurity", "route", "oauth", "mesh", "gpu", "references"}, table
    assert [row for row in table if row[0] == "references"][0][:3] == ("references", "PASS", "kubeflow"), table
    # the GPU MachineSet and the GPU node the machine API made from it were both checked
    targets = [row[2] for row in table if row[0] == "gpu"]
    assert "MachineSet openshift-machine-api/%s" % GPU_SET in targets and "Node %s-0" % GPU_SET in targets, targets
    assert ("mesh", "PASS", "ServiceMeshMemberRoll %s/default" % MESH_NAMESPACE) in [r[:3] for r in table], table


def test_a_pending_mesh_member_fails_the_mesh_check(platform):
    plane, kube, run = platform
    # a namespace the member roll selects (kfocp's member label) that the operator has not configured yet
    ensure_namespace(kube, "team-late", {"kfocp.io/mesh": "kubeflow"})
    status = standins.play_member_roll(kube, MESH_NAMESPACE, not_configured={"team-late"})
    assert status["pendingMembers"] == ["team-late"] and status["conditions"][0]["status"] == "False"
    try:
        result = run()
    finally:  # the operator configures it
        standins.play_member_roll(kube, MESH_NAMESPACE)
        plane.kubectl("delete", "namespace", "team-late", "--wait=false")
    assert result.rc != 0
    assert failed_checks(result) == ["mesh"], result.stdout[-3000:]
    detail = [r[3] for r in rows(result) if r[0] == "mesh"][0]
    assert "pending members: team-late" in detail and "The following namespaces are not yet configured: [team-late]" \
        in detail, detail


def test_a_route_no_router_admitted_fails_the_route_check(platform):
    _plane, kube, run = platform
    standins.play_router(kube, MESH_NAMESPACE, ROUTE, admitted=False, reason="HostAlreadyClaimed",
                         message="route other/kubeflow already exposes %s and is older" % HOST)
    try:
        result = run()
    finally:  # the other Route is gone: the router admits this one again
        standins.play_router(kube, MESH_NAMESPACE, ROUTE)
    assert result.rc != 0
    assert failed_checks(result) == ["route"], result.stdout[-3000:]
    detail = [r[3] for r in rows(result) if r[0] == "route"][0]
    assert "not admitted" in detail and "HostAlreadyClaimed" in detail, detail


def test_a_gpu_node_without_the_taint_fails_the_gpu_check(platform):
    plane, kube, run = platform
    node = GPU_SET + "-0"
    plane.kubectl("taint", "nodes", node, "workload=ai-ml:NoSchedule-")
    try:
        # the DaemonSets that did not tolerate the taint now run a pod there too (SCC admission
        # annotates it before verify reads the pods)
        time.sleep(2)
        wait_for(lambda: daemonsets_scheduled(kube, "kubeflow"), 60, what="the DaemonSets' pods on the untainted node")
        result = run()
    finally:
        plane.kubectl("taint", "nodes", node, "workload=ai-ml:NoSchedule")
    assert result.rc != 0
    assert failed_checks(result) == ["gpu"], result.stdout[-3000:]
    assert ("gpu", "FAIL", "Node " + node, "not tainted workload=ai-ml:NoSchedule") in rows(result)


def test_a_pod_under_an_scc_its_service_account_may_not_use_fails_the_scc_check(platform):
    plane, kube, run = platform
    # a cluster admin runs a pod in kubeflow by hand: SCC admission admits it under anyuid (the
    # admin may use every SCC, and anyuid has the highest priority and admits the pod: it sets no
    # seccomp profile, which anyuid would refuse), which its service account (default) was never granted
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "debug-shell", "namespace": "kubeflow"},
           "spec": {"containers": [{"name": "shell", "image": "registry.access.redhat.com/ubi9/ubi-minimal:9.6",
                                    "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                                                        "capabilities": {"drop": ["ALL"]}}}]}}
    plane.kubectl("create", "-f", "-", input=json.dumps(pod))
    try:
        chosen = standins.play_scc_admission(kube, "kubeflow", ("kfocp-admin", ("system:masters", "system:authenticated")),
                                             names=["debug-shell"])
        assert chosen == {"debug-shell": "anyuid"}
        result = run()
    finally:
        plane.kubectl("delete", "pod", "debug-shell", "-n", "kubeflow", "--wait=false")
    assert result.rc != 0
    assert failed_checks(result) == ["scc"], result.stdout[-3000:]
    assert ("scc", "FAIL", "kubeflow/debug-shell",
            "anyuid, which its service account default may not use (no grant of it in kubeflow)") in rows(result)


def test_a_broken_reference_fails_the_references_check(platform):
    plane, _kube, run = platform
    # a ConfigMap of kubeflow's that points at a Service no one made, and a policy that admits an
    # account no one made
    broken = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "planted-reference", "namespace": "kubeflow"},
               "data": {"url": "http://ml-pipeline-gone.kubeflow.svc.cluster.local:8888/apis"}},
              {"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
               "metadata": {"name": "planted-reference", "namespace": "kubeflow"},
               "spec": {"selector": {"matchLabels": {"app": "planted"}},
                        "rules": [{"from": [{"source": {"principals": ["cluster.local/ns/kubeflow/sa/gone"]}}]}]}}]
    plane.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": broken}))
    try:
        result = run()
    finally:
        plane.kubectl("delete", "configmap,authorizationpolicies.security.istio.io", "planted-reference", "-n", "kubeflow",
                      "--wait=false")
    assert result.rc != 0
    assert failed_checks(result) == ["references"], result.stdout[-3000:]
    found = [row for row in rows(result) if row[0] == "references"]
    assert ("references", "FAIL", "ConfigMap kubeflow/planted-reference data.url",
            "'ml-pipeline-gone.kubeflow.svc.cluster.local': Service kubeflow/ml-pipeline-gone does not exist") in found
    assert ("references", "FAIL", "AuthorizationPolicy kubeflow/planted-reference spec.rules[0].from[0].source.principals[0]",
            "'cluster.local/ns/kubeflow/sa/gone': ServiceAccount kubeflow/gone does not exist") in found
    assert len(found) == 2, found
