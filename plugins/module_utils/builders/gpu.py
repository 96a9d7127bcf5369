# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU nodes: the NFD and NVIDIA GPU operators (OLM), their NodeFeatureDiscovery and ClusterPolicy,
and GPU MachineSets cloned from an existing worker MachineSet with the instance type swapped."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.kfocp.kubeflow.plugins.module_utils import role_defaults, versions
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import olm
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import (
    dns_label, label_value, labels, named_entries, namespace, require)
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import MANAGED_BY, MANAGER

MACHINE_API = "openshift-machine-api"
MACHINESET_API = "machine.openshift.io/v1beta1"
CLUSTER_LABEL = "machine.openshift.io/cluster-api-cluster"
ROLE_LABEL = "machine.openshift.io/cluster-api-machine-role"
MACHINESET_LABEL = "machine.openshift.io/cluster-api-machineset"
ACCELERATOR_LABEL = "cluster-api/accelerator"
WORKLOAD_LABEL = "workload"
WORKLOAD = "ai-ml"
TAINT = {"key": WORKLOAD_LABEL, "value": WORKLOAD, "effect": "NoSchedule"}
TOLERATION = {"key": WORKLOAD_LABEL, "operator": "Equal", "value": WORKLOAD, "effect": "NoSchedule"}
# The toleration every GPU operator operand DaemonSet carries in its asset
# (assets/state-*/*daemonset.yaml). ClusterPolicy daemonsets.tolerations replaces the operands'
# tolerations when not empty (controllers/object_controls.go, `obj.Spec.Template.Spec.Tolerations =
# config.Daemonsets.Tolerations`), so kfocp's list keeps it beside the ai-ml one.
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
# The providerSpec.value field that holds the instance type, per cloud.
_DEFAULTS = role_defaults.DEFAULTS["gpu"]
INSTANCE_TYPE_FIELDS = _DEFAULTS["gpu_instance_type_fields"]
# providerSpec.value.kind per cloud, to tell the cloud of a worker MachineSet.
PROVIDER_KINDS = {"AWSMachineProviderConfig": "aws", "AzureMachineProviderSpec": "azure",
                  "GCPMachineProviderSpec": "gcp"}
# GCP (machine-api-operator's GCPMachineProviderSpec, openshift/api machine/v1beta1): a machine
# with GPUs must stop, not live-migrate, on host maintenance; an N1 machine has no GPU of its own,
# so its GPUs are attached (`gpus`, one entry); an A2 machine has its GPUs built in and takes none.
GCP_TERMINATE = "Terminate"
GCP_ATTACHED_GPU_FAMILY = "n1-"
GCP_BUILT_IN_GPU_FAMILY = "a2-"
CLUSTER_POLICY_SECTIONS = ("daemonsets", "dcgm", "dcgmExporter", "devicePlugin", "driver", "gfd",
                           "nodeStatusExporter", "operator", "toolkit")


def _labels(obj, *path):
    node = obj
    for key in path:
        node = (node or {}).get(key) or {}
    return node


def worker_machinesets(live):
    """The worker MachineSets that may be cloned: role worker, not made by kfocp, by name."""
    found = []
    for ms in live or []:
        template_labels = _labels(ms, "spec", "template", "metadata", "labels")
        if template_labels.get(ROLE_LABEL) != "worker":
            continue
        if _labels(ms, "metadata", "labels").get(MANAGED_BY) == MANAGER:
            continue
        found.append(ms)
    return sorted(found, key=lambda m: m["metadata"]["name"])


def cloud_of(machineset, fields=None):
    """The cloud of a MachineSet, from its providerSpec.value.kind, or from the instance type
    field it carries; None when unknown."""
    fields = fields or INSTANCE_TYPE_FIELDS
    value = ((((machineset.get("spec") or {}).get("template") or {}).get("spec") or {}).get("providerSpec")
             or {}).get("value") or {}
    if value.get("kind") in PROVIDER_KINDS and PROVIDER_KINDS[value["kind"]] in fields:
        return PROVIDER_KINDS[value["kind"]]
    for cloud, key in sorted(fields.items()):
        if key in value:
            return cloud
    return None


def normalise(entries, field="gpu_machinesets"):
    out = []
    for where, entry in named_entries(entries, field, "{name, instance_type, accelerator}", "Name the GPU MachineSet",
                                      dns_label):
        require(isinstance(entry.get("instance_type"), dict) and entry["instance_type"], where + ".instance_type",
                "is required, a mapping of cloud to instance type",
                "Give e.g. {aws: g5.2xlarge, azure: Standard_NC8as_T4_v3, gcp: g2-standard-8}")
        require(isinstance(entry.get("accelerator"), str) and entry.get("accelerator"), where + ".accelerator",
                "is required (the value of the node label %s)" % ACCELERATOR_LABEL, "Give e.g. nvidia-a10g")
        label_value(entry["accelerator"], where + ".accelerator")
        labels(entry.get("labels") or {}, where + ".labels")
        if entry.get("gcp_gpu") is not None:
            _gcp_gpu(entry["gcp_gpu"], where + ".gcp_gpu")
        replicas = entry.get("replicas", 0)
        require(isinstance(replicas, int) and not isinstance(replicas, bool) and replicas >= 0, where + ".replicas",
                "must be a whole number >= 0", "Give 0 when the autoscaler adds the nodes")
        item = dict(entry, replicas=replicas, autoscaled=entry.get("autoscaled", True) is not False, where=where)
        out.append(item)
    return out


def _gcp_gpu(value, field):
    require(isinstance(value, dict) and isinstance(value.get("type"), str) and value.get("type"), field + ".type",
            "is required", "Give the GCP accelerator type to attach, e.g. {type: nvidia-tesla-t4, count: 1}")
    count = value.get("count", 1)
    require(isinstance(count, int) and not isinstance(count, bool) and count >= 1, field + ".count",
            "must be a whole number >= 1, got %r" % (count,), "Give the number of GPUs per machine, e.g. 1")
    return {"type": value["type"], "count": count}


def _gcp_gpus(provider, entry):
    """A GCP GPU machine: Terminate on host maintenance, and its GPUs attached when its machine
    type (N1) has none of its own."""
    machine_type = provider.get("machineType") or ""
    where = entry["where"]
    if machine_type.startswith(GCP_ATTACHED_GPU_FAMILY):
        require(entry.get("gcp_gpu") is not None, where + ".gcp_gpu",
                "is required: the GCP machine type %s has no GPU of its own" % machine_type,
                "Give the GPU to attach, e.g. {type: nvidia-tesla-t4, count: 1}, or use a machine type with GPUs "
                "built in (g2-, a2-, a3-)")
    if entry.get("gcp_gpu") is not None:
        require(not machine_type.startswith(GCP_BUILT_IN_GPU_FAMILY), where + ".gcp_gpu",
                "cannot be given: the GCP machine type %s has its GPUs built in" % machine_type, "Leave it out")
        provider["gpus"] = [_gcp_gpu(entry["gcp_gpu"], where + ".gcp_gpu")]
    else:
        provider.pop("gpus", None)
    provider["onHostMaintenance"] = GCP_TERMINATE


def clone(source, entry, cloud, fields=None, live=None):
    """A GPU MachineSet from a worker MachineSet: its own name and selector, the instance type
    swapped, the ai-ml taint and the workload/accelerator node labels; on GCP, Terminate on host
    maintenance and the attached GPU of an N1 machine type."""
    fields = fields or INSTANCE_TYPE_FIELDS
    name = entry["name"]
    src_spec = source.get("spec") or {}
    template = copy.deepcopy(src_spec.get("template") or {})
    tmeta = template.get("metadata") or {}
    infra = (_labels(source, "metadata", "labels").get(CLUSTER_LABEL)
             or _labels(source, "spec", "selector", "matchLabels").get(CLUSTER_LABEL)
             or (tmeta.get("labels") or {}).get(CLUSTER_LABEL))
    selector = {MACHINESET_LABEL: name}
    if infra:
        selector[CLUSTER_LABEL] = infra
    template_labels = dict(tmeta.get("labels") or {})
    template_labels.update(selector)
    new_tmeta = {"labels": template_labels}
    if tmeta.get("annotations"):
        new_tmeta["annotations"] = dict(tmeta["annotations"])
    tspec = template.get("spec") or {}
    node_meta = dict(tspec.get("metadata") or {})
    node_labels = dict(node_meta.get("labels") or {})
    node_labels.update(entry.get("labels") or {})
    node_labels[WORKLOAD_LABEL] = WORKLOAD
    node_labels[ACCELERATOR_LABEL] = entry["accelerator"]
    node_meta["labels"] = node_labels
    tspec["metadata"] = node_meta
    taints = [t for t in tspec.get("taints") or [] if t.get("key") != TAINT["key"]]
    tspec["taints"] = taints + [dict(TAINT)]
    provider = tspec.setdefault("providerSpec", {}).setdefault("value", {})
    provider[fields[cloud]] = entry["instance_type"][cloud]
    if cloud == "gcp":
        _gcp_gpus(provider, entry)
    replicas = entry["replicas"]
    if entry["autoscaled"] and live is not None and isinstance((live.get("spec") or {}).get("replicas"), int):
        # The autoscaler owns the count once the MachineSet exists: send the value it chose, so
        # that kfocp co-owns it instead of conflicting with (or resetting) the autoscaler.
        replicas = live["spec"]["replicas"]
    meta = {"name": name, "namespace": MACHINE_API, "labels": {CLUSTER_LABEL: infra} if infra else {}}
    if not meta["labels"]:
        meta.pop("labels")
    return {"apiVersion": MACHINESET_API, "kind": "MachineSet", "metadata": meta,
            "spec": {"replicas": replicas, "selector": {"matchLabels": selector},
                     "template": {"metadata": new_tmeta, "spec": tspec}}}


def machinesets(entries, live, cloud=None, fields=None, field="gpu_machinesets"):
    """The GPU MachineSets for `entries`, cloned from the worker MachineSets in `live` (every
    MachineSet of openshift-machine-api, as read from the cluster). With `live` None (not read
    yet) the entries are only checked."""
    fields = fields or INSTANCE_TYPE_FIELDS
    entries = normalise(entries, field)
    if not entries or live is None:
        return []
    workers = worker_machinesets(live)
    require(workers, field, "no worker MachineSet in %s to clone" % MACHINE_API,
            "Run against a cluster with machine API worker MachineSets (installer-provisioned), or set %s: [] "
            "to add no GPU nodes" % field)
    by_name = dict((m["metadata"]["name"], m) for m in live or [])
    out = []
    for entry in entries:
        where = entry["where"]
        if entry.get("source"):
            source = by_name.get(entry["source"])
            require(source is not None and source in workers, where + ".source",
                    "%r is not a worker MachineSet in %s" % (entry["source"], MACHINE_API),
                    "Use one of %s" % ", ".join(m["metadata"]["name"] for m in workers))
        else:
            source = workers[0]
        its_cloud = cloud or cloud_of(source, fields)
        require(its_cloud in fields, "gpu_cloud",
                "cannot tell the cloud of MachineSet %s (%r)" % (source["metadata"]["name"], its_cloud),
                "Set gpu_cloud to one of %s, or add the cloud to gpu_instance_type_fields" % ", ".join(sorted(fields)))
        require(entry["instance_type"].get(its_cloud), "%s.instance_type.%s" % (where, its_cloud),
                "is required: the MachineSet %s to clone runs on %s" % (source["metadata"]["name"], its_cloud),
                "Give the %s instance type with GPUs to use" % its_cloud)
        out.append(clone(source, entry, its_cloud, fields, by_name.get(entry["name"])))
    return out


def _tolerating(tolerations, wanted=(TOLERATION,)):
    tolerations = [dict(t) for t in tolerations or []]
    for want in wanted:
        if not any(t.get("key") == want["key"] and t.get("effect") == want["effect"] for t in tolerations):
            tolerations.append(dict(want))
    return tolerations


def node_feature_discovery(name, namespace, spec, tolerations=True, field="gpu_nfd_spec", image=None):
    """The NodeFeatureDiscovery instance; its workers tolerate the ai-ml taint. `tolerations`:
    whether the NFD operator has spec.operand.workerTolerations (from 4.19); before, its workers
    tolerate every NoSchedule taint on their own, and the API refuses the field. `image`: the
    operand image of an NFD operator that takes it only from spec.operand.image (4.14 to 4.16),
    written when the spec gives none."""
    spec = copy.deepcopy(spec or {})
    operand = spec.setdefault("operand", {})
    if image and not operand.get("image"):
        operand["image"] = image
    if tolerations:
        operand["workerTolerations"] = _tolerating(operand.get("workerTolerations"))
    else:
        require("workerTolerations" not in operand, field + ".operand.workerTolerations",
                "does not exist in the NodeFeatureDiscovery API before the NFD operator of OpenShift 4.19",
                "Leave it out: the NFD operator's workers tolerate every NoSchedule taint before 4.19")
    return {"apiVersion": "nfd.openshift.io/v1", "kind": "NodeFeatureDiscovery",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def cluster_policy(name, spec, field="gpu_cluster_policy_spec"):
    """The ClusterPolicy; every section the CRD requires must be given, and the operator's
    DaemonSets tolerate the ai-ml taint and keep their own nvidia.com/gpu toleration (the list
    replaces the operands' own)."""
    require(isinstance(spec, dict), field, "must be a mapping", "Give the ClusterPolicy spec")
    for section in CLUSTER_POLICY_SECTIONS:
        require(isinstance(spec.get(section), dict), "%s.%s" % (field, section),
                "is required by the ClusterPolicy CRD", "Give it, e.g. {enabled: true}")
    spec = copy.deepcopy(spec)
    spec["daemonsets"]["tolerations"] = _tolerating(spec["daemonsets"].get("tolerations"), (GPU_TOLERATION, TOLERATION))
    return {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": name}, "spec": spec}


def objects(params):
    """The gpu role's first apply: the operators (Namespace, OperatorGroup, Subscription) and the
    GPU MachineSets. `params`: operators, machinesets, live_machinesets, cloud, instance_type_fields,
    nfd_namespace (the NodeFeatureDiscovery's namespace, created when missing), live_operator_groups
    (the cluster's OperatorGroups), openshift (the cluster's OpenShift minor)."""
    fields = params.get("instance_type_fields") or INSTANCE_TYPE_FIELDS
    operators = olm.objects(params.get("operators") or [], "gpu_operators", params.get("live_operator_groups"),
                            params.get("openshift") or None)
    nfd_ns = params.get("nfd_namespace")
    if nfd_ns and not any(o["kind"] == "Namespace" and o["metadata"]["name"] == nfd_ns for o in operators):
        operators.insert(0, namespace(dns_label(nfd_ns, "gpu_nfd_namespace")))
    sets = machinesets(params.get("machinesets") or [], params.get("live_machinesets"), params.get("cloud") or None,
                       fields)
    return operators + sets


def operands(params):
    """The gpu role's second apply, once the operators run: NodeFeatureDiscovery and ClusterPolicy.
    `params`: nfd, cluster_policy, openshift (the cluster's OpenShift minor), installed ({package:
    version} of the installed operators: the NFD operator's version decides its fields)."""
    out = []
    nfd = params.get("nfd") or {}
    if nfd.get("enabled", True):
        tolerations = versions.feature("NodeFeatureDiscovery", params.get("openshift") or None,
                                       params.get("installed") or {})
        image = versions.nfd_operand_image(params.get("openshift") or None, params.get("installed") or {})
        out.append(node_feature_discovery(nfd.get("name", _DEFAULTS["gpu_nfd_name"]), nfd.get("namespace", _DEFAULTS["gpu_nfd_namespace"]),
                                          nfd.get("spec"), tolerations, image=image))
    policy = params.get("cluster_policy") or {}
    if policy.get("enabled", True):
        out.append(cluster_policy(policy.get("name", _DEFAULTS["gpu_cluster_policy_name"]), policy.get("spec")))
    return out
