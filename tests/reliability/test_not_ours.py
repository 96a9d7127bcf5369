"""Not ours to touch: what someone else owns stays as it is, and a conflict is reported, never forced.

The real roles run (playbooks/profiles.yml, site.yml, uninstall.yml) against objects made by other
field managers and against look-alikes of kfocp's objects that kfocp did not create. Each test
prints its figures: objects seeded, compared, changed.
"""
import json

import pytest

from helpers import only_roles

from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o

# Profile namespaces here carry this label instead of the profile controller's
# app.kubernetes.io/part-of=kubeflow-profile, and namespace_policies selects them by it: no other
# kfocp on a shared control plane (an operator's fast path) acts on them.
TEST_LABEL = "kfocp-test-profile"
TOLERATIONS = "scheduler.alpha.kubernetes.io/defaultTolerations"
THEIR_TOLERATIONS = json.dumps([{"key": "team-gpu", "operator": "Exists", "effect": "NoSchedule"}])


def apply_as(kube, manager, *objs):
    """Server-side apply `objs` with field manager `manager`, as another tool or person would."""
    for obj in objs:
        kube.apply(kube.resource(obj["apiVersion"], obj["kind"]), obj, manager, force=True)


def profile_namespace(name, instance):
    """A profile namespace, as the profile controller makes it, for this test's selector."""
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {TEST_LABEL: instance}}}


def policies(instance, **more):
    """namespace_policies kept to this test's namespaces (the control plane is shared)."""
    extra = {"kfocp_instance": instance,
             "namespace_policies_selector": {TEST_LABEL: instance},
             "namespace_policies_whitelist_namespaces": [instance + "-*"]}
    extra.update(more)
    return extra


def live(kube, api_version, kind, name, namespace=None):
    return kube.get(kube.resource(api_version, kind), name, namespace)


def owners(obj):
    """{manager: operation} of every managedFields entry."""
    return dict((e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields") or [])


def field_owner(obj, *path):
    """The managers whose managedFields own the leaf f:<path>."""
    found = []
    for entry in obj["metadata"].get("managedFields") or []:
        node = entry.get("fieldsV1") or {}
        for part in path:
            node = node.get("f:" + part) if isinstance(node, dict) else None
        if node is not None:
            found.append(entry["manager"])
    return sorted(found)


def failure(result):
    """The message of the failed apply task of a playbook run."""
    for event in result.events:  # the event says it failed: the result itself need not carry `failed`
        data = event.get("event_data") or {}
        if event.get("event") == "runner_on_failed" and str(data.get("task_action", "")).endswith(("apply", "tenancy")):
            return (data.get("res") or {}).get("msg", "")
    return result.stdout[-3000:]


# (metadata field, key, the value someone else set). With mesh mode "mesh" on the local inventory
# (an existing Istio, no revision) kfocp labels profile namespaces istio-injection=enabled; in
# every mode it annotates them with the GPU default tolerations.
FOREIGN_FIELDS = [("labels", "istio-injection", "disabled"), ("annotations", TOLERATIONS, THEIR_TOLERATIONS)]


@pytest.mark.parametrize("mesh_mode", ["mesh", "memberroll"])
def test_namespace_fields_someone_else_set_are_reported_not_overwritten(playbook, kube, instance, mesh_mode):
    """In memberroll mode the member roll is applied with force: that must not spread to the rest."""
    names = ["%s-p%d" % (instance, index) for index in range(len(FOREIGN_FIELDS))]
    for name, (field, key, value) in zip(names, FOREIGN_FIELDS):
        apply_as(kube, "profile-controller", profile_namespace(name, instance))
        apply_as(kube, "platform-admin", {"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": name, field: {key: value}}})
    extra = policies(instance, namespace_policies_mesh_mode=mesh_mode)
    if mesh_mode == "memberroll":
        mesh = instance + "-mesh"
        apply_as(kube, "mesh-owner", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": mesh}},
                 {"apiVersion": "maistra.io/v1", "kind": "ServiceMeshMemberRoll",
                  "metadata": {"name": "default", "namespace": mesh}, "spec": {"members": ["kubeflow"]}})
        extra["namespace_policies_mesh_namespace"] = mesh
    before = dict((name, live(kube, "v1", "Namespace", name)) for name in names)

    result = playbook("profiles", extra)
    message = failure(result)
    after = dict((name, live(kube, "v1", "Namespace", name)) for name in names)
    assert result.rc != 0, "the conflict was not reported:\n" + result.stdout[-3000:]
    reported = 0
    for name, (field, key, value) in zip(names, FOREIGN_FIELDS):
        print("mesh mode %s, %s %s: owners before %s, after %s" % (
            mesh_mode, field, key, field_owner(before[name], "metadata", field, key),
            field_owner(after[name], "metadata", field, key)))
        assert after[name]["metadata"][field][key] == value
        assert field_owner(after[name], "metadata", field, key) == ["platform-admin"]
        if mesh_mode != "mesh" and field == "labels":
            continue  # only mesh mode labels namespaces: no conflict here, kfocp adds its annotation
        reported += 1
        assert "Namespace %s" % name in message, message
        assert ".metadata.%s.%s (owned by platform-admin)" % (field, key) in message, message
        assert o.strip(after[name]) == o.strip(before[name]) and owners(after[name]) == owners(before[name])
        assert after[name]["metadata"]["resourceVersion"] == before[name]["metadata"]["resourceVersion"]
    print("mesh mode %s: run rc=%s, %d conflicts reported, %d foreign fields kept"
          % (mesh_mode, result.rc, reported, len(names)))


def test_a_hand_made_limitrange_with_kfocps_name_is_left_alone(playbook, kube, instance):
    name = instance + "-p"
    apply_as(kube, "profile-controller", profile_namespace(name, instance))
    hand = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "kfocp-limits", "namespace": name},
            "spec": {"limits": [{"type": "Container", "default": {"cpu": "3", "memory": "1Gi"}}]}}
    kube.request("POST", kube.path(kube.resource("v1", "LimitRange"), name), body=hand, query={"fieldManager": "alice"})
    before = live(kube, "v1", "LimitRange", "kfocp-limits", name)

    result = playbook("profiles", policies(instance, namespace_policies_mesh_mode="none"))
    message = failure(result)
    after = live(kube, "v1", "LimitRange", "kfocp-limits", name)
    print("hand-made LimitRange: run rc=%s, managers %s -> %s" % (result.rc, owners(before), owners(after)))
    assert result.rc != 0
    assert "LimitRange %s/kfocp-limits" % name in message and "created by someone else" in message, message
    assert after == before


def test_the_member_roll_keeps_the_mesh_owners_members_through_converge_and_uninstall(playbook, kube, instance):
    mesh, first, second = instance + "-mesh", instance + "-p1", instance + "-p2"
    theirs = ["kubeflow", instance + "-theirs"]
    apply_as(kube, "profile-controller", profile_namespace(first, instance), profile_namespace(second, instance))
    apply_as(kube, "mesh-owner", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": mesh}},
             {"apiVersion": "maistra.io/v1", "kind": "ServiceMeshMemberRoll",
              "metadata": {"name": "default", "namespace": mesh, "labels": {"owner": "mesh-team"}},
              "spec": {"members": theirs}})
    before = live(kube, "maistra.io/v1", "ServiceMeshMemberRoll", "default", mesh)
    extra = policies(instance, namespace_policies_mesh_mode="memberroll", namespace_policies_mesh_namespace=mesh)

    converged = playbook("profiles", extra)
    assert converged.rc == 0, converged.stdout[-3000:]
    roll = live(kube, "maistra.io/v1", "ServiceMeshMemberRoll", "default", mesh)
    assert roll["spec"]["members"] == theirs + [first, second]
    assert playbook("profiles", extra).changed == 0

    # the mesh owner adds a member; a profile namespace goes away: both are followed, theirs kept
    roll["spec"]["members"] = roll["spec"]["members"] + [instance + "-late"]
    kube.request("PUT", kube.path(kube.resource("maistra.io/v1", "ServiceMeshMemberRoll"), mesh, "default"),
                 body=roll, query={"fieldManager": "mesh-owner"})
    kube.request("PATCH", kube.path(kube.resource("v1", "Namespace"), None, second),
                 body={"metadata": {"labels": {TEST_LABEL: None}}}, content_type="application/merge-patch+json")
    again = playbook("profiles", extra)
    assert again.rc == 0, again.stdout[-3000:]
    roll = live(kube, "maistra.io/v1", "ServiceMeshMemberRoll", "default", mesh)
    assert roll["spec"]["members"] == theirs + [first, instance + "-late"]

    removed = playbook("uninstall", {"kfocp_instance": instance})
    assert removed.rc == 0, removed.stdout[-3000:]
    after = live(kube, "maistra.io/v1", "ServiceMeshMemberRoll", "default", mesh)
    print("member roll: %s before, %s converged, %s after uninstall"
          % (before["spec"]["members"], roll["spec"]["members"], after["spec"].get("members")))
    assert after["spec"].get("members") == theirs + [instance + "-late"]
    assert after["metadata"]["labels"] == before["metadata"]["labels"]
    assert not [k for k in after["metadata"].get("annotations") or {} if k.startswith("kfocp.io/")]


# ---------------------------------------------------------------- look-alikes survive prune and uninstall

def lookalikes(instance):
    """Objects kfocp did not create, each looking like kfocp's in one way. Returns
    (objects to apply as someone else, objects to create by hand)."""
    other, look, kfprofile = instance + "-other", instance + "-lookalike", instance + "-kfprofile"
    part_of = {o.PART_OF: o.MANAGER}

    def configmap(name, labels):
        return {"apiVersion": "v1", "kind": "ConfigMap", "data": {"made-by": "someone else"},
                "metadata": {"name": name, "namespace": other, "labels": labels}}

    applied = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": other}},
        # an unrelated namespace with the profile labels: namespace_policies patches it, and gives it back
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": look, "labels": {
            "app.kubernetes.io/part-of": "kubeflow-profile", "istio-injection": "enabled", TEST_LABEL: instance}}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": kfprofile, "labels": {
            "app.kubernetes.io/part-of": "kubeflow-profile"}}},
        # another kfocp install's namespace
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": instance + "-theirs", "labels": {
            o.MANAGED_BY: o.MANAGER, o.PART_OF: o.MANAGER, o.INSTANCE: instance + "-x", o.SET: "scc"}}},
        configmap("part-of-only", part_of),
        configmap("other-instance", dict(part_of, **{o.MANAGED_BY: o.MANAGER, o.INSTANCE: instance + "-x",
                                                     o.SET: "namespace-policies"})),
        configmap("set-without-instance", {o.MANAGED_BY: o.MANAGER, o.SET: "namespace-policies"}),
        configmap("set-only", {o.SET: "scc"}),
        configmap("component-label", dict(part_of, **{"kfocp.io/component": "tensorboards"})),
        configmap("instance-without-managed-by", dict(part_of, **{o.INSTANCE: instance})),
        configmap("patched-marker", {o.PATCHED_PREFIX + instance: "true"}),
        # kfocp's names, in a namespace kfocp does not manage
        {"apiVersion": "maistra.io/v1", "kind": "ServiceMeshMember",
         "metadata": {"name": "default", "namespace": other},
         "spec": {"controlPlaneRef": {"name": "their-smcp", "namespace": "their-mesh"}}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "kfocp-scc-nonroot-v2-trainer", "namespace": other,
                      "labels": dict(part_of, **{o.SET: "scc"})},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                     "name": "system:openshift:scc:nonroot-v2"},
         "subjects": [{"kind": "ServiceAccount", "name": "trainer", "namespace": other}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "kfocp-scc-anyuid-" + instance, "labels": part_of},
         "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
        # a Profile someone made by hand
        {"apiVersion": "kubeflow.org/v1", "kind": "Profile", "metadata": {"name": instance + "-hand"},
         "spec": {"owner": {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "someone@example.com"}}},
    ]
    by_hand = [{"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "kfocp-limits", "namespace": other},
                "spec": {"limits": [{"type": "Container", "default": {"cpu": "2"}}]}}]
    return applied, by_hand


def dump_of(kube, objs):
    """{identity: (uid, the object without server bookkeeping)} of `objs` as they are now."""
    out = {}
    for obj in objs:
        meta = obj["metadata"]
        found = kube.get(kube.resource(obj["apiVersion"], obj["kind"]), meta["name"], meta.get("namespace"))
        key = (obj["kind"], meta.get("namespace", ""), meta["name"])
        out[key] = None if found is None else (found["metadata"]["uid"], o.strip(found))
    return out


def changed_between(before, after):
    return sorted("%s %s/%s" % key for key in before if after.get(key) != before[key])


OWNED_KINDS = [("apps/v1", "Deployment"), ("v1", "Service"), ("v1", "ServiceAccount"), ("v1", "LimitRange"),
               ("rbac.authorization.k8s.io/v1", "RoleBinding"), ("kubeflow.org/v1", "Profile")]


def owned_count(kube, instance):
    """How many objects of OWNED_KINDS carry this instance's ownership labels."""
    return sum(len(kube.list(kube.resource(api_version, kind), label_selector=o.owner_selector(instance),
                             metadata_only=True)) for api_version, kind in OWNED_KINDS)


def site_vars(instance, pruned=False):
    """site.yml on the local inventory, kept to this test's namespaces, with some of everything:
    SCC grants, two components, two profiles, the namespace policies. `pruned`: one grant, one
    component and one profile fewer, and no LimitRange, so that four sets prune."""
    other = instance + "-other"
    grants = [{"namespace": instance + "-ns", "serviceaccount": "runner", "scc": "anyuid", "reason": "test"}]
    if not pruned:
        grants.append({"namespace": instance + "-ns", "serviceaccount": "trainer", "scc": "nonroot-v2",
                       "reason": "test"})
    profiles = [{"name": instance + "-p1", "owner": {"user": "alice@example.com"}}]
    if not pruned:
        profiles.append({"name": instance + "-p2", "owner": {"user": "bob@example.com"}})
    extra = dict(only_roles("scc", "service_mesh", "components", "profiles", "namespace_policies"),
                 **policies(instance, namespace_policies_mesh_mode="none"))
    extra.update({
        "scc_grants_default": [], "scc_grants_extra": grants,
        "components_namespace": instance + "-kf",
        "components_components": {"notebooks": "managed", "tensorboards": "removed" if pruned else "managed"},
        "profiles_list": profiles, "kfocp_profiles_prune": pruned,
        "namespace_policies_limitrange": {} if pruned else {"default": {"cpu": "1"}},
        "namespace_policies_whitelist_exclude": [other],
    })
    return extra


def test_prune_and_uninstall_delete_only_what_kfocp_labelled(playbook, kube, instance):
    applied, by_hand = lookalikes(instance)
    apply_as(kube, "someone-else", *applied)
    for obj in by_hand:
        kube.request("POST", kube.path(kube.resource(obj["apiVersion"], obj["kind"]), obj["metadata"]["namespace"]),
                     body=obj, query={"fieldManager": "alice"})
    seeded = applied + by_hand
    # namespace_policies patches these two (shared objects) while installed, and gives them back
    patched = set([("Namespace", "", instance + "-lookalike"), ("Namespace", "", instance + "-kfprofile")])
    before = dump_of(kube, seeded)
    assert all(before.values())

    installed = playbook("site", site_vars(instance))
    assert installed.rc == 0, installed.stdout[-4000:]
    during = dump_of(kube, seeded)
    look = during[("Namespace", "", instance + "-lookalike")][1]["metadata"]
    assert "patched.kfocp.io/" + instance in look["labels"], "namespace_policies did not act on the look-alike profile"
    owned = owned_count(kube, instance)
    pruned = playbook("site", site_vars(instance, pruned=True))
    assert pruned.rc == 0, pruned.stdout[-4000:]
    deleted_by_prune = owned - owned_count(kube, instance)
    after_prune = dump_of(kube, seeded)
    removed = playbook("uninstall", {"kfocp_instance": instance})
    assert removed.rc == 0, removed.stdout[-4000:]
    summary = removed.task_results("apply")[-1]["summary"]  # the last: after the Profiles, everything else
    after = dump_of(kube, seeded)

    print("look-alikes seeded %d; prune deleted %d of kfocp's objects, uninstall deleted %d and gave back %d; "
          "look-alikes changed: after install %d, after prune %d, after uninstall %d"
          % (len(seeded), deleted_by_prune, summary["deleted"], summary["released"],
             len(changed_between(dict((k, v) for k, v in before.items() if k not in patched), during)),
             len(changed_between(dict((k, v) for k, v in before.items() if k not in patched), after_prune)),
             len(changed_between(before, after))))
    # a grant's RoleBinding, a Profile, a LimitRange, tensorboards' two Deployments, Services and accounts
    assert deleted_by_prune >= 9, "prune did not do its work: %s" % pruned.stdout[-3000:]
    assert summary["deleted"] >= 5 and summary["released"] >= 2, summary
    unpatched = dict((k, v) for k, v in before.items() if k not in patched)
    assert not changed_between(unpatched, during)
    assert not changed_between(unpatched, after_prune)
    assert not changed_between(before, after), "\n".join(
        "%s\nbefore %s\nafter  %s" % (key, before[key], after.get(key))
        for key in before if after.get(key) != before[key])
