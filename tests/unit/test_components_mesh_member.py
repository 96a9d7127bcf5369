"""The components' namespace, whose pods get sidecars, is a member of the mesh in each flavour."""
import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import manifests as m
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError

DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "kubeflow"},
              "spec": {"template": {"spec": {"containers": [{"name": "web", "image": "web"}]}}}}
SETTINGS = {
    "ossm2": {"flavour": "ossm2"},
    "ossm3": {"flavour": "ossm3", "ossm3": {"update_strategy": "RevisionBased", "version": "v1.26.3"}},
    "external": {"flavour": "external", "external": {"namespace": "istio-system", "gateway": "istio-ingressgateway",
                                                     "member_label": {"mesh": "corp"}}},
}


def assemble(flavour, namespace="kubeflow"):
    membership = mesh.mesh_membership(namespace, SETTINGS[flavour])
    return m.assemble({"web": [DEPLOYMENT]}, {"namespace": namespace, "sidecar": {}, "mesh_membership": membership})[
        "objects"]


@pytest.mark.parametrize("flavour, labels, member", [
    ("ossm2", {"kfocp.io/mesh": "kubeflow", "istio-injection": "enabled"}, True),
    ("ossm3", {"kfocp.io/mesh": "kubeflow", "istio.io/rev": "default-v1-26-3"}, False),
    ("external", {"mesh": "corp", "istio-injection": "enabled"}, False),
])
def test_components_namespace_joins_the_mesh_of_each_flavour(flavour, labels, member):
    objs = assemble(flavour)
    space = [o for o in objs if o["kind"] == "Namespace" and o["metadata"]["name"] == "kubeflow"][0]
    found = space["metadata"]["labels"]
    assert dict((k, found.get(k)) for k in labels) == labels
    if "istio.io/rev" in labels:
        assert "istio-injection" not in found, "istio-injection would win over the revision"
    members = [o for o in objs if o["kind"] == "ServiceMeshMember"]
    if member:
        assert [(o["metadata"]["namespace"], o["spec"]["controlPlaneRef"]) for o in members] == [
            ("kubeflow", {"name": "kubeflow", "namespace": "kubeflow-mesh"})]
    else:
        assert not members


def test_a_membership_for_another_namespace_is_refused():
    with pytest.raises(DefinitionError, match="mesh_membership.objects: .* is for namespace 'other'"):
        m.assemble({"web": [DEPLOYMENT]}, {"namespace": "kubeflow", "sidecar": {},
                                           "mesh_membership": mesh.mesh_membership("other", SETTINGS["ossm2"])})


def test_sidecar_and_profile_namespaces_follow_a_named_revision_of_the_mesh():
    labels_file = {"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "namespace-labels-data", "namespace": "kubeflow"},
                   "data": {m.PROFILE_LABELS_FILE: "istio-injection: enabled\n"}}
    membership = mesh.mesh_membership("kubeflow", SETTINGS["ossm3"])
    extra = dict(DEPLOYMENT, metadata={"name": "web", "namespace": "kubeflow-extra"})
    objs = m.assemble({"web": [DEPLOYMENT, extra], "profiles": [labels_file]},
                      {"namespace": "kubeflow", "sidecar": {"namespaces": ["kubeflow", "kubeflow-extra"]},
                       "mesh_membership": membership})["objects"]
    spaces = dict((o["metadata"]["name"], o["metadata"].get("labels") or {}) for o in objs if o["kind"] == "Namespace")
    for name in ("kubeflow", "kubeflow-extra"):
        assert spaces[name].get("istio.io/rev") == "default-v1-26-3" and "istio-injection" not in spaces[name], name
    written = [o for o in objs if o["kind"] == "ConfigMap"][0]["data"][m.PROFILE_LABELS_FILE]
    assert yaml.safe_load(written) == {"istio-injection": "", "istio.io/rev": "default-v1-26-3"}
    with pytest.raises(DefinitionError, match=r"components_sidecar_revision: is 'canary', but the mesh's revision "
                                              r"is 'default-v1-26-3'"):
        m.assemble({"web": [DEPLOYMENT]}, {"namespace": "kubeflow", "sidecar": {"revision": "canary"},
                                           "mesh_membership": membership})
