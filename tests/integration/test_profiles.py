"""The profiles role through playbooks/profiles.yml against the real API server: automatic
profiles from Users, group owners and contributors, quota overrides, idempotence, prune safety.

Kubeflow's profile controller cannot be built here (its Go module is not served by the module
proxy), so helpers.play_profile_controller writes what it would write between two runs."""
import json
import time

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.profiles import profile_name
from helpers import in_background, isolated_policies, play_profile_controller, wait_for

PROFILE_API = ("kubeflow.org/v1", "Profile")


def apply_objects(control_plane, *objs):
    control_plane.kubectl("apply", "--server-side", "--field-manager=test", "-f", "-",
                          input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objs)}))


def user(name, identity):
    return {"apiVersion": "user.openshift.io/v1", "kind": "User", "metadata": {"name": name}, "identities": [identity]}


def group(name, *members):
    return {"apiVersion": "user.openshift.io/v1", "kind": "Group", "metadata": {"name": name}, "users": list(members)}


def profiles_of(kube):
    return {p["metadata"]["name"]: p for p in kube.list(kube.resource(*PROFILE_API))}


def named(kube, api_version, kind, namespace):
    return {o["metadata"]["name"]: o for o in kube.list(kube.resource(api_version, kind), namespace=namespace)}


def test_profiles_from_users_groups_quotas_and_prune_safety(playbook, kube, control_plane, instance):
    team, hand, other = instance + "-team", instance + "-hand", instance + "-other"
    alice, bob = instance + "-alice", instance + "-bob"
    owners = instance + "-owners"
    apply_objects(control_plane, user(alice, "corp-%s:alice" % instance), user(bob, "other-%s:bob" % instance),
                  group(owners, "m1@example.com", "m2@example.com"),
                  {"apiVersion": "kubeflow.org/v1", "kind": "Profile", "metadata": {"name": hand},
                   "spec": {"owner": {"kind": "User", "name": "someone"}}},
                  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}})
    extra = dict(isolated_policies(instance), kfocp_instance=instance, profiles_auto_from_users=True,
                 profiles_auto_provider="corp-" + instance,
                 profiles_quota_default={"cpu": "8", "requests.nvidia.com/gpu": "1", "requests.storage": "10Gi"},
                 profiles_list=[{"name": team, "owner": {"group": owners},
                                 "contributors": [{"user": "viewer@example.com", "role": "view"}],
                                 "quota": {"requests.nvidia.com/gpu": "4", "requests.storage": None}}])

    first = playbook("profiles", extra)
    assert first.rc == 0, first.stdout
    found = profiles_of(kube)
    # automatic: alice has an identity from the provider, bob has not
    assert alice in found and bob not in found
    assert found[alice]["spec"]["owner"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": alice}
    assert found[alice]["spec"]["resourceQuotaSpec"]["hard"] == {"cpu": "8", "requests.nvidia.com/gpu": "1",
                                                                 "requests.storage": "10Gi"}
    # declared, group-owned, with its quota override
    assert found[team]["spec"]["owner"]["kind"] == "Group"
    assert found[team]["spec"]["resourceQuotaSpec"]["hard"] == {"cpu": "8", "requests.nvidia.com/gpu": "4"}
    assert "Waiting for their namespaces" in first.stdout

    assert sorted(play_profile_controller(control_plane, [team, alice], {"kfocp-test": instance})) == sorted([alice, team])
    second = playbook("profiles", extra)
    assert second.rc == 0, second.stdout
    bindings = named(kube, "rbac.authorization.k8s.io/v1", "RoleBinding", team)
    for name, role in (("user-m1-example-com-clusterrole-edit", "kubeflow-edit"),
                       ("user-m2-example-com-clusterrole-edit", "kubeflow-edit"),
                       ("user-viewer-example-com-clusterrole-view", "kubeflow-view")):
        assert bindings[name]["roleRef"]["name"] == role
    assert bindings["user-m1-example-com-clusterrole-edit"]["metadata"]["annotations"]["user"] == "m1@example.com"
    policies = named(kube, "security.istio.io/v1", "AuthorizationPolicy", team)
    rule = policies["user-viewer-example-com-clusterrole-view"]["spec"]["rules"][0]
    assert rule["when"] == [{"key": "request.headers[kubeflow-userid]", "values": ["viewer@example.com"]}]
    assert "namespaceAdmin" in bindings  # the controller's, left alone

    again = playbook("profiles", extra)
    assert again.rc == 0 and again.count("changed") == 0, again.stdout
    # each role's argument specs are checked once, by the pre-flight (entry point validate; the
    # service_mesh role's gateway, as this play uses the mesh and does not make it) with
    # kfocp.kubeflow.role_inputs, never again as a role starts; the profiles role applies in one
    # module task
    assert not [e for e in again.events if e.get("event") == "playbook_on_task_start"
                and e["event_data"]["task"].startswith("Validating arguments against arg spec")]
    checked = [e["event_data"]["role"].split(".")[-1] for e in again.events if e.get("event") == "runner_on_ok"
               and e["event_data"].get("task_action") == "kfocp.kubeflow.role_inputs"]
    # self-service: off in the local inventory; data_lake's inputs are checked though the role is off
    assert sorted(checked) == ["data_lake", "namespace_policies", "profiles", "service_mesh"], checked
    applies = [e for e in again.events if e.get("event") == "runner_on_ok"
               and e["event_data"].get("task_action") == "kfocp.kubeflow.tenancy"]
    assert [e["event_data"]["role"].split(".")[-1] for e in applies] == ["profiles", "namespace_policies"], applies
    assert [s["set"] for s in applies[0]["event_data"]["res"]["steps"]] == ["profiles", "profiles-access"]
    check = playbook("profiles", extra, check=True, diff=True)
    assert check.rc == 0 and check.count("changed") == 0, check.stdout

    # membership changes are followed: m1 leaves, m3 joins
    apply_objects(control_plane, group(owners, "m2@example.com", "m3@example.com"))
    moved = playbook("profiles", extra)
    assert moved.rc == 0, moved.stdout
    bindings = named(kube, "rbac.authorization.k8s.io/v1", "RoleBinding", team)
    assert "user-m1-example-com-clusterrole-edit" not in bindings
    assert "user-m3-example-com-clusterrole-edit" in bindings
    assert "user-m1-example-com-clusterrole-edit" not in named(kube, "security.istio.io/v1", "AuthorizationPolicy", team)

    # a profile that leaves the list is kept and reported, unless kfocp_profiles_prune is true
    fewer = dict(extra, profiles_list=[])
    kept = playbook("profiles", fewer)
    assert kept.rc == 0, kept.stdout
    assert team in profiles_of(kube)
    assert "Kept, not deleted (set kfocp_profiles_prune: true to delete them): %s" % team in " ".join(kept.stdout.split())
    pruned = playbook("profiles", dict(fewer, kfocp_profiles_prune=True))
    assert pruned.rc == 0, pruned.stdout
    found = profiles_of(kube)
    assert team not in found or found[team]["metadata"].get("deletionTimestamp")
    # prune safety: the hand-made Profile, the automatic one and an unrelated namespace stay
    assert hand in found and "kfocp.io/instance" not in found[hand]["metadata"].get("labels", {})
    assert alice in found
    assert kube.get(kube.resource("v1", "Namespace"), other) is not None


def test_bad_input_fails_before_any_change(playbook, kube, instance):
    cases = [
        ([{"name": "Bad_Name", "owner": {"user": "a"}}], "profiles_list[0].name: 'Bad_Name' is not a DNS label"),
        ([{"name": instance, "owner": {"user": "a"}, "quota": {"cpu": "many"}}],
         "profiles_list[0].quota.cpu: 'many' is not a valid quantity"),
        ([{"name": instance, "owner": {"user": "a", "group": "g"}}], "profiles_list[0].owner: names both a user"),
        ([{"name": instance, "owner": {"user": "a"}}, {"name": instance, "owner": {"user": "b"}}],
         "profiles_list[1].name: duplicate profile"),
    ]
    for profiles_list, message in cases:
        result = playbook("profiles", {"kfocp_instance": instance, "profiles_list": profiles_list})
        assert result.rc != 0
        assert message in " ".join(result.stdout.split()), result.stdout
        assert instance not in profiles_of(kube)


def test_namespace_wait_applies_access_once_the_controller_made_them_or_names_the_missing(playbook, kube, control_plane,
                                                                                          instance):
    early, late = instance + "-early", instance + "-late"
    extra = dict(isolated_policies(instance), kfocp_instance=instance, profiles_namespace_wait=30,
                 profiles_list=[{"name": early, "owner": {"user": "o@example.com"},
                                 "contributors": [{"user": "c@example.com", "role": "edit"}]}])
    access = "user-c-example-com-clusterrole-edit"

    # the controller makes the namespace while the run waits: the access comes in the same run
    def controller_after(seconds, names):
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and early not in profiles_of(kube):
            time.sleep(0.2)
        time.sleep(seconds)
        play_profile_controller(control_plane, names, {"kfocp-test": instance})

    in_background(controller_after, 3, [early])
    waited = playbook("profiles", extra)
    assert waited.rc == 0, waited.stdout[-3000:]
    assert "Waiting for their namespaces" not in waited.stdout
    assert access in named(kube, "rbac.authorization.k8s.io/v1", "RoleBinding", early)

    # it never makes the other one: the run fails after the wait, naming it
    missing = dict(extra, profiles_namespace_wait=4, profiles_list=extra["profiles_list"] + [
        {"name": late, "owner": {"user": "o@example.com"}}])
    failed = playbook("profiles", missing)
    assert failed.rc != 0
    assert "the profile controller has not created the namespaces of 1 profile(s) after 4s: %s" % late \
        in " ".join(failed.stdout.split()), failed.stdout[-3000:]
    assert late in profiles_of(kube)


def test_someone_elses_namespace_and_an_owner_change_are_refused_before_any_write(playbook, kube, control_plane,
                                                                                  instance):
    mine, project = instance + "-mine", instance + "-project"
    apply_objects(control_plane, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": project}})
    base = dict(isolated_policies(instance), kfocp_instance=instance)

    # an OpenShift project with no owner: the controller would refuse the profile, so kfocp does first
    taken = playbook("profiles", dict(base, profiles_list=[{"name": project, "owner": {"user": "alice"}}]))
    assert taken.rc != 0
    assert "profiles_list[0].name: namespace '%s' already exists and is not alice's (owner annotation: none)" \
        % project in " ".join(taken.stdout.split()), taken.stdout[-3000:]
    assert project not in profiles_of(kube)

    # an owner change: refused, naming the field; the Profile and its namespace keep alice
    declared = dict(base, profiles_list=[{"name": mine, "owner": {"user": "alice"}}])
    assert playbook("profiles", declared).rc == 0
    assert play_profile_controller(control_plane, [mine], {"kfocp-test": instance}) == [mine]
    moved = playbook("profiles", dict(base, profiles_list=[{"name": mine, "owner": {"user": "carol"}}]))
    assert moved.rc != 0
    assert "profiles_list[0].owner: profile '%s' is owned by User 'alice'; the profile controller never moves a " \
        "namespace to a new owner" % mine in " ".join(moved.stdout.split()), moved.stdout[-3000:]
    assert profiles_of(kube)[mine]["spec"]["owner"]["name"] == "alice"
    assert kube.get(kube.resource("v1", "Namespace"), mine)["metadata"]["annotations"]["owner"] == "alice"


def test_an_automatic_profile_avoids_an_existing_project(playbook, kube, control_plane, instance):
    victor = instance + "-victor"
    apply_objects(control_plane, user(victor, "corp-%s:victor" % instance),
                  {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": victor}})
    extra = dict(isolated_policies(instance), kfocp_instance=instance, profiles_auto_from_users=True,
                 profiles_auto_provider="corp-" + instance)
    result = playbook("profiles", extra)
    assert result.rc == 0, result.stdout[-3000:]
    mine = [p for p in profiles_of(kube).values() if p["spec"]["owner"]["name"] == victor]
    assert [p["metadata"]["name"] for p in mine] == [profile_name(victor, (victor,))]
    assert play_profile_controller(control_plane, [mine[0]["metadata"]["name"]], {"kfocp-test": instance})


def test_one_module_run_reads_the_profiles_inputs_once_when_the_profiles_are_as_desired(kube, control_plane, instance,
                                                                                        monkeypatch):
    """The tenancy module's two profile steps: the contributor access is built from the plan and
    namespaces the Profiles step read, unless that step changed a Profile."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.runner import run_steps
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.tenancy import BUILDS, KINDS
    from helpers import ROOT
    monkeypatch.syspath_prepend(str(ROOT / "operator"))
    from kfocp_operator.fastpath import tenancy_settings  # the role's settings, as the operator derives them

    names = ["%s-%d" % (instance, i) for i in range(2)]
    variables = {"profiles_list": [{"name": name, "owner": {"user": name + "@example.com"},
                                    "contributors": [{"user": "lead@example.com", "role": "edit"}]} for name in names]}
    steps = [{"build": "profiles", "set": "profiles", "prune": False, "wait": 0},
             {"build": "profiles_access", "set": "profiles-access", "prune": True, "wait": 0}]
    auth = {"kubeconfig": str(control_plane.kubeconfig)}

    def run(variables):
        settings = tenancy_settings(variables, instance)["profiles"]
        out, error = run_steps({"instance": instance, "state": "present", "settings": settings}, auth, steps,
                               builds=BUILDS, kinds=KINDS)
        assert error is None, error
        return out

    run(variables)
    play_profile_controller(control_plane, names)
    assert run(variables)["summary"]["created"] == 4  # a RoleBinding and an AuthorizationPolicy each
    reads, labelled = [], set()
    send = Client.request

    def recording(self, method, path, query=None, **kwargs):
        if method == "GET" and path in ("/apis/kubeflow.org/v1/profiles", "/api/v1/namespaces") \
                and not (query or {}).get("labelSelector"):
            reads.append(path)
        elif method == "GET" and (query or {}).get("labelSelector"):
            labelled.add(path)
        return send(self, method, path, query=query, **kwargs)

    monkeypatch.setattr(Client, "request", recording)
    out = run(variables)
    assert not out["changed"] and [s["changed"] for s in out["steps"]] == [False, False]
    assert sorted(reads) == ["/api/v1/namespaces", "/apis/kubeflow.org/v1/profiles"]
    # the access step's prune looks in the kinds it makes (tenancy.KINDS), not in every served kind
    assert labelled == {"/apis/rbac.authorization.k8s.io/v1/rolebindings",
                        "/apis/security.istio.io/v1/authorizationpolicies"}, sorted(labelled)

    del reads[:]
    variables["profiles_list"][0]["quota"] = {"cpu": "3"}
    out = run(variables)
    assert [s["changed"] for s in out["steps"]] == [True, False]
    assert sorted(reads) == ["/api/v1/namespaces"] * 2 + ["/apis/kubeflow.org/v1/profiles"] * 2
    assert kube.get(kube.resource(*PROFILE_API), names[0])["spec"]["resourceQuotaSpec"]["hard"]["cpu"] == "3"


def test_the_quota_names_kfocp_refuses_are_refused_or_never_counted_by_the_api_server(kube, control_plane, instance):
    """profiles.quota_name against the real API server: every name it takes, the API server takes in
    a ResourceQuota; every name the API server takes that it refuses is one quota admission never
    counts (a pod asking for more than a 0 quota of it is admitted)."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.profiles import quota_name
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError

    space = instance + "-quota"
    apply_objects(control_plane, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": space}})
    quotas, pods = kube.resource("v1", "ResourceQuota"), kube.resource("v1", "Pod")

    def api_takes(key):
        body = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q-%d" % time.monotonic_ns()},
                "spec": {"hard": {key: "1"}}}
        try:
            kube.request("POST", kube.path(quotas, space), query={"dryRun": "All"}, body=body)
            return True
        except KubeError as err:
            assert err.status == 422, err
            return False

    def ours(key):
        try:
            return quota_name(key, "q") == key
        except DefinitionError:
            return False

    wait_for(lambda: kube.get(kube.resource("v1", "ServiceAccount"), "default", space), 30,
             what="the default ServiceAccount of %s" % space)
    never_counted = []
    for key in ("cpu", "requests.memory", "limits.cpu", "pods", "requests.storage", "hugepages-2Mi",
                "requests.nvidia.com/gpu", "count/deployments.apps", "gold.storageclass.storage.k8s.io/requests.storage",
                "gpu", "requests.gpu", "nvidia.com/gpu", "limits.nvidia.com/gpu", "a/b/c", "Nvidia.com/GPU!"):
        if ours(key):
            assert api_takes(key), "kfocp takes %r, the API server refuses it" % key
        elif api_takes(key):
            never_counted.append(key)
    assert never_counted == ["nvidia.com/gpu", "limits.nvidia.com/gpu"]
    # quota admission counts nvidia.com/gpu only as requests.nvidia.com/gpu
    configmaps = kube.resource("v1", "ConfigMap")

    def refusal(kind, body):
        try:
            kube.request("POST", kube.path(kind, space), query={"dryRun": "All"}, body=body)
            return None
        except KubeError as err:
            assert err.status == 403 and "quota" in str(err), err
            return str(err)

    for key in never_counted + ["requests.nvidia.com/gpu"]:
        for old in kube.list(quotas, namespace=space):
            kube.delete(quotas, old["metadata"]["name"], space)
        name = "q-%d" % time.monotonic_ns()
        kube.request("POST", kube.path(quotas, space), body={
            "apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name},
            "spec": {"hard": {key: "0", "count/configmaps": "0"}}})
        # quota admission reads quotas from its own informer, which can lag the write; a ConfigMap
        # refused by this quota, by name, shows it holds this quota with the status the controller set
        probe = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}}
        wait_for(lambda: "exceeded quota: %s," % name in (refusal(configmaps, probe) or ""), 30,
                 what="quota admission to enforce %s (%s)" % (name, key))
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpu-%d" % time.monotonic_ns()},
               "spec": {"containers": [{"name": "c", "image": "registry.example/c:1",
                                        "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}
        refused = refusal(pods, pod)
        assert refused is None or "exceeded quota" in refused, refused
        admitted = refused is None
        assert admitted is (key != "requests.nvidia.com/gpu"), key
