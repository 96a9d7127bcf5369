"""The namespace_policies role through playbooks/profiles.yml against the real API server, and
proof with real Pods (they stay Pending: there is no kubelet) that the admission plugins the
policies rely on (PodTolerationRestriction, ResourceQuota, LimitRanger) enforce them."""
import json

import pytest

from helpers import ROOT, isolated_policies, play_profile_controller, wait_for
from test_profiles import apply_objects, named

PSA = "pod-security.kubernetes.io/"
GPU_TOLERATION = {"key": "workload", "operator": "Equal", "value": "ai-ml", "effect": "NoSchedule"}


def pod(name, namespace, tolerations=None, limits=None):
    container = {"name": "main", "image": "registry.example/app:1"}
    if limits:
        container["resources"] = {"limits": limits}
    spec = {"containers": [container]}
    if tolerations:
        spec["tolerations"] = tolerations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def create_pod(control_plane, obj):
    return control_plane.kubectl("create", "-o", "json", "-f", "-", input=json.dumps(obj), check=False)


# How a profile namespace joins the mesh, per flavour of the service_mesh role (the local
# inventory's is external): (labels it gets, the control plane of its ServiceMeshMember or None).
MESH = {
    "ossm2": ({"kfocp.io/mesh": "kubeflow"}, {"name": "kubeflow", "namespace": "kubeflow-mesh"}),
    "ossm3": ({"kfocp.io/mesh": "kubeflow", "istio-injection": "enabled"}, None),
    "external": ({"istio-injection": "enabled"}, None),
}


def assert_in_mesh(kube, profile, flavour):
    labels, control_plane_ref = MESH[flavour]
    live_labels = kube.get(kube.resource("v1", "Namespace"), profile)["metadata"]["labels"]
    assert dict((k, live_labels.get(k)) for k in labels) == labels
    members = named(kube, "maistra.io/v1", "ServiceMeshMember", profile)
    if control_plane_ref:
        assert members["default"]["spec"]["controlPlaneRef"] == control_plane_ref
    else:
        assert not members, "%s joins by labels, not by ServiceMeshMember" % flavour


def test_policies_on_and_off_and_their_effect_on_pods(playbook, kube, control_plane, instance, flavour="ossm3"):
    profile, web, strict, cni = instance + "-p", instance + "-web", instance + "-strict", instance + "-cni"
    for name in (web, cni):  # made by someone else, as the mesh's CNI namespace may be
        apply_objects(control_plane, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    extra = dict(isolated_policies(instance), kfocp_instance=instance, service_mesh_flavour=flavour,
                 service_mesh_ossm3={"cni_namespace": cni},
                 profiles_quota_default={"requests.nvidia.com/gpu": "1"},
                 profiles_list=[{"name": profile, "owner": {"user": "alice@example.com"}},
                                {"name": strict, "owner": {"user": "bob@example.com"}}],
                 namespace_policies_scc="nonroot", namespace_policies_serverless=True,
                 namespace_policies_data_lake=True,
                 namespace_policies_data_lake_role_template="arn:aws:iam::123456789012:role/kf-{namespace}")
    first = playbook("profiles", extra)
    assert first.rc == 0, first.stdout
    play_profile_controller(control_plane, [profile], {"kfocp-test": instance})
    # a controller whose namespace-labels file sets upstream's restricted level (no kfocp components here)
    play_profile_controller(control_plane, [strict], {"kfocp-test": instance, PSA + "enforce": "restricted",
                                                      PSA + "enforce-version": "latest"})
    second = playbook("profiles", extra)
    assert second.rc == 0, second.stdout

    namespaces = kube.resource("v1", "Namespace")
    # the Pod Security labels: the role's level, except where the controller set another one: left, and reported
    labels = kube.get(namespaces, profile)["metadata"]["labels"]
    assert [labels[PSA + mode] for mode in ("enforce", "warn", "audit")] == ["baseline"] * 3
    assert labels[PSA + "enforce-version"] == "v1.36" and labels["security.openshift.io/scc.podSecurityLabelSync"] == "false"
    labels = kube.get(namespaces, strict)["metadata"]["labels"]
    assert labels[PSA + "enforce"] == "restricted" and PSA + "warn" not in labels
    assert "%s: %senforce=restricted (set by profile-controller)" % (strict, PSA) in second.stdout
    annotations = kube.get(namespaces, profile)["metadata"]["annotations"]
    assert json.loads(annotations["scheduler.alpha.kubernetes.io/defaultTolerations"]) == [GPU_TOLERATION]
    assert annotations["owner"] == "alice@example.com"  # the controller's annotation is kept
    whitelist = json.loads(kube.get(namespaces, web)["metadata"]["annotations"]["scheduler.alpha.kubernetes.io/tolerationsWhitelist"])
    assert whitelist and GPU_TOLERATION not in whitelist
    assert_in_mesh(kube, profile, flavour)
    assert "kfocp-scc-nonroot-default-editor" in named(kube, "rbac.authorization.k8s.io/v1", "RoleBinding", profile)
    netpol = named(kube, "networking.k8s.io/v1", "NetworkPolicy", profile)["allow-from-serving-system-namespace"]
    assert netpol["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"] == {
        "serving.knative.openshift.io/system-namespace": "true"}
    knative = named(kube, "security.istio.io/v1", "AuthorizationPolicy", profile)["kfocp-knative-kserve-predictor"]
    assert knative["spec"]["rules"][0]["from"][0]["source"]["principals"]
    accounts = named(kube, "v1", "ServiceAccount", profile)
    assert accounts["default-editor"]["metadata"]["annotations"]["eks.amazonaws.com/role-arn"] == \
        "arn:aws:iam::123456789012:role/kf-%s" % profile
    assert "eks.amazonaws.com/role-arn" not in (accounts["default-viewer"]["metadata"].get("annotations") or {})

    again = playbook("profiles", extra)
    assert again.rc == 0 and again.count("changed") == 0, again.stdout

    # a pod in the profile namespace receives the GPU toleration, and the LimitRange defaults
    made = create_pod(control_plane, pod("plain", profile))
    assert made.returncode == 0, made.stderr
    spec = json.loads(made.stdout)["spec"]
    assert GPU_TOLERATION in spec["tolerations"]
    assert spec["containers"][0]["resources"] == {"limits": {"cpu": "1", "memory": "2Gi"},
                                                  "requests": {"cpu": "100m", "memory": "256Mi"}}
    # a pod asking for the GPU toleration in a whitelisted namespace is rejected
    refused = create_pod(control_plane, pod("sneaky", web, tolerations=[GPU_TOLERATION]))
    assert refused.returncode != 0 and "conflict with its namespace whitelist" in refused.stderr
    assert create_pod(control_plane, pod("normal", web)).returncode == 0
    # the mesh's istio-cni-node tolerates every NoSchedule and NoExecute taint (Sail's cni chart):
    # admitted in the CNI namespace, which gets no whitelist; a whitelist would refuse it
    node_agent = [{"effect": "NoSchedule", "operator": "Exists"}, {"key": "CriticalAddonsOnly", "operator": "Exists"},
                  {"effect": "NoExecute", "operator": "Exists"}]
    assert create_pod(control_plane, pod("cni-node", cni, tolerations=node_agent)).returncode == 0
    refused = create_pod(control_plane, pod("cni-node", web, tolerations=node_agent))
    assert refused.returncode != 0 and "conflict with its namespace whitelist" in refused.stderr
    # a pod over the profile's GPU quota (from the Profile's resourceQuotaSpec) is rejected
    quotas = kube.resource("v1", "ResourceQuota")
    wait_for(lambda: (kube.get(quotas, "kf-resource-quota", profile).get("status") or {}).get("hard"), 30,
             what="the quota controller to compute kf-resource-quota")

    # quota admission reads the quota from its own informer, which can lag the controller's status
    # write: it refuses with "status unknown" until it has caught up
    def create_greedy():
        made = create_pod(control_plane, pod("greedy", profile, limits={"nvidia.com/gpu": "2"}))
        return None if "status unknown for quota" in made.stderr else made

    greedy = wait_for(create_greedy, 30, what="quota admission to know kf-resource-quota's status")
    assert greedy.returncode != 0 and "exceeded quota: kf-resource-quota" in greedy.stderr

    # serverless and data lake off: their objects go, the account's annotation is given back
    off = dict(extra, namespace_policies_serverless=False, namespace_policies_data_lake=False)
    third = playbook("profiles", off)
    assert third.rc == 0, third.stdout
    assert "allow-from-serving-system-namespace" not in named(kube, "networking.k8s.io/v1", "NetworkPolicy", profile)
    assert not [n for n in named(kube, "security.istio.io/v1", "AuthorizationPolicy", profile) if n.startswith("kfocp-knative")]
    account = named(kube, "v1", "ServiceAccount", profile)["default-editor"]
    assert "eks.amazonaws.com/role-arn" not in (account["metadata"].get("annotations") or {})
    assert kube.get(kube.resource("v1", "Namespace"), profile) is not None  # the controller's, never deleted


@pytest.mark.parametrize("flavour", ["ossm2", "external"])
def test_profile_namespaces_join_the_mesh_of_each_flavour(playbook, kube, control_plane, instance, flavour):
    """ossm3 is the flavour of the test above; the mesh flavour of the local inventory is external."""
    profile = instance + "-m"
    extra = dict(isolated_policies(instance), kfocp_instance=instance, service_mesh_flavour=flavour,
                 profiles_list=[{"name": profile, "owner": {"user": "carol@example.com"}}])
    assert playbook("profiles", extra).rc == 0
    play_profile_controller(control_plane, [profile], {"kfocp-test": instance})
    joined = playbook("profiles", extra)
    assert joined.rc == 0, joined.stdout
    assert_in_mesh(kube, profile, flavour)
    again = playbook("profiles", extra)
    assert again.rc == 0 and again.count("changed") == 0, again.stdout


@pytest.mark.parametrize("mode", ["memberroll"])
def test_memberroll_adds_members_and_keeps_the_mesh_owners(playbook, kube, control_plane, instance, mode):
    mesh_ns, profile = instance + "-mesh", instance + "-q"
    apply_objects(control_plane, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": mesh_ns}},
                  {"apiVersion": "maistra.io/v1", "kind": "ServiceMeshMemberRoll",
                   "metadata": {"name": "default", "namespace": mesh_ns}, "spec": {"members": ["kubeflow"]}})
    extra = dict(isolated_policies(instance), kfocp_instance=instance, namespace_policies_mesh_mode=mode,
                 namespace_policies_mesh_namespace=mesh_ns,
                 profiles_list=[{"name": profile, "owner": {"user": "bob@example.com"}}])
    assert playbook("profiles", extra).rc == 0
    play_profile_controller(control_plane, [profile], {"kfocp-test": instance})
    result = playbook("profiles", extra)
    assert result.rc == 0, result.stdout
    roll = named(kube, "maistra.io/v1", "ServiceMeshMemberRoll", mesh_ns)["default"]
    assert roll["spec"]["members"] == ["kubeflow", profile]
    assert "default" not in named(kube, "maistra.io/v1", "ServiceMeshMember", profile)


BAD_SELECTORS = [{"a": "b c"}, {"": ""}, {"a": "b,c=d"}, {"a": {"b": "c"}}]


def test_a_wrong_selector_removes_no_policies(playbook, kube, control_plane, instance):
    """A selector the API server cannot parse is refused before anything is read; one that is
    valid but selects no profile namespace is stopped by the prune guard, which names what it
    would have removed; with namespace_policies_prune_max_share: 1 the removal goes ahead."""
    profiles = ["%s-p%d" % (instance, i) for i in range(2)]
    for name in profiles:
        apply_objects(control_plane, {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": name, "labels": {"app.kubernetes.io/part-of": "kubeflow-profile", "kfocp-test": instance}}})
    extra = dict(isolated_policies(instance), kfocp_instance=instance, namespace_policies_mesh_mode="none",
                 kfocp_roles=["kfocp.kubeflow.namespace_policies"])
    roles = str(ROOT / "tests" / "fixtures" / "playbooks" / "roles.yml")
    first = playbook(roles, extra)
    assert first.rc == 0, first.stdout[-3000:]
    limits = kube.resource("v1", "LimitRange")
    assert all(kube.get(limits, "kfocp-limits", name) for name in profiles)

    for bad in BAD_SELECTORS:
        run = playbook(roles, dict(extra, namespace_policies_selector=bad))
        assert run.rc != 0 and "namespace_policies_selector" in run.stdout, (bad, run.stdout[-3000:])
        assert all(kube.get(limits, "kfocp-limits", name) for name in profiles), "removed after %r" % (bad,)

    nothing = dict(extra, namespace_policies_selector={"kfocp-test": instance + "-nobody"})
    guarded = playbook(roles, nothing)
    assert guarded.rc != 0 and "prune refused" in guarded.stdout, guarded.stdout[-3000:]
    assert "LimitRange %s/kfocp-limits" % profiles[0] in guarded.stdout, guarded.stdout[-3000:]
    assert all(kube.get(limits, "kfocp-limits", name) for name in profiles), "the guard let prune delete"

    allowed = playbook(roles, dict(nothing, namespace_policies_prune_max_share=1))
    assert allowed.rc == 0, allowed.stdout[-3000:]
    assert not any(kube.get(limits, "kfocp-limits", name) for name in profiles)
    done = playbook("uninstall", {"kfocp_instance": instance})
    assert done.rc == 0, done.stdout[-3000:]
