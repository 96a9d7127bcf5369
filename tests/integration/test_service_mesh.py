"""The service_mesh role (ossm2, ossm3, external) and playbooks/mesh_migrate.yml against the real API server.

OLM and the mesh operators do not run here: helpers write the CSV and the Ready status they would.
"""
from helpers import ROOT, ensure_namespace, in_background, play_mesh_ready, play_olm_csv_succeeded

ROLES = str(ROOT / "tests" / "fixtures" / "playbooks" / "roles.yml")
FAST = {"service_mesh_wait_delay": 1, "service_mesh_csv_timeout": 20, "service_mesh_ready_timeout": 30}


def res(kube, api_version, kind):
    return kube.resource(api_version, kind)


def get(kube, api_version, kind, name, namespace=None):
    return kube.get(res(kube, api_version, kind), name, namespace)


def mesh_vars(instance, **more):
    """The role alone, on Service Mesh 2 unless `more` says otherwise (the local inventory's
    flavour is external)."""
    extra = {"kfocp_instance": instance, "kfocp_roles": ["kfocp.kubeflow.service_mesh"],
             "service_mesh_namespace": instance, "service_mesh_flavour": "ossm2",
             # Service Mesh 2 as on OpenShift 4.18, whose catalog kfocp knows its channel for
             "kfocp_openshift_version": "4.18"}
    extra.update(FAST)
    extra.update(more)
    return extra


def test_ossm2_waits_for_the_csv_and_the_control_plane_and_keeps_others_members(playbook, kube, instance):
    ensure_namespace(kube, "openshift-operators")
    play_olm_csv_succeeded(kube, "openshift-operators", "servicemeshoperator")
    extra = mesh_vars(instance)
    ready = in_background(play_mesh_ready, kube, "maistra.io/v2", "ServiceMeshControlPlane", "kubeflow", instance, 120)
    first = playbook(ROLES, extra)
    ready.join()
    assert first.rc == 0, first.stdout
    smcp = get(kube, "maistra.io/v2", "ServiceMeshControlPlane", "kubeflow", instance)
    assert smcp["spec"]["version"] == "v2.6"
    assert "kubeflow-ingressgateway" in smcp["spec"]["gateways"]["additionalIngress"]
    assert get(kube, "operators.coreos.com/v1alpha1", "Subscription", "servicemeshoperator", "openshift-operators")
    smmr_res = res(kube, "maistra.io/v1", "ServiceMeshMemberRoll")
    assert kube.get(smmr_res, "default", instance)["spec"] == {
        "memberSelectors": [{"matchLabels": {"kfocp.io/mesh": "kubeflow"}}]}

    # Others join namespaces through spec.members (the mesh operator, the per-namespace policies):
    # kfocp never sends that field, so it never takes members back.
    members = {"apiVersion": "maistra.io/v1", "kind": "ServiceMeshMemberRoll",
               "metadata": {"name": "default", "namespace": instance}, "spec": {"members": ["team-a", "team-b"]}}
    kube.apply(smmr_res, members, "namespace-policies")
    again = playbook(ROLES, extra)
    assert again.rc == 0 and again.count("changed") == 0, again.stdout
    check = playbook(ROLES, extra, check=True, diff=True)
    assert check.rc == 0 and check.count("changed") == 0, check.stdout
    # a change of kfocp's own spec keeps the members too
    changed = playbook(ROLES, dict(extra, service_mesh_ossm2={"member_selector": False}))
    assert changed.rc == 0 and changed.count("changed") == 1, changed.stdout
    roll = kube.get(smmr_res, "default", instance)
    assert roll["spec"] == {"members": ["team-a", "team-b"]}

    absent = playbook(ROLES, dict(extra, service_mesh_state="absent"))
    assert absent.rc == 0, absent.stdout
    assert get(kube, "maistra.io/v2", "ServiceMeshControlPlane", "kubeflow", instance) is None
    assert get(kube, "operators.coreos.com/v1alpha1", "Subscription", "servicemeshoperator", "openshift-operators") is None
    gone = playbook("uninstall", {"kfocp_instance": instance})
    assert gone.rc == 0, gone.stdout


def test_csv_that_never_succeeds_fails_with_a_clear_message(playbook, kube, instance):
    ensure_namespace(kube, "openshift-operators")
    play_olm_csv_succeeded(kube, "openshift-operators", "slowmesh", phase="Installing")
    extra = mesh_vars(instance, service_mesh_csv_timeout=3,
                      service_mesh_ossm2={"subscription": {"name": "slowmesh"}})
    result = playbook(ROLES, extra)
    assert result.rc != 0
    assert "The slowmesh operator is not installed" in result.stdout
    assert "operators.coreos.com/slowmesh.openshift-operators" in result.stdout
    assert "slowmesh.v1.0.0" in result.stdout
    # nothing but the Subscription was applied
    assert get(kube, "maistra.io/v2", "ServiceMeshControlPlane", "kubeflow", instance) is None
    assert playbook("uninstall", {"kfocp_instance": instance}).rc == 0


def test_ossm3_istio_cni_and_injected_gateway(playbook, kube, instance):
    extra = mesh_vars(instance, service_mesh_flavour="ossm3", service_mesh_olm=False,
                      service_mesh_ossm3={"name": instance, "cni_namespace": instance + "-cni"})
    # IstioCNI must be named default: one per cluster; this test owns it while it runs
    ready = in_background(play_mesh_ready, kube, "sailoperator.io/v1", "Istio", instance, None, 120)
    first = playbook(ROLES, extra)
    ready.join()
    assert first.rc == 0, first.stdout
    istio = get(kube, "sailoperator.io/v1", "Istio", instance)
    assert istio["spec"]["namespace"] == instance
    assert istio["spec"]["values"]["meshConfig"]["discoverySelectors"] == [{"matchLabels": {"kfocp.io/mesh": "kubeflow"}}]
    assert get(kube, "sailoperator.io/v1", "IstioCNI", "default")["spec"]["namespace"] == instance + "-cni"
    deploy = get(kube, "apps/v1", "Deployment", "kubeflow-ingressgateway", instance)
    assert deploy["spec"]["template"]["metadata"]["annotations"]["inject.istio.io/templates"] == "gateway"
    assert deploy["spec"]["template"]["metadata"]["labels"]["istio.io/rev"] == instance
    ns = get(kube, "v1", "Namespace", instance)
    assert ns["metadata"]["labels"]["kfocp.io/mesh"] == "kubeflow"
    assert ns["metadata"]["labels"]["istio.io/rev"] == instance
    again = playbook(ROLES, extra)
    assert again.rc == 0 and again.count("changed") == 0, again.stdout
    assert playbook("uninstall", {"kfocp_instance": instance}).rc == 0
    assert get(kube, "sailoperator.io/v1", "IstioCNI", "default") is None


def test_external_creates_nothing_and_bad_input_fails_first(playbook, kube, instance):
    extra = mesh_vars(instance, service_mesh_flavour="external",
                      service_mesh_external={"namespace": "corp-istio", "gateway": "corp-gateway"})
    result = playbook(ROLES, extra)
    assert result.rc == 0 and result.count("changed") == 0, result.stdout
    assert get(kube, "v1", "Namespace", instance) is None
    bad = playbook(ROLES, mesh_vars(instance, service_mesh_flavour="external", service_mesh_external={}))
    assert bad.rc != 0
    assert "service_mesh_external.namespace: is required with the external flavour" in bad.stdout
    spec = playbook(ROLES, mesh_vars(instance, service_mesh_flavour="ossm5"))
    assert spec.rc != 0 and "service_mesh_flavour" in spec.stdout
    assert get(kube, "v1", "Namespace", instance) is None


def _profiles(kube, prefix, count):
    """Profile-like namespaces, made by the profile controller (not kfocp), each a 2.6 mesh member."""
    ns_res = res(kube, "v1", "Namespace")
    smm_res = res(kube, "maistra.io/v1", "ServiceMeshMember")
    names = ["%s-p%02d" % (prefix, i) for i in range(count)]
    for name in names:
        kube.apply(ns_res, {"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "kubeflow-profile",
                                                                  "owner": "profile-controller",
                                                                  "kfocp-test": prefix}}},
                   "profile-controller")
    return names, ns_res, smm_res


def test_migrate_ossm2_to_ossm3_with_50_profiles(playbook, kube, instance):
    ensure_namespace(kube, "openshift-operators")
    play_olm_csv_succeeded(kube, "openshift-operators", "servicemeshoperator")
    play_olm_csv_succeeded(kube, "openshift-operators", "servicemeshoperator3")
    old, new = instance, instance + "-m3"
    base = mesh_vars(instance, service_mesh_namespace=old, service_mesh_ossm3={"name": instance,
                                                                               "cni_namespace": instance + "-cni"})
    ready = in_background(play_mesh_ready, kube, "maistra.io/v2", "ServiceMeshControlPlane", "kubeflow", old, 120)
    assert playbook(ROLES, base).rc == 0
    ready.join()
    names, ns_res, smm_res = _profiles(kube, instance, 50)
    # a few join the way the per-namespace policies do it with Service Mesh 2: a ServiceMeshMember
    for name in names[:5]:
        kube.apply(smm_res, {"apiVersion": "maistra.io/v1", "kind": "ServiceMeshMember",
                             "metadata": {"name": "default", "namespace": name},
                             "spec": {"controlPlaneRef": {"name": "kubeflow", "namespace": old}}}, "namespace-policies")
    # a namespace that is not a profile and not a member, and the SMCP as kfocp made it
    bystander = instance + "-other"
    kube.apply(ns_res, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": bystander}}, "someone")
    before = {n["metadata"]["name"]: n for n in kube.list(ns_res) if n["metadata"]["name"].startswith(instance)}
    smcp_before = get(kube, "maistra.io/v2", "ServiceMeshControlPlane", "kubeflow", old)
    smms_before = dict((s["metadata"]["namespace"], s["metadata"]["resourceVersion"]) for s in kube.list(smm_res))

    # as an inventory gives them: extra vars would win over the flavour and namespace the playbook
    # sets for Service Mesh 3
    # (the selector keeps the move to this test's namespaces: the control plane is shared)
    migrate = dict(base, mesh_migrate_namespace=new, service_mesh_ossm2={"namespace": old},
                   mesh_migrate_member_selector="app.kubernetes.io/part-of=kubeflow-profile,kfocp-test=" + instance)
    del migrate["service_mesh_namespace"], migrate["service_mesh_flavour"]
    try:
        _migrate_and_check(playbook, kube, instance, migrate, names, ns_res, smm_res, before, bystander, smcp_before,
                           smms_before)
    finally:
        assert playbook("uninstall", {"kfocp_instance": instance}).rc == 0
    final = {n["metadata"]["name"]: n for n in kube.list(ns_res) if n["metadata"]["name"] in names}
    for name in names:  # uninstall gives the labels back
        assert "kfocp.io/mesh" not in final[name]["metadata"]["labels"], name
    for name in names + [bystander]:
        kube.delete(ns_res, name)


def _migrate_and_check(playbook, kube, instance, migrate, names, ns_res, smm_res, before, bystander, smcp_before,
                       smms_before):
    old, new = instance, instance + "-m3"
    ready = in_background(play_mesh_ready, kube, "sailoperator.io/v1", "Istio", instance, None, 180)
    first = playbook("mesh_migrate", migrate)
    ready.join()
    assert first.rc == 0, first.stdout
    assert "Member namespaces relabelled: 50" in first.stdout
    after = {n["metadata"]["name"]: n for n in kube.list(ns_res) if n["metadata"]["name"].startswith(instance)}
    for name in names:
        labels = after[name]["metadata"]["labels"]
        assert labels["kfocp.io/mesh"] == "kubeflow" and labels["istio.io/rev"] == instance, name
        # only labels were added; what the profile controller set is as it was
        added = set(labels) - set(before[name]["metadata"]["labels"])
        assert added == {"kfocp.io/mesh", "istio.io/rev", "patched.kfocp.io/" + instance}, name
        assert all(labels[k] == v for k, v in before[name]["metadata"]["labels"].items())
    assert after[bystander]["metadata"]["resourceVersion"] == before[bystander]["metadata"]["resourceVersion"]
    # the 2.6 control plane is kept, unchanged, and the ServiceMeshMembers are untouched
    smcp = get(kube, "maistra.io/v2", "ServiceMeshControlPlane", "kubeflow", old)
    assert smcp["metadata"]["resourceVersion"] == smcp_before["metadata"]["resourceVersion"]
    assert dict((s["metadata"]["namespace"], s["metadata"]["resourceVersion"]) for s in kube.list(smm_res)) == smms_before
    istio = get(kube, "sailoperator.io/v1", "Istio", instance)
    assert istio["spec"]["namespace"] == new

    second = playbook("mesh_migrate", migrate)
    assert second.rc == 0 and second.count("changed") == 0, second.stdout

    # the flag removes the 2.6 control plane; running it again still changes nothing
    remove = playbook("mesh_migrate", dict(migrate, mesh_migrate_remove_ossm2=True))
    assert remove.rc == 0, remove.stdout
    assert get(kube, "maistra.io/v2", "ServiceMeshControlPlane", "kubeflow", old) is None
    assert get(kube, "operators.coreos.com/v1alpha1", "Subscription", "servicemeshoperator3", "openshift-operators")
    again = playbook("mesh_migrate", dict(migrate, mesh_migrate_remove_ossm2=True))
    assert again.rc == 0 and again.count("changed") == 0, again.stdout


def test_migrate_refuses_a_control_plane_that_is_not_on_2_6(playbook, kube, instance):
    extra = mesh_vars(instance, service_mesh_wait=False, service_mesh_olm=False, service_mesh_ossm2={"version": "v2.5"})
    assert playbook(ROLES, extra).rc == 0
    migrate = dict(extra, mesh_migrate_namespace=instance + "-m3", service_mesh_ossm2={"version": "v2.5", "namespace": instance})
    del migrate["service_mesh_namespace"]
    result = playbook("mesh_migrate", migrate)
    assert result.rc != 0
    assert "is on version v2.5, not v2.6: upgrade it to v2.6 first" in result.stdout
    assert get(kube, "sailoperator.io/v1", "Istio", "default") is None
    assert playbook("uninstall", {"kfocp_instance": instance}).rc == 0


def test_a_stale_ready_is_not_taken_for_ready(playbook, kube, instance):
    ensure_namespace(kube, "openshift-operators")
    play_olm_csv_succeeded(kube, "openshift-operators", "servicemeshoperator")
    extra = mesh_vars(instance, service_mesh_ready_timeout=4)
    ready = in_background(play_mesh_ready, kube, "maistra.io/v2", "ServiceMeshControlPlane", "kubeflow", instance, 120)
    first = playbook(ROLES, extra)
    ready.join()
    assert first.rc == 0, first.stdout[-3000:]
    # the spec changes and the operator has not acted on it yet: its Ready is for the old generation
    changed = playbook(ROLES, dict(extra, service_mesh_gateway={"replicas": 3}))
    smcp = get(kube, "maistra.io/v2", "ServiceMeshControlPlane", "kubeflow", instance)
    assert smcp["metadata"]["generation"] > smcp["status"]["observedGeneration"]
    assert changed.rc != 0
    assert "did not report Ready for generation %d" % smcp["metadata"]["generation"] in " ".join(changed.stdout.split())
    # once the operator reports this generation, the run goes through
    play_mesh_ready(kube, "maistra.io/v2", "ServiceMeshControlPlane", "kubeflow", instance, 5)
    again = playbook(ROLES, dict(extra, service_mesh_gateway={"replicas": 3}))
    assert again.rc == 0, again.stdout[-3000:]
    playbook(ROLES, dict(extra, service_mesh_state="absent"))
