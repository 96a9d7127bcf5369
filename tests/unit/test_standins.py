"""The stand-ins' pure parts against the facts of the controllers they play
(/work/shared/facts/profile-controller.md); tests/integration/test_standins_live.py runs them against
the API server. Each assertion fails if the stand-in is made kinder than the real controller."""
import json
import os
import shutil
import subprocess

import pytest

import standins
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh


@pytest.mark.parametrize("live, wanted, expected", [
    ({}, {"a": "1"}, {"a": "1"}),                                        # a missing key is added
    ({"a": "mine"}, {"a": "1"}, {"a": "mine"}),                          # a set key is never overwritten
    ({"istio-injection": "enabled"}, {"istio-injection": ""}, {}),       # the empty value removes
    ({"istio-injection": "enabled"}, {"istio.io/rev": "r1"}, {"istio-injection": "enabled", "istio.io/rev": "r1"}),
    ({"x": "1"}, {}, {"x": "1"}),                                        # labels it does not know are kept
])
def test_namespace_labels_only_added_when_missing(live, wanted, expected):
    assert standins.set_namespace_labels(live, wanted) == expected


def test_authorization_policy_has_the_four_upstream_rules_with_default_principals():
    spec = standins.authorization_policy_spec("team", "alice@example.com")
    assert spec["action"] == "ALLOW" and "selector" not in spec
    owner, same_namespace, probes, kernels = spec["rules"]
    assert owner["when"] == [{"key": "request.headers[kubeflow-userid]", "values": ["alice@example.com"]}]
    assert owner["from"] == [{"source": {"principals": [
        "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account",
        "cluster.local/ns/kubeflow/sa/ml-pipeline-ui"]}}]
    assert same_namespace == {"when": [{"key": "source.namespace", "values": ["team"]}]}
    assert probes == {"to": [{"operation": {"paths": ["/healthz", "/metrics", "/wait-for-drain"]}}]}
    assert kernels == {"from": [{"source": {"principals": [
        "cluster.local/ns/kubeflow/sa/notebook-controller-service-account"]}}],
        "to": [{"operation": {"methods": ["GET"], "paths": ["*/api/kernels"]}}]}


def test_authorization_policy_principals_and_userid_come_from_the_controller_environment():
    env = {"ISTIO_INGRESS_GATEWAY_PRINCIPAL": "cluster.local/ns/gw/sa/gateway",
           "KFP_UI_PRINCIPAL": "cluster.local/ns/kf/sa/ui", "NOTEBOOK_CONTROLLER_PRINCIPAL": "cluster.local/ns/kf/sa/nb",
           "UNRELATED": "x"}
    spec = standins.authorization_policy_spec("team", "alice", env, ("x-user", "id:"))
    assert spec["rules"][0]["from"][0]["source"]["principals"] == ["cluster.local/ns/gw/sa/gateway",
                                                                   "cluster.local/ns/kf/sa/ui"]
    assert spec["rules"][0]["when"][0] == {"key": "request.headers[x-user]", "values": ["id:alice"]}
    assert spec["rules"][3]["from"][0]["source"]["principals"] == ["cluster.local/ns/kf/sa/nb"]


@pytest.mark.parametrize("annotations, refused", [
    ({"owner": "alice"}, False),
    ({"owner": "bob"}, True),      # another user's project
    ({}, True),                    # no owner at all (an OpenShift project made by hand)
    ({"owner": "Alice"}, True),    # compared exactly
])
def test_an_existing_namespace_without_the_owner_is_refused(annotations, refused):
    namespace = {"metadata": {"name": "team", "annotations": annotations}}
    condition = standins.refusal(namespace, "alice")
    assert bool(condition) is refused
    if refused:
        assert condition["type"] == "Failed"
        assert condition["message"] == "namespace already exist, but not owned by profile creator alice"


def test_a_missing_namespace_is_not_refused():
    assert standins.refusal(None, "alice") is None


def test_the_service_mesh_2_operator_opens_each_gateway_unless_told_not_to():
    smcp = {"metadata": {"name": "basic", "namespace": "mesh"},
            "spec": {"version": "v2.6", "gateways": {"additionalIngress": {"gw": {
                "enabled": True, "service": {"metadata": {"labels": {"istio": "kf"}}}}}}}}
    found = standins.maistra_network_policies(smcp, ["team"])
    policies = dict(((p["metadata"]["namespace"], p["metadata"]["name"]), p["spec"]) for p in found)
    assert sorted(policies) == [("mesh", "gw"), ("mesh", "istio-expose-route-basic"), ("mesh", "istio-istiod-basic"),
                                ("mesh", "istio-mesh-basic"), ("team", "istio-expose-route-basic"),
                                ("team", "istio-mesh-basic")]
    # everything may reach the gateway's pods: no NetworkPolicy of anyone else can narrow that
    assert policies[("mesh", "gw")] == {"podSelector": {"matchLabels": {"istio": "kf"}},
                                        "policyTypes": ["Ingress"], "ingress": [{}]}
    assert policies[("team", "istio-mesh-basic")]["ingress"] == [
        {"from": [{"namespaceSelector": {"matchLabels": {"maistra.io/member-of": "mesh"}}}]}]
    assert policies[("mesh", "istio-expose-route-basic")] == policies[("team", "istio-expose-route-basic")]
    # only the policies not marked internal are copied into the members
    internal = sorted(p["metadata"]["name"] for p in found
                      if (p["metadata"].get("annotations") or {}).get("maistra.io/internal") == "true")
    assert internal == ["gw", "istio-istiod-basic"]
    # on by default: only an explicit false switches them off
    smcp["spec"]["security"] = {"manageNetworkPolicy": False}
    assert standins.maistra_network_policies(smcp, ["team"]) == []


def test_istiods_injection_webhook_for_a_revision_and_for_the_default_one():
    named = standins.istiod_injector_webhook("blue", "mesh")
    assert named["metadata"]["name"] == "istio-sidecar-injector-blue-mesh"
    assert [h["name"] for h in named["webhooks"]] == ["rev.namespace.sidecar-injector.istio.io",
                                                      "rev.object.sidecar-injector.istio.io"]
    assert named["webhooks"][0]["namespaceSelector"]["matchExpressions"][0] == {
        "key": "istio.io/rev", "operator": "In", "values": ["blue"]}
    assert all(h["failurePolicy"] == "Fail" and h["clientConfig"]["service"]["name"] == "istiod-blue"
               for h in named["webhooks"])
    default = standins.istiod_injector_webhook("default", "istio-system")
    assert default["metadata"]["name"] == "istio-sidecar-injector"
    assert len(default["webhooks"]) == 4 and default["webhooks"][2]["namespaceSelector"]["matchExpressions"] == [
        {"key": "istio-injection", "operator": "In", "values": ["enabled"]}]
    assert standins.istiod_service("blue", "mesh")["metadata"]["name"] == "istiod-blue"


def test_the_service_mesh_2_operator_labels_gateway_pods_from_the_service_labels_only():
    smcp = {"metadata": {"name": "basic", "namespace": "mesh"},
            "spec": {"gateways": {"additionalIngress": {
                "gw": {"enabled": True, "service": {"ports": [{"name": "http2", "port": 80, "targetPort": 8080}],
                                                    "metadata": {"labels": {"istio": "kf"}}},
                       "runtime": {"pod": {"metadata": {"labels": {"ignored": "yes"}}}}},
                "bare": {"runtime": {"pod": {"metadata": {"labels": {"istio": "kf"}}}}},
                "off": {"enabled": False}}}}}
    objs = dict(((o["kind"], o["metadata"]["name"]), o) for o in standins.maistra_gateway_objects(smcp))
    assert sorted(objs) == [("Deployment", "bare"), ("Deployment", "gw"), ("Service", "bare"), ("Service", "gw"),
                            ("ServiceAccount", "bare-service-account"), ("ServiceAccount", "gw-service-account")]
    template = objs[("Deployment", "gw")]["spec"]["template"]
    assert template["metadata"]["labels"] == {"istio": "kf", "maistra.io/gateway": "gw.mesh", "maistra-control-plane": "mesh"}
    assert template["spec"]["serviceAccountName"] == "gw-service-account"
    assert template["spec"]["containers"][0]["image"] != "auto"
    assert objs[("Service", "gw")]["spec"]["selector"] == {"istio": "kf"}
    # runtime.pod labels alone: the chart's default labels
    bare = objs[("Deployment", "bare")]["spec"]["template"]["metadata"]["labels"]
    assert bare["app"] == "istio-ingressgateway" and bare["istio"] == "ingressgateway"


def test_kfocps_gateway_selector_selects_the_pods_the_service_mesh_2_operator_runs():
    """The auth role's EnvoyFilter and NetworkPolicy and the components' Gateway select the
    gateway's pods with gateway_info's selector: it must match what the operator labels them."""
    objs = mesh.objects({"flavour": "ossm2"})
    smcp = [o for o in objs if o["kind"] == "ServiceMeshControlPlane"][0]
    info = mesh.gateway_info({"flavour": "ossm2"})
    deployments = [o for o in standins.maistra_gateway_objects(smcp) if o["kind"] == "Deployment"]
    assert [d["metadata"]["name"] for d in deployments] == [info["name"]]
    pod = deployments[0]["spec"]["template"]
    assert all(pod["metadata"]["labels"].get(k) == v for k, v in info["selector"].items())
    assert mesh.principal(deployments[0]["metadata"]["namespace"], pod["spec"]["serviceAccountName"]) == info["principal"]


def test_the_service_mesh_2_injector_adds_a_proxy_to_notebooks_only_with_kfocps_smcp():
    kfocps = [o for o in mesh.objects({"flavour": "ossm2"}) if o["kind"] == "ServiceMeshControlPlane"][0]
    operators_default = {"spec": {"version": "v2.6"}}  # smcp-templates/v2.6/base: autoInject false
    notebook = {"labels": {"notebook-name": "nb", "statefulset": "nb"}}
    assert standins.maistra_inject_required(kfocps, notebook) is True
    assert standins.maistra_inject_required(operators_default, notebook) is False
    said_no = {"labels": {"sidecar.istio.io/inject": "false"}, "annotations": {"sidecar.istio.io/inject": "true"}}
    assert standins.maistra_inject_required(kfocps, said_no) is False  # the label wins over the annotation
    assert standins.maistra_inject_required(operators_default, {"annotations": {"sidecar.istio.io/inject": "true"}})


# ---------------------------------------------------------------- oauth-proxy and OpenShift's OAuth server

# Go's own flag package is the judge of how oauth-proxy reads its arguments: this program defines
# the flags the stand-in reads with oauth-proxy's types and defaults (openshift/oauth-proxy main.go
# @ 2b9ee007290b0e1cb85737f3b37075343f9f4857) and every boolean flag of it, parses its arguments with
# flag.NewFlagSet(..., flag.ContinueOnError) as main.go does, and prints what it read.
GO_FLAGS = """package main

import (
    "encoding/json"
    "flag"
    "os"
)

func main() {
    flagSet := flag.NewFlagSet("oauth2_proxy", flag.ContinueOnError)
    out := map[string]interface{}{}
    for _, name := range []string{"client-id", "redirect-url", "proxy-prefix", "scope", "approval-prompt",
        "openshift-service-account", "config", "upstream", "openshift-sar", "https-address", "http-address"} {
        flagSet.String(name, "", "")
    }
    for _, name := range BOOLS {
        flagSet.Bool(name, false, "")
    }
    if err := flagSet.Parse(os.Args[1:]); err != nil {
        out["error"] = err.Error()
    }
    flagSet.Visit(func(f *flag.Flag) { out[f.Name] = f.Value.String() })
    json.NewEncoder(os.Stdout).Encode(out)
}
"""
ARGUMENTS = [
    ["--client-id=kubeflow-oauth-proxy", "--redirect-url=https://h/oauth/callback"],
    ["--client-id", "spaced", "-redirect-url", "https://h/oauth/callback", "--skip-provider-button"],
    ["--client-id=first", "--client-id=second", "--pass-user-headers=false"],
    ["--skip-provider-button", "--client-id", "x", "positional", "--redirect-url=https://late/"],
    ["--client-id=x", "--", "--redirect-url=https://late/"],
    ["--scope", "--client-id"],
    ["--http-address=", "--proxy-prefix=/p"],
]


@pytest.fixture(scope="module")
def go_flag_parse(tmp_path_factory):
    if not shutil.which("go"):
        pytest.skip("go is not installed (make build installs it)")
    source = tmp_path_factory.mktemp("goflags") / "main.go"
    bools = ", ".join('"%s"' % name for name in sorted(standins.OAUTH_PROXY_BOOLS))
    source.write_text(GO_FLAGS.replace("BOOLS", "[]string{%s}" % bools))
    binary = source.parent / "goflags"
    env = dict(os.environ, GOTOOLCHAIN="local", GOFLAGS="", GO111MODULE="off", CGO_ENABLED="0")
    subprocess.run(["go", "build", "-o", str(binary), str(source)], check=True, env=env, cwd=source.parent)

    def parse(args):
        return json.loads(subprocess.run([str(binary)] + args, check=True, capture_output=True, text=True).stdout)
    return parse


@pytest.mark.parametrize("args", ARGUMENTS)
def test_oauth_proxys_flags_are_read_as_gos_flag_package_reads_them(go_flag_parse, args):
    go = go_flag_parse(args)
    if "error" in go:
        with pytest.raises(AssertionError, match="oauth-proxy refuses its arguments"):
            standins.go_flags(args)
        return
    assert standins.go_flags(args) == go


def container(*args, env=None):
    return {"name": "oauth-proxy", "args": list(args), "env": env or []}


def test_the_client_id_comes_from_the_flag_else_the_environment_else_the_service_account():
    """options.go Resolve: a flag, else OAUTH2_PROXY_CLIENT_ID; Validate: with
    --openshift-service-account, the service account (providers/openshift LoadDefaults)."""
    env = [{"name": "OAUTH2_PROXY_CLIENT_ID", "value": "from-env"}]
    assert standins.oauth_proxy_options(container("--client-id=flag"), "ns")["client_id"] == "flag"
    assert standins.oauth_proxy_options(container(env=env), "ns")["client_id"] == "from-env"
    assert standins.oauth_proxy_options(container("--openshift-service-account=proxy"), "ns")["client_id"] == \
        "system:serviceaccount:ns:proxy"


@pytest.mark.parametrize("args, host, uri", [
    # the path is always <proxy-prefix>/callback (oauthproxy.go NewOAuthProxy)
    (("--redirect-url=https://h.example.com/oauth/callback",), "ignored", "https://h.example.com/oauth/callback"),
    (("--redirect-url=https://h.example.com/elsewhere",), "ignored", "https://h.example.com/oauth/callback"),
    (("--redirect-url=https://h.example.com/", "--proxy-prefix=/auth"), "x", "https://h.example.com/auth/callback"),
    # no host: the request's (GetRedirectURI), https while the cookie is secure
    ((), "req.example.com", "https://req.example.com/oauth/callback"),
    (("--redirect-url=/x", "--cookie-secure=false"), "req.example.com", "http://req.example.com/oauth/callback"),
])
def test_the_redirect_uri_oauth_proxy_sends(args, host, uri):
    assert standins.oauth_redirect_uri(standins.oauth_proxy_options(container(*args), "ns"), host) == uri


# osin's own cases (github.com/openshift/osin urivalidate_test.go TestURIValidate @
# 0f4d38c6e53fa6b5631fb3942222a9238e8e1be9, the version openshift/oauth-server @ f892602b vendors)
OSIN_VALID = [
    ("http://localhost:14000/appauth", "http://localhost:14000/appauth"),
    ("http://google.com", "http://google.com"),
    ("http://google.com", "http://google.com/redirect"),
    ("http://www.google.com/myapp", "http://www.google.com/myapp/"),
    ("http://www.google.com/myapp/", "http://www.google.com/myapp/"),
    ("http://www.google.com/myapp", "http://www.google.com/myapp/interface/implementation"),
    ("http://www.google.com/myapp/", "http://www.google.com/myapp/interface/implementation"),
    ("http://www.google.com/myapp", "http://www.google.com/myapp/.../..implementation../..."),
    ("http://www.google.com/traversal/../allowed", "http://www.google.com/traversal/../allowed/with/subpath"),
    ("https://mysafewebsite.com/secure/redirect", "https://mysafewebsite.com/secure/redirect/\\../\\../\\../evil"),
    ("http://www.google.com/myapp/redir", "http://www.google.com/myapp/redir?a=1&b=2"),
    ("http://127.0.0.1/callback", "http://127.0.0.1:8081/callback"),
    ("http://127.0.0.1/callback", "http://127.0.0.8:8081/callback"),
    ("http://127.0.0.1/callback", "http://[::1]:8081/callback"),
    ("http://127.0.0.1/callback", "http://127.0.0.1/callback"),
    ("http://127.0.0.1/callback", "http://[0:0:0:0:0:0:0:1]/callback"),
]
OSIN_INVALID = [
    ("http://localhost:14000/appauth", "http://localhost:14000/app"),
    ("http://localhost:14000/app/", "http://localhost:14000/app"),
    ("http://localhost:14000/appauth", "http://localhost:14000/appauthmodifiedpath"),
    ("http://www.google.com/myapp", "http://www2.google.com/myapp"),
    ("http://www.google.com/myapp", "https://www.google.com/myapp"),
    ("http://www.google.com/myapp", "http://www.google.com/myapp/.."),
    ("http://www.google.com/myapp", "http://www.google.com/myapp/../test"),
    ("http://www.google.com/myapp", "http://www.google.com/myapp../test"),
    ("https://mysafewebsite.com/secure/redirect", "https://mysafewebsite.com/secure%2fredirect/../evil"),
    ("https://example.com:8081/redirect", "https://example.com:8080/redirect"),
    ("http://127.0.0.1/callback", "http://localhost:8080/callback"),
    ("http://127.0.0.1/callback", "http://127.0.0.1:abc/callback"),
    ("custom://127.0.0.1/callback", "custom://127.0.0.1:8080/callback"),
    ("http://127.0.0.1/callback", "http://example.com:8081/callback"),
    ("http://127.0.0.1/callback", "http://example.com/callback"),
]


@pytest.mark.parametrize("base, redirect", OSIN_VALID)
def test_osins_valid_redirect_uris(base, redirect):
    assert standins.osin_validate_uri(base, redirect) is None


@pytest.mark.parametrize("base, redirect", OSIN_INVALID)
def test_osins_invalid_redirect_uris(base, redirect):
    assert standins.osin_validate_uri(base, redirect)


@pytest.mark.parametrize("client, refusal", [
    # kfocp's OAuthClient: its redirectURIs is the Route's host, oauth-proxy's callback is under it
    ({"redirectURIs": ["https://kf.apps.example.com"]}, None),
    ({"redirectURIs": ["https://other.example.com", "https://kf.apps.example.com/oauth"]}, None),
    # planted disagreements: another host, a path the callback is not under, no URIs, no client
    ({"redirectURIs": ["https://other.apps.example.com"]}, "invalid_request: redirect_uri "),
    ({"redirectURIs": ["https://kf.apps.example.com/oauth/callback/x"]}, "path prefix doesn't match"),
    ({"redirectURIs": []}, "unauthorized_client: OAuthClient kubeflow has no redirectURIs"),
    (None, "unauthorized_client: there is no OAuthClient kubeflow"),
])
def test_openshifts_oauth_server_checks_the_client_and_its_redirect_uris(client, refusal):
    found = standins.oauth_server_refusal(client, "kubeflow", "https://kf.apps.example.com/oauth/callback")
    assert (found is None) if refusal is None else (refusal in (found or "")), found


# ---------------------------------------------------------------- OLM and the mesh operators' status

# The JSON fields and values upstream declares (operator-framework/api @
# 3048ccdc52d1858783800c6d40305357aff66c8c, pkg/operators/v1alpha1/subscription_types.go
# SubscriptionStatus and SubscriptionState, installplan_types.go InstallPlanSpec and
# InstallPlanPhase; k8s.io/api core/v1 ObjectReference), which the gpu and serverless roles read.
SUBSCRIPTION_STATUS = {"currentCSV", "installedCSV", "installplan", "lastUpdated", "state", "installPlanGeneration",
                       "installPlanRef", "catalogHealth", "conditions"}
SUBSCRIPTION_STATES = {"", "UpgradeFailed", "UpgradeAvailable", "UpgradePending", "AtLatestKnown"}
OBJECT_REFERENCE = {"kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"}
INSTALL_PLAN_REFERENCE = {"apiVersion", "kind", "name", "uuid"}
INSTALL_PLAN_SPEC = {"catalogSource", "catalogSourceNamespace", "clusterServiceVersionNames", "approval", "approved",
                     "generation"}
INSTALL_PLAN_PHASES = {"", "Planning", "RequiresApproval", "Installing", "Complete", "Failed"}


def subscription_obj(approval=None):
    spec = {"name": "nfd", "channel": "stable"}
    if approval:
        spec["installPlanApproval"] = approval
    return {"metadata": {"name": "nfd", "namespace": "openshift-nfd", "uid": "u-1"}, "spec": spec}


@pytest.mark.parametrize("approval, approved, phase", [(None, True, "Installing"), ("Automatic", True, "Installing"),
                                                       ("Manual", False, "RequiresApproval")])
def test_olms_install_plan_is_approved_only_when_automatic(approval, approved, phase):
    """createInstallPlan (operator-lifecycle-manager @ 992bb097 catalog/operator.go)."""
    plan, status = standins.olm_install_plan(subscription_obj(approval), "install-nfd", "nfd.v1.0.0")
    assert set(plan["spec"]) <= INSTALL_PLAN_SPEC and status["phase"] in INSTALL_PLAN_PHASES
    assert plan["spec"]["approved"] is approved and status["phase"] == phase
    assert plan["spec"]["clusterServiceVersionNames"] == ["nfd.v1.0.0"]


@pytest.mark.parametrize("installed", [False, True])
def test_the_subscription_status_olm_writes_has_upstreams_fields(installed):
    plan = {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan", "spec": {"generation": 1},
            "metadata": {"name": "install-nfd", "namespace": "openshift-nfd", "uid": "p-1", "resourceVersion": "7"}}
    status = standins.olm_subscription_status(plan, "nfd.v1.0.0", installed)
    assert set(status) <= SUBSCRIPTION_STATUS and status["state"] in SUBSCRIPTION_STATES
    assert set(status["installPlanRef"]) <= OBJECT_REFERENCE and set(status["installplan"]) <= INSTALL_PLAN_REFERENCE
    # what the roles wait on (roles/gpu/tasks/install_plans.yml, roles/serverless/tasks/install_plans.yml)
    assert status["installPlanRef"]["name"] == "install-nfd" and status["currentCSV"] == "nfd.v1.0.0"
    # ensureSubscriptionCSVState: installedCSV and AtLatestKnown only once the CSV exists
    assert (status.get("installedCSV"), status["state"]) == (
        ("nfd.v1.0.0", "AtLatestKnown") if installed else (None, "UpgradePending"))


@pytest.mark.parametrize("kind, ready, reason", [
    ("ServiceMeshControlPlane", True, "ComponentsReady"), ("ServiceMeshControlPlane", False, "ComponentsNotReady"),
    ("Istio", True, "Ready"), ("Istio", False, "IstiodNotReady")])
def test_the_mesh_operators_ready_status(kind, ready, reason):
    """maistra/istio-operator maistra-2.5 @ 8143614c (status.go, readiness.go, reconciler.go) and
    sail-operator @ 328df99d (istio_controller.go, istiorevision_controller.go): status.observedGeneration
    the generation acted on, and a condition Ready with that reason; what roles/service_mesh waits on."""
    status = standins.mesh_ready_status(4, ready, kind)
    assert status["observedGeneration"] == 4
    [condition] = status["conditions"]
    wanted = ("Ready", "True" if ready else "False", reason)
    assert (condition["type"], condition["status"], condition["reason"]) == wanted
    assert set(condition) <= {"type", "status", "reason", "message", "lastTransitionTime"}
