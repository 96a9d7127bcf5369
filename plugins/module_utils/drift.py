# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drift report of playbooks/status.yml, from the apply results of check-mode role runs.

Pure functions: plain data in (each role's registered apply result), plain data out.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

# What each engine action means when the engine ran in check mode.
STATES = {
    "unchanged": "in-sync",     # present, and every field kfocp sets holds its value
    "updated": "drifted",       # present, but a field kfocp sets differs
    "created": "missing",       # absent: the next converge would create it
    "deleted": "orphaned",      # this install's, no longer desired: the next converge would prune it
    "released": "orphaned",     # fields on someone else's object that the next converge would give back
    "skipped": "foreign",       # exists and belongs to someone else: left as it is
    "failed": "error",
    "conflict": "conflict",     # a field kfocp sets now belongs to another field manager
}
ORDER = ("error", "conflict", "missing", "drifted", "orphaned", "foreign", "in-sync")


def _describe(obj):
    where = "%s/%s" % (obj["namespace"], obj["name"]) if obj.get("namespace") else obj.get("name", "")
    return "%s %s" % (obj.get("kind", ""), where)


def changed_paths(before, after, prefix=""):
    """The dotted paths at which two objects differ (leaves only, lists compared whole)."""
    if isinstance(before, dict) and isinstance(after, dict):
        paths = []
        for key in sorted(set(before) | set(after), key=str):
            path = "%s.%s" % (prefix, key) if prefix else str(key)
            paths += changed_paths(before.get(key), after.get(key), path)
        return paths
    return [] if before == after else [prefix or "."]


def _fields(result):
    """{'Kind ns/name': [changed field paths]} from a diff-mode result."""
    fields = {}
    for entry in result.get("diff") or []:
        paths = [p for p in changed_paths(entry.get("before") or {}, entry.get("after") or {})
                 if not p.startswith(("metadata.resourceVersion", "metadata.generation", "metadata.managedFields"))]
        fields[entry.get("before_header", "")] = paths
    return fields


def merge(results):
    """One apply result from a role's several (a role that applies in sets registers one result
    per set: <role>_result, <role>_<set>_result). Results of tasks that did not run are left out."""
    ran = [r for r in results if r and not r.get("skipped")]
    if not ran:
        return results[0] if results else {}
    out = {"objects": [], "diff": [], "summary": {}}
    for result in ran:
        out["objects"] += result.get("objects") or []
        out["diff"] += result.get("diff") or []
        for key, count in (result.get("summary") or {}).items():
            out["summary"][key] = out["summary"].get(key, 0) + (count or 0)
        if result.get("failed"):
            out["failed"] = True
            out["msg"] = "; ".join(m for m in (out.get("msg"), result.get("msg") or "failed") if m)
    return out


def report(results, roles=None):
    """The drift report.

    `results` maps a role name to its registered apply result, or to a list of them (merged), or
    to None when the role made no apply call; `roles` gives the order of the rows (default:
    sorted role names).
    Returns {in_sync, summary: {state: count}, roles: {role: {state: count, error?}}, objects: [rows]}.
    """
    if not isinstance(results, dict):
        raise ValueError("results: must be a mapping of role name to its apply result")
    order = list(roles) if roles else sorted(results)
    summary = dict.fromkeys(ORDER, 0)
    rows, per_role = [], {}
    for role in order:
        result = results.get(role) or {}
        if isinstance(result, list):
            result = merge(result)
        counts = dict.fromkeys(ORDER, 0)
        entry = {"states": counts}
        if not result:
            entry["note"] = "no apply result: the role did not run or has no objects"
        elif result.get("skipped"):
            entry["note"] = "skipped"
        fields = _fields(result)
        for obj in result.get("objects") or []:
            state = STATES.get(obj.get("action"), obj.get("action") or "unknown")
            row = {"role": role, "kind": obj.get("kind"), "apiVersion": obj.get("apiVersion"),
                   "namespace": obj.get("namespace", ""), "name": obj.get("name"), "state": state,
                   "present": state not in ("missing",), "matches": state in ("in-sync", "foreign")}
            if obj.get("message"):
                row["message"] = obj["message"]
            if state == "drifted":
                row["fields"] = fields.get(_describe(obj), [])
            rows.append(row)
            counts[state] = counts.get(state, 0) + 1
            summary[state] = summary.get(state, 0) + 1
        unchanged = (result.get("summary") or {}).get("unchanged", 0) or 0
        if unchanged > counts["in-sync"]:  # objects not listed (report: changed) are in sync
            summary["in-sync"] += unchanged - counts["in-sync"]
            counts["in-sync"] = unchanged
        if result.get("failed") and not any(o.get("action") == "failed" for o in result.get("objects") or []):
            entry["error"] = result.get("msg") or "failed"
            summary["error"] += 1
        per_role[role] = entry
    in_sync = all(summary.get(state, 0) == 0 for state in ("error", "conflict", "missing", "drifted", "orphaned"))
    return {"in_sync": in_sync, "summary": summary, "roles": per_role, "objects": rows}


def table(drift):
    """The report as lines of a fixed-width table, for people to read."""
    rows = [("ROLE", "STATE", "KIND", "NAMESPACE/NAME", "DETAIL")]
    for row in drift.get("objects") or []:
        name = "%s/%s" % (row["namespace"], row["name"]) if row.get("namespace") else row.get("name", "")
        detail = row.get("message") or ", ".join(row.get("fields") or [])
        rows.append((row["role"], row["state"], row.get("kind") or "", name, detail))
    for role, entry in sorted((drift.get("roles") or {}).items()):
        if entry.get("error") or entry.get("note"):
            rows.append((role, "error" if entry.get("error") else "-", "", "", entry.get("error") or entry["note"]))
    widths = [max(len(str(r[i])) for r in rows) for i in range(4)]
    lines = ["  ".join(str(r[i]).ljust(widths[i]) for i in range(4)) + "  " + str(r[4]) for r in rows]
    summary = drift.get("summary") or {}
    lines.append("%s: %s" % ("IN SYNC" if drift.get("in_sync") else "DRIFT",
                             ", ".join("%s=%d" % (state, summary.get(state, 0)) for state in ORDER)))
    return [line.rstrip() for line in lines]
