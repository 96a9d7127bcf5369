"""Manual InstallPlans (installPlanApproval: Manual, as example-prod subscribes): OLM installs
nothing until the plan is approved. The gpu role approves it only when the inventory says so;
otherwise it stops and names the plan. OLM is played by helpers.PlayOperators (standins.olm_step),
which leaves a Manual plan pending until someone approves it."""
from helpers import PlayOperators, ensure_namespace, only_roles, play_installer_worker_machineset

OWN_PLANE = True  # the gpu role's objects have fixed, cluster-wide names
OPERATORS = [{"namespace": "openshift-nfd", "package": "nfd", "channel": "stable", "source": "redhat-operators",
              "approval": "Manual"},
             {"namespace": "nvidia-gpu-operator", "package": "gpu-operator-certified", "channel": "v25.10",
              "source": "certified-operators", "approval": "Manual"}]


def extravars(instance, operators):
    return dict(only_roles("gpu"), kfocp_instance=instance, kfocp_gpu_enabled=True, scc_grants=[],
                gpu_csv_timeout=20, gpu_csv_poll_interval=1, gpu_operators=operators,
                gpu_machinesets=[{"name": "%s-a10g" % instance, "accelerator": "nvidia-a10g",
                                  "instance_type": {"aws": "g5.2xlarge"}}])


def test_an_automatic_install_plan_is_left_to_olm(playbook, kube, instance):
    """Automatic approval (the default): the run neither stops nor writes the InstallPlan; OLM
    approves and installs, and the run goes on to the operands. Runs first, in namespaces of its
    own, and uninstalls: the next test needs a cluster where the gpu role made nothing."""
    play_installer_worker_machineset(kube)
    plans = kube.resource("operators.coreos.com/v1alpha1", "InstallPlan")
    automatic = [dict(op, namespace="%s-%d" % (instance, index), approval="Automatic")
                 for index, op in enumerate(OPERATORS)]
    extra = dict(extravars(instance, automatic), gpu_nfd_namespace=automatic[0]["namespace"])
    try:
        with PlayOperators(kube):
            done = playbook("site", extra)
        assert done.rc == 0, done.stdout[-3000:]
        for op in automatic:
            plan = kube.get(plans, "install-%s" % op["package"], op["namespace"])
            assert plan["spec"]["approval"] == "Automatic" and plan["spec"]["approved"] is True
            assert set(f["manager"] for f in plan["metadata"]["managedFields"]) == {"olm"}  # kfocp never wrote it
        assert kube.get(kube.resource("nvidia.com/v1", "ClusterPolicy"), "gpu-cluster-policy") is not None
    finally:
        assert playbook("uninstall", {"kfocp_instance": instance}).rc == 0
    assert kube.get(kube.resource("nvidia.com/v1", "ClusterPolicy"), "gpu-cluster-policy") is None


def test_a_manual_install_plan_stops_the_run_unless_the_inventory_approves_it(playbook, kube, instance):
    play_installer_worker_machineset(kube)
    plans = kube.resource("operators.coreos.com/v1alpha1", "InstallPlan")
    with PlayOperators(kube):
        stopped = playbook("site", extravars(instance, OPERATORS))
        assert stopped.rc != 0
        text = " ".join(stopped.stdout.split())
        assert "The InstallPlan openshift-nfd/install-nfd (nfd.v1.0.0) of nfd waits for approval " \
            "(gpu_operators[0].approval: Manual)" in text, stopped.stdout[-3000:]
        assert "set gpu_operators[0].approve_install_plan: true" in text
        assert kube.get(plans, "install-nfd", "openshift-nfd")["spec"]["approved"] is False
        assert kube.get(kube.resource("nvidia.com/v1", "ClusterPolicy"), "gpu-cluster-policy") is None
        assert not kube.list(kube.resource("operators.coreos.com/v1alpha1", "ClusterServiceVersion"),
                             namespace="openshift-nfd")

        approved = [dict(op, approve_install_plan=True) for op in OPERATORS]
        done = playbook("site", extravars(instance, approved))
        assert done.rc == 0, done.stdout[-3000:]
    assert kube.get(plans, "install-nfd", "openshift-nfd")["spec"]["approved"] is True
    assert kube.get(kube.resource("nvidia.com/v1", "ClusterPolicy"), "gpu-cluster-policy") is not None
    assert playbook("site", dict(extravars(instance, approved), gpu_state="absent")).rc == 0


def test_an_operator_group_someone_else_made_is_left_alone_and_olm_installs(playbook, kube, instance):
    # An operator once installed from the console and removed again leaves its namespace and the
    # console's OperatorGroup. A second OperatorGroup there makes OLM fail the CSV
    # (TooManyOperatorGroups, played by the OLM stand-in); kfocp adds none and says so.
    play_installer_worker_machineset(kube)
    groups = kube.resource("operators.coreos.com/v1", "OperatorGroup")
    ensure_namespace(kube, "nvidia-gpu-operator")
    kube.apply(groups, {"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
                        "metadata": {"name": "nvidia-gpu-operator-x7k2p", "namespace": "nvidia-gpu-operator"},
                        "spec": {"targetNamespaces": ["nvidia-gpu-operator"]}}, "console", force=True)
    try:
        with PlayOperators(kube):
            result = playbook("site", extravars(instance, [dict(op, approval="Automatic") for op in OPERATORS]))
        assert result.rc == 0, result.stdout[-3000:]
        assert "OperatorGroup nvidia-gpu-operator/nvidia-gpu-operator-x7k2p was made by someone else: left as it " \
            "is, and kfocp adds none to nvidia-gpu-operator" in " ".join(result.stdout.split())
        assert [g["metadata"]["name"] for g in kube.list(groups, namespace="nvidia-gpu-operator")] == [
            "nvidia-gpu-operator-x7k2p"]
        [csv] = kube.list(kube.resource("operators.coreos.com/v1alpha1", "ClusterServiceVersion"),
                          namespace="nvidia-gpu-operator")
        assert csv["status"]["phase"] == "Succeeded"
    finally:
        playbook("site", dict(extravars(instance, OPERATORS), gpu_state="absent"))
        kube.delete(groups, "nvidia-gpu-operator-x7k2p", "nvidia-gpu-operator")
