"""Bearer tokens for the collection's Client, and where a playbook run finds its credentials.

The credentials loaders (the collection's own, and the `kubernetes` client's) keep a kubeconfig's
or a pod's service-account token under the key 'BearerToken' (refreshed by a hook as the token
file rotates), while the collection's Client reads the key 'authorization'. The operator keeps
both in step for itself. Its playbook runs are
told where the credentials are, never given them: ansible-runner writes a run's environment into
its private data directory (env/envvars, artifacts/<run>/command), so a token handed over in
K8S_AUTH_API_KEY would be written to disk with every run.
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


def playbook_env(kubeconfig=None):
    """K8S_AUTH_* for a playbook run: the kubeconfig's path when the operator has one; in a pod,
    nothing, and the run's modules load the pod's service account themselves (the token file,
    which the kubelet rotates, and the cluster's CA)."""
    return {"K8S_AUTH_KUBECONFIG": str(kubeconfig)} if kubeconfig else {}
