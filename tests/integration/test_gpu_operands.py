"""The gpu role on OpenShift 4.14 and 4.20 dress, through site.yml against the real API server with
simulated nodes: the NodeFeatureDiscovery carries the operand image where the NFD operator reads it
only from the spec, and NVIDIA's GPU operator itself (built from its Go module at the version
tests/upstream/go.mod pins, run by hack/gpu_operator.py) turns kfocp's ClusterPolicy into its
operand DaemonSets, which the DaemonSet controller and kube-scheduler place on GPU nodes tainted
nvidia.com/gpu and on kfocp's workload=ai-ml nodes; and not on the nvidia.com/gpu ones once the
ClusterPolicy's daemonsets.tolerations leave that toleration out (the list replaces the operands'
own)."""
import pytest
import yaml

import gpu_operator
from helpers import (PlayOperators, nfd_crd_before_419, only_roles, play_cluster_version,
                     play_installer_worker_machineset, wait_for)

OWN_PLANE = True
WORKLOADS = True
NFD = ("nfd.openshift.io/v1", "NodeFeatureDiscovery")
POLICY = ("nvidia.com/v1", "ClusterPolicy")
# openshift/cluster-nfd-operator release-4.14 a62d778acf51c76b9cbcffd14448bc8f4ec0ab84,
# manifests/stable/manifests/nfd.clusterserviceversion.yaml: NODE_FEATURE_DISCOVERY_IMAGE.
NFD_IMAGE_414 = "quay.io/openshift/origin-node-feature-discovery:4.14"
NAMESPACE = gpu_operator.NAMESPACE
# The operand states a ClusterPolicy with kfocp's defaults turns on, by the ClusterPolicy section
# that turns each on (controllers/state_manager.go isStateEnabled; state-operator-validation is
# always on). Their DaemonSets are named in the operator's assets.
STATES = {"state-driver": "driver", "state-container-toolkit": "toolkit", "state-operator-validation": None,
          "state-device-plugin": "devicePlugin", "state-dcgm": "dcgm", "state-dcgm-exporter": "dcgmExporter",
          "gpu-feature-discovery": "gfd", "state-node-status-exporter": "nodeStatusExporter"}
# The labels NFD puts on a node with an NVIDIA GPU that the operator reads
# (controllers/state_manager.go: gpuNodeLabels, nfdKernelLabelKey, nfdOSReleaseIDLabelKey,
# nfdOSVersionIDLabelKey; the driver's DaemonSet needs the kernel's, object_controls.go
# resolveDriverTag). The kernel and OS values are examples of the shape.
NFD_GPU_LABELS = {"feature.node.kubernetes.io/pci-10de.present": "true",
                  "feature.node.kubernetes.io/kernel-version.full": "5.14.0-284.73.1.el9_2.x86_64",
                  "feature.node.kubernetes.io/system-os_release.ID": "rhcos"}
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def operand_daemonsets(policy):
    """{state: DaemonSet name} of the states `policy` turns on, from the operator's assets."""
    assets = gpu_operator.module_dir() / "assets"
    out = {}
    for state, section in STATES.items():
        if section and not (policy["spec"].get(section) or {}).get("enabled", True):
            continue
        for path in sorted((assets / state).glob("*.y*ml")):
            for doc in yaml.safe_load_all(path.read_text()):
                if doc and doc.get("kind") == "DaemonSet":
                    out[state] = doc["metadata"]["name"]
    return out


def scheduled(kube, names, nodes):
    """True once every DaemonSet of `names` wants a pod on exactly `nodes` and each of its pods is
    bound to one of them, one per node."""
    daemonsets, pods = kube.resource("apps/v1", "DaemonSet"), kube.resource("v1", "Pod")
    live = {ds["metadata"]["name"]: ds for ds in kube.list(daemonsets, namespace=NAMESPACE)}
    bound = {}
    for pod in kube.list(pods, namespace=NAMESPACE):
        if pod["metadata"].get("deletionTimestamp"):
            continue
        owner = [o["name"] for o in pod["metadata"].get("ownerReferences") or [] if o["kind"] == "DaemonSet"]
        if owner:
            bound.setdefault(owner[0], []).append(pod["spec"].get("nodeName"))
    for name in names:
        status = (live.get(name) or {}).get("status") or {}
        if status.get("desiredNumberScheduled") != len(nodes) or sorted(bound.get(name, [])) != sorted(nodes):
            return False
    return True


@pytest.mark.parametrize("openshift, image", [("4.14.38", NFD_IMAGE_414), ("4.20.4", None)])
def test_the_operator_places_its_operands_on_gpu_nodes_of_either_taint_and_nfd_has_its_image(
        playbook, kube, control_plane, instance, openshift, image):
    play_cluster_version(kube, openshift)
    put_back = nfd_crd_before_419(control_plane) if openshift.startswith("4.14") else None
    gpu_operator.prepare(control_plane)
    play_installer_worker_machineset(kube)
    extra = dict(only_roles("gpu"), kfocp_instance=instance, kfocp_gpu_enabled=True, scc_grants=[],
                 kfocp_openshift_version="", gpu_csv_timeout=60, gpu_csv_poll_interval=1,
                 gpu_machinesets=[{"name": "%s-a10g" % instance, "accelerator": "nvidia-a10g",
                                   "instance_type": {"aws": "g5.2xlarge"}}])
    made, nodes = [], kube.resource("v1", "Node")
    daemonsets, policies = kube.resource("apps/v1", "DaemonSet"), kube.resource(*POLICY)
    minor = ".".join(openshift.split(".")[:2])
    operator = gpu_operator.Operator(control_plane, minor)
    try:
        with PlayOperators(kube):
            result = playbook("site", extra)
        assert result.rc == 0, result.stdout[-3000:]
        nfd = kube.get(kube.resource(*NFD), "nfd-instance", "openshift-nfd")
        assert nfd["spec"]["operand"].get("image") == image

        # a node of kfocp's GPU MachineSet (workload=ai-ml:NoSchedule), and a GPU node tainted as the
        # GPU operator's docs taint them; NFD has labelled both as having an NVIDIA GPU
        labels = dict(NFD_GPU_LABELS, **{"feature.node.kubernetes.io/system-os_release.VERSION_ID": minor})
        ai_ml = control_plane.add_machineset_nodes()
        tainted = control_plane.add_nodes([{"name": "%s-gpu-tainted" % instance, "labels": dict(labels),
                                            "taints": [GPU_TAINT]}])
        made += ai_ml + tainted
        ai_ml_gpu = [n for n in ai_ml if "a10g" in n]
        assert ai_ml_gpu, ai_ml
        for name in ai_ml_gpu:
            kube.request("PATCH", kube.path(nodes, None, name), body={"metadata": {"labels": labels}},
                         content_type="application/merge-patch+json")
        gpu_nodes = ai_ml_gpu + tainted

        policy = kube.get(policies, "gpu-cluster-policy")
        wanted = operand_daemonsets(policy)
        assert "state-device-plugin" in wanted and "state-driver" in wanted, wanted
        operator.start()
        try:
            wait_for(lambda: scheduled(kube, wanted.values(), gpu_nodes), timeout=180, interval=1,
                     what="the operator's DaemonSets %s with a pod bound on each GPU node %s"
                     % (sorted(wanted.values()), gpu_nodes))
        except AssertionError as err:
            raise AssertionError("%s\ngpu-operator log:\n%s" % (err, operator.tail())) from None
        owned = [ds for ds in kube.list(daemonsets, namespace=NAMESPACE)
                 if any(o["kind"] == "ClusterPolicy" for o in ds["metadata"].get("ownerReferences") or [])]
        assert {ds["metadata"]["name"] for ds in owned} >= set(wanted.values())

        # the negative control: the ClusterPolicy as kfocp wrote it before it kept the operands'
        # own toleration (the ai-ml one alone): the operator gives every DaemonSet that list, and
        # the DaemonSet controller no longer wants their pods on the node tainted nvidia.com/gpu
        # (NoSchedule: a running pod may stay; a rolling update takes the device plugin's off)
        alone = [t for t in policy["spec"]["daemonsets"]["tolerations"] if t.get("key") != "nvidia.com/gpu"]
        assert alone and len(alone) < len(policy["spec"]["daemonsets"]["tolerations"])
        kube.request("PATCH", kube.path(policies, None, "gpu-cluster-policy"),
                     body={"spec": {"daemonsets": {"tolerations": alone}}}, content_type="application/merge-patch+json")

        def narrowed():
            live = {ds["metadata"]["name"]: ds for ds in kube.list(daemonsets, namespace=NAMESPACE)}
            for name in wanted.values():
                ds = live[name]
                status = ds.get("status") or {}
                if (ds["spec"]["template"]["spec"].get("tolerations") != alone
                        or status.get("observedGeneration") != ds["metadata"]["generation"]
                        or status.get("desiredNumberScheduled") != len(ai_ml_gpu)):
                    return False
            return scheduled(kube, [wanted["state-device-plugin"]], ai_ml_gpu)
        try:
            wait_for(narrowed, timeout=180, interval=1,
                     what="the operator's DaemonSets wanted on the ai-ml GPU nodes %s alone" % ai_ml_gpu)
        except AssertionError as err:
            states = {ds["metadata"]["name"]: (ds.get("status"), ds["spec"]["template"]["spec"].get("tolerations"))
                      for ds in kube.list(daemonsets, namespace=NAMESPACE)}
            raise AssertionError("%s\n%s\ngpu-operator log:\n%s" % (err, states, operator.tail(chars=1500))) from None
    finally:
        operator.stop()
        for ds in kube.list(daemonsets, namespace=NAMESPACE):
            kube.delete(daemonsets, ds["metadata"]["name"], NAMESPACE)
        for name in made:
            kube.delete(nodes, name)
        with PlayOperators(kube):
            assert playbook("site", dict(extra, gpu_state="absent")).rc == 0
        assert playbook("uninstall", {"kfocp_instance": instance}).rc == 0
        if put_back:
            put_back()
