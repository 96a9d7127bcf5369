"""Table tests of the ingress auth builder."""
import base64
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import auth, mesh, pod_security
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError
import judges

SECRETS = {"client_secret": "c" * 48, "cookie_secret": "k" * 32}
LUA = "function envoy_on_request(h) end"


def build(flavour="ossm2", **settings):
    settings.setdefault("host", "kubeflow.apps.example.com")
    gateway = mesh.gateway_info({"flavour": flavour})
    return dict((o["kind"], o) for o in auth.objects(settings, gateway, SECRETS, LUA))


def test_oauth_proxy_in_front_of_the_gateway_http_port_with_the_sar():
    objs = build()
    container = objs["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    args = container["args"]
    assert "--provider=openshift" in args
    assert "--upstream=http://kubeflow-ingressgateway.kubeflow-mesh.svc.cluster.local:80" in args
    sar = [a for a in args if a.startswith("--openshift-sar=")][0].split("=", 1)[1]
    # a dedicated check in the proxy's namespace, not `get pods` in kubeflow that no tenant holds,
    # as OpenShift reads it (oauth-proxy posts the flag as it is): nothing of it dropped
    review, dropped = judges.openshift_sar(sar, "alice", ["system:authenticated:oauth"])
    assert review["spec"]["resourceAttributes"] == {"namespace": "kubeflow-mesh", "group": "kfocp.io",
                                                    "resource": "kubeflow", "name": "users", "verb": "access"}
    assert dropped == []
    assert "--client-id=kubeflow" in args
    assert not any(SECRETS["client_secret"] in a for a in args)  # read from a file, never on the command line


@pytest.mark.parametrize("given, asked", [
    ({"namespace": "ml", "group": "", "resource": "pods", "name": "", "verb": "list"},
     {"namespace": "ml", "resource": "pods", "verb": "list"}),
    ({"group": "apps", "resource": "deployments", "name": "dashboard", "verb": "get"},
     {"namespace": "kubeflow-mesh", "group": "apps", "resource": "deployments", "name": "dashboard", "verb": "get"}),
])
def test_sar_is_configurable_and_openshift_asks_what_the_role_grants(given, asked):
    objs = build(sar=given)
    args = objs["Deployment"]["spec"]["template"]["spec"]["containers"][0]["args"]
    sar = [a for a in args if a.startswith("--openshift-sar=")][0].split("=", 1)[1]
    review, dropped = judges.openshift_sar(sar)
    assert review["spec"]["resourceAttributes"] == asked and dropped == []
    rule = objs["Role"]["rules"][0]
    assert (rule["apiGroups"], rule["resources"], rule["verbs"], rule.get("resourceNames", [""])) == (
        [asked.get("group", "")], [asked["resource"]], [asked["verb"]], [asked.get("name", "")])


def test_the_access_review_is_granted_to_the_users_groups_and_nothing_more():
    objs = build()
    role, binding = objs["Role"], objs["RoleBinding"]
    assert role["metadata"] == {"name": "kubeflow-oauth-proxy-users", "namespace": "kubeflow-mesh"}
    assert role["rules"] == [{"apiGroups": ["kfocp.io"], "resources": ["kubeflow"], "resourceNames": ["users"],
                              "verbs": ["access"]}]
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group",
                                    "name": "system:authenticated:oauth"}]
    groups = build(users_groups=["kubeflow-users", "ml"])["RoleBinding"]["subjects"]
    assert [g["name"] for g in groups] == ["kubeflow-users", "ml"]
    assert "Role" not in build(users_groups=[]) and "RoleBinding" not in build(users_groups=[])


@pytest.mark.parametrize("flavour", ["ossm2", "ossm3"])
def test_only_the_proxy_pods_reach_the_gateway_pods(flavour):
    policy = build(flavour)["NetworkPolicy"]
    gateway = mesh.gateway_info({"flavour": flavour})
    assert policy["metadata"]["namespace"] == gateway["namespace"]
    assert policy["spec"]["podSelector"] == {"matchLabels": gateway["selector"]}
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert policy["spec"]["ingress"] == [{"from": [{"podSelector": {"matchLabels": {"app": "kubeflow-oauth-proxy"}}}]}]
    elsewhere = build(flavour, namespace="kubeflow-auth")["NetworkPolicy"]["spec"]["ingress"][0]["from"][0]
    assert elsewhere["namespaceSelector"] == {"matchLabels": {"kubernetes.io/metadata.name": "kubeflow-auth"}}
    assert "NetworkPolicy" not in build(flavour, gateway_policy=False)


def test_the_gateway_policy_is_refused_where_the_mesh_operator_opens_the_gateway_to_every_pod():
    gateway = mesh.gateway_info({"flavour": "ossm2", "ossm2": {"manage_network_policy": True}})
    settings = {"host": "kubeflow.apps.example.com"}
    with pytest.raises(DefinitionError, match="auth_gateway_policy.*manage_network_policy: false"):
        auth.check(settings, gateway)
    assert auth.check(dict(settings, gateway_policy=False), gateway)["gateway_policy"] is False
    assert auth.check(settings, mesh.gateway_info({"flavour": "ossm2"}))["gateway_policy"] is True


def test_oauth_client_secret_and_reencrypt_route_with_serving_cert():
    objs = build()
    client = objs["OAuthClient"]
    assert client["secret"] == SECRETS["client_secret"]
    assert client["redirectURIs"] == ["https://kubeflow.apps.example.com"]
    secret = objs["Secret"]
    assert base64.b64decode(secret["data"]["cookie_secret"]).decode() == SECRETS["cookie_secret"]
    assert objs["Route"]["spec"]["tls"]["termination"] == "reencrypt"
    assert objs["Route"]["spec"]["host"] == "kubeflow.apps.example.com"
    tls = objs["Service"]["metadata"]["annotations"][auth.SERVING_CERT]
    volumes = objs["Deployment"]["spec"]["template"]["spec"]["volumes"]
    assert {"name": "tls", "secret": {"secretName": tls}} in volumes


@pytest.mark.parametrize("flavour, api", [("ossm2", "networking.istio.io/v1alpha3"),
                                          ("ossm3", "networking.istio.io/v1alpha3")])
def test_envoy_filter_on_the_gateway_in_gateway_context(flavour, api):
    ef = build(flavour)["EnvoyFilter"]
    assert ef["apiVersion"] == api == mesh.istio_api_versions(flavour)["EnvoyFilter"]
    assert ef["metadata"]["namespace"] == "kubeflow-mesh"
    assert ef["spec"]["workloadSelector"]["labels"] == {"istio": "ingressgateway",
                                                        "kfocp.io/gateway": "kubeflow-ingressgateway"}
    patch = ef["spec"]["configPatches"][0]
    assert patch["match"]["context"] == "GATEWAY" and patch["applyTo"] == "HTTP_FILTER"
    assert patch["patch"]["value"]["typed_config"]["inlineCode"] == LUA


@pytest.mark.parametrize("settings, message", [
    ({"host": ""}, r"auth_host: is required"),
    ({"host": "Bad_Host"}, r"auth_host: 'Bad_Host' is not a DNS subdomain"),
    ({"sar": {"verb": ""}}, r"auth_sar.verb: is required"),
    ({"sar": {"subresource": "x"}}, r"auth_sar.subresource: is not a field"),
    ({"users_groups": "kubeflow-users"}, r"auth_users_groups: must be a list"),
    ({"extra_args": ["skip"]}, r"auth_extra_args: must be a list of --flag=value"),
    ({"colour": "x"}, r"auth_colour: is not a known setting"),
])
def test_bad_settings_name_the_field(settings, message):
    settings = dict({"host": "kubeflow.apps.example.com"}, **settings)
    with pytest.raises(DefinitionError, match=message):
        auth.objects(settings, mesh.gateway_info({}), SECRETS, LUA)


def test_bad_secrets_and_lua_are_refused():
    gateway = mesh.gateway_info({})
    with pytest.raises(DefinitionError, match="secrets.cookie_secret: must be a string of at least 16"):
        auth.objects({"host": "a.b"}, gateway, dict(SECRETS, cookie_secret="x" * 15), LUA)
    with pytest.raises(DefinitionError, match="lua_source: must be Lua code"):
        auth.objects({"host": "a.b"}, gateway, SECRETS, "")


def test_an_unknown_gateway_names_the_fix():
    with pytest.raises(DefinitionError, match="auth_gateway: is not known. Run the service_mesh role"):
        auth.objects({"host": "a.b"}, {}, SECRETS, LUA)
    with pytest.raises(DefinitionError, match="auth_gateway.selector: is required"):
        auth.objects({"host": "a.b"}, {"namespace": "a", "service": "b", "api_versions": {}}, SECRETS, LUA)


def test_a_namespace_of_its_own_admits_exactly_the_proxy_pods():
    objs = build(namespace="kubeflow-auth")
    labels = objs["Namespace"]["metadata"]["labels"]
    proxy = objs["Deployment"]["spec"]["template"]
    level = pod_security.least_level(proxy["spec"], proxy.get("metadata"), openshift=True)[0]
    assert labels == pod_security.labels(level)
    assert labels["pod-security.kubernetes.io/enforce"] == "baseline"  # its pods set no seccomp profile
    assert "Namespace" not in build()  # the gateway's namespace is the mesh's: never labelled here


@pytest.mark.parametrize("arg", ["--skip-auth-regex=^/healthz$", "--bypass-auth-for=^/api", "--bypass-auth-except-for=^/x",
                                 "--skip-auth-preflight=true", "--htpasswd-file=/etc/htpasswd",
                                 "--pass-user-headers=false", "--pass-basic-auth=false"])
def test_flags_that_let_client_identity_headers_through_are_refused(arg):
    # oauth-proxy (oauthproxy.go ServeHTTP) passes a request on a skipped path upstream as the
    # client sent it, and an htpasswd session has no e-mail to overwrite X-Forwarded-Email with
    with pytest.raises(DefinitionError, match="auth_extra_args: %s would let a request reach the gateway with identity "
                                              "headers the client chose" % arg.split("=")[0]):
        auth.objects({"host": "a.b", "extra_args": ["--cookie-expire=8h", arg]}, mesh.gateway_info({}), SECRETS, LUA)
    assert auth.objects({"host": "a.b", "extra_args": ["--cookie-expire=8h"]}, mesh.gateway_info({}), SECRETS, LUA)


# openshift/oauth-proxy options.go at 2b9ee007290b0e1cb85737f3b37075343f9f4857: addPadding and
# secretBytes, verbatim in tests/fixtures/oauth-proxy/secret_bytes.go, make the AES key of the cookie
# secret, and Validate (l.276-298) accepts 16, 24 or 32 bytes when --pass-access-token or a
# --cookie-refresh other than 0 makes it create a cipher. Run by Go, so that Go's own base64
# decoder decides.
OAUTH_PROXY_SECRET_BYTES = Path(__file__).resolve().parents[1] / "fixtures" / "oauth-proxy" / "secret_bytes.go"
COOKIE_SECRETS = ["k" * 32, "k" * 16, "k" * 24, "x" * 20, base64.urlsafe_b64encode(b"0123456789abcdef").decode().rstrip("="),
                  base64.urlsafe_b64encode(b"0123456789abcdef01234567").decode(), "a+b/" * 6, "Zm9v" * 4 + "!", "k" * 43]


def oauth_proxy_key_sizes(tmp_path, secrets):
    if not shutil.which("go"):
        pytest.skip("no Go toolchain to run oauth-proxy's secretBytes")
    source = tmp_path / "main.go"
    source.write_text(OAUTH_PROXY_SECRET_BYTES.read_text())
    env = dict(os.environ, GOFLAGS="-mod=mod", GO111MODULE="off", CGO_ENABLED="0")
    proc = subprocess.run(["go", "run", str(source)], input="\n".join(secrets) + "\n", capture_output=True,
                          text=True, env=env, cwd=str(tmp_path), timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr
    return [int(n) for n in proc.stdout.split()]


def test_the_cookie_secret_is_checked_as_oauth_proxy_checks_it(tmp_path):
    sizes = oauth_proxy_key_sizes(tmp_path, COOKIE_SECRETS)
    assert [len(auth.cookie_secret_bytes(s)) for s in COOKIE_SECRETS] == sizes
    gateway = mesh.gateway_info({})
    for secret, size in zip(COOKIE_SECRETS, sizes):
        for flags in (["--pass-access-token"], ["--cookie-refresh=1h"]):
            settings = {"host": "a.b", "extra_args": flags}
            if size in (16, 24, 32):
                assert auth.objects(settings, gateway, dict(SECRETS, cookie_secret=secret), LUA)
            else:
                with pytest.raises(DefinitionError, match="secrets.cookie_secret: makes a key of %d bytes" % size):
                    auth.objects(settings, gateway, dict(SECRETS, cookie_secret=secret), LUA)
        # without a cipher oauth-proxy takes any secret: kfocp asks only for 16 characters or more
        assert auth.objects({"host": "a.b", "extra_args": ["--cookie-refresh=0s"]}, gateway,
                            dict(SECRETS, cookie_secret=secret), LUA)
    # the role generates 32 letters and digits: a 24-byte key
    assert sizes[0] == 24


# openshift/oauth-proxy at 2b9ee007290b0e1cb85737f3b37075343f9f4857: main.go l.79 defines
# --openshift-delegate-urls; providers/openshift/provider.go l.357 builds the authenticator only
# `if len(p.paths) > 0` (the delegate paths), and ValidateRequest (l.420-424) returns no session
# without one; oauthproxy.go l.794-803 then answers 403 (or the login redirect). Without that flag no
# bearer token is authenticated.
DELEGATE_FLAG = "--openshift-delegate-urls"
TOKEN_IDENTITY = re.compile(r"(?i)bearer token.{0,40}(x-forwarded-user|`User` is|of any name)")


def test_oauth_proxy_authenticates_no_bearer_token_and_nothing_claims_it_does():
    gateway = mesh.gateway_info({})
    args = auth.proxy_args({"host": "a.b"}, gateway)
    assert not [a for a in args if a.split("=", 1)[0] == DELEGATE_FLAG]
    with pytest.raises(DefinitionError, match="auth_extra_args: --openshift-delegate-urls would let bearer tokens in"):
        auth.objects({"host": "a.b", "extra_args": ['%s={"/":{"resource":"pods"}}' % DELEGATE_FLAG]}, gateway,
                     SECRETS, LUA)
    root = Path(__file__).resolve().parents[2]
    register = (root / "docs" / "contracts.md").read_text()
    oauth_proxy = register.split("## oauth-proxy", 1)[1].split("\n## ", 1)[0]
    for where, text in (("roles/auth/files/userid.lua", (root / "roles" / "auth" / "files" / "userid.lua").read_text()),
                        ("roles/auth/README.md", (root / "roles" / "auth" / "README.md").read_text()),
                        ("docs/contracts.md (oauth-proxy)", oauth_proxy)):
        claims = [line for line in text.splitlines() if TOKEN_IDENTITY.search(line)]
        assert claims == [], "%s describes a token identity oauth-proxy never establishes" % where
