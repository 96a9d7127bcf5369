"""API plumbing the operator needs beyond the apply engine: list+watch informers, status and
finalizer patches, and Kubernetes Events. Everything goes through the collection's Client (the
same connection, retries and auth as the roles)."""
import datetime
import logging
import random
import threading
import time

from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Gone, KubeError, Resource
from ansible_collections.kfocp.kubeflow.plugins.module_utils.transport import TransportError

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


def api_reachable(client, timeout=3):
    """(True, None) when the API server answers GET /version now; else (False, why). The probe
    goes around the client's retries: it says how things are, not whether they can be made to work."""
    try:
        resp = client.stream("/version", read_timeout=timeout, connect_timeout=timeout)
        resp.close()
    except TransportError as err:
        return False, "the API server %s does not answer: %s" % (client.host, err)
    if resp.status >= 500:
        return False, "the API server %s answers %d" % (client.host, resp.status)
    return True, None


def list_with_version(client, res, namespace=None, label_selector=None):
    """(items, resourceVersion) of one LIST."""
    query = {"labelSelector": label_selector} if label_selector else None
    doc = client.request("GET", client.path(res, namespace), query=query) or {}
    items = doc.get("items") or []
    for item in items:
        item.setdefault("apiVersion", res.api_version)
        item.setdefault("kind", res.kind)
    return items, (doc.get("metadata") or {}).get("resourceVersion")


# A watch asks the server to end it after WATCH_TIMEOUT to 2 x WATCH_TIMEOUT seconds (spread, so
# that watches do not all reconnect at once), and gives up on a connection that delivered nothing,
# not even a bookmark, for IDLE_MARGIN seconds beyond that: a watch that silently stopped.
WATCH_TIMEOUT = 60
IDLE_MARGIN = 15
# Reconnection after a failure: RETRY_FIRST seconds, doubled up to RETRY_MAX, each with jitter.
RETRY_FIRST = 0.5
RETRY_MAX = 5.0


def retry_delay(failures, rand=random.random):
    """Seconds to wait before reconnecting after `failures` failures in a row: capped exponential
    backoff with jitter (between half and all of it)."""
    if failures <= 0:
        return 0.0
    base = min(RETRY_MAX, RETRY_FIRST * 2 ** (failures - 1))
    return base * (0.5 + rand() / 2)


class Informer(threading.Thread):
    """Keeps a cache of one kind (optionally filtered by labels) and calls `handler(type, obj, old)`
    for every change, with the API's watch semantics:
    - list, then watch from the list's resourceVersion;
    - every event and bookmark moves the resourceVersion on; a watch that ends (the server's
      timeoutSeconds, a dropped connection, an idle read timeout) resumes from it, without a list;
    - 410 Gone (the version was compacted) lists again, reporting what changed meanwhile;
    - a watch the server refuses lists again, except a 429 (come back later), which resumes;
    - failures reconnect after a capped, jittered backoff.
    `healthy()` says whether the watch is working now; `beat` is the time of its last progress.
    `transform(obj)`, when given, makes what is cached and handed to the handler of every object
    listed or watched (what the handler reads of it: the rest need not be kept in memory)."""

    def __init__(self, client, res, handler, namespace=None, label_selector=None, stop=None, name=None,
                 timeout=WATCH_TIMEOUT, transform=None):
        super().__init__(name=name or "informer-%s" % res.plural, daemon=True)
        self.client = client
        self.res = res
        self.handler = handler
        self.namespace = namespace
        self.label_selector = label_selector
        self.stop = stop or threading.Event()
        self.timeout = timeout
        self.transform = transform
        self.cache = {}
        self.synced = threading.Event()
        self.lock = threading.Lock()
        self.errors = 0
        self.lists = 0
        self.watches = 0
        self.failing = 0  # failures in a row; 0 while the watch works
        self.beat = time.monotonic()
        self.version = None

    def items(self):
        with self.lock:
            return list(self.cache.values())

    def get(self, name, namespace=""):
        """The cached object, or None."""
        with self.lock:
            return self.cache.get((namespace or "", name))

    def _kept(self, obj):
        return self.transform(obj) if self.transform is not None else obj

    def healthy(self):
        return self.synced.is_set() and not self.failing

    def stale(self, now=None):
        """True when the loop made no progress for longer than a watch can stay silent: wedged."""
        limit = 2 * self.timeout + IDLE_MARGIN + RETRY_MAX + 30
        return (now or time.monotonic()) - self.beat > limit

    def _deliver(self, kind, obj, old=None):
        try:
            self.handler(kind, obj, old)
        except Exception:  # pylint: disable=broad-except  # a handler bug must not stop the watch
            LOG.exception("handler for %s %s failed", self.res.kind, key_of(obj))

    def _relist(self):
        items, version = list_with_version(self.client, self.res, self.namespace, self.label_selector)
        self.lists += 1
        fresh = dict((key_of(item), self._kept(item)) for item in items)
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

    def _opened(self):
        """The server accepted the watch: it works again, whether or not anything happens."""
        self.beat = time.monotonic()
        self.failing = 0

    def _watch_once(self):
        """One WATCH request from self.version, until it ends."""
        timeout = self.timeout * (1 + random.random())
        self.watches += 1
        for kind, obj in self.client.watch(self.res, self.version, timeout, self.label_selector, self.namespace,
                                           idle=timeout + IDLE_MARGIN, stop=self.stop, opened=self._opened):
            self.beat = time.monotonic()
            self.failing = 0
            self.version = (obj.get("metadata") or {}).get("resourceVersion") or self.version
            if kind == "BOOKMARK":
                continue
            obj.setdefault("apiVersion", self.res.api_version)
            obj.setdefault("kind", self.res.kind)
            obj = self._kept(obj)
            key = key_of(obj)
            with self.lock:
                old = self.cache.get(key)
                if kind == "DELETED":
                    self.cache.pop(key, None)
                else:
                    self.cache[key] = obj
            self._deliver(kind, obj, old)

    def run(self):
        while not self.stop.is_set():
            self.beat = time.monotonic()
            try:
                if self.version is None:
                    self.version = self._relist()
                    self.failing = 0
                self._watch_once()
            except Gone:
                LOG.info("watch of %s: resourceVersion %s expired (410 Gone); listing again",
                         self.res.plural, self.version)
                self.version = None
            except (KubeError, TransportError, OSError, ValueError) as err:
                self.errors += 1
                self.failing += 1
                if isinstance(err, (KubeError, ValueError)) and getattr(err, "status", None) != 429:
                    # the server refused the watch, or sent nonsense: start from a list. A 429 asks
                    # to come back later ("storage is (re)initializing": a restarted API server's
                    # watch cache is filling): the version is still good, as after a dropped
                    # connection.
                    self.version = None
                delay = retry_delay(self.failing)
                LOG.warning("watch of %s interrupted (%s); reconnecting in %.1fs", self.res.plural, err, delay)
                self.stop.wait(delay)


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
