# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The status of a custom resource: conditions, observedGeneration and free status fields,
written through the status subresource.

The pure part (`validate_conditions`, `merge_conditions`, `desired_status`, `merge_patch`) turns
the current status and the wanted one into the smallest JSON merge patch, keeping a condition's
lastTransitionTime while its status does not change. `StatusWriter` reads the resource and sends
that patch, guarded by the resourceVersion it read, so that a concurrent writer is never
overwritten: on a conflict it reads again and recomputes.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import datetime
import re

from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError

CONDITION_STATUSES = ("True", "False", "Unknown")
# metav1.Condition's validation: type is a qualified name, reason is CamelCase.
CONDITION_TYPE = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                            r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$")
CONDITION_REASON = re.compile(r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$")
MAX_MESSAGE = 32768
MERGE_PATCH = "application/merge-patch+json"


class StatusError(Exception):
    """The status could not be written; the message says which resource and why."""


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def validate_conditions(conditions):
    """Check the wanted conditions before any request; raise DefinitionError naming the field."""
    seen = set()
    for index, cond in enumerate(conditions or []):
        where = "conditions[%d]" % index
        if not isinstance(cond, dict):
            raise DefinitionError("%s: must be a mapping with type, status, reason and message. "
                                  "fix: write it as {type: Ready, status: 'True', reason: Converged}" % where)
        ctype = cond.get("type")
        if not ctype or not CONDITION_TYPE.match(str(ctype)) or len(str(ctype)) > 316:
            raise DefinitionError("%s.type: %r is not a condition type. fix: use a CamelCase name such as Ready"
                                  % (where, ctype))
        if ctype in seen:
            raise DefinitionError("%s.type: %s is listed twice. fix: give each condition type once" % (where, ctype))
        seen.add(ctype)
        status = cond.get("status")
        if isinstance(status, bool):
            status = "True" if status else "False"
        if status not in CONDITION_STATUSES:
            raise DefinitionError("%s.status: %r is not True, False or Unknown. fix: quote it, status: 'True'"
                                  % (where, cond.get("status")))
        reason = cond.get("reason")
        if not reason or not CONDITION_REASON.match(str(reason)) or len(str(reason)) > 1024:
            raise DefinitionError("%s.reason: %r is not a CamelCase reason. fix: use a word such as Converged "
                                  "(letters, digits, '_', ',' or ':')" % (where, reason))
        message = cond.get("message") or ""
        if len(message) > MAX_MESSAGE:
            raise DefinitionError("%s.message: %d characters, more than %d. fix: shorten it"
                                  % (where, len(message), MAX_MESSAGE))


def _normal(cond, observed_generation=None):
    status = cond["status"]
    if isinstance(status, bool):
        status = "True" if status else "False"
    out = {"type": cond["type"], "status": status, "reason": cond["reason"], "message": cond.get("message") or ""}
    generation = cond.get("observedGeneration", observed_generation)
    if generation is not None:
        out["observedGeneration"] = int(generation)
    return out


def merge_conditions(current, wanted, now, observed_generation=None):
    """The conditions after setting `wanted` on `current`.

    A wanted condition replaces the current one of its type; lastTransitionTime stays when the
    status is the same, and becomes `now` when it changes or the type is new. Conditions of
    other types are kept, in their order; new types are appended.
    """
    current = [c for c in (current or []) if isinstance(c, dict) and c.get("type")]
    by_type = dict((c["type"], c) for c in current)
    wanted_by_type = {}
    order = [c["type"] for c in current]
    for cond in wanted or []:
        new = _normal(cond, observed_generation)
        old = by_type.get(new["type"])
        if old is not None and old.get("status") == new["status"] and old.get("lastTransitionTime"):
            new["lastTransitionTime"] = old["lastTransitionTime"]
        else:
            new["lastTransitionTime"] = now
        wanted_by_type[new["type"]] = new
        if new["type"] not in by_type:
            order.append(new["type"])
    return [wanted_by_type.get(t) or by_type[t] for t in order]


def desired_status(current, conditions=None, fields=None, observed_generation=None, now=None):
    """The whole status after the update: `fields` replace their top-level keys, `conditions` are
    merged by type, and `observedGeneration` is set when given."""
    status = copy.deepcopy(current or {})
    for key, value in (fields or {}).items():
        if key in ("conditions", "observedGeneration"):
            raise DefinitionError("status.%s: set it with the %s option, not in status. fix: move it there"
                                  % (key, "conditions" if key == "conditions" else "observed_generation"))
        status[key] = copy.deepcopy(value)
    if conditions:
        status["conditions"] = merge_conditions(status.get("conditions"), conditions, now or now_rfc3339(),
                                                observed_generation)
    if observed_generation is not None:
        status["observedGeneration"] = int(observed_generation)
    return status


def merge_patch(before, after):
    """The RFC 7386 JSON merge patch that turns `before` into `after` ({} when they are equal)."""
    patch = {}
    for key in before:
        if key not in after:
            patch[key] = None
    for key, value in after.items():
        old = before.get(key)
        if key in before and old == value:
            continue
        if isinstance(value, dict) and isinstance(old, dict):
            patch[key] = merge_patch(old, value)
        else:
            patch[key] = copy.deepcopy(value)
    return patch


def describe_target(kind, name, namespace):
    return "%s %s/%s" % (kind, namespace, name) if namespace else "%s %s" % (kind, name)


class StatusWriter:
    """Reads a custom resource and writes its status subresource with a guarded merge patch."""

    def __init__(self, client, api_version, kind, name, namespace=None, field_manager="kfocp", attempts=5):
        self.client = client
        self.api_version = api_version
        self.kind = kind
        self.name = name
        self.namespace = namespace or None
        self.field_manager = field_manager
        self.attempts = attempts
        self.target = describe_target(kind, name, self.namespace)

    def _resource(self):
        res = self.client.resource(self.api_version, self.kind)
        if res.namespaced and not self.namespace:
            raise StatusError("%s: %s is namespaced. fix: set namespace" % (self.target, self.kind))
        if "patch" not in res.verbs:
            raise StatusError("%s: the API server does not allow patching %s" % (self.target, res.plural))
        return res

    def update(self, conditions=None, fields=None, observed_generation=None, check_mode=False, now=None):
        """Set the status; return {changed, status, before, patch}."""
        validate_conditions(conditions)
        res = self._resource()
        path = self.client.path(res, self.namespace if res.namespaced else None, self.name)
        for attempt in range(1, self.attempts + 1):
            live = self.client.request("GET", path, allow=(404,))
            if live is None:
                raise StatusError("%s not found: it must exist before its status is written" % self.target)
            before = live.get("status") or {}
            after = desired_status(before, conditions, fields, observed_generation, now or now_rfc3339())
            patch = merge_patch(before, after)
            if not patch:
                return {"changed": False, "status": before, "before": before, "patch": {}}
            body = {"metadata": {"resourceVersion": live["metadata"]["resourceVersion"]}, "status": patch}
            query = {"fieldManager": self.field_manager, "dryRun": "All" if check_mode else None}
            try:
                written = self.client.request("PATCH", path + "/status", query=query, body=body,
                                              content_type=MERGE_PATCH, allow=(404,))
            except KubeError as err:
                if err.status == 409 and attempt < self.attempts:
                    continue
                raise StatusError("%s: the status update was refused: %s" % (self.target, err))
            if written is None:
                raise StatusError("%s: the CRD of %s has no status subresource (or the resource was just deleted). "
                                  "fix: add subresources.status to the CRD" % (self.target, self.kind))
            return {"changed": True, "status": written.get("status") or after, "before": before, "patch": patch}
        raise StatusError("%s: the status kept changing under us in %d attempts" % (self.target, self.attempts))
