"""Auth option merging: module options win over the K8S_AUTH_* environment."""
import os

import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import auth_from


def test_environment_fills_what_options_leave_out():
    env = {"K8S_AUTH_HOST": "https://h", "K8S_AUTH_API_KEY": "t", "K8S_AUTH_VERIFY_SSL": "false",
           "K8S_AUTH_SSL_CA_CERT": "/ca"}
    assert auth_from({"host": None}, env) == {"host": "https://h", "api_key": "t", "validate_certs": False,
                                              "ca_cert": "/ca"}


def test_options_win():
    assert auth_from({"kubeconfig": "/k", "context": "c"}, {"K8S_AUTH_KUBECONFIG": "/other"}) == \
        {"kubeconfig": "/k", "context": "c"}


# Environments as AWX credentials and users set them; kubernetes.core's own reading of each is the oracle.
ENVIRONMENTS = [
    {"K8S_AUTH_HOST": "https://h", "K8S_AUTH_API_KEY": "t", "K8S_AUTH_VERIFY_SSL": "False", "K8S_AUTH_SSL_CA_CERT": "/ca"},
    {"K8S_AUTH_HOST": "https://h", "K8S_AUTH_VERIFY_SSL": "True"},
    {"K8S_AUTH_HOST": "https://h", "K8S_AUTH_VALIDATE_CERTS": "no"},
    {"K8S_AUTH_HOST": "https://h", "K8S_AUTH_VALIDATE_CERTS": "false", "K8S_AUTH_VERIFY_SSL": "yes"},
    {"K8S_AUTH_HOST": "https://h", "K8S_AUTH_VERIFY_SSL": "off"},
    {"K8S_AUTH_HOST": "https://h", "K8S_AUTH_VERIFY_SSL": "0"},
    {"K8S_AUTH_CA_CERT": "/a", "K8S_AUTH_SSL_CA_CERT": "/b", "K8S_AUTH_CLIENT_CERT": "/c", "K8S_AUTH_KEY_FILE": "/k"},
    {"K8S_AUTH_CERT_FILE": "/c2", "K8S_AUTH_CLIENT_KEY": "/k2", "K8S_AUTH_KUBECONFIG": "/kc", "K8S_AUTH_CONTEXT": "x"},
    {"K8S_AUTH_CA_CERT": "", "K8S_AUTH_SSL_CA_CERT": "/b", "K8S_AUTH_PROXY": "http://127.0.0.1:3128"},
]
# kubernetes.core's client name of each kfocp option (its args_common.AUTH_ARG_MAP)
CORE_NAME = {"kubeconfig": "kubeconfig", "context": "context", "host": "host", "api_key": "api_key",
             "ca_cert": "ssl_ca_cert", "client_cert": "cert_file", "client_key": "key_file",
             "validate_certs": "verify_ssl", "proxy": "proxy"}


def assert_read_as_kubernetes_core_reads_it(env, monkeypatch):
    """kfocp's auth_from and kubernetes.core's _create_auth_spec give the same settings for `env`
    (the process's K8S_AUTH_* variables replaced by it)."""
    from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import _create_auth_spec

    for name in [n for n in os.environ if n.startswith("K8S_AUTH_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    core = _create_auth_spec()
    ours = auth_from({}, env)
    assert dict((CORE_NAME[k], v) for k, v in ours.items()) == \
        dict((k, v) for k, v in core.items() if k in CORE_NAME.values())
    return ours


@pytest.mark.parametrize("env", ENVIRONMENTS)
def test_the_environment_is_read_as_kubernetes_core_reads_it(env, monkeypatch):
    assert_read_as_kubernetes_core_reads_it(env, monkeypatch)
