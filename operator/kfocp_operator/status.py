"""The Kubeflow CR's status, computed from what the operator did: pure functions, no I/O.

Conditions: Ready (the platform is as the spec says), Progressing (a run is under way) and
Degraded (the last run, the uninstall or the spec failed; the message says why). A condition
keeps its lastTransitionTime while its status stays the same.
"""
READY, PROGRESSING, DEGRADED = "Ready", "Progressing", "Degraded"
TYPES = (READY, PROGRESSING, DEGRADED)
MESSAGE_LIMIT = 2000


def condition(kind, status, reason, message, generation=None):
    cond = {"type": kind, "status": "True" if status is True else "False" if status is False else "Unknown",
            "reason": reason, "message": (message or "")[:MESSAGE_LIMIT]}
    if generation is not None:
        cond["observedGeneration"] = generation
    return cond


def merge_conditions(old, new, stamp):
    """The new conditions, each with the old lastTransitionTime when its status did not change;
    conditions not given in `new` are kept as they were."""
    previous = dict((c.get("type"), c) for c in old or [])
    given = dict((c["type"], c) for c in new)
    merged = []
    for kind in TYPES:
        if kind in given:
            cond = dict(given[kind])
            before = previous.get(kind)
            if before and before.get("status") == cond["status"] and before.get("lastTransitionTime"):
                cond["lastTransitionTime"] = before["lastTransitionTime"]
            else:
                cond["lastTransitionTime"] = stamp
            merged.append(cond)
        elif kind in previous:
            merged.append(previous[kind])
    return merged


def get(conditions, kind):
    for cond in conditions or []:
        if cond.get("type") == kind:
            return cond
    return None


def running(generation, what="Running", message="the playbook is running"):
    """Only Progressing changes when a run starts: Ready and Degraded say what the last run found."""
    return [condition(PROGRESSING, True, what, message, generation)]


def components(counts, expected=()):
    """{role: {state, ok, changed, failed, skipped}}: Ready when its tasks ran without failure,
    Failed when one failed, NotRun when the run stopped before it."""
    out = {}
    for role in list(expected) + sorted(set(counts) - set(expected)):
        found = counts.get(role)
        if not found:
            out[role] = {"state": "NotRun", "ok": 0, "changed": 0, "failed": 0, "skipped": 0}
            continue
        entry = dict((k, found.get(k, 0)) for k in ("ok", "changed", "failed", "skipped"))
        entry["state"] = "Failed" if entry["failed"] else "Ready"
        if found.get("message"):
            entry["message"] = found["message"][:MESSAGE_LIMIT]
        out[role] = entry
    return out


def after_run(result, generation, expected_roles=()):
    """Status after a playbook run: the conditions, lastRun and per-component state."""
    last = {"playbook": result.playbook, "result": "Succeeded" if result.ok else "Failed",
            "ok": result.totals.get("ok", 0), "changed": result.totals.get("changed", 0),
            "failed": result.totals.get("failed", 0), "skipped": result.totals.get("skipped", 0),
            "unreachable": result.totals.get("unreachable", 0), "startedAt": result.started,
            "finishedAt": result.finished, "durationSeconds": round(result.duration, 3)}
    if result.ok:
        message = "the platform matches the spec of generation %s (%d changed, %d ok)" % (
            generation, last["changed"], last["ok"])
        conds = [condition(READY, True, "Reconciled", message, generation),
                 condition(PROGRESSING, False, "Idle", "waiting for the next change or resync", generation),
                 condition(DEGRADED, False, "Reconciled", "the last run succeeded", generation)]
    else:
        reason = "InvalidSpec" if result.invalid_spec else "PlaybookFailed"
        message = "; ".join(result.failures) or "the playbook failed (rc %s) without a task failure" % result.rc
        conds = [condition(READY, False, reason, message, generation),
                 condition(PROGRESSING, False, "Idle", "the run failed; retrying with backoff", generation),
                 condition(DEGRADED, True, reason, message, generation)]
    out = {"observedGeneration": generation, "conditions": conds, "lastRun": last,
           "components": components(result.roles, expected_roles)}
    if getattr(result, "openshift", None):
        out["openshift"] = result.openshift
    return out


def refused(active, generation):
    message = ("only one Kubeflow per cluster: %s is the active one, so this one is not acted on. "
               "Delete this one, or delete %s first" % (active, active))
    return {"observedGeneration": generation, "conditions": [
        condition(READY, False, "Refused", message, generation),
        condition(PROGRESSING, False, "Refused", message, generation),
        condition(DEGRADED, True, "SingletonConflict", message, generation)]}


OUTSIDE = "OutsideOperatorNamespace"


def outside(operator_namespace, namespace, generation):
    message = ("only a Kubeflow in the operator's namespace %s is acted on; this one is in %s, so nothing was "
               "changed. A Kubeflow configures the whole cluster with the operator's rights, and editors of any "
               "project may create one in their project: ask the platform's owners to change the Kubeflow in %s, "
               "and delete this one" % (operator_namespace, namespace, operator_namespace))
    return {"observedGeneration": generation, "conditions": [
        condition(READY, False, "Refused", message, generation),
        condition(PROGRESSING, False, "Refused", message, generation),
        condition(DEGRADED, True, OUTSIDE, message, generation)]}


def uninstall_failed(message, generation):
    text = "uninstall failed, the finalizer stays until it succeeds: %s" % message
    return {"conditions": [
        condition(READY, False, "UninstallFailed", text, generation),
        condition(PROGRESSING, False, "UninstallFailed", "retrying with backoff", generation),
        condition(DEGRADED, True, "UninstallFailed", text, generation)]}


def uninstalling(generation):
    return {"conditions": [condition(READY, False, "Uninstalling", "the CR is being deleted", generation),
                           condition(PROGRESSING, True, "Uninstalling", "playbooks/uninstall.yml is running",
                                     generation)]}
