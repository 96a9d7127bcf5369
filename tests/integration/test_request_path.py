"""The whole request path, for each mesh flavour, from the objects the roles and the stand-ins of
the upstream controllers wrote to the cluster: Route -> oauth-proxy (its access review, asked of the
real API server; the identity headers it sets, tests/standins.py) -> NetworkPolicy -> the gateway
(its Lua filter, run in a Lua runtime) -> Gateway and VirtualService -> the destination's
AuthorizationPolicies (the evaluator in plugins/module_utils/authz.py, whose every verdict here
must be the one of Istio's own translation of the policies read back into the sidecar's Envoy RBAC
filters, decided by Envoy's rules: hack/istio, tests/envoy_rbac.py), enforced only where the
destination has a proxy; cyclonus confirms the network part. The owner's policy is the one the
profile controller stand-in wrote, read back; the gateway's principal and labels are those of the
pod kube-scheduler placed and kwok runs; whether a namespace's pods get a proxy is asked of the API
server's webhook matching (istiod's injector for ossm3 and external; for ossm2 the operator's, on
the namespaces its member controller labelled, then its injection policy). Who: the owner, a
contributor added through the dashboard, one added by kfocp, a stranger, a cluster admin, and
in-cluster pods that send their own headers."""
import json
import re
import subprocess
import time

import lupa
import pytest

import envoy_rbac
import judges
from ansible_collections.kfocp.kubeflow.plugins.module_utils import authz
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError
from cluster import ClusterError, build_cyclonus, build_istio_judge
import standins
from helpers import (ROOT, components_only, isolated_policies, mesh_vars, oauth_proxy_lets_in,
                     play_kfam_add_contributor, wait_for)


ROLES = str(ROOT / "tests" / "fixtures" / "playbooks" / "roles.yml")
OWNER, CONTRIBUTOR, STRANGER, ADMIN = "alice@example.com", "bob@example.com", "carol@example.com", "root@example.com"
KFOCP_CONTRIBUTOR = "alice"  # added by kfocp's profiles role; shares the part before the "@" with the owner
USERS_GROUP = "system:authenticated:oauth"
# Istio's gateway chart labels istio-system's istio-ingressgateway pods so
EXTERNAL_GATEWAY_POD = {"istio": "ingressgateway", "app": "istio-ingressgateway"}
PROXY_IMAGE = "docker.io/istio/proxyv2:1.26.3"


# Roles of one flavour, in one play, on a control plane of the module's own (the cluster-scoped
# fixture objects have fixed names) that runs pods: workload controllers, kube-scheduler, kwok.
# Pods run on this module's own plane (kube-scheduler, kwok)
OWN_PLANE = True
WORKLOADS = True
WORKERS = 1


def get(kube, api_version, kind, name, namespace=None):
    return kube.get(kube.resource(api_version, kind), name, namespace)


def items(kube, api_version, kind, namespace=None):
    return kube.list(kube.resource(api_version, kind), namespace=namespace)


def run_gateway(kube, flavour, info, instance):
    """The gateway's pod as kube-scheduler placed it and kwok runs it: on Service Mesh 2 the
    Deployment the operator makes from the SMCP (standins.maistra_gateway_objects), on 3 kfocp's,
    for an existing mesh Istio's gateway chart's (standins.ingress_gateway_objects).
    Returns {namespace, labels, principal}."""
    if flavour == "ossm2":
        smcp = items(kube, "maistra.io/v2", "ServiceMeshControlPlane", info["namespace"])[0]
        objs = standins.maistra_gateway_objects(smcp)
    elif flavour == "external":
        ports = [{"name": "http2", "port": 80, "targetPort": 8080, "protocol": "TCP"}]
        objs = standins.ingress_gateway_objects(info["name"], info["namespace"], EXTERNAL_GATEWAY_POD, ports, PROXY_IMAGE)
    else:
        objs = []
    for obj in objs:
        kube.apply(kube.resource(obj["apiVersion"], obj["kind"]), obj, "mesh-operator", force=True)
    deployment = get(kube, "apps/v1", "Deployment", info["name"], info["namespace"])
    selector = ",".join("%s=%s" % kv for kv in sorted(deployment["spec"]["selector"]["matchLabels"].items()))

    def running():
        pods = kube.list(kube.resource("v1", "Pod"), namespace=info["namespace"], label_selector=selector)
        return [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    pod = wait_for(running, 120, what="a Running pod of the gateway %s/%s (%s)" % (info["namespace"], info["name"], instance))[0]
    return {"namespace": pod["metadata"]["namespace"], "labels": pod["metadata"]["labels"],
            "principal": "cluster.local/ns/%s/sa/%s" % (pod["metadata"]["namespace"], pod["spec"]["serviceAccountName"])}


def has_proxy(kube, flavour, settings, namespace, pod_labels):
    """Whether a pod with `pod_labels` in `namespace` gets a sidecar, so that anything enforces an
    AuthorizationPolicy on it. The API server is asked, by a dry-run create, whether the injection
    webhook matches the pod: istiod's (standins.istiod_injector_webhook, Service Mesh 3 and Istio)
    or the Service Mesh 2 operator's (standins.maistra_injector_webhook), registered for the
    control plane and answered by nobody. Service Mesh 2's injector then decides by its policy,
    the SMCP's autoInject (standins.maistra_inject_required)."""
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "probe-%d" % time.monotonic_ns(), "namespace": namespace, "labels": dict(pod_labels)},
           "spec": {"containers": [{"name": "c", "image": "registry.example/c:1"}]}}
    try:
        kube.request("POST", kube.path(kube.resource("v1", "Pod"), namespace), query={"dryRun": "All"}, body=pod)
        return False
    except KubeError as err:
        assert "sidecar-injector.istio.io" in str(err), str(err)
    if flavour == "ossm2":
        smcp = items(kube, "maistra.io/v2", "ServiceMeshControlPlane", settings["ossm2"]["namespace"])[0]
        return standins.maistra_inject_required(smcp, pod["metadata"])
    return True


def selects(selector, labels):
    return all(labels.get(key) == value for key, value in (selector or {}).items())


def network_allows(kube, source, target):
    """Whether the NetworkPolicies in the target's namespace admit the source pod
    ({namespace, labels}) to the target pod (matchLabels selectors, as kfocp writes them)."""
    policies = [p for p in items(kube, "networking.k8s.io/v1", "NetworkPolicy", target["namespace"])
                if "Ingress" in p["spec"].get("policyTypes", ["Ingress"])
                and selects(p["spec"]["podSelector"].get("matchLabels"), target["labels"])]
    if not policies:
        return True
    source_ns_labels = get(kube, "v1", "Namespace", source["namespace"])["metadata"].get("labels") or {}
    for policy in policies:
        for rule in policy["spec"].get("ingress") or []:
            for peer in rule.get("from") or [{}]:
                assert set(peer) <= {"podSelector", "namespaceSelector"}, peer
                in_ns = (selects(peer["namespaceSelector"].get("matchLabels"), source_ns_labels)
                         if "namespaceSelector" in peer else source["namespace"] == target["namespace"])
                if in_ns and selects((peer.get("podSelector") or {}).get("matchLabels"), source["labels"]):
                    return True
    return False


def cyclonus_allows(kube, tmp_path, source, target, port, extra=()):
    """cyclonus's verdict (query-traffic) on TCP traffic from the source pod to the target pod,
    from the NetworkPolicies the cluster holds in both namespaces (and `extra` ones)."""
    wanted = set([source["namespace"], target["namespace"]])
    found = [p for ns in sorted(wanted) for p in items(kube, "networking.k8s.io/v1", "NetworkPolicy", ns)]
    found += [p for p in extra if p["metadata"]["namespace"] in wanted]
    policies = {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicyList", "items": [
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
         "metadata": {"name": p["metadata"]["name"], "namespace": p["metadata"]["namespace"]}, "spec": p["spec"]}
        for p in found]}

    def end(pod, ip):
        labels = get(kube, "v1", "Namespace", pod["namespace"])["metadata"].get("labels") or {}
        return {"Internal": {"PodLabels": pod["labels"], "NamespaceLabels": labels, "Namespace": pod["namespace"]},
                "IP": ip}
    traffic = [{"Source": end(source, "10.128.0.10"), "Destination": end(target, "10.128.0.20"),
                "Protocol": "TCP", "ResolvedPort": port, "ResolvedPortName": "http2"}]
    (tmp_path / "policies.json").write_text(json.dumps(policies))
    (tmp_path / "traffic.json").write_text(json.dumps(traffic))
    proc = subprocess.run([str(build_cyclonus()), "analyze", "--mode", "query-traffic",
                           "--policy-path", str(tmp_path / "policies.json"),
                           "--traffic-path", str(tmp_path / "traffic.json")],
                          capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    verdicts = re.findall(r"IS ALLOWED\?\s*\|\s*(TRUE|FALSE)", proc.stdout, re.I)
    assert len(verdicts) == 1, proc.stdout[-3000:]
    return verdicts[0].lower() == "true"


def run_gateway_lua(source, headers):
    """The gateway's Lua filter (the EnvoyFilter's inline code) on the request headers."""
    runtime = lupa.LuaRuntime(unpack_returned_tuples=True)
    runtime.execute(source)
    values = [(k.lower(), v) for k, v in headers.items()]

    def remove(_self, name):
        values[:] = [(k, v) for k, v in values if k != name.lower()]

    def add(_self, name, value):
        values.append((name.lower(), value))

    def replace(_self, name, value):
        remove(_self, name)
        add(_self, name, value)

    lua_headers = runtime.table_from({"get": lambda _self, name: next((v for k, v in values if k == name.lower()), None),
                                      "add": add, "remove": remove, "replace": replace})
    handle = runtime.table_from({"headers": lambda _self: lua_headers})
    runtime.globals().envoy_on_request(handle)
    return dict(values)


def bound_virtualservices(kube, gateway_pod):
    """The VirtualServices bound to a Gateway that selects the gateway's pods (labels)."""
    for vs in items(kube, "networking.istio.io/v1beta1", "VirtualService"):
        for ref in vs["spec"].get("gateways") or []:
            gw_ns, _sep, gw_name = ref.rpartition("/")
            gateway = get(kube, "networking.istio.io/v1beta1", "Gateway", gw_name, gw_ns or vs["metadata"]["namespace"])
            if gateway and selects(gateway["spec"].get("selector"), gateway_pod):
                yield vs
                break


def route_for(kube, path, gateway_pod, gateway_ns):
    """The VirtualService route the gateway takes for `path`: only VirtualServices bound to a
    Gateway that selects the gateway's pods count. Returns (destination host, VirtualService)."""
    for vs in bound_virtualservices(kube, gateway_pod):
        for http in vs["spec"].get("http") or []:
            if any(path.startswith((m.get("uri") or {}).get("prefix", "\0")) for m in http.get("match") or []):
                return http["route"][0]["destination"]["host"], vs
    return None, None


def notebook_virtualservice(profile, name, gateway_ref):
    """The VirtualService the notebook controller makes for a notebook."""
    prefix = "/notebook/%s/%s/" % (profile, name)
    return {"apiVersion": "networking.istio.io/v1beta1", "kind": "VirtualService",
            "metadata": {"name": "notebook-%s-%s" % (profile, name), "namespace": profile},
            "spec": {"gateways": [gateway_ref], "hosts": ["*"],
                     "http": [{"match": [{"uri": {"prefix": prefix}}], "rewrite": {"uri": prefix},
                               "route": [{"destination": {"host": "%s.%s.svc.cluster.local" % (name, profile),
                                                          "port": {"number": 80}}}]}]}}


@pytest.mark.parametrize("flavour", ["ossm2", "ossm3", "external"])
def test_who_reaches_a_tenants_notebook(playbook, kube, control_plane, instance, flavour, tmp_path):
    try:
        build_istio_judge()
    except ClusterError as err:
        pytest.skip("the istio-authz judge (hack/istio) cannot be built: %s" % str(err)[:500])
    kf_ns, profile, other, outside = instance + "-kf", instance + "-alice", instance + "-carol", instance + "-out"
    mesh_variables = mesh_vars(flavour, instance)
    if flavour == "ossm3":
        # the default revision: with a named one the profile controller must be given istio.io/rev
        # through its namespace-labels file (istio-injection wins over it in istiod's webhook), and
        # the fixture tree's profiles component has no such file
        mesh_variables["service_mesh_ossm3"] = dict(mesh_variables["service_mesh_ossm3"], name="default")
    settings = {"flavour": flavour, **dict((k[len("service_mesh_"):], v) for k, v in mesh_variables.items())}
    info = mesh.gateway_info(settings)
    extra = dict(components_only(instance, "istio-resources", "central-dashboard", "profiles"),
                 kfocp_roles=["kfocp.kubeflow.service_mesh", "kfocp.kubeflow.auth", "kfocp.kubeflow.components",
                              "kfocp.kubeflow.profiles"],
                 service_mesh_flavour=flavour, service_mesh_olm=False, service_mesh_wait=False,
                 auth_host="kubeflow.apps.example.com", auth_client_id=instance, components_namespace=kf_ns,
                 components_no_log=False, profiles_list=[
                     {"name": profile, "owner": {"user": OWNER}, "contributors": [{"user": KFOCP_CONTRIBUTOR, "role": "edit"}]},
                     {"name": other, "owner": {"user": STRANGER}}],
                 **isolated_policies(instance), **mesh_variables)
    controller = standins.ProfileController(kube, {"kfocp-test": instance}, only=[profile, other])
    webhooks = kube.resource("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration")
    injector = standins.istiod_injector_webhook(mesh.revision(mesh.normalise(settings)), info["mesh_namespace"])
    result = playbook(ROLES, extra)
    assert result.rc == 0, result.stdout[-3000:]
    try:
        # the profile controller, configured by the Deployment kfocp made, makes the namespaces and
        # ns-owner-access-istio; then kfocp gives the namespaces their contributors and mesh membership
        assert sorted(controller.step()) == sorted([profile, other]), controller.refused
        result = playbook("profiles", dict(extra, kfocp_profile_self_service_enabled=False))
        assert result.rc == 0, result.stdout[-3000:]
        # a Profile of another install, whose namespace its admin took out of injection
        kube.apply(kube.resource("kubeflow.org/v1", "Profile"), {
            "apiVersion": "kubeflow.org/v1", "kind": "Profile", "metadata": {"name": outside},
            "spec": {"owner": {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": OWNER}}}, "someone")
        assert standins.ProfileController(kube).step([outside]) == [outside]
        control_plane.kubectl("label", "namespace", outside, "istio-injection=disabled", "--overwrite")
        play_kfam_add_contributor(kube, profile, CONTRIBUTOR, "edit")
        for name in (profile, outside):
            control_plane.kubectl("apply", "-f", "-", input=json.dumps(notebook_virtualservice(
                name, "nb", "%s/kubeflow-gateway" % kf_ns)))

        gateway_pod = run_gateway(kube, flavour, info, instance)
        assert gateway_pod["principal"] == info["principal"], "kfocp names another gateway principal than its pods run as"
        assert selects(info["selector"], gateway_pod["labels"]), (info["selector"], gateway_pod["labels"])
        # asked of the webhook's matching from now on: no more pods are created
        if flavour == "ossm2":
            # the operator's member controller labels the namespaces of its ServiceMeshMembers
            assert profile in standins.play_members(kube, info["namespace"])
            injector = standins.maistra_injector_webhook(
                items(kube, "maistra.io/v2", "ServiceMeshControlPlane", info["namespace"])[0])
        kube.apply(webhooks, injector, "istiod", force=True)

        if flavour == "ossm2":
            # what the Service Mesh 2 operator adds for kfocp's control plane: nothing, as its
            # NetworkPolicies would admit every pod to the gateway
            smcp = items(kube, "maistra.io/v2", "ServiceMeshControlPlane", info["namespace"])[0]
            for policy in standins.maistra_network_policies(smcp, [kf_ns, profile, other]):
                control_plane.kubectl("apply", "--server-side", "--field-manager=istio-operator", "-f", "-",
                                      input=json.dumps(policy))

        route = get(kube, "route.openshift.io/v1", "Route", "kubeflow-oauth-proxy", info["namespace"])
        proxy = get(kube, "apps/v1", "Deployment", route["spec"]["to"]["name"], info["namespace"])
        proxy_pod = {"namespace": info["namespace"], "labels": proxy["spec"]["template"]["metadata"]["labels"]}
        args = dict(a.split("=", 1) for a in proxy["spec"]["template"]["spec"]["containers"][0]["args"])
        assert args["--upstream"] == "http://%s.%s.svc.cluster.local:80" % (info["service"], info["namespace"])
        lua = get(kube, "networking.istio.io/v1alpha3", "EnvoyFilter", "kfocp-kubeflow-userid",
                  info["namespace"])["spec"]["configPatches"][0]["patch"]["value"]["typed_config"]["inlineCode"]
        policies = items(kube, "security.istio.io/v1", "AuthorizationPolicy")
        assert [p["metadata"]["name"] for p in policies if p["metadata"]["namespace"] == profile
                and p["metadata"]["name"] == standins.AUTHZ_NAME], "the controller's policy, read back"

        def through_the_route(user, groups, headers, notebook=profile):
            """A request through the Route from a browser session (oauth-proxy authenticates no bearer
            token: kfocp gives it no --openshift-delegate-urls): (reached the notebook as, where it stopped)."""
            allowed, _reason = oauth_proxy_lets_in(kube, args["--openshift-sar"], user, groups)
            if not allowed:
                return None, "oauth-proxy: 403"
            # oauth-proxy replaces the identity headers with those of the user it logged in
            return to_the_gateway(proxy_pod, standins.oauth_proxy_upstream_headers(headers, user), notebook)

        def to_the_gateway(source, headers, notebook=profile):
            if not network_allows(kube, source, gateway_pod):
                return None, "gateway: no network path"
            headers = run_gateway_lua(lua, headers)
            path = "/notebook/%s/nb/lab" % notebook
            host, _path = route_for(kube, path, gateway_pod["labels"], info["namespace"])
            assert host == "nb.%s.svc.cluster.local" % notebook, host
            return at_the_notebook(gateway_pod["principal"], headers, notebook)

        def at_the_notebook(principal, headers, notebook=profile):
            pod_labels = {"notebook-name": "nb"}
            if not has_proxy(kube, flavour, mesh.normalise(settings), notebook, pod_labels):
                return headers.get("kubeflow-userid"), "notebook without a proxy"
            request = {"principal": principal, "headers": headers, "path": "/notebook/%s/nb/lab" % notebook,
                       "method": "GET", "port": 8888}
            root = info["mesh_namespace"] if flavour == "ossm2" else "istio-system"
            allowed, reason = authz.decide(policies, request, notebook, pod_labels, root_namespace=root)
            # Istio's translation of the same policies, decided by Envoy's rules, says the same
            sidecar = judges.istio_authz(policies, notebook, pod_labels, root)
            assert sidecar["invalid"] == {} and sidecar["custom"] == [], sidecar
            envoy = envoy_rbac.decide(sidecar["filters"], request)
            assert envoy[0] is allowed, (request, (allowed, reason), envoy)
            return (headers.get("kubeflow-userid"), "notebook") if allowed else (None, "notebook: " + reason)

        tenant_pod = {"namespace": other, "labels": {"notebook-name": "carols"}}
        tenant_principal = "cluster.local/ns/%s/sa/default-editor" % other
        table = [
            ("owner", through_the_route(OWNER, [USERS_GROUP], {}), OWNER),
            ("contributor added through the dashboard", through_the_route(CONTRIBUTOR, [USERS_GROUP], {}), CONTRIBUTOR),
            ("contributor added by kfocp", through_the_route(KFOCP_CONTRIBUTOR, [USERS_GROUP], {}), KFOCP_CONTRIBUTOR),
            ("stranger", through_the_route(STRANGER, [USERS_GROUP], {}), None),
            ("cluster admin", through_the_route(ADMIN, [USERS_GROUP, "system:masters"], {}), None),
            ("stranger claiming to be the owner", through_the_route(
                STRANGER, [USERS_GROUP], {"X-Forwarded-User": OWNER, "X-Forwarded-Email": OWNER,
                                          "kubeflow-userid": OWNER}), None),
            ("not in the users group", through_the_route("robot", [], {}), None),
            ("tenant pod to the gateway", to_the_gateway(
                tenant_pod, {"x-forwarded-user": "alice", "x-forwarded-email": OWNER, "kubeflow-userid": OWNER}), None),
            ("tenant pod to the notebook", at_the_notebook(tenant_principal, {"kubeflow-userid": OWNER}), None),
            ("tenant pod without mTLS", at_the_notebook("", {"kubeflow-userid": OWNER}), None),
            # nothing enforces the policy the controller wrote there: a namespace outside the mesh is open
            ("tenant pod to a notebook outside the mesh", at_the_notebook(
                tenant_principal, {"kubeflow-userid": OWNER}, outside), OWNER),
        ]
        wrong = [(who, got, want) for who, got, want in table if got[0] != want]
        assert not wrong, "\n".join("%s: reached as %r (%s), expected %r" % (who, got[0], got[1], want)
                                    for who, got, want in wrong)
        # cyclonus, reading the same NetworkPolicies, agrees: only the proxy reaches the gateway's pods
        port = mesh.normalise(settings)["gateway"]["http_port"]
        assert cyclonus_allows(kube, tmp_path, proxy_pod, gateway_pod, port) is True
        assert cyclonus_allows(kube, tmp_path, tenant_pod, gateway_pod, port) is False
        if flavour == "ossm2":
            # with the operator's policies (manageNetworkPolicy on), the tenant's pod would reach it
            managed = dict(smcp, spec=dict(smcp["spec"], security={"manageNetworkPolicy": True}))
            opened = standins.maistra_network_policies(managed, [kf_ns, profile, other])
            assert cyclonus_allows(kube, tmp_path, tenant_pod, gateway_pod, port, extra=opened) is True
        stops = dict((who, got[1]) for who, got, _want in table)
        assert stops["not in the users group"] == "oauth-proxy: 403"
        assert stops["tenant pod to the gateway"] == "gateway: no network path"
        assert stops["stranger"].startswith("notebook: no ALLOW policy matches")
        assert stops["tenant pod to the notebook"].startswith("notebook: ")  # enforced, and denied
        assert stops["tenant pod to a notebook outside the mesh"] == "notebook without a proxy"
    finally:
        kube.delete(webhooks, injector["metadata"]["name"])
        kube.delete(kube.resource("kubeflow.org/v1", "Profile"), outside)
        with controller, standins.ProfileController(kube, only=[outside]):
            assert playbook("uninstall", {"kfocp_instance": instance}).rc == 0
