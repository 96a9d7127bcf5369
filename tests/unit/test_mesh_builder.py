"""Table tests of the service mesh builder: objects per flavour, membership, API versions, migration."""
import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError


def by_kind(objs):
    out = {}
    for obj in objs:
        out.setdefault(obj["kind"], []).append(obj)
    return out


def test_ossm2_subscription_dedicated_smcp_with_additional_gateway_and_member_roll():
    objs = by_kind(mesh.objects({"flavour": "ossm2"}))
    assert [n["metadata"]["name"] for n in objs["Namespace"]] == ["kubeflow-mesh"]
    sub = objs["Subscription"][0]
    assert sub["apiVersion"] == "operators.coreos.com/v1alpha1"
    assert sub["metadata"] == {"name": "servicemeshoperator", "namespace": "openshift-operators"}
    smcp = objs["ServiceMeshControlPlane"][0]
    assert smcp["apiVersion"] == "maistra.io/v2" and smcp["metadata"]["namespace"] == "kubeflow-mesh"
    assert smcp["spec"]["version"] == "v2.6"
    extra = smcp["spec"]["gateways"]["additionalIngress"]["kubeflow-ingressgateway"]
    assert extra["enabled"] is True and extra["routeConfig"] == {"enabled": False}
    # what upstream's kubeflow-gateway Gateway selects, plus the gateway's own name
    assert extra["runtime"]["pod"]["metadata"]["labels"] == {"istio": "ingressgateway",
                                                             "kfocp.io/gateway": "kubeflow-ingressgateway"}
    smmr = objs["ServiceMeshMemberRoll"][0]
    assert smmr["metadata"] == {"name": "default", "namespace": "kubeflow-mesh"}
    # members are others' to add: kfocp never sends spec.members, so it never takes them back
    assert "members" not in smmr["spec"]
    assert smmr["spec"]["memberSelectors"] == [{"matchLabels": {"kfocp.io/mesh": "kubeflow"}}]
    assert "Istio" not in objs
    # the operator's own NetworkPolicies would admit every pod to the gateway: kfocp writes its own
    assert smcp["spec"]["security"] == {"manageNetworkPolicy": False}
    assert mesh.gateway_info({"flavour": "ossm2"})["mesh_network_policies"] is False


def test_ossm2_network_policies_of_the_operator_can_be_switched_back_on():
    settings = {"flavour": "ossm2", "ossm2": {"manage_network_policy": True}}
    smcp = by_kind(mesh.objects(settings))["ServiceMeshControlPlane"][0]
    assert smcp["spec"]["security"] == {"manageNetworkPolicy": True}
    assert mesh.gateway_info(settings)["mesh_network_policies"] is True
    # only Service Mesh 2's operator writes such policies
    assert mesh.gateway_info(dict(settings, flavour="ossm3"))["mesh_network_policies"] is False
    with pytest.raises(DefinitionError, match="service_mesh_ossm2.manage_network_policy"):
        mesh.normalise({"ossm2": {"manage_network_policy": "yes"}})


def test_ossm2_version_namespace_and_no_olm_are_configurable():
    objs = by_kind(mesh.objects({"flavour": "ossm2", "namespace": "ai-mesh", "olm": False,
                                 "ossm2": {"version": "v2.5", "member_selector": False}}))
    assert "Subscription" not in objs
    assert objs["ServiceMeshControlPlane"][0]["spec"]["version"] == "v2.5"
    assert objs["ServiceMeshControlPlane"][0]["metadata"]["namespace"] == "ai-mesh"
    assert objs["ServiceMeshMemberRoll"][0]["spec"] == {}


def test_ossm3_istio_cni_and_injected_gateway():
    objs = by_kind(mesh.objects({"flavour": "ossm3"}))
    istio = objs["Istio"][0]
    assert istio["apiVersion"] == "sailoperator.io/v1" and "namespace" not in istio["metadata"]
    assert istio["spec"]["namespace"] == "kubeflow-mesh"
    assert istio["spec"]["updateStrategy"] == {"type": "InPlace"}
    assert istio["spec"]["values"]["meshConfig"]["discoverySelectors"] == [{"matchLabels": {"kfocp.io/mesh": "kubeflow"}}]
    assert objs["IstioCNI"][0]["metadata"]["name"] == "default"
    assert objs["Subscription"][0]["metadata"]["name"] == "servicemeshoperator3"
    deploy = objs["Deployment"][0]
    template = deploy["spec"]["template"]["metadata"]
    assert template["labels"]["sidecar.istio.io/inject"] == "true"
    assert template["annotations"] == {"inject.istio.io/templates": "gateway"}
    assert deploy["spec"]["template"]["spec"]["containers"][0]["image"] == "auto"
    service = objs["Service"][0]
    assert service["spec"]["selector"] == deploy["spec"]["selector"]["matchLabels"]
    assert {p["name"]: p["targetPort"] for p in service["spec"]["ports"]} == {"http2": 8080, "https": 8443}
    # the gateway's namespace is discovered and injected
    labels = objs["Namespace"][0]["metadata"]["labels"]
    assert labels == {"kfocp.io/mesh": "kubeflow", "istio-injection": "enabled"}
    assert "ServiceMeshControlPlane" not in objs and "Route" not in objs


def test_ossm3_revision_based_points_members_and_gateway_at_the_revision():
    settings = {"flavour": "ossm3", "ossm3": {"update_strategy": "RevisionBased", "version": "v1.26.3"}}
    objs = by_kind(mesh.objects(settings))
    assert objs["Deployment"][0]["spec"]["template"]["metadata"]["labels"]["istio.io/rev"] == "default-v1-26-3"
    assert mesh.mesh_membership("team-a", settings)["labels"] == {"kfocp.io/mesh": "kubeflow",
                                                                  "istio.io/rev": "default-v1-26-3"}
    with pytest.raises(DefinitionError, match=r"service_mesh_ossm3.revision: cannot be derived"):
        mesh.objects({"flavour": "ossm3", "ossm3": {"update_strategy": "RevisionBased", "version": "v1.26-latest"}})


def test_external_creates_nothing_and_joins_by_labels():
    settings = {"flavour": "external", "external": {"namespace": "istio-system", "gateway": "istio-ingressgateway",
                                                    "revision": "prod", "member_label": {"mesh": "corp"}}}
    assert mesh.objects(settings) == []
    assert mesh.mesh_membership("team-a", settings) == {"labels": {"mesh": "corp", "istio.io/rev": "prod"},
                                                        "annotations": {}, "objects": []}
    info = mesh.gateway_info(settings)
    assert info["namespace"] == "istio-system" and info["selector"] == {"istio": "ingressgateway"}
    assert info["principal"] == "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"
    assert mesh.operator_package(settings) is None and mesh.control_plane_ref(settings) is None


def test_ossm2_membership_is_a_service_mesh_member_and_the_mesh_label():
    found = mesh.mesh_membership("team-a", {"flavour": "ossm2", "ossm2": {"name": "ai"}})
    assert found["labels"] == {"kfocp.io/mesh": "kubeflow"}
    assert found["objects"] == [{"apiVersion": "maistra.io/v1", "kind": "ServiceMeshMember",
                                 "metadata": {"name": "default", "namespace": "team-a"},
                                 "spec": {"controlPlaneRef": {"name": "ai", "namespace": "kubeflow-mesh"}}}]


@pytest.mark.parametrize("flavour, api, networking, security", [
    ("ossm2", "upstream", "networking.istio.io/v1beta1", "security.istio.io/v1beta1"),
    ("ossm3", "upstream", "networking.istio.io/v1", "security.istio.io/v1"),
    ("external", "upstream", "networking.istio.io/v1", "security.istio.io/v1"),
    ("external", "ossm2", "networking.istio.io/v1beta1", "security.istio.io/v1beta1"),
])
def test_istio_api_versions_per_flavour(flavour, api, networking, security):
    versions = mesh.istio_api_versions(flavour, api)
    assert versions["Gateway"] == versions["VirtualService"] == networking
    assert versions["AuthorizationPolicy"] == security
    assert versions["EnvoyFilter"] == "networking.istio.io/v1alpha3"


def test_ossm2_api_versions_are_served_by_the_ossm2_crds():
    """Every version picked for ossm2 is served by the OSSM 2.6 CRDs, and v1 networking is not."""
    import yaml
    from pathlib import Path
    served = {}
    for path in (Path(__file__).resolve().parents[2] / "hack" / "crds" / "ossm2").glob("*.yaml"):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                for v in doc["spec"]["versions"]:
                    if v["served"]:
                        served.setdefault(doc["spec"]["names"]["kind"], set()).add("%s/%s" % (doc["spec"]["group"], v["name"]))
    versions = mesh.istio_api_versions("ossm2")
    for kind, kinds_versions in served.items():
        assert versions[kind] in kinds_versions
    assert "networking.istio.io/v1" not in served["Gateway"]


@pytest.mark.parametrize("settings, message", [
    ({"flavour": "ossm4"}, r"service_mesh_flavour: 'ossm4' is not a mesh flavour"),
    ({"namespace": "Kube"}, r"service_mesh_namespace: 'Kube' is not a DNS label"),
    ({"ossm2": {"version": "2.6"}}, r"service_mesh_ossm2.version: '2.6' is not a Service Mesh 2"),
    ({"ossm2": {"nmae": "x"}}, r"service_mesh_ossm2.nmae: is not a known setting"),
    ({"flavour": "external"}, r"service_mesh_external.namespace: is required with the external flavour"),
    ({"member_label": {"a": "1", "b": "2"}}, r"service_mesh_member_label: must hold exactly one label"),
    ({"member_label": {"a": True}}, r"service_mesh_member_label.a: True is not a valid label value"),
    ({"keep_ossm2": True}, r"service_mesh_keep_ossm2: only applies to the ossm3 flavour"),
    ({"flavour": "ossm3", "keep_ossm2": True}, r"service_mesh_namespace: is kubeflow-mesh, the namespace of the Service"),
    ({"gateway": {"http_port": 0}}, r"service_mesh_gateway.http_port: 0 is not a port"),
])
def test_bad_settings_name_the_field(settings, message):
    with pytest.raises(DefinitionError, match=message):
        mesh.objects(settings)


def test_keep_ossm2_adds_the_unchanged_ossm2_objects_to_ossm3():
    ossm2 = mesh.objects({"flavour": "ossm2"})
    both = mesh.objects({"flavour": "ossm3", "namespace": "kubeflow-mesh3", "keep_ossm2": True,
                         "ossm2": {"namespace": "kubeflow-mesh"}})
    for obj in ossm2:
        assert obj in both, obj["kind"]
    assert "Istio" in by_kind(both)


def smcp(version="v2.6", instance="prod"):
    return {"metadata": {"name": "kubeflow", "namespace": "kubeflow-mesh",
                         "labels": {"app.kubernetes.io/managed-by": "kfocp", "kfocp.io/instance": instance}},
            "spec": {"version": version}}


MIGRATE = {"namespace": "kubeflow-mesh3", "ossm2": {"namespace": "kubeflow-mesh"}}


def test_migration_plan_labels_every_member_once():
    live = {"smcp": smcp(), "smmr": {"spec": {"members": ["b", "legacy"]}, "status": {"members": ["c"]}},
            "members": ["a", "b"], "namespaces": ["a", "p1", "kubeflow-mesh"]}
    plan = mesh.migration_plan(MIGRATE, live, "prod")
    assert plan["members"] == ["a", "b", "c", "legacy", "p1"] and plan["moved"] is False
    patch = plan["member_patches"][0]
    assert patch["kind"] == "Namespace" and patch["metadata"]["name"] == "a"
    assert patch["metadata"]["labels"] == {"kfocp.io/mesh": "kubeflow", "istio-injection": "enabled"}
    assert patch["metadata"]["annotations"] == {"kfocp.io/ownership": "shared", "kfocp.io/set": "mesh_members"}


@pytest.mark.parametrize("live, settings, message", [
    ({}, MIGRATE, r"ServiceMeshControlPlane kubeflow-mesh/kubeflow does not exist"),
    ({"smcp": smcp("v2.5")}, MIGRATE, r"is on version v2.5, not v2.6"),
    ({"smcp": smcp(instance="other")}, MIGRATE, r"was not made by kfocp instance 'prod'"),
    ({"smcp": smcp()}, {"ossm2": {"namespace": "kubeflow-mesh"}}, r"give Service Mesh 3 its own namespace"),
])
def test_migration_preconditions(live, settings, message):
    with pytest.raises(DefinitionError, match=message):
        mesh.migration_plan(settings, live, "prod")


def test_migration_after_the_ossm2_control_plane_was_removed_is_a_no_op_plan():
    istio = {"metadata": {"name": "default", "labels": {"app.kubernetes.io/managed-by": "kfocp",
                                                        "kfocp.io/instance": "prod"}}}
    plan = mesh.migration_plan(MIGRATE, {"istio": istio, "namespaces": ["p1"]}, "prod")
    assert plan["moved"] is True and plan["members"] == ["p1"]


UPSTREAM_GATEWAY = {"apiVersion": "networking.istio.io/v1beta1", "kind": "Gateway",
                    "metadata": {"name": "kubeflow-gateway", "namespace": "kubeflow"},
                    "spec": {"selector": {"istio": "ingressgateway"}}}


def _selects(selector, labels):
    return all(labels.get(key) == value for key, value in selector.items())


@pytest.mark.parametrize("flavour", ["ossm2", "ossm3"])
def test_upstream_gateway_selects_kfocps_gateway_pods_and_the_envoy_filter_only_them(flavour):
    objs = mesh.objects({"flavour": flavour})
    if flavour == "ossm2":
        extra = by_kind(objs)["ServiceMeshControlPlane"][0]["spec"]["gateways"]["additionalIngress"]
        pod_labels = extra["kubeflow-ingressgateway"]["runtime"]["pod"]["metadata"]["labels"]
    else:
        pod_labels = [o for o in objs if o["kind"] == "Deployment"][0]["spec"]["template"]["metadata"]["labels"]
    assert _selects(UPSTREAM_GATEWAY["spec"]["selector"], pod_labels)
    info = mesh.gateway_info({"flavour": flavour})
    assert _selects(info["selector"], pod_labels)
    # another ingress gateway in the mesh is not kfocp's
    assert not _selects(info["selector"], {"istio": "ingressgateway", "app": "istio-ingressgateway"})


@pytest.mark.parametrize("flavour, principal", [
    ("ossm2", "cluster.local/ns/kubeflow-mesh/sa/kubeflow-ingressgateway-service-account"),
    ("ossm3", "cluster.local/ns/kubeflow-mesh/sa/kubeflow-ingressgateway")])
def test_gateway_principal_is_the_account_its_pods_run_as(flavour, principal):
    info = mesh.gateway_info({"flavour": flavour})
    assert info["principal"] == principal
    if flavour == "ossm3":
        deployment = [o for o in mesh.objects({"flavour": flavour}) if o["kind"] == "Deployment"][0]
        assert principal.endswith("/sa/" + deployment["spec"]["template"]["spec"]["serviceAccountName"])


def test_external_gateway_service_account_is_configurable():
    info = mesh.gateway_info({"flavour": "external", "external": {"namespace": "istio-system", "gateway": "gw",
                                                                  "service_account": "gw-sa"}})
    assert info["principal"] == "cluster.local/ns/istio-system/sa/gw-sa" and info["selector"] == {"istio": "gw"}


def test_service_mesh_2_channel_is_stable_up_to_4_18_and_the_users_own_after():
    sub = by_kind(mesh.objects({"flavour": "ossm2", "openshift": "4.18"}))["Subscription"][0]
    assert sub["spec"]["channel"] == "stable"
    with pytest.raises(DefinitionError, match=r"service_mesh_ossm2\.subscription\.channel: is required on "
                                              r"OpenShift 4\.20.*known for OpenShift 4\.14 to 4\.18 only"):
        mesh.objects({"flavour": "ossm2", "openshift": "4.20"})
    given = {"flavour": "ossm2", "openshift": "4.20", "ossm2": {"subscription": {"channel": "my-stable"}}}
    assert by_kind(mesh.objects(given))["Subscription"][0]["spec"]["channel"] == "my-stable"
    # no Subscription without OLM, so no channel to know; Service Mesh 3 is not held back by it
    assert "Subscription" not in by_kind(mesh.objects({"flavour": "ossm2", "openshift": "4.20", "olm": False}))
    assert by_kind(mesh.objects({"flavour": "ossm3", "openshift": "4.20"}))["Subscription"][0]["spec"]["channel"] \
        == "stable-3.2"
