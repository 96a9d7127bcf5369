"""Table tests of the autoscaler builder; cluster-autoscaler-operator's own code (tests/judges.py)
judges what it builds."""
import re

import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import autoscaler
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError
from judges import cluster_autoscaler_operator

CLUSTER = {"max_nodes_total": 24, "cores": {"min": 8, "max": 512}, "memory_gib": {"min": 32, "max": 4096},
           "gpus": [{"type": "nvidia-a10g", "min": 0, "max": 16}],
           "scale_down": {"enabled": True, "delay_after_add": "10m", "delay_after_delete": "5m",
                          "delay_after_failure": "30s", "unneeded_time": "10m", "utilization_threshold": "0.4"},
           "pod_priority_threshold": -10, "balance_similar_node_groups": True}


def test_cluster_autoscaler_limits_and_delays():
    ca = autoscaler.cluster_autoscaler(CLUSTER)
    assert ca["metadata"] == {"name": "default"} and ca["apiVersion"] == "autoscaling.openshift.io/v1"
    assert ca["spec"]["resourceLimits"] == {"maxNodesTotal": 24, "cores": {"min": 8, "max": 512},
                                            "memory": {"min": 32, "max": 4096},
                                            "gpus": [{"type": "nvidia-a10g", "min": 0, "max": 16}]}
    assert ca["spec"]["scaleDown"] == {"enabled": True, "delayAfterAdd": "10m", "delayAfterDelete": "5m",
                                       "delayAfterFailure": "30s", "unneededTime": "10m", "utilizationThreshold": "0.4"}
    assert ca["spec"]["podPriorityThreshold"] == -10 and ca["spec"]["balanceSimilarNodeGroups"] is True
    # what cluster-autoscaler-operator makes of it: no error, no warning, and these autoscaler flags
    verdict = cluster_autoscaler_operator(ca)["clusterAutoscaler"]
    assert verdict["errors"] == [] and verdict["warnings"] == []
    assert {"--max-nodes-total=24", "--cores-total=8:512", "--memory-total=32:4096", "--gpu-total=nvidia-a10g:0:16",
            "--scale-down-enabled=true", "--scale-down-delay-after-add=10m", "--scale-down-delay-after-delete=5m",
            "--scale-down-delay-after-failure=30s", "--scale-down-unneeded-time=10m",
            "--scale-down-utilization-threshold=0.4", "--expendable-pods-priority-cutoff=-10",
            "--balance-similar-node-groups=true"} <= set(verdict["args"])


def test_the_gpu_type_of_the_hint_is_one_cluster_autoscaler_operator_accepts():
    with pytest.raises(DefinitionError, match=r"autoscaler_cluster.gpus\[0\].type: is required") as err:
        autoscaler.cluster_autoscaler(dict(CLUSTER, gpus=[{"min": 0, "max": 2}]))
    example = re.search(r"e\.g\. (\S+)$", str(err.value)).group(1)
    verdict = cluster_autoscaler_operator(
        {"apiVersion": "autoscaling.openshift.io/v1", "kind": "ClusterAutoscaler", "metadata": {"name": "default"},
         "spec": {"resourceLimits": {"gpus": [{"type": example, "min": 0, "max": 2}]}}})["clusterAutoscaler"]
    assert verdict["warnings"] == [] and verdict["errors"] == []


@pytest.mark.parametrize("gpu_type", ["nvidia-a10g", "A100_80GB.pcie", "nvidia.com/gpu", "-t4", "a" * 64])
def test_a_gpu_type_is_refused_exactly_when_cluster_autoscaler_operator_warns(gpu_type):
    body = {"apiVersion": "autoscaling.openshift.io/v1", "kind": "ClusterAutoscaler", "metadata": {"name": "default"},
            "spec": {"resourceLimits": {"gpus": [{"type": gpu_type, "min": 0, "max": 2}]}}}
    warned = cluster_autoscaler_operator(body)["clusterAutoscaler"]["warnings"]
    try:
        autoscaler.cluster_autoscaler(dict(CLUSTER, gpus=[{"type": gpu_type, "min": 0, "max": 2}]))
        refused = None
    except DefinitionError as err:
        refused = str(err)
    assert bool(refused) == bool(warned), (refused, warned)
    if refused:
        assert "autoscaler_cluster.gpus[0].type: %r is not a valid label value" % gpu_type in refused


@pytest.mark.parametrize("change, message", [
    ({"max_nodes_total": 0}, r"autoscaler_cluster.max_nodes_total: must be a whole number >= 1"),
    ({"cores": {"min": 9, "max": 8}}, r"autoscaler_cluster.cores: min 9 is above max 8"),
    ({"gpus": [{"min": 0, "max": 2}]}, r"autoscaler_cluster.gpus\[0\].type: is required"),
    ({"gpus": [{"type": "nvidia-a10g", "min": 0, "max": 0}]}, r"autoscaler_cluster.gpus\[0\].max"),
    ({"scale_down": {"delay_after_add": "ten minutes"}}, r"scale_down.delay_after_add: 'ten minutes' is not a duration"),
    ({"scale_down": {"utilization_threshold": 1.5}}, r"scale_down.utilization_threshold: 1.5 is not a fraction"),
])
def test_bad_cluster_settings_name_the_field(change, message):
    with pytest.raises(DefinitionError, match=message):
        autoscaler.cluster_autoscaler(dict(CLUSTER, **change))


def test_machine_autoscalers_and_targets_from_gpu_entries():
    entries = [{"name": "gpu-a10g", "max_replicas": 4}, {"name": "gpu-fixed", "autoscaled": False},
               {"name": "gpu-h100"}]
    targets = autoscaler.targets(entries, 0, 2)
    assert targets == [{"name": "gpu-a10g", "min_replicas": 0, "max_replicas": 4},
                       {"name": "gpu-h100", "min_replicas": 0, "max_replicas": 2}]
    objs = autoscaler.machine_autoscalers(targets)
    assert [(v["name"], v["errors"]) for v in cluster_autoscaler_operator(None, objs)["machineAutoscalers"]] == [
        ("gpu-a10g", []), ("gpu-h100", [])]
    assert objs[0]["metadata"] == {"name": "gpu-a10g", "namespace": "openshift-machine-api"}
    assert objs[0]["spec"] == {"minReplicas": 0, "maxReplicas": 4, "scaleTargetRef": {
        "apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet", "name": "gpu-a10g"}}


@pytest.mark.parametrize("entry, message", [
    ({"name": "a", "min_replicas": 3, "max_replicas": 2}, r"autoscaler_machinesets\[0\]: min_replicas 3 is above"),
    ({"name": "a", "max_replicas": 0}, r"autoscaler_machinesets\[0\].max_replicas: must be a whole number >= 1"),
    ({"max_replicas": 1}, r"autoscaler_machinesets\[0\].name: is required"),
])
def test_bad_machine_autoscalers(entry, message):
    with pytest.raises(DefinitionError, match=message):
        autoscaler.machine_autoscalers([entry])


def test_priority_classes_and_their_checks():
    [pc] = autoscaler.priority_classes([{"name": "ai-ml-batch", "value": 1000, "preemption_policy": "Never",
                                         "description": "batch"}])
    assert pc == {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "ai-ml-batch"},
                  "value": 1000, "globalDefault": False, "description": "batch", "preemptionPolicy": "Never"}
    for entry, message in [({"name": "system-x", "value": 1}, "reserved"),
                           ({"name": "x", "value": 2000000000}, r"\.value: must be a whole number between"),
                           ({"name": "x", "value": 1, "preemption_policy": "Sometimes"}, "not a preemption policy")]:
        with pytest.raises(DefinitionError, match=message):
            autoscaler.priority_classes([entry])
    with pytest.raises(DefinitionError, match="more than one class is global_default"):
        autoscaler.priority_classes([{"name": "a", "value": 1, "global_default": True},
                                     {"name": "b", "value": 2, "global_default": True}])


def test_watermark_is_off_by_default_and_complete_when_on():
    off = autoscaler.objects({"priority_classes": [], "cluster_autoscaler": None, "watermark": {"enabled": False}})
    assert off == []
    on = autoscaler.objects({"watermark": {"enabled": True, "namespace": "pns", "percentage": 20}})
    assert [(o["kind"], o["metadata"]["name"]) for o in on] == [
        ("Namespace", "pns"), ("PriorityClass", "ai-ml-headroom"), ("NodeScalingWatermark", "ai-ml")]
    spec = on[2]["spec"]
    assert spec["watermarkPercentage"] == 20 and spec["priorityClassName"] == "ai-ml-headroom"
    assert spec["nodeSelector"] == {"workload": "ai-ml"} and spec["tolerations"][0]["value"] == "ai-ml"
    assert on[1]["value"] == -5 and on[1]["preemptionPolicy"] == "Never"
    with pytest.raises(DefinitionError, match=r"autoscaler_watermark.percentage: must be a whole number from 1 to 100"):
        autoscaler.watermark({"namespace": "pns", "percentage": 0})


def test_gpu_limits_are_derived_from_the_gpu_machinesets_accelerators():
    spec = dict((k, v) for k, v in CLUSTER.items() if k != "gpus")
    ca = [o for o in autoscaler.objects({"cluster_autoscaler": spec, "accelerators": ["nvidia-a10g", "", "nvidia-a10g",
                                                                                      "nvidia-a100"], "gpu_max": 8})
          if o["kind"] == "ClusterAutoscaler"][0]
    assert ca["spec"]["resourceLimits"]["gpus"] == [{"type": "nvidia-a10g", "min": 0, "max": 8},
                                                    {"type": "nvidia-a100", "min": 0, "max": 8}]


def test_a_gpu_type_that_is_no_accelerator_of_the_machinesets_names_the_field():
    with pytest.raises(DefinitionError, match=r"autoscaler_cluster.gpus\[0\].type: 'nvidia-a10g' is no accelerator "
                                              r"of the GPU MachineSets \(nvidia-l4\)"):
        autoscaler.objects({"cluster_autoscaler": CLUSTER, "accelerators": ["nvidia-l4"]})
    # without GPU MachineSets there is nothing to compare with
    assert autoscaler.objects({"cluster_autoscaler": CLUSTER, "accelerators": []})


# redhat-cop/proactive-node-scaling-operator, api/v1alpha1/nodescalingwatermark_types.go:
# v0.1.0 35a2ca588c66f6377879d0a087d07cc4b2522066 and v0.2.0 1e3d0e4ed2a7c598ac3783b0a0a648787c2a49df
# have `Priority int json:"priority"`; v0.3.0 69f0ea6e1d2461eec8a275520e5159064c247dc6 to v0.4.2
# b0ade0180bf5b5c79b14df36247417c3c741e95e have `PriorityClassName string json:"priorityClassName"`.
WATERMARK_PRIORITY_FIELD = {"0.1.0": "priority", "0.2.0": "priority", "0.3.0": "priorityClassName",
                            "0.3.10": "priorityClassName", "0.4.2": "priorityClassName"}


@pytest.mark.parametrize("version, field", sorted(WATERMARK_PRIORITY_FIELD.items()))
def test_the_watermark_is_refused_where_the_installed_operator_has_no_priority_class_name(version, field):
    params = {"watermark": {"enabled": True, "namespace": "pns", "percentage": 20},
              "installed": {"proactive-node-scaling-operator": version}}
    if field == "priorityClassName":
        spec = autoscaler.objects(params)[2]["spec"]
        assert spec[field] == "ai-ml-headroom"
    else:
        with pytest.raises(DefinitionError, match=r"autoscaler_watermark: the installed proactive-node-scaling-operator "
                                                  r"%s has no NodeScalingWatermark spec.priorityClassName.*"
                                                  r"Upgrade the operator to 0.3.0" % re.escape(version)):
            autoscaler.objects(params)
