"""The gpu role through site.yml against the real API server: OLM wait, operands, GPU MachineSets."""
from helpers import only_roles, play_autoscaler_scale, play_installer_worker_machineset, play_olm_csv_succeeded

# The role's objects have fixed, cluster-wide names (ClusterPolicy gpu-cluster-policy, the operators'
# namespaces and CSVs), and the first test needs a cluster where OLM has installed nothing yet.
OWN_PLANE = True
MS = ("machine.openshift.io/v1beta1", "MachineSet")


def extravars(instance, **more):
    out = dict(only_roles("gpu"), kfocp_instance=instance, kfocp_gpu_enabled=True, scc_grants=[],
               gpu_csv_timeout=2, gpu_csv_poll_interval=1,
               gpu_machinesets=[{"name": "%s-a10g" % instance, "accelerator": "nvidia-a10g",
                                 "instance_type": {"aws": "g5.2xlarge", "azure": "Standard_NV36ads_A10_v5"}}])
    out.update(more)
    return out


def get(kube, api_version, kind, name, namespace=None):
    return kube.get(kube.resource(api_version, kind), name, namespace)


def test_gpu_waits_for_olm_then_converges_idempotently_and_removes(playbook, kube, instance):
    play_installer_worker_machineset(kube)
    extra = extravars(instance)
    name = "%s-a10g" % instance

    # OLM has not installed the operators: the subscriptions are made, the operands are not
    waiting = playbook("site", extra)
    assert waiting.rc != 0
    assert "operators.coreos.com/nfd.openshift-nfd, operators.coreos.com/gpu-operator-certified.nvidia-gpu-operator" \
        " is not Succeeded after 2s" in waiting.stdout, waiting.stdout[-3000:]
    assert get(kube, "operators.coreos.com/v1alpha1", "Subscription", "nfd", "openshift-nfd")["spec"]["channel"] == "stable"
    assert get(kube, "nvidia.com/v1", "ClusterPolicy", "gpu-cluster-policy") is None

    play_olm_csv_succeeded(kube, "openshift-nfd", "nfd")
    play_olm_csv_succeeded(kube, "nvidia-gpu-operator", "gpu-operator-certified")
    first = playbook("site", extra)
    assert first.rc == 0, first.stdout[-3000:]
    policy = get(kube, "nvidia.com/v1", "ClusterPolicy", "gpu-cluster-policy")
    assert policy["metadata"]["labels"]["kfocp.io/instance"] == instance
    assert {"key": "workload", "operator": "Equal", "value": "ai-ml", "effect": "NoSchedule"} in \
        policy["spec"]["daemonsets"]["tolerations"]
    assert get(kube, "nfd.openshift.io/v1", "NodeFeatureDiscovery", "nfd-instance", "openshift-nfd") is not None
    gpu_ms = get(kube, *MS, name, "openshift-machine-api")
    assert gpu_ms["spec"]["replicas"] == 0
    assert gpu_ms["spec"]["template"]["spec"]["providerSpec"]["value"]["instanceType"] == "g5.2xlarge"
    assert gpu_ms["spec"]["template"]["spec"]["taints"] == [{"key": "workload", "value": "ai-ml", "effect": "NoSchedule"}]
    assert gpu_ms["spec"]["template"]["spec"]["metadata"]["labels"]["cluster-api/accelerator"] == "nvidia-a10g"
    worker = get(kube, *MS, "ci-x1-worker-a", "openshift-machine-api")
    assert worker["spec"]["template"]["spec"]["providerSpec"]["value"]["instanceType"] == "m6i.xlarge"
    assert "app.kubernetes.io/managed-by" not in worker["metadata"]["labels"]

    second = playbook("site", extra)
    assert second.rc == 0 and second.count("changed") == 0, second.stdout[-3000:]
    check = playbook("site", extra, check=True, diff=True)
    assert check.rc == 0 and check.count("changed") == 0, check.stdout[-3000:]

    # the autoscaler scales the GPU MachineSet: the next run keeps its count and does not fail
    play_autoscaler_scale(kube, name, 3)
    scaled = playbook("site", extra)
    assert scaled.rc == 0, scaled.stdout[-3000:]
    assert get(kube, *MS, name, "openshift-machine-api")["spec"]["replicas"] == 3

    absent = playbook("site", dict(extra, gpu_state="absent"))
    assert absent.rc == 0, absent.stdout[-3000:]
    assert get(kube, "nvidia.com/v1", "ClusterPolicy", "gpu-cluster-policy") is None
    assert get(kube, *MS, name, "openshift-machine-api") is None
    assert get(kube, "operators.coreos.com/v1alpha1", "Subscription", "nfd", "openshift-nfd") is None
    assert get(kube, *MS, "ci-x1-worker-a", "openshift-machine-api") is not None
    gone = playbook("uninstall", {"kfocp_instance": instance})
    assert gone.rc == 0, gone.stdout[-3000:]
    assert get(kube, "v1", "Namespace", "openshift-nfd") is None


def test_missing_instance_type_for_the_cloud_fails_before_any_change(playbook, kube, instance):
    play_installer_worker_machineset(kube)
    bad = [{"name": "%s-x" % instance, "accelerator": "nvidia-a10g", "instance_type": {"azure": "Standard_NC6"}}]
    result = playbook("site", extravars(instance, gpu_machinesets=bad))
    assert result.rc != 0
    assert "gpu_machinesets[0].instance_type.aws: is required: the MachineSet ci-x1-worker-a to clone runs on aws" \
        in result.stdout
    assert get(kube, "operators.coreos.com/v1alpha1", "Subscription", "nfd", "openshift-nfd") is None \
        or get(kube, "operators.coreos.com/v1alpha1", "Subscription", "nfd", "openshift-nfd")["metadata"]["labels"][
            "kfocp.io/instance"] != instance


def test_check_mode_on_a_fresh_cluster_does_not_wait_or_fail(playbook, kube, instance):
    play_installer_worker_machineset(kube)
    result = playbook("site", extravars(instance, gpu_csv_timeout=600, gpu_operators=[
        {"namespace": "%s-op" % instance, "package": "nothing", "channel": "stable", "source": "none"}]), check=True)
    assert result.rc == 0, result.stdout[-3000:]
    assert result.count("changed") >= 1
    assert get(kube, "v1", "Namespace", "%s-op" % instance) is None
