"""The whole request path, for each mesh flavour, from the objects the roles wrote to the cluster:
Route -> oauth-proxy (its access review, asked of the real API server) -> NetworkPolicy -> the
gateway (its Lua filter, run in a Lua runtime) -> Gateway and VirtualService -> the destination's
AuthorizationPolicies (the evaluator in plugins/module_utils/authz.py); cyclonus confirms the
network part. Who: the owner, a
contributor, a stranger, a cluster admin, and an in-cluster pod that sends its own headers."""
import json
import re
import subprocess

import lupa
import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils import authz
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh
from cluster import build_workloads
import standins
from helpers import ROOT, components_only, mesh_vars, oauth_proxy_lets_in, play_kfam_add_contributor


# Roles of one flavour, in one play; the cluster-scoped fixture objects (CRDs, ClusterRoles) have fixed names.
OWN_PLANE = True
ROLES = str(ROOT / "tests" / "fixtures" / "playbooks" / "roles.yml")
OWNER, CONTRIBUTOR, STRANGER, ADMIN = "alice@example.com", "bob@example.com", "carol@example.com", "root@example.com"
USERS_GROUP = "system:authenticated:oauth"
# Istio's gateway chart labels istio-system's istio-ingressgateway pods so
EXTERNAL_GATEWAY_POD = {"istio": "ingressgateway", "app": "istio-ingressgateway"}


def get(kube, api_version, kind, name, namespace=None):
    return kube.get(kube.resource(api_version, kind), name, namespace)


def items(kube, api_version, kind, namespace=None):
    return kube.list(kube.resource(api_version, kind), namespace=namespace)


def gateway_pod_labels(kube, flavour, info):
    """The labels the gateway's pods carry: the mesh operator makes them from the SMCP on
    Service Mesh 2, kfocp's Deployment on 3, Istio's chart for an existing mesh."""
    if flavour == "ossm2":
        smcp = items(kube, "maistra.io/v2", "ServiceMeshControlPlane", info["namespace"])[0]
        gateway = smcp["spec"]["gateways"]["additionalIngress"][info["name"]]
        return gateway["runtime"]["pod"]["metadata"]["labels"]
    if flavour == "ossm3":
        return get(kube, "apps/v1", "Deployment", info["name"], info["namespace"])["spec"]["template"]["metadata"]["labels"]
    return EXTERNAL_GATEWAY_POD


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
    proc = subprocess.run([str(build_workloads()["cyclonus"]), "analyze", "--mode", "query-traffic",
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


def route_for(kube, path, gateway_pod, gateway_ns):
    """The VirtualService route the gateway takes for `path`: only VirtualServices bound to a
    Gateway that selects the gateway's pods count. Returns (destination host, VirtualService)."""
    for vs in items(kube, "networking.istio.io/v1beta1", "VirtualService"):
        bound = False
        for ref in vs["spec"].get("gateways") or []:
            gw_ns, _sep, gw_name = ref.rpartition("/")
            gateway = get(kube, "networking.istio.io/v1beta1", "Gateway", gw_name, gw_ns or vs["metadata"]["namespace"])
            bound = bound or bool(gateway and selects(gateway["spec"].get("selector"), gateway_pod))
        if not bound:
            continue
        for http in vs["spec"].get("http") or []:
            if any(path.startswith((m.get("uri") or {}).get("prefix", "\0")) for m in http.get("match") or []):
                return http["route"][0]["destination"]["host"], vs
    return None, None


def owner_access_policy(profile, owner, env):
    """ns-owner-access-istio as the profile controller writes it from its Deployment's environment
    (shared/facts/profile-controller.md): the four rules."""
    return {"apiVersion": "security.istio.io/v1beta1", "kind": "AuthorizationPolicy",
            "metadata": {"name": "ns-owner-access-istio", "namespace": profile,
                         "annotations": {"user": owner, "role": "admin"}},
            "spec": {"action": "ALLOW", "rules": [
                {"when": [{"key": "request.headers[kubeflow-userid]", "values": [owner]}],
                 "from": [{"source": {"principals": [
                     env.get("ISTIO_INGRESS_GATEWAY_PRINCIPAL")
                     or "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account",
                     env.get("KFP_UI_PRINCIPAL") or "cluster.local/ns/kubeflow/sa/ml-pipeline-ui"]}}]},
                {"when": [{"key": "source.namespace", "values": [profile]}]},
                {"to": [{"operation": {"paths": ["/healthz", "/metrics", "/wait-for-drain"]}}]},
                {"from": [{"source": {"principals": [env.get("NOTEBOOK_CONTROLLER_PRINCIPAL")
                                                     or "cluster.local/ns/kubeflow/sa/notebook-controller-service-account"]}}],
                 "to": [{"operation": {"methods": ["GET"], "paths": ["*/api/kernels"]}}]}]}}


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
    kf_ns, profile, other = instance + "-kf", instance + "-alice", instance + "-carol"
    extra = dict(components_only(instance, "istio-resources", "central-dashboard", "profiles"),
                 kfocp_roles=["kfocp.kubeflow.service_mesh", "kfocp.kubeflow.auth", "kfocp.kubeflow.components"],
                 service_mesh_flavour=flavour, service_mesh_olm=False, service_mesh_wait=False,
                 auth_host="kubeflow.apps.example.com", auth_client_id=instance, components_namespace=kf_ns,
                 components_no_log=False, **mesh_vars(flavour, instance))
    result = playbook(ROLES, extra)
    assert result.rc == 0, result.stdout[-3000:]
    try:
        settings = {"flavour": flavour, **dict((k[len("service_mesh_"):], v) for k, v in mesh_vars(flavour, instance).items())}
        info = mesh.gateway_info(settings)
        gateway_pod = {"namespace": info["namespace"], "labels": gateway_pod_labels(kube, flavour, info)}
        # the components' namespace, whose pods get sidecars, is a member of the mesh
        membership = mesh.mesh_membership(kf_ns, settings)
        kf_labels = get(kube, "v1", "Namespace", kf_ns)["metadata"]["labels"]
        assert dict((k, kf_labels.get(k)) for k in membership["labels"]) == membership["labels"]
        members = items(kube, "maistra.io/v1", "ServiceMeshMember", kf_ns)
        assert [m["spec"]["controlPlaneRef"] for m in members] == [o["spec"]["controlPlaneRef"]
                                                                   for o in membership["objects"]]
        assert bool(members) is (flavour == "ossm2")

        # the profile controller and KFAM, with the environment kfocp gave their Deployment
        controller = get(kube, "apps/v1", "Deployment", "profiles-deployment", kf_ns)
        env = dict((e["name"], e.get("value")) for e in controller["spec"]["template"]["spec"]["containers"][0]["env"])
        for name in (profile, other):
            control_plane.kubectl("create", "namespace", name)
        control_plane.kubectl("apply", "--server-side", "--field-manager=profile-controller", "-f", "-",
                              input=json.dumps(owner_access_policy(profile, OWNER, env)))
        play_kfam_add_contributor(kube, profile, CONTRIBUTOR, "edit",
                                  principals=(env["ISTIO_INGRESS_GATEWAY_PRINCIPAL"], env["KFP_UI_PRINCIPAL"]))
        control_plane.kubectl("apply", "-f", "-", input=json.dumps(notebook_virtualservice(
            profile, "nb", "%s/kubeflow-gateway" % kf_ns)))

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
        path = "/notebook/%s/nb/lab" % profile

        def through_the_route(user, groups, headers):
            """A browser request through the Route: (reached the notebook as, where it stopped)."""
            allowed, _reason = oauth_proxy_lets_in(kube, args["--openshift-sar"], user, groups)
            if not allowed:
                return None, "oauth-proxy: 403"
            # oauth-proxy sets x-forwarded-user to the user it logged in, whatever the client sent
            return to_the_gateway(proxy_pod, dict(headers, **{"X-Forwarded-User": user}))

        def to_the_gateway(source, headers):
            if not network_allows(kube, source, gateway_pod):
                return None, "gateway: no network path"
            headers = run_gateway_lua(lua, headers)
            host, _path = route_for(kube, path, gateway_pod["labels"], info["namespace"])
            assert host == "nb.%s.svc.cluster.local" % profile, host
            return at_the_notebook(info["principal"], headers)

        def at_the_notebook(principal, headers):
            request = {"principal": principal, "headers": headers, "path": path, "method": "GET", "port": 8888}
            allowed, reason = authz.decide(policies, request, profile, {"notebook-name": "nb"},
                                           root_namespace=info["mesh_namespace"] if flavour == "ossm2" else "istio-system")
            return (headers.get("kubeflow-userid"), "notebook") if allowed else (None, "notebook: " + reason)

        tenant_pod = {"namespace": other, "labels": {"notebook-name": "carols"}}
        tenant_principal = "cluster.local/ns/%s/sa/default-editor" % other
        table = [
            ("owner", through_the_route(OWNER, [USERS_GROUP], {}), OWNER),
            ("contributor", through_the_route(CONTRIBUTOR, [USERS_GROUP], {}), CONTRIBUTOR),
            ("stranger", through_the_route(STRANGER, [USERS_GROUP], {}), None),
            ("cluster admin", through_the_route(ADMIN, [USERS_GROUP, "system:masters"], {}), None),
            ("stranger claiming to be the owner", through_the_route(
                STRANGER, [USERS_GROUP], {"X-Forwarded-User": OWNER, "kubeflow-userid": OWNER}), None),
            ("not in the users group", through_the_route("robot", [], {}), None),
            ("tenant pod to the gateway", to_the_gateway(
                tenant_pod, {"x-forwarded-user": OWNER, "kubeflow-userid": OWNER}), None),
            ("tenant pod to the notebook", at_the_notebook(tenant_principal, {"kubeflow-userid": OWNER}), None),
            ("tenant pod without mTLS", at_the_notebook("", {"kubeflow-userid": OWNER}), None),
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
    finally:
        assert playbook("uninstall", {"kfocp_instance": instance}).rc == 0
