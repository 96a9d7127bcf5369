"""Self-service profiles against the real API server, with real user credentials: who may create
and delete profiles (enforced by the API server), owners sharing their namespace the dashboard's
way beside the contributors of the inventory, quota overrides and why owners cannot raise their
quota, the profiles report, and deletion that leaves nothing behind.

Kubeflow's profile controller and its access management (KFAM, behind the dashboard's "Manage
contributors") cannot run here: helpers.play_profile_controller and play_kfam_add_contributor
write what they would. The owners' rights come from upstream Kubeflow's kubeflow-admin, -edit and
-view ClusterRoles (tests/fixtures/manifests, installed by the components role and aggregated by
the controller manager)."""
import json
import uuid

import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client, KubeError
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import profiles
from ansible_collections.kfocp.kubeflow.plugins.module_utils.engine import Engine
from helpers import (components_only, isolated_policies, list_or_none, listable_kinds, play_kfam_add_contributor,
                     play_profile_controller, profile_controller, run_playbook,
                     subject_access_review, wait_for)

PROFILE = ("kubeflow.org/v1", "Profile")
RESERVED = profiles.RESERVED
QUOTA = {"cpu": "8", "memory": "32Gi", "requests.nvidia.com/gpu": "1", "persistentvolumeclaims": "10",
         "requests.storage": "100Gi"}
RB = ("rbac.authorization.k8s.io/v1", "RoleBinding")
AP = ("security.istio.io/v1", "AuthorizationPolicy")
RQ = ("v1", "ResourceQuota")


def profile(name, owner, hard="default", **spec):
    """A Profile owned by the user `owner`, with the quota `hard` (the default QUOTA; None: no quota)."""
    hard = dict(QUOTA) if hard == "default" else hard
    body = {"apiVersion": "kubeflow.org/v1", "kind": "Profile", "metadata": {"name": name},
            "spec": dict(spec, owner={"kind": "User", "name": owner, "apiGroup": "rbac.authorization.k8s.io"})}
    if hard is not None:
        body["spec"]["resourceQuotaSpec"] = dict(body["spec"].get("resourceQuotaSpec") or {}, hard=hard)
    return body


def user_client(control_plane, directory, user, *groups):
    path = control_plane.write_kubeconfig(directory / (user + ".kubeconfig"), user, list(groups))
    return Client.from_params({"kubeconfig": str(path)}, retries=0)


def create(client, obj):
    res = client.resource(*PROFILE)
    return client.request("POST", client.path(res), body=obj)


def delete(client, name):
    res = client.resource(*PROFILE)
    return client.request("DELETE", client.path(res, name=name))


def refused(call, *args):
    """The KubeError of a request the API server must refuse."""
    with pytest.raises(KubeError) as err:
        call(*args)
    assert err.value.status == 403, err.value
    return str(err.value)


# ---------------------------------------------------------------- one scenario, its tests in order:
# creating, sharing, quotas, the report, deletion

def rules(kube, name):
    role = kube.get(kube.resource("rbac.authorization.k8s.io/v1", "ClusterRole"), name) or {}
    return set((tuple(r.get("apiGroups") or ()), tuple(r.get("resources") or ()), tuple(r.get("verbs") or ()))
               for r in role.get("rules") or ())


def aggregated(kube):
    """kubeflow-view inside kubeflow-edit inside kubeflow-admin, as the aggregation controller builds them."""
    view, edit, admin = rules(kube, "kubeflow-view"), rules(kube, "kubeflow-edit"), rules(kube, "kubeflow-admin")
    return bool(view) and view <= edit and edit <= admin and len(admin) > len(edit)


def managers(obj):
    return sorted(set(entry["manager"] for entry in obj["metadata"].get("managedFields") or []))


@pytest.fixture(scope="module")
def tenants(control_plane, kube, tmp_path_factory):
    """Two declared profiles and one self-service profile, their namespaces (played profile
    controller), and the owner sharing hers through the dashboard before kfocp's next runs."""
    instance = "t-" + uuid.uuid4().hex[:8]
    work = tmp_path_factory.mktemp("tenants")
    group = instance + "-creators"
    names = dict((who, "%s-%s" % (instance, who)) for who in ("alice", "bob", "carol", "dave", "erin"))
    team, plain, own = instance + "-team", instance + "-plain", instance + "-own"
    settings = dict(isolated_policies(instance), kfocp_instance=instance, kfocp_profile_self_service_enabled=True,
                    profile_self_service_group=group, profile_self_service_max_quota=QUOTA,
                    profile_self_service_name_prefix=instance + "-",
                    profiles_reserved_names=list(RESERVED) + [instance + "-kube-*"],
                    profiles_quota_default=QUOTA,
                    profiles_list=[
                        {"name": team, "owner": {"user": names["alice"]},
                         "contributors": [{"user": names["carol"], "role": "view"},
                                          {"user": names["dave"], "role": "edit"}],
                         "quota": {"cpu": "16", "requests.nvidia.com/gpu": "4", "memory": None}},
                        {"name": plain, "owner": {"user": names["bob"]}}])
    scenario = dict(instance=instance, group=group, team=team, plain=plain, own=own, settings=settings, work=work,
                    runs={}, **names)

    def run(name, extravars, **kwargs):
        return run_playbook(control_plane, name, extravars, work, **kwargs)

    scenario["run"] = run
    scenario["client"] = lambda user, *groups: user_client(control_plane, work, user, *groups)
    controller = None
    try:
        roles = run("components", components_only(instance, "kubeflow-roles"))
        assert roles.rc == 0, roles.stdout[-3000:]
        wait_for(lambda: aggregated(kube), 60, what="the aggregation controller to fill in kubeflow-admin/-edit/-view")
        first = run("profiles", settings)
        assert first.rc == 0, first.stdout[-3000:]
        alice = scenario["client"](names["alice"], group)
        create(alice, profile(own, names["alice"], dict(QUOTA, cpu="2")))
        assert sorted(play_profile_controller(control_plane, [team, plain, own], {"kfocp-test": instance})) == \
            sorted([team, plain, own])
        # from now on it runs, as on a cluster: it releases the Profiles that are deleted
        controller = profile_controller(control_plane, {"kfocp-test": instance}, kube=kube, only={team, plain, own})
        controller.__enter__()
        # the owner shares her namespaces herself (the RoleBinding with her own credentials), dave
        # before kfocp gives him the same access from the inventory
        shared = {}
        for namespace, who, role in ((team, "dave", "edit"), (team, "bob", "edit"), (own, "erin", "view")):
            name = play_kfam_add_contributor(kube, namespace, names[who], role, rolebinding_client=alice)
            shared[who] = dict((kind, kube.get(kube.resource(*api), name, namespace)) for kind, api in
                               (("RoleBinding", RB), ("AuthorizationPolicy", AP)))
        scenario["shared"] = shared
        scenario["runs"]["second"] = run("profiles", settings)
        scenario["runs"]["third"] = run("profiles", settings)
        yield scenario
    finally:
        kube.request("DELETE", kube.path(kube.resource(*PROFILE), name=own), allow=(404,))
        Engine(kube, instance=instance).delete_all(wait=True)
        if controller is not None:
            controller.__exit__(None, None, None)


def test_creator_stranger_and_admin(tenants, kube):
    instance, group, client = tenants["instance"], tenants["group"], tenants["client"]
    alice = client(tenants["alice"], group)
    bob = client(tenants["bob"])
    admin = client("admin-" + instance, "system:masters")
    mine, theirs, admins, other = (instance + suffix for suffix in ("-mine", "-for-bob", "-carols", "-more"))
    try:
        # at most the default quota, every limited resource named (an int is a quantity too)
        create(alice, profile(mine, tenants["alice"], dict(QUOTA, cpu="2", **{"requests.nvidia.com/gpu": 0})))

        message = refused(create, alice, profile(theirs, tenants["bob"]))
        assert "may only create profiles they own" in message
        assert "spec.owner is User %s, you are %s" % (tenants["bob"], tenants["alice"]) in message

        # a member cannot give their profile more quota than the cap, no quota, a scoped one, or plugins
        for bad in (profile(other, tenants["alice"], dict(QUOTA, cpu="9")),
                    profile(other, tenants["alice"], dict(QUOTA, memory="33Gi")),
                    profile(other, tenants["alice"], dict((k, v) for k, v in QUOTA.items() if k != "cpu")),
                    profile(other, tenants["alice"], None),
                    profile(other, tenants["alice"], resourceQuotaSpec={"scopes": ["BestEffort"]})):
            message = refused(create, alice, bad)
            assert "must give their profile a quota" in message and "cpu=8, memory=32Gi" in message, message
        message = refused(create, alice, profile(other, tenants["alice"], plugins=[
            {"kind": "AwsIamForServiceAccount", "spec": {"awsIamRole": "arn:aws:iam::1:role/admin"}}]))
        assert "may not set spec.plugins" in message

        # a stranger (not in the group) cannot create one at all
        assert "cannot create resource" in refused(create, bob, profile(instance + "-bobs", tenants["bob"]))

        # an admin can create any, for anyone, with any quota
        create(admin, profile(admins, tenants["carol"], dict(QUOTA, cpu="64")))

        assert "may only delete profiles they own" in refused(delete, alice, admins)
        delete(alice, mine)

        # no update: a member cannot raise a quota
        res = alice.resource(*PROFILE)
        refused(alice.request, "PATCH", alice.path(res, name=admins), None, {"spec": {"resourceQuotaSpec": {}}},
                "application/merge-patch+json")
    finally:
        res = kube.resource(*PROFILE)
        for name in (mine, theirs, admins, other):
            kube.request("DELETE", kube.path(res, name=name), allow=(404,))


def test_creators_are_confined_to_their_prefix_outside_reserved_names_and_kfocp_labels(tenants, kube):
    instance, group, client = tenants["instance"], tenants["group"], tenants["client"]
    alice = client(tenants["alice"], group)
    me = tenants["alice"]
    try:
        # system and platform names, and the names automatic profiles take, are outside the prefix
        for name in ("kube-system", "default", "openshift-config", "victor", "victor-2bd806", "user-victor-2bd806"):
            message = refused(create, alice, profile(name, me))
            assert "may only create profiles whose name starts with \"%s-\"" % instance in message, message
        # a reserved name inside the prefix
        message = refused(create, alice, profile(instance + "-kube-x", me))
        assert "the name %s-kube-x is a reserved namespace" % instance in message, message
        # kfocp's own labels and annotations: such a profile could not be deleted by its owner
        for meta in ({"labels": {"app.kubernetes.io/managed-by": "kfocp"}},
                     {"labels": {"kfocp.io/instance": instance}},
                     {"annotations": {"kfocp.io/user": me}}):
            body = profile(instance + "-marked", me)
            body["metadata"].update(meta)
            assert "may not carry kfocp's labels or annotations" in refused(create, alice, body)
    finally:
        res = kube.resource(*PROFILE)
        for name in (instance + "-kube-x", instance + "-marked"):
            kube.request("DELETE", kube.path(res, name=name), allow=(404,))


def test_owner_sharing_survives_kfocp_runs(tenants, kube):
    second, third = tenants["runs"]["second"], tenants["runs"]["third"]
    assert second.rc == 0, second.stdout[-3000:]
    assert third.rc == 0 and third.count("changed") == 0, third.stdout[-3000:]
    team = tenants["team"]
    # what the owner added is hers: not overwritten, not labelled, not pruned, whoever kfocp declared
    for who, before in tenants["shared"].items():
        for kind, obj in before.items():
            api = RB if kind == "RoleBinding" else AP
            live = kube.get(kube.resource(*api), obj["metadata"]["name"], obj["metadata"]["namespace"])
            assert live is not None, "%s %s was deleted" % (kind, obj["metadata"]["name"])
            assert live["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"], (kind, who)
            assert "kfocp.io/instance" not in (live["metadata"].get("labels") or {})
            assert managers(live) == ["kfam"], managers(live)
    # dave is declared in the inventory too: kfocp left the owner's objects of that name as they are
    dave = tenants["shared"]["dave"]["RoleBinding"]["metadata"]["name"]
    skipped = [(o["kind"], o["action"]) for result in second.task_results() for o in result.get("objects") or []
               if o["name"] == dave]
    assert sorted(skipped) == [("AuthorizationPolicy", "skipped"), ("RoleBinding", "skipped")], skipped
    # carol, declared and not added by the owner, got kfocp's binding and policy, beside the owner's
    carol = "user-%s-clusterrole-view" % tenants["carol"]
    for api in (RB, AP):
        made = kube.get(kube.resource(*api), carol, team)
        assert made["metadata"]["labels"]["kfocp.io/instance"] == tenants["instance"]
        assert made["metadata"]["annotations"]["user"] == tenants["carol"]
    bindings = dict((b["metadata"]["name"], b) for b in kube.list(kube.resource(*RB), namespace=team))
    assert {"namespaceAdmin", carol, dave, "user-%s-clusterrole-edit" % tenants["bob"]} <= set(bindings)


def test_quota_override_wins_and_the_owner_cannot_raise_it(tenants, kube):
    team, plain, own, alice, dave = tenants["team"], tenants["plain"], tenants["own"], tenants["alice"], tenants["dave"]
    overridden = {"cpu": "16", "requests.nvidia.com/gpu": "4", "persistentvolumeclaims": "10",
                  "requests.storage": "100Gi"}
    profiles = dict((p["metadata"]["name"], p) for p in kube.list(kube.resource(*PROFILE)))
    assert profiles[team]["spec"]["resourceQuotaSpec"]["hard"] == overridden
    assert profiles[plain]["spec"]["resourceQuotaSpec"]["hard"] == QUOTA
    # the namespace's ResourceQuota, as the profile controller makes it and the API server enforces it
    for name, hard in ((team, overridden), (plain, QUOTA)):
        quota = wait_for(lambda: (kube.get(kube.resource(*RQ), "kf-resource-quota", name) or {}).get("status", {}).get(
            "hard"), 30, what="the resourcequota controller to report the quota of %s" % name)
        assert quota == hard

    member = [tenants["group"]]
    asked = [
        # the owner reads her quota and shares her namespace, but cannot change the quota or the Profile
        (alice, "get", "resourcequotas", "", team, "kf-resource-quota", True),
        (alice, "create", "rolebindings", "rbac.authorization.k8s.io", team, None, True),
        (alice, "update", "resourcequotas", "", team, "kf-resource-quota", False),
        (alice, "patch", "resourcequotas", "", team, "kf-resource-quota", False),
        (alice, "delete", "resourcequotas", "", team, "kf-resource-quota", False),
        (alice, "create", "resourcequotas", "", team, None, False),
        (alice, "patch", "resourcequotas", "", own, "kf-resource-quota", False),
        (alice, "patch", "profiles", "kubeflow.org", None, team, False),
        (alice, "update", "profiles", "kubeflow.org", None, team, False),
        (alice, "patch", "profiles", "kubeflow.org", None, own, False),
        (alice, "update", "profiles", "kubeflow.org", None, own, False),
        # deleting is hers by RBAC; the admission policy decides which profiles (see the deletion test)
        (alice, "delete", "profiles", "kubeflow.org", None, own, True),
        # a contributor with edit neither
        (dave, "patch", "resourcequotas", "", team, "kf-resource-quota", False),
        (dave, "patch", "profiles", "kubeflow.org", None, team, False),
    ]
    wrong = []
    for user, verb, resource, api_group, namespace, name, want in asked:
        got, reason = subject_access_review(kube, user, member if user == alice else [], verb, resource, api_group,
                                            namespace, name)
        if got != want:
            wrong.append("%s %s %s %s/%s: %s, expected %s (%s)" % (user, verb, resource, namespace, name, got, want,
                                                                   reason))
    assert not wrong, "\n".join(wrong)

    # and the same with her own credentials
    client = tenants["client"](alice, *member)
    raise_quota = {"spec": {"hard": {"cpu": "1000"}}}
    refused(client.request, "PATCH", client.path(client.resource(*RQ), team, "kf-resource-quota"), None, raise_quota,
            "application/merge-patch+json")
    refused(client.request, "PATCH", client.path(client.resource(*PROFILE), None, own), None,
            {"spec": {"resourceQuotaSpec": {"hard": {"cpu": "1000"}}}}, "application/merge-patch+json")


def test_profiles_report_lists_owners_contributors_quota_and_usage(tenants, kube, tmp_path):
    team, own, plain = tenants["team"], tenants["own"], tenants["plain"]
    alice = tenants["client"](tenants["alice"], tenants["group"])
    wait_for(lambda: kube.get(kube.resource("v1", "ServiceAccount"), "default", team), 30,
             what="the service account controller to make %s/default" % team)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "notebook"},
           "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]}}
    alice.request("POST", alice.path(alice.resource("v1", "Pod"), team), body=pod)
    report_file = tmp_path / "profiles.json"
    result = tenants["run"]("profiles_report", {"kfocp_instance": tenants["instance"],
                                                "kfocp_profiles_report_json": str(report_file)})
    assert result.rc == 0, result.stdout[-3000:]
    assert result.count("changed") == 1  # the JSON file; the cluster is only read
    rows = dict((row["name"], row) for row in json.loads(report_file.read_text())["profiles"])

    def contributors(name):
        return [(c["name"], c["role"], c["by"]) for c in rows[name]["contributors"]]

    assert rows[team]["owner"] == {"kind": "User", "name": tenants["alice"]} and rows[team]["source"] == "declared"
    assert contributors(team) == [(tenants["bob"], "edit", "owner"), (tenants["carol"], "view", "kfocp"),
                                  (tenants["dave"], "edit", "owner")]
    assert rows[team]["quota"]["cpu"] == {"hard": "16", "used": "500m"}
    assert rows[team]["quota"]["requests.nvidia.com/gpu"] == {"hard": "4", "used": "0"}
    assert "memory" not in rows[team]["quota"]
    assert rows[own]["source"] == "self-service" and contributors(own) == [(tenants["erin"], "view", "owner")]
    assert rows[own]["quota"]["cpu"] == {"hard": "2", "used": "0"}
    assert rows[plain]["owner"]["name"] == tenants["bob"] and contributors(plain) == []
    line = next(line for line in result.stdout.splitlines() if line.strip().startswith(team + " "))
    assert "cpu 500m/16" in line and "%s (edit, owner)" % tenants["dave"] in line, line


def mentions(kube, *names):
    """Every object of every listable kind whose JSON names one of `names`: (kind, namespace/name, name)."""
    found, kinds = [], 0
    for _group, _version, kind, res in listable_kinds(kube):
        items = list_or_none(kube, res)
        if items is None:
            continue
        kinds += 1
        for item in items:
            text = json.dumps(item)
            meta = item["metadata"]
            for name in names:
                if name in text:
                    found.append((kind, "%s/%s" % (meta.get("namespace", ""), meta["name"]), name))
    return found, kinds


def test_deleting_profiles_leaves_nothing_behind(tenants, kube):
    team, own, plain = tenants["team"], tenants["own"], tenants["plain"]
    namespaces = kube.resource("v1", "Namespace")
    alice = tenants["client"](tenants["alice"], tenants["group"])
    before = mentions(kube, team, own)[0]
    assert {("LimitRange", "%s/kfocp-limits" % ns) for ns in (team, own)} <= set(f[:2] for f in before), before

    # the team profile is declared in the inventory: its owner cannot delete it, kfocp would create it again
    assert "managed by kfocp" in refused(delete, alice, team)
    # the owner deletes her own profile: the garbage collector deletes its namespace, and with it
    # every object kfocp put there
    delete(alice, own)
    wait_for(lambda: kube.get(namespaces, own) is None, 180, interval=1, what="namespace %s to be deleted" % own)
    # the admin takes the team profile out of the inventory and prunes
    declared = [p for p in tenants["settings"]["profiles_list"] if p["name"] != team]
    fewer = dict(tenants["settings"], profiles_list=declared, kfocp_profiles_prune=True)
    pruned = tenants["run"]("profiles", fewer)
    assert pruned.rc == 0, pruned.stdout[-3000:]
    wait_for(lambda: kube.get(namespaces, team) is None, 180, interval=1, what="namespace %s to be deleted" % team)

    # the next run creates neither again, and has nothing to do
    again = tenants["run"]("profiles", fewer)
    assert again.rc == 0 and again.count("changed") == 0, again.stdout[-3000:]
    found, kinds = mentions(kube, team, own, plain)
    assert kinds > 50, kinds
    assert [f for f in found if f[2] != plain] == [], "objects that still name a deleted profile"
    # the scan does see what kfocp made for the profile that stays
    assert ("LimitRange", "%s/kfocp-limits" % plain, plain) in found
    assert ("Profile", "/" + plain, plain) in found


def test_an_odd_group_name_is_data_and_a_bad_one_is_refused_before_any_change(tenants, kube):
    instance, client, run = tenants["instance"], tenants["client"], tenants["run"]
    odd = "ålice\\team-" + instance  # a backslash and a non-ASCII letter: valid for OpenShift
    settings = dict(tenants["settings"], profile_self_service_group=odd, profiles_list=[])
    applied = run("profiles", settings)
    assert applied.rc == 0, applied.stdout[-3000:]
    member = client(tenants["bob"], odd)
    message = refused(create, member, profile(instance + "-odd", tenants["carol"]))
    assert "members of %s may only create profiles they own" % odd in message, message
    policy = kube.get(kube.resource("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"),
                      "kfocp-profile-owner")
    assert odd not in json.dumps(policy["spec"], ensure_ascii=False)

    before = policy["metadata"]["resourceVersion"]
    bad = run("profiles", dict(settings, profile_self_service_group="corp:" + instance))
    assert bad.rc != 0
    assert "profile_self_service_group: 'corp:%s' is not a valid OpenShift Group name" % instance \
        in " ".join(bad.stdout.split()), bad.stdout[-3000:]
    assert kube.get(kube.resource("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"),
                    "kfocp-profile-owner")["metadata"]["resourceVersion"] == before
