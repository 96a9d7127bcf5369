"""Table tests of the serverless builder: system namespaces (owned or shared patch), mesh objects, KnativeServing."""
from pathlib import Path

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies, serverless
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError

ROOT = Path(__file__).resolve().parents[2]
LABEL = serverless.SYSTEM_LABEL
MINE = {"metadata": {"name": "knative-serving", "labels": {"app.kubernetes.io/managed-by": "kfocp",
                                                           "kfocp.io/instance": "prod"}}}
OTHER_INSTANCE = {"metadata": {"name": "knative-serving", "labels": {"app.kubernetes.io/managed-by": "kfocp",
                                                                     "kfocp.io/instance": "dev"}}}
FOREIGN = {"metadata": {"name": "knative-serving", "labels": {"owner": "platform-team"}}}


@pytest.mark.parametrize("live, mode", [
    (None, "ensure"), ([], "ensure"), ([MINE], "ensure"), (MINE, "ensure"),
    ([FOREIGN], "shared"), ([OTHER_INSTANCE], "shared"),
])
def test_system_namespace_is_created_or_patched_with_the_label(live, mode):
    objs = serverless.objects({"serving_namespace": "knative-serving", "ingress_namespace": "knative-serving-ingress",
                               "live_namespaces": {"knative-serving": live}, "instance": "prod"})
    ns = [o for o in objs if o["kind"] == "Namespace" and o["metadata"]["name"] == "knative-serving"]
    assert len(ns) == 1
    assert ns[0]["metadata"]["labels"] == {LABEL: "true"}
    assert ns[0]["metadata"]["annotations"]["kfocp.io/ownership"] == mode
    if mode == "shared":
        assert "kfocp.io/set" not in ns[0]["metadata"]["annotations"]  # stays in the role's set: released on absent


def test_mesh_objects():
    objs = serverless.mesh_objects({"enabled": True, "namespace": "kubeflow-mesh", "control_plane": "kubeflow",
                                    "member_namespaces": ["team-a"], "allow_from": [{"x": ""}]},
                                   ["knative-serving", "knative-serving-ingress"])
    assert [(o["kind"], o["metadata"]["namespace"]) for o in objs] == [
        ("ServiceMeshMember", "knative-serving"), ("ServiceMeshMember", "knative-serving-ingress"),
        ("NetworkPolicy", "knative-serving"), ("NetworkPolicy", "knative-serving-ingress"), ("NetworkPolicy", "team-a")]
    assert objs[0]["spec"] == {"controlPlaneRef": {"name": "kubeflow", "namespace": "kubeflow-mesh"}}
    peers = objs[2]["spec"]["ingress"][0]["from"]
    assert peers == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kubeflow-mesh"}}},
                     {"namespaceSelector": {"matchLabels": {LABEL: "true"}}},
                     {"namespaceSelector": {"matchLabels": {"x": ""}}}]
    assert objs[4]["spec"]["ingress"] == [{"from": [{"namespaceSelector": {"matchLabels": {LABEL: "true"}}}]}]
    assert serverless.mesh_objects({"enabled": False}, ["a"]) == []
    assert [o["kind"] for o in serverless.mesh_objects({"enabled": True, "namespace": "m", "control_plane": "c",
                                                        "members": False}, ["a"])] == ["NetworkPolicy"]
    with pytest.raises(DefinitionError, match="serverless_mesh.namespace"):
        serverless.mesh_objects({"enabled": True, "control_plane": "c"}, ["a"])


def test_knative_serving_always_has_kourier():
    [ks] = serverless.knative_serving({"serving_namespace": "knative-serving",
                                       "spec": {"ingress": {"kourier": {"enabled": False}}, "high-availability": {"replicas": 2}}})
    assert ks["metadata"] == {"name": "knative-serving", "namespace": "knative-serving"}
    assert ks["spec"]["ingress"]["kourier"]["enabled"] is True
    assert ks["spec"]["config"]["network"]["ingress-class"] == "kourier.ingress.networking.knative.dev"
    assert ks["spec"]["high-availability"] == {"replicas": 2}


def test_same_namespace_twice_is_refused():
    with pytest.raises(DefinitionError, match="serverless_ingress_namespace: is the same"):
        serverless.objects({"serving_namespace": "a", "ingress_namespace": "a"})


def test_activator_autoscaler_and_kourier_get_sidecars_in_the_mesh():
    given = {"deployments": [{"name": "activator", "labels": {"team": "x"}, "resources": [{"container": "activator"}]}]}
    [ks] = serverless.knative_serving({"serving_namespace": "knative-serving", "spec": given,
                                       "mesh": {"enabled": True}})
    deployments = dict((d["name"], d) for d in ks["spec"]["deployments"])
    assert set(deployments) == {"activator", "autoscaler", "3scale-kourier-gateway"}
    for entry in deployments.values():
        assert entry["labels"]["sidecar.istio.io/inject"] == "true"
        assert entry["annotations"]["sidecar.istio.io/rewriteAppHTTPProbers"] == "true"
    # the user's settings for them stay
    assert deployments["activator"]["labels"]["team"] == "x" and deployments["activator"]["resources"]
    assert given["deployments"][0]["labels"] == {"team": "x"}, "the input is not modified"


def test_no_sidecars_without_the_mesh():
    [ks] = serverless.knative_serving({"serving_namespace": "knative-serving", "spec": {}, "mesh": {"enabled": False}})
    assert "deployments" not in ks["spec"]


def test_the_namespace_policies_default_principals_are_knatives_data_path_in_the_serverless_namespaces():
    # the two roles' defaults agree: namespace_policies admits the activator and Kourier gateway of
    # the namespaces the serverless role installs Knative Serving in
    defaults = dict((role, yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text()))
                    for role in ("serverless", "namespace_policies"))
    expected = serverless.data_path_principals(defaults["serverless"]["serverless_serving_namespace"],
                                               defaults["serverless"]["serverless_ingress_namespace"])
    assert defaults["namespace_policies"]["namespace_policies_serverless_principals"] == expected
    assert namespace_policies.DEFAULTS["namespace_policies_serverless_principals"] == expected
