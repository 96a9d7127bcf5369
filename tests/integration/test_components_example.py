"""The components role on an example-sized render (tests/fixtures/example_tree.py: 639 objects, 70
CRDs of which some exist already, 29 webhook configurations) with the project's own playbook:
one failure does not stop the rest, CRDs someone else made are left alone until taken over, a
second run changes nothing, prune removes it all. On a control plane of its own: the render makes
cluster-wide objects with fixed names."""
import sys

from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError
from helpers import ROOT, wait_for

sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
import example_tree  # noqa: E402

OWN_PLANE = True
CRD = ("apiextensions.k8s.io/v1", "CustomResourceDefinition")
FOREIGN = "someone-else"


def crd_by_name(name):
    return next(c for c in example_tree.crds(70) if c["metadata"]["name"] == name)


def labels(kube, api_version, kind, name, namespace=None):
    obj = kube.get(kube.resource(api_version, kind), name, namespace)
    return None if obj is None else (obj["metadata"].get("labels") or {})


def test_example_sized_render_installs_with_preinstalled_crds_and_prunes(playbook, kube, instance, tmp_path):
    example_tree.write(tmp_path / "tree")
    crds = kube.resource(*CRD)
    # CRDs someone else made: the cluster's (Profile is the local control plane's own), and one OLM's
    for name in example_tree.PREINSTALLED[1:]:
        kube.apply(crds, crd_by_name(name), "cluster-bootstrap")
    olm = crd_by_name(example_tree.OLM_OWNED)
    olm["metadata"]["labels"] = {"operators.coreos.com/servicemeshoperator.openshift-operators": ""}
    kube.apply(crds, olm, "catalog-operator")
    # an object the render has, which someone else made: its failure must not stop the rest
    kube.apply(kube.resource("v1", "Namespace"), {"apiVersion": "v1", "kind": "Namespace",
                                                  "metadata": {"name": "kubeflow-system"}}, FOREIGN)
    foreign = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app-01-config",
                                                                     "namespace": "kubeflow-system"}}
    kube.apply(kube.resource("v1", "ConfigMap"), foreign, FOREIGN)
    extra = {"kfocp_instance": instance, "components_source": "dir", "components_dir": str(tmp_path / "tree"),
             "components_catalog": {"kubeflow-example": ["example"]},
             "components_components": {"kubeflow-example": "managed"}, "components_no_log": False}
    try:
        first = playbook("components", extra)
        assert first.rc != 0
        result = first.task_results()[0]
        assert [f.split(":")[0] for f in result["failures"]] == ["ConfigMap kubeflow-system/app-01-config"]
        assert "already exists and was created by someone else" in result["failures"][0]
        assert "components_result.failures" in first.stdout
        # everything else the phase order allows was applied, webhook configurations (last) included
        assert labels(kube, "apps/v1", "Deployment", "ml-pipeline", "kubeflow")["kfocp.io/instance"] == instance
        assert labels(kube, "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration",
                      "example-webhook-01") is not None
        assert labels(kube, "serving.kserve.io/v1", "Widget1", "example", "kubeflow") is not None
        # CRDs someone else made are left as they are and reported
        for name in example_tree.PREINSTALLED:
            assert "kfocp.io/instance" not in labels(kube, *CRD, name)
            assert any(line.startswith("CustomResourceDefinition %s: exists and is not kfocp's" % name)
                       for line in result["left_alone"])
        assert "kfocp.io/instance" in labels(kube, *CRD, "widget5s.cert-manager.io")

        kube.delete(kube.resource("v1", "ConfigMap"), "app-01-config", "kubeflow-system")
        take = dict(extra, components_take_over=["CustomResourceDefinition/*"])
        second = playbook("components", take)
        assert second.rc == 0, second.stdout
        result = second.task_results()[0]
        assert sorted(result["adopted"]) == sorted("CustomResourceDefinition %s" % n for n in example_tree.PREINSTALLED)
        for name in example_tree.PREINSTALLED:
            assert labels(kube, *CRD, name)["kfocp.io/instance"] == instance
        # an operator's object is never taken over
        assert "kfocp.io/instance" not in labels(kube, *CRD, example_tree.OLM_OWNED)
        assert "CustomResourceDefinition %s: exists and OLM (label operators.coreos.com/servicemeshoperator." \
            "openshift-operators=) manages it: left alone" % example_tree.OLM_OWNED in result["left_alone"]
        assert labels(kube, "v1", "ConfigMap", "app-01-config", "kubeflow-system")["kfocp.io/instance"] == instance
        # the SCC grants are the least privileged ones, the field that forced them printed
        binding = kube.get(kube.resource("rbac.authorization.k8s.io/v1", "RoleBinding"),
                           "kfocp-components-scc-nonroot-v2-spark-operator-controller", "kubeflow")
        assert binding["roleRef"]["name"] == "system:openshift:scc:nonroot-v2"
        assert "spec.securityContext.fsGroup" in second.stdout

        third = playbook("components", take)
        assert third.rc == 0 and third.count("changed") == 0, third.stdout

        removed = playbook("components", dict(take, components_components={"kubeflow-example": "removed"}))
        assert removed.rc == 0, removed.stdout
        assert labels(kube, "apps/v1", "Deployment", "ml-pipeline", "kubeflow") is None
        assert labels(kube, "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration",
                      "example-webhook-01") is None
        # a CRD goes once the API server has deleted its custom resources
        wait_for(lambda: labels(kube, *CRD, "widget5s.cert-manager.io") is None, timeout=60, what="CRD deleted")
        assert labels(kube, *CRD, example_tree.PREINSTALLED[1]) is None or \
            kube.get(crds, example_tree.PREINSTALLED[1])["metadata"].get("deletionTimestamp")  # taken over: kfocp's
        assert labels(kube, *CRD, example_tree.OLM_OWNED) is not None  # OLM's, never kfocp's
        assert kube.get(kube.resource("v1", "Namespace"), "kubeflow") is not None  # platform namespaces stay
    finally:
        playbook("uninstall", {"kfocp_instance": instance})
        try:
            kube.delete(crds, example_tree.OLM_OWNED)
        except KubeError:
            pass


def test_remote_bases_fail_before_any_change_or_come_from_a_local_mirror(playbook, kube, instance, tmp_path):
    example_tree.write(tmp_path / "tree")
    out = tmp_path / "gitops"
    extra = {"kfocp_instance": instance, "components_source": "dir", "components_dir": str(tmp_path / "tree"),
             "components_catalog": {"remote": ["remote"]}, "components_components": {"remote": "managed"},
             "components_render_dir": str(out)}
    offline = playbook("components", extra)
    assert offline.rc != 0
    assert "remote base(s), which kustomize would fetch from the network: %s (in remote/kustomization.yaml, " \
        "component remote)" % example_tree.REMOTE_BASE in offline.stdout.replace("\n", " ").replace("    ", " ")
    assert not out.exists()
    mirrored = playbook("components", dict(extra, components_remote_bases={
        "https://github.com/kubeflow/pipelines": str(tmp_path / "tree" / "mirror" / "pipelines")}))
    assert mirrored.rc == 0, mirrored.stdout
    assert (out / "configmap_core_kubeflow_pipeline-install-config.yaml").exists()


def test_a_missing_cert_manager_says_how_to_get_it(kube, instance):
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.engine import Engine
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError
    certificate = {"apiVersion": "cert-manager.io/v1", "kind": "Certificate",
                   "metadata": {"name": "webhook-cert", "namespace": "kubeflow"}, "spec": {"secretName": "x"}}
    try:
        Engine(kube, instance=instance, set_name="components").apply([certificate])
    except DefinitionError as err:
        assert "no kind Certificate in cert-manager.io/v1" in str(err)
        assert "cert-manager Operator for Red Hat OpenShift" in str(err)
    else:
        raise AssertionError("a Certificate without cert-manager was accepted")
