"""assemble's passes, each alone: what it does with its option, and that without its option it
changes nothing."""
import copy

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import manifests as m
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError


def deployment(name, namespace="kubeflow", image="docker.io/kubeflownotebookswg/app:v1", **pod):
    pod = dict({"containers": [{"name": name, "image": image}]}, **pod)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"template": {"metadata": {"labels": {"app": name}}, "spec": pod}}}


VS = {"apiVersion": "networking.istio.io/v1", "kind": "VirtualService", "metadata": {"name": "ui", "namespace": "kubeflow"},
      "spec": {"gateways": ["kubeflow/kubeflow-gateway", "mesh"], "hosts": ["*"]}}
ARGO_CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "workflow-controller-configmap",
                                                                 "namespace": "kubeflow"},
           "data": {"artifactRepository": "s3:\n  bucket: mlpipeline\n"}}
LABELS_FILE = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "namespace-labels-data", "namespace": "kubeflow"},
               "data": {m.PROFILE_LABELS_FILE: "app.kubernetes.io/part-of: kubeflow-profile\n"}}
CLUSTER_ROLE = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "kubeflow-view"},
                "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}, "rules": []}
CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "xs.example.com"}}
MEMBER = {"apiVersion": "maistra.io/v1", "kind": "ServiceMeshMember", "metadata": {"name": "default", "namespace": "ml"},
          "spec": {"controlPlaneRef": {"name": "basic", "namespace": "istio-system"}}}
OBJECTS = [deployment("nb"), deployment("envoy-less", "other"), copy.deepcopy(VS), ARGO_CM, LABELS_FILE,
           deployment("workflow-controller"), deployment("metadata-envoy-deployment"), deployment("profiles-deployment"),
           CLUSTER_ROLE, CRD]


def run(step, objs, options=None, **state):
    """The Assembly after `step` alone ran on `objs`."""
    assembly = m.Assembly(copy.deepcopy(objs), dict(options or {}))
    for key, value in state.items():
        setattr(assembly, key, value)
    step(assembly)
    return assembly


def by_name(objs):
    return dict((o["metadata"]["name"], o) for o in objs)


# Every pass but those that always act (namespace, pod security, platform namespaces, ownership)
# leaves the objects and the result as they were without its option.
@pytest.mark.parametrize("step", [m.api_versions_pass, m.argo_pass, m.metadata_envoy_pass, m.virtualservices_pass,
                                  m.gateway_principals_pass, m.gateway_policies_pass, m.logout_pass, m.sidecars_pass, m.profile_pod_security_pass,
                                  m.images_pass, m.scc_pass, m.mesh_membership_pass])
def test_a_pass_without_its_option_changes_nothing(step):
    before = m.Assembly(copy.deepcopy(OBJECTS), {})
    after = run(step, OBJECTS)
    assert (after.objs, after.result, after.injection, after.members) == \
        (before.objs, before.result, before.injection, before.members)


def test_every_pass_is_in_passes_once():
    passes = [v for k, v in vars(m).items() if k.endswith("_pass") and callable(v)]
    assert sorted(p.__name__ for p in m.PASSES) == sorted(p.__name__ for p in passes)


def test_namespace_pass_moves_kubeflow_objects_and_gateway_references():
    out = by_name(run(m.namespace_pass, OBJECTS, {"namespace": "ml"}).objs)
    assert out["nb"]["metadata"]["namespace"] == "ml" and out["envoy-less"]["metadata"]["namespace"] == "other"
    assert out["ui"]["spec"]["gateways"] == ["ml/kubeflow-gateway", "mesh"]
    assert by_name(run(m.namespace_pass, OBJECTS).objs) == by_name(OBJECTS)  # kubeflow is the default


def test_api_versions_pass_serves_listed_kinds_in_their_version():
    out = by_name(run(m.api_versions_pass, OBJECTS, {"api_versions": {"networking.istio.io/VirtualService": "v1beta1"}}).objs)
    assert out["ui"]["apiVersion"] == "networking.istio.io/v1beta1" and out["nb"]["apiVersion"] == "apps/v1"


def test_argo_pass_drops_argos_controller_and_points_at_s3():
    s3 = {"endpoint": "s3.example.com", "bucket": "kfp", "secret": "kfp-s3"}
    out = by_name(run(m.argo_pass, OBJECTS, {"argo": {"s3": s3}}).objs)
    assert "workflow-controller" not in out
    assert yaml.safe_load(out["workflow-controller-configmap"]["data"]["artifactRepository"])["s3"]["bucket"] == "kfp"


def test_metadata_envoy_pass_gives_envoy_its_base_id():
    out = by_name(run(m.metadata_envoy_pass, OBJECTS, {"metadata_envoy": {"base_id": 7}}).objs)
    assert out["metadata-envoy-deployment"]["spec"]["template"]["spec"]["containers"][0]["args"] == [
        "/etc/envoy.yaml", "--base-id", "7"]
    assert "args" not in out["nb"]["spec"]["template"]["spec"]["containers"][0]


def test_virtualservices_pass_points_at_another_gateway_hosts_and_export_to():
    options = {"virtualservice": {"gateway": "istio-system/gw", "hosts": ["kf.example.com"], "export_to": ["."]}}
    spec = by_name(run(m.virtualservices_pass, OBJECTS, options).objs)["ui"]["spec"]
    assert spec == {"gateways": ["istio-system/gw", "mesh"], "hosts": ["kf.example.com"], "exportTo": ["."]}


def test_gateway_principals_pass_sets_the_profile_controllers_principals():
    principal = "cluster.local/ns/istio-system/sa/gateway"
    out = by_name(run(m.gateway_principals_pass, OBJECTS,
                      {"principals": {"ISTIO_INGRESS_GATEWAY_PRINCIPAL": principal}}).objs)
    env = out["profiles-deployment"]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "ISTIO_INGRESS_GATEWAY_PRINCIPAL", "value": principal} in env


def test_gateway_policies_pass_admits_the_gateway_kfocp_runs_where_upstream_admits_istio_systems():
    principal = "cluster.local/ns/kubeflow-mesh/sa/kubeflow-ingressgateway"
    other = "cluster.local/ns/kubeflow/sa/centraldashboard"
    policy = {"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
              "metadata": {"name": "ui", "namespace": "kubeflow"},
              "spec": {"rules": [{"from": [{"source": {"principals": [m.UPSTREAM_GATEWAY_PRINCIPAL, other]}}]},
                                 {"when": [{"key": "source.principal", "notValues": [m.UPSTREAM_GATEWAY_PRINCIPAL]}]}]}}
    out = by_name(run(m.gateway_policies_pass, OBJECTS + [policy],
                      {"principals": {"ISTIO_INGRESS_GATEWAY_PRINCIPAL": principal}}).objs)
    rules = out["ui"]["spec"]["rules"]
    assert rules[0]["from"][0]["source"]["principals"] == [principal, other]
    assert rules[1]["when"][0]["notValues"] == [principal]
    with pytest.raises(DefinitionError, match="ISTIO_INGRESS_GATEWAY_PRINCIPAL"):
        run(m.gateway_policies_pass, [policy], {"principals": {"ISTIO_INGRESS_GATEWAY_PRINCIPAL": "gateway"}})


def test_logout_pass_sets_the_dashboards_logout_url():
    dashboard = deployment("centraldashboard")
    dashboard["spec"]["template"]["spec"]["containers"][0]["env"] = [{"name": "LOGOUT_URL", "value": "/oauth2/sign_out"},
                                                                     {"name": "X", "value": "1"}]
    out = by_name(run(m.logout_pass, OBJECTS + [dashboard], {"logout_url": "/oauth/sign_out"}).objs)
    env = out["centraldashboard"]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env == [{"name": "X", "value": "1"}, {"name": "LOGOUT_URL", "value": "/oauth/sign_out"}]
    with pytest.raises(DefinitionError, match="components_dashboard_logout_url"):
        run(m.logout_pass, [dashboard], {"logout_url": "oauth/sign_out"})


@pytest.mark.parametrize("sidecar, labels, file_labels", [
    ({}, {"istio-injection": "enabled"}, {}),
    ({"revision": "r1"}, {"istio.io/rev": "r1"}, {"istio-injection": "", "istio.io/rev": "r1"}),
])
def test_sidecars_pass_injects_and_labels_the_listed_namespaces(sidecar, labels, file_labels):
    state = run(m.sidecars_pass, OBJECTS, {"sidecar": dict(sidecar, namespaces=["kubeflow"])})
    assert state.injection == {"kubeflow": labels}
    out = by_name(state.objs)
    assert out["nb"]["spec"]["template"]["metadata"]["annotations"] == {m.INJECT: "true"}
    assert "annotations" not in out["envoy-less"]["spec"]["template"]["metadata"]  # not in a listed namespace
    assert yaml.safe_load(out["namespace-labels-data"]["data"][m.PROFILE_LABELS_FILE]) == dict(
        {"app.kubernetes.io/part-of": "kubeflow-profile"}, **file_labels)


def test_sidecars_pass_defaults_to_the_components_namespace():
    assert run(m.sidecars_pass, [deployment("nb", "ml")], {"namespace": "ml", "sidecar": {}}).injection == {
        "ml": {"istio-injection": "enabled"}}


def test_profile_pod_security_pass_writes_the_level_into_the_labels_file():
    out = by_name(run(m.profile_pod_security_pass, OBJECTS, {"profile_pod_security": "baseline"}).objs)
    written = yaml.safe_load(out["namespace-labels-data"]["data"][m.PROFILE_LABELS_FILE])
    assert written["pod-security.kubernetes.io/enforce"] == "baseline"
    with pytest.raises(DefinitionError, match="components_profile_pod_security"):
        run(m.profile_pod_security_pass, OBJECTS, {"profile_pod_security": "auto"})


def test_images_pass_mirrors_images_and_reports_the_unmatched():
    state = run(m.images_pass, OBJECTS + [deployment("db", image="mysql:8.4")],
                {"mirror": {"prefixes": {"docker.io/kubeflownotebookswg": "registry.example.com/kf"}}})
    out = by_name(state.objs)
    assert out["nb"]["spec"]["template"]["spec"]["containers"][0]["image"] == "registry.example.com/kf/app:v1"
    assert "mysql:8.4" in state.result["unmatched_images"]
    assert state.result["mirror_lines"] and state.result["mirror"][0]["target"].startswith("registry.example.com/kf/")


def test_scc_pass_grants_what_the_pods_need():
    objs = [deployment("host", hostNetwork=True, serviceAccountName="net")]
    result = run(m.scc_pass, objs, {"scc": {"uid_range": {"start": 1000660000, "size": 10000}}}).result
    assert [(g["serviceaccount"], g["scc"]) for g in result["grants"]] == [("net", "hostnetwork-v2")]
    assert result["audit"][1].split()[:3] == ["net", "kubeflow", "hostnetwork-v2"]


@pytest.mark.parametrize("labels, expected", [
    ({"istio.io/rev": "r2"}, {"kfocp.io/x": "1", "istio.io/rev": "r2"}),  # a revision wins over istio-injection
    ({"mesh": "corp"}, {"kfocp.io/x": "1", "istio-injection": "enabled", "mesh": "corp"}),
])
def test_mesh_membership_pass_labels_the_namespace_and_keeps_its_members(labels, expected):
    membership = {"labels": labels, "objects": [MEMBER]}
    state = run(m.mesh_membership_pass, [], {"namespace": "ml", "mesh_membership": membership},
                injection={"ml": {"kfocp.io/x": "1", "istio-injection": "enabled"}})
    assert state.injection == {"ml": expected}
    assert state.members == [MEMBER]


def test_pod_security_pass_labels_every_namespace_with_its_level():
    objs = [deployment("nb", "ml"), deployment("host", "net", hostNetwork=True)]
    state = run(m.pod_security_pass, objs, injection={"ml": {"istio-injection": "enabled"}})
    assert state.result["pod_security"]["ml"]["level"] == "baseline"  # no runAsNonRoot, seccomp, capabilities
    assert state.result["pod_security"]["net"]["level"] == "privileged"
    assert state.injection["ml"]["istio-injection"] == "enabled"
    assert state.injection["ml"]["pod-security.kubernetes.io/enforce"] == "baseline"
    assert state.injection["net"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert state.result["pod_security_table"][0].split()[:2] == ["NAMESPACE", "LEVEL"]


def test_platform_namespaces_pass_puts_labelled_namespaces_first_then_members_and_grants():
    grants = [{"namespace": "ml", "serviceaccount": "net", "scc": "hostnetwork-v2"}]
    state = run(m.platform_namespaces_pass, [deployment("nb", "ml")], injection={"ml": {"istio-injection": "enabled"}},
                members=[copy.deepcopy(MEMBER)])
    state.result["grants"] = grants
    kinds = [o["kind"] for o in state.objs]
    assert kinds == ["Namespace", "Deployment", "ServiceMeshMember"]
    assert state.objs[0]["metadata"]["labels"] == {"istio-injection": "enabled"}
    assert state.objs[2]["metadata"]["labels"][m.COMPONENT_LABEL] == "mesh"
    state = run(m.platform_namespaces_pass, [deployment("nb", "ml")])
    state.result["grants"] = grants
    m.platform_namespaces_pass(state)
    binding = state.objs[-1]
    assert binding["kind"] == "RoleBinding" and binding["metadata"]["labels"][m.COMPONENT_LABEL] == "scc"


def test_ownership_pass_marks_crds_and_drops_aggregated_rules_or_renders_plain_objects():
    out = by_name(run(m.ownership_pass, OBJECTS, {"take_over": ["Deployment/nb"]}).objs)
    assert out["xs.example.com"]["metadata"]["annotations"] == {"kfocp.io/ownership": "ensure"}
    assert out["nb"]["metadata"]["annotations"] == {"kfocp.io/adopt": "true"}
    assert "rules" not in out["kubeflow-view"]
    # the render, too, leaves the aggregated rules to the aggregation controller (with upstream's
    # `rules: []` a real Argo CD reports them OutOfSync for ever: tests/integration/test_fleet.py)
    plain = by_name(run(m.ownership_pass, OBJECTS, {"render": True}).objs)
    assert "annotations" not in plain["xs.example.com"]["metadata"] and "rules" not in plain["kubeflow-view"]


def test_assemble_runs_the_passes_it_is_given_in_their_order():
    """Without platform_namespaces_pass no Namespace is made; with it, the labels the passes before it
    gave are on the namespace, and those of the passes after it are not."""
    rendered = {"web": [deployment("nb")]}
    alone = m.assemble(rendered, {"namespace": "ml"}, passes=(m.namespace_pass,))["objects"]
    assert [(o["kind"], o["metadata"]["namespace"]) for o in alone] == [("Deployment", "ml")]
    ordered = m.assemble(rendered, {}, passes=(m.pod_security_pass, m.platform_namespaces_pass))["objects"]
    assert ordered[0]["kind"] == "Namespace"
    assert ordered[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"
    reversed_ = m.assemble(rendered, {}, passes=(m.platform_namespaces_pass, m.pod_security_pass))["objects"]
    assert reversed_[0]["kind"] == "Namespace" and "labels" not in reversed_[0]["metadata"]
