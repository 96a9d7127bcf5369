"""The gpu role on OpenShift 4.14 and 4.20 dress, through site.yml against the real API server with
simulated nodes: the NodeFeatureDiscovery carries the operand image where the NFD operator reads it
only from the spec, and the GPU operator's operand DaemonSets, made from its own assets as its
controller makes them (the ClusterPolicy's daemonsets.tolerations replacing theirs), are placed by
the DaemonSet controller and kube-scheduler on GPU nodes tainted nvidia.com/gpu and on kfocp's
workload=ai-ml nodes."""
import re

import pytest
import yaml

from gomod import GPU_OPERATOR, require_module
from helpers import (PlayOperators, ensure_namespace, nfd_crd_before_419, only_roles, play_cluster_version,
                     play_installer_worker_machineset, wait_for)

OWN_PLANE = True
WORKLOADS = True
NFD = ("nfd.openshift.io/v1", "NodeFeatureDiscovery")
# openshift/cluster-nfd-operator release-4.14 a62d778acf51c76b9cbcffd14448bc8f4ec0ab84,
# manifests/stable/manifests/nfd.clusterserviceversion.yaml: NODE_FEATURE_DISCOVERY_IMAGE.
NFD_IMAGE_414 = "quay.io/openshift/origin-node-feature-discovery:4.14"
NAMESPACE = "nvidia-gpu-operator"
# The operand states whose DaemonSets a ClusterPolicy with kfocp's defaults turns on, but the
# driver's: the operator builds that one from its asset with OpenShift's driver toolkit (volumes and
# a container the asset does not hold); its tolerations are set the same way.
STATES = ("state-container-toolkit", "state-device-plugin", "state-dcgm", "state-dcgm-exporter",
          "gpu-feature-discovery", "state-node-status-exporter", "state-operator-validation")


def gpu_operator_standin(kube, source, policy, gpu_nodes):
    """What the GPU operator does with a ClusterPolicy, from its v25.3.4 source: it labels the
    nodes NFD marked pci-10de with the operands' deploy labels (controllers/state_manager.go,
    gpuStateLabels, labelGPUNodes), and creates each operand's ServiceAccount and DaemonSet from
    its assets in its namespace, the DaemonSet's tolerations replaced by
    spec.daemonsets.tolerations when that is not empty (controllers/object_controls.go). Images are
    placeholders: kwok runs no container. Returns the DaemonSets' names."""
    manager = (source / "controllers" / "state_manager.go").read_text()
    block = re.search(r"var gpuStateLabels = map\[string\]map\[string\]string\{(.*?)\n\}", manager, re.S).group(1)
    container = re.search(r'gpuWorkloadConfigContainer:\s*\{(.*?)\}', block, re.S).group(1)
    deploy = dict(re.findall(r'"([^"]+)":\s*"([^"]+)"', container))
    nodes = kube.resource("v1", "Node")
    for name in gpu_nodes:
        kube.request("PATCH", kube.path(nodes, None, name), body={"metadata": {"labels": deploy}},
                     content_type="application/merge-patch+json")
    tolerations = (policy["spec"].get("daemonsets") or {}).get("tolerations") or []
    names = []
    for state in STATES:
        for path in sorted((source / "assets" / state).glob("*.y*ml")):
            for doc in yaml.safe_load_all(path.read_text()):
                if not doc or doc.get("kind") not in ("ServiceAccount", "DaemonSet"):
                    continue
                doc["metadata"]["namespace"] = NAMESPACE
                if doc["kind"] == "DaemonSet":
                    pod = doc["spec"]["template"]["spec"]
                    for container in pod.get("initContainers", []) + pod["containers"]:
                        container["image"] = "registry.example/nvidia/%s:placeholder" % container["name"]
                    if tolerations:
                        pod["tolerations"] = tolerations
                    names.append(doc["metadata"]["name"])
                kube.apply(kube.resource(doc["apiVersion"], doc["kind"]), doc, "gpu-operator", force=True)
    return names


@pytest.mark.parametrize("openshift, image", [("4.14.38", NFD_IMAGE_414), ("4.20.4", None)])
def test_the_operands_run_on_gpu_nodes_of_either_taint_and_nfd_has_its_image(
        playbook, kube, control_plane, instance, openshift, image):
    source = require_module(pytest, *GPU_OPERATOR)
    play_cluster_version(kube, openshift)
    put_back = nfd_crd_before_419(control_plane) if openshift.startswith("4.14") else None
    play_installer_worker_machineset(kube)
    extra = dict(only_roles("gpu"), kfocp_instance=instance, kfocp_gpu_enabled=True, scc_grants=[],
                 kfocp_openshift_version="", gpu_csv_timeout=60, gpu_csv_poll_interval=1,
                 gpu_machinesets=[{"name": "%s-a10g" % instance, "accelerator": "nvidia-a10g",
                                   "instance_type": {"aws": "g5.2xlarge"}}])
    made, nodes = [], kube.resource("v1", "Node")
    daemonsets, pods = kube.resource("apps/v1", "DaemonSet"), kube.resource("v1", "Pod")
    try:
        with PlayOperators(kube):
            result = playbook("site", extra)
        assert result.rc == 0, result.stdout[-3000:]
        nfd = kube.get(kube.resource(*NFD), "nfd-instance", "openshift-nfd")
        assert nfd["spec"]["operand"].get("image") == image

        # a node of kfocp's GPU MachineSet (workload=ai-ml:NoSchedule), and a GPU node tainted as the
        # GPU operator's docs taint them; both with the label NFD gives an NVIDIA GPU
        pci = {"feature.node.kubernetes.io/pci-10de.present": "true"}
        ai_ml = control_plane.add_machineset_nodes()
        tainted = control_plane.add_nodes([{"name": "%s-gpu-tainted" % instance, "labels": dict(pci),
                                            "taints": [{"key": "nvidia.com/gpu", "value": "present",
                                                        "effect": "NoSchedule"}]}])
        made += ai_ml + tainted
        gpu_nodes = [n for n in ai_ml if "a10g" in n] + tainted
        for name in gpu_nodes:
            kube.request("PATCH", kube.path(nodes, None, name), body={"metadata": {"labels": pci}},
                         content_type="application/merge-patch+json")
        ensure_namespace(kube, NAMESPACE)
        policy = kube.get(kube.resource("nvidia.com/v1", "ClusterPolicy"), "gpu-cluster-policy")
        names = gpu_operator_standin(kube, source, policy, gpu_nodes)
        assert "nvidia-device-plugin-daemonset" in names

        def placed():
            out = {}
            for name in names:
                status = (kube.get(daemonsets, name, NAMESPACE) or {}).get("status") or {}
                out[name] = status.get("desiredNumberScheduled")
            return out if all(v == len(gpu_nodes) for v in out.values()) else None
        wait_for(placed, timeout=120, what="every operand DaemonSet wanting a pod on each GPU node")
        wait_for(lambda: set(p["spec"].get("nodeName") for p in kube.list(pods, namespace=NAMESPACE)
                             if p["metadata"]["name"].startswith("nvidia-device-plugin-daemonset")) == set(gpu_nodes),
                 timeout=120, what="the device plugin's pods scheduled on both GPU nodes")
    finally:
        for ds in kube.list(daemonsets, namespace=NAMESPACE):
            kube.delete(daemonsets, ds["metadata"]["name"], NAMESPACE)
        for name in made:
            kube.delete(nodes, name)
        with PlayOperators(kube):
            assert playbook("site", dict(extra, gpu_state="absent")).rc == 0
        assert playbook("uninstall", {"kfocp_instance": instance}).rc == 0
        if put_back:
            put_back()
