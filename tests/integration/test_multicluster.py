"""inventories/example-multicluster: one ansible-playbook run converges two clusters, each with its
own kubeconfig. The second cluster is a second local control plane started by this module."""
import pytest

from helpers import ROOT, only_roles, play_installer_worker_machineset, play_olm_csv_succeeded, run_playbook

from cluster import ControlPlane
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client

# East is a control plane of this module's own: the run makes cluster-wide objects with fixed names
# (ClusterAutoscaler default, the GPU operators' namespaces and CSVs) that other tests meet.
OWN_PLANE = True
INVENTORY = ROOT / "inventories" / "example-multicluster" / "hosts.yml"


@pytest.fixture(scope="module")
def second_plane(tmp_path_factory):
    plane = ControlPlane(tmp_path_factory.mktemp("cluster-west"))
    plane.up()
    yield plane
    plane.destroy()


def prepare(kube):
    play_installer_worker_machineset(kube)
    for namespace, package in (("openshift-nfd", "nfd"), ("nvidia-gpu-operator", "gpu-operator-certified")):
        wanted = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        kube.apply(kube.resource("v1", "Namespace"), wanted, "cluster-admin-test", force=True)
        play_olm_csv_succeeded(kube, namespace, package)


def test_one_run_converges_both_clusters(control_plane, second_plane, kube, tmp_path):
    west = Client.from_params({"kubeconfig": str(second_plane.kubeconfig)})
    prepare(kube)
    prepare(west)
    env = {"KFOCP_EAST_KUBECONFIG": str(control_plane.kubeconfig), "KFOCP_WEST_KUBECONFIG": str(second_plane.kubeconfig)}
    extra = dict(only_roles("gpu", "autoscaler"), kfocp_gpu_enabled=True, kfocp_autoscaler_enabled=True, scc_grants=[],
                 gpu_csv_timeout=30, gpu_csv_poll_interval=1)

    def run(name, extravars):
        return run_playbook(control_plane, name, extravars, tmp_path, inventory=INVENTORY, env=env)

    first = run("site", extra)
    assert first.rc == 0, first.stdout[-4000:]
    ms = ("machine.openshift.io/v1beta1", "MachineSet")
    ca = ("autoscaling.openshift.io/v1", "ClusterAutoscaler")
    east_ms = kube.get(kube.resource(*ms), "east-gpu-a10g", "openshift-machine-api")
    west_ms = west.get(west.resource(*ms), "west-gpu-l4", "openshift-machine-api")
    assert east_ms["spec"]["template"]["spec"]["providerSpec"]["value"]["instanceType"] == "g5.2xlarge"
    assert west_ms["spec"]["template"]["spec"]["providerSpec"]["value"]["instanceType"] == "g6.2xlarge"
    # each cluster holds only its own host's objects, under its own instance name
    assert kube.get(kube.resource(*ms), "west-gpu-l4", "openshift-machine-api") is None
    assert west.get(west.resource(*ms), "east-gpu-a10g", "openshift-machine-api") is None
    assert kube.get(kube.resource(*ca), "default")["metadata"]["labels"]["kfocp.io/instance"] == "east"
    assert west.get(west.resource(*ca), "default")["metadata"]["labels"]["kfocp.io/instance"] == "west"
    ma = ("autoscaling.openshift.io/v1beta1", "MachineAutoscaler")
    assert west.get(west.resource(*ma), "west-gpu-l4", "openshift-machine-api")["spec"]["maxReplicas"] == 2

    second = run("site", extra)
    assert second.rc == 0, second.stdout[-4000:]
    assert second.count("changed", "east") == 0 and second.count("changed", "west") == 0, second.stdout[-4000:]
    assert second.count("ok", "east") > 0 and second.count("ok", "west") > 0

    gone = run("uninstall", {})
    assert gone.rc == 0, gone.stdout[-4000:]
    assert kube.get(kube.resource(*ca), "default") is None and west.get(west.resource(*ca), "default") is None
