"""The stand-ins' pure parts against the facts of the controllers they play
(/work/shared/facts/profile-controller.md); tests/integration/test_standins_live.py runs them against
the API server. Each assertion fails if the stand-in is made kinder than the real controller."""
import pytest

import standins
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh


@pytest.mark.parametrize("live, wanted, expected", [
    ({}, {"a": "1"}, {"a": "1"}),                                        # a missing key is added
    ({"a": "mine"}, {"a": "1"}, {"a": "mine"}),                          # a set key is never overwritten
    ({"istio-injection": "enabled"}, {"istio-injection": ""}, {}),       # the empty value removes
    ({"istio-injection": "enabled"}, {"istio.io/rev": "r1"}, {"istio-injection": "enabled", "istio.io/rev": "r1"}),
    ({"x": "1"}, {}, {"x": "1"}),                                        # labels it does not know are kept
])
def test_namespace_labels_only_added_when_missing(live, wanted, expected):
    assert standins.set_namespace_labels(live, wanted) == expected


def test_authorization_policy_has_the_four_upstream_rules_with_default_principals():
    spec = standins.authorization_policy_spec("team", "alice@example.com")
    assert spec["action"] == "ALLOW" and "selector" not in spec
    owner, same_namespace, probes, kernels = spec["rules"]
    assert owner["when"] == [{"key": "request.headers[kubeflow-userid]", "values": ["alice@example.com"]}]
    assert owner["from"] == [{"source": {"principals": [
        "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account",
        "cluster.local/ns/kubeflow/sa/ml-pipeline-ui"]}}]
    assert same_namespace == {"when": [{"key": "source.namespace", "values": ["team"]}]}
    assert probes == {"to": [{"operation": {"paths": ["/healthz", "/metrics", "/wait-for-drain"]}}]}
    assert kernels == {"from": [{"source": {"principals": [
        "cluster.local/ns/kubeflow/sa/notebook-controller-service-account"]}}],
        "to": [{"operation": {"methods": ["GET"], "paths": ["*/api/kernels"]}}]}


def test_authorization_policy_principals_and_userid_come_from_the_controller_environment():
    env = {"ISTIO_INGRESS_GATEWAY_PRINCIPAL": "cluster.local/ns/gw/sa/gateway",
           "KFP_UI_PRINCIPAL": "cluster.local/ns/kf/sa/ui", "NOTEBOOK_CONTROLLER_PRINCIPAL": "cluster.local/ns/kf/sa/nb",
           "UNRELATED": "x"}
    spec = standins.authorization_policy_spec("team", "alice", env, ("x-user", "id:"))
    assert spec["rules"][0]["from"][0]["source"]["principals"] == ["cluster.local/ns/gw/sa/gateway",
                                                                   "cluster.local/ns/kf/sa/ui"]
    assert spec["rules"][0]["when"][0] == {"key": "request.headers[x-user]", "values": ["id:alice"]}
    assert spec["rules"][3]["from"][0]["source"]["principals"] == ["cluster.local/ns/kf/sa/nb"]


@pytest.mark.parametrize("annotations, refused", [
    ({"owner": "alice"}, False),
    ({"owner": "bob"}, True),      # another user's project
    ({}, True),                    # no owner at all (an OpenShift project made by hand)
    ({"owner": "Alice"}, True),    # compared exactly
])
def test_an_existing_namespace_without_the_owner_is_refused(annotations, refused):
    namespace = {"metadata": {"name": "team", "annotations": annotations}}
    condition = standins.refusal(namespace, "alice")
    assert bool(condition) is refused
    if refused:
        assert condition["type"] == "Failed"
        assert condition["message"] == "namespace already exist, but not owned by profile creator alice"


def test_a_missing_namespace_is_not_refused():
    assert standins.refusal(None, "alice") is None


def test_the_service_mesh_2_operator_opens_each_gateway_unless_told_not_to():
    smcp = {"metadata": {"name": "basic", "namespace": "mesh"},
            "spec": {"version": "v2.6", "gateways": {"additionalIngress": {"gw": {
                "enabled": True, "service": {"metadata": {"labels": {"istio": "kf"}}}}}}}}
    found = standins.maistra_network_policies(smcp, ["team"])
    policies = dict(((p["metadata"]["namespace"], p["metadata"]["name"]), p["spec"]) for p in found)
    assert sorted(policies) == [("mesh", "gw"), ("mesh", "istio-expose-route-basic"), ("mesh", "istio-istiod-basic"),
                                ("mesh", "istio-mesh-basic"), ("team", "istio-expose-route-basic"),
                                ("team", "istio-mesh-basic")]
    # everything may reach the gateway's pods: no NetworkPolicy of anyone else can narrow that
    assert policies[("mesh", "gw")] == {"podSelector": {"matchLabels": {"istio": "kf"}},
                                        "policyTypes": ["Ingress"], "ingress": [{}]}
    assert policies[("team", "istio-mesh-basic")]["ingress"] == [
        {"from": [{"namespaceSelector": {"matchLabels": {"maistra.io/member-of": "mesh"}}}]}]
    assert policies[("mesh", "istio-expose-route-basic")] == policies[("team", "istio-expose-route-basic")]
    # only the policies not marked internal are copied into the members
    internal = sorted(p["metadata"]["name"] for p in found
                      if (p["metadata"].get("annotations") or {}).get("maistra.io/internal") == "true")
    assert internal == ["gw", "istio-istiod-basic"]
    # on by default: only an explicit false switches them off
    smcp["spec"]["security"] = {"manageNetworkPolicy": False}
    assert standins.maistra_network_policies(smcp, ["team"]) == []


def test_istiods_injection_webhook_for_a_revision_and_for_the_default_one():
    named = standins.istiod_injector_webhook("blue", "mesh")
    assert named["metadata"]["name"] == "istio-sidecar-injector-blue-mesh"
    assert [h["name"] for h in named["webhooks"]] == ["rev.namespace.sidecar-injector.istio.io",
                                                      "rev.object.sidecar-injector.istio.io"]
    assert named["webhooks"][0]["namespaceSelector"]["matchExpressions"][0] == {
        "key": "istio.io/rev", "operator": "In", "values": ["blue"]}
    assert all(h["failurePolicy"] == "Fail" and h["clientConfig"]["service"]["name"] == "istiod-blue"
               for h in named["webhooks"])
    default = standins.istiod_injector_webhook("default", "istio-system")
    assert default["metadata"]["name"] == "istio-sidecar-injector"
    assert len(default["webhooks"]) == 4 and default["webhooks"][2]["namespaceSelector"]["matchExpressions"] == [
        {"key": "istio-injection", "operator": "In", "values": ["enabled"]}]
    assert standins.istiod_service("blue", "mesh")["metadata"]["name"] == "istiod-blue"


def test_the_service_mesh_2_operator_labels_gateway_pods_from_the_service_labels_only():
    smcp = {"metadata": {"name": "basic", "namespace": "mesh"},
            "spec": {"gateways": {"additionalIngress": {
                "gw": {"enabled": True, "service": {"ports": [{"name": "http2", "port": 80, "targetPort": 8080}],
                                                    "metadata": {"labels": {"istio": "kf"}}},
                       "runtime": {"pod": {"metadata": {"labels": {"ignored": "yes"}}}}},
                "bare": {"runtime": {"pod": {"metadata": {"labels": {"istio": "kf"}}}}},
                "off": {"enabled": False}}}}}
    objs = dict(((o["kind"], o["metadata"]["name"]), o) for o in standins.maistra_gateway_objects(smcp))
    assert sorted(objs) == [("Deployment", "bare"), ("Deployment", "gw"), ("Service", "bare"), ("Service", "gw"),
                            ("ServiceAccount", "bare-service-account"), ("ServiceAccount", "gw-service-account")]
    template = objs[("Deployment", "gw")]["spec"]["template"]
    assert template["metadata"]["labels"] == {"istio": "kf", "maistra.io/gateway": "gw.mesh", "maistra-control-plane": "mesh"}
    assert template["spec"]["serviceAccountName"] == "gw-service-account"
    assert template["spec"]["containers"][0]["image"] != "auto"
    assert objs[("Service", "gw")]["spec"]["selector"] == {"istio": "kf"}
    # runtime.pod labels alone: the chart's default labels
    bare = objs[("Deployment", "bare")]["spec"]["template"]["metadata"]["labels"]
    assert bare["app"] == "istio-ingressgateway" and bare["istio"] == "ingressgateway"


def test_kfocps_gateway_selector_selects_the_pods_the_service_mesh_2_operator_runs():
    """The auth role's EnvoyFilter and NetworkPolicy and the components' Gateway select the
    gateway's pods with gateway_info's selector: it must match what the operator labels them."""
    objs = mesh.objects({"flavour": "ossm2"})
    smcp = [o for o in objs if o["kind"] == "ServiceMeshControlPlane"][0]
    info = mesh.gateway_info({"flavour": "ossm2"})
    deployments = [o for o in standins.maistra_gateway_objects(smcp) if o["kind"] == "Deployment"]
    assert [d["metadata"]["name"] for d in deployments] == [info["name"]]
    pod = deployments[0]["spec"]["template"]
    assert all(pod["metadata"]["labels"].get(k) == v for k, v in info["selector"].items())
    assert mesh.principal(deployments[0]["metadata"]["namespace"], pod["spec"]["serviceAccountName"]) == info["principal"]


def test_the_service_mesh_2_injector_adds_a_proxy_to_notebooks_only_with_kfocps_smcp():
    kfocps = [o for o in mesh.objects({"flavour": "ossm2"}) if o["kind"] == "ServiceMeshControlPlane"][0]
    operators_default = {"spec": {"version": "v2.6"}}  # smcp-templates/v2.6/base: autoInject false
    notebook = {"labels": {"notebook-name": "nb", "statefulset": "nb"}}
    assert standins.maistra_inject_required(kfocps, notebook) is True
    assert standins.maistra_inject_required(operators_default, notebook) is False
    said_no = {"labels": {"sidecar.istio.io/inject": "false"}, "annotations": {"sidecar.istio.io/inject": "true"}}
    assert standins.maistra_inject_required(kfocps, said_no) is False  # the label wins over the annotation
    assert standins.maistra_inject_required(operators_default, {"annotations": {"sidecar.istio.io/inject": "true"}})
