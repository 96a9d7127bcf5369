# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The common forms of credentials, read without the `kubernetes` package.

Importing `kubernetes` for its config loaders costs about 0.4 s and 20 MiB a process (it imports
every API model), which every module run and the operator would pay. The forms read here are
the ones pods and most kubeconfigs use:
- the pod's service account (KUBERNETES_SERVICE_HOST/PORT, its token, re-read as the kubelet
  rotates it, and its CA);
- one kubeconfig file whose context's user has a token, a token file or a client certificate,
  and whose cluster has a server, a CA, insecure-skip-tls-verify and tls-server-name.
`load` gives None for anything else (exec plugins, auth providers, basic auth, proxies, several
files in KUBECONFIG, a kubeconfig given as a dict): the `kubernetes` loaders read those.

Each field is read as kubernetes-client/python's loaders read it (kube_config.py,
incluster_config.py; see docs/contracts.md), into an object with the attribute names of its
Configuration, which the Client and its transport read.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import atexit
import base64
import os
import shutil
import tempfile
import threading
import time
from urllib.parse import urlsplit
from urllib.request import getproxies

TOKEN_PATH = "/var/run/secrets/kubernetes.io/serviceaccount/token"
CA_PATH = "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
# The in-cluster loader reads the token file again once its copy is this old (seconds).
TOKEN_REFRESH = 60
USER_KEYS = frozenset(("token", "tokenFile", "client-certificate", "client-certificate-data", "client-key",
                       "client-key-data"))
CLUSTER_KEYS = frozenset(("server", "certificate-authority", "certificate-authority-data",
                          "insecure-skip-tls-verify", "tls-server-name"))


class Config:
    """What the Client and its transport read of a kubernetes.client.Configuration."""

    def __init__(self, host="http://localhost"):
        self.host = host
        self.verify_ssl = True
        self.ssl_ca_cert = None
        self.ca_cert_data = None
        self.cert_file = None
        self.key_file = None
        self.tls_server_name = None
        self.assert_hostname = None
        self._proxy = None
        self._proxy_from_env = True
        self.no_proxy = getproxies().get("no")
        self.api_key = {}
        self.api_key_prefix = {}
        self.refresh_api_key_hook = None

    @property
    def proxy(self):
        """As Configuration gives it: the one set, else the environment's for the host's scheme."""
        if not self._proxy_from_env:
            return self._proxy
        proxies = getproxies()
        return proxies.get(urlsplit(self.host).scheme) or proxies.get("all")

    @proxy.setter
    def proxy(self, value):
        self._proxy, self._proxy_from_env = value, False

    def get_api_key_with_prefix(self, identifier, alias=None):
        if self.refresh_api_key_hook is not None:
            self.refresh_api_key_hook(self)
        key = self.api_key.get(identifier, self.api_key.get(alias) if alias is not None else None)
        prefix = self.api_key_prefix.get(identifier, self.api_key_prefix.get(alias) if alias is not None else None)
        return ("%s %s" % (prefix, key) if prefix else key) if key else None


class Unreadable(Exception):
    """Credentials of a form read here, but broken (a missing file, an empty token)."""


def load(auth, environ=None, token_path=TOKEN_PATH, ca_path=CA_PATH):
    """A Config from auth's kubeconfig (a path), KUBECONFIG, ~/.kube/config or the pod's service
    account, in the order the `kubernetes` loaders use; None when the `kubernetes` loaders must
    read them (a form not read here, or a proxy)."""
    environ = os.environ if environ is None else environ
    if auth.get("proxy"):
        return None
    kubeconfig = auth.get("kubeconfig")
    if isinstance(kubeconfig, dict):
        return None
    path = os.path.expanduser(kubeconfig or environ.get("KUBECONFIG") or "~/.kube/config")
    if kubeconfig or environ.get("KUBECONFIG") or os.path.exists(path):
        if os.pathsep in path or not os.path.isfile(path):
            return None
        return from_file(path, auth.get("context"))
    return in_cluster(environ, token_path, ca_path)


def in_cluster(environ, token_path=TOKEN_PATH, ca_path=CA_PATH):
    """The pod's service account, or None outside a pod."""
    host, port = environ.get("KUBERNETES_SERVICE_HOST"), environ.get("KUBERNETES_SERVICE_PORT")
    if not (host and port and os.path.isfile(token_path) and os.path.isfile(ca_path)):
        return None  # the `kubernetes` loader says which part is missing
    cfg = Config("https://%s:%s" % ("[%s]" % host if ":" in host or "%" in host else host, port))
    cfg.ssl_ca_cert = ca_path
    read_at = [0.0]
    lock = threading.Lock()

    def refresh(config):
        with lock:
            if time.monotonic() - read_at[0] < TOKEN_REFRESH:
                return
            with open(token_path) as handle:
                token = handle.read()
            if not token:
                raise Unreadable("the service account token file %s is empty" % token_path)
            config.api_key["BearerToken"] = "bearer " + token
            read_at[0] = time.monotonic()

    refresh(cfg)
    cfg.refresh_api_key_hook = refresh
    return cfg


def _named(items, name):
    return next((item for item in items or [] if (item or {}).get("name") == name), None)


def from_file(path, context=None):
    """The Config of one kubeconfig file's context (its current-context by default), or None
    when its user or cluster has a field that only the `kubernetes` loaders read."""
    import yaml  # PyYAML, which ansible-core and the `kubernetes` package require
    with open(path) as handle:
        doc = yaml.safe_load(handle) or {}
    name = context or doc.get("current-context")
    ctx = (_named(doc.get("contexts"), name) or {}).get("context") if name else None
    if not ctx or not ctx.get("cluster"):
        return None
    cluster = (_named(doc.get("clusters"), ctx["cluster"]) or {}).get("cluster")
    user = ((_named(doc.get("users"), ctx["user"]) or {}).get("user") if ctx.get("user") else None) or {}
    if not cluster or not cluster.get("server") or set(cluster) - CLUSTER_KEYS or set(user) - USER_KEYS:
        return None
    base = os.path.abspath(os.path.dirname(path))
    cfg = Config(cluster["server"].rstrip("/"))
    # each `x-data` (or `token`) wins over the file `x` (or `tokenFile`) when the key is there
    token = user["token"] if "token" in user else (_read(base, user["tokenFile"]) if "tokenFile" in user else None)
    if token:
        cfg.api_key["BearerToken"] = "Bearer %s" % token
    if cfg.host.startswith("https"):
        if "certificate-authority-data" in cluster:
            data = cluster["certificate-authority-data"]
            cfg.ca_cert_data = base64.standard_b64decode(data).decode() if data else None
        elif "certificate-authority" in cluster:
            cfg.ssl_ca_cert = _file(base, cluster["certificate-authority"])
        cfg.cert_file = _file_or_data(base, user, "client-certificate")
        cfg.key_file = _file_or_data(base, user, "client-key")
    if "insecure-skip-tls-verify" in cluster:
        cfg.verify_ssl = not cluster["insecure-skip-tls-verify"]
    if "tls-server-name" in cluster:
        cfg.tls_server_name = cluster["tls-server-name"]
    return cfg


def _file(base, name):
    path = os.path.normpath(os.path.join(base, name))
    if not os.path.isfile(path):
        raise Unreadable("File does not exist: %s" % path)
    return path


def _read(base, name):
    with open(_file(base, name)) as handle:
        return handle.read()


# The private files written for `-data` fields, by their base64 data (as the `kubernetes` loader
# keeps its own): each Client made from the same kubeconfig reuses them. Removed at exit.
_PRIVATE = {}
_PRIVATE_DIR = []
_PRIVATE_LOCK = threading.Lock()


def _private_dir():
    if not _PRIVATE_DIR:
        _PRIVATE_DIR.append(tempfile.mkdtemp(prefix="kfocp-credentials-"))
        atexit.register(shutil.rmtree, _PRIVATE_DIR[0], True)
    return _PRIVATE_DIR[0]


def _file_or_data(base, section, key):
    """The path of section's `key` file, or of a private file holding its base64 `key`-data."""
    if key + "-data" not in section:
        return _file(base, section[key]) if key in section else None
    data = section[key + "-data"]
    if not data:
        return None
    with _PRIVATE_LOCK:
        if data not in _PRIVATE or not os.path.isfile(_PRIVATE[data]):
            fd, _PRIVATE[data] = tempfile.mkstemp(dir=_private_dir())
            with os.fdopen(fd, "wb") as handle:
                handle.write(base64.standard_b64decode(data))
        return _PRIVATE[data]
