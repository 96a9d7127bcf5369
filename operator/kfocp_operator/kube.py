"""API plumbing the operator needs beyond the apply engine: list+watch informers, status and
finalizer patches, and Kubernetes Events. Everything goes through the collection's Client (the
same connection, retries and auth as the roles)."""
import datetime
import json
import logging
import threading
from urllib.parse import urlencode

import urllib3

from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError, Resource

from kfocp_operator import API_VERSION, KIND, PLURAL

LOG = logging.getLogger("kfocp.operator")
KUBEFLOWS = Resource(API_VERSION, KIND, PLURAL, True, ("get", "list", "watch", "patch", "update"))
NAMESPACES = Resource("v1", "Namespace", "namespaces", False, ("get", "list", "watch"))
USERS = Resource("user.openshift.io/v1", "User", "users", False, ("get", "list", "watch"))
GROUPS = Resource("user.openshift.io/v1", "Group", "groups", False, ("get", "list", "watch"))
CONFIGMAPS = Resource("v1", "ConfigMap", "configmaps", True, ("get",))
EVENTS = Resource("v1", "Event", "events", True, ("create",))
MERGE_PATCH = "application/merge-patch+json"


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def key_of(obj):
    meta = obj.get("metadata") or {}
    return (meta.get("namespace") or "", meta.get("name"))


def _headers(client):
    headers = {"Accept": "application/json", "User-Agent": "kfocp-operator"}
    token = client.cfg.get_api_key_with_prefix("authorization") if client.cfg.api_key else None
    if token:
        headers["Authorization"] = token
    return headers


def list_with_version(client, res, namespace=None, label_selector=None):
    """(items, resourceVersion) of one LIST."""
    query = {"labelSelector": label_selector} if label_selector else None
    doc = client.request("GET", client.path(res, namespace), query=query) or {}
    items = doc.get("items") or []
    for item in items:
        item.setdefault("apiVersion", res.api_version)
        item.setdefault("kind", res.kind)
    return items, (doc.get("metadata") or {}).get("resourceVersion")


class Gone(Exception):
    """The watch's resourceVersion is too old: list again."""


def watch(client, res, resource_version, namespace=None, label_selector=None, timeout=240, stop=None):
    """Yield (type, object) from one WATCH request until the server closes it or `stop` is set."""
    query = {"watch": "1", "resourceVersion": resource_version, "allowWatchBookmarks": "true",
             "timeoutSeconds": str(timeout)}
    if label_selector:
        query["labelSelector"] = label_selector
    url = client.host + client.path(res, namespace) + "?" + urlencode(query)
    resp = client.pool.request("GET", url, headers=_headers(client), preload_content=False, retries=False,
                               timeout=urllib3.Timeout(connect=10, read=timeout + 30))
    try:
        if resp.status != 200:
            body = resp.read()
            if resp.status == 410:
                raise Gone()
            raise KubeError("WATCH %s: %d %s" % (client.path(res, namespace), resp.status, body[:300]), resp.status)
        buffer = b""
        for chunk in resp.stream(8192):
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                if not line.strip():
                    continue
                event = json.loads(line)
                if event.get("type") == "ERROR":
                    if (event.get("object") or {}).get("code") == 410:
                        raise Gone()
                    raise KubeError("WATCH %s: %s" % (res.plural, (event.get("object") or {}).get("message")))
                yield event["type"], event["object"]
            if stop is not None and stop.is_set():
                return
    finally:
        resp.release_conn()


class Informer(threading.Thread):
    """Keeps a cache of one kind (optionally filtered by labels) and calls `handler(type, obj, old)`
    for every change: list, then watch from the list's resourceVersion; list again on 410 Gone or
    a dropped connection, reporting what changed meanwhile."""

    def __init__(self, client, res, handler, namespace=None, label_selector=None, stop=None, name=None):
        super().__init__(name=name or "informer-%s" % res.plural, daemon=True)
        self.client = client
        self.res = res
        self.handler = handler
        self.namespace = namespace
        self.label_selector = label_selector
        self.stop = stop or threading.Event()
        self.cache = {}
        self.synced = threading.Event()
        self.lock = threading.Lock()
        self.errors = 0

    def items(self):
        with self.lock:
            return list(self.cache.values())

    def _deliver(self, kind, obj, old=None):
        try:
            self.handler(kind, obj, old)
        except Exception:  # pylint: disable=broad-except  # a handler bug must not stop the watch
            LOG.exception("handler for %s %s failed", self.res.kind, key_of(obj))

    def _relist(self):
        items, version = list_with_version(self.client, self.res, self.namespace, self.label_selector)
        fresh = dict((key_of(item), item) for item in items)
        with self.lock:
            old_cache, self.cache = self.cache, fresh
        for key, item in fresh.items():
            old = old_cache.get(key)
            if old is None:
                self._deliver("ADDED", item)
            elif (old["metadata"].get("resourceVersion") != item["metadata"].get("resourceVersion")):
                self._deliver("MODIFIED", item, old)
        for key, item in old_cache.items():
            if key not in fresh:
                self._deliver("DELETED", item, item)
        self.synced.set()
        return version

    def run(self):
        version = None
        delay = 0.5
        while not self.stop.is_set():
            try:
                if version is None:
                    version = self._relist()
                for kind, obj in watch(self.client, self.res, version, self.namespace, self.label_selector,
                                       stop=self.stop):
                    version = (obj.get("metadata") or {}).get("resourceVersion") or version
                    if kind == "BOOKMARK":
                        continue
                    obj.setdefault("apiVersion", self.res.api_version)
                    obj.setdefault("kind", self.res.kind)
                    key = key_of(obj)
                    with self.lock:
                        old = self.cache.get(key)
                        if kind == "DELETED":
                            self.cache.pop(key, None)
                        else:
                            self.cache[key] = obj
                    self._deliver(kind, obj, old)
                delay = 0.5
            except Gone:
                version = None
            except (KubeError, urllib3.exceptions.HTTPError, OSError, ValueError) as err:
                self.errors += 1
                LOG.warning("watch of %s interrupted (%s); listing again in %.1fs", self.res.plural, err, delay)
                version = None
                self.stop.wait(delay)
                delay = min(delay * 2, 30)


def patch_status(client, obj, status):
    meta = obj["metadata"]
    path = client.path(KUBEFLOWS, meta.get("namespace"), meta["name"]) + "/status"
    return client.request("PATCH", path, body={"status": status}, content_type=MERGE_PATCH, allow=(404,))


def set_finalizers(client, obj, finalizers):
    """Replace metadata.finalizers, only if the object has not changed since it was read."""
    meta = obj["metadata"]
    body = {"metadata": {"finalizers": finalizers, "resourceVersion": meta["resourceVersion"]}}
    return client.request("PATCH", client.path(KUBEFLOWS, meta.get("namespace"), meta["name"]), body=body,
                          content_type=MERGE_PATCH, allow=(404,))


def get_kubeflow(client, namespace, name):
    obj = client.get(KUBEFLOWS, name, namespace)
    if obj is not None:
        obj.setdefault("apiVersion", API_VERSION)
        obj.setdefault("kind", KIND)
    return obj


def post_event(client, obj, event_type, reason, message, component="kfocp-operator"):
    """A core/v1 Event on the CR, as `kubectl describe` shows them. Failures are logged, not raised."""
    meta = obj["metadata"]
    stamp = now()
    event = {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"generateName": "%s." % meta["name"], "namespace": meta.get("namespace") or "default"},
        "involvedObject": {"apiVersion": obj.get("apiVersion", API_VERSION), "kind": obj.get("kind", KIND),
                           "name": meta["name"], "namespace": meta.get("namespace"), "uid": meta.get("uid"),
                           "resourceVersion": meta.get("resourceVersion")},
        "type": event_type, "reason": reason, "message": message[:1024],
        "source": {"component": component}, "reportingComponent": component,
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
    }
    try:
        client.request("POST", client.path(EVENTS, event["metadata"]["namespace"]), body=event)
    except KubeError as err:
        LOG.warning("could not post event %s on %s/%s: %s", reason, meta.get("namespace"), meta["name"], err)


def read_configmap(client, namespace, name):
    """The ConfigMap's data, or {} when it does not exist (or may not be read)."""
    if not namespace or not name:
        return {}
    try:
        found = client.get(CONFIGMAPS, name, namespace)
    except KubeError as err:
        LOG.warning("cannot read ConfigMap %s/%s: %s", namespace, name, err)
        return {}
    return (found or {}).get("data") or {}
