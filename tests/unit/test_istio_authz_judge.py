"""authz.py (the AuthorizationPolicy evaluator the request path tests use) held to Istio's own code:
the policies go through Istio's translation (pilot/pkg/security/authz/builder, selected for the
workload by namespace, labels and root namespace as istiod does for a sidecar: the judge
hack/istio/cmd/istio-authz) into the Envoy RBAC filters the sidecar gets, and the request is decided
by Envoy's RBAC rules (tests/envoy_rbac.py, each rule cited to envoyproxy/envoy's source). Both
verdicts must be the same, on the request-path cases kfocp has: the profile controller's owner
policy, KFAM's and kfocp's contributor policies, and upstream's real renders of each Kubeflow
release put through kfocp's assemble for every mesh flavour, on every path the kubeflow Gateway
publishes. Istio's validation must accept every policy kfocp writes."""
import itertools

import pytest

import envoy_rbac
import judges
import standins
from ansible_collections.kfocp.kubeflow.plugins.module_utils import authz
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import profiles
from cluster import ClusterError, build_istio_judge
from test_authz import policy

from test_upstream_renders import FLAVOURS, RELEASES, UPSTREAM_PRINCIPAL, UPSTREAM_ROOT, assembled, \
    gateway_paths, needs_upstream, render

PROFILE = "team-a"
OWNER, CONTRIBUTOR, STRANGER = "alice@example.com", "bob@example.com", "carol@example.com"
GATEWAYS = sorted(set(mesh.gateway_info(settings)["principal"] for settings in FLAVOURS.values()))
KFP_UI = standins.DEFAULT_ENV["KFP_UI_PRINCIPAL"]
NOTEBOOK_CONTROLLER = standins.DEFAULT_ENV["NOTEBOOK_CONTROLLER_PRINCIPAL"]
KFOCP_ENV = {"ISTIO_INGRESS_GATEWAY_PRINCIPAL": GATEWAYS[0], "KFP_UI_PRINCIPAL": KFP_UI}

# who sends the request (its mTLS principal, '' without mTLS), with which user header, to which path
PRINCIPALS = GATEWAYS + [UPSTREAM_PRINCIPAL, KFP_UI, NOTEBOOK_CONTROLLER,
                         "cluster.local/ns/%s/sa/default-editor" % PROFILE, "cluster.local/ns/team-b/sa/default-editor",
                         "cluster.local/ns/team-b/sa/runner", ""]
HEADERS = [{}, {"kubeflow-userid": OWNER}, {"Kubeflow-Userid": CONTRIBUTOR}, {"kubeflow-userid": "bob"},
           {"kubeflow-userid": STRANGER}, {"kubeflow-userid": ""}]
PATHS = ["/", "/notebook/%s/nb/lab" % PROFILE, "/notebook/%s/nb/api/kernels" % PROFILE, "/healthz", "/metrics?x=1",
         "/pipeline/apis/v2beta1/runs"]
METHODS = ["GET", "POST"]


@pytest.fixture(scope="module", autouse=True)
def istio_judge():
    try:
        return build_istio_judge()
    except ClusterError as err:
        pytest.skip("the istio-authz judge (hack/istio) cannot be built: %s" % str(err)[:500])


def requests():
    for principal, headers, path, method in itertools.product(PRINCIPALS, HEADERS, PATHS, METHODS):
        yield {"principal": principal, "headers": headers, "path": path, "method": method, "port": 8888,
               "host": "nb.%s.svc.cluster.local" % PROFILE}


def _authz(policies, request, namespace, labels, root):
    try:
        return authz.decide(policies, request, namespace, labels, root_namespace=root)
    except authz.PolicyError as err:
        return None, "authz.py cannot decide: %s" % err


def _envoy(workload, request):
    if workload["custom"]:
        return None, "a CUSTOM policy applies: ext_authz decides"
    try:
        return envoy_rbac.decide(workload["filters"], request)
    except envoy_rbac.Undecided as err:
        return None, "Envoy's RBAC, not modelled: %s" % err


def disagreements(policies, cases, root):
    """[(namespace, labels, request, authz.py's verdict, Istio's and Envoy's)] where they differ;
    `cases`: [(namespace, labels, [request])]. Istio's validation must accept every policy."""
    workloads, invalid = judges.istio_authz_workloads(policies, [(ns, labels) for ns, labels, _requests in cases], root)
    assert invalid == {}, "Istio's validation refuses: %s" % invalid
    out = []
    for (namespace, labels, reqs), workload in zip(cases, workloads):
        for request in reqs:
            ours, theirs = _authz(policies, request, namespace, labels, root), _envoy(workload, request)
            if ours[0] is not theirs[0]:
                out.append((namespace, labels, request, ours, theirs))
    return out


def describe(found, limit=12):
    return "\n".join("%s %s %s %s %s: authz.py %s, Istio+Envoy %s" % (
        ns, labels, r["method"], r["path"], {"principal": r["principal"], "headers": r["headers"]}, ours, theirs)
        for ns, labels, r, ours, theirs in found[:limit]) + ("\n(%d in all)" % len(found) if found else "")


# ---------------------------------------------------------------- a profile's policies

def profile_policies():
    """What a profile's namespace holds: the controller's owner policy, with kfocp's principals and
    with upstream's defaults, KFAM's contributor policy, and the one kfocp's profiles role writes."""
    settings = {"profiles_userid_header": "kubeflow-userid", "profiles_userid_prefix": "",
                "profiles_authz_principals": [KFOCP_ENV["ISTIO_INGRESS_GATEWAY_PRINCIPAL"], KFP_UI]}
    kfocp = [o for o in profiles._user_access(PROFILE, "bob", "edit", settings)  # pylint: disable=protected-access
             if o["kind"] == "AuthorizationPolicy"]
    kfam = [o for o in standins.kfam_contributor_objects(PROFILE, CONTRIBUTOR, "edit", KFOCP_ENV)
            if o["kind"] == "AuthorizationPolicy"]
    return {"kfocp's principals": [standins.owner_access_policy(PROFILE, OWNER, KFOCP_ENV)] + kfam + kfocp,
            "upstream's defaults": [standins.owner_access_policy(PROFILE, OWNER)]}


@pytest.mark.parametrize("which", ["kfocp's principals", "upstream's defaults"])
def test_a_profiles_policies_decide_as_istio_and_envoy_do(which):
    policies = profile_policies()[which]
    reqs = list(requests())
    cases = [(PROFILE, {"notebook-name": "nb"}, reqs), ("team-b", {"notebook-name": "nb"}, reqs[:50])]
    found = disagreements(policies, cases, "istio-system")
    assert found == [], describe(found)
    # it looked at both verdicts: the owner and the contributors are admitted, a stranger and a
    # request without a session are not
    verdict = dict(((r["principal"], tuple(r["headers"].items()), r["path"], r["method"]),
                    authz.decide(policies, r, PROFILE, {"notebook-name": "nb"})[0]) for r in reqs)
    gateway = KFOCP_ENV["ISTIO_INGRESS_GATEWAY_PRINCIPAL"] if which.startswith("kfocp") else UPSTREAM_PRINCIPAL
    lab = "/notebook/%s/nb/lab" % PROFILE
    assert verdict[(gateway, (("kubeflow-userid", OWNER),), lab, "GET")] is True
    assert verdict[(gateway, (("kubeflow-userid", STRANGER),), lab, "GET")] is False
    assert verdict[(gateway, (), lab, "GET")] is False
    assert verdict[("", (("kubeflow-userid", OWNER),), lab, "GET")] is False
    if which.startswith("kfocp"):
        assert verdict[(gateway, (("Kubeflow-Userid", CONTRIBUTOR),), lab, "GET")] is True
        assert verdict[(gateway, (("kubeflow-userid", "bob"),), lab, "GET")] is True


# ---------------------------------------------------------------- Istio's documented rules, one by one

GATEWAY = GATEWAYS[0]
RULE_SETS = {
    "no policy": [],
    "ALLOW without rules": [policy("none", PROFILE)],
    "an empty rule": [policy("all", PROFILE, [{}])],
    "DENY with notPrincipals and a header": [
        policy("all", PROFILE, [{}]),
        policy("no-spoof", PROFILE, action="DENY", rules=[{"from": [{"source": {"notPrincipals": [GATEWAY]}}],
                                                           "when": [{"key": "request.headers[kubeflow-userid]",
                                                                     "values": ["*"]}]}])],
    "from, to and when": [policy("r", PROFILE, [{
        "from": [{"source": {"principals": [GATEWAY]}}, {"source": {"namespaces": [PROFILE]}}],
        "to": [{"operation": {"methods": ["GET"], "paths": ["/notebook/*", "/healthz"]}}],
        "when": [{"key": "request.headers[kubeflow-userid]", "values": ["*@example.com"]}]}])],
    "not-fields": [policy("n", PROFILE, [{
        "from": [{"source": {"notNamespaces": ["team-b"], "notPrincipals": [KFP_UI]}}],
        "to": [{"operation": {"notPaths": ["/metrics"], "notMethods": ["POST"]}}],
        "when": [{"key": "request.headers[kubeflow-userid]", "notValues": ["carol*"]}]}])],
    "hosts in any case, and methods": [policy("h", PROFILE, [{"to": [{"operation": {
        "hosts": ["NB.Team-A.svc.cluster.local", "*.EXAMPLE.com"], "methods": ["GET", "PUT"]}}]}])],
    "source.principal, source.namespace and destination.port": [policy("w", PROFILE, [{"when": [
        {"key": "source.namespace", "values": ["team-*"]},
        {"key": "source.principal", "notValues": ["*/sa/default-editor"]},
        {"key": "destination.port", "values": ["8888"]}]}])],
    "selector and root namespace": [
        policy("sel", PROFILE, [{}], action="DENY", selector={"app": "web"}),
        policy("root", "istio-system", [{"from": [{"source": {"principals": ["*"]}}]}]),
        policy("elsewhere", "team-b", [{}], action="DENY")],
}


@pytest.mark.parametrize("name", sorted(RULE_SETS))
def test_each_documented_rule_decides_as_istio_and_envoy_do(name):
    reqs = list(requests())
    cases = [(PROFILE, {"notebook-name": "nb"}, reqs), (PROFILE, {"app": "web"}, reqs)]
    found = disagreements(RULE_SETS[name], cases, "istio-system")
    assert found == [], describe(found)


def test_istios_validation_refuses_what_authz_py_reads_as_never_matching():
    """A DENY policy without rules: authz.py reads it as denying nothing (the translation gives it a
    policy that never matches), and istiod's validation refuses it."""
    deny = policy("empty-deny", PROFILE, action="DENY")
    _workloads, invalid = judges.istio_authz_workloads([deny], [(PROFILE, {})])
    assert "DENY action without `rules` is meaningless" in invalid["%s/empty-deny" % PROFILE]
    assert authz.decide([policy("all", PROFILE, [{}]), deny], next(requests()), PROFILE)[0] is True


@pytest.mark.parametrize("mistake, rule_set", [
    ("ignores notPrincipals", "DENY with notPrincipals and a header"),
    ("reads source.namespace as the principal", "source.principal, source.namespace and destination.port"),
])
def test_the_comparison_finds_a_wrong_evaluator(monkeypatch, mistake, rule_set):
    """The oracle can fail: authz.py with one rule wrong disagrees with Istio and Envoy."""
    if mistake == "ignores notPrincipals":
        field = authz._field  # pylint: disable=protected-access
        monkeypatch.setattr(authz, "_field", lambda spec, name, value: True if name == "principals" and
                            "notPrincipals" in spec else field(spec, name, value))
    else:
        value = authz.condition_value
        monkeypatch.setattr(authz, "condition_value", lambda key, request: value(
            "source.principal" if key == "source.namespace" else key, request))
    found = disagreements(RULE_SETS[rule_set], [(PROFILE, {"notebook-name": "nb"}, list(requests()))], "istio-system")
    assert found, mistake


# ---------------------------------------------------------------- upstream's renders through assemble

def render_cases(objs, principal, namespace, other):
    """(namespace, labels, [requests]) for each path the kubeflow Gateway publishes: a logged-in user
    from the gateway, the same header from another workload, from no mTLS, and no header."""
    cases = []
    for path, where, labels in gateway_paths(objs, namespace):
        user = {"principal": principal, "headers": {"kubeflow-userid": OWNER}, "path": path + "x", "method": "GET"}
        cases.append((where, labels, [user, dict(user, principal=other), dict(user, principal=""),
                                      dict(user, headers={}), dict(user, method="POST"), dict(user, path=path)]))
    return cases


@needs_upstream
@pytest.mark.parametrize("release", RELEASES)
def test_upstreams_render_decides_as_istio_and_envoy_do(release):
    objs = render(release)
    policies = [o for o in objs if o.get("kind") == "AuthorizationPolicy"]
    cases = render_cases(objs, UPSTREAM_PRINCIPAL, "kubeflow", "cluster.local/ns/team-b/sa/default-editor")
    found = disagreements(policies, cases, UPSTREAM_ROOT)
    assert found == [], describe(found)


@needs_upstream
@pytest.mark.parametrize("flavour, namespace", [(flavour, "kubeflow") for flavour in sorted(FLAVOURS)] +
                         [("ossm3", "ml")])
@pytest.mark.parametrize("release", RELEASES)
def test_kfocps_assembled_release_decides_as_istio_and_envoy_do(release, flavour, namespace):
    objs, info = assembled(release, flavour, namespace)
    policies = [o for o in objs if o.get("kind") == "AuthorizationPolicy"]
    cases = render_cases(objs, info["principal"], namespace, "cluster.local/ns/team-b/sa/default-editor")
    assert len(cases) >= 7
    found = disagreements(policies, cases, info["mesh_namespace"])
    assert found == [], describe(found)
    # both admit the logged-in user from kfocp's gateway on the UIs, and refuse the other workload
    admitted = [path for (path, _ns, _labels), (_where, _l, reqs) in zip(gateway_paths(objs, namespace), cases)
                if authz.decide(policies, reqs[0], _ns, _labels, root_namespace=info["mesh_namespace"])[0]]
    assert {"/", "/jupyter/", "/volumes/", "/tensorboards/", "/katib/", "/pipeline"} <= set(admitted)
