"""The stand-ins (tests/standins.py) against the API server, held to the facts of the controllers
they play: each test fails if its stand-in is made kinder than the real one."""
import standins
from helpers import ensure_namespace, play_olm_csv_succeeded, wait_for

OWN_PLANE = True  # it deploys a profile controller Deployment, which every profile test would read


def profile(kube, name, owner, hard=None):
    body = {"apiVersion": "kubeflow.org/v1", "kind": "Profile", "metadata": {"name": name},
            "spec": {"owner": {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": owner}}}
    if hard is not None:
        body["spec"]["resourceQuotaSpec"] = {"hard": hard}
    return kube.apply(kube.resource("kubeflow.org/v1", "Profile"), body, "test", force=True)


def get(kube, api_version, kind, name, namespace=None):
    return kube.get(kube.resource(api_version, kind), name, namespace)


def test_finalizer_is_added_and_only_the_controller_removes_it(kube):
    controller = standins.ProfileController(kube, {"t": "finalizer"})
    profile(kube, "fin-a", "alice")
    assert controller.step(["fin-a"]) == ["fin-a"]
    live = get(kube, "kubeflow.org/v1", "Profile", "fin-a")
    assert live["metadata"]["finalizers"] == [standins.FINALIZER]
    namespace = get(kube, "v1", "Namespace", "fin-a")
    assert namespace["metadata"]["annotations"]["owner"] == "alice"
    assert namespace["metadata"]["ownerReferences"][0]["uid"] == live["metadata"]["uid"]
    assert namespace["metadata"]["labels"]["istio-injection"] == "enabled"
    assert namespace["metadata"]["labels"]["app.kubernetes.io/part-of"] == "kubeflow-profile"

    kube.delete(kube.resource("kubeflow.org/v1", "Profile"), "fin-a")
    # the controller is "gone" (not stepped): the Profile stays Terminating
    for _look in range(3):
        stuck = get(kube, "kubeflow.org/v1", "Profile", "fin-a")
        assert stuck is not None and stuck["metadata"].get("deletionTimestamp")
    controller.step()
    wait_for(lambda: get(kube, "kubeflow.org/v1", "Profile", "fin-a") is None, 20, what="the Profile gone")


def test_a_refused_profile_stays_terminating_while_the_controller_runs(kube):
    """The controller returns before its finalizer block when it refuses a Profile, so deleting
    one that holds the finalizer never finishes until its namespace's owner is fixed."""
    controller = standins.ProfileController(kube, {"t": "refused-delete"})
    profile(kube, "fin-r", "alice")
    assert controller.step(["fin-r"]) == ["fin-r"]
    namespace = get(kube, "v1", "Namespace", "fin-r")
    namespace["metadata"]["annotations"]["owner"] = "bob"
    res = kube.resource("v1", "Namespace")
    kube.request("PUT", kube.path(res, None, "fin-r"), body=namespace)
    kube.delete(kube.resource("kubeflow.org/v1", "Profile"), "fin-r")
    for _pass in range(3):
        assert controller.step(["fin-r"]) == []
        stuck = get(kube, "kubeflow.org/v1", "Profile", "fin-r")
        assert stuck is not None and stuck["metadata"]["finalizers"] == [standins.FINALIZER]
    assert "not owned by profile creator alice" in controller.refused["fin-r"]
    namespace = get(kube, "v1", "Namespace", "fin-r")
    namespace["metadata"]["annotations"]["owner"] = "alice"
    kube.request("PUT", kube.path(res, None, "fin-r"), body=namespace)
    controller.step(["fin-r"])
    wait_for(lambda: get(kube, "kubeflow.org/v1", "Profile", "fin-r") is None, 20, what="the Profile gone")


def test_someone_elses_namespace_is_refused_and_not_taken_over(kube):
    controller = standins.ProfileController(kube)
    ensure_namespace(kube, "taken-a")  # an OpenShift project with no owner annotation
    res = kube.resource("v1", "Namespace")
    kube.apply(res, {"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": "taken-b", "annotations": {"owner": "bob"}}}, "someone", force=True)
    profile(kube, "taken-a", "alice", {"cpu": "1"})
    profile(kube, "taken-b", "alice")
    assert controller.step(["taken-a", "taken-b"]) == []
    for name in ("taken-a", "taken-b"):
        assert "not owned by profile creator alice" in controller.refused[name]
        assert not get(kube, "v1", "Namespace", name)["metadata"].get("ownerReferences")
        for api_version, kind, obj in (("rbac.authorization.k8s.io/v1", "RoleBinding", "namespaceAdmin"),
                                       ("security.istio.io/v1beta1", "AuthorizationPolicy", "ns-owner-access-istio"),
                                       ("v1", "ServiceAccount", "default-editor"),
                                       ("v1", "ResourceQuota", "kf-resource-quota")):
            assert get(kube, api_version, kind, obj, name) is None, (kind, name)
        # the Failed condition is written with Update on the main resource: the status subresource drops it
        assert not (get(kube, "kubeflow.org/v1", "Profile", name).get("status") or {}).get("conditions")
    assert get(kube, "v1", "Namespace", "taken-b")["metadata"]["annotations"]["owner"] == "bob"


def test_owner_change_is_refused_and_the_old_owner_keeps_admin(kube):
    controller = standins.ProfileController(kube)
    profile(kube, "owner-a", "alice")
    assert controller.step(["owner-a"]) == ["owner-a"]
    profile(kube, "owner-a", "carol")
    assert controller.step(["owner-a"]) == []
    assert get(kube, "v1", "Namespace", "owner-a")["metadata"]["annotations"]["owner"] == "alice"
    admin = get(kube, "rbac.authorization.k8s.io/v1", "RoleBinding", "namespaceAdmin", "owner-a")
    assert admin["subjects"][0]["name"] == "alice"


def test_labels_are_only_added_and_the_empty_value_removes(kube):
    profile(kube, "labels-a", "alice")
    standins.ProfileController(kube).step(["labels-a"])
    res = kube.resource("v1", "Namespace")
    kube.apply(res, {"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": "labels-a", "labels": {"app.kubernetes.io/part-of": "mine"}}},
               "someone", force=True)
    standins.ProfileController(kube, {"istio-injection": "", "pipelines.kubeflow.org/enabled": "false"}).step(
        ["labels-a"])
    labels = get(kube, "v1", "Namespace", "labels-a")["metadata"]["labels"]
    assert labels["app.kubernetes.io/part-of"] == "mine"      # kept, not overwritten
    assert labels["pipelines.kubeflow.org/enabled"] == "true"  # kept: it was set when created
    assert "istio-injection" not in labels                     # the empty value removes


def test_owned_objects_are_replaced_whole_and_the_quota_deleted_when_hard_is_empty(kube):
    controller = standins.ProfileController(kube)
    profile(kube, "replace-a", "alice", {"cpu": "2"})
    controller.step(["replace-a"])
    ap = kube.resource("security.istio.io/v1beta1", "AuthorizationPolicy")
    kube.apply(ap, {"apiVersion": ap.api_version, "kind": ap.kind,
                    "metadata": {"name": "ns-owner-access-istio", "namespace": "replace-a", "labels": {"mine": "x"}},
                    "spec": {"rules": [{"when": [{"key": "source.namespace", "values": ["evil"]}]}],
                             "selector": {"matchLabels": {"a": "b"}}}}, "kfocp", force=True)
    rb = kube.resource("rbac.authorization.k8s.io/v1", "RoleBinding")
    admin = get(kube, rb.api_version, "RoleBinding", "namespaceAdmin", "replace-a")
    admin["subjects"].append({"kind": "User", "name": "mallory", "apiGroup": "rbac.authorization.k8s.io"})
    kube.request("PUT", kube.path(rb, "replace-a", "namespaceAdmin"), body=admin)
    quota = kube.resource("v1", "ResourceQuota")
    kube.apply(quota, {"apiVersion": "v1", "kind": "ResourceQuota",
                       "metadata": {"name": "kf-resource-quota", "namespace": "replace-a"},
                       "spec": {"hard": {"memory": "1Gi"}}}, "kfocp", force=True)
    controller.step(["replace-a"])
    policy = get(kube, ap.api_version, ap.kind, "ns-owner-access-istio", "replace-a")
    assert policy["spec"] == standins.authorization_policy_spec("replace-a", "alice")
    assert policy["metadata"]["labels"] == {"mine": "x"}  # metadata it does not compare survives
    assert [s["name"] for s in get(kube, rb.api_version, "RoleBinding", "namespaceAdmin", "replace-a")["subjects"]] \
        == ["alice"]
    assert get(kube, "v1", "ResourceQuota", "kf-resource-quota", "replace-a")["spec"]["hard"] == {"cpu": "2"}

    profile(kube, "replace-a", "alice")  # no hard limits any more
    controller.step(["replace-a"])
    assert get(kube, "v1", "ResourceQuota", "kf-resource-quota", "replace-a") is None


def test_principals_and_labels_come_from_the_deployment_kfocp_made(kube):
    ensure_namespace(kube, "kubeflow")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "namespace-labels-data", "namespace": "kubeflow"},
          "data": {"namespace-labels.yaml": "istio-injection: ''\nistio.io/rev: r1\napp.kubernetes.io/part-of: kubeflow-profile\n"}}
    kube.apply(kube.resource("v1", "ConfigMap"), cm, "kfocp", force=True)
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": "profiles-deployment", "namespace": "kubeflow",
                               "labels": {"app.kubernetes.io/managed-by": "kfocp"}},
                  "spec": {"selector": {"matchLabels": {"app": "p"}},
                           "template": {"metadata": {"labels": {"app": "p"}},
                                        "spec": {"containers": [{"name": "manager", "image": "x", "env": [
                                            {"name": "ISTIO_INGRESS_GATEWAY_PRINCIPAL",
                                             "value": "cluster.local/ns/gw/sa/gw"}]}],
                                            "volumes": [{"name": "labels",
                                                         "configMap": {"name": "namespace-labels-data"}}]}}}}
    res = kube.resource("apps/v1", "Deployment")
    kube.apply(res, deployment, "kfocp", force=True)
    try:
        profile(kube, "env-a", "alice")
        standins.ProfileController(kube).step(["env-a"])
        policy = get(kube, "security.istio.io/v1beta1", "AuthorizationPolicy", "ns-owner-access-istio", "env-a")
        assert policy["spec"]["rules"][0]["from"][0]["source"]["principals"][0] == "cluster.local/ns/gw/sa/gw"
        labels = get(kube, "v1", "Namespace", "env-a")["metadata"]["labels"]
        assert labels.get("istio.io/rev") == "r1" and "istio-injection" not in labels
    finally:
        kube.delete(res, "profiles-deployment", "kubeflow")


def subscription(kube, namespace, package, approval):
    ensure_namespace(kube, namespace)
    res = kube.resource(*standins.SUBSCRIPTIONS)
    body = {"apiVersion": res.api_version, "kind": "Subscription", "metadata": {"name": package, "namespace": namespace},
            "spec": {"name": package, "channel": "stable", "source": "s", "sourceNamespace": "openshift-marketplace",
                     "installPlanApproval": approval}}
    return kube.apply(res, body, "kfocp", force=True)


def test_olm_manual_install_plans_wait_for_approval(kube):
    subscription(kube, "olm-manual", "op-m", "Manual")
    assert play_olm_csv_succeeded(kube, "olm-manual", "op-m") is None
    plans = kube.resource(*standins.INSTALL_PLANS)
    plan = kube.list(plans, namespace="olm-manual")[0]
    assert plan["spec"]["approved"] is False and plan["status"]["phase"] == "RequiresApproval"
    assert kube.list(kube.resource(*standins.CSVS), namespace="olm-manual") == []
    sub = get(kube, *standins.SUBSCRIPTIONS, name="op-m", namespace="olm-manual")
    assert sub["status"]["installPlanRef"]["name"] == plan["metadata"]["name"]
    kube.request("PATCH", kube.path(plans, "olm-manual", plan["metadata"]["name"]), body={"spec": {"approved": True}},
                 content_type="application/merge-patch+json")
    assert play_olm_csv_succeeded(kube, "olm-manual", "op-m") == "op-m.v1.0.0"
    csv = kube.list(kube.resource(*standins.CSVS), namespace="olm-manual")[0]
    assert csv["status"]["phase"] == "Succeeded"


def scc_pod(kube, namespace, name, pod_ctx=None, ctx=None, annotations=None):
    container = {"name": "main", "image": "registry.access.redhat.com/ubi9/ubi-minimal:9.6"}
    if ctx:
        container["securityContext"] = ctx
    body = {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "annotations": dict(annotations or {})},
            "spec": {"serviceAccountName": "app", "containers": [container], "securityContext": dict(pod_ctx or {})}}
    return kube.request("POST", kube.path(kube.resource("v1", "Pod"), namespace), body=body)


def test_scc_admission_checks_each_pod_against_the_sccs_its_account_and_creator_may_use(kube):
    """scc_admission_choice on the seeded SCCs (hack/seed/sccs.yaml), with the usable ones asked of
    the API server's RBAC: the account may use nonroot-v2 (a RoleBinding to its ClusterRole), the
    creator restricted-v2 (system:authenticated). The namespace's group block starts at 1000700000."""
    ns = "scc-live"
    ensure_namespace(kube, ns)
    ranges = {standins.UID_RANGE_ANNOTATION: "1000700000/10000", standins.GROUPS_ANNOTATION: "1000700000/10000"}
    kube.request("PATCH", kube.path(kube.resource("v1", "Namespace"), None, ns),
                 content_type="application/merge-patch+json", body={"metadata": {"annotations": ranges}})
    kube.apply(kube.resource("v1", "ServiceAccount"),
               {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "app", "namespace": ns}}, "test")
    kube.apply(kube.resource("rbac.authorization.k8s.io/v1", "RoleBinding"),
               {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "app-nonroot-v2", "namespace": ns},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                            "name": "system:openshift:scc:nonroot-v2"},
                "subjects": [{"kind": "ServiceAccount", "name": "app", "namespace": ns}]}, "test")
    creator = ("scc-live-creator", ("system:authenticated",))
    first = scc_pod(kube, ns, "fs-first", pod_ctx={"fsGroup": 1000700000})
    second = scc_pod(kube, ns, "fs-second", pod_ctx={"fsGroup": 1000700001})
    pinned = scc_pod(kube, ns, "pinned", annotations={"openshift.io/required-scc": "nonroot-v2"})
    not_root = scc_pod(kube, ns, "nonroot-false", ctx={"runAsUser": 1000, "runAsNonRoot": False})
    assert standins.scc_admission_choice(kube, first, *creator) == "restricted-v2"
    assert standins.scc_admission_choice(kube, second, *creator) == "nonroot-v2"
    assert standins.scc_admission_choice(kube, pinned, *creator) == "nonroot-v2"
    try:
        standins.scc_admission_choice(kube, not_root, *creator)
    except AssertionError as refused:
        assert "nonroot-v2: spec.containers[0].securityContext.runAsNonRoot false is not allowed" in str(refused)
        assert "anyuid: not usable by user or serviceaccount" in str(refused)
    else:
        raise AssertionError("runAsNonRoot false was admitted")
