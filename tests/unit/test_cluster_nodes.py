"""The simulated nodes hack/cluster.py makes for MachineSets, as the machine API would."""
import cluster

GPU_MACHINESET = {
    "metadata": {"name": "ci-x1-a10g", "namespace": "openshift-machine-api"},
    "spec": {"replicas": 0, "template": {"spec": {
        "metadata": {"labels": {"workload": "ai-ml", "cluster-api/accelerator": "nvidia-a10g"}},
        "taints": [{"key": "workload", "value": "ai-ml", "effect": "NoSchedule"}]}}}}


def test_gpu_machineset_nodes_carry_its_labels_taints_and_one_gpu():
    [node] = cluster.machineset_nodes(GPU_MACHINESET)
    obj = cluster.node_object(**node)
    assert obj["metadata"]["name"] == "ci-x1-a10g-0"
    assert obj["metadata"]["labels"]["cluster-api/accelerator"] == "nvidia-a10g"
    assert obj["metadata"]["labels"]["node-role.kubernetes.io/worker"] == ""
    assert obj["metadata"]["annotations"] == {"kwok.x-k8s.io/node": "fake"}
    assert obj["spec"]["taints"] == [{"key": "workload", "value": "ai-ml", "effect": "NoSchedule"}]
    assert obj["status"]["capacity"]["nvidia.com/gpu"] == "1" == obj["status"]["allocatable"]["nvidia.com/gpu"]


def test_the_gpu_annotation_sets_the_count_and_replicas_the_number_of_nodes():
    ms = {"metadata": dict(GPU_MACHINESET["metadata"], annotations={"machine.openshift.io/GPU": "4"}),
          "spec": dict(GPU_MACHINESET["spec"], replicas=3)}
    nodes = cluster.machineset_nodes(ms)
    assert [n["name"] for n in nodes] == ["ci-x1-a10g-0", "ci-x1-a10g-1", "ci-x1-a10g-2"]
    assert all(n["capacity"] == {"nvidia.com/gpu": "4"} for n in nodes)


def test_worker_machineset_nodes_have_no_gpu_and_no_taint():
    worker = {"metadata": {"name": "ci-x1-worker-a"},
              "spec": {"replicas": 2, "template": {"spec": {"metadata": {"labels": {"node-role.kubernetes.io/worker": ""}}}}}}
    nodes = cluster.machineset_nodes(worker)
    assert len(nodes) == 2 and all(n["taints"] == [] and n["capacity"] == {} for n in nodes)
    assert "nvidia.com/gpu" not in cluster.node_object(**nodes[0])["status"]["capacity"]
