"""Table tests of the SCC grant builder."""
import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import scc
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError


def test_one_rolebinding_per_grant_to_the_scc_use_clusterrole():
    objs = scc.rolebindings([
        {"namespace": "kubeflow", "serviceaccount": "mysql", "scc": "anyuid", "reason": "UID 999"},
        {"namespace": "kubeflow", "serviceaccount": "mysql", "scc": "anyuid"},  # duplicate
        {"namespace": "team-a", "serviceaccount": "default-editor", "scc": "nonroot"},
    ])
    assert [o["metadata"]["name"] for o in objs] == ["kfocp-scc-anyuid-mysql", "kfocp-scc-nonroot-default-editor"]
    first = objs[0]
    assert first["kind"] == "RoleBinding" and first["metadata"]["namespace"] == "kubeflow"
    assert first["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                "name": "system:openshift:scc:anyuid"}
    assert first["subjects"] == [{"kind": "ServiceAccount", "name": "mysql", "namespace": "kubeflow"}]
    assert first["metadata"]["annotations"] == {scc.REASON: "UID 999"}
    assert "annotations" not in objs[1]["metadata"]


@pytest.mark.parametrize("grant, message", [
    ({"namespace": "Kubeflow", "serviceaccount": "a", "scc": "anyuid"}, r"scc_grants\[0\].namespace: 'Kubeflow' is not a DNS label"),
    ({"namespace": "kubeflow", "serviceaccount": "a_b", "scc": "anyuid"}, r"scc_grants\[0\].serviceaccount"),
    ({"namespace": "kubeflow", "serviceaccount": "a", "scc": "root"}, r"scc_grants\[0\].scc: 'root' is not an allowed SCC"),
    ({"namespace": "kubeflow", "scc": "anyuid"}, r"scc_grants\[0\].serviceaccount: is required"),
    ("anyuid", r"scc_grants\[0\]: must be a mapping"),
])
def test_bad_grants_name_the_field(grant, message):
    with pytest.raises(DefinitionError, match=message):
        scc.rolebindings([grant])


def test_allowed_list_is_configurable():
    with pytest.raises(DefinitionError, match="Use one of anyuid"):
        scc.rolebindings([{"namespace": "a", "serviceaccount": "b", "scc": "privileged"}], allowed=["anyuid"])


def test_audit_table():
    rows = scc.audit_table([{"namespace": "a", "serviceaccount": "b", "scc": "custom", "reason": "r"}])
    assert rows == [{"serviceaccount": "b", "namespace": "a", "scc": "custom", "reason": "r"}]
