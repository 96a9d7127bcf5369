"""The bundle generator's pure parts: the replaces chain and the permissions it copies."""
import sys

import pytest
import yaml

from helpers import ROOT

sys.path.insert(0, str(ROOT / "operator" / "hack"))

import gen_bundle  # noqa: E402


@pytest.mark.parametrize("releases, current, previous", [
    ([], "0.1.0", None),
    (["0.1.0"], "0.1.0", None),
    (["0.1.0", "0.2.0"], "0.2.0", "0.1.0"),
    (["0.1.0", "0.2.0", "0.10.0"], "0.10.0", "0.2.0"),
    (["0.1.0", "0.2.0"], "0.3.0", "0.2.0"),
    (["0.1.0", "1.0.0"], "0.5.0", "0.1.0"),
])
def test_replaces_the_newest_earlier_release(tmp_path, releases, current, previous):
    changelog = tmp_path / "changelog.yaml"
    changelog.write_text("releases:\n" + "".join("  %s: {}\n" % r for r in releases) if releases else "releases: {}\n")
    assert gen_bundle.previous_release(current, changelog) == previous


def test_permissions_follow_the_bindings_to_service_accounts():
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
    role = {"kind": "ClusterRole", "metadata": {"name": "r"}, "rules": rules}
    binding = {"kind": "ClusterRoleBinding", "metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "r"},
               "subjects": [{"kind": "ServiceAccount", "name": "op", "namespace": "x"}, {"kind": "User", "name": "u"}]}
    assert gen_bundle.permissions([role, binding], "ClusterRole", "ClusterRoleBinding") == [
        {"serviceAccountName": "op", "rules": role["rules"]}]


def test_a_binding_to_an_unknown_role_is_an_error():
    binding = {"kind": "ClusterRoleBinding", "metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "r"},
               "subjects": [{"kind": "ServiceAccount", "name": "op"}]}
    with pytest.raises(gen_bundle.BundleError, match="ClusterRoleBinding b: binds ClusterRole r"):
        gen_bundle.permissions([binding], "ClusterRole", "ClusterRoleBinding")


def test_the_deployment_keeps_its_watch_of_every_namespace():
    """WATCH_NAMESPACE is not OLM's target namespaces: the operator sees a Kubeflow in any
    namespace, so that it can say in its status why it is not acted on."""
    dep = {"kind": "Deployment", "metadata": {"name": "op", "labels": {"a": "b"}}, "spec": {"template": {"spec": {
        "containers": [{"name": "m", "env": [{"name": "WATCH_NAMESPACE", "value": ""}, {"name": "X", "value": "1"}]}]}}}}
    (out,) = gen_bundle.deployments([dep])
    env = out["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "WATCH_NAMESPACE", "value": ""}, {"name": "X", "value": "1"}]


# operator-pipelines (redhat-openshift-ecosystem/operator-pipelines at 7d397d06,
# operator-pipeline-images/operatorcert/static_tests/community/bundle.py): its OpenShift to
# Kubernetes table and check_api_version_constraints, the community pipeline's check of a bundle's
# minKubeVersion against com.redhat.openshift.versions, as it is written there.
OCP_TO_K8S = {"4.1": "1.13", "4.2": "1.14", "4.3": "1.16", "4.4": "1.17", "4.5": "1.18", "4.6": "1.19",
              "4.7": "1.20", "4.8": "1.21", "4.9": "1.22", "4.10": "1.23", "4.11": "1.24", "4.12": "1.25",
              "4.13": "1.26", "4.14": "1.27", "4.15": "1.28", "4.16": "1.29", "4.17": "1.30"}


def _ver(text):
    parts = [int(p) for p in text.strip().lstrip("v").split(".")]
    return tuple((parts + [0, 0])[:3])


def _pipeline_version_check(annotations, csv):
    """The failures check_api_version_constraints yields for this bundle."""
    selector = annotations.get("com.redhat.openshift.versions")
    min_kube = csv["spec"].get("minKubeVersion")
    if not min_kube:
        return []
    if not selector:
        return ["minKubeVersion is set to %s but com.redhat.openshift.versions is not set" % min_kube]
    known = dict((_ver(o)[:2], _ver(k)) for o, k in OCP_TO_K8S.items())
    selector = selector.strip()
    if "-" in selector:
        low, high = (_ver(v)[:2] for v in selector.split("-", 1))
        versions = [v for v in known if low <= v <= high]
    elif selector.startswith("="):
        versions = [max(v for v in known if v <= _ver(selector[1:])[:2])]
    else:
        versions = [v for v in known if v >= _ver(selector)[:2]]
    conflicting = sorted(v for v in versions if known[v] < _ver(min_kube))
    return ["OCP version(s) %s conflict with minKubeVersion=%s" % (conflicting, min_kube)] if conflicting else []


def test_the_bundle_installs_on_every_supported_openshift_and_says_so():
    """minKubeVersion is the Kubernetes of the oldest supported OpenShift (OLM leaves a CSV whose
    minKubeVersion is above the server's Pending: requirements.go), com.redhat.openshift.versions
    names exactly the supported range, and the community pipeline's check passes."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.versions import SUPPORTED

    csv = yaml.safe_load((ROOT / "operator" / "bundle" / "manifests" / "kfocp-operator.clusterserviceversion.yaml")
                         .read_text())
    annotations = yaml.safe_load((ROOT / "operator" / "bundle" / "metadata" / "annotations.yaml").read_text())[
        "annotations"]
    assert _pipeline_version_check(annotations, csv) == []
    assert _ver(csv["spec"]["minKubeVersion"]) == _ver(OCP_TO_K8S[SUPPORTED[0]])
    assert annotations["com.redhat.openshift.versions"] == "v%s-v%s" % (SUPPORTED[0], SUPPORTED[-1])
    dockerfile = (ROOT / "operator" / "bundle" / "bundle.Dockerfile").read_text()
    assert "LABEL com.redhat.openshift.versions=v%s-v%s\n" % (SUPPORTED[0], SUPPORTED[-1]) in dockerfile


def test_the_pipeline_check_refuses_what_it_should():
    """The port of the pipeline's check above fails where the pipeline fails."""
    csv = {"spec": {"minKubeVersion": "1.29.0"}}
    assert _pipeline_version_check({}, csv) == [
        "minKubeVersion is set to 1.29.0 but com.redhat.openshift.versions is not set"]
    assert _pipeline_version_check({"com.redhat.openshift.versions": "v4.14-v4.20"}, csv) == [
        "OCP version(s) [(4, 14), (4, 15)] conflict with minKubeVersion=1.29.0"]
    assert _pipeline_version_check({"com.redhat.openshift.versions": "v4.16"}, csv) == []


@pytest.mark.parametrize("openshift, kubernetes", sorted(OCP_TO_K8S.items()))
def test_the_kubernetes_of_each_openshift_is_the_pipelines(openshift, kubernetes):
    if _ver(openshift) < (4, 3, 0):  # 4.1 and 4.2 predate the 4.N -> 1.(N+13) rule
        with pytest.raises(ValueError):
            assert gen_bundle.kubernetes_minor(openshift) == kubernetes
        return
    assert gen_bundle.kubernetes_minor(openshift) == kubernetes


def test_only_the_own_namespace_install_mode_is_offered():
    """OLM gives every project's admin and edit roles write rights on an owned CRD whatever the
    install mode (operatorgroup.go ensureClusterRolesForCSV); the operator acts only on the
    Kubeflow of its own namespace, so that is the one install mode the CSV offers."""
    csv = yaml.safe_load((ROOT / "operator" / "bundle" / "manifests" / "kfocp-operator.clusterserviceversion.yaml")
                         .read_text())
    modes = dict((m["type"], m["supported"]) for m in csv["spec"]["installModes"])
    assert modes == {"OwnNamespace": True, "SingleNamespace": False, "MultiNamespace": False, "AllNamespaces": False}
