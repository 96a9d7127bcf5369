"""Object-by-object comparison of two snapshots of what kfocp manages on a cluster: the objects it
labels as its own and those it patched ({(group, kind, namespace, name): object}, as
helpers.labelled_objects reads them), without what the API server sets by itself.

Pure functions: the live part (taking the snapshots, making the clean reconcile to compare with)
is in the tests that use them."""
import copy
import json

# Metadata the API server writes: it says nothing about what was asked for.
SERVER_METADATA = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation", "selfLink",
                   "deletionGracePeriodSeconds")
# Fields the API server allocates anew each time the object is created, by kind.
ALLOCATED = {("", "Service"): (("spec", "clusterIP"), ("spec", "clusterIPs"))}
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# A value present on one side only.
ABSENT = "<absent>"


def normalise(key, obj):
    """The object as its writers asked for it: no status, no server metadata, no allocated field, no
    owner uid (a recreated owner has a new one). A deletion under way shows as deletionTimestamp
    "<set>", whatever its time. kfocp's applied-hash annotations are kept: they are a digest of the
    desired state, so they must be the same too."""
    obj = copy.deepcopy(obj)
    obj.pop("status", None)
    meta = obj.setdefault("metadata", {})
    for field in SERVER_METADATA:
        meta.pop(field, None)
    if meta.get("deletionTimestamp"):
        meta["deletionTimestamp"] = "<set>"
    annotations = meta.get("annotations") or {}
    annotations.pop(LAST_APPLIED, None)
    if not annotations:
        meta.pop("annotations", None)
    for owner in meta.get("ownerReferences") or []:
        owner.pop("uid", None)
    for path in ALLOCATED.get((key[0], key[1]), ()):
        parent = obj
        for part in path[:-1]:
            parent = parent.get(part) if isinstance(parent, dict) else None
        if isinstance(parent, dict):
            parent.pop(path[-1], None)
    return obj


def snapshot(objects):
    """{key: normalised object} of {key: object}."""
    return dict((key, normalise(key, obj)) for key, obj in objects.items())


def _step(path, part):
    if isinstance(part, int):
        return "%s[%d]" % (path, part)
    if part.replace("_", "").replace("-", "").isalnum():
        return "%s.%s" % (path, part) if path else part
    return "%s[%s]" % (path, json.dumps(part))


def field_differences(left, right, path=""):
    """[(field path, left value, right value)] where the two values differ, down to the leaves:
    maps key by key, lists item by item (an item missing on one side is ABSENT there)."""
    if isinstance(left, dict) and isinstance(right, dict):
        found = []
        for part in sorted(set(left) | set(right)):
            found += field_differences(left.get(part, ABSENT), right.get(part, ABSENT), _step(path, part))
        return found
    if isinstance(left, list) and isinstance(right, list):
        found = []
        for index in range(max(len(left), len(right))):
            found += field_differences(left[index] if index < len(left) else ABSENT,
                                       right[index] if index < len(right) else ABSENT, _step(path, index))
        return found
    if left == right and type(left) is type(right):
        return []
    return [(path or "<object>", left, right)]


def compare(left, right):
    """[(key, field path, left value, right value)] of two snapshots, sorted by object: an object on
    one side only is one row whose path is "<object>" and whose other value is ABSENT."""
    rows = []
    for key in sorted(set(left) | set(right)):
        if key not in right:
            rows.append((key, "<object>", "<present>", ABSENT))
        elif key not in left:
            rows.append((key, "<object>", ABSENT, "<present>"))
        else:
            rows += [(key,) + row for row in field_differences(left[key], right[key])]
    return rows


def describe(key):
    group, kind, namespace, name = key
    kind = "%s.%s" % (kind, group) if group else kind
    return "%s %s/%s" % (kind, namespace, name) if namespace else "%s %s" % (kind, name)


def _short(value, limit=120):
    text = value if value in (ABSENT, "<present>") else json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def report(rows, names=("left", "right"), limit=60):
    """The differences as lines a person reads, object by object, at most `limit` of them."""
    lines = ["%s: %s: %s %s, %s %s" % (describe(key), path, names[0], _short(a), names[1], _short(b))
             for key, path, a, b in rows[:limit]]
    if len(rows) > limit:
        lines.append("... and %d more difference(s)" % (len(rows) - limit))
    return "\n".join(lines)
