"""The support matrix (module_utils/versions.py) and what the builders choose from it: channels per
OpenShift version, the Service Mesh 3 Istio version, the NodeFeatureDiscovery fields, the
OperatorGroups left to others. Its values are upstream's (docs/contracts.md names each source)."""
import re

import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils import versions
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import gpu, mesh, olm
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError

from helpers import ROOT

GPU_OPERATOR = {"namespace": "nvidia-gpu-operator", "package": "gpu-operator-certified", "source": "certified-operators"}


@pytest.mark.parametrize("version", versions.SUPPORTED)
def test_every_default_channel_is_published_for_its_version(version):
    for package, channel in versions.DEFAULT_CHANNELS[version].items():
        assert versions.published(package, channel, version), (package, channel, version)


@pytest.mark.parametrize("version", ["4.18", "4.19", "4.20"])
def test_the_gpu_operator_channel_is_one_published_for_the_version(version):
    # defect 6: v24.9's bundles name OpenShift 4.12 to 4.17 only; on 4.18 its Subscription never resolves
    [sub] = [o for o in olm.objects([GPU_OPERATOR], "gpu_operators", None, version) if o["kind"] == "Subscription"]
    assert versions.published("gpu-operator-certified", sub["spec"]["channel"], version)
    with pytest.raises(DefinitionError, match=r"gpu_operators\[0\].channel: channel 'v24.9' of gpu-operator-certified "
                                              r"is not published for OpenShift %s. Use one of .*v25.10" % version):
        olm.objects([dict(GPU_OPERATOR, channel="v24.9")], "gpu_operators", None, version)


def test_a_channel_published_for_the_version_is_kept():
    [sub] = [o for o in olm.objects([dict(GPU_OPERATOR, channel="v24.9")], "gpu_operators", None, "4.16")
             if o["kind"] == "Subscription"]
    assert sub["spec"]["channel"] == "v24.9"


@pytest.mark.parametrize("version, present", [("4.14", False), ("4.18", False), ("4.19", True), ("4.20", True)])
def test_nfd_worker_tolerations_only_where_the_api_has_them(version, present):
    # defect 5: spec.operand.workerTolerations exists in the NodeFeatureDiscovery API from 4.19 only
    [nfd] = gpu.operands({"openshift": version, "cluster_policy": {"enabled": False}})
    assert ("workerTolerations" in nfd["spec"]["operand"]) is present


def test_nfd_fields_follow_the_installed_nfd_operator():
    [nfd] = gpu.operands({"openshift": "4.19", "installed": {"nfd": "4.18.0-202507211933"},
                          "cluster_policy": {"enabled": False}})
    assert "workerTolerations" not in nfd["spec"]["operand"]
    with pytest.raises(DefinitionError, match=r"gpu_nfd_spec.operand.workerTolerations: does not exist"):
        gpu.operands({"openshift": "4.18", "nfd": {"spec": {"operand": {"workerTolerations": []}}},
                      "cluster_policy": {"enabled": False}})


def _ossm3(settings):
    objs = mesh.objects(dict({"flavour": "ossm3", "openshift": "4.20"}, **settings))
    return dict((o["kind"], o) for o in objs)


def test_service_mesh_3_pins_a_channel_whose_operator_installs_the_default_version():
    # defect 7: the Subscription followed `stable`, and v1.26.3 is end-of-life on Service Mesh 3.4
    objs = _ossm3({})
    channel = objs["Subscription"]["spec"]["channel"]
    assert re.match(r"^stable-3\.[0-9]+$", channel)
    sail = versions.sail_minor(channel)
    assert objs["Istio"]["spec"]["version"] in versions.SAIL[sail]["istio"]
    # and every later Sail operator still installs it
    for later in [m for m in versions.SAIL if versions._key(m) >= versions._key(sail)]:
        assert objs["Istio"]["spec"]["version"] in versions.SAIL[later]["istio"], later


@pytest.mark.parametrize("ossm3, installed, message", [
    ({"version": "v1.26.3", "subscription": {"channel": "stable"}}, None,
     r"v1.26.3 is end-of-life on Service Mesh 3.4 \(channel stable\), which refuses to install it. Use one of v1.30.3"),
    ({"version": "v1.26.3", "subscription": {"channel": "stable-3.4"}}, None,
     r"v1.26.3 is end-of-life on Service Mesh 3.4 \(channel stable-3.4\)"),
    ({"version": "v1.26.3"}, "3.0.14", r"v1.26.3 is not an Istio version Service Mesh 3.0 \(installed 3.0.14\) installs"),
    ({"version": "v1.30.3"}, None, r"v1.30.3 is not an Istio version Service Mesh 3.2 \(channel stable-3.2\) installs"),
])
def test_service_mesh_3_refuses_a_version_its_operator_does_not_install(ossm3, installed, message):
    settings = {"ossm3": ossm3}
    if installed:
        settings["installed"] = {"servicemeshoperator3": installed}
    with pytest.raises(DefinitionError, match=r"service_mesh_ossm3.version: " + message):
        _ossm3(settings)


def test_service_mesh_3_channel_is_checked():
    with pytest.raises(DefinitionError, match=r"service_mesh_ossm3.subscription.channel: channel 'stable-2.6' of "
                                              r"servicemeshoperator3 is not published for OpenShift 4.20"):
        _ossm3({"ossm3": {"subscription": {"channel": "stable-2.6"}}})


def _group(name, namespace, ours=False):
    labels = {"app.kubernetes.io/managed-by": "kfocp"} if ours else {"olm.providedAPIs": "x"}
    return {"metadata": {"name": name, "namespace": namespace, "labels": labels}}


def test_no_operator_group_where_someone_else_made_one():
    # defect 11: OLM fails the CSV of a namespace with two OperatorGroups (TooManyOperatorGroups)
    ops = [dict(GPU_OPERATOR, channel="v25.10"),
           {"namespace": "openshift-nfd", "package": "nfd", "channel": "stable", "source": "redhat-operators"}]
    live = [_group("nvidia-gpu-operator-x7k2p", "nvidia-gpu-operator"), _group("openshift-nfd", "openshift-nfd", True)]
    objs = olm.objects(ops, "gpu_operators", live, "4.18")
    assert [(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs if o["kind"] == "OperatorGroup"] == [
        ("openshift-nfd", "openshift-nfd")]
    said = olm.operator_groups(ops, "gpu_operators", live, "4.18")
    assert [(s["namespace"], s["group"], s["action"]) for s in said] == [
        ("nvidia-gpu-operator", "nvidia-gpu-operator-x7k2p", "leave"), ("openshift-nfd", "openshift-nfd", "create")]
    assert said[0]["message"].startswith("OperatorGroup nvidia-gpu-operator/nvidia-gpu-operator-x7k2p was made by "
                                         "someone else: left as it is")


@pytest.mark.parametrize("found, given, message", [
    ("4.21.2", "", r"ClusterVersion version: OpenShift 4.21.2 is not supported. kfocp supports OpenShift 4.14, .*, 4.20"),
    (None, "", r"kfocp_openshift_version: is required: the cluster has no ClusterVersion"),
    ("4.18.3", "4.16", r"kfocp_openshift_version: is 4.16, but the cluster runs OpenShift 4.18.3 \(ClusterVersion "
                       r"version\). Set it to 4.18"),
    (None, "4.12", r"kfocp_openshift_version: OpenShift 4.12 is not supported"),
    (None, "four", r"kfocp_openshift_version: 'four' is not an OpenShift version"),
])
def test_an_unsupported_or_unknown_version_is_refused(found, given, message):
    with pytest.raises(DefinitionError, match=message):
        versions.choose({"clusterversion": found, "given": given})


def test_a_cluster_without_the_clusterversion_api_is_not_openshift():
    with pytest.raises(DefinitionError, match=r"cluster: serves no config.openshift.io/v1 ClusterVersion, so it is "
                                              r"not OpenShift"):
        versions.choose({"clusterversion": None, "given": "4.20", "openshift_api": False})
    # the API without the object (the local control plane), or not read (a pre-flight alone)
    for api in (True, None):
        assert versions.choose({"clusterversion": None, "given": "4.20", "openshift_api": api})["openshift"] == "4.20"


def test_the_version_comes_from_the_cluster_and_the_operators_from_their_csvs():
    csvs = [{"metadata": {"name": "nfd.v4.18.0", "labels": {"operators.coreos.com/nfd.openshift-nfd": ""}},
             "spec": {"version": "4.18.0-202507211933"}},
            {"metadata": {"name": "copy", "labels": {"operators.coreos.com/x.y": "", "olm.copiedFrom": "y"}},
             "spec": {"version": "1.0.0"}}]
    assert versions.choose({"clusterversion": "4.18.3", "given": "4.18", "csvs": csvs}) == {
        "openshift": "4.18", "operators": {"nfd": "4.18.0-202507211933"}}


def test_self_service_needs_a_version_that_serves_validating_admission_policy_v1():
    with pytest.raises(DefinitionError, match=r"kfocp_profile_self_service_enabled: the profile_self_service role "
                                              r"needs OpenShift 4.17 or later .* the cluster runs OpenShift 4.16"):
        versions.choose({"clusterversion": "4.16.40", "roles": ["gpu", "profile_self_service"]})
    assert versions.choose({"clusterversion": "4.17.1", "roles": ["profile_self_service"]})["openshift"] == "4.17"


def test_the_readme_shows_the_matrix():
    assert versions.table() in (ROOT / "README.md").read_text()


def test_a_subscription_moved_to_another_channel_is_named_with_why():
    live = [{"metadata": {"name": "gpu-operator-certified", "namespace": "nvidia-gpu-operator"},
             "spec": {"channel": "v24.9"}},
            {"metadata": {"name": "serverless-operator", "namespace": "openshift-serverless"},
             "spec": {"channel": "stable-1.38"}}]
    moves = olm.channel_moves([dict(GPU_OPERATOR)], "gpu_operators", live, "4.18")
    assert moves == ["gpu_operators[0]: Subscription nvidia-gpu-operator/gpu-operator-certified moves from channel "
                     "v24.9 (not published for OpenShift 4.18) to v25.10"]
    assert olm.channel_moves([dict(GPU_OPERATOR, channel="v24.9")], "gpu_operators", live, "4.17") == []
    # a user's own move between two published channels: named, with no reason to give
    live[0]["spec"]["channel"] = "v25.10"
    assert olm.channel_moves([dict(GPU_OPERATOR, channel="v26.3")], "gpu_operators", live, "4.18") == [
        "gpu_operators[0]: Subscription nvidia-gpu-operator/gpu-operator-certified moves from channel v25.10 to v26.3"]
