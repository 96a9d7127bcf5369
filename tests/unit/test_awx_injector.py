"""AWX's built-in "OpenShift or Kubernetes API Bearer Token" credential injects K8S_AUTH_*
variables; kfocp's client reads each of them as kubernetes.core reads them (kubernetes.core's own
`_create_auth_spec` is the oracle), for every shape of the credential's inputs."""
import os

import pytest

from test_client import assert_read_as_kubernetes_core_reads_it


class _Credential:
    """The part of AWX's Credential that the injector uses: get_input() and inputs."""

    def __init__(self, inputs):
        self.inputs = inputs

    def get_input(self, name, default=None):
        return self.inputs.get(name, default)


def kubernetes_bearer_token(cred, env, private_data_dir):
    """ansible/awx, awx/main/models/credential/injectors.py, kubernetes_bearer_token, at
    7089c5f06e9e9fb026bd1aaa8e1ded2f819b0dd8, as written there but for the CA file it writes
    (named here, not made with tempfile)."""
    env['K8S_AUTH_HOST'] = cred.get_input('host', default='')
    env['K8S_AUTH_API_KEY'] = cred.get_input('bearer_token', default='')
    if cred.get_input('verify_ssl') and 'ssl_ca_cert' in cred.inputs:
        env['K8S_AUTH_VERIFY_SSL'] = 'True'
        path = os.path.join(private_data_dir, "ca.crt")
        with open(path, 'w') as f:
            f.write(cred.get_input('ssl_ca_cert'))
        env['K8S_AUTH_SSL_CA_CERT'] = path
    else:
        env['K8S_AUTH_VERIFY_SSL'] = 'False'


@pytest.mark.parametrize("inputs, verified", [
    ({"host": "https://api.example.com:6443", "bearer_token": "t", "verify_ssl": True, "ssl_ca_cert": "PEM"}, True),
    ({"host": "https://api.example.com:6443", "bearer_token": "t", "verify_ssl": True}, False),
    ({"host": "https://api.example.com:6443", "bearer_token": "t", "verify_ssl": False, "ssl_ca_cert": "PEM"}, False),
    ({"host": "https://api.example.com:6443", "bearer_token": "t"}, False),
])
def test_what_awx_injects_is_read_as_kubernetes_core_reads_it(inputs, verified, tmp_path, monkeypatch):
    env = {}
    kubernetes_bearer_token(_Credential(inputs), env, str(tmp_path))
    ours = assert_read_as_kubernetes_core_reads_it(env, monkeypatch)
    # without a CA, AWX's credential turns verification off, in kubernetes.core and in kfocp alike
    assert ours["validate_certs"] is verified
    assert ours["host"] == inputs["host"] and ours["api_key"] == "t"
