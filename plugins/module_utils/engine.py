# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The apply engine: the only code in kfocp that writes to the API.

It applies a list of objects with server-side apply (field manager `kfocp`), concurrently and in
phases (CRDs, then Namespaces, then the rest, then admission webhooks), labels what it creates as
kfocp's, reports `changed` exactly, supports check and diff mode, and prunes only what it owns.

The cost of a run is one LIST per kind plus one PATCH per object that is not already as desired;
an object whose desired state is unchanged since kfocp last applied it, and whose fields all
still hold their values, costs no request at all. Outside check and diff mode the LISTs read
metadata only: the digest of the desired state, and kfocp's managed fields, which lose any field
another writer changed or removed (objects.unchanged_since_applied).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError, UnknownKind
from ansible_collections.kfocp.kubeflow.plugins.module_utils.transport import TransportError

CREATED, UPDATED, UNCHANGED, DELETED, RELEASED, SKIPPED, FAILED, CONFLICT = (
    "created", "updated", "unchanged", "deleted", "released", "skipped", "failed", "conflict")
CHANGES = (CREATED, UPDATED, DELETED, RELEASED)
# Up to this many objects of a kind are read with a GET each; more, with one LIST per kind of
# kfocp's labelled objects (and one metadata LIST for the existence of the others). A run that
# prunes lists every kind it applies, since prune needs the list anyway.
_GET_LIMIT = 32
# Seconds of one watch request while waiting for CRDs to be Established (a new one follows).
_WATCH_WINDOW = 2
# Threads that read, while the apply runs, what prune will scan of the kinds the run does not apply.
_PRESCAN_THREADS = 8
# Kinds never pruned or scanned: they are not desired state.
_NEVER_SCAN = {("v1", "Event"), ("events.k8s.io/v1", "Event"), ("v1", "ComponentStatus"),
               ("v1", "Endpoints"), ("discovery.k8s.io/v1", "EndpointSlice"),
               ("coordination.k8s.io/v1", "Lease")}
# The strategy of an object that takes over what someone else created (see Engine._mode).
_ADOPT = "adopt"


class ApplyError(Exception):
    """The run failed; `result` holds what was done before it stopped."""

    def __init__(self, message, result=None):
        super(ApplyError, self).__init__(message)
        self.result = result


class Item:
    __slots__ = ("index", "ref", "obj", "mode", "shared", "set", "phase", "res", "live", "exists", "action", "diff",
                 "force", "manager", "adopt", "applied", "partial")

    def __init__(self, index, obj, mode, set_name=None, force=False, manager=o.MANAGER, adopt=False):
        self.index = index
        self.set = set_name
        self.manager = manager  # the field manager that applies it
        self.force = force or adopt
        self.adopt = adopt  # take it over when someone else created it (o.ADOPT)
        self.applied = None  # the API server's answer to the apply (a CRD's status is read from it)
        self.obj = obj
        self.ref = o.ref(obj)
        self.mode = mode
        self.shared = mode == o.SHARED
        # a shared Namespace is never created, so nothing waits for it: it goes with the rest
        self.phase = o.PHASE_MAIN if self.shared and self.ref.kind == "Namespace" else o.phase(self.ref.kind)
        self.res = None
        self.live = None      # the live object when kfocp had labelled it, else None
        self.partial = False  # True when `live` holds its metadata only (a PartialObjectMetadata)
        self.exists = None    # True/False when known, None when it must be looked up
        self.action = None
        self.diff = None


class Result:
    def __init__(self):
        self.items = []
        self.diffs = []
        self.errors = []
        self.warnings = []
        self.adopted = []  # objects someone else created that this run took over
        self.timing = {}  # seconds spent in each stage of the run

    @contextmanager
    def timed(self, stage):
        """Add the seconds the block takes to `stage` in `timing`."""
        started = time.monotonic()
        try:
            yield
        finally:
            self.timing[stage] = round(self.timing.get(stage, 0) + time.monotonic() - started, 3)

    def record(self, ref, action, message=None):
        entry = {"apiVersion": ref.api_version, "kind": ref.kind, "name": ref.name, "action": action}
        if ref.namespace:
            entry["namespace"] = ref.namespace
        if message:
            entry["message"] = message
        self.items.append(entry)
        if action == FAILED:
            self.errors.append("%s: %s" % (o.describe(ref), message))

    @property
    def changed(self):
        return any(item["action"] in CHANGES for item in self.items)

    def counts(self):
        counts = dict.fromkeys((CREATED, UPDATED, UNCHANGED, DELETED, RELEASED, SKIPPED, FAILED, CONFLICT), 0)
        for item in self.items:
            counts[item["action"]] += 1
        return counts

    def as_dict(self, report="changed"):
        shown = self.items if report == "all" else [i for i in self.items if i["action"] != UNCHANGED]
        out = {"changed": self.changed, "summary": self.counts(), "objects": shown}
        if self.warnings:
            out["api_warnings"] = sorted(set(self.warnings))
        if self.diffs:
            out["diff"] = self.diffs
        if self.adopted:
            out["adopted"] = self.adopted
        skipped = ["%s %s%s: %s" % (i["kind"], i.get("namespace", "") and i["namespace"] + "/", i["name"],
                                    i.get("message", "")) for i in self.items if i["action"] == SKIPPED]
        if skipped:
            out["left_alone"] = skipped
        if self.errors:
            out["failures"] = list(self.errors)
        if self.timing:
            out["timing"] = dict(self.timing)
        return out


class Engine:
    def __init__(self, client, instance="kfocp", set_name=None, field_manager=o.MANAGER, force=False,
                 adopt=False, check_mode=False, diff=False, concurrency=32, wait_timeout=120, max_prune_share=None):
        for field, value in (("instance", instance), ("set", set_name)):
            if value is not None and (not value or len(value) > 63 or not o.LABEL_VALUE.match(value)):
                raise o.DefinitionError("%s %r is not a valid label value (at most 63 characters: letters, "
                                        "digits, '-', '_', '.', starting and ending alphanumeric)" % (field, value))
        self.client = client
        self.instance = instance
        self.set = set_name
        self.field_manager = field_manager
        self.force = force
        self.adopt = adopt
        self.check = check_mode
        self.diff = diff
        self.concurrency = max(1, int(concurrency))
        self.wait_timeout = wait_timeout
        # prune takes every object of the set out of at most this share of its namespaces (None:
        # any), so that a wrong input that empties the desired state cannot empty the cluster
        self.max_prune_share = max_prune_share
        self._lists = {}
        self._prescanned = {}  # (group, kind, shared): the future of prune's LIST of it (prescan)
        self._prescan_pool = None
        self._prune = False
        self._deleted = []

    # ------------------------------------------------------------ public operations

    def apply(self, definitions, prune=False, prune_kinds=None):
        """Make the API hold `definitions`; with `prune`, delete what this set owned before and no
        longer wants. Bad input fails before any change. `prune_kinds`, when given, are every kind
        ((group, kind)) the set can hold: prune looks for its objects in those only, instead of in
        every served kind (see _scan_kinds), and a definition of this set of another kind fails
        the run before any change (a later prune would not look for it)."""
        result = Result()
        self._lists = {}  # the live state is read anew by every run
        self._prune = prune
        try:
            with result.timed("plan"):
                items = self._plan(definitions)
                if prune_kinds is not None:
                    check_kinds_declared(items, prune_kinds, self.set)
            wanted = set(_unversioned(item.ref) for item in items)
            self._apply_phases(items, result)
            self.end_prescan()  # prune reads what prescan read, once it is all in
            if result.errors:
                raise ApplyError(self._summary("apply failed", result), result)
            if prune:
                if not self.set:
                    raise o.DefinitionError("prune needs a set: the objects it may delete are those of the same set")
                with result.timed("prune"):
                    self._delete_owned(wanted, result, self.set, self.max_prune_share,
                                       None if prune_kinds is None else set(prune_kinds))
        finally:
            self.end_prescan()
            self._prescanned = {}
        self._finish(result, "prune failed")
        return result

    def prescan(self):
        """Start reading, in the background, what a prune of this set will scan: the set's objects
        of every kind served now, so that the reads go on while the caller renders the definitions
        (and the API server, idle, prepares what they need); the next apply uses them, for prune,
        and ends them.

        Only reads: prune still deletes only after a clean apply, and only objects that a LIST
        of this run found with this instance's and set's labels and that the run does not want.
        Reading them before the apply changes nothing of that: the apply writes only wanted
        objects, and its own LISTs of the kinds it applies are used first. A kind read for the
        first time can cost the API server much (it prepares a custom resource's handler on its
        first request): that is what this overlaps. A read that fails is made again by the scan,
        which then reports it as it would."""
        if not self.set or self._prescan_pool is not None:
            return
        kinds = self._scan_kinds()
        if not kinds:
            return
        self._prescan_pool = ThreadPoolExecutor(max_workers=min(_PRESCAN_THREADS, len(kinds)))
        for res in kinds:
            for shared in (False, True):
                self._prescanned[_kind(res.api_version, res.kind) + (shared,)] = self._prescan_pool.submit(
                    self._prune_list, res, shared, self.set)

    def end_prescan(self):
        """Wait for prescan's reads in flight and cancel those not started (apply does it)."""
        if self._prescan_pool is not None:
            self._prescan_pool.shutdown(wait=True, cancel_futures=True)
            self._prescan_pool = None

    def _apply_phases(self, items, result):
        """Apply the planned items phase by phase (see apply)."""
        # One failure does not stop the rest: every phase is applied as far as it can be (an object
        # whose CRD or namespace failed fails in turn, naming its kind or namespace), and the run
        # fails at the end with every failure and its object. Prune runs only after a clean apply.
        # While the API server establishes the CRDs this run created or changed, the Namespaces and
        # every object of another kind are applied; only the custom resources of those CRDs, and
        # the admission webhooks (last), wait for them.
        waiting, new_kinds = None, set()
        served = set(self.client.resources())
        for phase in sorted(set(item.phase for item in items)):
            if self._cut_off(result):
                break  # nothing more can be sent
            batch = [item for item in items if item.phase == phase]
            if waiting is not None:
                self._absent_by_kind(batch, self._fresh_kinds(waiting, served))
            if waiting is not None and phase == o.PHASE_MAIN:
                self._apply_batch([i for i in batch if (i.ref.api_version, i.ref.kind) not in new_kinds], result)
                batch = [i for i in batch if (i.ref.api_version, i.ref.kind) in new_kinds]
            if waiting is not None and phase >= o.PHASE_MAIN:
                with result.timed("wait"):
                    self._crds_ready(waiting, result)
                waiting = None
            self._apply_batch(batch, result)
            if phase == o.PHASE_CRD:
                waiting = [i for i in batch if i.action in (CREATED, UPDATED)]
                new_kinds = set((kind[0], kind[1]) for i in waiting for kind in o.crd_kinds(i.obj))
        if waiting is not None and not self._cut_off(result):
            with result.timed("wait"):
                self._crds_ready(waiting, result)

    def _cut_off(self, result):
        """True when this run found the API server not answering: nothing more can be sent. A
        long-lived client (the operator's) keeps the mark of an earlier outage until a request is
        answered; that mark alone stops nothing: the run sends its objects, and the first answer
        clears it."""
        return bool(result.errors) and bool(self.client.unreachable)

    def _fresh_kinds(self, crd_items, served):
        """The kinds of the CRDs this run created that no API served before it: none of their
        objects can exist yet."""
        if self.check:
            return set()
        return set((api_version, kind) for item in crd_items if item.action == CREATED
                   for api_version, kind, _plural, _namespaced in o.crd_kinds(item.obj)
                   if (api_version, kind) not in served)

    def _absent_by_kind(self, batch, fresh):
        """Mark the items of `fresh` kinds as absent, and this run's lists of those kinds as empty
        (what prune scans), so that none is read: a LIST or GET each would only find nothing."""
        for api_version, kind in fresh:
            self._lists.setdefault((api_version, kind, False, self.set), {})
            self._lists.setdefault((api_version, kind, True, None), {})
        for item in batch:
            if (item.ref.api_version, item.ref.kind) in fresh and item.exists is None:
                item.exists = False

    def _apply_batch(self, batch, result):
        with result.timed("read"):
            self._resolve(batch, result)
            self._fetch(batch)
        with result.timed("compare and write"):
            self._map(self._apply_one, [i for i in batch if i.action is None], result, self._settled)

    def delete(self, definitions, wait=False):
        """Delete the listed objects that kfocp owns, and take back kfocp's fields from the listed
        shared objects. Objects kfocp did not create are left alone and reported as skipped."""
        result = Result()
        items = self._plan(definitions)
        for phase in sorted(set(item.phase for item in items), reverse=True):
            batch = [item for item in items if item.phase == phase]
            for item in batch:
                try:
                    item.res = self.client.resource(item.ref.api_version, item.ref.kind)
                except UnknownKind:
                    item.action = SKIPPED  # its kind is gone, so is the object
                    result.record(item.ref, SKIPPED, "kind not served")
            self._map(self._delete_one, [i for i in batch if i.action is None], result)
            self._deleted += [(item.res, item.ref) for item in batch if item.action == DELETED]
        if wait:
            self._wait_gone(result)
        self._finish(result, "delete failed")
        return result

    def delete_all(self, set_name=None, wait=False):
        """Delete every object this instance (and set, if given) owns and release every object it
        patched: uninstall, driven by the ownership labels."""
        result = Result()
        self.end_prescan()
        self._prescanned = {}
        self._delete_owned(set(), result, set_name)
        if wait:
            self._wait_gone(result)
        self._finish(result, "uninstall failed")
        return result

    # ------------------------------------------------------------ planning

    def _plan(self, definitions):
        if not isinstance(definitions, list):
            raise o.DefinitionError("definitions must be a list of objects")
        items = []
        for index, obj in enumerate(definitions):
            o.validate(obj, index)
        o.check_unique(definitions)
        for index, obj in enumerate(definitions):
            prepared, mode = o.prepare(obj, self.instance, self.set)
            set_name = ((obj.get("metadata") or {}).get("annotations") or {}).get(o.SET_OVERRIDE) or self.set
            applier = o.applying_set(obj, mode, self.set, self.instance)
            manager = o.patch_manager(self.field_manager, applier) if applier else self.field_manager
            items.append(Item(index, prepared, mode, set_name or self.instance, o.forced(obj), manager,
                              o.adopted(obj)))
        self._check_kinds(items)
        return items

    def _check_kinds(self, items):
        """Every kind must be served, or defined by a CRD in the same list; namespaced kinds need a
        namespace. Checked before any change."""
        served = self.client.resources()
        from_crds = {}
        for item in items:
            if item.ref.kind == "CustomResourceDefinition":
                for api_version, kind, plural, namespaced in o.crd_kinds(item.obj):
                    from_crds[(api_version, kind)] = namespaced
        problems = []
        for item in items:
            key = (item.ref.api_version, item.ref.kind)
            if key in served:
                namespaced = served[key].namespaced
            elif key in from_crds:
                namespaced = from_crds[key]
            else:
                problems.append("definitions[%d] %s: the API server has no kind %s in %s; check apiVersion "
                                "and kind, or install the CRD or operator that provides it%s"
                                % (item.index, o.describe(item.ref), item.ref.kind, item.ref.api_version,
                                   _PROVIDERS.get(o.group_version(item.ref.api_version)[0], "")))
                continue
            if namespaced and not item.ref.namespace:
                problems.append("definitions[%d] %s: metadata.namespace is required, %s is namespaced"
                                % (item.index, o.describe(item.ref), item.ref.kind))
            elif not namespaced and item.ref.namespace:
                item.obj["metadata"].pop("namespace")
                item.ref = o.ref(item.obj)
        if problems:
            raise o.DefinitionError("; ".join(problems))

    def _resolve(self, batch, result):
        for item in batch:
            try:
                item.res = self.client.resource(item.ref.api_version, item.ref.kind)
            except UnknownKind:
                if self.check:  # its CRD is in this list and was only dry-run
                    item.action = CREATED
                    result.record(item.ref, CREATED, "its CRD is created first")
                    continue
                self.client.forget()
                try:
                    item.res = self.client.resource(item.ref.api_version, item.ref.kind)
                except UnknownKind as err:
                    item.action = FAILED
                    result.record(item.ref, FAILED, str(err))

    def _owned_list(self, res, shared, set_name):
        """kfocp's labelled objects of one kind (those it owns in `set_name`, all sets when None, or
        those it patched), by (namespace, name); one LIST per kind, set and run. They are read as
        metadata only, unless check or diff mode shows them: their digest and kfocp's managed fields
        tell whether they are as desired (_settled)."""
        key = (res.api_version, res.kind, shared, set_name)
        if key not in self._lists:
            selector = o.patched_selector(self.instance) if shared else o.owner_selector(self.instance, set_name)
            items = self.client.list(res, label_selector=selector, metadata_only=self._metadata_reads)
            for item in items:  # LIST items carry no apiVersion and kind
                item["apiVersion"], item["kind"] = res.api_version, res.kind
            self._lists[key] = dict((((i["metadata"].get("namespace") or ""), i["metadata"]["name"]), i)
                                    for i in items)
        return self._lists[key]

    @property
    def _metadata_reads(self):
        """Whether LISTs read metadata only: always, but in check and diff mode, which show objects."""
        return not (self.check or self.diff)

    def _fetch(self, batch):
        """Find the live state of every item: from the labelled LISTs, then existence of the rest."""
        by_kind = {}
        for item in batch:
            if item.res is not None and item.action is None and item.exists is None:
                set_name = None if item.shared else item.obj["metadata"]["labels"].get(o.SET)
                by_kind.setdefault((item.res, item.shared, set_name), []).append(item)
        jobs = []
        for (res, shared, set_name), kind_items in by_kind.items():
            jobs.append((res, shared, set_name, kind_items))
        self._pool(lambda job: self._fetch_kind(*job), jobs)

    def _fetch_kind(self, res, shared, set_name, kind_items):
        """The live state of `kind_items` from kfocp's LIST of their kind and set. Another set's
        object of the same name is not in it: it is found to exist, and read before it is applied."""
        if not self._prune and len(kind_items) <= _GET_LIMIT:
            return  # a GET each costs less than listing every object of the kind kfocp labelled
        try:
            live = self._owned_list(res, shared, set_name)
        except KubeError as err:
            if err.status not in (401, 403):
                raise
            return  # not allowed to list this kind cluster-wide: one GET per object instead
        missing = []
        for item in kind_items:
            found = live.get((item.ref.namespace, item.ref.name))
            if found is not None:
                item.live, item.exists = found, True
                item.partial = self._metadata_reads
            else:
                missing.append(item)
        if len(missing) > _GET_LIMIT:
            try:
                names = set(((m["metadata"].get("namespace") or ""), m["metadata"]["name"])
                            for m in self.client.list(res, metadata_only=True))
            except KubeError:
                return  # not allowed to list them all: one GET each, later
            for item in missing:
                item.exists = (item.ref.namespace, item.ref.name) in names

    # ------------------------------------------------------------ applying one object

    def _settled(self, item):
        """(UNCHANGED, None) when the object kfocp labelled is already as desired: no request, no
        thread. None when it needs _apply_one."""
        if item.live is None:
            return None
        if o.unchanged_since_applied(item.live, item.obj, item.manager) if item.partial \
                else o.up_to_date(item.live, item.obj):
            return UNCHANGED, None
        return None

    def _apply_one(self, item):
        """Apply one object: read what is there when the LISTs did not settle it, let the object's
        ownership mode decide about an object found there that is not kfocp's, write it, and say
        what changed."""
        found = self._read(item)
        stop = self._BY_MODE[self._mode(item)](self, item, found)
        if stop is not None:
            return stop
        before = item.live if item.live is not None else found
        # (a metadata-only live object whose desired state changed is applied without a read: the
        # answer's resourceVersion tells whether anything changed)
        if item.live is not None and not item.partial and o.up_to_date(item.live, item.obj):
            return UNCHANGED, None
        try:
            after = self.client.apply(item.res, item.obj, item.manager, force=self._forced(item),
                                      dry_run=self.check)
        except KubeError as err:
            return self._refused(item, err)
        item.applied = after
        action = self._dry_run_action(item, before, after) if self.check else self._action(item, before, after)
        self._keep_diff(item, before, after, action)
        return action, self._taken_over(item, found)

    # -- reading

    def _read(self, item):
        """GET the object when _must_read says so. Sets item.exists, and item.live when it is
        kfocp's; returns the object found there when it is not kfocp's, else None."""
        if not self._must_read(item):
            return None
        current = self.client.get(item.res, item.ref.name, item.ref.namespace)
        item.exists = current is not None
        item.live, item.partial = None, False
        if current is None:
            return None
        ours = o.patched_by(current, self.instance) if item.shared else o.owned_by(current, self.instance)
        if not ours:
            return current
        item.live = current
        return None

    def _must_read(self, item):
        """Whether the object must be read before it is applied."""
        if item.exists is None:
            return True  # no LIST told: look it up
        if not item.exists:
            return False
        if item.partial and o.same_digest(item.live, item.obj):
            # Metadata alone showed that another writer holds one of kfocp's fields now (the digest
            # is the desired one): the full object tells whether its value is still the desired one,
            # as a controller that writes the whole object back (a full replace) leaves it.
            return True
        if item.live is not None:
            return False
        # A shared object known to exist and not yet patched by kfocp changes when patched: only
        # check and diff mode need it read first, to compare with and to show.
        return not item.shared or self.check or self.diff

    # -- what each ownership mode does with the object found before the write

    def _mode(self, item):
        """The strategy of _BY_MODE that applies: the object's ownership mode, or ADOPT when the
        object (o.ADOPT) or the run (adopt) takes over what someone else created; the run's adopt
        leaves an ensured object alone."""
        if item.shared:
            return o.SHARED
        if item.adopt or (self.adopt and item.mode != o.ENSURE):
            return _ADOPT
        return item.mode

    def _as_owned(self, item, found):
        """owned: kfocp creates it; one someone else created is a failure naming who."""
        if found is None:
            return None
        labels = (found.get("metadata") or {}).get("labels") or {}
        who = ("kfocp instance %r" % labels[o.INSTANCE]) if labels.get(o.MANAGED_BY) == o.MANAGER \
            else "someone else"
        return FAILED, ("already exists and was created by %s, so kfocp leaves it as it is. Delete it "
                        "or rename yours, or set adopt: true to let this instance manage it" % who)

    def _as_shared(self, item, found):
        """shared: kfocp only adds its fields to an object that exists; it never creates it."""
        if item.exists:
            return None
        return FAILED, ("does not exist. kfocp only adds its fields to this object and never creates it; "
                        "create it first (its owner normally does)")

    def _as_ensured(self, item, found):
        """ensure (platform Namespaces, upstream CRDs not named for takeover): created when
        missing; one someone else created is left as it is, skipped."""
        if found is None:
            return None
        return SKIPPED, "exists and is not kfocp's: left as it is (created by %s)" % _creators(found)

    def _as_adopted(self, item, found):
        """adopt (the run's switch, or the object's own o.ADOPT): one someone else created is
        taken over, unless an operator controls it (a controller ownerReference, OLM's labels):
        then it is left alone and skipped."""
        operator = o.operator_owner(found) if found is not None else None
        if operator:
            return SKIPPED, "exists and %s manages it: left alone" % operator
        return None

    _BY_MODE = {o.OWNED: _as_owned, o.SHARED: _as_shared, o.ENSURE: _as_ensured, _ADOPT: _as_adopted}

    def _taken_over(self, item, found):
        """The message of an object someone else created that this write took over (adopt)."""
        if found is None or item.shared:
            return None
        return "%s: it was created by someone else (%s)" % (
            "would be taken over" if self.check else "taken over", _creators(found))

    # -- writing, check mode and diff

    def _forced(self, item):
        """force: the write takes over fields another field manager owns, for the whole run
        (force) or for one object (o.FORCE, o.ADOPT)."""
        return self.force or item.force

    def _refused(self, item, err):
        """The outcome of a write the API server refused. A dry run (check mode) reports what a
        real run would do: create an object whose namespace the run creates first, or refuse a
        conflict, without failing."""
        if self.check and err.status == 404 and not item.exists:
            return CREATED, "would be created once its namespace exists"
        if self.check and err.status == 409 and err.reason == "Conflict":
            return CONFLICT, self._explain(err)
        return FAILED, self._explain(err)

    @staticmethod
    def _action(item, before, after):
        """What a write did: a new resourceVersion is a change."""
        if not item.exists:
            return CREATED
        old = (before or {}).get("metadata", {}).get("resourceVersion")
        return UPDATED if after["metadata"].get("resourceVersion") != old else UNCHANGED

    @staticmethod
    def _dry_run_action(item, before, after):
        """What a dry-run write would do: the dry run's answer compared with the object before
        (a dry run's resourceVersion tells nothing)."""
        if not item.exists:
            return CREATED
        return UPDATED if o.strip(after) != o.strip(before) else UNCHANGED

    def _keep_diff(self, item, before, after, action):
        """diff mode: keep the object before and after a change, to show."""
        if self.diff and action != UNCHANGED:
            item.diff = (o.strip(before) if before else {}, o.strip(after))

    def _explain(self, err):
        if err.status == 409 and err.reason == "Conflict":
            fields = o.conflict_fields(err.body)
            return ("fields owned by another field manager: %s. kfocp does not overwrite them: change them "
                    "back, or set force: true to take them over" % ", ".join(fields or [str(err)]))
        if err.status == 422:
            return "rejected by the API server: %s" % "; ".join(o.invalid_fields(err.body) or [str(err)])
        if err.status == 500 and err.body.get("message"):
            return "rejected by the API server: %s" % err.body["message"]
        if err.status == 403:
            return "forbidden: %s" % err.body.get("message", err)
        return str(err)

    # ------------------------------------------------------------ deleting

    def _delete_one(self, item):
        ref = item.ref
        live = self.client.get(item.res, ref.name, ref.namespace)
        if live is None:
            return UNCHANGED, None
        if item.shared or (not o.owned_by(live, self.instance) and o.patched_by(live, self.instance)):
            return self._release(item.res, live, item.set)
        if not o.owned_by(live, self.instance):
            return SKIPPED, "not created by this kfocp instance: left as it is"
        return self._remove(item.res, live)

    def _remove(self, res, live):
        meta = live["metadata"]
        if res.kind == "CustomResourceDefinition":
            foreign = self._foreign_instances(live)
            if foreign:
                return SKIPPED, ("kept: deleting it would delete %d %s that this kfocp instance did not make (%s). "
                                 "Delete them first if they should go, then run again"
                                 % (len(foreign), meta["name"], ", ".join(foreign[:5])))
        try:
            self.client.delete(res, meta["name"], meta.get("namespace"), dry_run=self.check)
        except KubeError as err:
            return FAILED, self._explain(err)
        return DELETED, None

    def _foreign_instances(self, crd):
        """The objects of a CRD's kind that this instance did not create: deleting the CRD would
        delete them too."""
        found = []
        if "spec" not in crd:  # a metadata-only LIST gave it
            crd = self.client.get(self.client.resource("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
                                  crd["metadata"]["name"]) or {}
        for api_version, kind, _plural, _namespaced in o.crd_kinds(crd)[:1]:
            try:
                res = self.client.resource(api_version, kind)
                # `!=` also selects the objects without the label: everything not this instance's
                items = self.client.list(res, label_selector="%s!=%s" % (o.INSTANCE, self.instance),
                                         metadata_only=True)
            except (UnknownKind, KubeError):
                return []
            found = [o.describe(o.ref(dict(item, apiVersion=api_version, kind=kind))) for item in items
                     if not o.owned_by(item, self.instance)]
        return found

    def _release(self, res, live, set_name=None):
        """Give back the fields a set's shared patch put on an object (every set's, when
        `set_name` is None): apply an empty configuration with that set's field manager, which
        removes what only it owned."""
        meta = live["metadata"]
        empty = {"apiVersion": res.api_version, "kind": res.kind, "metadata": {"name": meta["name"]}}
        if meta.get("namespace"):
            empty["metadata"]["namespace"] = meta["namespace"]
        sets = [set_name] if set_name else o.patch_sets(live, self.field_manager)
        if o.ADDED in (meta.get("annotations") or {}):  # its lists, which a metadata-only LIST leaves out
            live = self.client.get(res, meta["name"], meta.get("namespace")) or live
        kept = o.give_back(live)
        try:
            if kept is not None:
                self.client.apply(res, kept, o.GIVE_BACK, force=True, dry_run=self.check)
            for name in sets:
                self.client.apply(res, empty, o.patch_manager(self.field_manager, name), dry_run=self.check)
        except KubeError as err:
            return FAILED, self._explain(err)
        return RELEASED, None

    def _scan_kinds(self, only=None):
        """One served version of every kind that can be listed and deleted, or of those of them
        `only` names ((group, kind)): a set whose builder tells every kind it makes is looked for
        in a few kinds, not in the hundreds an OpenShift cluster serves."""
        seen = set()
        kinds = []
        for (api_version, kind), res in self.client.resources().items():
            group = o.group_version(api_version)[0]
            if (group, res.plural) in seen or (api_version, kind) in _NEVER_SCAN \
                    or (only is not None and (group, kind) not in only):
                continue
            if "list" in res.verbs and "delete" in res.verbs:
                seen.add((group, res.plural))
                kinds.append(res)
        return kinds

    def _scan_list(self, res, shared, set_name):
        """The objects of one kind that prune looks at: kfocp's own in `set_name` (all sets when
        None), or those it patched. This run's LIST of the kind is used when there was one (what it
        created since is wanted); a new LIST of its own objects reads only their metadata, which is
        all deleting them needs."""
        group = o.group_version(res.api_version)[0]
        for (api_version, kind, was_shared, listed), cached in self._lists.items():  # in any version of the kind
            if (kind, was_shared, o.group_version(api_version)[0]) == (res.kind, shared, group) \
                    and listed in (None, set_name):
                return [live for live in cached.values() if shared or set_name is None
                        or (live["metadata"].get("labels") or {}).get(o.SET) == set_name]
        early = self._prescanned.get(_kind(res.api_version, res.kind) + (shared,))
        if early is not None and set_name == self.set and early.done() and not early.cancelled() \
                and early.exception() is None:
            return early.result()
        return self._prune_list(res, shared, set_name)

    def _prune_list(self, res, shared, set_name):
        if shared:
            return self.client.list(res, label_selector=o.patched_selector(self.instance))
        return self.client.list(res, label_selector=o.owner_selector(self.instance, set_name), metadata_only=True)

    def _delete_owned(self, wanted, result, set_name, max_share=None, only=None):
        """Delete what kfocp owns in `set_name` (all sets when None) and is not `wanted`; release
        what it patched there. Runs in reverse apply order. With `max_share`, refuses (before
        any deletion) to empty more than that share of the set's namespaces (_guard_prune).
        `only` limits the kinds looked in (_scan_kinds)."""
        if result.errors:
            return
        doomed = []
        seen = []  # the namespace of every object of the set (None: cluster-scoped)

        def scan(res):
            try:
                owned = self._scan_list(res, False, set_name)
                patched = self._scan_list(res, True, set_name)
            except KubeError as err:
                if err.status in (403, 404, 405, 503):
                    return []
                raise
            found = []
            # what a controller made from one of kfocp's objects, copying its labels, is the
            # controller's (o.made_from): the garbage collector deletes it with its owner
            owned = [x for x in owned if not o.made_from(x, self.field_manager)]
            # a patched object this instance also owns is deleted, not released; a patched one is
            # released only for the sets in scope that patched it
            owned_keys = set((x["metadata"].get("namespace"), x["metadata"]["name"]) for x in owned)
            patched = [x for x in patched if (x["metadata"].get("namespace"), x["metadata"]["name"]) not in owned_keys
                       and not o.owned_by(x, self.instance)
                       and (set_name is None or set_name in o.patch_sets(x, self.field_manager))]
            seen.extend(x["metadata"].get("namespace") for x in owned + patched)
            for live, shared in [(x, False) for x in owned] + [(x, True) for x in patched]:
                live.setdefault("apiVersion", res.api_version)
                live.setdefault("kind", res.kind)
                key = o.ref(live)._replace(api_version=res.api_version, kind=res.kind)
                if _unversioned(key) not in wanted:  # the same object, whichever version it was applied in
                    found.append((res, live, shared))
            return found

        for found in self._pool(scan, self._scan_kinds(only)):
            doomed.extend(found)
        if max_share is not None:
            self._guard_prune(doomed, seen, set_name, max_share, result)
        for phase in sorted(set(o.phase(entry[0].kind) for entry in doomed), reverse=True):
            batch = [(res, live, shared) for res, live, shared in doomed if o.phase(res.kind) == phase]

            def drop(entry):
                res, live, shared = entry
                action, message = self._release(res, live, set_name) if shared else self._remove(res, live)
                return o.ref(live)._replace(api_version=res.api_version, kind=res.kind), action, message, res

            for ref, action, message, res in self._pool(drop, batch):
                result.record(ref, action, message)
                if action == DELETED:
                    self._deleted.append((res, ref))

    def _guard_prune(self, doomed, seen, set_name, max_share, result):
        """Refuse a prune that would take every object of the set out of more than `max_share` of
        the namespaces the set has objects in (and out of two at least): what a desired state
        emptied by a wrong input does (a selector that selects nothing), and a change of
        settings does not (it removes some objects of each namespace and keeps the others)."""
        left = {}
        for namespace in seen:
            if namespace:
                left[namespace] = left.get(namespace, 0) + 1
        for _res, live, _shared in doomed:
            namespace = live["metadata"].get("namespace")
            if namespace:
                left[namespace] -= 1
        emptied = sorted(namespace for namespace, count in left.items() if count == 0)
        if len(emptied) < 2 or len(emptied) <= max_share * len(left):
            return
        # a namespace being deleted takes its objects with it: emptying it is no one's mistake
        living = set(meta["metadata"]["name"] for meta in self.client.list(
            self.client.resource("v1", "Namespace"), metadata_only=True)
            if not meta["metadata"].get("deletionTimestamp"))
        emptied = [namespace for namespace in emptied if namespace in living]
        if len(emptied) < 2 or len(emptied) <= max_share * len(left):
            return
        gone = [o.describe(o.ref(live)._replace(kind=res.kind)) for res, live, _s in doomed
                if live["metadata"].get("namespace") in emptied]
        raise ApplyError("prune refused: it would remove every object of set %s from %d of its %d namespaces (%s), "
                         "more than prune_max_share (%s) allows; it would have removed %s%s. Check the inputs that "
                         "select what is desired; if this is intended, run again with prune_max_share: 1 (a role's "
                         "<role>_prune_max_share)"
                         % (set_name, len(emptied), len(left), ", ".join(emptied[:20]), max_share, ", ".join(gone[:20]),
                            " (and %d more)" % (len(gone) - 20) if len(gone) > 20 else ""), result)

    def _wait_gone(self, result):
        if self.check:
            return
        deadline = time.monotonic() + self.wait_timeout
        pending = list(self._deleted)
        while pending and time.monotonic() < deadline:
            gone = self._pool(lambda entry: self.client.get(entry[0], entry[1].name, entry[1].namespace) is None,
                              pending)
            pending = [entry for entry, done in zip(pending, gone) if not done]
            if pending:
                time.sleep(0.5)
        if pending:
            names = ", ".join(o.describe(entry[1]) for entry in pending[:10])
            raise ApplyError("still present %ds after deletion: %s (namespaces wait for their contents and "
                             "finalizers)" % (self.wait_timeout, names), result)

    # ------------------------------------------------------------ CRDs

    def _crds_ready(self, crd_items, result):
        """Wait until the CRDs this run created or changed are Established (their kinds are served).

        The apply answers already hold each CRD's status; the rest are followed with one watch of
        CRDs from the oldest of their resource versions, which sends only the changes, instead of
        reading every pending CRD again and again. A CRD still not Established at the deadline is a
        failure of that CRD (the objects of its kinds then fail too, naming the kind)."""
        if self.check or not crd_items:
            return
        res = crd_items[0].res
        pending = dict((item.ref.name, item) for item in crd_items if not _established(item.applied))
        deadline = time.monotonic() + self.wait_timeout
        versions = [int(rv) for rv in ((i.applied or {}).get("metadata", {}).get("resourceVersion")
                                       for i in pending.values()) if str(rv or "").isdigit()]
        since = str(min(versions) - 1) if versions else None
        while pending and time.monotonic() < deadline:
            try:
                since = self._watch_crds(res, pending, since, deadline)
            except (KubeError, TransportError):
                since = None  # too old a resource version, no watch allowed, or no answer: read them once, then watch anew
                for name, crd in zip(list(pending), self._pool(lambda n: self.client.get(res, n), list(pending))):
                    if _established(crd):
                        pending.pop(name)
                    elif crd is not None and since is None:
                        since = crd["metadata"]["resourceVersion"]
                if pending and time.monotonic() < deadline:
                    time.sleep(0.5)
        for name, item in sorted(pending.items()):
            item.action = FAILED
            message = "not Established after %ds: its kinds are not served" % self.wait_timeout
            result.items = [entry for entry in result.items if not (entry["kind"] == item.ref.kind and
                                                                    entry["name"] == name)]
            result.record(item.ref, FAILED, message)
        self._discovered([item for item in crd_items if item.ref.name not in pending], deadline)

    def _discovered(self, crd_items, deadline):
        """Wait until discovery lists the kinds of the Established CRDs: the API server adds them
        to its discovery document shortly after it sets Established, and an object of a kind not
        listed yet would fail as an unknown kind. Until the deadline; what is still missing then
        fails with its objects, naming the kind."""
        wanted = set((api_version, kind) for item in crd_items
                     for api_version, kind, _plural, _namespaced in o.crd_kinds(item.obj))
        while True:
            missing = wanted - set(self.client.resources(refresh=True))
            if not missing or time.monotonic() >= deadline:
                return
            time.sleep(0.1)

    def _watch_crds(self, res, pending, since, deadline):
        """Follow CRD changes after `since` until every pending CRD is Established or the deadline;
        returns the last resource version seen."""
        # short windows: a proxy that buffers whole answers still passes each within seconds
        window = max(1, min(_WATCH_WINDOW, deadline - time.monotonic()))
        for kind, crd in self.client.watch(res, since, timeout=window):
            since = (crd.get("metadata") or {}).get("resourceVersion") or since
            name = (crd.get("metadata") or {}).get("name")
            if kind in ("ADDED", "MODIFIED") and name in pending and _established(crd):
                pending.pop(name)
            if not pending or time.monotonic() >= deadline:
                break
        return since

    # ------------------------------------------------------------ plumbing

    def _map(self, func, items, result, settled=None):
        """func(item) for every item, in parallel, and the outcomes recorded in the items' order.
        Items for which settled(item) already gives the outcome are not sent to the pool."""
        def run(item):
            try:
                action, message = func(item)
            except KubeError as err:
                action, message = FAILED, self._explain(err)
            return item, action, message

        known = [settled(item) if settled else None for item in items]
        ran = iter(self._pool(run, [item for item, outcome in zip(items, known) if outcome is None]))
        for item, outcome in zip(items, known):
            item, action, message = next(ran) if outcome is None else (item,) + outcome
            item.action = action
            result.record(item.ref, action, message)
            if message and message.startswith("taken over"):
                result.adopted.append(o.describe(item.ref))
            if item.diff is not None:
                before, after = item.diff
                result.diffs.append({"before_header": o.describe(item.ref), "after_header": o.describe(item.ref),
                                     "before": before, "after": after})

    def _pool(self, func, items):
        """[func(item) for item in items], `concurrency` at a time. Each worker takes the next item
        until none is left (a future per item would cost more CPU than a small request). Every item
        runs; the first exception, in the items' order, is raised at the end."""
        items = list(items)
        if len(items) <= 1 or self.concurrency == 1:
            return [func(item) for item in items]
        results, errors = [None] * len(items), {}
        pending, lock = iter(range(len(items))), threading.Lock()

        def work():
            while True:
                with lock:
                    index = next(pending, None)
                if index is None:
                    return
                try:
                    results[index] = func(items[index])
                except Exception as err:  # pylint: disable=broad-except  # raised below, in order
                    errors[index] = err

        workers = [threading.Thread(target=work, daemon=True) for _worker in range(min(self.concurrency, len(items)))]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        if errors:
            raise errors[min(errors)]
        return results

    def _finish(self, result, failed="failed"):
        """Keep the API's warnings; an object that could not be deleted or given back fails the run."""
        result.warnings = sorted(self.client.warnings)
        if result.errors:
            raise ApplyError(self._summary(failed, result), result)

    def _summary(self, prefix, result):
        if self.client.unreachable:
            return "%s: %s; %d object(s) were not applied" % (prefix, self.client.unreachable, len(result.errors))
        shown = result.errors[:20]
        more = len(result.errors) - len(shown)
        tail = " (and %d more)" % more if more else ""
        return "%s for %d object(s): %s%s" % (prefix, len(result.errors), "; ".join(shown), tail)


# Where to get the kinds a render commonly needs from a prerequisite, named when they are missing.
_PROVIDERS = {
    "cert-manager.io": " (cert-manager is a prerequisite: on OpenShift, install the cert-manager Operator for Red "
                       "Hat OpenShift from OperatorHub; elsewhere, cert-manager's own manifests or Helm chart)",
    "acme.cert-manager.io": " (cert-manager is a prerequisite: on OpenShift, install the cert-manager Operator for "
                            "Red Hat OpenShift from OperatorHub)",
}


def _creators(live):
    """The field managers that wrote a live object, for people to read."""
    managers = sorted(set(entry.get("manager") for entry in (live.get("metadata") or {}).get("managedFields") or []
                          if entry.get("manager")))
    return ", ".join(managers) or "an unknown writer"


def check_kinds_declared(items, kinds, set_name):
    """Raise DefinitionError when an item of `set_name` is of none of `kinds` ((group, kind))."""
    outside = set(_kind(i.ref.api_version, i.ref.kind) for i in items if i.set == set_name) - set(kinds)
    if outside:
        raise o.DefinitionError("set %s holds objects of %s, which are not among the kinds its prune looks in (%s): "
                                "add them to the set's kinds" % (set_name, o.group_kinds_text(outside), o.group_kinds_text(kinds)))


def _kind(api_version, kind):
    return (o.group_version(api_version)[0], kind)


def _unversioned(ref):
    return (o.group_version(ref.api_version)[0], ref.kind, ref.namespace, ref.name)


def _established(crd):
    for cond in ((crd or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Established" and cond.get("status") == "True":
            return True
    return False
