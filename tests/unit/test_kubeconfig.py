"""kfocp's own credentials loader (plugins/module_utils/kubeconfig.py) held to the `kubernetes`
client's loaders: the same kubeconfig files and service-account mounts, read by both, give the
same server, TLS settings, client certificate and token; every other form is left to them."""
import base64
import os
import stat

import pytest
import yaml
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.config.incluster_config import InClusterConfigLoader

import cluster
from ansible_collections.kfocp.kubeflow.plugins.module_utils import kubeconfig
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client, KubeError, bearer


@pytest.fixture(scope="module")
def pem(tmp_path_factory):
    """A CA, a client certificate and key, as PEM bytes."""
    ca, cert, key = cluster.serving_certificate("api.test")
    return {"ca": ca, "cert": cert, "key": key}


def _b64(data):
    return base64.standard_b64encode(data).decode()


def _write(directory, user, cluster_fields, server="https://10.0.0.1:6443", extra_contexts=()):
    doc = {"apiVersion": "v1", "kind": "Config", "current-context": "main",
           "clusters": [{"name": "c", "cluster": dict(server=server, **cluster_fields)}],
           "users": [{"name": "u", "user": user}],
           "contexts": [{"name": "main", "context": {"cluster": "c", "user": "u"}}] + list(extra_contexts)}
    path = directory / "config"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


def _theirs(path, context=None):
    cfg = k8s_client.Configuration()
    k8s_config.load_kube_config(config_file=path, context=context, client_configuration=cfg, persist_config=False)
    return cfg


def _content(path):
    if path is None:
        return None
    with open(path, "rb") as handle:
        return handle.read()


def _token(cfg):
    """The Authorization header each client sends: the `kubernetes` client's auth_settings (its
    key for the token differs between 33.1 and 37.0), kfocp's client's `bearer`."""
    if isinstance(cfg, k8s_client.Configuration):
        return (cfg.auth_settings().get("BearerToken") or {}).get("value")
    return bearer(cfg)


def _view(cfg):
    """What a connection is made of: server, TLS, client certificate, token."""
    ca = getattr(cfg, "ca_cert_data", None)
    return {"host": cfg.host, "verify_ssl": cfg.verify_ssl, "tls_server_name": cfg.tls_server_name,
            "ca": ca.encode() if ca else _content(cfg.ssl_ca_cert), "cert": _content(cfg.cert_file),
            "key": _content(cfg.key_file), "token": _token(cfg), "proxy": cfg.proxy,
            "no_proxy": cfg.no_proxy}


def _cases(tmp_path, pem):
    (tmp_path / "certs").mkdir()
    for name in ("ca", "cert", "key"):
        (tmp_path / "certs" / name).write_bytes(pem[name])
    (tmp_path / "token").write_text("file-token")
    data = {"client-certificate-data": _b64(pem["cert"]), "client-key-data": _b64(pem["key"])}
    files = {"client-certificate": "certs/cert", "client-key": "certs/key"}  # relative to the kubeconfig
    return {
        "token and CA data": ({"token": "abc"}, {"certificate-authority-data": _b64(pem["ca"])}),
        "token file and files by relative paths": (dict(files, tokenFile="token"), {"certificate-authority": "certs/ca"}),
        "certificate data and a TLS server name": (data, {"certificate-authority-data": _b64(pem["ca"]),
                                                          "tls-server-name": "api.test"}),
        "verification off": ({"token": "abc"}, {"insecure-skip-tls-verify": True}),
        "verification on, said so": (dict(data, token="abc"),
                                     {"insecure-skip-tls-verify": False, "certificate-authority": "certs/ca"}),
        "a token wins over a token file": ({"token": "abc", "tokenFile": "token"}, {}),
        "data wins over a file": ({"client-certificate-data": _b64(pem["cert"]), "client-certificate": "certs/key",
                                   "client-key": "certs/key"}, {"certificate-authority": "certs/key",
                                                                "certificate-authority-data": _b64(pem["ca"])}),
        "no user": ({}, {}),
    }


CASES = ["token and CA data", "token file and files by relative paths", "certificate data and a TLS server name",
         "verification off", "verification on, said so", "a token wins over a token file", "data wins over a file",
         "no user"]


@pytest.mark.parametrize("case", CASES)
def test_a_kubeconfig_reads_as_the_kubernetes_loader_reads_it(tmp_path, pem, case):
    user, cluster_fields = _cases(tmp_path, pem)[case]
    path = _write(tmp_path, user, cluster_fields)
    ours = kubeconfig.from_file(path)
    assert isinstance(ours, kubeconfig.Config)
    assert _view(ours) == _view(_theirs(path))


@pytest.mark.parametrize("env", [{"HTTPS_PROXY": "http://a:1"}, {"HTTP_PROXY": "http://b:2", "NO_PROXY": "10.0.0.1"},
                                 {"ALL_PROXY": "http://c:3", "no_proxy": ".svc"}])
def test_the_environment_gives_the_proxy_as_it_gives_it_to_the_kubernetes_client(tmp_path, monkeypatch, env):
    monkeypatch.setenv("HTTPS_PROXY", "http://probe:1")
    if k8s_client.Configuration(host="https://h").proxy is None:
        pytest.skip("this kubernetes client (%s) takes no proxy from the environment (33.1, the ansible-operator "
                    "image's); kfocp's client takes it as 37.0 does" % k8s_client.__version__)
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "all_proxy",
                 "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    path = _write(tmp_path, {"token": "abc"}, {"insecure-skip-tls-verify": True})
    assert _view(kubeconfig.from_file(path)) == _view(_theirs(path))


@pytest.mark.parametrize("params", [{}, {"proxy": "http://proxy:3128"}, {"context": "main", "proxy": "http://p:1"}],
                         ids=["read by kfocp", "read by the kubernetes loader", "a context, by the kubernetes loader"])
def test_the_client_sends_the_token_the_kubernetes_client_sends(tmp_path, params):
    """The Authorization header of kfocp's client, whichever loader read the kubeconfig, is the one
    the installed `kubernetes` client sends (its auth_settings): the client keeps the token under
    "BearerToken" from 37.0 on, under "authorization" before (33.1, the ansible-operator image's)."""
    path = _write(tmp_path, {"token": "abc"}, {"insecure-skip-tls-verify": True})
    client = Client.from_params(dict(params, kubeconfig=path))
    assert client._headers("application/json", None)["Authorization"] == \
        _theirs(path).auth_settings()["BearerToken"]["value"] == "Bearer abc"


def test_a_plain_http_server_gets_no_certificates_from_either(tmp_path, pem):
    user, cluster_fields = _cases(tmp_path, pem)["token file and files by relative paths"]
    path = _write(tmp_path, user, cluster_fields, server="http://127.0.0.1:8080/")
    assert _view(kubeconfig.from_file(path)) == _view(_theirs(path))
    assert kubeconfig.from_file(path).cert_file is None and kubeconfig.from_file(path).host == "http://127.0.0.1:8080"


def test_a_context_named_is_read_instead_of_the_current_one(tmp_path, pem):
    other = {"name": "other", "context": {"cluster": "c"}}
    path = _write(tmp_path, {"token": "abc"}, {}, extra_contexts=[other])
    assert _view(kubeconfig.from_file(path, "other")) == _view(_theirs(path, "other"))
    assert kubeconfig.from_file(path, "other").get_api_key_with_prefix("BearerToken") is None


@pytest.mark.parametrize("user,cluster_fields", [
    ({"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "true"}}, {}),
    ({"auth-provider": {"name": "oidc", "config": {}}}, {}),
    ({"username": "u", "password": "p"}, {}),
    ({"token": "abc", "as": "someone"}, {}),
    ({"token": "abc"}, {"proxy-url": "http://proxy:3128"}),
    ({"token": "abc"}, {"extensions": []}),
])
def test_other_forms_are_left_to_the_kubernetes_loaders(tmp_path, user, cluster_fields):
    path = _write(tmp_path, user, cluster_fields)
    assert kubeconfig.from_file(path) is None
    assert kubeconfig.load({"kubeconfig": path}) is None


def test_several_files_a_dict_a_proxy_or_an_unknown_context_are_left_to_them(tmp_path):
    path = _write(tmp_path, {"token": "abc"}, {})
    assert kubeconfig.load({"kubeconfig": path}) is not None
    assert kubeconfig.load({}, environ={"KUBECONFIG": path + os.pathsep + path}) is None
    assert kubeconfig.load({"kubeconfig": yaml.safe_load(open(path))}) is None
    assert kubeconfig.load({"kubeconfig": path, "proxy": "http://proxy:3128"}) is None
    assert kubeconfig.load({"kubeconfig": path, "context": "nowhere"}) is None


def test_the_client_reads_the_common_forms_without_importing_kubernetes(tmp_path):
    """A module run with a token kubeconfig: the `kubernetes` package is not imported."""
    import subprocess
    import sys
    path = _write(tmp_path, {"token": "abc"}, {"insecure-skip-tls-verify": True})
    code = ("import sys; from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client; "
            "c = Client.from_params({'kubeconfig': %r}); print(c.host, 'kubernetes' in sys.modules)" % path)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))).stdout.split()
    assert out == ["https://10.0.0.1:6443", "False"]


def test_a_missing_file_names_it_before_any_request(tmp_path):
    path = _write(tmp_path, {"token": "abc"}, {"certificate-authority": "nowhere/ca.crt"})
    with pytest.raises(KubeError, match="cannot load Kubernetes credentials: File does not exist: .*nowhere/ca.crt"):
        Client.from_params({"kubeconfig": path})


def test_certificate_data_is_written_where_only_this_user_can_read_it(tmp_path, pem):
    path = _write(tmp_path, {"client-certificate-data": _b64(pem["cert"]), "client-key-data": _b64(pem["key"])},
                  {"certificate-authority-data": _b64(pem["ca"])})
    cfg = kubeconfig.from_file(path)
    assert stat.S_IMODE(os.stat(cfg.key_file).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(cfg.key_file)).st_mode) == 0o700
    assert _content(cfg.key_file) == pem["key"]
    again = kubeconfig.from_file(path)
    assert (again.cert_file, again.key_file) == (cfg.cert_file, cfg.key_file), "written once, then reused"


@pytest.fixture
def mount(tmp_path, pem):
    (tmp_path / "token").write_text("first")
    (tmp_path / "ca.crt").write_bytes(pem["ca"])
    return str(tmp_path / "token"), str(tmp_path / "ca.crt")


@pytest.mark.parametrize("host", ["10.96.0.1", "fd00::1"])
def test_the_service_account_reads_as_the_kubernetes_loader_reads_it(mount, host):
    environ = {"KUBERNETES_SERVICE_HOST": host, "KUBERNETES_SERVICE_PORT": "443"}
    theirs = k8s_client.Configuration()
    InClusterConfigLoader(token_filename=mount[0], cert_filename=mount[1], environ=environ).load_and_set(theirs)
    ours = kubeconfig.load({}, environ=environ, token_path=mount[0], ca_path=mount[1])
    assert _view(ours) == _view(theirs)


def test_the_service_account_token_is_read_again_as_the_kubelet_rotates_it(mount, monkeypatch):
    environ = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}
    cfg = kubeconfig.in_cluster(environ, *mount)
    assert cfg.get_api_key_with_prefix("BearerToken") == "bearer first"
    with open(mount[0], "w") as handle:
        handle.write("second")
    assert cfg.get_api_key_with_prefix("BearerToken") == "bearer first", "read again only after a while"
    monkeypatch.setattr(kubeconfig, "TOKEN_REFRESH", 0)
    assert cfg.get_api_key_with_prefix("BearerToken") == "bearer second"


def test_outside_a_pod_there_is_no_service_account(mount):
    assert kubeconfig.load({}, environ={}, token_path=mount[0], ca_path=mount[1]) is None
