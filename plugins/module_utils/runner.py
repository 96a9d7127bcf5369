# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs the apply engine for a module: decides the operation from the options and turns every
failure into a message, never a traceback."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import functools
import time

from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client, KubeError
from ansible_collections.kfocp.kubeflow.plugins.module_utils.engine import ApplyError, Engine
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError, group_kinds


MASK = "********"
# Fields that hold secrets whatever their value, by kind: a mapping's every value, or a string.
SECRET_FIELDS = {"Secret": (("data",), ("stringData",)), "OAuthClient": (("secret",),)}


def redacted_forms(values):
    """Each secret value as it may appear in a result: as it is, and base64-encoded (and, for a
    value that is base64 itself, as Secret data is, decoded)."""
    forms = set()
    for value in values or ():
        if value and isinstance(value, str):
            forms.add(value)
            forms.add(base64.b64encode(value.encode("utf-8")).decode("ascii"))
            try:
                decoded = base64.b64decode(value, validate=True).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                continue
            if len(decoded) >= 4:  # too short to be anything but noise in other text
                forms.add(decoded)
    return forms


def _holds(value, forms):
    return isinstance(value, str) and any(form in value for form in forms)


def _mask_pair(before, after, forms, found):
    """Mask, in place, every leaf of `after` that holds a secret, and the leaf at the same place
    in `before` (the old value of a secret field is a secret too). Returns (before, after)."""
    if isinstance(after, dict) and isinstance(before, dict):
        for key in after:
            if key in before:
                before[key], after[key] = _mask_pair(before[key], after[key], forms, found)
            elif _holds(after[key], forms):
                after[key] = MASK
        return before, after
    if isinstance(after, list) and isinstance(before, list):
        for index in range(min(len(before), len(after))):
            before[index], after[index] = _mask_pair(before[index], after[index], forms, found)
        return before, after
    if _holds(after, forms) or _holds(before, forms):
        for value in (before, after):
            if isinstance(value, str):
                found.add(value)
        return MASK, _masked(before, after)
    return before, after


def _masked(before, after):
    return MASK if before == after else MASK + " (changed)"


def _mask_fields(obj, paths, found):
    """Replace the values at `paths` of `obj` (in place) and collect them in `found`."""
    for path in paths:
        parent = obj
        for key in path[:-1]:
            parent = parent.get(key) if isinstance(parent, dict) else None
        if not isinstance(parent, dict) or path[-1] not in parent:
            continue
        value = parent[path[-1]]
        if isinstance(value, dict):
            for key, item in value.items():
                found.add(str(item))
            parent[path[-1]] = dict((key, MASK) for key in value)
        elif value is not None:
            found.add(str(value))
            parent[path[-1]] = MASK


def mask_diff(entry, forms):
    """Mask the secrets of one diff entry ({before, after, ...}) in place, by field and by value:
    a Secret's data and stringData, an OAuthClient's secret, and every field whose new or old
    value holds one of `forms` (the values of the no_log options) - its old value as well as the
    new. Returns the secret values it saw."""
    found = set()
    before, after = entry.get("before") or {}, entry.get("after") or {}
    kind = after.get("kind") or before.get("kind")
    paths = SECRET_FIELDS.get(kind, ())
    for path in paths:
        old, new = _at(before, path), _at(after, path)
        if isinstance(new, dict) and isinstance(old, dict):
            changed = [key for key in new if new.get(key) != old.get(key)]
        else:
            changed = [] if old == new else [None]
        _mask_fields(before, [path], found)
        _mask_fields(after, [path], found)
        value = _at(after, path)
        if isinstance(value, dict):
            for key in changed:
                if key in value:
                    value[key] = MASK + " (changed)"
        elif changed and value is not None:
            _set(after, path, MASK + " (changed)")
    _mask_pair(before, after, forms, found)
    found.discard(MASK)
    return found


def _at(obj, path):
    for key in path:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj


def _set(obj, path, value):
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


def scrub(value, forms):
    """`value` with every occurrence of the secret `forms` in its strings replaced by the mask."""
    if isinstance(value, dict):
        return dict((key, scrub(item, forms)) for key, item in value.items())
    if isinstance(value, list):
        return [scrub(item, forms) for item in value]
    if isinstance(value, str):
        for form in sorted(forms, key=len, reverse=True):
            if form and form in value:
                value = value.replace(form, MASK)
    return value


def engine_from(params, auth, check_mode=False, diff=False, client=None):
    client = client or Client.from_params(auth, pool_size=params.get("concurrency") or 32)
    return Engine(client, instance=params.get("instance") or "kfocp", set_name=params.get("set"),
                  field_manager=params.get("field_manager") or "kfocp", force=params.get("force", False),
                  adopt=params.get("adopt", False), check_mode=check_mode, diff=diff,
                  concurrency=params.get("concurrency") or 32, wait_timeout=params.get("wait_timeout") or 120,
                  max_prune_share=params.get("prune_max_share"))


def run_engine(params, auth, check_mode=False, diff=False, build=None, no_log_values=None, client=None,
               prescan=False, prune_kinds=None):
    """Return (module result, error message or None), with every secret masked (mask_diff);
    `no_log_values`, the module's set, gets the secret values seen, so that Ansible masks them
    wherever else they would appear.

    build(client, **params), when given, returns the definitions and extra results of a run
    with state present (module_utils/tenancy.py); otherwise the definitions are params'.
    `client`, when given, is used instead of a new one made from `auth` (run_steps shares one).
    With `prescan` and prune, prune's reads start before the build and run while it does
    (Engine.prescan): for a build that takes a while without the API server (a kustomize render).
    `prune_kinds`, every kind the build can make ((group, kind)), limits prune's search to them
    (Engine.apply)."""
    out, error = _run(params, auth, check_mode, diff, build, client, prescan, prune_kinds)
    forms = redacted_forms(list(params.get("redact") or []) + [params.get("api_key")])
    seen = set()
    for entry in out.get("diff") or []:
        seen |= mask_diff(entry, forms)
    # (a value too short to be a credential would mask unrelated words in messages)
    forms |= set(form for form in redacted_forms(seen) if len(form) >= 6)
    out, error = scrub(out, forms), (scrub(error, forms) if error else error)
    if no_log_values is not None:
        no_log_values.update(forms)
    # The result echoes the options, as every module's does, but not the definitions: thousands of
    # objects sent back to the controller and kept in registered variables, for nothing.
    echoed = dict((key, value) for key, value in params.items() if key != "redact")
    if "definitions" in params:
        echoed["definitions"] = "%d object(s), not echoed" % len(params.get("definitions") or [])
    if "settings" in params:  # a builder's settings hold the declared profiles, thousands of them
        echoed["settings"] = "%d setting(s), not echoed" % len(params.get("settings") or {})
    out["invocation"] = {"module_args": echoed}
    return out, error


def _run(params, auth, check_mode, diff, build, client=None, prescan=False, prune_kinds=None):
    report = params.get("report") or "changed"
    extra = {}
    try:
        if prune_kinds is None and params.get("prune_kinds") is not None:
            prune_kinds = group_kinds(params["prune_kinds"])
        engine = engine_from(params, auth, check_mode, diff, client)
        if params.get("state", "present") == "absent":
            if params.get("definitions"):
                result = engine.delete(params["definitions"], wait=params.get("wait", False))
            else:
                result = engine.delete_all(params.get("set"), wait=params.get("wait", False))
        else:
            definitions = params.get("definitions") or []
            if prescan and params.get("prune"):
                engine.prescan()
            try:
                started = time.monotonic()
                if build is not None:
                    definitions, extra = build(engine.client, check_mode=check_mode, **params)
                built = round(time.monotonic() - started, 3)
                result = engine.apply(definitions, prune=params.get("prune", False), prune_kinds=prune_kinds)
                if build is not None:  # the build's own stages, when it tells them
                    result.timing = dict(extra.pop("timing", None) or {"build": built}, **result.timing)
            finally:
                engine.end_prescan()  # when the build failed: its reads are not needed
        return dict(result.as_dict(report), **extra), None
    except ApplyError as err:
        out = err.result.as_dict(report) if err.result is not None else {"changed": False}
        return dict(out, **extra), str(err)
    except (DefinitionError, KubeError) as err:
        return {"changed": False}, str(err)


# The results of a run that are lists to put end to end when several sets are applied in one run.
_CONCATENATED = ("objects", "diff", "adopted", "left_alone", "failures")


def run_steps(params, auth, steps, check_mode=False, diff=False, builds=None, no_log_values=None, kinds=None):
    """Apply several sets in one run, one after the other, as run_engine applies one: each step
    ({build, set, prune, wait}) replaces those options of `params`; `kinds` gives each build's
    prune_kinds (see run_engine). Stops at the first step that
    fails. Returns (the merged result, error message or None): the counts summed, the objects,
    diffs and warnings of every step, each step's extra results (orphans, pending, ...), and
    `steps`, what each step changed. The steps share one client: its connections and discovery."""
    merged, error, done = {"changed": False, "summary": {}, "objects": []}, None, []
    try:
        client = Client.from_params(auth, pool_size=params.get("concurrency") or 32)
    except KubeError:
        client = None  # the first step fails with the reason, as a run of one set does
    memo = {}  # what a step's build read, for the next one while nothing has changed since
    for step in steps:
        step_params = dict(params, **step)
        build = (builds or {}).get(step.get("build"))
        out, error = run_engine(step_params, auth, check_mode, diff, no_log_values=no_log_values, client=client,
                                build=functools.partial(build, memo=memo) if build else None,
                                prune_kinds=(kinds or {}).get(step.get("build")))
        if out.get("changed"):
            memo.clear()
        merged = merge_results(merged, out)
        done.append({"build": step.get("build"), "set": step.get("set"), "changed": bool(out.get("changed")),
                     "summary": out.get("summary") or {}})
        if error:
            break
    merged["steps"] = done
    echoed = dict(merged.get("invocation") or {"module_args": {}})
    echoed["module_args"] = dict(echoed["module_args"], steps=steps)
    for key in ("build", "set", "prune", "wait"):
        echoed["module_args"].pop(key, None)
    merged["invocation"] = echoed
    return merged, error


def merge_results(total, out):
    """`total` with one more step's result `out` added (see run_steps); neither is changed."""
    merged = dict(total)
    for key, value in out.items():
        if key == "changed":
            merged[key] = bool(total.get(key)) or bool(value)
        elif key == "summary":
            merged[key] = dict((name, (total.get(key) or {}).get(name, 0) + (value or {}).get(name, 0))
                               for name in set(total.get(key) or {}) | set(value or {}))
        elif key in _CONCATENATED:
            merged[key] = list(total.get(key) or []) + list(value or [])
        elif key == "timing":
            merged[key] = _summed(total.get(key) or {}, value or {})
        elif key == "api_warnings":
            merged[key] = sorted(set(total.get(key) or []) | set(value or []))
        else:
            merged[key] = value
    return merged


def _summed(first, second):
    """Two steps' seconds per stage, added stage by stage."""
    out = dict(first)
    for stage, seconds in second.items():
        out[stage] = round(out.get(stage, 0) + seconds, 3)
    return out
