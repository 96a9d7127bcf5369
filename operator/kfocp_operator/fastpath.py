"""The fast path: per-namespace policies, the tolerations whitelist of other namespaces, per-user and
per-group profiles and kfocp's edited or deleted objects applied in process, within about a second
of a namespace, an OpenShift User or Group appearing or changing, or an object being edited.

A playbook run costs seconds, so new namespaces and Users do not wait for one: the operator
calls the same builders the roles use (builders/namespace_policies.py, builders/profiles.py)
with the same settings (each role's contract, module_utils/settings.py: defaults and derived
settings in one place) and the same apply engine, with the same instance and sets as the roles, so
a later playbook run
finds the objects already as it wants them. Events that arrive together are applied as one batch.
"""
import hashlib
import json
import logging
import sys
import threading
import time

from ansible_collections.kfocp.kubeflow.plugins.module_utils import settings as contract
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError
from ansible_collections.kfocp.kubeflow.plugins.module_utils.engine import ApplyError, Engine
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import scc
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.namespace_policies import WHITELIST
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import (
    FORCE, INSTANCE, MANAGER, OWNERSHIP, PATCHED_PREFIX, SET, DefinitionError, label_owners, labels_held_by)

from kfocp_operator import memory
from kfocp_operator.kube import GROUPS, NAMESPACES, USERS, Informer

LOG = logging.getLogger("kfocp.operator.fastpath")
POLICIES_SET = "namespace-policies"
PROFILES_SET = "profiles"
ACCESS_SET = "profiles-access"
# After the first event of a batch, wait this long for the events that arrive with it.
BATCH_WINDOW = 0.05
# At most this many namespaces in one apply, the oldest first: in a burst, the first namespaces get
# their policies while the later ones are still arriving, instead of all at the end.
BATCH_NAMESPACES = 100


def tenancy_settings(variables, instance):
    """The settings of the tenancy roles' builders for a run's variables (CR spec > ConfigMap >
    environment), as the playbook's roles get them: each role's contract (module_utils/settings.py)
    on the variables as site.yml's roles see them (the service_mesh role's gateway with them).
    Returns {role: settings}; raises DefinitionError for settings no builder can use."""
    variables = contract.site_facts(dict(variables, kfocp_instance=instance))
    return dict((role, contract.resolve(role, variables)) for role in ("namespace_policies", "profiles", "scc"))


def _intern(value):
    return sys.intern(value) if isinstance(value, str) else value


def _interned(mapping):
    """The same strings as one object each: 2000 namespaces carry the same label keys and values,
    and each watch event is parsed on its own."""
    return dict((_intern(k), _intern(v)) for k, v in mapping.items())


# Values that thousands of cached objects carry alike (the label owners of a namespace, a phase, the
# labels of kfocp's objects) are kept once: cached objects are read, never changed in place. The
# table is bounded; past SHARED_MAX distinct values, new ones are kept as they come.
SHARED_MAX = 1024
_SHARED = {}


def _frozen(value):
    if isinstance(value, dict):
        return ("d",) + tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    if isinstance(value, list):
        return ("l",) + tuple(_frozen(v) for v in value)
    return value


def shared(value):
    """An object equal to `value` that every caller giving an equal value gets (while the table
    has room): many cached objects then hold one copy. Never change what it returns."""
    key = _frozen(value)
    found = _SHARED.get(key)
    if found is not None:
        return found
    if len(_SHARED) < SHARED_MAX:
        _SHARED[key] = value
    return value


def slim_namespace(ns):
    """What the fast path and the builders read of a Namespace: its name, labels, annotations and
    phase, and who set which label (Pod Security labels another manager set are left alone, and
    kfocp's own label changes call for nothing). The rest of its managed fields is most of its
    bytes, and the namespace cache holds every namespace of the cluster."""
    meta = ns.get("metadata") or {}
    kept = dict((key, meta[key]) for key in ("name", "resourceVersion", "deletionTimestamp") if meta.get(key))
    if "name" in kept:
        kept["name"] = _intern(kept["name"])
    for key in ("labels", "annotations"):
        if meta.get(key):
            kept[key] = _interned(meta[key])
    owners = [shared(entry) for entry in label_owners(meta.get("managedFields"))]
    if owners:
        kept["managedFields"] = owners
    slim = {"apiVersion": _intern(ns.get("apiVersion") or "v1"), "kind": "Namespace", "metadata": kept}
    phase = (ns.get("status") or {}).get("phase")
    if phase:
        slim["status"] = shared({"phase": phase})
    return slim


def slim_owned(obj):
    """What the fast path reads of kfocp's own objects: their kind, name, namespace and labels, and
    of each other field manager's managedFields entry its manager and a digest of the entry
    (enough to see that another writer changed something)."""
    meta = obj.get("metadata") or {}
    kept = dict((key, meta[key]) for key in ("name", "namespace", "resourceVersion") if meta.get(key))
    if "namespace" in kept:
        kept["namespace"] = _intern(kept["namespace"])
    if meta.get("labels"):
        kept["labels"] = shared(_interned(meta["labels"]))
    others = []
    for entry in meta.get("managedFields") or []:
        manager = str(entry.get("manager", ""))
        if not manager.startswith(MANAGER):
            digest = hashlib.sha256(json.dumps(entry, sort_keys=True).encode()).hexdigest()
            others.append({"manager": _intern(manager), "digest": digest})
    if others:
        kept["managedFields"] = others
    return {"apiVersion": _intern(obj.get("apiVersion")), "kind": _intern(obj.get("kind")), "metadata": kept}


def _decisive_labels(ns):
    """The labels of a namespace that decide its policies, split as: (those not kfocp's alone, those
    kfocp's own field managers hold). kfocp's patch markers decide nothing."""
    meta = ns.get("metadata") or {}
    ours, theirs = labels_held_by(meta, MANAGER), labels_held_by(meta, MANAGER, others=True)
    others = dict((k, v) for k, v in (meta.get("labels") or {}).items()
                  if (k in theirs or k not in ours) and not k.startswith(PATCHED_PREFIX))
    return others, ours


def own_label_change(old, new):
    """True when what changed between two versions of a namespace, as far as its policies go, is
    kfocp's own doing: its labels set by others and its whitelist annotation are the same, and
    every label kfocp held is still there with its value (kfocp only added or kept labels)."""
    before, after = _decisive_labels(old), _decisive_labels(new)
    return before[0] == after[0] and _whitelisted(old) == _whitelisted(new) and \
        all(after[1].get(k) == v for k, v in before[1].items())


def _builders():
    """The tenancy builders, or None while the collection has none."""
    try:
        from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies, profiles
    except ImportError as err:
        LOG.warning("fast path off: the collection has no tenancy builders (%s)", err)
        return None
    return namespace_policies, profiles


# A failed apply is retried per key: RETRY_FIRST seconds, doubled on every failure in a row, up to
# RETRY_MAX; a success resets it.
RETRY_FIRST = 1.0
RETRY_MAX = 60.0
# kfocp-labelled kinds whose edits and deletions are undone at once (namespace policies, contributor
# access, SCC grants); edits of other sets' objects start a full run.
WATCHED_KINDS = (("v1", "LimitRange"), ("rbac.authorization.k8s.io/v1", "RoleBinding"),
                 ("networking.k8s.io/v1", "NetworkPolicy"), ("maistra.io/v1", "ServiceMeshMember"))
SCC_SET = "scc"
PROFILES_KEY = ("profiles", "")
SCC_KEY = ("scc", "")


def retry_delay(failures):
    return min(RETRY_MAX, RETRY_FIRST * 2 ** min(failures - 1, 20))


def _others(obj):
    entries = (obj.get("metadata") or {}).get("managedFields") or []
    return sorted(json.dumps(e, sort_keys=True) for e in entries if not str(e.get("manager", "")).startswith(MANAGER))


def outside_edit(old, new):
    """True when someone other than kfocp changed the object: the managedFields entries of the
    other field managers differ between the two versions (kfocp's own applies change only its own
    entries)."""
    return old is None or _others(old) != _others(new)


class FastPath:
    """Watches namespaces, Users, Groups and kfocp's own objects, and applies, for the active
    Kubeflow: the policies of a new profile namespace, the tolerations whitelist of any other new
    namespace, the Profiles and access of Users and Groups, and whatever was edited or deleted of
    kfocp's namespace policies, contributor access and SCC grants.

    Work is kept per key (a namespace, "profiles", "scc"): events that arrive together are applied
    as one batch; a failed key is retried with its own backoff, not left for the next full run."""

    def __init__(self, client, collection_root, metrics=None, stop=None, on_drift=None):
        self.client = client
        self.root = collection_root
        self.metrics = metrics
        self.stop = stop or threading.Event()
        self.on_drift = on_drift  # on_drift(instance): an object of another set changed; a full run repairs it
        self.builders = _builders()
        self.lock = threading.Condition()
        self.instance = None
        self.policies = None
        self.profiles = None
        self.scc = None
        self.pending = {}  # key -> (namespace object or None, due time)
        self.failures = {}  # key -> failures in a row
        self.edited = set()  # (kind, namespace, name) of kfocp's own objects someone else edited
        self.namespaces = None
        self.users = None
        self.groups = None
        self.owned = []
        self.owned_for = None
        self.worker = None
        self.beat = time.monotonic()

    # ------------------------------------------------------------ configuration

    def configure(self, instance, variables):
        """Serve `instance` with these variables; starts the watches on first use."""
        if self.builders is None:
            return
        policies, _profiles = self.builders
        try:
            settings = tenancy_settings(variables, instance)
            ns_settings, pr_settings, scc_settings = settings["namespace_policies"], settings["profiles"], settings["scc"]
            policies.Settings(ns_settings).check()
        except DefinitionError as err:
            LOG.error("fast path for %s paused: %s", instance, err)
            self.disable(instance)
            return
        with self.lock:
            changed = (instance, ns_settings, pr_settings, scc_settings) != (
                self.instance, self.policies, self.profiles, self.scc)
            self.instance, self.policies, self.profiles, self.scc = instance, ns_settings, pr_settings, scc_settings
        self._start_watches(instance)
        if changed and self.namespaces.synced.is_set():  # new settings: every namespace is looked at again
            for ns in self.namespaces.items():
                self._namespace_event("ADDED", ns, None)
            self._queue(PROFILES_KEY)
        if self.worker is None:
            self.worker = threading.Thread(target=self._loop, name="fastpath", daemon=True)
            self.worker.start()

    def disable(self, instance=None):
        with self.lock:
            if instance is None or instance == self.instance:
                self.instance = None
                self.pending.clear()
                self.failures.clear()

    def _start_watches(self, instance):
        if self.namespaces is None:
            self.namespaces = Informer(self.client, NAMESPACES, self._namespace_event, stop=self.stop,
                                       name="informer-namespaces", transform=slim_namespace)
            self.users = Informer(self.client, USERS, self._user_event, stop=self.stop)
            self.groups = Informer(self.client, GROUPS, self._group_event, stop=self.stop)
            for informer in (self.namespaces, self.users, self.groups):
                informer.start()
        if self.owned_for != instance:
            for informer in self.owned:
                informer.stop.set()
            self.owned, self.owned_for = [], instance
            for api_version, kind in WATCHED_KINDS:
                try:
                    res = self.client.resource(api_version, kind)
                except KubeError:
                    continue  # not served here (the mesh's kinds without a mesh)
                informer = Informer(self.client, res, self._owned_event, label_selector="%s=%s" % (INSTANCE, instance),
                                    stop=threading.Event(), name="informer-owned-%s" % res.plural,
                                    transform=slim_owned)
                informer.start()
                self.owned.append(informer)

    def informers(self):
        return [i for i in [self.namespaces, self.users, self.groups] + list(self.owned) if i is not None]

    def synced(self):
        return all(i.synced.is_set() for i in self.informers())

    def healthy(self):
        """(ok, why): every watch works now."""
        for informer in self.informers():
            if not informer.healthy():
                return False, "watch of %s not synced or failing" % informer.res.plural
        return True, None

    def alive(self):
        return (self.worker is None or self.worker.is_alive()) and all(i.is_alive() for i in self.informers())

    def wedged(self, limit=600):
        """Why the fast path made no progress for `limit` seconds, or None."""
        if self.worker is not None and time.monotonic() - self.beat > limit:
            return "the fast path loop made no progress for %ds" % limit
        for informer in self.informers():
            if informer.stale():
                return "the watch of %s made no progress" % informer.res.plural
        return None

    # ------------------------------------------------------------ events

    def _queue(self, key, obj=None):
        with self.lock:
            previous = self.pending.get(key)
            due = previous[1] if previous else time.monotonic()
            self.pending[key] = (obj, due)
            self.lock.notify()

    def _namespace_event(self, kind, obj, old):
        if kind == "DELETED" or (obj.get("status") or {}).get("phase") == "Terminating":
            return
        if kind == "MODIFIED" and old is not None and own_label_change(old, obj):
            return  # only its labels (and the whitelist annotation) decide what it gets
        self._queue(("namespace", obj["metadata"]["name"]), obj)

    def _user_event(self, kind, obj, old):
        self._queue(PROFILES_KEY)

    def _group_event(self, kind, obj, old):
        """A Group's members get the access of the profiles it owns or contributes to at once.
        Access to take away (a member removed, the Group deleted) is pruned by a full run."""
        self._queue(PROFILES_KEY)
        before = set((old or {}).get("users") or []) if kind != "ADDED" else set()
        after = set(obj.get("users") or []) if kind != "DELETED" else set()
        if before - after and self.on_drift is not None and self.instance:
            LOG.info("group %s lost members: a full run takes their access away", obj["metadata"]["name"])
            self.on_drift(self.instance)

    def _owned_event(self, kind, obj, old):
        meta = obj.get("metadata") or {}
        if kind == "ADDED" or (kind == "MODIFIED" and not outside_edit(old, obj)) or not self.instance or \
                (meta.get("labels") or {}).get(INSTANCE) != self.instance:
            return  # its creation, kfocp's own change, or no longer the active instance's (uninstall)
        set_name = (meta.get("labels") or {}).get(SET)
        namespace = meta.get("namespace")
        live = self._live_namespace(namespace)
        if namespace and live is None:
            return  # its namespace is going: nothing to put back
        LOG.info("%s %s/%s of set %s was %s: applying its desired state again", obj.get("kind"), namespace or "",
                 meta.get("name"), set_name, "deleted" if kind == "DELETED" else "changed")
        if kind == "MODIFIED":
            with self.lock:
                self.edited.add((obj.get("kind"), namespace or "", meta.get("name")))
        if set_name in (POLICIES_SET, ACCESS_SET) and namespace:
            self._queue(("namespace", namespace), live)
        elif set_name == SCC_SET:
            self._queue(SCC_KEY)
        elif self.on_drift is not None and self.instance:
            self.on_drift(self.instance)

    def _live_namespace(self, name):
        ns = self.namespaces.get(name) if name and self.namespaces is not None else None
        if ns is None or (ns.get("status") or {}).get("phase") == "Terminating":
            return None
        return ns

    def depth(self):
        with self.lock:
            return len(self.pending)

    # ------------------------------------------------------------ batches

    def _due(self, now):
        return sorted((k for k, (_obj, due) in self.pending.items() if due <= now), key=lambda k: self.pending[k][1])

    def _loop(self):
        backlog = False
        while not self.stop.is_set():
            self.beat = time.monotonic()
            with self.lock:
                while not self.stop.is_set():
                    now = time.monotonic()
                    if self.instance and self._due(now):
                        break
                    waits = [due - now for _obj, due in self.pending.values()] if self.instance else []
                    self.lock.wait(min([1.0] + [max(0.01, w) for w in waits]))
                    self.beat = time.monotonic()
                if self.stop.is_set():
                    return
            if not backlog:
                time.sleep(BATCH_WINDOW)  # let the events that came together arrive
            with self.lock:
                due = self._due(time.monotonic())
                namespaces = [k for k in due if k[0] == "namespace"][:BATCH_NAMESPACES]
                keys = [k for k in due if k[0] != "namespace"] + namespaces
                batch = dict((k, self.pending.pop(k)[0]) for k in keys)
                backlog = len(self._due(time.monotonic())) > 0
                instance, policies, profiles, scc_settings = self.instance, self.policies, self.profiles, self.scc
            if not instance:
                continue
            try:
                failed = self._handle(batch, instance, policies, profiles, scc_settings)
            except Exception:  # pylint: disable=broad-except  # a bug must not stop the fast path: retry
                LOG.exception("fast path: a batch failed")
                failed = set(batch)
            self._settle(batch, failed)
            memory.trim()  # the batch's reads and writes are garbage now

    def _handle(self, batch, instance, policies, profiles, scc_settings):
        """Apply one batch; the keys that failed."""
        failed = set()
        if PROFILES_KEY in batch and not self._apply_profiles(instance, profiles):
            failed.add(PROFILES_KEY)
        if SCC_KEY in batch and not self._apply_scc(instance, scc_settings):
            failed.add(SCC_KEY)
        spaces = [(k, batch[k] or self._live_namespace(k[1])) for k in batch if k[0] == "namespace"]
        spaces = [(k, obj) for k, obj in spaces if obj is not None]
        if spaces and not self._apply_namespaces(instance, policies, profiles, [obj for _k, obj in spaces]):
            failed.update(k for k, _obj in spaces)
        return failed

    def _settle(self, batch, failed):
        """Reset the backoff of what succeeded; schedule what failed again, each key on its own backoff."""
        now = time.monotonic()
        with self.lock:
            for key in batch:
                if key not in failed:
                    self.failures.pop(key, None)
                    continue
                count = self.failures[key] = self.failures.get(key, 0) + 1
                if self.metrics is not None:
                    self.metrics.retries.labels("fastpath").inc()
                if key not in self.pending:  # a newer event is already queued: it goes at its own time
                    self.pending[key] = (batch[key], now + retry_delay(count))
            if failed:
                LOG.warning("fast path: %d key(s) failed, retrying: %s", len(failed),
                            ", ".join("%s %s" % k for k in sorted(failed)[:10]))

    def _engine(self, instance, set_name):
        return Engine(self.client, instance=instance, set_name=set_name)

    def _record(self, what, started, result=None, error=None):
        if self.metrics is None:
            return
        self.metrics.duration.labels(what).observe(time.monotonic() - started)
        self.metrics.reconciles.labels(what, "error" if error else "success").inc()
        if error:
            self.metrics.errors.labels(what).inc()
        if result is not None:
            for action, count in result.counts().items():
                if count:
                    self.metrics.objects.labels(action).inc(count)

    def _take_back(self, objs):
        """The objects, those kfocp owns outright that someone else edited marked FORCE: kfocp's
        fields of its own object are taken back. Shared patches and objects kfocp only ensures
        are never forced."""
        with self.lock:
            edited = set(self.edited)
        if not edited:
            return objs, set()
        out, taken = [], set()
        for obj in objs:
            meta = obj.get("metadata") or {}
            ref = (obj.get("kind"), meta.get("namespace") or "", meta.get("name"))
            if ref in edited and not (meta.get("annotations") or {}).get(OWNERSHIP):
                obj = dict(obj, metadata=dict(meta, annotations=dict(meta.get("annotations") or {}, **{FORCE: "true"})))
                taken.add(ref)
            out.append(obj)
        return out, taken

    def _apply(self, what, instance, set_name, objs):
        """The apply's result, or None when it failed."""
        started = time.monotonic()
        objs, taken = self._take_back(objs)
        try:
            result = self._engine(instance, set_name).apply(objs)
        except (ApplyError, DefinitionError, KubeError) as err:
            LOG.error("%s: %s", what, err)
            self._record(what, started, getattr(err, "result", None), error=True)
            return None
        self._record(what, started, result)
        if taken:
            with self.lock:
                self.edited -= taken
            LOG.info("%s: kfocp's fields of %d edited object(s) taken back", what, len(taken))
        return result

    def _apply_namespaces(self, instance, policies, profiles, namespaces):
        """True when every object of these namespaces was applied."""
        namespace_policies, profile_builder = self.builders
        ok = True
        objs, members = [], []
        for namespace in namespaces:
            if namespace_policies.is_profile_namespace(namespace, namespace_policies.Settings(policies)):
                members.append(namespace)
                objs += namespace_policies.objects_for_namespace(namespace, policies)
            else:
                objs += namespace_policies.whitelist_for_namespace(namespace, policies)
        if policies["namespace_policies_state"] == "present" and objs:
            result = self._apply("namespace-policies", instance, POLICIES_SET, objs)
            ok = result is not None
            if result is not None:
                counts = result.counts()
                LOG.info("policies of %d namespace(s) applied: %d created, %d updated, %d unchanged (%s)",
                         len(namespaces), counts["created"], counts["updated"], counts["unchanged"],
                         ", ".join("%s %.3fs" % stage for stage in sorted(result.timing.items())))
        if members and profiles["profiles_state"] == "present":
            names = set(ns["metadata"]["name"] for ns in members)
            objs = self._profile_objects(profile_builder, profiles)
            if objs is None:
                return False
            access = [o for o in objs if o["kind"] != "Profile" and o["metadata"].get("namespace") in names]
            if access:
                ok = self._apply("profiles-access", instance, ACCESS_SET, access) is not None and ok
        return ok

    def _profile_objects(self, builder, settings):
        """The profiles role's objects, or None when they could not be worked out."""
        users = self.users.items() if self.users else []
        groups = self.groups.items() if self.groups else []
        try:
            profiles = self.client.list(self.client.resource("kubeflow.org/v1", "Profile"))
            return builder.objects(settings, users, groups, profiles,
                                   self.namespaces.items() if self.namespaces else None)
        except (KubeError, DefinitionError) as err:
            LOG.error("profiles: %s", err)
            return None

    def _apply_profiles(self, instance, settings):
        """True when the Profiles and access of every User and Group were applied (or need none)."""
        if settings["profiles_state"] != "present":
            return True
        objs = self._profile_objects(self.builders[1], settings)
        if objs is None:
            return False
        ok = True
        profiles = [o for o in objs if o["kind"] == "Profile"]
        if profiles and settings["profiles_auto_from_users"]:
            result = self._apply("profiles", instance, PROFILES_SET, profiles)
            ok = result is not None
            if result is not None and result.changed:
                LOG.info("profiles applied: %s", result.counts())
        access = [o for o in objs if o["kind"] != "Profile"]
        if access:
            ok = self._apply("profiles-access", instance, ACCESS_SET, access) is not None and ok
        return ok

    def _apply_scc(self, instance, settings):
        """Put the SCC grants back as the scc role makes them (RoleBindings of live namespaces only)."""
        if settings["scc_state"] != "present":
            return True
        try:
            objs = scc.rolebindings(settings["scc_grants"], settings["scc_allowed"])
        except DefinitionError as err:
            LOG.error("scc: %s", err)
            return True  # the playbook run reports it
        objs = [o for o in objs if self._live_namespace(o["metadata"]["namespace"]) is not None]
        return not objs or self._apply("scc", instance, SCC_SET, objs) is not None


def _whitelisted(namespace):
    return ((namespace.get("metadata") or {}).get("annotations") or {}).get(WHITELIST)
