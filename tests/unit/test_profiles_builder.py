"""Table tests of the profiles builder: names, quotas, owners, contributors, bad input."""
import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import profiles
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import (
    DNS_LABEL, ENSURE, OWNERSHIP, DefinitionError)


def user(name, *identities):
    return {"metadata": {"name": name}, "identities": list(identities)}


def group(name, *members):
    return {"metadata": {"name": name}, "users": list(members)}


def by_kind(objs, kind):
    return {(o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objs if o["kind"] == kind}


@pytest.mark.parametrize("username, taken, expected", [
    ("alice", (), "alice"),
    ("team-a-lead", (), "team-a-lead"),
    ("Alice", (), "alice-3bc510"),  # lossy: always suffixed, so a later "alice" cannot take it over
    ("alice@example.com", (), "alice-example-com-ff8d98"),
    ("alice", ("alice",), "alice-2bd806"),
    ("default", profiles.RESERVED, "default-37a8ee"),
    ("kube-x", profiles.RESERVED, "user-kube-x-26d5eb"),  # the suffixed name still matches kube-*
    ("...", (), "user-" + __import__("hashlib").sha256(b"...").hexdigest()[:6]),
])
def test_profile_names_are_sanitised_and_stable(username, taken, expected):
    name = profiles.profile_name(username, taken)
    assert name == expected
    assert len(name) <= 63 and DNS_LABEL.match(name)
    assert profiles.profile_name(username, taken) == name  # deterministic


def test_long_names_fit_a_dns_label():
    name = profiles.profile_name("a" * 80)
    assert len(name) <= 63 and DNS_LABEL.match(name) and name.startswith("a" * 50)


def test_binding_names_follow_the_dashboard():
    assert profiles.binding_name("User", "alice@example.com", "edit") == "user-alice-example-com-clusterrole-edit"
    assert profiles.binding_name("Group", "ML Team", "view") == "group-ml-team-clusterrole-view"


def test_declared_profile_with_defaults_and_quota_override():
    settings = {"profiles_quota_default": {"cpu": "8", "requests.nvidia.com/gpu": "1", "requests.storage": "100Gi"},
                "profiles_list": [{"name": "team-a", "owner": {"user": "alice"},
                                   "quota": {"requests.nvidia.com/gpu": 4, "requests.storage": None}}]}
    (profile,) = by_kind(profiles.objects(settings), "Profile").values()
    assert profile["apiVersion"] == "kubeflow.org/v1"
    assert profile["spec"]["owner"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}
    assert profile["spec"]["resourceQuotaSpec"]["hard"] == {"cpu": "8", "requests.nvidia.com/gpu": "4"}
    assert profile["metadata"]["labels"][profiles.SOURCE] == "declared"


def test_contributors_get_a_rolebinding_and_an_authorizationpolicy_like_the_dashboard():
    settings = {"profiles_list": [{"name": "team-a", "owner": {"user": "alice"},
                                   "contributors": [{"user": "bob@example.com", "role": "view"}]}],
                "profiles_userid_prefix": "oidc:", "profiles_authz_principals": ["cluster.local/ns/istio-system/sa/gw"]}
    objs = profiles.objects(settings)
    name = "user-bob-example-com-clusterrole-view"
    binding = by_kind(objs, "RoleBinding")[("team-a", name)]
    assert binding["roleRef"]["name"] == "kubeflow-view"
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob@example.com"}]
    assert binding["metadata"]["annotations"] == {"user": "bob@example.com", "role": "view", OWNERSHIP: ENSURE}
    policy = by_kind(objs, "AuthorizationPolicy")[("team-a", name)]
    assert policy["spec"]["rules"] == [{"when": [{"key": "request.headers[kubeflow-userid]", "values": ["oidc:bob@example.com"]}],
                                        "from": [{"source": {"principals": ["cluster.local/ns/istio-system/sa/gw"]}}]}]
    assert policy["spec"]["rules"] != [{}]


def test_group_owner_makes_every_member_a_contributor_and_follows_membership():
    settings = {"profiles_list": [{"name": "team-a", "owner": {"group": "team-a"},
                                   "contributors": [{"group": "auditors", "role": "view"}]}]}
    objs = profiles.objects(settings, groups=[group("team-a", "alice", "carol"), group("auditors", "erin")])
    bindings = sorted(key[1] for key in by_kind(objs, "RoleBinding"))
    assert bindings == ["group-auditors-clusterrole-view", "user-alice-clusterrole-edit", "user-carol-clusterrole-edit",
                        "user-erin-clusterrole-view"]
    assert by_kind(objs, "Profile")[(None, "team-a")]["spec"]["owner"]["kind"] == "Group"
    later = profiles.objects(settings, groups=[group("team-a", "carol"), group("auditors")])
    names = sorted(key[1] for key in by_kind(later, "RoleBinding"))
    assert names == ["group-auditors-clusterrole-view", "user-carol-clusterrole-edit"]


def test_automatic_profiles_from_users_with_provider_filter_and_exclusions():
    settings = {"profiles_auto_from_users": True, "profiles_auto_provider": "corp-sso",
                "profiles_auto_exclude": ["svc-*"], "profiles_reserved_names": list(profiles.RESERVED),
                "profiles_list": [{"name": "carol", "owner": {"user": "dan"}}]}
    users = [user("alice", "corp-sso:alice"), user("bob", "htpasswd:bob"), user("carol", "corp-sso:carol"),
             user("svc-ci", "corp-sso:svc-ci"), user("dan", "corp-sso:dan"), user("never", )]
    got = {p["metadata"]["name"]: p for p in profiles.objects(settings, users=users) if p["kind"] == "Profile"}
    # bob: other provider; svc-ci: excluded; dan: owns a declared profile; carol: name taken
    assert sorted(got) == ["alice", "carol", "carol-" + profiles.profile_name("carol", ("carol",))[6:]]
    assert got["alice"]["metadata"]["annotations"] == {profiles.USER_ANNOTATION: "alice"}
    assert got["alice"]["metadata"]["labels"][profiles.SOURCE] == "auto"


def test_hand_made_profiles_keep_their_names_and_their_owners_get_no_automatic_one():
    live = [{"metadata": {"name": "erin", "labels": {}}, "spec": {"owner": {"kind": "User", "name": "someone"}}},
            {"metadata": {"name": "x", "labels": {}}, "spec": {"owner": {"kind": "User", "name": "frank"}}}]
    settings = {"profiles_auto_from_users": True}
    names = [p["metadata"]["name"] for p in profiles.objects(settings, users=[user("erin", "a:b"), user("frank", "a:f")],
                                                             profiles=live) if p["kind"] == "Profile"]
    assert names == [profiles.profile_name("erin", ("erin",))]


def test_access_only_for_namespaces_that_exist():
    settings = {"profiles_list": [{"name": "a", "owner": {"user": "u"}, "contributors": [{"user": "v"}]},
                                  {"name": "b", "owner": {"user": "u"}, "contributors": [{"user": "v"}]}]}
    objs = profiles.objects(settings, namespaces=[{"metadata": {"name": "a"}}])
    assert sorted(set(o["metadata"].get("namespace") for o in objs if o["kind"] != "Profile")) == ["a"]
    assert profiles.pending(settings, namespaces=[{"metadata": {"name": "a"}}]) == ["b"]


def test_orphans_are_only_this_instances_profiles():
    settings = {"kfocp_instance": "i1", "profiles_list": [{"name": "a", "owner": {"user": "u"}}]}
    mine = {"app.kubernetes.io/managed-by": "kfocp", "kfocp.io/instance": "i1"}
    live = [{"metadata": {"name": "a", "labels": mine}}, {"metadata": {"name": "old", "labels": mine}},
            {"metadata": {"name": "hand", "labels": {}}},
            {"metadata": {"name": "other", "labels": dict(mine, **{"kfocp.io/instance": "i2"})}}]
    assert profiles.orphans(settings, live) == ["old"]


@pytest.mark.parametrize("item, message", [
    ({"name": "Team_A", "owner": {"user": "a"}}, r"profiles_list\[0\]\.name: 'Team_A' is not a DNS label"),
    ({"name": "a" * 64, "owner": {"user": "a"}}, r"profiles_list\[0\]\.name: .* is not a DNS label"),
    ({"name": "a", "owner": {"user": "a", "group": "g"}}, r"profiles_list\[0\]\.owner: names both a user .* and a group"),
    ({"name": "a", "owner": {}}, r"profiles_list\[0\]\.owner: names neither"),
    ({"name": "a"}, r"profiles_list\[0\]\.owner: is required"),
    ({"name": "a", "owner": {"user": "a"}, "quota": {"cpu": "lots"}}, r"profiles_list\[0\]\.quota\.cpu: 'lots' is not a valid quantity"),
    ({"name": "a", "owner": {"user": "a"}, "quota": {"cpu": " 1"}}, r"profiles_list\[0\]\.quota\.cpu: ' 1' is not a valid quantity"),
    ({"name": "a", "owner": {"user": "a"}, "quota": {"cpu": "1 "}}, r"profiles_list\[0\]\.quota\.cpu: '1 ' is not a valid quantity"),
    ({"name": "a", "owner": {"user": "a"}, "quota": {"cpu": "-2"}}, r"profiles_list\[0\]\.quota\.cpu: '-2' is negative"),
    ({"name": "a", "owner": {"user": "a"}, "quota": {"gpu": "1"}},
     r"profiles_list\[0\]\.quota\.gpu: is not a resource a ResourceQuota can hold"),
    ({"name": "a", "owner": {"user": "a"}, "quota": {"nvidia.com/gpu": "1"}},
     r"profiles_list\[0\]\.quota\.nvidia\.com/gpu: .* never counted.*Use requests\.nvidia\.com/gpu"),
    ({"name": "a", "owner": {"user": "a"}, "quota": {"limits.nvidia.com/gpu": "1"}},
     r"quota\.limits\.nvidia\.com/gpu: .* never counted.*Use requests\.nvidia\.com/gpu"),
    ({"name": "a", "owner": {"user": "a"}, "contributors": [{"user": "b", "role": "admin"}]},
     r"contributors\[0\]\.role: 'admin' is not a contributor role"),
    ({"name": "a", "owner": {"user": "a"}, "contributors": [{"user": "b", "group": "c"}]},
     r"contributors\[0\]: names both"),
])
def test_bad_input_names_the_field(item, message):
    with pytest.raises(DefinitionError, match=message):
        profiles.objects({"profiles_list": [item]})


def test_duplicate_profile_is_rejected():
    with pytest.raises(DefinitionError, match=r"profiles_list\[1\]\.name: duplicate profile 'a' \(also profiles_list\[0\]\)"):
        profiles.objects({"profiles_list": [{"name": "a", "owner": {"user": "x"}}, {"name": "a", "owner": {"user": "y"}}]})


def test_bad_default_quota_names_the_variable():
    with pytest.raises(DefinitionError, match=r"profiles_quota_default\.memory: '1 GB' is not a valid quantity"):
        profiles.objects({"profiles_quota_default": {"memory": "1 GB"}, "profiles_list": []})


def namespace(name, owner=None):
    return {"metadata": {"name": name, "annotations": {"owner": owner} if owner else {}}}


@pytest.mark.parametrize("name", ["kube-system", "default", "kfocp-system", "istio-system", "openshift-config",
                                  "openshift", "kubeflow"])
def test_declared_profiles_never_take_a_reserved_namespace(name):
    settings = {"profiles_list": [{"name": name, "owner": {"user": "alice"}}]}
    with pytest.raises(DefinitionError, match=r"profiles_list\[0\]\.name: '%s' is a reserved namespace" % name):
        profiles.objects(settings)


def test_the_reserved_list_is_configurable():
    settings = {"profiles_list": [{"name": "kubeflow", "owner": {"user": "alice"}}],
                "profiles_reserved_names": ["kube-*", "corp-*"]}
    assert by_kind(profiles.objects(settings), "Profile")
    with pytest.raises(DefinitionError, match="corp-"):
        profiles.objects(dict(settings, profiles_list=[{"name": "corp-x", "owner": {"user": "a"}}]))


@pytest.mark.parametrize("owner, message", [
    (None, "owner annotation: none"),   # an OpenShift project someone made
    ("bob", "owner annotation: bob"),   # another user's
])
def test_a_declared_profile_in_someone_elses_namespace_is_refused_before_any_write(owner, message):
    settings = {"profiles_list": [{"name": "team-a", "owner": {"user": "alice"}}]}
    with pytest.raises(DefinitionError, match=r"profiles_list\[0\]\.name: namespace 'team-a' already exists "
                                              r"and is not alice's \(%s\)" % message):
        profiles.plan(settings, namespaces=[namespace("team-a", owner)])
    # the owner's own namespace (the controller made it) is fine
    assert profiles.plan(settings, namespaces=[namespace("team-a", "alice")])[0]["name"] == "team-a"


def test_an_owner_change_is_refused_with_a_message():
    settings = {"kfocp_instance": "k", "profiles_list": [{"name": "team-a", "owner": {"user": "carol"}}]}
    live = [{"metadata": {"name": "team-a", "labels": {"app.kubernetes.io/managed-by": "kfocp", "kfocp.io/instance": "k"}},
             "spec": {"owner": {"kind": "User", "name": "alice"}}}]
    with pytest.raises(DefinitionError, match=r"profiles_list\[0\]\.owner: profile 'team-a' is owned by User 'alice'; "
                                              r"the profile controller never moves a namespace to a new owner"):
        profiles.plan(settings, profiles=live, namespaces=[namespace("team-a", "alice")])


def test_automatic_names_avoid_other_peoples_namespaces_and_take_the_prefix():
    settings = {"profiles_auto_from_users": True}
    users = [user("victor", "p:v"), user("wendy", "p:w"), user("xavier", "p:x")]
    names = {p["owner"][1]: p["name"] for p in profiles.plan(
        settings, users, namespaces=[namespace("victor"), namespace("wendy", "wendy"), namespace("xavier", "bob")])}
    assert names["victor"] == profiles.profile_name("victor", ("victor",))  # a project named victor exists
    assert names["wendy"] == "wendy"                                       # her own namespace
    assert names["xavier"] != "xavier"
    prefixed = {p["owner"][1]: p["name"] for p in profiles.plan(dict(settings, profiles_name_prefix="u-"), users)}
    assert prefixed == {"victor": "u-victor", "wendy": "u-wendy", "xavier": "u-xavier"}
    with pytest.raises(DefinitionError, match="profiles_name_prefix: 'U_' is not a name prefix"):
        profiles.plan(dict(settings, profiles_name_prefix="U_"), users)


def test_automatic_names_never_take_the_self_service_prefix():
    settings = {"profiles_auto_from_users": True, "profiles_self_service_prefix": "my-"}
    (planned,) = profiles.plan(settings, [user("my-victor", "p:v")])
    assert not planned["name"].startswith("my-")


def test_one_users_collision_is_reported_and_skipped_and_the_others_get_theirs():
    victor = "victor"
    digest = __import__("hashlib").sha256(b"victor").hexdigest()
    # a creator took every name the automatic scheme could give victor
    candidates = ["victor", "victor-" + digest[:6], "user-victor-" + digest[:6], "user-victor-" + digest[:17]]
    foreign = [{"metadata": {"name": n, "labels": {}}, "spec": {"owner": {"kind": "User", "name": "mallory"}}}
               for n in candidates]
    settings = {"profiles_auto_from_users": True}
    users = [user(victor, "p:v"), user("wendy", "p:w")]
    with pytest.raises(DefinitionError, match="no free profile name for 'victor'"):
        profiles.plan(settings, users, profiles=foreign)
    skipped = []
    names = [p["name"] for p in profiles.plan(settings, users, profiles=foreign, skipped=skipped)]
    assert names == ["wendy"]
    assert skipped[0]["user"] == "victor" and "no free profile name for 'victor'" in skipped[0]["message"]


def _role_defaults(role, variables):
    """The role's defaults as Ansible renders them in a play that holds `variables`."""
    from pathlib import Path

    import yaml
    from ansible.parsing.dataloader import DataLoader
    from ansible import template as ansible_template
    from ansible.template import Templar
    # ansible-core 2.18 (the ansible-operator image's) has no trust_as_template: every string is a template
    trust_as_template = getattr(ansible_template, "trust_as_template", lambda value: value)

    def trust(value):
        if isinstance(value, str):
            return trust_as_template(value)
        if isinstance(value, list):
            return [trust(v) for v in value]
        if isinstance(value, dict):
            return dict((k, trust(v)) for k, v in value.items())
        return value
    raw = yaml.safe_load((Path(__file__).resolve().parents[2] / "roles" / role / "defaults" / "main.yml").read_text())
    return Templar(loader=DataLoader(), variables=variables).template(trust(raw))


@pytest.mark.parametrize("flavour", ["ossm2", "ossm3", "external"])
def test_contributors_are_admitted_from_the_principals_kfam_is_given(flavour):
    """KFAM (in profiles-deployment) admits a contributor from the principals the components role
    puts in its environment; the profiles role writes the same contributor's policy under KFAM's
    name, and must name the same gateway: the service_mesh role's, whose pods run as its account."""
    import standins
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh
    settings = {"flavour": flavour}
    if flavour == "external":
        settings["external"] = {"namespace": "mesh-team", "gateway": "edge", "service_account": "edge-sa"}
    info = mesh.gateway_info(settings)
    play = {"service_mesh_gateway_info": info, "components_namespace": "kf"}
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import settings as role_settings
    env = role_settings.components_settings(play)["components_profile_principals"]
    settings = role_settings.resolve("profiles", dict(_role_defaults("profiles", play), **play))
    ours = by_kind(profiles._user_access("team-a", "bob@example.com", "edit", settings),  # pylint: disable=protected-access
                   "AuthorizationPolicy")
    kfam = by_kind(standins.kfam_contributor_objects("team-a", "bob@example.com", "edit", env), "AuthorizationPolicy")
    assert list(ours) == list(kfam)
    key = list(kfam)[0]
    assert ours[key]["spec"]["rules"] == kfam[key]["spec"]["rules"]
    assert info["principal"] in ours[key]["spec"]["rules"][0]["from"][0]["source"]["principals"]


def test_profiles_the_controller_refuses_and_would_never_release_are_found():
    def live(name, owner, finalizers=(profiles.FINALIZER,)):
        return {"metadata": {"name": name, "finalizers": list(finalizers)}, "spec": {"owner": {"kind": "User", "name": owner}}}

    def namespace(name, owner=None):
        return {"metadata": {"name": name, "annotations": {"owner": owner} if owner else {}}}
    found = profiles.never_released(
        [live("ok", "alice"), live("moved", "alice"), live("unowned", "alice"), live("fresh", "alice", ()),
         live("gone", "alice")],
        [namespace("ok", "alice"), namespace("moved", "bob"), namespace("unowned"), namespace("fresh", "bob")])
    assert found == [{"name": "moved", "owner": "alice", "namespace_owner": "bob"},
                     {"name": "unowned", "owner": "alice", "namespace_owner": None}]
