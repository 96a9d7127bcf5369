"""The AuthorizationPolicy evaluator, rule by rule as Istio documents them, and on the profile
controller's real four-rule ns-owner-access-istio (shared/facts/profile-controller.md)."""
import pytest

import standins
from ansible_collections.kfocp.kubeflow.plugins.module_utils import authz
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import profiles

GATEWAY = "cluster.local/ns/kubeflow-mesh/sa/kubeflow-ingressgateway-service-account"
UPSTREAM_GATEWAY = standins.DEFAULT_ENV["ISTIO_INGRESS_GATEWAY_PRINCIPAL"]
KFP_UI = standins.DEFAULT_ENV["KFP_UI_PRINCIPAL"]
NOTEBOOK_CONTROLLER = standins.DEFAULT_ENV["NOTEBOOK_CONTROLLER_PRINCIPAL"]


def policy(name, namespace, rules=None, action=None, selector=None):
    spec = {}
    if rules is not None:
        spec["rules"] = rules
    if action:
        spec["action"] = action
    if selector:
        spec["selector"] = {"matchLabels": selector}
    return {"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def request(principal="", headers=None, path="/", method="GET", port=8888, host="nb.team-a.svc"):
    return {"principal": principal, "headers": headers or {}, "path": path, "method": method, "port": port,
            "host": host}


def owner_access_policy(profile, owner, env=None):
    """ns-owner-access-istio as the profile controller writes it: the stand-in's."""
    return standins.owner_access_policy(profile, owner, env)


@pytest.mark.parametrize("pattern, value, expected", [
    ("abc", "abc", True), ("abc", "abcd", False), ("abc*", "abcd", True), ("abc*", "xabc", False),
    ("*abc", "xabc", True), ("*abc", "abcx", False), ("*", "x", True), ("*", "", False), ("*", None, False),
    ("", "", True), ("abc", None, False),
])
def test_match_value_exact_prefix_suffix_presence(pattern, value, expected):
    assert authz.match_value(pattern, value) is expected


def test_source_namespace_comes_from_the_principal():
    assert authz.source_namespace("cluster.local/ns/team-a/sa/default-editor") == "team-a"
    assert authz.source_namespace("") == "" and authz.source_namespace("spiffe-ish") == ""


def test_no_policy_allows_and_an_allow_policy_that_does_not_match_denies():
    assert authz.decide([], request(), "team-a")[0] is True
    only_gw = policy("gw", "team-a", [{"from": [{"source": {"principals": [GATEWAY]}}]}])
    assert authz.decide([only_gw], request(GATEWAY), "team-a") == (True, "allowed by team-a/gw")
    allowed, reason = authz.decide([only_gw], request("cluster.local/ns/x/sa/y"), "team-a")
    assert allowed is False and "no ALLOW policy matches (team-a/gw)" == reason


def test_allow_without_rules_denies_everything_and_an_empty_rule_allows_everything():
    assert authz.decide([policy("none", "team-a")], request(GATEWAY), "team-a")[0] is False
    assert authz.decide([policy("all", "team-a", [{}])], request(), "team-a")[0] is True


def test_deny_wins_over_allow_and_a_deny_without_rules_denies_nothing():
    allow_all = policy("all", "team-a", [{}])
    deny_spoof = policy("no-spoof", "team-a", action="DENY", rules=[
        {"from": [{"source": {"notPrincipals": [GATEWAY]}}],
         "when": [{"key": "request.headers[kubeflow-userid]", "values": ["*"]}]}])
    spoof = request("cluster.local/ns/team-b/sa/default-editor", {"kubeflow-userid": "alice"})
    assert authz.decide([allow_all, deny_spoof], spoof, "team-a") == (False, "denied by team-a/no-spoof")
    assert authz.decide([allow_all, deny_spoof], request(GATEWAY, {"kubeflow-userid": "alice"}), "team-a")[0]
    assert authz.decide([allow_all, deny_spoof], request("cluster.local/ns/team-b/sa/x"), "team-a")[0]
    assert authz.decide([allow_all, policy("empty-deny", "team-a", action="DENY")], request(), "team-a")[0]


def test_custom_goes_first_and_its_denial_is_final():
    custom = policy("ext", "team-a", [{"to": [{"operation": {"paths": ["/secure/*"]}}]}], action="CUSTOM")
    allow_all = policy("all", "team-a", [{}])
    assert authz.decide([custom, allow_all], request(path="/secure/x"), "team-a",
                        custom=lambda p, r: False) == (False, "denied by the external authorizer of team-a/ext")
    assert authz.decide([custom, allow_all], request(path="/secure/x"), "team-a", custom=lambda p, r: True)[0]
    # a CUSTOM allow does not override a DENY
    deny = policy("deny", "team-a", [{}], action="DENY")
    assert authz.decide([custom, deny], request(path="/secure/x"), "team-a", custom=lambda p, r: True)[0] is False
    with pytest.raises(authz.PolicyError, match="no external authorizer"):
        authz.decide([custom], request(path="/secure/x"), "team-a")
    # not matching: the authorizer is not asked
    assert authz.decide([custom], request(path="/open"), "team-a")[0] is True


def test_which_policies_apply_namespace_selector_and_root_namespace():
    sel = policy("sel", "team-a", [{}], action="DENY", selector={"app": "nb"})
    other_ns = policy("other", "team-b", [{}], action="DENY")
    root = policy("root", "istio-system", [{}], action="DENY", selector={"istio": "ingressgateway"})
    assert authz.decide([sel, other_ns, root], request(), "team-a", {"app": "web"})[0] is True
    assert authz.decide([sel], request(), "team-a", {"app": "nb"})[0] is False
    assert authz.decide([root], request(), "kubeflow-mesh", {"istio": "ingressgateway"})[0] is False
    assert authz.decide([root], request(), "kubeflow-mesh", {"istio": "ingressgateway"},
                        root_namespace="kubeflow-mesh")[0] is True, "istio-system is not the root namespace then"


def test_a_rule_needs_from_to_and_when_and_entries_are_alternatives():
    rule = {"from": [{"source": {"principals": [GATEWAY]}}, {"source": {"namespaces": ["team-a"]}}],
            "to": [{"operation": {"methods": ["GET"], "paths": ["/api/*"]}}],
            "when": [{"key": "request.headers[x-env]", "values": ["prod"]}]}
    allow = policy("r", "team-a", [rule])
    ok = request(GATEWAY, {"X-Env": "prod"}, path="/api/v1")
    assert authz.decide([allow], ok, "team-a")[0]
    assert authz.decide([allow], dict(ok, principal="cluster.local/ns/team-a/sa/x"), "team-a")[0]
    for broken in (dict(ok, principal=""), dict(ok, method="POST"), dict(ok, path="/ui"), dict(ok, headers={})):
        assert authz.decide([allow], broken, "team-a")[0] is False, broken


def test_without_mtls_principals_and_namespaces_do_not_match_but_their_not_fields_do():
    plaintext = request("", {"kubeflow-userid": "alice"})
    assert not authz.rule_matches({"from": [{"source": {"principals": ["*"]}}]}, plaintext)
    assert not authz.rule_matches({"from": [{"source": {"namespaces": ["*"]}}]}, plaintext)
    assert authz.rule_matches({"from": [{"source": {"notPrincipals": [GATEWAY]}}]}, plaintext)
    assert not authz.rule_matches({"when": [{"key": "source.namespace", "values": ["team-a"]}]}, plaintext)


def test_not_values_and_header_names_in_any_case():
    rule = {"when": [{"key": "request.headers[Kubeflow-Userid]", "notValues": ["admin*"]}]}
    assert authz.rule_matches(rule, request(headers={"kubeflow-userid": "alice"}))
    assert not authz.rule_matches(rule, request(headers={"KUBEFLOW-USERID": "admin@corp"}))


def test_what_it_cannot_decide_is_an_error_not_a_guess():
    with pytest.raises(authz.PolicyError, match="when.key request.auth.claims"):
        authz.rule_matches({"when": [{"key": "request.auth.claims[groups]", "values": ["a"]}]}, request())
    with pytest.raises(authz.PolicyError, match="from.source.serviceAccounts"):
        authz.rule_matches({"from": [{"source": {"serviceAccounts": ["a"]}}]}, request())
    with pytest.raises(authz.PolicyError, match="action 'LOG'"):
        authz.decide([policy("x", "team-a", [{}], action="LOG")], request(), "team-a")


# ---------------------------------------------------------------- the profile controller's policy

PROFILE = "team-a"
KFOCP_ENV = {"ISTIO_INGRESS_GATEWAY_PRINCIPAL": GATEWAY, "KFP_UI_PRINCIPAL": KFP_UI}


@pytest.mark.parametrize("who, req, allowed", [
    ("owner through kfocp's gateway", request(GATEWAY, {"kubeflow-userid": "alice"}), True),
    ("owner through the pipelines UI", request(KFP_UI, {"kubeflow-userid": "alice"}), True),
    ("another user through the gateway", request(GATEWAY, {"kubeflow-userid": "bob"}), False),
    ("no user header through the gateway", request(GATEWAY), False),
    ("a pod of the profile itself", request("cluster.local/ns/team-a/sa/default-editor"), True),
    ("a tenant pod spoofing the owner", request("cluster.local/ns/team-b/sa/default-editor",
                                                {"kubeflow-userid": "alice"}), False),
    ("a pod without mTLS spoofing the owner", request("", {"kubeflow-userid": "alice"}), False),
    ("a Knative probe", request("", path="/healthz"), True),
    ("metrics", request("", path="/metrics"), True),
    ("the notebook controller's kernel check", request(NOTEBOOK_CONTROLLER, path="/notebook/team-a/nb/api/kernels"),
     True),
    ("the notebook controller elsewhere", request(NOTEBOOK_CONTROLLER, path="/notebook/team-a/nb/lab"), False),
    ("the notebook controller posting kernels", request(NOTEBOOK_CONTROLLER, path="/x/api/kernels", method="POST"),
     False),
])
def test_profile_controllers_owner_policy_with_kfocps_principals(who, req, allowed):
    verdict, reason = authz.decide([owner_access_policy(PROFILE, "alice", KFOCP_ENV)], req, PROFILE)
    assert verdict is allowed, (who, reason)


def test_without_the_principal_set_every_owner_request_from_kfocps_gateway_is_denied():
    """What the issue found: the controller's default trusts istio-system's gateway only."""
    upstream = owner_access_policy(PROFILE, "alice")
    assert authz.decide([upstream], request(GATEWAY, {"kubeflow-userid": "alice"}), PROFILE)[0] is False
    assert authz.decide([upstream], request(UPSTREAM_GATEWAY, {"kubeflow-userid": "alice"}), PROFILE)[0] is True


CONTRIBUTOR_REQUESTS = [
    ("the contributor through kfocp's gateway", request(GATEWAY, {"kubeflow-userid": "bob@example.com"})),
    ("the contributor through the pipelines UI", request(KFP_UI, {"kubeflow-userid": "bob@example.com"})),
    ("the contributor through upstream's gateway", request(UPSTREAM_GATEWAY, {"kubeflow-userid": "bob@example.com"})),
    ("the contributor's short name", request(GATEWAY, {"kubeflow-userid": "bob"})),
    ("another user", request(GATEWAY, {"kubeflow-userid": "carol"})),
    ("a tenant pod spoofing the contributor", request("cluster.local/ns/team-b/sa/default-editor",
                                                      {"kubeflow-userid": "bob@example.com"})),
    ("no mTLS", request("", {"kubeflow-userid": "bob@example.com"})),
]


def kfam_policy(user, role, env):
    return [o for o in standins.kfam_contributor_objects(PROFILE, user, role, env) if o["kind"] == "AuthorizationPolicy"][0]


def test_a_kfam_contributor_policy_adds_exactly_that_user():
    owner = owner_access_policy(PROFILE, "alice", KFOCP_ENV)
    contributor = kfam_policy("bob@example.com", "edit", KFOCP_ENV)
    got = dict((who, authz.decide([owner, contributor], req, PROFILE)[0]) for who, req in CONTRIBUTOR_REQUESTS)
    alone = dict((who, authz.decide([owner], req, PROFILE)[0]) for who, req in CONTRIBUTOR_REQUESTS)
    assert [who for who in got if got[who] != alone[who]] == [
        "the contributor through kfocp's gateway", "the contributor through the pipelines UI"]
    assert not any(alone.values())


def test_kfocps_contributor_policy_admits_what_kfams_admits():
    """The profiles role writes a contributor's policy under KFAM's name, so that the dashboard
    manages it: it must admit exactly what KFAM's would, with the principals KFAM is given."""
    settings = {"profiles_userid_header": "kubeflow-userid", "profiles_userid_prefix": "",
                "profiles_authz_principals": [KFOCP_ENV["ISTIO_INGRESS_GATEWAY_PRINCIPAL"], KFOCP_ENV["KFP_UI_PRINCIPAL"]]}
    ours = [o for o in profiles._user_access(PROFILE, "bob@example.com", "edit", settings)  # pylint: disable=protected-access
            if o["kind"] == "AuthorizationPolicy"][0]
    theirs = kfam_policy("bob@example.com", "edit", KFOCP_ENV)
    assert ours["metadata"]["name"] == theirs["metadata"]["name"]
    for who, req in CONTRIBUTOR_REQUESTS:
        assert authz.decide([ours], req, PROFILE)[0] is authz.decide([theirs], req, PROFILE)[0], who
