"""The checks of playbooks/verify.yml (builders/verify.py): they look where the roles put their
objects, and decide from what OpenShift's programs write (the stand-ins, held to their upstream
source)."""
import pytest

import standins
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import auth, gpu, mesh, verify

GATEWAY_SECRETS = {"client_secret": "c" * 48, "cookie_secret": "k" * 32}
LUA = "function envoy_on_request(handle) end"


def settings(flavour):
    if flavour == "external":
        return {"flavour": "external", "external": {"namespace": "corp-istio", "gateway": "corp-gw"}}
    return {"flavour": flavour, "namespace": "team-mesh"}


def role_vars(flavour, **more):
    out = dict(("service_mesh_" + key, value) for key, value in settings(flavour).items())
    out.update(kfocp_verify_namespaces=["kubeflow"], auth_host="kf.apps.example.com")
    out.update(more)
    return out


@pytest.mark.parametrize("flavour", ["ossm2", "ossm3", "external"])
@pytest.mark.parametrize("auth_namespace", ["", "kf-auth"])
def test_the_route_checked_is_the_one_the_auth_role_makes(flavour, auth_namespace):
    gateway = mesh.gateway_info(settings(flavour))
    objs = auth.objects({"host": "kf.apps.example.com", "namespace": auth_namespace}, gateway, GATEWAY_SECRETS, LUA)
    route = [o for o in objs if o["kind"] == "Route"][0]
    target = verify.targets(role_vars(flavour, auth_namespace=auth_namespace or None))["route"]
    assert (target["namespace"], target["name"]) == (route["metadata"]["namespace"], route["metadata"]["name"])
    oauth = verify.targets(role_vars(flavour))["oauth"]
    client = [o for o in objs if o["kind"] == "OAuthClient"][0]
    assert oauth["client_id"] == client["metadata"]["name"]
    assert "--redirect-url=%s" % oauth["redirect_uri"] in auth.proxy_args({"host": "kf.apps.example.com"}, gateway)


def test_with_auth_off_the_route_checked_is_the_gateway_route_or_none():
    assert verify.targets(role_vars("ossm2", kfocp_auth_enabled=False))["route"] is None
    on = dict(settings("ossm3"), gateway={"route": True})
    route = [o for o in mesh.objects(on) if o["kind"] == "Route"][0]
    target = verify.targets(role_vars("ossm3", kfocp_auth_enabled=False, service_mesh_gateway={"route": True}))["route"]
    assert (target["namespace"], target["name"]) == (route["metadata"]["namespace"], route["metadata"]["name"])


@pytest.mark.parametrize("flavour, kind", [("ossm2", "ServiceMeshMemberRoll"), ("ossm3", "Istio")])
def test_the_mesh_object_checked_is_the_one_the_service_mesh_role_makes(flavour, kind):
    made = [o for o in mesh.objects(settings(flavour)) if o["kind"] == kind][0]
    target = verify.targets(role_vars(flavour))["mesh"]
    assert (target["kind"], target["api_version"]) == (made["kind"], made["apiVersion"])
    assert (target["namespace"], target["name"]) == (made["metadata"].get("namespace", ""), made["metadata"]["name"])


def test_the_taint_checked_is_the_one_the_gpu_role_puts_on_its_machinesets():
    # variables that are not set come as '' (the vars lookup's default in verify.yml): the role's defaults apply
    target = verify.targets(role_vars("ossm2", gpu_state="", auth_namespace="", gpu_machinesets=[{"name": "gpu-a"}]))["gpu"]
    assert target["machinesets"] == ["gpu-a"] and target["namespace"] == gpu.MACHINE_API
    worker = {"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
              "metadata": {"name": "w", "namespace": gpu.MACHINE_API,
                           "labels": {"machine.openshift.io/cluster-api-cluster": "c"}},
              "spec": {"replicas": 1, "selector": {"matchLabels": {}},
                       "template": {"metadata": {"labels": {"machine.openshift.io/cluster-api-machine-role": "worker"}},
                                    "spec": {"providerSpec": {"value": {"kind": "AWSMachineProviderConfig",
                                                                        "instanceType": "m6i.xlarge"}}}}}}
    made = gpu.objects({"machinesets": [{"name": "gpu-a", "accelerator": "nvidia-a10g",
                                         "instance_type": {"aws": "g5.2xlarge"}}],
                        "live_machinesets": [worker]})
    ms = [o for o in made if o["kind"] == "MachineSet"][0]
    assert verify.gpu_rows(target, [ms], [])[0]["pass"]


def node(name, taints, gpus="1"):
    return {"metadata": {"name": name}, "spec": {"taints": taints},
            "status": {"capacity": {"cpu": "8", "nvidia.com/gpu": gpus}}}


def test_gpu_nodes_are_checked_for_the_taint_object_not_a_key_string():
    target = {"taint": dict(gpu.TAINT), "namespace": gpu.MACHINE_API, "machinesets": []}
    tainted = node("g0", [{"key": "workload", "value": "ai-ml", "effect": "NoSchedule"}])
    other = node("g1", [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}])
    wrong_effect = node("g2", [{"key": "workload", "value": "ai-ml", "effect": "PreferNoSchedule"}])
    cpu_only = node("w0", [], gpus="0")
    found = dict((r["target"], r["pass"]) for r in verify.gpu_rows(target, [], [tainted, other, wrong_effect, cpu_only]))
    assert found == {"Node g0": True, "Node g1": False, "Node g2": False}


def test_a_gpu_machineset_that_is_missing_or_untainted_fails():
    target = {"taint": dict(gpu.TAINT), "namespace": gpu.MACHINE_API, "machinesets": ["a", "b"]}
    untainted = {"metadata": {"name": "a"}, "spec": {"template": {"spec": {"taints": []}}}}
    found = verify.gpu_rows(target, [untainted], [])
    assert [(r["target"], r["pass"], r["detail"]) for r in found] == [
        ("MachineSet openshift-machine-api/a", False, "does not taint its nodes workload=ai-ml:NoSchedule"),
        ("MachineSet openshift-machine-api/b", False, "no such MachineSet")]


def ns(name, labels=None):
    return {"metadata": {"name": name, "labels": dict(labels or {})}}


ROLL = {"metadata": {"name": "default", "namespace": "kubeflow-mesh"},
        "spec": {"memberSelectors": [{"matchLabels": {"kfocp.io/mesh": "kubeflow"}}]}}
MESH_TARGET = {"flavour": "ossm2", "kind": "ServiceMeshMemberRoll", "api_version": "maistra.io/v1",
               "namespace": "kubeflow-mesh", "name": "default", "labels": {"kubeflow": {"kfocp.io/mesh": "kubeflow"}}}
NAMESPACES = [ns("kubeflow", {"kfocp.io/mesh": "kubeflow"}), ns("team-a", {"kfocp.io/mesh": "kubeflow"}), ns("other")]


def roll_with(status):
    return dict(ROLL, status=status)


def test_member_roll_with_empty_spec_members_passes_when_the_operator_configured_every_member():
    status = standins.member_roll_status(ROLL, [{"metadata": {"name": "smcp"}}], NAMESPACES, [])
    assert status["members"] == ["kubeflow", "team-a"]
    [row] = verify.mesh_rows(MESH_TARGET, roll_with(status), NAMESPACES)
    assert row["pass"], row


def test_a_pending_member_fails_the_mesh_check_with_the_operators_message():
    status = standins.member_roll_status(ROLL, [{"metadata": {"name": "smcp"}}], NAMESPACES, [],
                                         not_configured={"team-a"})
    [row] = verify.mesh_rows(MESH_TARGET, roll_with(status), NAMESPACES)
    assert not row["pass"]
    assert "pending members: team-a" in row["detail"]
    assert "The following namespaces are not yet configured: [team-a]" in row["detail"]


def test_a_verified_namespace_outside_the_roll_and_a_missing_roll_fail():
    status = standins.member_roll_status(ROLL, [{"metadata": {"name": "smcp"}}], [ns("team-a", {"kfocp.io/mesh": "kubeflow"})],
                                         [])
    [row] = verify.mesh_rows(MESH_TARGET, roll_with(status), NAMESPACES)
    assert not row["pass"] and "not members: kubeflow" in row["detail"]
    [row] = verify.mesh_rows(MESH_TARGET, None, NAMESPACES)
    assert not row["pass"] and row["detail"] == "missing"


def test_label_membership_is_checked_per_namespace_for_ossm3_and_existing_meshes():
    target = verify.targets(role_vars("ossm3"))["mesh"]
    ready = {"status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    good = ns("kubeflow", target["labels"]["kubeflow"])
    assert all(r["pass"] for r in verify.mesh_rows(target, ready, [good]))
    rows = verify.mesh_rows(target, ready, [ns("kubeflow", {"kfocp.io/mesh": "kubeflow"})])
    assert [r["pass"] for r in rows] == [True, False] and "istio-injection=enabled" in rows[1]["detail"]
    external = verify.targets(role_vars("external"))["mesh"]
    assert "kind" not in external
    assert [r["pass"] for r in verify.mesh_rows(external, None, [ns("kubeflow", {"istio-injection": "enabled"})])] == [True]


def route(ingress=None):
    out = {"metadata": {"name": "r", "namespace": "n"}, "spec": {"host": "kf.apps.example.com"}}
    if ingress is not None:
        out["status"] = {"ingress": ingress}
    return out


def test_the_route_passes_only_when_a_router_admitted_it():
    target = {"namespace": "n", "name": "r"}
    assert verify.route_row(target, dict(route(), status={"ingress": standins.route_ingress(route())}))["pass"]
    rejected = standins.route_ingress(route(), admitted=False, reason="HostAlreadyClaimed", message="older route")
    row = verify.route_row(target, route(rejected))
    assert not row["pass"] and "HostAlreadyClaimed: older route" in row["detail"]
    assert not verify.route_row(target, route())["pass"]
    assert verify.route_row(target, None)["detail"] == "no such Route"


def test_oauth_passes_on_a_redirect_with_kfocps_client_and_redirect_uri():
    target = {"client_id": "kubeflow", "redirect_uri": "https://kf.apps.example.com/oauth/callback"}
    location = ("https://oauth-openshift.apps.example.com/oauth/authorize?approval_prompt=force&client_id=kubeflow"
                "&redirect_uri=https%3A%2F%2Fkf.apps.example.com%2Foauth%2Fcallback&response_type=code&state=x%3A%2F")
    assert verify.oauth_row(target, {"status": 302, "location": location})["pass"]
    other = location.replace("client_id=kubeflow", "client_id=console")
    row = verify.oauth_row(target, {"status": 302, "location": other})
    assert not row["pass"] and "client_id console (want kubeflow)" in row["detail"]
    assert not verify.oauth_row(target, {"status": 200, "location": ""})["pass"]


def pod(name, scc, account="default"):
    meta = {"name": name, "namespace": "kubeflow", "annotations": {"openshift.io/scc": scc} if scc else {}}
    return {"metadata": meta, "spec": {"serviceAccountName": account}}


def answered(review, allowed):
    return dict(review, status={"allowed": allowed})


def test_scc_rows_ask_for_the_pods_service_account_and_read_the_answer():
    pods = [pod("a", "restricted-v2"), pod("b", "anyuid", "mysql"), pod("c", "anyuid"), pod("d", ""),
            pod("e", "restricted-v2")]
    reviews = verify.reviews(pods)
    assert [(r["spec"]["user"], r["spec"]["resourceAttributes"]["name"]) for r in reviews] == [
        ("system:serviceaccount:kubeflow:default", "restricted-v2"),
        ("system:serviceaccount:kubeflow:mysql", "anyuid"),
        ("system:serviceaccount:kubeflow:default", "anyuid")]
    answers = [answered(reviews[0], True), answered(reviews[1], True), answered(reviews[2], False)]
    found = dict((r["target"], r["pass"]) for r in verify.scc_rows(pods, answers, []))
    assert found == {"kubeflow/a": True, "kubeflow/b": True, "kubeflow/c": False, "kubeflow/d": False, "kubeflow/e": True}
    # an SCC whose own groups name the service account's groups needs no RBAC grant
    listed = {"metadata": {"name": "anyuid"}, "groups": ["system:serviceaccounts:kubeflow"]}
    assert verify.scc_rows([pod("c", "anyuid")], [answered(reviews[2], False)], [listed])[0]["pass"]


class _Exit(Exception):
    pass


class _Module:
    """What kubernetes.core's run_module needs of an AnsibleModule: params, and exit_json (which
    ends the run, as Ansible's does)."""
    def __init__(self):
        self.params = {"validate": None, "continue_on_error": False}
        self.returned = None

    def exit_json(self, **result):
        self.returned = result
        raise _Exit()


@pytest.mark.parametrize("count", [1, 3])
def test_the_answers_are_read_from_what_kubernetes_cores_k8s_returns_for_one_review_or_many(monkeypatch, count):
    # the oracle is kubernetes.core's own run_module: it builds what the task registers from the
    # result of each definition (the API server's part, its answer to each create, is played here)
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s import runner
    asked = verify.reviews([pod(name, "anyuid", "sa-" + name) for name in "abc"[:count]])
    monkeypatch.setattr(runner, "get_api_client", lambda module: None)
    monkeypatch.setattr(runner, "K8sService", lambda client, module: None)
    monkeypatch.setattr(runner, "get_definitions", lambda svc, params: asked)
    monkeypatch.setattr(runner, "perform_action", lambda svc, definition, params: {
        "changed": True, "method": "create", "result": answered(definition, definition is asked[0])})
    module = _Module()
    with pytest.raises(_Exit):
        runner.run_module(module)
    got = verify.answers(module.returned)
    assert [a["spec"]["user"] for a in got] == [r["spec"]["user"] for r in asked]
    assert [a["status"]["allowed"] for a in got] == [True] + [False] * (count - 1)
    assert verify.answers({"skipped": True, "changed": False}) == [] and verify.answers(None) == []


@pytest.mark.parametrize("flavour", ["ossm2", "ossm3", "external"])
def test_the_references_are_checked_from_the_gateway_the_service_mesh_role_runs(flavour):
    info = mesh.gateway_info(mesh.normalise(settings(flavour)))
    target = verify.targets(role_vars(flavour, components_namespace="ml"))["references"]
    assert target == {"namespaces": ["kubeflow"], "gateway": "ml/kubeflow-gateway", "principals": [info["principal"]],
                      "root_namespace": info["mesh_namespace"]}
    assert verify.targets(role_vars(flavour))["references"]["gateway"] == "kubeflow/kubeflow-gateway"
    assert verify.targets(role_vars(flavour, kfocp_components_enabled=False))["references"] is None


def test_each_broken_reference_fails_a_row_naming_both_objects_and_the_field():
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import references
    target = {"namespaces": ["kubeflow"]}
    objs = [{"kind": "Namespace", "metadata": {"name": "kubeflow"}},
            {"kind": "ConfigMap", "metadata": {"name": "c", "namespace": "kubeflow"}, "data": {"url": "http://api.kubeflow.svc:80"}}]
    found = references.check(objs, namespaces=["kubeflow"])
    assert verify.reference_rows(target, found) == [
        {"check": "references", "pass": False, "target": "ConfigMap kubeflow/c data.url",
         "detail": "'api.kubeflow.svc': Service kubeflow/api does not exist"}]
    objs.append({"kind": "Service", "metadata": {"name": "api", "namespace": "kubeflow"}})
    assert verify.reference_rows(target, references.check(objs, namespaces=["kubeflow"])) == [
        {"check": "references", "pass": True, "target": "kubeflow",
         "detail": "none broken (0 backends, 1 hosts, 0 paths, 0 principals)"}]
    assert verify.reference_rows(target, {"failed": True, "msg": "Forbidden"})[0]["pass"] is False
