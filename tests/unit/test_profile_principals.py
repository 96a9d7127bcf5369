"""The profile controller's Deployment gets the principals of the gateway and pipelines UI kfocp runs."""
import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import manifests as m
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError

GATEWAY = "cluster.local/ns/kubeflow-mesh/sa/kubeflow-ingressgateway-service-account"
UI = "cluster.local/ns/kubeflow/sa/ml-pipeline-ui"


def deployment(name="profiles-deployment", env=None):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "kubeflow"},
            "spec": {"template": {"spec": {"containers": [
                {"name": "manager", "image": "pc", "env": list(env or [])},
                {"name": "kfam", "image": "kfam"}]}}}}


def env_of(obj, container):
    item = [c for c in obj["spec"]["template"]["spec"]["containers"] if c["name"] == container][0]
    return dict((e["name"], e.get("value")) for e in item.get("env") or [])


def test_sets_gateway_and_ui_principals_on_the_controller_and_kfam():
    out = m.profile_controller_principals(
        [deployment(env=[{"name": "USERID_HEADER", "value": "kubeflow-userid"},
                         {"name": "ISTIO_INGRESS_GATEWAY_PRINCIPAL", "value": "old"}])],
        {"ISTIO_INGRESS_GATEWAY_PRINCIPAL": GATEWAY, "KFP_UI_PRINCIPAL": UI})
    assert env_of(out[0], "manager") == {"USERID_HEADER": "kubeflow-userid",
                                         "ISTIO_INGRESS_GATEWAY_PRINCIPAL": GATEWAY, "KFP_UI_PRINCIPAL": UI}
    # KFAM writes the contributors' policies with the same principals
    assert env_of(out[0], "kfam") == {"ISTIO_INGRESS_GATEWAY_PRINCIPAL": GATEWAY, "KFP_UI_PRINCIPAL": UI}


def test_leaves_other_deployments_and_the_input_alone():
    other = deployment("ml-pipeline-ui")
    source = deployment()
    out = m.profile_controller_principals([other, source], {"ISTIO_INGRESS_GATEWAY_PRINCIPAL": GATEWAY})
    assert out[0] == other and env_of(out[0], "manager") == {}
    assert env_of(source, "manager") == {}, "the rendered input is not modified"


def test_an_empty_value_keeps_upstreams_default():
    out = m.profile_controller_principals([deployment()], {"ISTIO_INGRESS_GATEWAY_PRINCIPAL": "", "KFP_UI_PRINCIPAL": UI})
    assert env_of(out[0], "manager") == {"KFP_UI_PRINCIPAL": UI}


@pytest.mark.parametrize("principals, message", [
    ({"GATEWAY": GATEWAY}, r"components_profile_principals.GATEWAY: is not a principal the profile controller"),
    ({"KFP_UI_PRINCIPAL": "ml-pipeline-ui"}, r"components_profile_principals.KFP_UI_PRINCIPAL: 'ml-pipeline-ui' is not"),
    ([GATEWAY], r"components_profile_principals: must be a mapping"),
])
def test_bad_principals_are_refused_naming_the_field(principals, message):
    with pytest.raises(DefinitionError, match=message):
        m.profile_controller_principals([deployment()], principals)


@pytest.mark.parametrize("flavour", ["ossm2", "ossm3"])
def test_assemble_gives_the_controller_the_principal_of_the_gateway_the_mesh_role_runs(flavour):
    principal = mesh.gateway_info({"flavour": flavour})["principal"]
    result = m.assemble({"profiles": [deployment()]},
                        {"principals": {"ISTIO_INGRESS_GATEWAY_PRINCIPAL": principal, "KFP_UI_PRINCIPAL": UI}})
    found = [o for o in result["objects"] if o["kind"] == "Deployment"][0]
    assert env_of(found, "manager")["ISTIO_INGRESS_GATEWAY_PRINCIPAL"] == principal
