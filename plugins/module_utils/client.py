# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Connection to the Kubernetes API: configuration, requests with bounded retries over pooled
keep-alive connections (transport.py), and discovery done once per client.

Auth is read as the `kubernetes` Python client's config loaders read it, so every way
kubernetes.core connects works here too: the common forms (a pod's service account, a kubeconfig
with a token or a client certificate) by kfocp's own loader (kubeconfig.py), which spares each
process importing the `kubernetes` package; the rest (exec plugins, auth providers, proxies, merged
kubeconfigs) by those loaders.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import random
import threading
import time
from collections import namedtuple

from ansible_collections.kfocp.kubeflow.plugins.module_utils import kubeconfig as own_loader
from ansible_collections.kfocp.kubeflow.plugins.module_utils.transport import TransportError, pool as transport_pool

# Module option -> the environment variables kubernetes.core reads for it, in its order (its
# module_utils/k8s/client.py _create_auth_spec: K8S_AUTH_<option>, then K8S_AUTH_<client name>),
# so that AWX credentials and K8S_AUTH_* environments work unchanged.
AUTH_ENV = {
    "kubeconfig": ("K8S_AUTH_KUBECONFIG",),
    "context": ("K8S_AUTH_CONTEXT",),
    "host": ("K8S_AUTH_HOST",),
    "api_key": ("K8S_AUTH_API_KEY",),
    "ca_cert": ("K8S_AUTH_CA_CERT", "K8S_AUTH_SSL_CA_CERT"),
    "client_cert": ("K8S_AUTH_CLIENT_CERT", "K8S_AUTH_CERT_FILE"),
    "client_key": ("K8S_AUTH_CLIENT_KEY", "K8S_AUTH_KEY_FILE"),
    "validate_certs": ("K8S_AUTH_VALIDATE_CERTS", "K8S_AUTH_VERIFY_SSL"),
    "proxy": ("K8S_AUTH_PROXY",),
}

# How many times a 500 is retried (for requests that are safe to repeat).
RETRIES_ON_500 = 2
DISCOVERY_ACCEPT = ("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,"
                    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,"
                    "application/json")
METADATA_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
# A kind missing from discovery is looked up anew when the last discovery is older than this many
# seconds: a CRD installed since then (by a role, a test, an operator) is then found.
REDISCOVER_AFTER = 2.0

Resource = namedtuple("Resource", "api_version kind plural namespaced verbs")


class KubeError(Exception):
    """A failed API call. `status` is the HTTP status (0 when the server was not reached)."""

    def __init__(self, message, status=0, body=None):
        super(KubeError, self).__init__(message)
        self.status = status
        self.body = body or {}

    @property
    def reason(self):
        return self.body.get("reason", "")


class UnknownKind(KubeError):
    pass


class Gone(KubeError):
    """A watch's resourceVersion is too old (410 Gone): list again."""


def _truthy(value):
    if isinstance(value, bool):
        return value
    return str(value).lower() in ("1", "true", "yes", "on")


def auth_from(params=None, env=None):
    """Merge module options with the K8S_AUTH_* environment (options win)."""
    params = dict(params or {})
    env = os.environ if env is None else env
    merged = {}
    for option, variables in AUTH_ENV.items():
        value = params.get(option)
        if value is None:
            value = next((env[name] for name in variables if env.get(name)), None)
            if value is not None and option == "validate_certs":
                # kubernetes.core's reading of a boolean from the environment: only 0, false and
                # no (any case) turn it off
                value = value.lower() not in ("0", "false", "no")
        if value is not None:
            merged[option] = value
    if "validate_certs" in merged:
        merged["validate_certs"] = _truthy(merged["validate_certs"])
    return merged


def configuration(auth):
    """A Configuration from auth options, a kubeconfig, or the pod's service account: read by
    kfocp's own loader in the common forms (module_utils/kubeconfig.py), else by the `kubernetes`
    client's loaders."""
    try:
        if auth.get("host") and not auth.get("kubeconfig"):
            cfg = own_loader.Config(auth["host"])
        else:
            cfg = own_loader.load(auth) or _kubernetes_configuration(auth)
    except (own_loader.Unreadable, IOError, OSError, ValueError) as err:
        raise _unloadable(err)
    if auth.get("host"):
        cfg.host = auth["host"]
    if auth.get("api_key"):
        cfg.api_key = {"authorization": "Bearer " + auth["api_key"]}
    if auth.get("ca_cert"):
        cfg.ssl_ca_cert = auth["ca_cert"]
    if auth.get("client_cert"):
        cfg.cert_file = auth["client_cert"]
    if auth.get("client_key"):
        cfg.key_file = auth["client_key"]
    if "validate_certs" in auth:
        cfg.verify_ssl = auth["validate_certs"]
    if auth.get("proxy"):
        cfg.proxy = auth["proxy"]
    return cfg


def bearer(cfg):
    """The Authorization header of a Configuration (kfocp's loader's or the `kubernetes` client's),
    its refresh hook run once. kfocp's loader, and `kubernetes` 37 (requirements.txt), keep kubeconfig and in-pod
    tokens under "BearerToken" and the `api_key` option under "authorization"; `kubernetes` 33.1
    (the ansible-operator image's) keeps them all under "authorization", and its
    get_api_key_with_prefix takes no alias."""
    if cfg.refresh_api_key_hook is not None:
        cfg.refresh_api_key_hook(cfg)
    for identifier in ("BearerToken", "authorization"):
        key = cfg.api_key.get(identifier)
        if key:
            prefix = cfg.api_key_prefix.get(identifier)
            return "%s %s" % (prefix, key) if prefix else key
    return None


def _unloadable(err):
    return KubeError("cannot load Kubernetes credentials: %s. Set kubeconfig (K8S_AUTH_KUBECONFIG) "
                     "or host and api_key (K8S_AUTH_HOST, K8S_AUTH_API_KEY)." % err)


def _kubernetes_configuration(auth):
    """The `kubernetes` client's loaders, for the forms kfocp's own loader leaves to them."""
    try:
        from kubernetes import client as k8s_client
        from kubernetes import config as k8s_config
        from kubernetes.config.config_exception import ConfigException
    except ImportError as err:
        raise KubeError("the Python package 'kubernetes' is required for these credentials: %s" % err)
    cfg = k8s_client.Configuration()
    kubeconfig = auth.get("kubeconfig")
    try:
        if isinstance(kubeconfig, dict):
            k8s_config.load_kube_config_from_dict(kubeconfig, context=auth.get("context"),
                                                  client_configuration=cfg, persist_config=False)
        elif kubeconfig or os.environ.get("KUBECONFIG") or os.path.exists(os.path.expanduser("~/.kube/config")):
            k8s_config.load_kube_config(config_file=os.path.expanduser(kubeconfig) if kubeconfig else None,
                                        context=auth.get("context"), client_configuration=cfg,
                                        persist_config=False)
        else:
            k8s_config.load_incluster_config(client_configuration=cfg)
    except ConfigException as err:
        raise _unloadable(err)
    return cfg


class Client:
    """A thread-safe Kubernetes REST client with retries and cached discovery."""

    def __init__(self, cfg, pool_size=32, retries=6, backoff=0.2, max_backoff=5.0, timeout=60):
        self.cfg = cfg
        self.host = cfg.host.rstrip("/")
        self.pool = transport_pool(cfg, pool_size)
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.timeout = (10, timeout)  # seconds to connect, and to wait for the answer
        self._resources = None
        self._discovered_at = 0.0
        self._lock = threading.Lock()
        self.warnings = set()
        self.requests = 0
        # The last connection failure's message while the API server does not answer: requests
        # then make one attempt each instead of a retry sequence. The first answer clears it.
        self.unreachable = None

    @classmethod
    def from_params(cls, params=None, **kwargs):
        return cls(configuration(auth_from(params)), **kwargs)

    # -- transport
    def _headers(self, accept, content_type):
        headers = {"Accept": accept, "User-Agent": "kfocp"}
        if content_type:
            headers["Content-Type"] = content_type
        token = bearer(self.cfg) if self.cfg.api_key else None
        if token:
            headers["Authorization"] = token
        return headers

    def request(self, method, path, query=None, body=None, content_type="application/json",
                accept="application/json", allow=()):
        """Send one request; return the decoded JSON body, or None for a status in `allow`.

        Only requests that are safe to repeat are retried (see `_retry_kind`), with capped
        exponential backoff and the server's Retry-After; every other error raises KubeError with
        the server's message. While the server is known to be down (`unreachable`), a request
        makes one attempt instead of a whole retry sequence; the first answer clears it.
        """
        url = path + _query(query)
        # UTF-8 as it is, not \u escapes: the apply-patch+yaml decoder refuses the surrogate pairs
        # that escaping gives a character outside the Basic Multilingual Plane
        data = None if body is None else json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        idempotent = _idempotent(method, content_type)
        retries = 0 if self.unreachable else self.retries
        attempt = 0
        started = time.monotonic()
        while True:
            attempt += 1
            self.requests += 1
            try:
                resp = self.pool.request(method, url, body=data, timeouts=self.timeout, resend=idempotent,
                                         headers=self._headers(accept, content_type if data is not None else None))
            except TransportError as err:
                sent = err.sent
                message = ("the API server %s did not answer after %d attempts in %.1fs: %s"
                           % (self.host, attempt, time.monotonic() - started, err))
                if attempt > retries:
                    self.unreachable = message
                    raise KubeError(message)
                if sent and not idempotent:
                    # The request may have been processed: a POST is repeated only when a named
                    # object it would create is not there.
                    found = self._created(method, path, body)
                    if found is not False:
                        if found is None:
                            raise KubeError("%s %s: the connection failed after the request was sent (%s); "
                                            "not repeated, as it may have been processed" % (method, path, err))
                        return found
                self._sleep(attempt, None)
                continue
            self.unreachable = None
            warning = resp.headers.get("Warning")
            if warning:
                self.warnings.add(warning)
            if attempt <= retries and self._retryable(resp.status, idempotent, attempt):
                self._sleep(attempt, resp.headers.get("Retry-After"))
                continue
            if resp.status < 300:
                return json.loads(resp.data) if resp.data else {}
            if resp.status in allow:
                return None
            if resp.status == 401 and attempt == 1 and self.cfg.refresh_api_key_hook:
                continue  # an exec plugin's token expired: the hook refreshes it
            body_json = _decode(resp.data)
            message = body_json.get("message") or resp.data[:300].decode("utf-8", "replace")
            raise KubeError("%s %s: %d %s" % (method, path, resp.status, message), resp.status, body_json)

    @staticmethod
    def _retryable(status, idempotent, attempt):
        """429 is refused before the request is processed: always retried. 502, 503 and 504 are
        retried for requests that are safe to repeat. A 500 may be permanent (a malformed object):
        a request safe to repeat gets two more tries, enough for a passing storage error."""
        if status == 429:
            return True
        if not idempotent:
            return False
        if status in (502, 503, 504):
            return True
        return status == 500 and attempt <= RETRIES_ON_500

    def _created(self, method, path, body):
        """After a POST whose answer was lost: the object, if a named object it would create now
        exists; False if it does not (the POST may be repeated); None if that cannot be told."""
        name = ((body or {}).get("metadata") or {}).get("name") if method == "POST" and isinstance(body, dict) else None
        if not name:
            return None
        try:
            resp = self.pool.request("GET", path.split("?")[0] + "/" + _quote(name), timeouts=self.timeout,
                                     resend=True, headers=self._headers("application/json", None))
        except TransportError:
            return None
        if resp.status == 404:
            return False
        if resp.status < 300:
            return json.loads(resp.data)
        return None

    def _sleep(self, attempt, retry_after):
        delay = min(self.max_backoff, self.backoff * (2 ** (attempt - 1)))
        if retry_after:
            try:
                delay = min(self.max_backoff, max(delay, float(retry_after)))
            except ValueError:
                pass
        time.sleep(delay * (0.5 + random.random() / 2))

    # -- discovery
    def resources(self, refresh=False):
        """{(apiVersion, kind): Resource} for every served kind, read once per client."""
        with self._lock:
            if self._resources is None or refresh:
                self._resources = self._discover()
                self._discovered_at = time.monotonic()
            return self._resources

    def _discover(self):
        """Every served kind: from the aggregated discovery documents of /api and /apis, or, from
        a server without aggregated discovery, from each group version's own document."""
        found = {}
        legacy = []
        for root in ("/api", "/apis"):
            doc = self.request("GET", root, accept=DISCOVERY_ACCEPT)
            if doc.get("kind") == "APIGroupDiscoveryList":
                found.update(_aggregated_resources(doc))
            else:
                legacy += _group_versions(root, doc)
        for api_version in legacy:
            found.update(_version_resources(api_version, self.request("GET", version_path(api_version),
                                                                      allow=(404, 503)) or {}))
        return found

    def resource(self, api_version, kind):
        found = self.resources().get((api_version, kind))
        if found is None and time.monotonic() - self._discovered_at > REDISCOVER_AFTER:
            found = self.resources(refresh=True).get((api_version, kind))
        if found is None:
            raise UnknownKind("the API server has no kind %s in %s: check apiVersion and kind, or install "
                              "the CRD (or operator) that provides it" % (kind, api_version), 404)
        return found

    def forget(self):
        with self._lock:
            self._resources = None

    # -- paths and verbs
    @staticmethod
    def path(res, namespace=None, name=None):
        base = version_path(res.api_version)
        if res.namespaced and namespace:
            base += "/namespaces/%s" % namespace
        base += "/" + res.plural
        return base + ("/" + name if name else "")

    def get(self, res, name, namespace=None):
        return self.request("GET", self.path(res, namespace, name), allow=(404,))

    def find(self, api_version, kind, name=None, namespace=None, label_selector=None, field_selector=None):
        """(api_found, objects), as kubernetes.core.k8s_info finds them: the object named `name`
        (none when it does not exist), or the objects the selectors match in `namespace` (every
        namespace when it is None), each with its apiVersion and kind as the kubernetes client sets
        them on a list's items. api_found is False, with no objects, when the server does not serve
        the kind."""
        try:
            res = self.resource(api_version, kind)
        except UnknownKind:
            return False, []
        if name:
            found = self.get(res, name, namespace)
            return True, [found] if found is not None else []
        items = self.list(res, label_selector, namespace, field_selector=field_selector)
        for item in items:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        return True, items

    def list(self, res, label_selector=None, namespace=None, metadata_only=False, field_selector=None):
        query = {"labelSelector": label_selector, "fieldSelector": field_selector}
        accept = METADATA_ACCEPT if metadata_only else "application/json"
        return (self.request("GET", self.path(res, namespace), query=query, accept=accept) or {}).get("items") or []

    def apply(self, res, obj, field_manager, force=False, dry_run=False):
        meta = obj["metadata"]
        query = {"fieldManager": field_manager, "force": "true" if force else None,
                 "dryRun": "All" if dry_run else None, "fieldValidation": "Strict"}
        return self.request("PATCH", self.path(res, meta.get("namespace"), meta["name"]), query=query, body=obj,
                            content_type="application/apply-patch+yaml")

    def delete(self, res, name, namespace=None, dry_run=False):
        query = {"propagationPolicy": "Background", "dryRun": "All" if dry_run else None}
        return self.request("DELETE", self.path(res, namespace, name), query=query, allow=(404,))

    def watch(self, res, resource_version, timeout=60, label_selector=None, namespace=None, idle=None, stop=None,
              opened=None):
        """Yield (event type, object) of one WATCH of one kind after `resource_version`, bookmarks
        included (type BOOKMARK: it carries the resourceVersion to resume from), for at most
        `timeout` seconds (the server ends the stream then). `opened()` is called once the server
        has accepted the watch; the watch ends after an event when `stop` (an Event) is set.
        Raises Gone on 410 (the answer, or an ERROR event), KubeError when the server refuses the
        watch or sends another ERROR event, and transport.TransportError when the connection
        fails or nothing, not even a bookmark, arrives for `idle` seconds (timeout + 10 unless given)."""
        query = {"watch": "1", "resourceVersion": resource_version, "labelSelector": label_selector,
                 "timeoutSeconds": str(max(1, int(timeout))), "allowWatchBookmarks": "true"}
        self.requests += 1
        path = self.path(res, namespace)
        resp = self.stream(path + _query(query), read_timeout=idle or max(1, int(timeout)) + 10)
        try:
            if resp.status >= 300:
                body = _decode(resp.read())
                error = Gone if resp.status == 410 else KubeError
                raise error("WATCH %s: %d %s" % (path, resp.status, body.get("message", "")), resp.status, body)
            if opened is not None:
                opened()
            for line in lines(resp.chunks()):
                event = json.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    error = Gone if obj.get("code") == 410 else KubeError
                    raise error("WATCH %s: %s" % (path, obj.get("message", "")), obj.get("code") or 0, obj)
                yield kind, obj
                if stop is not None and stop.is_set():
                    return
        finally:
            resp.close()

    def stream(self, path, read_timeout, accept="application/json", connect_timeout=10):
        """GET `path` (with its query) once, without retries, its answer read as it arrives: a
        transport.Stream, to close when done. Raises transport.TransportError."""
        return self.pool.stream("GET", path, headers=self._headers(accept, None),
                                timeouts=(connect_timeout, read_timeout))


def lines(chunks):
    """The non-empty lines of a stream of byte chunks (a watch's events)."""
    pending = b""
    for chunk in chunks:
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if line.strip():
                yield line


# Methods a repeat cannot duplicate. PATCH is too, except a JSON patch (its "add" to a list
# would add twice); POST is not: it is repeated only when the object proves absent.
IDEMPOTENT = ("GET", "HEAD", "OPTIONS", "PUT", "DELETE", "PATCH")


def _idempotent(method, content_type):
    return method in IDEMPOTENT and not (method == "PATCH" and content_type == "application/json-patch+json")


def _query(query):
    """`?k=v&...` of the query's set values, or "" when none is."""
    pairs = ["%s=%s" % (k, _quote(v)) for k, v in (query or {}).items() if v is not None]
    return "?" + "&".join(pairs) if pairs else ""


def _quote(value):
    try:
        from urllib.parse import quote
    except ImportError:  # pragma: no cover
        from urllib import quote
    return quote(str(value), safe="")


def _decode(data):
    try:
        return json.loads(data)
    except (ValueError, TypeError):
        return {}


def version_path(api_version):
    """The path of a group version: /api/v1 for the core group, /apis/<group>/<version> otherwise."""
    return ("/api/" if "/" not in api_version else "/apis/") + api_version


def _aggregated_resources(doc):
    """{(apiVersion, kind): Resource} of an aggregated discovery document (APIGroupDiscoveryList)."""
    found = {}
    for group in doc.get("items") or []:
        name = (group.get("metadata") or {}).get("name", "")
        for version in group.get("versions") or []:
            api_version = "%s/%s" % (name, version["version"]) if name else version["version"]
            for res in version.get("resources") or []:
                kind = (res.get("responseKind") or {}).get("kind")
                if kind:
                    found[(api_version, kind)] = Resource(api_version, kind, res["resource"],
                                                          res.get("scope") == "Namespaced",
                                                          tuple(res.get("verbs") or ()))
    return found


def _group_versions(root, doc):
    """The group versions a legacy discovery document of /api (APIVersions) or /apis
    (APIGroupList) lists."""
    if root == "/api":
        return list(doc.get("versions") or [])
    return [v["groupVersion"] for g in doc.get("groups") or [] for v in g.get("versions") or []]


def _version_resources(api_version, doc):
    """{(apiVersion, kind): Resource} of one group version's APIResourceList, without subresources."""
    return dict(((api_version, res["kind"]), Resource(api_version, res["kind"], res["name"],
                                                      res.get("namespaced", False), tuple(res.get("verbs") or ())))
                for res in doc.get("resources") or [] if "/" not in res["name"])
