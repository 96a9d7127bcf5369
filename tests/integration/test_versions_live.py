"""Supported versions through site.yml against the real API server: the pre-flight reads the
cluster's OpenShift version from its ClusterVersion (openshift/api's CRD, from the Go module proxy),
chooses the channels for it and refuses, before any change, what the matrix does not publish; the
gpu role's NodeFeatureDiscovery is accepted by the NFD API of an older OpenShift (strict field
validation by the API server is the oracle)."""
import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError
from helpers import (PlayOperators, nfd_crd_before_419, only_roles,
                     play_cluster_version, play_installer_worker_machineset, wait_for)

# A ClusterVersion makes every site run of the plane see that OpenShift version: a plane of its own.
OWN_PLANE = True
SUBSCRIPTIONS = ("operators.coreos.com/v1alpha1", "Subscription")
NFD = ("nfd.openshift.io/v1", "NodeFeatureDiscovery")
# The cluster's version is read from it: no version from the local inventory.
FROM_THE_CLUSTER = {"kfocp_openshift_version": ""}


@pytest.fixture(scope="module", autouse=True)
def cluster_version(control_plane, kube):
    play_cluster_version(kube, "4.18.5")


def gpu_vars(instance, **more):
    out = dict(only_roles("gpu"), kfocp_instance=instance, kfocp_gpu_enabled=True, scc_grants=[],
               gpu_csv_timeout=30, gpu_csv_poll_interval=1, gpu_machinesets=[], **FROM_THE_CLUSTER)
    out.update(more)
    return out


def test_a_channel_not_published_for_the_cluster_version_stops_the_run_before_any_change(playbook, kube, instance):
    old = [{"namespace": "nvidia-gpu-operator", "package": "gpu-operator-certified", "channel": "v24.9",
            "source": "certified-operators"}]
    result = playbook("site", gpu_vars(instance, gpu_operators=old))
    assert result.rc != 0
    text = " ".join(result.stdout.split())
    assert "Nothing was changed" in text, result.stdout[-3000:]
    assert "gpu_operators[0].channel: channel 'v24.9' of gpu-operator-certified is not published for OpenShift " \
        "4.18. Use one of stable, v25.3, v25.10, v26.3, v26.7" in text, result.stdout[-3000:]
    assert kube.get(kube.resource(*SUBSCRIPTIONS), "gpu-operator-certified", "nvidia-gpu-operator") is None


def test_an_inventory_version_that_is_not_the_cluster_one_stops_the_run(playbook):
    result = playbook("site", dict(only_roles(), kfocp_preflight_only=True, kfocp_openshift_version="4.20"))
    assert result.rc != 0
    assert "openshift version: kfocp_openshift_version: is 4.20, but the cluster runs OpenShift 4.18.5 " \
        "(ClusterVersion version). Set it to 4.18 or leave it out" in " ".join(result.stdout.split()), result.stdout[-3000:]


def test_an_end_of_life_istio_version_stops_the_run(playbook):
    result = playbook("site", dict(only_roles("service_mesh"), kfocp_preflight_only=True, service_mesh_flavour="ossm3",
                                   service_mesh_ossm3={"version": "v1.26.3", "subscription": {"channel": "stable"}},
                                   **FROM_THE_CLUSTER))
    assert result.rc != 0
    assert "service_mesh_ossm3.version: v1.26.3 is end-of-life on Service Mesh 3.4 (channel stable), which refuses " \
        "to install it" in " ".join(result.stdout.split()), result.stdout[-3000:]


def test_the_gpu_role_converges_on_the_nfd_api_of_openshift_4_18(playbook, kube, control_plane, instance):
    play_installer_worker_machineset(kube)
    put_back = nfd_crd_before_419(control_plane)
    try:
        # the oracle: this API server refuses the field, as the NFD operator of 4.18 has no such field
        probe = {"apiVersion": NFD[0], "kind": NFD[1], "metadata": {"name": "probe", "namespace": "default"},
                 "spec": {"operand": {"workerTolerations": [{"operator": "Exists"}]}}}

        def refused():
            try:
                kube.apply(kube.resource(*NFD), probe, "probe", dry_run=True)
            except KubeError as err:
                return str(err)
            return None
        assert ".spec.operand.workerTolerations: field not declared in schema" in wait_for(
            refused, what="the older NFD schema")

        # installed on OpenShift 4.17 with the v24.9 channel, published up to 4.17; then OpenShift is upgraded
        play_cluster_version(kube, "4.17.9")
        old = [{"namespace": "nvidia-gpu-operator", "package": "gpu-operator-certified", "channel": "v24.9",
                "source": "certified-operators"}]
        try:
            with PlayOperators(kube):
                result = playbook("site", gpu_vars(instance, gpu_operators=old))
            assert result.rc == 0, result.stdout[-3000:]
        finally:
            play_cluster_version(kube, "4.18.5")
        subs = kube.resource(*SUBSCRIPTIONS)
        assert kube.get(subs, "gpu-operator-certified", "nvidia-gpu-operator")["spec"]["channel"] == "v24.9"

        with PlayOperators(kube):
            result = playbook("site", gpu_vars(instance))
        assert result.rc == 0, result.stdout[-3000:]
        assert "OpenShift 4.18 (ClusterVersion version)" in result.stdout
        said = " ".join(result.stdout[result.stdout.find("gpu : Say which Subscriptions"):][:1500].split())
        assert "gpu_operators[1]: Subscription nvidia-gpu-operator/gpu-operator-certified moves from channel v24.9 " \
            "(not published for OpenShift 4.18) to v25.10" in said, said
        assert kube.get(subs, "gpu-operator-certified", "nvidia-gpu-operator")["spec"]["channel"] == "v25.10"
        nfd = kube.get(kube.resource(*NFD), "nfd-instance", "openshift-nfd")
        assert "workerTolerations" not in nfd["spec"].get("operand", {})
    finally:
        put_back()
        playbook("site", gpu_vars(instance, gpu_state="absent"))


def test_a_cluster_that_is_not_openshift_is_refused_before_any_change(tmp_path):
    """A plain Kubernetes API (a plane without OpenShift's APIs) with an inventory that names an
    OpenShift version: the pre-flight refuses it, and the scc role grants nothing."""
    from cluster import ControlPlane
    from helpers import run_playbook
    plain = ControlPlane(tmp_path / "plain").up(install=False)
    try:
        result = run_playbook(plain, "site", {"kfocp_openshift_version": "4.20"}, tmp_path)
        text = " ".join(result.stdout.split())
        assert result.rc != 0 and "Nothing was changed" in text, result.stdout[-3000:]
        assert "cluster: serves no config.openshift.io/v1 ClusterVersion, so it is not OpenShift" in text, \
            result.stdout[-3000:]
        bindings = plain.kubectl("get", "clusterrolebindings,rolebindings", "-A", "-l", "app.kubernetes.io/managed-by=kfocp",
                                 "-o", "name").stdout
        assert bindings.strip() == ""
    finally:
        plain.destroy()


def test_the_oldest_supported_version_gets_its_own_choices(playbook, kube, instance):
    """OpenShift 4.14, the oldest supported version: Serverless 1.37 (1.38 is published from 4.16 on),
    and the profile_self_service role refused before any change (ValidatingAdmissionPolicy v1 is
    served from 4.17 on)."""
    from helpers import ensure_namespace, play_olm_csv_succeeded
    play_cluster_version(kube, "4.14.38")
    extra = dict(only_roles("serverless"), kfocp_instance=instance, kfocp_serverless_enabled=True, scc_grants=[],
                 serverless_csv_timeout=5, serverless_csv_poll_interval=1, **FROM_THE_CLUSTER)
    try:
        refused = playbook("site", dict(only_roles("profile_self_service"), kfocp_preflight_only=True,
                                        kfocp_profile_self_service_enabled=True, **FROM_THE_CLUSTER))
        text = " ".join(refused.stdout.split())
        assert refused.rc != 0 and "Nothing was changed" in text, refused.stdout[-3000:]
        assert "the profile_self_service role needs OpenShift 4.17 or later (ValidatingAdmissionPolicy " \
            "admissionregistration.k8s.io/v1); the cluster runs OpenShift 4.14" in text, refused.stdout[-3000:]

        ensure_namespace(kube, "openshift-serverless")
        play_olm_csv_succeeded(kube, "openshift-serverless", "serverless-operator")
        result = playbook("site", extra)
        assert result.rc == 0, result.stdout[-3000:]
        assert "OpenShift 4.14 (ClusterVersion version)" in result.stdout
        sub = kube.get(kube.resource(*SUBSCRIPTIONS), "serverless-operator", "openshift-serverless")
        assert sub["spec"]["channel"] == "stable-1.37"
    finally:
        playbook("site", dict(extra, serverless_state="absent"))
        play_cluster_version(kube, "4.18.5")
