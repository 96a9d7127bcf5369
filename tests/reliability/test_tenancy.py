"""Tenancy, checked by the real API server's authorizer.

The access comes from where it comes from on a real cluster: upstream Kubeflow's kubeflow-admin,
kubeflow-edit and kubeflow-view ClusterRoles (common/kubeflow-roles of kubeflow/manifests, the
copy in tests/fixtures/manifests, installed by the components role and aggregated by the
controller manager), the namespaceAdmin RoleBinding the profile controller makes for a Profile's
owner (played by tests.helpers.play_profile_controller), and the contributor RoleBindings the
profiles role makes. Each question is asked as a SubjectAccessReview (spec.user, spec.groups) and
some also as real requests with that user's own client certificate.
"""
from helpers import ROOT, components_only, play_profile_controller, profile_controller, subject_access_review, wait_for

from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client, KubeError

ROLES = str(ROOT / "tests" / "fixtures" / "playbooks" / "roles.yml")
# (verb, resource, API group) of the questions below
GET_PODS, LIST_PODS, CREATE_PODS, DELETE_PODS = ("get", "pods", ""), ("list", "pods", ""), ("create", "pods", ""), \
    ("delete", "pods", "")
GET_SECRETS, GET_CONFIGMAPS, UPDATE_CONFIGMAPS = ("get", "secrets", ""), ("get", "configmaps", ""), \
    ("update", "configmaps", "")
LIST_DEPLOYMENTS, PATCH_DEPLOYMENTS = ("list", "deployments", "apps"), ("patch", "deployments", "apps")
CREATE_ROLEBINDINGS = ("create", "rolebindings", "rbac.authorization.k8s.io")
GET_NAMESPACE = ("get", "namespaces", "")


def aggregated(kube, name):
    role = kube.get(kube.resource("rbac.authorization.k8s.io/v1", "ClusterRole"), name)
    return bool(role and role.get("rules"))


def as_user(control_plane, tmp_path, user, groups=()):
    path = control_plane.write_kubeconfig(tmp_path / ("%s.kubeconfig" % user.replace(":", "-")), user, list(groups))
    return Client.from_params({"kubeconfig": str(path)}, retries=0)


def status_of(client, method, path, body=None):
    try:
        client.request(method, path, body=body)
        return 200
    except KubeError as err:
        return err.status


def test_profile_access_matches_the_roles(playbook, kube, control_plane, instance, tmp_path):
    alice, carol, dave = instance + "-alice", instance + "-carol", instance + "-dave"
    member, token_member, mallory = instance + "-m1", instance + "-erin", instance + "-mallory"
    team = instance + "-team"
    mine, theirs = instance + "-pa", instance + "-pt"
    groups = kube.resource("user.openshift.io/v1", "Group")
    kube.apply(groups, {"apiVersion": "user.openshift.io/v1", "kind": "Group", "metadata": {"name": team},
                        "users": [member]}, "openshift-admin", force=True)
    profiles = {"kfocp_instance": instance, "kfocp_roles": ["kfocp.kubeflow.profiles"],
                "profiles_list": [
                    {"name": mine, "owner": {"user": alice},
                     "contributors": [{"user": carol, "role": "view"}, {"user": dave, "role": "edit"}]},
                    {"name": theirs, "owner": {"group": team}}]}
    try:
        roles = playbook("components", components_only(instance, "kubeflow-roles"))
        assert roles.rc == 0, roles.stdout[-3000:]
        for name in ("kubeflow-view", "kubeflow-edit", "kubeflow-admin"):
            wait_for(lambda: aggregated(kube, name), 30, what="the aggregation controller to fill in %s" % name)
        first = playbook(ROLES, profiles)
        assert first.rc == 0, first.stdout[-3000:]
        assert sorted(play_profile_controller(control_plane, [mine, theirs])) == sorted([mine, theirs])
        access = playbook(ROLES, profiles)
        assert access.rc == 0, access.stdout[-3000:]
        again = playbook("components", components_only(instance, "kubeflow-roles"))
        assert again.rc == 0 and again.changed == 0, again.stdout[-3000:]

        expected = [
            # the owner edits their namespace, and shares it
            (alice, (), CREATE_PODS, mine, True), (alice, (), DELETE_PODS, mine, True),
            (alice, (), GET_SECRETS, mine, True), (alice, (), PATCH_DEPLOYMENTS, mine, True),
            (alice, (), CREATE_ROLEBINDINGS, mine, True), (alice, (), GET_NAMESPACE, mine, True),
            # a contributor with view reads, and does nothing else
            (carol, (), GET_PODS, mine, True), (carol, (), LIST_PODS, mine, True),
            (carol, (), GET_CONFIGMAPS, mine, True), (carol, (), LIST_DEPLOYMENTS, mine, True),
            (carol, (), CREATE_PODS, mine, False), (carol, (), DELETE_PODS, mine, False),
            (carol, (), UPDATE_CONFIGMAPS, mine, False), (carol, (), PATCH_DEPLOYMENTS, mine, False),
            (carol, (), GET_SECRETS, mine, False), (carol, (), CREATE_ROLEBINDINGS, mine, False),
            # a contributor with edit edits, but does not hand out access
            (dave, (), CREATE_PODS, mine, True), (dave, (), GET_SECRETS, mine, True),
            (dave, (), CREATE_ROLEBINDINGS, mine, False),
            # nobody reads another profile's namespace
            (alice, (), GET_PODS, theirs, False), (alice, (), LIST_PODS, theirs, False),
            (alice, (), GET_NAMESPACE, theirs, False), (carol, (), LIST_PODS, theirs, False),
            (member, (), LIST_PODS, mine, False), (token_member, (team,), GET_CONFIGMAPS, mine, False),
            (mallory, (), GET_PODS, mine, False), (mallory, (), GET_PODS, theirs, False),
            # a member of the OpenShift Group gets the group profile's role (edit) by its per-member binding;
            # a user whose identity carries the group gets the owner's (admin) through namespaceAdmin
            (member, (), CREATE_PODS, theirs, True), (member, (), GET_SECRETS, theirs, True),
            (member, (), CREATE_ROLEBINDINGS, theirs, False),
            (token_member, (team,), CREATE_ROLEBINDINGS, theirs, True),
            (token_member, (team,), CREATE_PODS, theirs, True),
            (token_member, (), GET_PODS, theirs, False),
        ]
        wrong = []
        for user, user_groups, (verb, resource, api_group), namespace, want in expected:
            got, reason = subject_access_review(kube, user, user_groups, verb, resource, api_group, namespace,
                                                namespace if resource == "namespaces" else None)
            if got != want:
                wrong.append("%s%s %s %s in %s: %s, expected %s (%s)" % (user, list(user_groups), verb, resource,
                                                                         namespace, got, want, reason))
        allowed = sum(1 for case in expected if case[-1])
        print("SubjectAccessReviews: %d asked, %d allowed, %d denied, %d wrong"
              % (len(expected), allowed, len(expected) - allowed, len(wrong)))
        assert not wrong, "\n".join(wrong)

        # the same answers for real requests, each with the user's own credentials
        pods_of, configmaps_of = "/api/v1/namespaces/%s/pods", "/api/v1/namespaces/%s/configmaps"
        configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "tenancy-probe"}, "data": {"a": "b"}}
        requests = [
            (as_user(control_plane, tmp_path, alice), "GET", pods_of % mine, None, 200),
            (as_user(control_plane, tmp_path, alice), "GET", pods_of % theirs, None, 403),
            (as_user(control_plane, tmp_path, carol), "GET", configmaps_of % mine, None, 200),
            (as_user(control_plane, tmp_path, carol), "POST", configmaps_of % mine, configmap, 403),
            (as_user(control_plane, tmp_path, token_member, [team]), "POST", configmaps_of % theirs, configmap, 200),
            (as_user(control_plane, tmp_path, member), "GET", pods_of % mine, None, 403),
        ]
        seen = [(method, path, status_of(client, method, path, body), want)
                for client, method, path, body, want in requests]
        print("real requests: %d, allowed %d, forbidden %d" % (len(seen), sum(1 for s in seen if s[2] == 200),
                                                               sum(1 for s in seen if s[2] == 403)))
        assert [s[2] for s in seen] == [s[3] for s in seen], seen
        made = kube.get(kube.resource("v1", "ConfigMap"), "tenancy-probe", theirs)
        assert made["data"] == {"a": "b"}
    finally:
        with profile_controller(control_plane, kube=kube):  # it releases the Profiles the uninstall deletes
            removed = playbook("uninstall", {"kfocp_instance": instance})
        kube.request("DELETE", kube.path(groups, None, team), allow=(404,))
    assert removed.rc == 0, removed.stdout[-3000:]
