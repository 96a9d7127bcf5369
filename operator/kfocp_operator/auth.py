"""Bearer tokens for the collection's Client, and the credentials a playbook run inherits.

The `kubernetes` client's loaders keep a kubeconfig's or a pod's service-account token under the
key 'BearerToken' (refreshed by a hook as the token file rotates), while the collection's Client
reads the key 'authorization'. The operator keeps both in step, and hands its playbooks the token
through K8S_AUTH_API_KEY, which the apply module and kubernetes.core both read.
"""


def _copy(cfg):
    token = cfg.api_key.get("BearerToken")
    if token:
        cfg.api_key["authorization"] = token
        cfg.api_key_prefix.pop("authorization", None)


def share_bearer_token(cfg):
    """Make cfg's bearer token (and its refreshes) visible under 'authorization'."""
    _copy(cfg)
    hook = cfg.refresh_api_key_hook
    if hook is not None and not getattr(hook, "kfocp_shared", False):
        def refresh(config):
            hook(config)
            _copy(config)
        refresh.kfocp_shared = True
        cfg.refresh_api_key_hook = refresh
    return cfg


def token(cfg):
    """The current bearer token without its 'Bearer ' prefix, or None (client certificates)."""
    value = cfg.get_api_key_with_prefix("authorization") if cfg.api_key else None
    if not value:
        return None
    parts = value.split(" ", 1)
    return parts[1] if len(parts) == 2 and parts[0].lower() == "bearer" else value


def playbook_env(cfg, kubeconfig=None):
    """K8S_AUTH_* for a playbook run: the kubeconfig when there is one, the host and CA otherwise
    (in a pod), and the bearer token in both cases."""
    env = {}
    if kubeconfig:
        env["K8S_AUTH_KUBECONFIG"] = str(kubeconfig)
    else:
        env["K8S_AUTH_HOST"] = cfg.host
        if cfg.ssl_ca_cert:
            env["K8S_AUTH_SSL_CA_CERT"] = cfg.ssl_ca_cert
    bearer = token(cfg)
    if bearer:
        env["K8S_AUTH_API_KEY"] = bearer
    return env
