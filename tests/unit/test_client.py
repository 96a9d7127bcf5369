"""Auth option merging: module options win over the K8S_AUTH_* environment."""
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import auth_from


def test_environment_fills_what_options_leave_out():
    env = {"K8S_AUTH_HOST": "https://h", "K8S_AUTH_API_KEY": "t", "K8S_AUTH_VERIFY_SSL": "false",
           "K8S_AUTH_SSL_CA_CERT": "/ca"}
    assert auth_from({"host": None}, env) == {"host": "https://h", "api_key": "t", "validate_certs": False,
                                              "ca_cert": "/ca"}


def test_options_win():
    assert auth_from({"kubeconfig": "/k", "context": "c"}, {"K8S_AUTH_KUBECONFIG": "/other"}) == \
        {"kubeconfig": "/k", "context": "c"}
