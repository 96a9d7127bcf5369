# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure helpers over Kubernetes objects: identity, ownership labels, comparison, ordering.

Nothing here does I/O, so every function is covered by table tests.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import json
import re
from collections import namedtuple
from decimal import Decimal, InvalidOperation

MANAGED_BY = "app.kubernetes.io/managed-by"
PART_OF = "app.kubernetes.io/part-of"
INSTANCE = "kfocp.io/instance"
SET = "kfocp.io/set"
HASH = "kfocp.io/applied-hash"
# A desired object that carries this annotation with the value "shared" is someone else's
# object (a Namespace made by the profile controller, say): kfocp only adds its fields to it,
# never creates, labels as its own, or deletes it. The annotation is never sent.
OWNERSHIP = "kfocp.io/ownership"
SHARED = "shared"
# "ensure": create it as kfocp's when missing, but leave it alone when someone else made it
# (a platform Namespace such as kubeflow, which many clusters already have).
ENSURE = "ensure"
OWNED = "owned"
# A desired object may name the set it belongs to with this annotation (never sent). Platform
# namespaces that several roles need are in the set "namespaces", which only uninstall removes.
SET_OVERRIDE = "kfocp.io/set"
NAMESPACES_SET = "namespaces"
# A desired object with this annotation set to "true" (never sent) takes over the fields it sets
# even where another field manager owns them: for one atomic value that kfocp computes from the
# live one and that keeps the other writers' part (a member roll's member list). Every other
# conflict stays an error.
FORCE = "kfocp.io/force"
# A desired object with this annotation set to "true" (never sent) takes over the object when
# someone else created it (as adopt does for a whole run), with its fields (as FORCE does): an
# upstream CRD that an earlier install or the cluster put there, named by the user. An object
# that an operator controls (a controller ownerReference, OLM's labels) is never taken over.
ADOPT = "kfocp.io/adopt"
# A shared object records here (JSON {"spec.members": [...]}, dotted paths) the items kfocp put into
# its atomic lists with FORCE. Giving the object back removes exactly those items and hands each
# list, with the other writers' items, to the field manager GIVE_BACK, so that kfocp's own
# manager no longer owns it and its release does not delete the list.
ADDED = "kfocp.io/added-items"
GIVE_BACK = "given-back-by-kfocp"
# Objects kfocp patched but does not own carry patched.kfocp.io/<instance>=<set>.
PATCHED_PREFIX = "patched.kfocp.io/"
MANAGER = "kfocp"

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

# Apply order: CRDs (then wait until Established), Namespaces, everything else, and admission
# webhooks last, because a webhook whose backend is not running yet blocks every later write
# that it matches. An admission policy's binding comes after its policy: the API server reads the
# policy to know which parameter the binder must be allowed to read, and without it asks for read
# access to everything. Deletion runs the phases in reverse.
PHASE_CRD, PHASE_NAMESPACE, PHASE_MAIN, PHASE_LAST, PHASE_BINDING = 0, 1, 2, 3, 4
_LAST_KINDS = {"MutatingWebhookConfiguration", "ValidatingWebhookConfiguration", "APIService",
               "ValidatingAdmissionPolicy", "MutatingAdmissionPolicy"}
_BINDING_KINDS = {"ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicyBinding"}

# Server-side fields that say nothing about the desired state.
_NOISE_METADATA = ("managedFields", "resourceVersion", "uid", "creationTimestamp", "generation",
                   "selfLink", "deletionGracePeriodSeconds")

# Map keys under which the API server canonicalises quantities ("1000m" is stored as "1").
_QUANTITY_PARENTS = {"hard", "limits", "requests", "default", "defaultRequest", "max", "min",
                     "maxLimitRequestRatio", "capacity", "used", "resourceLimits", "storage"}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)([eE][+-]?[0-9]+|[numkMGTPE]|[KMGTPE]i)?$")
_SUFFIX = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
           "k": Decimal("1e3"), "M": Decimal("1e6"), "G": Decimal("1e9"), "T": Decimal("1e12"),
           "P": Decimal("1e15"), "E": Decimal("1e18"), "Ki": Decimal(2 ** 10), "Mi": Decimal(2 ** 20),
           "Gi": Decimal(2 ** 30), "Ti": Decimal(2 ** 40), "Pi": Decimal(2 ** 50), "Ei": Decimal(2 ** 60)}


class DefinitionError(ValueError):
    """A desired object is malformed; the message names the object and the field."""


Ref = namedtuple("Ref", "api_version kind namespace name")


def ref(obj):
    meta = obj.get("metadata") or {}
    return Ref(obj.get("apiVersion"), obj.get("kind"), meta.get("namespace") or "", meta.get("name"))


def describe(r):
    """'Kind namespace/name' or 'Kind name', as a person reads it."""
    where = "%s/%s" % (r.namespace, r.name) if r.namespace else r.name
    return "%s %s" % (r.kind, where)


def group_kinds(values, field="prune_kinds"):
    """Kinds written Kind.group, or Kind for the core group, as (group, kind) (group_kinds_text's
    inverse)."""
    out = []
    for value in values:
        kind, dot, group = str(value).partition(".")
        if not kind[:1].isupper() or not kind.isalnum() or (dot and not group):
            raise DefinitionError("%s: %r is not a kind as Kind.group, or Kind for the core group "
                                  "(for example RoleBinding.rbac.authorization.k8s.io, Namespace)" % (field, value))
        out.append((group, kind))
    return out


def group_kinds_text(kinds):
    """Kinds ((group, kind)) as Kubernetes writes them: Kind.group, or Kind for the core group."""
    return ", ".join(sorted(".".join(filter(None, (kind, group))) for group, kind in kinds))


def group_version(api_version):
    if "/" in api_version:
        group, version = api_version.split("/", 1)
        return group, version
    return "", api_version


def validate(obj, index=None):
    """Raise DefinitionError when `obj` lacks what every Kubernetes object needs."""
    where = "definitions[%s]" % index if index is not None else "definition"
    if not isinstance(obj, dict):
        raise DefinitionError("%s: must be a mapping, got %s" % (where, type(obj).__name__))
    for field in ("apiVersion", "kind"):
        if not isinstance(obj.get(field), str) or not obj.get(field):
            raise DefinitionError("%s: field %s is required (a non-empty string)" % (where, field))
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta.get("name"):
        raise DefinitionError("%s (%s): field metadata.name is required" % (where, obj["kind"]))
    for field in ("labels", "annotations"):
        values = meta.get(field)
        if values is None:
            continue
        if not isinstance(values, dict):
            raise DefinitionError("%s (%s %s): metadata.%s must be a mapping" % (where, obj["kind"], meta["name"], field))
        for key, value in values.items():
            if not isinstance(value, str):
                raise DefinitionError("%s (%s %s): metadata.%s.%s must be a string, got %r; quote it"
                                      % (where, obj["kind"], meta["name"], field, key, value))


def check_unique(objs):
    seen = {}
    for index, obj in enumerate(objs):
        key = ref(obj)
        if key in seen:
            raise DefinitionError("definitions[%d] and definitions[%d] are the same object: %s"
                                  % (seen[key], index, describe(key)))
        seen[key] = index


def mode_of(obj):
    mode = ((obj.get("metadata") or {}).get("annotations") or {}).get(OWNERSHIP) or OWNED
    if mode not in (OWNED, SHARED, ENSURE):
        raise DefinitionError("%s: annotation %s must be %s, %s or %s, not %r"
                              % (describe(ref(obj)), OWNERSHIP, OWNED, SHARED, ENSURE, mode))
    return mode


def config_hash(obj):
    """A short, stable digest of the desired object, kept on it to notice edits of the desired state."""
    body = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]


def prepare(obj, instance, set_name):
    """Return (the object to send, its ownership mode): ownership labels added, the kfocp.io
    markers removed, and the digest of the desired state in an annotation."""
    mode = mode_of(obj)
    # only metadata's labels and annotations change, and they are replaced by new dicts: a copy of
    # the top level and of metadata leaves the caller's object as it was
    obj = dict(obj)
    meta = obj["metadata"] = dict(obj.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    annotations.pop(OWNERSHIP, None)
    annotations.pop(FORCE, None)
    annotations.pop(ADOPT, None)
    shared = mode == SHARED
    applier = applying_set(obj, mode, set_name, instance)
    set_name = annotations.pop(SET_OVERRIDE, None) or set_name
    labels = dict(meta.get("labels") or {})
    if shared:
        labels[PATCHED_PREFIX + instance] = "true"
    else:
        owner_labels(labels, instance, set_name)
    meta["labels"] = labels
    for key in [k for k in annotations if k.startswith(HASH)]:
        annotations.pop(key)
    meta["annotations"] = annotations
    annotations[hash_key(applier) if applier else HASH] = config_hash(obj)
    return obj, mode


def owner_labels(labels, instance, set_name=None):
    """Give `labels` (a dict, changed in place) the labels that make an object kfocp's: managed by
    kfocp, of `instance` and, when given, of the set `set_name`."""
    labels[MANAGED_BY] = MANAGER
    labels.setdefault(PART_OF, MANAGER)
    labels[INSTANCE] = instance
    if set_name:
        labels[SET] = set_name
    return labels


def applying_set(obj, mode, set_name, instance):
    """The set whose own field manager (patch_manager) and digest (hash_key) apply `obj`: the set
    of a shared object's patch, or the co-declaring set of a platform Namespace. None when kfocp's
    own manager and digest apply it."""
    if mode == SHARED:
        return ((obj.get("metadata") or {}).get("annotations") or {}).get(SET_OVERRIDE) or set_name or instance
    return co_declaring_set(obj, set_name)


def co_declaring_set(obj, set_name):
    """The set applying `obj` when the object belongs to another set (SET_OVERRIDE): a platform
    Namespace that several roles declare, each with labels of its own. Each declaring set applies
    it with a field manager and a digest of its own (patch_manager, hash_key), so that one role's
    apply never drops the labels another one set. None otherwise."""
    override = ((obj.get("metadata") or {}).get("annotations") or {}).get(SET_OVERRIDE)
    return set_name if set_name and override and override != set_name else None


def forced(obj):
    """True when the desired object takes over its fields from other field managers (FORCE)."""
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(FORCE) == "true"


def adopted(obj):
    """True when the desired object takes over the object someone else created (ADOPT)."""
    return ((obj.get("metadata") or {}).get("annotations") or {}).get(ADOPT) == "true"


_OLM_LABELS = ("olm.owner", "olm.managed", "operators.coreos.com/")


def operator_owner(live):
    """Who controls a live object that an operator manages, or None: the controller named by its
    ownerReferences, or OLM (an object OLM installed from an operator bundle)."""
    meta = live.get("metadata") or {}
    for owner in meta.get("ownerReferences") or []:
        if owner.get("controller"):
            return "its controller %s %s" % (owner.get("kind"), owner.get("name"))
    labels = meta.get("labels") or {}
    for key in sorted(labels):
        if key.startswith(_OLM_LABELS):
            return "OLM (label %s=%s)" % (key, labels[key])
    return None


def give_back(live):
    """The apply configuration that leaves in each list recorded in ADDED only the items kfocp did
    not add (None when nothing is recorded)."""
    meta = live.get("metadata") or {}
    try:
        added = json.loads((meta.get("annotations") or {}).get(ADDED) or "{}")
    except ValueError:
        return None
    if not isinstance(added, dict) or not added:
        return None
    body = {"apiVersion": live.get("apiVersion"), "kind": live.get("kind"), "metadata": {"name": meta.get("name")}}
    if meta.get("namespace"):
        body["metadata"]["namespace"] = meta["namespace"]
    for path, items in sorted(added.items()):
        keys = path.split(".")
        value = live
        for key in keys:
            value = value.get(key) if isinstance(value, dict) else None
        kept = [item for item in value or [] if item not in (items or [])]
        node = body
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        node[keys[-1]] = kept
    return body


def made_from(live, field_manager):
    """The owner (kind and name) of a live object that a controller made and kfocp never wrote, or
    None: a controller ownerReference, and no managedFields entry of kfocp's field manager (or of
    its sets' patch managers). A controller that copies its owner's labels onto what it makes
    gives kfocp's labels to an object kfocp did not make: cert-manager's CertificateRequests carry
    their Certificate's (pkg/controller/certificates/requestmanager/requestmanager_controller.go,
    `Labels: crt.Labels`). Such an object is the controller's, and the garbage collector deletes it
    with its owner: kfocp's prune leaves it."""
    meta = live.get("metadata") or {}
    owner = next((ref for ref in meta.get("ownerReferences") or [] if ref.get("controller")), None)
    if owner is None:
        return None
    for entry in meta.get("managedFields") or []:
        manager = str(entry.get("manager", ""))
        if manager == field_manager or manager.startswith(field_manager + "-"):
            return None
    return "%s %s" % (owner.get("kind"), owner.get("name"))


def owned_by(live, instance):
    labels = (live.get("metadata") or {}).get("labels") or {}
    return labels.get(MANAGED_BY) == MANAGER and labels.get(INSTANCE) == instance


def hash_key(set_name):
    """Shared patches keep one digest per set, so that sets patching one object never fight."""
    return "%s.%s" % (HASH, set_name)


def patch_manager(field_manager, set_name):
    """The field manager of a set's shared patches: each set owns only its own fields."""
    return "%s-%s" % (field_manager, set_name)


def patch_sets(live, field_manager):
    """The sets whose shared patches the live object carries, from its managedFields."""
    prefix = field_manager + "-"
    return sorted(set(entry["manager"][len(prefix):] for entry in (live.get("metadata") or {}).get("managedFields") or []
                      if entry.get("operation") == "Apply" and str(entry.get("manager", "")).startswith(prefix)))


def patched_by(live, instance):
    labels = (live.get("metadata") or {}).get("labels") or {}
    return PATCHED_PREFIX + instance in labels


def owner_selector(instance, set_name=None):
    selector = "%s=%s,%s=%s" % (MANAGED_BY, MANAGER, INSTANCE, instance)
    return selector + (",%s=%s" % (SET, set_name) if set_name else "")


def patched_selector(instance):
    return PATCHED_PREFIX + instance


def parse_quantity(value):
    """The value of a Kubernetes quantity string as a Decimal, or None if it is not one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    match = _QUANTITY.match(value.strip())
    if not match:
        return None
    number, suffix = match.group(1), match.group(2) or ""
    try:
        if suffix[:1] in ("e", "E"):
            return Decimal(number + suffix)
        return Decimal(number) * _SUFFIX[suffix]
    except (InvalidOperation, KeyError):
        return None


def _same_scalar(desired, live, quantity):
    if desired == live and type(desired) is type(live):
        return True
    if quantity:
        a, b = parse_quantity(desired), parse_quantity(live)
        return a is not None and a == b
    # The API server stores integers given for int-or-string fields as they came; a float that
    # is whole comes back as an int.
    if isinstance(desired, (int, float)) and isinstance(live, (int, float)) and not isinstance(desired, bool) \
            and not isinstance(live, bool):
        return desired == live
    return False


def contains(live, desired, quantities=False):
    """True when every field of `desired` has the same value in `live`.

    Extra fields in `live` (defaults, other managers' fields, status) are allowed. Lists must
    have the same length and match item by item. Values of the maps where the API server
    canonicalises quantities (resources.limits, ResourceQuota hard, ...) compare by value.
    """
    if isinstance(desired, dict):
        if not isinstance(live, dict):
            return False
        for key, value in desired.items():
            if key not in live:
                if value is None or value == {} or value == []:
                    continue
                return False
            if isinstance(value, (dict, list)):
                if not contains(live[key], value, key in _QUANTITY_PARENTS):
                    return False
            elif not _same_scalar(value, live[key], quantities):
                return False
        return True
    if isinstance(desired, list):
        if not isinstance(live, list) or len(live) != len(desired):
            return False
        for item_live, item in zip(live, desired):
            if isinstance(item, (dict, list)):
                if not contains(item_live, item, quantities):
                    return False
            elif not _same_scalar(item, item_live, False):
                return False
        return True
    return _same_scalar(desired, live, quantities)


def up_to_date(live, prepared):
    """True when applying `prepared` to `live` would change nothing: the desired state is the
    same as when kfocp last applied it (digest), and every desired field still holds its value."""
    return same_digest(live, prepared) and contains(live, prepared)


def same_digest(live, prepared):
    """True when the digest of the desired state on `live` is that of `prepared`."""
    want = prepared["metadata"]["annotations"]
    key = next(k for k in want if k.startswith(HASH))
    return ((live.get("metadata") or {}).get("annotations") or {}).get(key) == want[key]


def applied_fields(live, manager):
    """The fields `manager` holds on `live` by server-side apply (its managedFields entry, in the
    fieldsV1 form), or None when it holds none."""
    for entry in (live.get("metadata") or {}).get("managedFields") or []:
        if entry.get("manager") == manager and entry.get("operation") == "Apply" and not entry.get("subresource"):
            return entry.get("fieldsV1") or {}
    return None


def entry_labels(entry):
    """The names of the labels one managedFields entry holds."""
    fields = ((entry.get("fieldsV1") or {}).get("f:metadata") or {}).get("f:labels") or {}
    return [key[2:] for key in fields if key.startswith("f:")]


def label_owners(entries, prefix=""):
    """The managedFields `entries` reduced to who set which label (those starting with `prefix`):
    one entry per manager and operation that holds such labels, with only them. What a reader of
    label ownership needs; the rest of managedFields is most of an object's bytes."""
    kept = []
    for entry in entries or []:
        held = dict(("f:" + label, {}) for label in entry_labels(entry) if label.startswith(prefix))
        if held:
            kept.append({"manager": entry.get("manager"), "operation": entry.get("operation"),
                         "fieldsV1": {"f:metadata": {"f:labels": held}}})
    return kept


def labels_held_by(meta, manager_prefix, others=False):
    """{label: value} of the labels of an object's metadata that a field manager whose name starts
    with `manager_prefix` holds (with `others`: that a manager whose name does not holds)."""
    live = meta.get("labels") or {}
    held = {}
    for entry in meta.get("managedFields") or []:
        if str(entry.get("manager") or "").startswith(manager_prefix) != others:
            held.update((label, live[label]) for label in entry_labels(entry) if label in live)
    return held


def holds_fields(node, desired):
    """True when the field set `node` holds every field of `desired`. A node without children is
    a field owned as a whole: a scalar, an atomic list or an atomic struct. Items of associative
    lists (k:, v:, i:) are not matched to the desired items: False, the object is read in full."""
    if not node:
        return True
    if any(not key.startswith("f:") and key != "." for key in node):
        return False
    if not isinstance(desired, dict):
        return False
    for key, value in desired.items():
        if value is None:
            continue
        child = node.get("f:" + key)
        if child is None or not holds_fields(child, value):
            return False
    return True


def unchanged_since_applied(meta_live, prepared, manager):
    """True when `prepared` is what `manager` last applied to the object (the digest) and it still
    holds every field of it: read from metadata alone (a PartialObjectMetadata). A writer who
    changed or removed one of those fields took it from `manager` (server-side apply moves a
    changed field to its writer), so the object then needs its full comparison, or an apply."""
    if not same_digest(meta_live, prepared):
        return False
    fields = applied_fields(meta_live, manager)
    if fields is None:
        return False
    body = dict((key, value) for key, value in prepared.items() if key not in ("apiVersion", "kind", "metadata"))
    body["metadata"] = dict((key, value) for key, value in prepared["metadata"].items()
                            if key not in ("name", "namespace"))
    return holds_fields(fields, body)


def strip(obj):
    """The object without server bookkeeping, for diffs and dumps."""
    obj = copy.deepcopy(obj)
    meta = obj.get("metadata") or {}
    for field in _NOISE_METADATA:
        meta.pop(field, None)
    annotations = meta.get("annotations") or {}
    for key in [k for k in annotations if k.startswith(HASH)]:
        annotations.pop(key)
    annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if not annotations:
        meta.pop("annotations", None)
    obj.pop("status", None)
    return obj


def phase(kind):
    if kind == "CustomResourceDefinition":
        return PHASE_CRD
    if kind == "Namespace":
        return PHASE_NAMESPACE
    if kind in _LAST_KINDS:
        return PHASE_LAST
    if kind in _BINDING_KINDS:
        return PHASE_BINDING
    return PHASE_MAIN


def crd_kinds(crd):
    """The (apiVersion, kind) pairs a CustomResourceDefinition serves, and whether namespaced."""
    spec = crd.get("spec") or {}
    group = spec.get("group")
    kind = (spec.get("names") or {}).get("kind")
    plural = (spec.get("names") or {}).get("plural")
    namespaced = spec.get("scope", "Namespaced") == "Namespaced"
    return [("%s/%s" % (group, v.get("name")), kind, plural, namespaced)
            for v in spec.get("versions") or [] if v.get("served", True)]


def conflict_fields(status):
    """The field paths and managers named in a 409 apply Conflict status."""
    causes = ((status or {}).get("details") or {}).get("causes") or []
    found = []
    for cause in causes:
        # The API (StatusCause) names the cause type in the JSON field "reason".
        if "FieldManagerConflict" in (cause.get("reason"), cause.get("type")):
            found.append("%s (owned by %s)" % (cause.get("field"), _manager_name(cause.get("message", ""))))
    return found


def _manager_name(message):
    match = re.search(r'conflict with "([^"]+)"', message)
    return match.group(1) if match else message


def invalid_fields(status):
    """'field: message' for each cause of a 422 Invalid status."""
    causes = ((status or {}).get("details") or {}).get("causes") or []
    return ["%s: %s" % (c.get("field"), c.get("message")) if c.get("field") else c.get("message", "")
            for c in causes]
