"""Table tests of the serverless builder: system namespaces (owned or shared patch), mesh objects, KnativeServing."""
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies, serverless
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError
from gomod import KNATIVE_OPERATOR, KNATIVE_SERVING, require_module

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


# openshift-knative/serverless-operator @ c9356eaa6eeaa2eb134b8c633d916104e50f2571 (release-1.37) and
# 02f6bc2c4dc6dc7509fd93379c8a6e90f4b5425f (main): knative-operator/pkg/webhook/knativeserving/
# webhook_validating.go `validateNamespace` refuses a KnativeServing outside REQUIRED_SERVING_NAMESPACE
# ("KnativeServing may only be created in %s namespace"), which the CSV
# (olm-catalog/serverless-operator/manifests/serverless-operator.clusterserviceversion.yaml) sets to
# knative-serving; openshift-knative-operator/pkg/serving/kourier.go moves Kourier to
# `ks.Namespace + "-ingress"`.
REQUIRED_SERVING_NAMESPACE = "knative-serving"
KOURIER_NAMESPACE = REQUIRED_SERVING_NAMESPACE + "-ingress"


@pytest.mark.parametrize("serving, ingress, field", [
    ("a", "a", "serverless_serving_namespace"),
    ("kserve", "kserve-ingress", "serverless_serving_namespace"),
    (REQUIRED_SERVING_NAMESPACE, "kourier", "serverless_ingress_namespace"),
    (REQUIRED_SERVING_NAMESPACE, REQUIRED_SERVING_NAMESPACE, "serverless_ingress_namespace"),
])
def test_namespaces_serverless_does_not_run_knative_serving_in_are_refused_naming_the_rule(serving, ingress, field):
    with pytest.raises(DefinitionError, match=r"%s: is '%s', but OpenShift Serverless .*(REQUIRED_SERVING_NAMESPACE|"
                                              r"kourier.go)" % (field, serving if "serving" in field else ingress)):
        serverless.objects({"serving_namespace": serving, "ingress_namespace": ingress})
    if field == "serverless_serving_namespace":
        with pytest.raises(DefinitionError, match="serverless_serving_namespace: is"):
            serverless.knative_serving({"serving_namespace": serving, "spec": {}})
    assert serverless.objects({"serving_namespace": REQUIRED_SERVING_NAMESPACE, "ingress_namespace": KOURIER_NAMESPACE})


def test_activator_autoscaler_and_kourier_get_sidecars_in_the_mesh():
    given = {"deployments": [{"name": "activator", "labels": {"team": "x"}, "resources": [{"container": "activator"}]}]}
    [ks] = serverless.knative_serving({"serving_namespace": "knative-serving", "spec": given,
                                       "mesh": {"enabled": True}})
    deployments = dict((d["name"], d) for d in ks["spec"]["workloads"])
    assert set(deployments) == {"activator", "autoscaler", "3scale-kourier-gateway"}
    for entry in deployments.values():
        assert entry["labels"]["sidecar.istio.io/inject"] == "true"
        assert entry["annotations"]["sidecar.istio.io/rewriteAppHTTPProbers"] == "true"
    # the user's settings for them stay
    assert deployments["activator"]["labels"]["team"] == "x" and deployments["activator"]["resources"]
    assert given["deployments"][0]["labels"] == {"team": "x"}, "the input is not modified"


def test_no_sidecars_without_the_mesh():
    [ks] = serverless.knative_serving({"serving_namespace": "knative-serving", "spec": {}, "mesh": {"enabled": False}})
    assert "deployments" not in ks["spec"] and "workloads" not in ks["spec"]


def test_the_namespace_policies_default_principals_are_knatives_data_path_in_the_serverless_namespaces():
    # the two roles' defaults agree: namespace_policies admits the activator and Kourier gateway of
    # the namespaces the serverless role installs Knative Serving in
    defaults = dict((role, yaml.safe_load((ROOT / "roles" / role / "defaults" / "main.yml").read_text()))
                    for role in ("serverless", "namespace_policies"))
    expected = serverless.data_path_principals(defaults["serverless"]["serverless_serving_namespace"],
                                               defaults["serverless"]["serverless_ingress_namespace"])
    assert defaults["namespace_policies"]["namespace_policies_serverless_principals"] == expected
    assert namespace_policies.DEFAULTS["namespace_policies_serverless_principals"] == expected


def _json_field(go_source, struct_field):
    """The JSON name of a Go struct field, and the comment lines just above it."""
    lines = go_source.splitlines()
    for index, line in enumerate(lines):
        match = re.match(r"\s*%s\s+\S+\s+`json:\"([^,\"]+)" % struct_field, line)
        if match:
            comments = []
            for above in reversed(lines[:index]):
                if not above.strip().startswith("//"):
                    break
                comments.insert(0, above.strip())
            return match.group(1), " ".join(comments)
    return None, ""


def test_the_workload_overrides_go_to_the_field_the_knative_operator_keeps_and_not_the_deprecated_one():
    """knative.dev/operator (Knative 1.15, the Serverless 1.35 operator; the same in the operator
    vendored at release-1.33 and later): `DeploymentOverride` is `deployments`, marked DEPRECATED for
    `workloads`; both are applied, deployments first (GetDeploymentOverride)."""
    source = (require_module(pytest, *KNATIVE_OPERATOR) / "pkg/apis/operator/base/common.go").read_text()
    deprecated, comment = _json_field(source, "DeploymentOverride")
    current = _json_field(source, "Workloads")[0]
    assert "DEPRECATED. Use workloads" in comment and (deprecated, current) == ("deployments", "workloads")
    assert "append(c.DeploymentOverride, c.Workloads...)" in source
    given = {deprecated: [{"name": "activator", "labels": {"team": "x"}, "replicas": 3}],
             current: [{"name": "activator", "labels": {"tier": "web"}}, {"name": "webhook", "replicas": 2}]}
    [ks] = serverless.knative_serving({"serving_namespace": "knative-serving", "spec": given, "mesh": {"enabled": True},
                                       "installed": {"serverless-operator": "1.35.0"}})
    assert deprecated not in ks["spec"]
    by_name = dict((d["name"], d) for d in ks["spec"][current])
    assert by_name["activator"]["labels"] == {"team": "x", "tier": "web", "sidecar.istio.io/inject": "true"}
    assert by_name["activator"]["replicas"] == 3 and by_name["webhook"] == {"name": "webhook", "replicas": 2}
    [ks] = serverless.knative_serving({"serving_namespace": "knative-serving", "spec": {}, "mesh": {"enabled": True}})
    assert set(d["name"] for d in ks["spec"][current]) == set(serverless.MESH_DEPLOYMENTS)


def test_knatives_autoscaler_scrapes_the_pods_itself_so_its_principal_is_admitted():
    """knative.dev/serving (Knative Serving 1.15): the autoscaler scrapes each pod's queue-proxy
    (`scrapePods`, "http://" + pod IP + ":" + portAndPath) and takes a non-2xx answer as an error; its
    Deployment runs as service account `controller` in the serving namespace."""
    source = require_module(pytest, *KNATIVE_SERVING)
    scraper = (source / "pkg/autoscaler/metrics/stats_scraper.go").read_text()
    assert re.search(r'target := "http://" \+ pods\[myIdx\] \+ ":" \+ portAndPath', scraper)
    client = (source / "pkg/autoscaler/metrics/http_scrape_client.go").read_text()
    assert "resp.StatusCode < http.StatusOK || resp.StatusCode >= http.StatusMultipleChoices" in client
    deployment = yaml.safe_load((source / "config/core/deployments/autoscaler.yaml").read_text().split("\n---")[0])
    account = deployment["spec"]["template"]["spec"]["serviceAccountName"]
    principal = "cluster.local/ns/%s/sa/%s" % (REQUIRED_SERVING_NAMESPACE, account)
    assert principal in serverless.data_path_principals()
    defaults = yaml.safe_load((ROOT / "roles" / "namespace_policies" / "defaults" / "main.yml").read_text())
    assert principal in defaults["namespace_policies_serverless_principals"]
    [policy] = [o for o in namespace_policies.objects_for_namespace(
        {"metadata": {"name": "team-a", "annotations": {"owner": "alice"}}, "status": {"phase": "Active"}},
        dict(defaults, namespace_policies_serverless=True))
        if o["kind"] == "AuthorizationPolicy" and o["metadata"]["name"] == "kfocp-knative-kserve-predictor"]
    assert principal in policy["spec"]["rules"][0]["from"][0]["source"]["principals"]
