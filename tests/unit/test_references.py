"""The reference check (plugins/module_utils/references.py) on upstream's own renders of `example`
(kubeflow/manifests v1.10.2, v1.11.0, 26.03, ../shared/upstream), on kfocp's adaptation of them, and
on breakages planted in them, each of which it must report with both objects and the field.

Upstream's render holds every object its references name (istio-system's gateway and istiod,
oauth2-proxy, Dex, Knative): the check reports only the two login paths upstream runs without a
proxy (Dex's /dex/ and oauth2-proxy's /oauth2/, whose namespaces are not labelled for injection,
so no AuthorizationPolicy guards them), lists the hosts of KEDA, which upstream does not install,
as skipped, metadata-envoy's /ml_metadata (its pods say sidecar.istio.io/inject: "false") as
having no proxy, and KFAM's /kfam/ (admitted from the central dashboard only) as internal."""
import copy
import functools
import gzip

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils import references as R
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import manifests as m
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh
from gomod import module_dir
from helpers import ROOT

UPSTREAM = ROOT.parent / "shared" / "upstream"
RELEASES = ("v1.10.2", "v1.11.0", "26.03")
UPSTREAM_PRINCIPAL = "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"
DEFAULTS = yaml.safe_load((ROOT / "roles" / "components" / "defaults" / "main.yml").read_text())
needs_upstream = pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/upstream (upstream's renders) is absent")
# what upstream's own render is reported for: its login flow, whose workloads get no proxy
LOGIN_PATHS = [("VirtualService", "auth", "dex", "/dex/", "Deployment", "dex"),
               ("VirtualService", "oauth2-proxy", "oauth2-proxy", "/oauth2/", "Deployment", "oauth2-proxy")]
ISTIO = ("istio.io/istio", "v0.0.0-20260827124520-eed52ebb66ad")
KUBERNETES = ("k8s.io/kubernetes", "v1.36.4")
KNATIVE_SERVING = ("knative.dev/serving", "v0.42.2")


@functools.lru_cache(maxsize=None)
def _render(release):
    with gzip.open(str(UPSTREAM / ("example-render-%s.yaml.gz" % release)), "rt") as stream:
        return tuple(obj for obj in yaml.load_all(stream, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if obj)


def render(release):
    return copy.deepcopy(list(_render(release)))


def upstream_check(objs, **more):
    args = dict(gateway_principals=[UPSTREAM_PRINCIPAL], gateway="kubeflow/kubeflow-gateway",
                root_namespace="istio-system")
    args.update(more)
    return R.check(objs, **args)


def assembled(release, namespace):
    """Upstream's render as the components role adapts it by default (Service Mesh 3's gateway)."""
    objs, info = _assembled(release, namespace)
    return copy.deepcopy(list(objs)), info


@functools.lru_cache(maxsize=None)
def _assembled(release, namespace):
    info = mesh.gateway_info({"flavour": "ossm3"})
    options = {"namespace": namespace, "api_versions": {"security.istio.io/AuthorizationPolicy": "v1"},
               "principals": {"ISTIO_INGRESS_GATEWAY_PRINCIPAL": info["principal"],
                              "KFP_UI_PRINCIPAL": "cluster.local/ns/%s/sa/ml-pipeline-ui" % namespace},
               "sidecar": {}, "logout_url": DEFAULTS["components_dashboard_logout_url"]}
    return tuple(m.assemble({"example": render(release)}, options)["objects"]), info


def kfocp_check(objs, info, namespace):
    return R.check(objs, [info["principal"]], "%s/kubeflow-gateway" % namespace, info["mesh_namespace"])


def brief(result):
    return sorted((f["check"], f["source"]["kind"], f["source"]["namespace"], f["source"]["name"], f["field"],
                   f["value"], f["target"]["kind"], f["target"]["namespace"], f["target"]["name"])
                  for f in result["findings"])


def login_paths(result):
    return sorted((f["source"]["kind"], f["source"]["namespace"], f["source"]["name"], f["value"],
                   f["target"]["kind"], f["target"]["name"]) for f in result["findings"]
                  if f["check"] == "path" and f["problem"].startswith("has no proxy"))


def find(objs, kind, name, namespace="kubeflow"):
    return next(o for o in objs if o["kind"] == kind and o["metadata"]["name"] == name
                and o["metadata"].get("namespace") == namespace)


@needs_upstream
@pytest.mark.parametrize("release", RELEASES)
def test_upstreams_own_render_holds_every_reference_but_its_login_flow(release):
    result = upstream_check(render(release))
    assert login_paths(result) == LOGIN_PATHS
    assert len(result["findings"]) == len(LOGIN_PATHS), [f["msg"] for f in result["findings"]]
    # the check did look: every principal, host, backend and path of the render
    assert result["checked"]["principals"] >= 25 and result["checked"]["hosts"] >= 30, result["checked"]
    assert result["checked"]["backends"] >= 11 and result["checked"]["paths"] == 11, result["checked"]
    assert result["skipped"] == {"keda": ["ConfigMap kubeflow/inferenceservice-config data.opentelemetryCollector"]}
    assert result["no_proxy"] == ["VirtualService kubeflow/metadata-grpc /ml_metadata "
                                  "Deployment kubeflow/metadata-envoy-deployment"]
    assert result["internal"] == ["VirtualService kubeflow/profiles-kfam /kfam/ Deployment kubeflow/profiles-deployment"]


@needs_upstream
@pytest.mark.parametrize("release", RELEASES)
def test_upstreams_render_seen_from_kfocps_gateway_refuses_every_ui(release):
    """Before kfocp rewrites them, upstream's web-app policies admit istio-system's gateway only:
    from the gateway kfocp runs, each UI path is refused, and the check says so."""
    info = mesh.gateway_info({"flavour": "ossm3"})
    result = upstream_check(render(release), gateway_principals=[info["principal"]])
    refused = sorted(f["value"] for f in result["findings"] if "refuses a logged-in user" in f["problem"])
    assert {"/", "/jupyter/", "/volumes/", "/tensorboards/", "/katib/", "/pipeline", "/kserve-endpoints/"} <= \
        set(refused)


@needs_upstream
@pytest.mark.parametrize("namespace", ["kubeflow", "ml"])
@pytest.mark.parametrize("release", RELEASES)
def test_kfocps_adaptation_keeps_every_reference(release, namespace):
    """components_namespace moves every reference with the objects: the check finds on kfocp's
    adaptation what it finds on upstream's render, the login flow kfocp does not install."""
    objs, info = assembled(release, namespace)
    result = kfocp_check(objs, info, namespace)
    assert [f["msg"] for f in result["findings"] if f["check"] != "path" or not f["problem"].startswith(
        "has no proxy")] == []
    assert login_paths(result) == LOGIN_PATHS  # auth and oauth2-proxy are not moved
    assert result["checked"]["paths"] == 11


# ---------------------------------------------------------------- planted breakages

@needs_upstream
@pytest.mark.parametrize("release", RELEASES)
def test_a_principal_of_a_missing_service_account_is_reported(release):
    objs = render(release)
    policy = find(objs, "AuthorizationPolicy", "ml-pipeline")
    principals = policy["spec"]["rules"][0]["from"][0]["source"]["principals"]
    principals[0] = "cluster.local/ns/kubeflow/sa/ml-pipeline-gone"
    policy["spec"]["rules"].append({"when": [{"key": "source.principal",
                                              "notValues": ["cluster.local/ns/kubeflow/sa/also-gone"]}]})
    when = len(policy["spec"]["rules"]) - 1
    assert [f for f in brief(upstream_check(objs)) if f[0] == "principal"] == [
        ("principal", "AuthorizationPolicy", "kubeflow", "ml-pipeline", "spec.rules[0].from[0].source.principals[0]",
         "cluster.local/ns/kubeflow/sa/ml-pipeline-gone", "ServiceAccount", "kubeflow", "ml-pipeline-gone"),
        ("principal", "AuthorizationPolicy", "kubeflow", "ml-pipeline", "spec.rules[%d].when[0].notValues[0]" % when,
         "cluster.local/ns/kubeflow/sa/also-gone", "ServiceAccount", "kubeflow", "also-gone")]


@needs_upstream
@pytest.mark.parametrize("release", RELEASES)
def test_a_virtualservice_to_a_missing_service_is_reported(release):
    objs = render(release)
    vs = find(objs, "VirtualService", "katib-ui")
    vs["spec"]["http"][0]["route"][0]["destination"]["host"] = "katib-ui-gone.kubeflow.svc.cluster.local"
    dr = find(objs, "DestinationRule", "ml-pipeline")
    dr["spec"]["host"] = "ml-pipeline-gone"  # a short name: a Service of the rule's namespace
    assert [f for f in brief(upstream_check(objs)) if f[0] == "host"] == [
        ("host", "DestinationRule", "kubeflow", "ml-pipeline", "spec.host", "ml-pipeline-gone",
         "Service", "kubeflow", "ml-pipeline-gone"),
        ("host", "VirtualService", "kubeflow", "katib-ui", "spec.http[0].route[0].destination.host",
         "katib-ui-gone.kubeflow.svc.cluster.local", "Service", "kubeflow", "katib-ui-gone")]


@needs_upstream
@pytest.mark.parametrize("release", RELEASES)
def test_an_env_value_or_configmap_value_naming_a_missing_service_is_reported(release):
    objs = render(release)
    dashboard = find(objs, "Deployment", "centraldashboard")
    env = dashboard["spec"]["template"]["spec"]["containers"][0]["env"]
    index = next(i for i, e in enumerate(env) if "profiles-kfam.kubeflow" in (e.get("value") or ""))
    env[index]["value"] = env[index]["value"].replace("profiles-kfam.kubeflow", "profiles-kfam-gone.kubeflow")
    config = find(objs, "ConfigMap", "inferenceservice-config")
    config["data"]["planted"] = '{"url": "http://model-store.kubeflow.svc:8080/v1"}'
    found = [f for f in brief(upstream_check(objs)) if f[0] == "host"]
    assert found == [
        ("host", "ConfigMap", "kubeflow", "inferenceservice-config", "data.planted", "model-store.kubeflow.svc",
         "Service", "kubeflow", "model-store"),
        ("host", "Deployment", "kubeflow", "centraldashboard",
         "spec.template.spec.containers[0].env[%d].value (%s)" % (index, env[index]["name"]), "profiles-kfam-gone.kubeflow",
         "Service", "kubeflow", "profiles-kfam-gone")]


@needs_upstream
@pytest.mark.parametrize("release", RELEASES)
def test_a_service_a_virtualservice_or_route_sends_to_that_selects_nothing_is_reported(release):
    objs = render(release)
    find(objs, "Service", "katib-ui")["spec"]["selector"] = {"app": "katib-ui-gone"}
    objs.append({"apiVersion": "route.openshift.io/v1", "kind": "Route", "metadata": {"name": "ui", "namespace": "kubeflow"},
                 "spec": {"host": "kubeflow.apps.example.com", "to": {"kind": "Service", "name": "centraldashboard-gone"}}})
    found = brief(upstream_check(objs))
    assert ("backend", "VirtualService", "kubeflow", "katib-ui", "spec.http[0].route[0].destination.host",
            "katib-ui.kubeflow.svc.cluster.local", "Service", "kubeflow", "katib-ui") in found
    assert ("host", "Route", "kubeflow", "ui", "spec.to.name", "centraldashboard-gone", "Service", "kubeflow",
            "centraldashboard-gone") in found
    assert len(found) == 2 + len(LOGIN_PATHS), found


@needs_upstream
def test_a_path_another_workload_may_reach_is_reported():
    objs = render("v1.11.0")
    selector = find(objs, "AuthorizationPolicy", "katib-ui")["spec"]["selector"]
    objs.append({"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
                 "metadata": {"name": "allow-all", "namespace": "kubeflow"},
                 "spec": {"selector": selector, "rules": [{}]}})
    found = [f for f in upstream_check(objs)["findings"] if f["value"] == "/katib/"]
    assert [(f["check"], f["target"]["name"]) for f in found] == [("path", "katib-ui")]
    assert "admits the request of another workload" in found[0]["problem"] and "kubeflow/allow-all" in found[0]["msg"]


@needs_upstream
def test_a_reference_left_in_upstreams_namespace_after_a_move_is_reported():
    """Installed into ml, a host still naming kubeflow, which does not exist, is a finding (not
    the host of a component that is not installed)."""
    objs, info = assembled("26.03", "ml")
    objs = [o for o in objs if not (o["kind"] == "Namespace" and o["metadata"]["name"] == "kubeflow")]
    dashboard = find(objs, "Deployment", "centraldashboard", "ml")
    env = dashboard["spec"]["template"]["spec"]["containers"][0]["env"]
    index = next(i for i, e in enumerate(env) if "profiles-kfam.ml" in (e.get("value") or ""))
    env[index]["value"] = env[index]["value"].replace("profiles-kfam.ml", "profiles-kfam.kubeflow")
    found = [f for f in kfocp_check(objs, info, "ml")["findings"] if f["check"] == "host"]
    assert [(f["source"]["name"], f["target"]["namespace"], f["target"]["name"]) for f in found] == [
        ("centraldashboard", "kubeflow", "profiles-kfam")]


# ---------------------------------------------------------------- what is not a reference

def _objects(*more):
    base = [{"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": "kubeflow", "labels": {"istio-injection": "enabled"}}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": "kubeflow"},
             "spec": {"selector": {"app": "api"}}},
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "api", "namespace": "kubeflow"},
             "spec": {"template": {"metadata": {"labels": {"app": "api"}}, "spec": {"containers": [{"name": "c"}]}}}}]
    return base + list(more)


def _config(**data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "kubeflow"}, "data": data}


@pytest.mark.parametrize("text, found", [
    ("http://api.kubeflow.svc.cluster.local:8888/apis", [("api", "kubeflow")]),
    ("api.kubeflow:8888", [("api", "kubeflow")]),
    ("grpc://api.kubeflow.svc", [("api", "kubeflow")]),
    ("gone.kubeflow.svc.cluster.local", [("gone", "kubeflow")]),
    ("x.other.svc", [("x", "other")]),
    ("docker.io/kubeflow/x:1 kubeflow.org/v1 app.kubernetes.io/name example.com", []),
    ("*.kubeflow.svc.cluster.local svc.cluster.local cluster.local", []),
    ("a.b.kubeflow.svc.cluster.local", []),
    ("pipelines.kubeflow.org", []),
])
def test_which_text_names_a_service(text, found):
    assert [(name, ns) for name, ns, _text in R.hosts_in(text, {"kubeflow"})] == found


def test_hosts_that_name_no_object_of_the_cluster_are_not_reported():
    objs = _objects(
        _config(_example="zipkin.istio-system.svc.cluster.local", domains="docker.io kubeflow.org",
                knative="knative-local-gateway.istio-system.svc.cluster.local", ok="api.kubeflow:80"),
        {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService", "metadata": {"name": "v", "namespace": "kubeflow"},
         "spec": {"hosts": ["gone.kubeflow.svc.cluster.local", "*"],
                  "http": [{"route": [{"destination": {"host": "api"}}]}]}},
        {"apiVersion": "networking.istio.io/v1", "kind": "ServiceEntry", "metadata": {"name": "s", "namespace": "kubeflow"},
         "spec": {"hosts": ["declared.kubeflow.svc.cluster.local"]}},
        {"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy", "metadata": {"name": "p", "namespace": "kubeflow"},
         "spec": {"rules": [{"from": [{"source": {"principals": ["cluster.local/ns/kubeflow/sa/*", "*"]}}]}]}})
    result = R.check(objs, absent_namespaces=["istio-system"])
    assert result["findings"] == []
    assert result["skipped"] == {"istio-system": ["ConfigMap kubeflow/c data.knative"]}
    # by default istio-system is not a namespace whose absence is expected: upstream's local gateway
    # there names a Service of an Istio kfocp does not run
    assert [f["target"]["name"] for f in R.check(objs)["findings"]] == ["knative-local-gateway"]
    assert R.check(_objects(_config(a="keda-otel-scaler.keda.svc:4317")))["skipped"] == {"keda": ["ConfigMap kubeflow/c data.a"]}


def test_a_custom_or_audit_policys_principals_and_an_exempt_gateway_are_not_reported():
    objs = _objects(*[{"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
                       "metadata": {"name": action.lower(), "namespace": "kubeflow"},
                       "spec": {"action": action, "provider": {"name": "x"} if action == "CUSTOM" else None,
                                "rules": [{"from": [{"source": {"principals": ["cluster.local/ns/mesh/sa/gw"]}}]}]}}
                      for action in ("ALLOW", "DENY", "CUSTOM", "AUDIT")])
    assert [f["source"]["name"] for f in R.check(objs)["findings"]] == ["allow", "deny"]
    assert R.check(objs, gateway_principals=["cluster.local/ns/mesh/sa/gw"])["findings"] == []


def test_a_principal_not_of_istios_form_is_reported():
    objs = _objects({"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
                     "metadata": {"name": "p", "namespace": "kubeflow"},
                     "spec": {"rules": [{"from": [{"source": {"notPrincipals": ["system:serviceaccount:kubeflow:api"]}}]}]}})
    found = R.check(objs)["findings"]
    assert [(f["field"], f["problem"]) for f in found] == [
        ("spec.rules[0].from[0].source.notPrincipals[0]",
         "is not a principal <trust domain>/ns/<namespace>/sa/<service account>")]


def test_only_the_namespaces_asked_for_are_checked():
    objs = _objects(_config(a="gone.kubeflow.svc"),
                    dict(_config(a="gone.kubeflow.svc"), metadata={"name": "c", "namespace": "elsewhere"}))
    assert [f["source"]["namespace"] for f in R.check(objs)["findings"]] == ["kubeflow", "elsewhere"]
    assert [f["source"]["namespace"] for f in R.check(objs, namespaces=["elsewhere"])["findings"]] == ["elsewhere"]


def test_a_path_to_a_workload_without_a_proxy_is_reported_unless_it_asks_for_none():
    gateway = {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService", "metadata": {"name": "v", "namespace": "kubeflow"},
               "spec": {"gateways": ["kubeflow-gateway"], "hosts": ["*"],
                        "http": [{"match": [{"uri": {"prefix": "/api/"}}], "route": [{"destination": {"host": "api"}}]}]}}
    objs = _objects(gateway)
    objs[0]["metadata"]["labels"] = {}
    found = R.check(objs, ["cluster.local/ns/mesh/sa/gw"], "kubeflow/kubeflow-gateway", "mesh")["findings"]
    assert [(f["check"], f["value"], f["problem"][:12]) for f in found] == [("path", "/api/", "has no proxy")]
    objs[2]["spec"]["template"]["metadata"]["annotations"] = {R.INJECT: "false"}
    result = R.check(objs, ["cluster.local/ns/mesh/sa/gw"], "kubeflow/kubeflow-gateway", "mesh")
    assert result["findings"] == [] and result["no_proxy"] == ["VirtualService kubeflow/v /api/ Deployment kubeflow/api"]


# ---------------------------------------------------------------- the upstream contracts it relies on

def test_the_principal_form_is_istios():
    """Istio's identity of a workload is spiffe://<trust domain>/ns/<namespace>/sa/<service account>
    (pkg/spiffe), and an AuthorizationPolicy's principal is matched against it without spiffe://
    (the authz model's principal generator)."""
    istio = module_dir(*ISTIO)
    if istio is None:
        pytest.skip("the Go module cache holds no %s@%s" % ISTIO)
    spiffe = (istio / "pkg" / "spiffe" / "spiffe.go").read_text()
    assert 'return URIPrefix + i.TrustDomain + "/ns/" + i.Namespace + "/sa/" + i.ServiceAccount' in spiffe
    assert 'URIPrefix    = Scheme + "://"' in spiffe and 'Scheme = "spiffe"' in spiffe
    generator = (istio / "pilot" / "pkg" / "security" / "authz" / "model" / "generator.go").read_text()
    assert "matcher.StringMatcherWithPrefix(value, spiffe.URIPrefix)" in generator
    found = R.PRINCIPAL.match("cluster.local/ns/kubeflow/sa/ml-pipeline-ui")
    assert found.groups() == ("cluster.local", "kubeflow", "ml-pipeline-ui")


def test_the_service_host_forms_are_kubernetes_and_istios():
    """A pod's resolver searches <ns>.svc.<domain>, svc.<domain> and <domain> (kubelet), so
    <name>.<namespace> and <name>.<namespace>.svc reach the Service whose name is
    <name>.<namespace>.svc.<domain> (Istio's Service hostname); a short name in an Istio rule is
    the rule's namespace's (ResolveShortnameToFQDN)."""
    kube = module_dir(*KUBERNETES)
    istio = module_dir(*ISTIO)
    if kube is None or istio is None:
        pytest.skip("the Go module cache holds no %s@%s or %s@%s" % (KUBERNETES + ISTIO))
    dns = (kube / "pkg" / "kubelet" / "network" / "dns" / "dns.go").read_text()
    assert 'nsSvcDomain := fmt.Sprintf("%s.svc.%s", pod.Namespace, c.ClusterDomain)' in dns
    assert 'svcDomain := fmt.Sprintf("svc.%s", c.ClusterDomain)' in dns
    conversion = (istio / "pilot" / "pkg" / "serviceregistry" / "kube" / "conversion.go").read_text()
    assert 'return host.Name(name + "." + namespace + "." + "svc" + "." + domainSuffix)' in conversion
    config = (istio / "pilot" / "pkg" / "model" / "config.go").read_text()
    assert 'out = out + "." + meta.Namespace' in config and 'out = out + ".svc." + meta.Domain' in config
    for text in ("api.kubeflow", "api.kubeflow.svc", "api.kubeflow.svc.cluster.local"):
        assert [(n, ns) for n, ns, _t in R.hosts_in(text, {"kubeflow"})] == [("api", "kubeflow")]
    assert R.short_host({"kind": "VirtualService", "metadata": {"namespace": "ml"}}, "api") == ("api", "ml")


def test_knatives_example_key_is_not_configuration():
    serving = module_dir(*KNATIVE_SERVING)
    if serving is None:
        pytest.skip("the Go module cache holds no %s@%s" % KNATIVE_SERVING)
    tracing = (serving / "config" / "core" / "configmaps" / "tracing.yaml").read_text()
    assert "  _example: |" in tracing and "This block is not actually functional configuration" in tracing
    assert list(R.host_fields(_config(_example="x.kubeflow.svc", real="y.kubeflow.svc"))) == [("data.real", "y.kubeflow.svc")]
