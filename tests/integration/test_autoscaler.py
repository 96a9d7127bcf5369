"""The autoscaler role through site.yml against the real API server."""
from helpers import only_roles
from judges import cluster_autoscaler_operator


def extravars(instance, **more):
    out = dict(only_roles("autoscaler"), kfocp_instance=instance, kfocp_autoscaler_enabled=True, scc_grants=[],
               gpu_machinesets=[{"name": "%s-a10g" % instance, "max_replicas": 4, "accelerator": "nvidia-a10g"},
                                {"name": "%s-fixed" % instance, "autoscaled": False, "accelerator": "nvidia-l4"}],
               autoscaler_priority_classes=[{"name": "%s-training" % instance, "value": 10000, "description": "t"}])
    out.update(more)
    return out


def get(kube, api_version, kind, name, namespace=None):
    return kube.get(kube.resource(api_version, kind), name, namespace)


def test_autoscaler_converges_prunes_the_watermark_and_is_idempotent(playbook, kube, instance):
    extra = extravars(instance)
    first = playbook("site", extra)
    assert first.rc == 0, first.stdout[-3000:]
    ca = get(kube, "autoscaling.openshift.io/v1", "ClusterAutoscaler", "default")
    assert ca["metadata"]["labels"]["kfocp.io/instance"] == instance
    # the GPU types are the MachineSets' cluster-api/accelerator label values, which the autoscaler counts by
    assert ca["spec"]["resourceLimits"]["gpus"] == [{"type": "nvidia-a10g", "min": 0, "max": 16},
                                                    {"type": "nvidia-l4", "min": 0, "max": 16}]
    assert ca["spec"]["scaleDown"]["delayAfterAdd"] == "10m" and ca["spec"]["resourceLimits"]["maxNodesTotal"] == 24
    ma = get(kube, "autoscaling.openshift.io/v1beta1", "MachineAutoscaler", "%s-a10g" % instance, "openshift-machine-api")
    assert ma["spec"] == {"minReplicas": 0, "maxReplicas": 4, "scaleTargetRef": {
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet", "name": "%s-a10g" % instance}}
    assert get(kube, "autoscaling.openshift.io/v1beta1", "MachineAutoscaler", "%s-fixed" % instance,
               "openshift-machine-api") is None
    # cluster-autoscaler-operator's own validation accepts both, and gives the autoscaler a GPU
    # limit per accelerator label value
    verdict = cluster_autoscaler_operator(ca, [ma])
    assert verdict["clusterAutoscaler"]["errors"] == [] and verdict["clusterAutoscaler"]["warnings"] == []
    assert [a for a in verdict["clusterAutoscaler"]["args"] if a.startswith("--gpu-total=")] == [
        "--gpu-total=nvidia-a10g:0:16", "--gpu-total=nvidia-l4:0:16"]
    assert verdict["machineAutoscalers"] == [{"name": "%s-a10g" % instance, "errors": [], "warnings": []}]
    assert get(kube, "scheduling.k8s.io/v1", "PriorityClass", "%s-training" % instance)["value"] == 10000
    assert get(kube, "redhatcop.redhat.io/v1alpha1", "NodeScalingWatermark", "ai-ml", "proactive-node-scaling-operator") \
        is None

    second = playbook("site", extra)
    assert second.rc == 0 and second.count("changed") == 0, second.stdout[-3000:]
    check = playbook("site", extra, check=True, diff=True)
    assert check.rc == 0 and check.count("changed") == 0, check.stdout[-3000:]

    watermark = dict(extra, autoscaler_watermark={"enabled": True, "namespace": "%s-pns" % instance, "percentage": 25})
    on = playbook("site", watermark)
    assert on.rc == 0, on.stdout[-3000:]
    nsw = get(kube, "redhatcop.redhat.io/v1alpha1", "NodeScalingWatermark", "ai-ml", "%s-pns" % instance)
    assert nsw["spec"]["watermarkPercentage"] == 25 and nsw["spec"]["priorityClassName"] == "ai-ml-headroom"
    assert get(kube, "scheduling.k8s.io/v1", "PriorityClass", "ai-ml-headroom")["value"] == -5

    off = playbook("site", extra)
    assert off.rc == 0, off.stdout[-3000:]
    assert get(kube, "redhatcop.redhat.io/v1alpha1", "NodeScalingWatermark", "ai-ml", "%s-pns" % instance) is None
    assert get(kube, "scheduling.k8s.io/v1", "PriorityClass", "ai-ml-headroom") is None

    absent = playbook("site", dict(extra, autoscaler_state="absent"))
    assert absent.rc == 0, absent.stdout[-3000:]
    assert get(kube, "autoscaling.openshift.io/v1", "ClusterAutoscaler", "default") is None
    assert get(kube, "scheduling.k8s.io/v1", "PriorityClass", "%s-training" % instance) is None
    assert playbook("uninstall", {"kfocp_instance": instance}).rc == 0
    assert get(kube, "v1", "Namespace", "%s-pns" % instance) is None


def test_bad_bounds_fail_before_any_change(playbook, kube, instance):
    extra = extravars(instance, autoscaler_machinesets=[{"name": "x", "min_replicas": 3, "max_replicas": 2}])
    result = playbook("site", extra)
    assert result.rc != 0
    assert "autoscaler_machinesets[0]: min_replicas 3 is above max_replicas 2" in result.stdout
    assert get(kube, "scheduling.k8s.io/v1", "PriorityClass", "%s-training" % instance) is None
