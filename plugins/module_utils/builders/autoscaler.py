# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster autoscaling for AI/ML: the ClusterAutoscaler, a MachineAutoscaler per GPU MachineSet,
the PriorityClasses of AI/ML workloads, and optionally the proactive node scaling watermark."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.kfocp.kubeflow.plugins.module_utils import role_defaults, versions
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import (
    dns_label, label_value, named_entries, namespace, require)

MACHINE_API = "openshift-machine-api"
ACCELERATOR_LABEL = "cluster-api/accelerator"
DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+$")
THRESHOLD = re.compile(r"^0\.[0-9]+$")
MAX_PRIORITY = 1000000000


def _int(value, field, minimum=0):
    require(isinstance(value, int) and not isinstance(value, bool) and value >= minimum, field,
            "must be a whole number >= %d, got %r" % (minimum, value), "Give a number")
    return value


def _range(value, field, minimum=0):
    require(isinstance(value, dict), field, "must be a mapping {min, max}", "Give {min: ..., max: ...}")
    low = _int(value.get("min"), field + ".min", minimum)
    high = _int(value.get("max"), field + ".max", max(1, minimum))
    require(low <= high, field, "min %d is above max %d" % (low, high), "Give min <= max")
    return {"min": low, "max": high}


def cluster_autoscaler(spec, field="autoscaler_cluster"):
    """The ClusterAutoscaler `default`. `spec`: max_nodes_total, cores {min,max}, memory_gib
    {min,max}, gpus [{type,min,max}], scale_down {enabled, delay_after_add, delay_after_delete,
    delay_after_failure, unneeded_time, utilization_threshold}, pod_priority_threshold,
    balance_similar_node_groups, ignore_daemonsets_utilization, skip_nodes_with_local_storage."""
    require(isinstance(spec, dict), field, "must be a mapping", "Give the autoscaler settings")
    limits = {"maxNodesTotal": _int(spec.get("max_nodes_total"), field + ".max_nodes_total", 1)}
    if spec.get("cores") is not None:
        limits["cores"] = _range(spec["cores"], field + ".cores")
    if spec.get("memory_gib") is not None:
        limits["memory"] = _range(spec["memory_gib"], field + ".memory_gib")
    gpus = spec.get("gpus") or []
    require(isinstance(gpus, list), field + ".gpus", "must be a list", "Give [{type, min, max}]")
    limits["gpus"] = []
    for index, gpu in enumerate(gpus):
        where = "%s.gpus[%d]" % (field, index)
        require(isinstance(gpu, dict) and isinstance(gpu.get("type"), str) and gpu.get("type"), where + ".type",
                "is required", "Give the GPU type the autoscaler counts: the value of the node label %s of the GPU "
                "nodes (gpu_machinesets' accelerator), e.g. nvidia-a10g" % ACCELERATOR_LABEL)
        # the cluster autoscaler counts the GPUs of nodes whose label cluster-api/accelerator has
        # this value (cluster-autoscaler-operator warns of a type that is no valid label value)
        label_value(gpu["type"], where + ".type")
        limits["gpus"].append(dict(type=gpu["type"], **_range(gpu, where, 0)))
        require(limits["gpus"][-1]["max"] >= 1, where + ".max", "must be at least 1", "Give max >= 1")
    if not limits["gpus"]:
        limits.pop("gpus")
    out = {"resourceLimits": limits}
    down = spec.get("scale_down") or {}
    require(isinstance(down, dict), field + ".scale_down", "must be a mapping", "Give {enabled, delay_after_add, ...}")
    enabled = role_defaults.DEFAULTS["autoscaler"]["autoscaler_cluster"]["scale_down"]["enabled"]
    scale_down = {"enabled": down.get("enabled", enabled) is not False}
    for key, api in (("delay_after_add", "delayAfterAdd"), ("delay_after_delete", "delayAfterDelete"),
                     ("delay_after_failure", "delayAfterFailure"), ("unneeded_time", "unneededTime")):
        if down.get(key) is not None:
            require(isinstance(down[key], str) and DURATION.match(down[key]), "%s.scale_down.%s" % (field, key),
                    "%r is not a duration" % (down[key],), "Give e.g. 10m, 30s or 1h30m")
            scale_down[api] = down[key]
    if down.get("utilization_threshold") is not None:
        value = str(down["utilization_threshold"])
        require(THRESHOLD.match(value), field + ".scale_down.utilization_threshold",
                "%r is not a fraction between 0 and 1" % (down["utilization_threshold"],), "Give e.g. '0.4', quoted")
        scale_down["utilizationThreshold"] = value
    out["scaleDown"] = scale_down
    if spec.get("pod_priority_threshold") is not None:
        require(isinstance(spec["pod_priority_threshold"], int) and not isinstance(spec["pod_priority_threshold"], bool),
                field + ".pod_priority_threshold", "must be a whole number", "Give e.g. -10")
        out["podPriorityThreshold"] = spec["pod_priority_threshold"]
    for key, api in (("balance_similar_node_groups", "balanceSimilarNodeGroups"),
                     ("ignore_daemonsets_utilization", "ignoreDaemonsetsUtilization"),
                     ("skip_nodes_with_local_storage", "skipNodesWithLocalStorage")):
        if spec.get(key) is not None:
            out[api] = bool(spec[key])
    if spec.get("max_node_provision_time"):
        require(DURATION.match(str(spec["max_node_provision_time"])), field + ".max_node_provision_time",
                "%r is not a duration" % (spec["max_node_provision_time"],), "Give e.g. 15m")
        out["maxNodeProvisionTime"] = spec["max_node_provision_time"]
    return {"apiVersion": "autoscaling.openshift.io/v1", "kind": "ClusterAutoscaler",
            "metadata": {"name": "default"}, "spec": out}


def targets(machinesets, min_replicas=0, max_replicas=1):
    """[{name, min_replicas, max_replicas}] from GPU MachineSet entries (gpu_machinesets): those
    not marked autoscaled: false, with their own bounds or the defaults given."""
    out = []
    for entry in machinesets or []:
        if not isinstance(entry, dict) or entry.get("autoscaled", True) is False or not entry.get("name"):
            continue
        out.append({"name": entry["name"], "min_replicas": entry.get("min_replicas", min_replicas),
                    "max_replicas": entry.get("max_replicas", max_replicas)})
    return out


def gpu_limits(accelerators, max_gpus=16):
    """The ClusterAutoscaler's gpus limits, [{type, min: 0, max}] per accelerator of the GPU
    MachineSets. The autoscaler counts GPUs by the node label cluster-api/accelerator, which the
    gpu role sets to each gpu_machinesets entry's `accelerator`: a type that is not such a value
    limits nothing."""
    types = []
    for accelerator in accelerators or []:
        if accelerator and accelerator not in types:
            types.append(accelerator)
    return [{"type": accelerator, "min": 0, "max": max_gpus} for accelerator in types]


def machine_autoscalers(entries, field="autoscaler_machinesets"):
    out = []
    for where, entry in named_entries(entries, field, "{name, min_replicas, max_replicas}",
                                      "Name the MachineSet to scale"):
        low = _int(entry.get("min_replicas", 0), where + ".min_replicas", 0)
        high = _int(entry.get("max_replicas"), where + ".max_replicas", 1)
        require(low <= high, where, "min_replicas %d is above max_replicas %d" % (low, high), "Give min <= max")
        out.append({"apiVersion": "autoscaling.openshift.io/v1beta1", "kind": "MachineAutoscaler",
                    "metadata": {"name": entry["name"], "namespace": MACHINE_API},
                    "spec": {"minReplicas": low, "maxReplicas": high,
                             "scaleTargetRef": {"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
                                                "name": entry["name"]}}})
    return out


def priority_classes(entries, field="autoscaler_priority_classes"):
    out = []
    for where, entry in named_entries(entries, field, "{name, value, description}", "Name the class"):
        require(not entry["name"].startswith("system-"), where + ".name", "names starting with system- are reserved",
                "Choose another name")
        value = entry.get("value")
        require(isinstance(value, int) and not isinstance(value, bool) and -MAX_PRIORITY <= value <= MAX_PRIORITY,
                where + ".value", "must be a whole number between -1000000000 and 1000000000, got %r" % (value,),
                "Give e.g. 10000")
        obj = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": entry["name"]},
               "value": value, "globalDefault": bool(entry.get("global_default", False)),
               "description": entry.get("description") or ""}
        if entry.get("preemption_policy"):
            require(entry["preemption_policy"] in ("PreemptLowerPriority", "Never"), where + ".preemption_policy",
                    "%r is not a preemption policy" % entry["preemption_policy"], "Use PreemptLowerPriority or Never")
            obj["preemptionPolicy"] = entry["preemption_policy"]
        out.append(obj)
    require(sum(1 for o in out if o["globalDefault"]) <= 1, field, "more than one class is global_default",
            "Mark at most one")
    return out


def watermark(spec, field="autoscaler_watermark", installed=None):
    """The proactive node scaling watermark (redhat-cop proactive-node-scaling-operator): pause pods
    of the lowest priority on the selected nodes, whose CPU and memory requests (pause_pod_size) add
    up to `percentage` of the requests running there, so that the autoscaler adds a node before it
    is needed; in their own namespace, with their PriorityClass (below every workload, above the
    autoscaler's pod priority threshold). They request no GPU. `installed` ({package: version}):
    an operator older than 0.3.0, which has no spec.priorityClassName, is refused."""
    require(isinstance(spec, dict), field, "must be a mapping", "Give {namespace, percentage, ...}")
    have = (installed or {}).get(versions.WATERMARK)
    require(versions.watermark_priority_class(installed), field,
            "the installed %s %s has no NodeScalingWatermark spec.priorityClassName (it exists from 0.3.0 on; "
            "0.1 and 0.2 have an integer spec.priority)" % (versions.WATERMARK, have),
            "Upgrade the operator to 0.3.0 or later (its Subscription's channel alpha holds 0.4.2), or set "
            "%s.enabled to false" % field)
    ns = dns_label(spec.get("namespace") or "", field + ".namespace")
    defaults = role_defaults.DEFAULTS["autoscaler"]["autoscaler_watermark"]
    name = dns_label(spec.get("name") or defaults["name"], field + ".name")
    percentage = spec.get("percentage")
    require(isinstance(percentage, int) and not isinstance(percentage, bool) and 1 <= percentage <= 100,
            field + ".percentage", "must be a whole number from 1 to 100, got %r" % (percentage,), "Give e.g. 20")
    body = {"watermarkPercentage": percentage, "nodeSelector": dict(spec.get("node_selector") or defaults["node_selector"]),
            "tolerations": [dict(t) for t in spec.get("tolerations") or
                            [{"key": "workload", "operator": "Equal", "value": "ai-ml", "effect": "NoSchedule"}]]}
    if spec.get("pause_pod_size"):
        body["pausePodSize"] = dict(spec["pause_pod_size"])
    pclass = priority_classes([{"name": spec.get("priority_class") or defaults["priority_class"],
                                "value": spec.get("priority_value", defaults["priority_value"]), "preemption_policy": "Never",
                                "description": "Pause pods that keep spare AI/ML node capacity; every workload preempts them"}],
                              field + ".priority_class")[0]
    body["priorityClassName"] = pclass["metadata"]["name"]
    watermark = {"apiVersion": "redhatcop.redhat.io/v1alpha1", "kind": "NodeScalingWatermark",
                 "metadata": {"name": name, "namespace": ns}, "spec": body}
    return [namespace(ns), pclass, watermark]


def _check_gpu_types(ca, accelerators):
    """Every GPU type of the limits must be an accelerator of the GPU MachineSets, when there are
    any: the autoscaler counts GPUs by the node label cluster-api/accelerator."""
    known = [a for a in accelerators if a]
    for index, limit in enumerate(ca["spec"]["resourceLimits"].get("gpus") or []):
        require(not known or limit["type"] in known, "autoscaler_cluster.gpus[%d].type" % index,
                "%r is no accelerator of the GPU MachineSets (%s): the cluster autoscaler counts GPUs by the node "
                "label %s, so this limit would count none" % (limit["type"], ", ".join(known), ACCELERATOR_LABEL),
                "Use the accelerator of gpu_machinesets, or leave gpus out to derive them")


def objects(params):
    """The autoscaler role's whole desired state. `params`: cluster_autoscaler (settings or None
    to leave it out), machinesets, priority_classes, watermark {enabled, ...}, accelerators (those
    of the GPU MachineSets: the GPU limits' types must be among them, and without `gpus` in
    cluster_autoscaler there is one limit of at most gpu_max per accelerator), installed ({package:
    version} of the operators OLM installed: the watermark operator's decides its fields)."""
    out = []
    wm = params.get("watermark") or {}
    if wm.get("enabled"):
        out.extend(watermark(wm, installed=params.get("installed")))
    out.extend(priority_classes(params.get("priority_classes") or []))
    if params.get("cluster_autoscaler") is not None:
        spec = params["cluster_autoscaler"]
        if isinstance(spec, dict) and "gpus" not in spec:  # derived from the GPU MachineSets
            spec = dict(spec, gpus=gpu_limits(params.get("accelerators"), params.get("gpu_max", role_defaults.DEFAULTS["autoscaler"]["autoscaler_gpu_max"])))
        out.append(cluster_autoscaler(spec))
        _check_gpu_types(out[-1], params.get("accelerators") or [])
    out.extend(machine_autoscalers(params.get("machinesets") or []))
    return out
