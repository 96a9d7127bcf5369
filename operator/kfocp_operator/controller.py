"""The Kubeflow controller: one playbook run at a time per CR, changes during a run coalesced into
one follow-up run, periodic resync, a finalizer that runs the uninstall, one active CR per cluster."""
import logging
import os
import threading
import time

from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError

from kfocp_operator import FINALIZER, memory, status
from kfocp_operator.auth import playbook_env
from kfocp_operator.config import ConfigError, merge, reconcile_period
from kfocp_operator.kube import (KUBEFLOWS, Informer, get_kubeflow, now, patch_status, post_event, read_configmap,
                                 set_finalizers)
from kfocp_operator.playbook import extravars, playbook_roles, run
from kfocp_operator.processes import kill_tree
from kfocp_operator.workqueue import WorkQueue

LOG = logging.getLogger("kfocp.operator")
# Retries after a failure: FIRST_BACKOFF seconds, doubled on every failure in a row, up to
# MAX_BACKOFF; a success starts again from FIRST_BACKOFF.
FIRST_BACKOFF = 5
MAX_BACKOFF = 600


def active_key(crs):
    """The CR that is acted on: the oldest (then by namespace and name); the others are refused."""
    if not crs:
        return None
    oldest = min(crs, key=lambda c: (c["metadata"].get("creationTimestamp") or "", c["metadata"].get("namespace") or "",
                                     c["metadata"]["name"]))
    return (oldest["metadata"].get("namespace") or "", oldest["metadata"]["name"])


def backoff(failures):
    """Seconds before the retry that follows `failures` failures in a row."""
    return min(MAX_BACKOFF, FIRST_BACKOFF * 2 ** min(failures - 1, 20))


class Settings:
    """How the operator runs: where the collection and the cluster are, what it watches."""

    def __init__(self, collections_path, collection_root, kubeconfig=None, namespace=None, operator_namespace=None,
                 configmap="kfocp-operator-config", workers=2, default_period=30 * 60, environ=None,
                 fast_path=True, playbook="site.yml"):
        self.collections_path = collections_path
        self.root = collection_root
        self.kubeconfig = kubeconfig
        self.namespace = namespace or None
        self.operator_namespace = operator_namespace
        self.configmap = configmap
        self.workers = workers
        self.default_period = default_period
        self.environ = dict(os.environ if environ is None else environ)
        self.fast_path = fast_path
        self.playbook = playbook


class Controller:
    def __init__(self, client, settings, model, metrics, fastpath=None, stop=None):
        self.client = client
        self.settings = settings
        self.model = model
        self.metrics = metrics
        self.fastpath = fastpath
        self.stop = stop or threading.Event()
        self.queue = WorkQueue()
        self.generations = {}
        self.failures = {}
        self.running = set()  # keys whose playbook runs now
        self.beats = {}  # worker thread -> (time of its last turn, the key it handles or None)
        self.informer = Informer(client, KUBEFLOWS, self._event, namespace=settings.namespace, stop=self.stop)
        self.threads = []
        self.site = settings.root / "playbooks" / settings.playbook
        self.uninstall = settings.root / "playbooks" / "uninstall.yml"

    # ------------------------------------------------------------ lifecycle

    def start(self):
        self.informer.start()
        for index in range(self.settings.workers):
            thread = threading.Thread(target=self._work, name="worker-%d" % index, daemon=True)
            thread.start()
            self.threads.append(thread)

    def shutdown(self):
        self.stop.set()
        self.queue.shutdown()

    def alive(self):
        return self.informer.is_alive() and all(t.is_alive() for t in self.threads)

    def _cancelled(self):
        """ansible-runner's cancel callback: on shutdown, end the run and every process it started.
        ansible-runner kills only the playbook's process group; Ansible's workers have sessions of
        their own, and one in the middle of a task would go on applying alone."""
        if not self.stop.is_set():
            return False
        kill_tree(os.getpid())
        return True

    def join(self, timeout):
        """Wait until the workers have ended (after shutdown a running playbook is cancelled, which
        ansible-runner notices within seconds); False if one is still running after `timeout`."""
        deadline = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self.threads)

    # ------------------------------------------------------------ events

    def owned(self, cr):
        """Whether `cr` may drive the operator: it is in the operator's namespace. OLM aggregates
        edit rights on every owned CRD into the admin and edit roles of every namespace, so a
        Kubeflow elsewhere may be any project editor's."""
        namespace = self.settings.operator_namespace
        return not namespace or (cr["metadata"].get("namespace") or "") == namespace

    def _candidates(self, extra=()):
        """The CRs that may become the active one: those in the operator's namespace."""
        return [c for c in list(self.informer.items()) + list(extra) if self.owned(c)]

    def _event(self, kind, obj, old):
        key = (obj["metadata"].get("namespace") or "", obj["metadata"]["name"])
        if kind == "DELETED":
            self.queue.forget(key)
            self.generations.pop(key, None)
            self.failures.pop(key, None)
            if not self.owned(obj):
                return
            if self.fastpath is not None:
                self.fastpath.disable(obj["metadata"]["name"])
            if active_key(self._candidates([obj])) == key:  # the active CR is gone: a refused one may take over
                for other in self._candidates():
                    self.queue.add((other["metadata"].get("namespace") or "", other["metadata"]["name"]))
            return
        meta = obj["metadata"]
        if kind == "MODIFIED" and old is not None:
            before = old["metadata"]
            if (before.get("generation") == meta.get("generation")
                    and bool(before.get("deletionTimestamp")) == bool(meta.get("deletionTimestamp"))
                    and before.get("annotations") == meta.get("annotations")):
                return  # a status or finalizer change: nothing to do
        self.queue.add(key)
        self.metrics.queue_depth.labels("kubeflow").set(self.queue.depth())

    def drift(self, instance):
        """An object of `instance` that only a full run makes was edited or deleted: run it again,
        unless a run is under way (its own prune deletes objects; the run converges them)."""
        for obj in self.informer.items():
            key = (obj["metadata"].get("namespace") or "", obj["metadata"]["name"])
            if key[1] == instance and key not in self.running:
                LOG.info("%s/%s: an object of it was edited or deleted; running again", *key)
                self.queue.add(key)

    def wedged(self, limit=120):
        """Why a worker or the watch stopped turning, or None. A worker handling a CR is busy, not wedged."""
        now = time.monotonic()
        for name, (beat, key) in list(self.beats.items()):
            if key is None and now - beat > limit:
                return "worker %s made no progress for %ds" % (name, now - beat)
        if self.informer.stale(now):
            return "the Kubeflow watch made no progress"
        return None

    def _work(self):
        name = threading.current_thread().name
        while not self.stop.is_set():
            self.beats[name] = (time.monotonic(), None)
            key = self.queue.get(timeout=1.0)
            self.metrics.queue_depth.labels("kubeflow").set(self.queue.depth())
            if key is None:
                continue
            self.beats[name] = (time.monotonic(), key)
            self.running.add(key)
            try:
                again = self.reconcile(key)
            except Exception as err:  # pylint: disable=broad-except  # keep the worker; retry with backoff
                LOG.exception("reconcile of %s/%s failed", *key)
                self.metrics.errors.labels("kubeflow").inc()
                again = self._backoff(key)
                self._safe_status(key, {"conditions": [
                    status.condition(status.DEGRADED, True, "OperatorError", str(err))]})
            finally:
                self.running.discard(key)
                self.queue.done(key)
                memory.trim()
            if again:
                self.queue.add_after(key, again)

    def _backoff(self, key):
        count = self.failures.get(key, 0) + 1
        self.failures[key] = count
        delay = backoff(count)
        self.metrics.retries.labels("kubeflow").inc()
        self.metrics.backoff.labels("kubeflow").set(delay)
        return delay

    # ------------------------------------------------------------ status

    def _write_status(self, cr, new):
        body = dict(new)
        if "conditions" in new:
            old = (cr.get("status") or {}).get("conditions") or []
            body["conditions"] = status.merge_conditions(old, new["conditions"], now())
        try:
            updated = patch_status(self.client, cr, body)
        except KubeError as err:
            LOG.warning("could not write the status of %s/%s: %s", cr["metadata"].get("namespace"),
                        cr["metadata"]["name"], err)
            return cr
        return updated or cr

    def _safe_status(self, key, new):
        """Write a status after a failure, when the API server lets it (it may be the failure)."""
        try:
            cr = get_kubeflow(self.client, *key)
        except KubeError as err:
            LOG.warning("could not read %s/%s to write its status: %s", key[0], key[1], err)
            return
        if cr is not None:
            self._write_status(cr, new)

    # ------------------------------------------------------------ reconcile

    def reconcile(self, key):
        """Handle one CR; return seconds until it should be handled again, or None."""
        cr = get_kubeflow(self.client, *key)
        if cr is None:
            return None
        meta = cr["metadata"]
        generation = meta.get("generation")
        if not self.owned(cr):
            return self._refuse_outside(cr, generation)
        active = active_key(self._candidates() or [cr])
        if active != key:
            return self._refuse(cr, active, generation)
        if meta.get("deletionTimestamp"):
            return self._finalize(cr, key)
        if FINALIZER not in (meta.get("finalizers") or []):
            cr = set_finalizers(self.client, cr, (meta.get("finalizers") or []) + [FINALIZER]) or cr
        started = time.monotonic()
        configmap = read_configmap(self.client, self.settings.operator_namespace, self.settings.configmap)
        try:
            variables, ignored = merge(self.model, cr.get("spec") or {}, configmap, self.settings.environ)
            period = reconcile_period(meta.get("annotations"), variables, self.settings.default_period)
        except ConfigError as err:
            self._write_status(cr, {"observedGeneration": generation, "conditions": [
                status.condition(status.READY, False, "InvalidSpec", str(err), generation),
                status.condition(status.DEGRADED, True, "InvalidSpec", str(err), generation)]})
            post_event(self.client, cr, "Warning", "InvalidSpec", str(err))
            return None
        if ignored:
            LOG.warning("ConfigMap %s/%s: keys that are no setting were ignored: %s",
                        self.settings.operator_namespace, self.settings.configmap, ", ".join(ignored))
        if self.fastpath is not None:
            self.fastpath.configure(meta["name"], variables)
        cr = self._write_status(cr, {"conditions": status.running(generation)})
        post_event(self.client, cr, "Normal", "Reconciling", "running playbooks/%s for generation %s" % (self.site.name, generation))
        LOG.info("%s/%s: running %s for generation %s", key[0], key[1], self.site.name, generation)
        args = extravars(cr, variables, self.settings.kubeconfig)
        args["kfocp_report_status"] = False  # this operator writes the status itself
        result = run(self.site, args, self.settings.collections_path, cancel=self._cancelled,
                     env=playbook_env(self.settings.kubeconfig),
                     log=logging.getLogger("kfocp.operator.playbook"))
        if result.status == "canceled":  # the operator is stopping: the next one runs it again
            LOG.info("%s/%s: run of %s cancelled, the operator is stopping", key[0], key[1], self.site.name)
            return None
        new = status.after_run(result, generation, playbook_roles(self.site))
        self._write_status(get_kubeflow(self.client, *key) or cr, new)
        elapsed = time.monotonic() - started
        self.metrics.duration.labels("kubeflow").observe(elapsed)
        self.metrics.reconciles.labels("kubeflow", "success" if result.ok else "failed").inc()
        if result.ok:
            self.failures.pop(key, None)
            self.metrics.backoff.labels("kubeflow").set(0)
            post_event(self.client, cr, "Normal", "Reconciled", "%s changed, %s ok in %.1fs"
                       % (result.totals["changed"], result.totals["ok"], elapsed))
            LOG.info("%s/%s: reconciled in %.1fs (%d changed, %d ok); next resync in %ds", key[0], key[1], elapsed,
                     result.totals["changed"], result.totals["ok"], period)
            return period or None
        self.metrics.errors.labels("kubeflow").inc()
        message = new["conditions"][0]["message"]
        post_event(self.client, cr, "Warning", new["conditions"][0]["reason"], message)
        LOG.error("%s/%s: run failed: %s", key[0], key[1], message)
        return self._backoff(key)

    def _refuse(self, cr, active, generation):
        ready = status.get((cr.get("status") or {}).get("conditions"), status.READY)
        if not (ready and ready.get("reason") == "Refused" and ready.get("observedGeneration") == generation):
            new = status.refused("%s/%s" % active, generation)
            self._write_status(cr, new)
            post_event(self.client, cr, "Warning", "SingletonConflict", new["conditions"][0]["message"])
            LOG.warning("%s/%s refused: %s/%s is the active Kubeflow", cr["metadata"].get("namespace"),
                        cr["metadata"]["name"], *active)
        return None

    def _refuse_outside(self, cr, generation):
        """A Kubeflow outside the operator's namespace: nothing is done but say why, once per generation."""
        ready = status.get((cr.get("status") or {}).get("conditions"), status.READY)
        if not (ready and ready.get("reason") == "Refused" and ready.get("observedGeneration") == generation):
            new = status.outside(self.settings.operator_namespace, cr["metadata"].get("namespace"), generation)
            self._write_status(cr, new)
            post_event(self.client, cr, "Warning", status.OUTSIDE, new["conditions"][0]["message"])
            LOG.warning("%s/%s refused: not in the operator's namespace %s", cr["metadata"].get("namespace"),
                        cr["metadata"]["name"], self.settings.operator_namespace)
        return None

    def _finalize(self, cr, key):
        meta = cr["metadata"]
        if FINALIZER not in (meta.get("finalizers") or []):
            return None
        if self.fastpath is not None:
            self.fastpath.disable(meta["name"])
        generation = meta.get("generation")
        cr = self._write_status(cr, status.uninstalling(generation))
        post_event(self.client, cr, "Normal", "Uninstalling", "running playbooks/uninstall.yml")
        LOG.info("%s/%s: deleted; running uninstall.yml", *key)
        started = time.monotonic()
        try:
            variables, _ignored = merge(self.model, cr.get("spec") or {}, {}, self.settings.environ)
        except ConfigError:
            variables = {}
        result = run(self.uninstall, extravars(cr, variables, self.settings.kubeconfig),
                     self.settings.collections_path, cancel=self._cancelled,
                     env=playbook_env(self.settings.kubeconfig),
                     log=logging.getLogger("kfocp.operator.playbook"))
        if result.status == "canceled":  # the operator is stopping; the finalizer stays for the next one
            LOG.info("%s/%s: uninstall cancelled, the operator is stopping; finalizer kept", *key)
            return None
        self.metrics.duration.labels("uninstall").observe(time.monotonic() - started)
        self.metrics.reconciles.labels("uninstall", "success" if result.ok else "failed").inc()
        if not result.ok:
            self.metrics.errors.labels("uninstall").inc()
            message = "; ".join(result.failures) or "uninstall.yml failed (rc %s)" % result.rc
            self._write_status(get_kubeflow(self.client, *key) or cr, status.uninstall_failed(message, generation))
            post_event(self.client, cr, "Warning", "UninstallFailed", message)
            LOG.error("%s/%s: uninstall failed, finalizer kept: %s", key[0], key[1], message)
            return self._backoff(key)
        for _attempt in range(5):
            fresh = get_kubeflow(self.client, *key)
            if fresh is None:
                break
            try:
                set_finalizers(self.client, fresh, [f for f in fresh["metadata"].get("finalizers") or []
                                                    if f != FINALIZER])
                break
            except KubeError as err:
                if err.status != 409:
                    raise
        post_event(self.client, cr, "Normal", "Uninstalled", "everything this Kubeflow created is removed")
        LOG.info("%s/%s: uninstalled in %.1fs; finalizer removed", key[0], key[1], time.monotonic() - started)
        return None
