"""The auth role after the service_mesh role, against the real API server."""
import base64

import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh as mesh_builder
from helpers import ROOT, oauth_proxy_lets_in

ROLES = str(ROOT / "tests" / "fixtures" / "playbooks" / "roles.yml")


def get(kube, api_version, kind, name, namespace=None):
    return kube.get(kube.resource(api_version, kind), name, namespace)


def auth_vars(instance, **more):
    extra = {"kfocp_instance": instance, "kfocp_roles": ["kfocp.kubeflow.service_mesh", "kfocp.kubeflow.auth"],
             "service_mesh_flavour": "ossm2", "service_mesh_namespace": instance, "service_mesh_olm": False, "service_mesh_wait": False,
             "auth_host": "kubeflow.apps.example.com", "auth_client_id": instance}
    extra.update(more)
    return extra


def test_auth_objects_stable_secret_never_logged(playbook, kube, instance):
    extra = auth_vars(instance)
    first = playbook(ROLES, extra)
    assert first.rc == 0, first.stdout
    secret = get(kube, "v1", "Secret", "kubeflow-oauth", instance)
    client_secret = base64.b64decode(secret["data"]["client_secret"]).decode()
    assert len(client_secret) == 48
    client = get(kube, "oauth.openshift.io/v1", "OAuthClient", instance)
    assert client["secret"] == client_secret and client["redirectURIs"] == ["https://kubeflow.apps.example.com"]
    assert client_secret not in first.stdout
    for event in first.events:  # not in any event either (what AWX and the operator log)
        assert client_secret not in str(event.get("event_data", {}).get("res", "")), event.get("event")
    route = get(kube, "route.openshift.io/v1", "Route", "kubeflow-oauth-proxy", instance)
    assert route["spec"]["tls"]["termination"] == "reencrypt"
    service = get(kube, "v1", "Service", "kubeflow-oauth-proxy", instance)
    assert service["metadata"]["annotations"]["service.beta.openshift.io/serving-cert-secret-name"]
    args = get(kube, "apps/v1", "Deployment", "kubeflow-oauth-proxy", instance)["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--upstream=http://kubeflow-ingressgateway.%s.svc.cluster.local:80" % instance in args
    # oauth-proxy asks OpenShift the review of --openshift-sar: the Role kfocp grants lets in the
    # users group, and only it
    sar = dict(a.split("=", 1) for a in args if "=" in a)["--openshift-sar"]
    assert oauth_proxy_lets_in(kube, sar, "alice", ["system:authenticated:oauth"]) == (
        True, 'RBAC: allowed by RoleBinding "kubeflow-oauth-proxy-users/%s" of Role "kubeflow-oauth-proxy-users" '
        'to Group "system:authenticated:oauth"' % instance)
    assert oauth_proxy_lets_in(kube, sar, "robot", [])[0] is False
    ef = get(kube, "networking.istio.io/v1alpha3", "EnvoyFilter", "kfocp-kubeflow-userid", instance)
    lua = ef["spec"]["configPatches"][0]["patch"]["value"]["typed_config"]["inlineCode"]
    assert 'headers:remove("kubeflow-userid")' in lua
    assert ef["spec"]["configPatches"][0]["match"]["context"] == "GATEWAY"

    # the secret is generated once: later runs read it back, and change nothing
    again = playbook(ROLES, extra)
    assert again.rc == 0 and again.count("changed") == 0, again.stdout
    check = playbook(ROLES, extra, check=True, diff=True)
    assert check.rc == 0 and check.count("changed") == 0, check.stdout
    assert client_secret not in check.stdout
    assert get(kube, "oauth.openshift.io/v1", "OAuthClient", instance)["secret"] == client_secret

    absent = playbook(ROLES, dict(extra, auth_state="absent", kfocp_roles=["kfocp.kubeflow.auth"]))
    assert absent.rc == 0, absent.stdout
    assert get(kube, "oauth.openshift.io/v1", "OAuthClient", instance) is None
    assert playbook("uninstall", {"kfocp_instance": instance}).rc == 0


def test_missing_host_fails_before_any_change_and_names_the_field(playbook, kube, instance):
    result = playbook(ROLES, auth_vars(instance, auth_host="", kfocp_roles=["kfocp.kubeflow.auth"],
                                       auth_gateway={"namespace": instance, "service": "gw",
                                                     "selector": {"istio": "gw"},
                                                     "api_versions": {"EnvoyFilter": "networking.istio.io/v1alpha3"}}))
    assert result.rc != 0
    assert "auth_host: is required" in result.stdout
    assert get(kube, "oauth.openshift.io/v1", "OAuthClient", instance) is None


@pytest.mark.parametrize("flavour", ["ossm3", "external"])
def test_the_same_auth_in_front_of_every_mesh_flavour(playbook, kube, instance, flavour):
    """ossm2 is the flavour of the test above: the proxy, its Route and the header rule are the
    same in front of a Service Mesh 3 gateway and of an existing Istio's."""
    if flavour == "ossm3":
        mesh = {"service_mesh_ossm3": {"name": instance, "cni_namespace": instance + "-cni"}}
        gateway_ns, service = instance, "kubeflow-ingressgateway"
    else:
        mesh = {"service_mesh_external": {"namespace": "istio-system", "gateway": "istio-ingressgateway"}}
        gateway_ns, service = "istio-system", "istio-ingressgateway"
    extra = auth_vars(instance, service_mesh_flavour=flavour, **mesh)
    first = playbook(ROLES, extra)
    assert first.rc == 0, first.stdout
    args = get(kube, "apps/v1", "Deployment", "kubeflow-oauth-proxy", gateway_ns)["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--upstream=http://%s.%s.svc.cluster.local:80" % (service, gateway_ns) in args
    assert get(kube, "route.openshift.io/v1", "Route", "kubeflow-oauth-proxy", gateway_ns)["spec"]["tls"]["termination"] == \
        "reencrypt"
    ef = get(kube, "networking.istio.io/v1alpha3", "EnvoyFilter", "kfocp-kubeflow-userid", gateway_ns)
    assert ef["spec"]["configPatches"][0]["match"]["context"] == "GATEWAY"
    settings = dict((key[len("service_mesh_"):], value) for key, value in mesh.items())
    assert ef["spec"]["workloadSelector"]["labels"] == mesh_builder.gateway_info(dict(settings, flavour=flavour))["selector"]
    assert 'headers:remove("kubeflow-userid")' in ef["spec"]["configPatches"][0]["patch"]["value"]["typed_config"]["inlineCode"]
    again = playbook(ROLES, extra)
    assert again.rc == 0 and again.count("changed") == 0, again.stdout
    assert playbook("uninstall", {"kfocp_instance": instance}).rc == 0
    assert get(kube, "oauth.openshift.io/v1", "OAuthClient", instance) is None
    if flavour == "external":
        assert get(kube, "v1", "Namespace", "istio-system") is not None  # the mesh's, never kfocp's


def test_a_failed_apply_says_why_and_still_shows_no_secret(playbook, kube, instance):
    """The apply task carries the OAuth secrets, which the module masks: no no_log is needed, so a
    failure names the object and the reason."""
    kube.apply(kube.resource("oauth.openshift.io/v1", "OAuthClient"),
               {"apiVersion": "oauth.openshift.io/v1", "kind": "OAuthClient", "metadata": {"name": instance},
                "secret": "someone-elses", "grantMethod": "auto"}, "someone")
    try:
        result = playbook(ROLES, auth_vars(instance))
        assert result.rc != 0
        text = " ".join(result.stdout.split())
        assert "OAuthClient %s: already exists and was created by someone else" % instance in text, result.stdout
        assert "censored" not in text
        # the Secret is applied in the same call, beside the refused OAuthClient
        secret = get(kube, "v1", "Secret", "kubeflow-oauth", instance)
        client_secret = base64.b64decode(secret["data"]["client_secret"]).decode()
        assert client_secret not in result.stdout
        assert secret["data"]["client_secret"] not in result.stdout
        for event in result.events:
            assert client_secret not in str(event.get("event_data", {}))
    finally:
        kube.delete(kube.resource("oauth.openshift.io/v1", "OAuthClient"), instance)
        assert playbook("uninstall", {"kfocp_instance": instance}).rc == 0
