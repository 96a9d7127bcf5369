"""The client's discovery reads the same kinds from both forms the API server serves: aggregated
discovery (one document for /api and one for /apis) and, for servers without it, one document per
group version."""
from ansible_collections.kfocp.kubeflow.plugins.module_utils import client as client_module
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client


def test_discovery_without_aggregated_discovery_finds_the_same_kinds(control_plane, monkeypatch):
    aggregated = Client.from_params({"kubeconfig": str(control_plane.kubeconfig)}).resources()
    # a plain JSON Accept header: the API server answers with APIVersions and APIGroupList
    monkeypatch.setattr(client_module, "DISCOVERY_ACCEPT", "application/json")
    legacy = Client.from_params({"kubeconfig": str(control_plane.kubeconfig)}).resources()
    assert ("v1", "Pod") in legacy and ("apps/v1", "Deployment") in legacy
    assert ("v1", "Pod") in aggregated
    assert set(legacy) == set(aggregated)
    for key, res in aggregated.items():
        assert (res.plural, res.namespaced, sorted(res.verbs)) == \
            (legacy[key].plural, legacy[key].namespaced, sorted(legacy[key].verbs)), key
