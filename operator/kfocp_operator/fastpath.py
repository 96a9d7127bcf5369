"""The fast path: per-namespace policies and per-user profiles applied in process, within about a
second of a profile namespace or an OpenShift User appearing.

A playbook run costs seconds, so new namespaces and Users do not wait for one: the operator
calls the same builders the roles use (builders/namespace_policies.py, builders/profiles.py)
and the same apply engine, with the same instance and sets as the roles, so a later playbook run
finds the objects already as it wants them. Events that arrive together are applied as one batch.
"""
import copy
import logging
import threading
import time

import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.mesh import service_mesh_settings
from ansible_collections.kfocp.kubeflow.plugins.module_utils.engine import ApplyError, Engine
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import PATCHED_PREFIX, DefinitionError

from kfocp_operator.kube import GROUPS, NAMESPACES, USERS, Informer, key_of
from kfocp_operator.spec import _templated

LOG = logging.getLogger("kfocp.operator.fastpath")
POLICIES_SET = "namespace-policies"
PROFILES_SET = "profiles"
ACCESS_SET = "profiles-access"
# After the first event of a batch, wait this long for the events that arrive with it.
BATCH_WINDOW = 0.05
# At most this many namespaces in one apply, the oldest first: in a burst, the first namespaces get
# their policies while the later ones are still arriving, instead of all at the end.
BATCH_NAMESPACES = 100


def role_settings(collection_root, role, variables, instance):
    """A role's variables for its builder: the role's plain defaults, overlaid with the run's
    variables (CR spec > ConfigMap > environment)."""
    path = collection_root / "roles" / role / "defaults" / "main.yml"
    defaults = (yaml.safe_load(path.read_text()) or {}) if path.exists() else {}
    settings = dict((k, v) for k, v in defaults.items() if not _templated(v))
    prefix = role + "_"
    settings.update((k, copy.deepcopy(v)) for k, v in variables.items() if k.startswith(prefix))
    settings["kfocp_instance"] = instance
    return settings


def policy_settings(collection_root, variables, instance):
    """The namespace_policies builder's settings, as the role's vars/main.yml passes them: the
    role's variables, and the service_mesh role's variables that decide mesh membership."""
    settings = role_settings(collection_root, "namespace_policies", variables, instance)
    settings["namespace_policies_service_mesh"] = service_mesh_settings(
        role_settings(collection_root, "service_mesh", variables, instance))
    return settings


def _own_labels_aside(obj):
    labels = (obj.get("metadata") or {}).get("labels") or {}
    return dict((k, v) for k, v in labels.items() if not k.startswith(PATCHED_PREFIX))


def _builders():
    """The tenancy builders, or None while the collection has none."""
    try:
        from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies, profiles
    except ImportError as err:
        LOG.warning("fast path off: the collection has no tenancy builders (%s)", err)
        return None
    return namespace_policies, profiles


class FastPath:
    """Watches profile namespaces and Users, and applies their objects for the active Kubeflow."""

    def __init__(self, client, collection_root, metrics=None, stop=None):
        self.client = client
        self.root = collection_root
        self.metrics = metrics
        self.stop = stop or threading.Event()
        self.builders = _builders()
        self.lock = threading.Condition()
        self.instance = None
        self.policies = None
        self.profiles = None
        self.selector = None
        self.pending_namespaces = {}
        self.pending_users = False
        self.namespaces = None
        self.users = None
        self.worker = None

    # ------------------------------------------------------------ configuration

    def configure(self, instance, variables):
        """Serve `instance` with these variables; starts the watches on first use."""
        if self.builders is None:
            return
        policies, profiles = self.builders
        ns_settings = policy_settings(self.root, variables, instance)
        pr_settings = role_settings(self.root, "profiles", variables, instance)
        try:
            policies.Settings(ns_settings).check()
            selector = ",".join("%s=%s" % kv for kv in sorted(
                policies.selector(ns_settings.get("namespace_policies_selector")
                                  or policies.DEFAULTS["namespace_policies_selector"]).items()))
        except DefinitionError as err:
            LOG.error("fast path for %s paused: %s", instance, err)
            self.disable(instance)
            return
        with self.lock:
            changed = (instance, ns_settings, pr_settings) != (self.instance, self.policies, self.profiles)
            self.instance, self.policies, self.profiles = instance, ns_settings, pr_settings
            restart = selector != self.selector
            self.selector = selector
        if restart:
            self._start_watches(selector)
        elif changed:  # new settings: every known profile namespace gets them now
            for ns in self.namespaces.items():
                self._namespace_event("ADDED", ns, None)
            self._user_event("MODIFIED", {}, None)
        if self.worker is None:
            self.worker = threading.Thread(target=self._loop, name="fastpath", daemon=True)
            self.worker.start()

    def disable(self, instance=None):
        with self.lock:
            if instance is None or instance == self.instance:
                self.instance = None
                self.pending_namespaces.clear()
                self.pending_users = False

    def _start_watches(self, selector):
        if self.namespaces is not None:
            self.namespaces.stop.set()
        self.namespaces = Informer(self.client, NAMESPACES, self._namespace_event, label_selector=selector,
                                   stop=threading.Event(), name="informer-profile-namespaces")
        self.namespaces.start()
        if self.users is None:
            self.users = Informer(self.client, USERS, self._user_event, stop=self.stop)
            self.users.start()

    def synced(self):
        return all(i is None or i.synced.is_set() for i in (self.namespaces, self.users))

    def alive(self):
        return all(i is None or i.is_alive() for i in (self.namespaces, self.users))

    # ------------------------------------------------------------ events

    def _namespace_event(self, kind, obj, old):
        if kind == "DELETED" or (obj.get("status") or {}).get("phase") == "Terminating":
            return
        if kind == "MODIFIED" and old is not None and _own_labels_aside(old) == _own_labels_aside(obj):
            return  # only its labels decide what it gets, and kfocp's own patch labels do not count
        with self.lock:
            self.pending_namespaces[key_of(obj)] = (obj, time.monotonic())
            self.lock.notify()

    def _user_event(self, kind, obj, old):
        with self.lock:
            self.pending_users = True
            self.lock.notify()

    def depth(self):
        with self.lock:
            return len(self.pending_namespaces) + (1 if self.pending_users else 0)

    # ------------------------------------------------------------ batches

    def _loop(self):
        backlog = False
        while not self.stop.is_set():
            with self.lock:
                while not self.stop.is_set() and not (self.instance and (self.pending_namespaces or self.pending_users)):
                    self.lock.wait(1.0)
                if self.stop.is_set():
                    return
            if not backlog:
                time.sleep(BATCH_WINDOW)  # let the events that came together arrive
            with self.lock:
                oldest = sorted(self.pending_namespaces, key=lambda key: self.pending_namespaces[key][1])
                batch = [self.pending_namespaces.pop(key) for key in oldest[:BATCH_NAMESPACES]]
                backlog = bool(self.pending_namespaces)
                users, self.pending_users = self.pending_users, False
                instance, policies, profiles = self.instance, self.policies, self.profiles
            if not instance:
                continue
            if users:
                self._apply_profiles(instance, profiles)
            if batch:
                self._apply_namespaces(instance, policies, profiles, batch)

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

    def _apply(self, what, instance, set_name, objs):
        started = time.monotonic()
        try:
            result = self._engine(instance, set_name).apply(objs)
        except (ApplyError, DefinitionError, KubeError) as err:
            LOG.error("%s: %s", what, err)
            self._record(what, started, getattr(err, "result", None), error=True)
            return None
        self._record(what, started, result)
        return result

    def _apply_namespaces(self, instance, policies, profiles, batch):
        namespace_policies, profile_builder = self.builders
        objs = []
        for namespace, _seen in batch:
            objs += namespace_policies.objects_for_namespace(namespace, policies)
        if (policies.get("namespace_policies_state") or "present") == "present" and objs:
            result = self._apply("namespace-policies", instance, POLICIES_SET, objs)
            if result is not None:
                counts = result.counts()
                LOG.info("policies of %d namespace(s) applied: %d created, %d updated, %d unchanged",
                         len(batch), counts["created"], counts["updated"], counts["unchanged"])
        if (profiles.get("profiles_state") or "present") == "present":
            names = set(ns["metadata"]["name"] for ns, _seen in batch)
            access = [o for o in self._profile_objects(profile_builder, profiles)
                      if o["kind"] != "Profile" and o["metadata"].get("namespace") in names]
            if access:
                self._apply("profiles-access", instance, ACCESS_SET, access)

    def _profile_objects(self, builder, settings):
        users = self.users.items() if self.users else []
        try:
            groups = self.client.list(self.client.resource(GROUPS.api_version, GROUPS.kind))
            profiles = self.client.list(self.client.resource("kubeflow.org/v1", "Profile"))
            return builder.objects(settings, users, groups, profiles,
                                   self.namespaces.items() if self.namespaces else None)
        except (KubeError, DefinitionError) as err:
            LOG.error("profiles: %s", err)
            return []

    def _apply_profiles(self, instance, settings):
        if (settings.get("profiles_state") or "present") != "present" or not settings.get("profiles_auto_from_users"):
            return
        objs = self._profile_objects(self.builders[1], settings)
        profiles = [o for o in objs if o["kind"] == "Profile"]
        if profiles:
            result = self._apply("profiles", instance, PROFILES_SET, profiles)
            if result is not None and result.changed:
                LOG.info("profiles applied: %s", result.counts())
        access = [o for o in objs if o["kind"] != "Profile"]
        if access:
            self._apply("profiles-access", instance, ACCESS_SET, access)
