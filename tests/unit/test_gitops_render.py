"""The GitOps render's pure parts: what the writer puts in each file, and the fleet's ApplicationSet.
Whether Argo CD takes them as meant is tested against a real Argo CD (tests/integration/test_fleet.py)."""
import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils import kustomize
from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import gitops
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError

CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.b.c"}}
NS = {"apiVersion": "v1", "kind": "Namespace",
      "metadata": {"name": "kubeflow", "annotations": {o.OWNERSHIP: o.ENSURE, o.SET_OVERRIDE: o.NAMESPACES_SET}}}
CM = {"apiVersion": "v1", "kind": "ConfigMap",
      "metadata": {"name": "c", "namespace": "kubeflow", "labels": {"app": "x"}}}
HOOK = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "h"}}


def test_each_object_is_written_in_the_sync_wave_of_its_apply_phase_without_kfocps_markers(tmp_path):
    written, removed = kustomize.write(str(tmp_path), [HOOK, CM, NS, CRD], instance="east-gitops", set_name="scc")
    assert removed == [] and "kustomization.yaml" in written
    docs = dict((d["kind"], d) for d in (yaml.safe_load((tmp_path / n).read_text()) for n in written
                                         if n != "kustomization.yaml"))
    waves = dict((k, d["metadata"]["annotations"][kustomize.SYNC_WAVE]) for k, d in docs.items())
    assert waves == {"CustomResourceDefinition": "-2", "Namespace": "-1", "ConfigMap": "0",
                     "ValidatingWebhookConfiguration": "1"}
    assert all(not k.startswith("kfocp.io/") for d in docs.values() for k in d["metadata"]["annotations"])
    labels = docs["ConfigMap"]["metadata"]["labels"]
    assert labels == {"app": "x", o.MANAGED_BY: "kfocp", o.PART_OF: "kfocp", o.INSTANCE: "east-gitops", o.SET: "scc"}
    # the caller's objects are as they were
    assert o.OWNERSHIP in NS["metadata"]["annotations"] and "annotations" not in CM["metadata"]


def test_without_an_instance_nothing_is_labelled_and_a_second_write_changes_nothing(tmp_path):
    kustomize.write(str(tmp_path), [CM])
    again, removed = kustomize.write(str(tmp_path), [CM])
    assert again == [] and removed == []
    doc = yaml.safe_load((tmp_path / kustomize.file_name(CM)).read_text())
    assert doc["metadata"]["labels"] == {"app": "x"}


def test_an_object_kfocp_only_patches_cannot_be_written_for_gitops(tmp_path):
    shared = {"apiVersion": "v1", "kind": "Namespace",
              "metadata": {"name": "team-a", "annotations": {o.OWNERSHIP: o.SHARED}}}
    with pytest.raises(kustomize.SourceError, match="only patches"):
        kustomize.write(str(tmp_path), [shared])
    assert not list(tmp_path.iterdir())


def test_the_applicationset_has_one_element_per_cluster_with_its_server():
    appset = gitops.applicationset(["east", "west"], {"east": {"kfocp_gitops_server": "https://east:6443"}, "west": {}},
                                   "https://git.example.com/fleet.git", "main")
    assert appset["spec"]["generators"] == [{"list": {"elements": [
        {"cluster": "east", "server": "https://east:6443"},
        {"cluster": "west", "server": gitops.IN_CLUSTER}]}}]
    spec = appset["spec"]["template"]["spec"]
    assert spec["source"] == {"repoURL": "https://git.example.com/fleet.git", "targetRevision": "main",
                              "path": "{{.cluster}}", "directory": {"recurse": True, "exclude": "*kustomization.yaml"}}
    assert "ServerSideApply=true" in spec["syncPolicy"]["syncOptions"]


@pytest.mark.parametrize("hosts,url,field", [
    (["East_1"], "https://g/x.git", "inventory host"),
    ([], "https://g/x.git", "hosts"),
    (["east"], "", "kfocp_gitops_repo_url"),
])
def test_bad_render_input_names_the_field(hosts, url, field):
    with pytest.raises(DefinitionError, match=field):
        gitops.applicationset(hosts, {}, url)
