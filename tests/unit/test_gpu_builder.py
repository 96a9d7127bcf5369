"""Table tests of the GPU builder: MachineSet cloning per cloud, validation, operators and operands."""
import copy
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import gpu, olm
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError
from gomod import GPU_OPERATOR, require_module
from judges import machine_api_operator

ROOT = Path(__file__).resolve().parents[2]
GPU_DEFAULTS = yaml.safe_load((ROOT / "roles" / "gpu" / "defaults" / "main.yml").read_text())


def worker(name="ci-x1-worker-a", cloud_kind="AWSMachineProviderConfig", field="instanceType", value="m6i.xlarge",
           role="worker", labels=None):
    return {"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
            "metadata": {"name": name, "namespace": "openshift-machine-api", "uid": "u1", "resourceVersion": "9",
                         "labels": dict({"machine.openshift.io/cluster-api-cluster": "ci-x1"}, **(labels or {})),
                         "annotations": {"machine.openshift.io/vCPU": "4"}},
            "spec": {"replicas": 3,
                     "selector": {"matchLabels": {"machine.openshift.io/cluster-api-cluster": "ci-x1",
                                                  "machine.openshift.io/cluster-api-machineset": name}},
                     "template": {"metadata": {"labels": {
                         "machine.openshift.io/cluster-api-cluster": "ci-x1",
                         "machine.openshift.io/cluster-api-machine-role": role,
                         "machine.openshift.io/cluster-api-machine-type": role,
                         "machine.openshift.io/cluster-api-machineset": name}},
                         "spec": {"metadata": {"labels": {"node-role.kubernetes.io/worker": ""}},
                                  "taints": [{"key": "workload", "value": "other", "effect": "NoExecute"}],
                                  "providerSpec": {"value": {"kind": cloud_kind, field: value, "zone": "a"}}}}},
            "status": {"replicas": 3}}


ENTRY = {"name": "gpu-a10g", "accelerator": "nvidia-a10g",
         "instance_type": {"aws": "g5.2xlarge", "azure": "Standard_NV36ads_A10_v5", "gcp": "g2-standard-8"}}


@pytest.mark.parametrize("kind, field, cloud, expected", [
    ("AWSMachineProviderConfig", "instanceType", "aws", "g5.2xlarge"),
    ("AzureMachineProviderSpec", "vmSize", "azure", "Standard_NV36ads_A10_v5"),
    ("GCPMachineProviderSpec", "machineType", "gcp", "g2-standard-8"),
])
def test_clone_swaps_the_instance_type_per_cloud(kind, field, cloud, expected):
    source = worker(cloud_kind=kind, field=field)
    before = copy.deepcopy(source)
    [ms] = gpu.machinesets([ENTRY], [source])
    assert source == before  # the source is not modified
    assert gpu.cloud_of(source) == cloud
    value = ms["spec"]["template"]["spec"]["providerSpec"]["value"]
    assert value[field] == expected and value["zone"] == "a" and value["kind"] == kind


def test_clone_has_its_own_name_selector_taint_and_node_labels():
    [ms] = gpu.machinesets([dict(ENTRY, labels={"team": "ml"})], [worker()])
    assert ms["metadata"] == {"name": "gpu-a10g", "namespace": "openshift-machine-api",
                              "labels": {"machine.openshift.io/cluster-api-cluster": "ci-x1"}}
    assert "status" not in ms and ms["spec"]["replicas"] == 0
    match = ms["spec"]["selector"]["matchLabels"]
    assert match == {"machine.openshift.io/cluster-api-cluster": "ci-x1",
                     "machine.openshift.io/cluster-api-machineset": "gpu-a10g"}
    tlabels = ms["spec"]["template"]["metadata"]["labels"]
    assert all(tlabels[k] == v for k, v in match.items())
    assert tlabels["machine.openshift.io/cluster-api-machine-role"] == "worker"
    tspec = ms["spec"]["template"]["spec"]
    assert tspec["metadata"]["labels"] == {"node-role.kubernetes.io/worker": "", "team": "ml", "workload": "ai-ml",
                                           "cluster-api/accelerator": "nvidia-a10g"}
    assert tspec["taints"] == [{"key": "workload", "value": "ai-ml", "effect": "NoSchedule"}]


def test_source_and_first_worker_by_name_and_skips_non_workers_and_kfocp_clones():
    infra = worker("ci-x1-infra-a", role="infra")
    clone = worker("aaa-gpu", labels={"app.kubernetes.io/managed-by": "kfocp"})
    b, a = worker("ci-x1-worker-b", value="b-type"), worker("ci-x1-worker-a")
    assert [m["metadata"]["name"] for m in gpu.worker_machinesets([infra, clone, b, a])] == \
        ["ci-x1-worker-a", "ci-x1-worker-b"]
    [ms] = gpu.machinesets([dict(ENTRY, source="ci-x1-worker-b")], [infra, clone, b, a])
    assert ms["spec"]["template"]["spec"]["providerSpec"]["value"]["instanceType"] == "g5.2xlarge"
    with pytest.raises(DefinitionError, match=r"gpu_machinesets\[0\].source: 'ci-x1-infra-a' is not a worker"):
        gpu.machinesets([dict(ENTRY, source="ci-x1-infra-a")], [infra, a])


def test_autoscaled_machineset_keeps_the_count_the_autoscaler_chose():
    live_gpu = {"metadata": {"name": "gpu-a10g"}, "spec": {"replicas": 4}}
    [ms] = gpu.machinesets([ENTRY], [worker(), live_gpu])
    assert ms["spec"]["replicas"] == 4
    [fixed] = gpu.machinesets([dict(ENTRY, autoscaled=False, replicas=1)], [worker(), live_gpu])
    assert fixed["spec"]["replicas"] == 1


@pytest.mark.parametrize("entries, live, cloud, message", [
    ([ENTRY], [], None, r"gpu_machinesets: no worker MachineSet in openshift-machine-api to clone"),
    ([ENTRY], [worker(role="infra")], None, r"no worker MachineSet"),
    ([dict(ENTRY, instance_type={"azure": "x"})], [worker()], None,
     r"gpu_machinesets\[0\].instance_type.aws: is required: the MachineSet ci-x1-worker-a to clone runs on aws"),
    ([dict(ENTRY, instance_type={})], [worker()], None, r"gpu_machinesets\[0\].instance_type: is required"),
    ([dict(ENTRY, accelerator="")], [worker()], None, r"gpu_machinesets\[0\].accelerator: is required"),
    ([dict(ENTRY, name="GPU")], [worker()], None, r"gpu_machinesets\[0\].name: 'GPU' is not a DNS label"),
    ([ENTRY, ENTRY], [worker()], None, r"gpu_machinesets\[1\].name: 'gpu-a10g' is listed twice"),
    ([dict(ENTRY, replicas=-1)], [worker()], None, r"gpu_machinesets\[0\].replicas: must be a whole number"),
    ([dict(ENTRY, accelerator="nvidia a10g")], [worker()], None, r"gpu_machinesets\[0\].accelerator: 'nvidia a10g' is not"),
    ([dict(ENTRY, labels={"zone": "a b"})], [worker()], None, r"gpu_machinesets\[0\].labels.zone: 'a b' is not"),
    ([dict(ENTRY, labels={"-bad-": "x"})], [worker()], None, r"gpu_machinesets\[0\].labels key '-bad-'"),
    ([ENTRY], [worker(cloud_kind="VSphereMachineProviderSpec", field="template")], None,
     r"gpu_cloud: cannot tell the cloud of MachineSet ci-x1-worker-a"),
])
def test_bad_input_names_the_field(entries, live, cloud, message):
    with pytest.raises(DefinitionError, match=message):
        gpu.machinesets(entries, live, cloud)


def test_no_entries_need_no_worker():
    assert gpu.machinesets([], []) == []


def test_entries_are_checked_before_the_machinesets_are_read():
    """live None: the pre-flight of site.yml checks the entries, nothing is cloned yet."""
    assert gpu.machinesets([ENTRY], None) == []
    with pytest.raises(DefinitionError, match=r"gpu_machinesets\[0\].accelerator: is required"):
        gpu.machinesets([dict(ENTRY, accelerator="")], None)


def test_explicit_cloud_and_custom_field_table():
    source = worker(cloud_kind="VSphereMachineProviderSpec", field="template")
    [ms] = gpu.machinesets([dict(ENTRY, instance_type={"vsphere": "gpu-template"})], [source], cloud="vsphere",
                           fields={"vsphere": "template"})
    assert ms["spec"]["template"]["spec"]["providerSpec"]["value"]["template"] == "gpu-template"


def test_operators_namespaces_groups_subscriptions_and_csv_selector():
    ops = [{"namespace": "openshift-nfd", "package": "nfd", "channel": "stable", "source": "redhat-operators"},
           {"namespace": "openshift-serverless", "package": "serverless-operator", "channel": "stable",
            "source": "redhat-operators", "target_namespaces": []}]
    objs = olm.objects(ops, "gpu_operators")
    assert [(o["kind"], o["metadata"]["name"]) for o in objs] == [
        ("Namespace", "openshift-nfd"), ("Namespace", "openshift-serverless"),
        ("OperatorGroup", "openshift-nfd"), ("OperatorGroup", "openshift-serverless"),
        ("Subscription", "nfd"), ("Subscription", "serverless-operator")]
    assert objs[2]["spec"] == {"targetNamespaces": ["openshift-nfd"]} and objs[3]["spec"] == {}
    assert objs[4]["spec"] == {"channel": "stable", "name": "nfd", "source": "redhat-operators",
                               "sourceNamespace": "openshift-marketplace", "installPlanApproval": "Automatic"}
    assert olm.waits(ops, "x")[0]["selector"] == "operators.coreos.com/nfd.openshift-nfd"
    with pytest.raises(DefinitionError, match=r"kfocp_openshift_version: is not known, so gpu_operators\[0\] has no "
                                              r"default channel"):
        olm.objects([{"namespace": "a", "package": "b", "source": "c"}], "gpu_operators")
    with pytest.raises(DefinitionError, match=r"gpu_operators\[0\].channel: is required: kfocp has no channel of b"):
        olm.objects([{"namespace": "a", "package": "b", "source": "c"}], "gpu_operators", None, "4.18")


def test_objects_add_the_nfd_namespace_once():
    objs = gpu.objects({"operators": [], "machinesets": [], "nfd_namespace": "openshift-nfd"})
    assert [(o["kind"], o["metadata"]["name"]) for o in objs] == [("Namespace", "openshift-nfd")]


def test_operands_tolerate_the_taint_and_need_every_cluster_policy_section():
    spec = dict((s, {"enabled": True}) for s in gpu.CLUSTER_POLICY_SECTIONS)
    spec["operator"] = {"defaultRuntime": "crio"}
    nfd, policy = gpu.operands({"nfd": {"spec": {"operand": {"servicePort": 12000}}}, "cluster_policy": {"spec": spec},
                                "openshift": "4.20"})
    assert nfd["metadata"] == {"name": "nfd-instance", "namespace": "openshift-nfd"}
    assert nfd["spec"]["operand"]["workerTolerations"] == [gpu.TOLERATION]
    assert policy["kind"] == "ClusterPolicy"
    assert policy["spec"]["daemonsets"]["tolerations"] == [gpu.GPU_TOLERATION, gpu.TOLERATION]
    assert "tolerations" not in spec["daemonsets"]  # input untouched
    del spec["dcgm"]
    with pytest.raises(DefinitionError, match=r"gpu_cluster_policy_spec.dcgm: is required by the ClusterPolicy CRD"):
        gpu.operands({"cluster_policy": {"spec": spec}})
    assert gpu.operands({"nfd": {"enabled": False}, "cluster_policy": {"enabled": False}}) == []


# ---------------------------------------------------------------- machine-api-operator's judgement
# A worker MachineSet per cloud as the installer writes it, before machine-api-operator's defaulting
# webhook fills in the rest (the MachineSet that exists in the cluster is the defaulted one).
INSTALLER_WORKERS = {
    "AWS": ("us-east-1", {"apiVersion": "machine.openshift.io/v1beta1", "kind": "AWSMachineProviderConfig",
                          "instanceType": "m6i.xlarge", "ami": {"id": "ami-0123456789abcdef0"},
                          "placement": {"region": "us-east-1", "availabilityZone": "us-east-1a"},
                          "iamInstanceProfile": {"id": "ci-x1-worker-profile"},
                          "subnet": {"filters": [{"name": "tag:Name", "values": ["ci-x1-subnet-private-us-east-1a"]}]}}),
    "Azure": ("eastus", {"apiVersion": "machine.openshift.io/v1beta1", "kind": "AzureMachineProviderSpec",
                         "vmSize": "Standard_D4s_v3", "location": "eastus", "zone": "1",
                         "osDisk": {"diskSizeGB": 128, "osType": "Linux", "managedDisk": {"storageAccountType": "Premium_LRS"}},
                         "image": {"resourceID": "/resourceGroups/ci-x1-rg/providers/Microsoft.Compute/galleries/"
                                                 "gallery_ci_x1/images/ci-x1-gen2/versions/latest"}}),
    "GCP": ("us-central1", {"apiVersion": "machine.openshift.io/v1beta1", "kind": "GCPMachineProviderSpec",
                            "machineType": "n2-standard-4", "region": "us-central1", "zone": "us-central1-a",
                            "onHostMaintenance": "Migrate",
                            "serviceAccounts": [{"email": "ci-x1-w@kfocp.iam.gserviceaccount.com",
                                                 "scopes": ["https://www.googleapis.com/auth/cloud-platform"]}]}),
}


def installed_worker(platform):
    """The worker MachineSet of an installer-provisioned cluster on `platform`, as machine-api-operator
    defaulted it; it passes machine-api-operator's validation."""
    region, value = INSTALLER_WORKERS[platform]
    body = worker()
    body["spec"]["template"]["spec"]["providerSpec"]["value"] = copy.deepcopy(value)
    for key in ("uid", "resourceVersion"):
        body["metadata"].pop(key)
    body.pop("status")
    [verdict] = machine_api_operator(platform, [body], region)
    assert verdict["errors"] == [], verdict["errors"]
    return verdict["defaulted"]


@pytest.mark.parametrize("platform, instance_type, gcp_gpu", [
    ("AWS", "g5.2xlarge", None),
    ("Azure", "Standard_NV36ads_A10_v5", None),
    ("GCP", "g2-standard-8", None),
    ("GCP", "a2-highgpu-1g", None),
    ("GCP", "n1-standard-8", {"type": "nvidia-tesla-t4"}),
])
def test_clones_pass_machine_api_operators_defaulting_and_validation(platform, instance_type, gcp_gpu):
    cloud = platform.lower()
    entry = {"name": "gpu-x", "accelerator": "nvidia-x", "instance_type": {cloud: instance_type}}
    if gcp_gpu:
        entry["gcp_gpu"] = gcp_gpu
    [ms] = gpu.machinesets([entry], [installed_worker(platform)])
    [verdict] = machine_api_operator(platform, [ms], INSTALLER_WORKERS[platform][0])
    assert verdict["errors"] == []
    value = verdict["defaulted"]["spec"]["template"]["spec"]["providerSpec"]["value"]
    assert value[gpu.INSTANCE_TYPE_FIELDS[cloud]] == instance_type
    if platform == "GCP":
        # GPUs on GCP: the machine stops on host maintenance, and an N1 machine gets its GPU attached
        assert value["onHostMaintenance"] == "Terminate"
        assert value.get("gpus") == ([{"type": "nvidia-tesla-t4", "count": 1}] if gcp_gpu else None)


@pytest.mark.parametrize("instance_type, gcp_gpu, message", [
    ("n1-standard-8", None, r"gpu_machinesets\[0\].gcp_gpu: is required: the GCP machine type n1-standard-8 has no GPU"),
    ("a2-highgpu-1g", {"type": "nvidia-tesla-a100"},
     r"gpu_machinesets\[0\].gcp_gpu: cannot be given: the GCP machine type a2-highgpu-1g has its GPUs built in"),
    ("n1-standard-8", {"count": 1}, r"gpu_machinesets\[0\].gcp_gpu.type: is required"),
    ("n1-standard-8", {"type": "nvidia-tesla-t4", "count": 0}, r"gpu_machinesets\[0\].gcp_gpu.count: must be"),
])
def test_bad_gcp_gpus_name_the_field(instance_type, gcp_gpu, message):
    entry = {"name": "gpu-x", "accelerator": "nvidia-x", "instance_type": {"gcp": instance_type}, "gcp_gpu": gcp_gpu}
    with pytest.raises(DefinitionError, match=message):
        gpu.machinesets([entry], [worker(cloud_kind="GCPMachineProviderSpec", field="machineType")])


# ---------------------------------------------------------------- what the operators do with the operands
def _tolerates(tolerations, taint):
    """Whether `tolerations` tolerate `taint`, as the scheduler's (k8s.io/api ToleratesTaint)."""
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("key") and t["key"] != taint["key"]:
            continue
        if t.get("operator", "Equal") == "Exists" or t.get("value", "") == taint.get("value", ""):
            return True
    return False


def test_the_cluster_policy_keeps_the_toleration_of_every_gpu_operator_operand():
    """ClusterPolicy daemonsets.tolerations replaces each operand DaemonSet's tolerations
    (object_controls.go); kfocp's list must keep every toleration the operands' assets carry, and
    the ai-ml one. Oracle: NVIDIA/gpu-operator v25.3.4 from the Go module cache."""
    source = require_module(pytest, *GPU_OPERATOR)
    controls = (source / "controllers" / "object_controls.go").read_text()
    assert re.search(r"if len\(config\.Daemonsets\.Tolerations\) > 0 \{\s*"
                     r"obj\.Spec\.Template\.Spec\.Tolerations = config\.Daemonsets\.Tolerations", controls)
    operands = {}
    for path in sorted(source.glob("assets/*/*.y*ml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc and doc.get("kind") == "DaemonSet":
                operands[str(path.relative_to(source))] = doc["spec"]["template"]["spec"].get("tolerations") or []
    assert len(operands) > 10 and any("device-plugin" in p for p in operands)
    policy = gpu.cluster_policy("gpu-cluster-policy", GPU_DEFAULTS["gpu_cluster_policy_spec"])
    ours = policy["spec"]["daemonsets"]["tolerations"]
    missing = ["%s: %s" % (path, t) for path, tolerations in operands.items() for t in tolerations
               if t not in ours]
    assert missing == []
    for taint in ({"key": "nvidia.com/gpu", "effect": "NoSchedule"}, dict(gpu.TAINT)):
        assert _tolerates(ours, taint), taint


# openshift/cluster-nfd-operator, manifests/stable/manifests/nfd.clusterserviceversion.yaml, the
# operator's NODE_FEATURE_DISCOVERY_IMAGE (and alm-examples' spec.operand.image), at release-4.14
# a62d778acf51c76b9cbcffd14448bc8f4ec0ab84, release-4.15 1e57eb5fb53eb075abaeaa10b148c04124bbb1ab,
# release-4.16 1536f9efbd73d7f8002b32f778c4ecc68ac5a8a6. Those operators set the operand image only
# from spec.operand.image (controllers/nodefeaturediscovery_controls.go:406, `ImagePath()` returns
# `o.Image`); release-4.17 dbf6216e falls back to the variable
# (internal/controllers/nodefeaturediscovery_reconciler.go).
NFD_CSV_IMAGES = {"4.14": "quay.io/openshift/origin-node-feature-discovery:4.14",
                  "4.15": "quay.io/openshift/origin-node-feature-discovery:4.15",
                  "4.16": "quay.io/openshift/origin-node-feature-discovery:4.16"}


@pytest.mark.parametrize("version", ["4.14", "4.15", "4.16", "4.17", "4.18", "4.19", "4.20"])
def test_nfd_gets_the_operand_image_where_its_operator_reads_it_only_from_the_spec(version):
    [nfd] = gpu.operands({"nfd": {"spec": GPU_DEFAULTS["gpu_nfd_spec"]}, "cluster_policy": {"enabled": False},
                          "openshift": version})
    assert nfd["spec"]["operand"].get("image") == NFD_CSV_IMAGES.get(version)


def test_the_installed_nfd_operator_decides_the_image_and_a_given_image_is_kept():
    params = {"nfd": {"spec": GPU_DEFAULTS["gpu_nfd_spec"]}, "cluster_policy": {"enabled": False}, "openshift": "4.17",
              "installed": {"nfd": "4.16.0-202410011135"}}
    assert gpu.operands(params)[0]["spec"]["operand"]["image"] == NFD_CSV_IMAGES["4.16"]
    mirrored = {"operand": {"image": "mirror.example/nfd:4.14", "servicePort": 12000}}
    [nfd] = gpu.operands(dict(params, nfd={"spec": mirrored}, openshift="4.14", installed={}))
    assert nfd["spec"]["operand"]["image"] == "mirror.example/nfd:4.14"
