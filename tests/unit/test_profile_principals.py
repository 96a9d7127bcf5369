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


def test_the_default_principals_name_the_accounts_this_installs_components_run_as():
    """The profile controller admits the owner's requests from the pipelines UI and the notebook
    controller's kernel checks by principal (standins.authorization_policy_spec): in another
    namespace than upstream's kubeflow they must name that namespace's accounts."""
    from pathlib import Path

    import yaml
    import standins
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import authz
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import settings
    root = Path(__file__).resolve().parents[2]
    env = settings.components_settings({"components_namespace": "kf", "service_mesh_gateway_info": {
        "principal": GATEWAY}})["components_profile_principals"]
    tree = root / "tests/fixtures/manifests/applications/jupyter/notebook-controller/upstream/overlays/kubeflow"
    account = [d for d in yaml.safe_load_all((tree / "deployment.yaml").read_text())
               if d["kind"] == "Deployment"][0]["spec"]["template"]["spec"]["serviceAccountName"]
    policy = {"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
              "metadata": {"name": standins.AUTHZ_NAME, "namespace": "team"},
              "spec": standins.authorization_policy_spec("team", "alice", env)}
    kernels = {"principal": "cluster.local/ns/kf/sa/%s" % account, "headers": {}, "path": "/notebook/team/nb/api/kernels",
               "method": "GET", "port": 8888}
    assert authz.decide([policy], kernels, "team")[0] is True
    ui = {"principal": "cluster.local/ns/kf/sa/ml-pipeline-ui", "headers": {"kubeflow-userid": "alice"}, "path": "/",
          "method": "GET", "port": 8888}
    assert authz.decide([policy], ui, "team")[0] is True
