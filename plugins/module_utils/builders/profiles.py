# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubeflow Profiles, one per user or team, and the contributor access in their namespaces.

Profiles come from a declared list and, optionally, from OpenShift User objects (one per user
who has logged in). The profile controller turns each Profile into its namespace, owner
RoleBinding, AuthorizationPolicy and ResourceQuota. Contributors are given access the way the
Kubeflow dashboard does it: in the profile namespace, a RoleBinding and an Istio
AuthorizationPolicy named user-<sanitised user>-clusterrole-<role>, annotated with `user` and
`role`; a Group contributor also gets a RoleBinding to the Group itself. Group members come from
the live Group objects, so membership changes are followed on the next run.

Owners share their namespace themselves too, through the dashboard, with objects of the same
names. Those are theirs: kfocp's access objects are created only where no object of that name
exists (ownership "ensure"), so kfocp never overwrites or prunes an owner's.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import hashlib
import re

from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o
from ansible_collections.kfocp.kubeflow.plugins.module_utils import settings as role_settings
from ansible_collections.kfocp.kubeflow.plugins.module_utils import role_defaults
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import group_name, quantity, require, role_binding
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import qualified_name

# The role's defaults are its contract's (module_utils/settings.py): this is that mapping, not a copy.
DEFAULTS = role_settings.DEFAULTS["profiles"]
RESERVED = role_defaults.RESERVED

PROFILE_API = "kubeflow.org/v1"
AUTHZ_API = "security.istio.io/v1"
RBAC_GROUP = "rbac.authorization.k8s.io"
ROLES = {"admin": "kubeflow-admin", "edit": "kubeflow-edit", "view": "kubeflow-view"}
CONTRIBUTOR_ROLES = ("edit", "view")
SOURCE = "kfocp.io/profile-source"
USER_ANNOTATION = "kfocp.io/user"
_PREFIX = re.compile(r"^([a-z0-9][-a-z0-9]{0,29})?$")
_NOT_NAME = re.compile(r"[^a-z0-9-]+")
_NOT_BINDING = re.compile(r"[^a-z0-9]+")


def _setting(settings, key):
    """A setting, or when it is not given, what the role's contract gives (module_utils/settings.py)."""
    value = settings.get(key)
    return role_settings.setting("profiles", settings, key) if value is None else value


# ------------------------------------------------------------------ names

def profile_name(username, taken=(), prefix=""):
    """The profile (and namespace) name for a user name: `prefix`, then the user name in lower
    case, every run of characters other than letters, digits and '-' made one '-', at most 63
    characters.

    A user name that is already a valid, free name is used as it is. Any other (one that lost
    characters on the way, or whose name is taken or reserved) gets '-' and six hex digits of the
    SHA-256 of the user name: stable across runs, whatever other users exist, so a profile is
    never renamed because someone else logged in.
    """
    require(isinstance(username, str) and username.strip(), "username", "must be a non-empty string",
            "Give the user's name")
    base = _NOT_NAME.sub("-", username.lower()).strip("-")
    base = re.sub(r"-{2,}", "-", base) or "user"
    lossless = base == username and len(prefix + base) <= 63
    base = prefix + base
    digest = hashlib.sha256(username.encode("utf-8")).hexdigest()
    candidates = ([base] if lossless else []) + ["%s-%s" % (base[:56].rstrip("-"), digest[:6]),
                                                 "user-%s-%s" % (base[:51].rstrip("-"), digest[:6]),
                                                 "user-%s-%s" % (base[:40].rstrip("-"), digest[:17])]
    for name in candidates:
        if not _taken(name, taken):
            return name
    raise o.DefinitionError("username: no free profile name for %r (tried %s). Add it to profiles_auto_exclude "
                            "or declare its profile in profiles_list" % (username, ", ".join(candidates)))


def _taken(name, taken):
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in taken)


def binding_name(kind, subject, role):
    """The dashboard's name for a contributor binding: user-<subject>-clusterrole-<role>, every
    run of characters other than lower-case letters and digits made one '-'."""
    raw = "-".join([kind.lower(), _NOT_BINDING.sub("-", subject.lower()), "clusterrole", role])
    name = _NOT_BINDING.sub("-", raw).strip("-")
    if len(name) > 253:
        name = "%s-%s" % (name[:240], hashlib.sha256(raw.encode("utf-8")).hexdigest()[:12])
    return name


# ------------------------------------------------------------------ validation

def _subject(value, field, allow_both=False):
    """{user: name} or {group: name} -> (kind, name)."""
    require(isinstance(value, dict), field, "must be a mapping", "Give {user: <name>} or {group: <name>}")
    user, group = value.get("user"), value.get("group")
    require(not (user and group), field, "names both a user (%r) and a group (%r)" % (user, group),
            "An owner or contributor is either a user or a group: remove one")
    require(user or group, field, "names neither a user nor a group", "Set user: <name> or group: <name>")
    name = user or group
    require(isinstance(name, str) and name.strip() == name and name, field + (".user" if user else ".group"),
            "%r is not a valid name" % (name,), "Give the name as OpenShift shows it, without spaces around it")
    if group:
        group_name(name, field + ".group")
    return ("User" if user else "Group"), name


# The names a ResourceQuota's `hard` may hold (k8s.io/kubernetes v1.36.4: pkg/apis/core/validation
# ValidateResourceQuotaResourceName, pkg/apis/core/helper standardQuotaResources and
# IsQuotaHugePageResourceName): a name without "/" must be one of these, or a hugepages one.
QUOTA_STANDARD = frozenset((
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods",
    "resourcequotas", "services", "replicationcontrollers", "secrets", "persistentvolumeclaims", "configmaps",
    "services.nodeports", "services.loadbalancers"))


def quota_name(key, field):
    """Refuse a ResourceQuota name the API server refuses, or one the quota system accepts but never
    counts: an extended resource (a device plugin's, such as nvidia.com/gpu) is counted only as
    requests.<name> (pkg/quota/v1/evaluator/core/pods.go, isExtendedResourceNameForQuota); the
    profile controller copies the names into the namespace's ResourceQuota as they are."""
    example = "Use cpu, memory, requests.cpu, limits.memory, pods, requests.storage, requests.nvidia.com/gpu, " \
              "count/deployments.apps"
    require(isinstance(key, str) and key, field, "is not a resource name", example)
    if "/" not in key:
        require(key in QUOTA_STANDARD or key.startswith(("hugepages-", "requests.hugepages-")), field,
                "is not a resource a ResourceQuota can hold (the API server refuses it)", example)
        return key
    require(key.count("/") == 1, field, "is not a resource name (one '/' at most)", example)
    qualified_name(key, field)
    prefix = key.split("/", 1)[0]
    device = not key.startswith("requests.") and prefix != "count" and \
        not prefix.endswith(".storageclass.storage.k8s.io") and not prefix.endswith("kubernetes.io")
    name = key[len("limits."):] if key.startswith("limits.") else key
    require(not device, field, "is accepted by a ResourceQuota but never counted: quota counts an extended "
            "resource only as requests.<name>", "Use requests.%s" % name)
    return key


def quota(default, override, field, default_field="profiles_quota_default"):
    """The ResourceQuota `hard` map: the defaults with the override's keys replacing them; an
    override value of null removes that limit. Every value must be a Kubernetes quantity."""
    hard = {}
    for where, values in ((default_field, default), (field, override)):
        if values is None:
            continue
        require(isinstance(values, dict), where, "must be a mapping of resource name to quantity",
                "For example {cpu: '8', memory: 32Gi, requests.nvidia.com/gpu: '1'}")
        for key, value in values.items():
            quota_name(key, "%s.%s" % (where, key))
            if value is None:
                hard.pop(key, None)
                continue
            require(quantity(value, "%s.%s" % (where, key)) >= 0, "%s.%s" % (where, key),
                    "%r is negative" % (value,), "Give 0 or more, or null to remove the limit")
            hard[key] = str(value)
    return hard


def _declared(settings):
    items = _setting(settings, "profiles_list")
    require(isinstance(items, list), "profiles_list", "must be a list", "Give a list of {name, owner, ...}")
    roles = _group_owner_role(settings)
    seen = {}
    out = []
    for index, item in enumerate(items):
        where = "profiles_list[%d]" % index
        require(isinstance(item, dict), where, "must be a mapping", "Give {name, owner: {user|group}, contributors, quota}")
        name = item.get("name")
        require(isinstance(name, str) and len(name) <= 63 and o.DNS_LABEL.match(name or ""), where + ".name",
                "%r is not a DNS label" % (name,),
                "Use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit")
        if name in seen:
            require(False, where + ".name", "duplicate profile %r (also profiles_list[%d])" % (name, seen[name]),
                    "Give each profile once")
        seen[name] = index
        require("owner" in item, where + ".owner", "is required", "Set owner: {user: <name>} or {group: <name>}")
        kind, owner = _subject(item["owner"], where + ".owner")
        contributors = []
        raw = item.get("contributors") or []
        require(isinstance(raw, list), where + ".contributors", "must be a list", "Give [{user|group, role}]")
        for cindex, contributor in enumerate(raw):
            cwhere = "%s.contributors[%d]" % (where, cindex)
            ckind, cname = _subject(contributor, cwhere)
            role = contributor.get("role", "edit")
            require(role in CONTRIBUTOR_ROLES, cwhere + ".role", "%r is not a contributor role" % (role,),
                    "Use edit or view")
            contributors.append((ckind, cname, role))
        hard = quota(_setting(settings, "profiles_quota_default"), item.get("quota"), where + ".quota")
        owner_role = item.get("group_owner_role", roles)
        require(owner_role in CONTRIBUTOR_ROLES, where + ".group_owner_role", "%r is not a contributor role" % (owner_role,),
                "Use edit or view")
        out.append({"name": name, "owner": (kind, owner), "contributors": contributors, "hard": hard,
                    "source": "declared", "group_owner_role": owner_role})
    return out


def _group_owner_role(settings):
    role = _setting(settings, "profiles_group_owner_role")
    require(role in CONTRIBUTOR_ROLES, "profiles_group_owner_role", "%r is not a contributor role" % (role,),
            "Use edit or view")
    return role


def _has_identity(user, provider):
    if not provider:
        return bool(user.get("identities"))
    return any(str(identity).split(":", 1)[0] == provider for identity in user.get("identities") or [])


def _ours(obj, instance):
    return o.owned_by(obj, instance)


def reserved(name, settings):
    """The pattern of profiles_reserved_names that `name` matches, or None."""
    patterns = _setting(settings, "profiles_reserved_names")
    require(isinstance(patterns, list) and all(isinstance(p, str) and p for p in patterns), "profiles_reserved_names",
            "must be a list of names or patterns", "For example [default, kube-*, openshift*, kubeflow]")
    return next((pattern for pattern in patterns if fnmatch.fnmatchcase(name, pattern)), None)


def _prefix(settings, key, field=None):
    """A name prefix; `field` names the variable it comes from, when it is derived from another's."""
    value = _setting(settings, key)
    require(isinstance(value, str) and _PREFIX.match(value), field or key, "%r is not a name prefix" % (value,),
            "Use at most 30 lower-case letters, digits and '-', starting with a letter or digit (e.g. 'u-')")
    return value


# The profile controller's finalizer (controllers/profile_controller.go): only it removes it.
FINALIZER = "profile-finalizer"


def _namespace_owners(namespaces):
    """{name: the namespace's owner annotation, or None} of the live namespaces."""
    return dict((n["metadata"]["name"], (n["metadata"].get("annotations") or {}).get("owner"))
                for n in namespaces or ())


def _check_declared(profile, where, settings, owners, live):
    """A declared profile must not take a reserved name, someone else's namespace, or change the
    owner of a profile the controller has made: the controller would refuse it."""
    name, owner = profile["name"], profile["owner"][1]
    pattern = reserved(name, settings)
    require(pattern is None, where + ".name", "%r is a reserved namespace (profiles_reserved_names: %s)"
            % (name, pattern), "Choose another name: system and platform namespaces never hold a profile")
    current = ((live.get(name) or {}).get("spec") or {}).get("owner") or {}
    if current and current.get("name") != owner:
        require(False, where + ".owner", "profile %r is owned by %s %r; the profile controller never moves a "
                "namespace to a new owner (the old owner would keep namespaceAdmin)"
                % (name, current.get("kind", "User"), current.get("name")),
                "Keep the owner and add the new one as a contributor, or remove the profile (kfocp_profiles_prune: "
                "true) and declare it again under another name")
    if name in owners and owners[name] != owner:
        require(False, where + ".name", "namespace %r already exists and is not %s's (owner annotation: %s): the "
                "profile controller would refuse the profile" % (name, owner, owners[name] or "none"),
                "Choose another name, or set profiles_name_prefix for automatic profiles")


def never_released(live_profiles, namespaces):
    """The Profiles whose deletion the profile controller would never finish: it refuses a Profile
    whose namespace exists without `owner: <spec.owner.name>`, and returns before its finalizer
    block, so one that holds profile-finalizer stays Terminating. Each as {name, owner,
    namespace_owner}, sorted by name."""
    owners = _namespace_owners(namespaces)
    out = []
    for profile in live_profiles or ():
        meta = profile["metadata"]
        owner = (((profile.get("spec") or {}).get("owner") or {}).get("name")) or ""
        name = meta["name"]
        if FINALIZER in (meta.get("finalizers") or []) and name in owners and owners[name] != owner:
            out.append({"name": name, "owner": owner, "namespace_owner": owners[name]})
    return sorted(out, key=lambda p: p["name"])


def plan(settings, users=(), groups=(), profiles=(), namespaces=None, skipped=None):
    """Every desired profile as {name, owner: (kind, name), contributors, hard, source}.

    namespaces: the live Namespaces, or None. When given, a declared profile whose namespace
    exists without its owner's `owner` annotation is an error, and an automatic one takes another
    name. skipped: a list, or None. A user who gets no automatic profile because every name for
    them is taken is appended to it as {user, message} and skipped; without it, that is an error.
    """
    instance = _setting(settings, "kfocp_instance")
    quota(_setting(settings, "profiles_quota_default"), None, "profiles_quota_default")
    prefix = _prefix(settings, "profiles_name_prefix")
    self_service = _prefix(settings, "profiles_self_service_prefix", "profile_self_service_name_prefix")
    declared = _declared(settings)
    owners = _namespace_owners(namespaces)
    live = dict((p["metadata"]["name"], p) for p in profiles or () if _ours(p, instance))
    for index, profile in enumerate(declared):
        _check_declared(profile, "profiles_list[%d]" % index, settings, owners, live)
    foreign = [p for p in profiles or () if not _ours(p, instance)]
    taken = set(_setting(settings, "profiles_reserved_names")) | set(p["name"] for p in declared) | \
        set(p["metadata"]["name"] for p in foreign)
    if self_service:
        taken.add(self_service + "*")  # the self-service creators' names: never an automatic one
    result = list(declared)
    if _setting(settings, "profiles_auto_from_users"):
        provider = _setting(settings, "profiles_auto_provider")
        exclude = _setting(settings, "profiles_auto_exclude")
        owners_of = set(p["owner"][1] for p in declared if p["owner"][0] == "User")
        owners_of |= set(((p.get("spec") or {}).get("owner") or {}).get("name") for p in foreign
                         if ((p.get("spec") or {}).get("owner") or {}).get("kind") == "User")
        hard = quota(_setting(settings, "profiles_quota_default"), None, "profiles_quota_default")
        auto_names = {}
        for user in sorted(users or (), key=lambda u: u["metadata"]["name"]):
            username = user["metadata"]["name"]
            if username in owners_of or username.startswith("system:") or \
                    any(fnmatch.fnmatchcase(username, pattern) for pattern in exclude):
                continue
            if not _has_identity(user, provider):
                continue
            # another user's namespace, or one with no owner, is taken
            others = set(ns for ns, owner in owners.items() if owner != username)
            try:
                name = profile_name(username, taken | others, prefix)
                require(name not in auto_names, "users", "user names %r and %r map to the same profile %r"
                        % (auto_names.get(name), username, name), "Add one of them to profiles_auto_exclude")
            except o.DefinitionError as err:
                if skipped is None:
                    raise
                skipped.append({"user": username, "message": str(err)})
                continue
            auto_names[name] = username
            taken.add(name)
            result.append({"name": name, "owner": ("User", username), "contributors": [], "hard": dict(hard),
                           "source": "auto", "group_owner_role": None})
    members = dict((g["metadata"]["name"], sorted(set(g.get("users") or []))) for g in groups or ())
    for profile in result:
        profile["members"] = members
    return result


# ------------------------------------------------------------------ objects

def profile_object(profile):
    kind, owner = profile["owner"]
    spec = {"owner": {"apiGroup": RBAC_GROUP, "kind": kind, "name": owner}}
    if profile["hard"]:
        spec["resourceQuotaSpec"] = {"hard": dict(profile["hard"])}
    meta = {"name": profile["name"], "labels": {SOURCE: profile["source"]}}
    if profile["source"] == "auto":
        meta["annotations"] = {USER_ANNOTATION: owner}
    return {"apiVersion": PROFILE_API, "kind": "Profile", "metadata": meta, "spec": spec}


def _user_access(namespace, user, role, settings):
    name = binding_name("User", user, role)
    annotations = {"user": user, "role": role}
    binding = role_binding(name, namespace, "ClusterRole", ROLES[role],
                           [{"apiGroup": RBAC_GROUP, "kind": "User", "name": user}], annotations=_ensure(annotations))
    rule = {"when": [{"key": "request.headers[%s]" % _setting(settings, "profiles_userid_header"),
                      "values": [_setting(settings, "profiles_userid_prefix") + user]}]}
    principals = _setting(settings, "profiles_authz_principals")
    if principals:
        rule["from"] = [{"source": {"principals": list(principals)}}]
    policy = {"apiVersion": AUTHZ_API, "kind": "AuthorizationPolicy",
              "metadata": {"name": name, "namespace": namespace, "annotations": _ensure(annotations)},
              "spec": {"action": "ALLOW", "rules": [rule]}}
    return [binding, policy]


def _group_binding(namespace, group, role):
    return role_binding(binding_name("Group", group, role), namespace, "ClusterRole", ROLES[role],
                        [{"apiGroup": RBAC_GROUP, "kind": "Group", "name": group}],
                        annotations=_ensure({"group": group, "role": role}))


def _ensure(annotations):
    """Contributor access that the owner gave through the dashboard has the same name as kfocp's:
    kfocp creates its own when missing and leaves the owner's as it is (never overwrites or prunes
    it)."""
    return dict(annotations, **{o.OWNERSHIP: o.ENSURE})


def access_objects(profile, settings):
    """The contributor RoleBindings and AuthorizationPolicies of one profile, in its namespace."""
    namespace = profile["name"]
    members = profile["members"]
    grants = []  # (kind, subject, role)
    kind, owner = profile["owner"]
    if kind == "Group":
        grants += [("User", user, profile["group_owner_role"]) for user in members.get(owner, [])]
    for ckind, cname, role in profile["contributors"]:
        grants.append((ckind, cname, role))
        if ckind == "Group":
            grants += [("User", user, role) for user in members.get(cname, [])]
    objs, seen = [], set()
    for gkind, subject, role in grants:
        if (gkind, subject, role) in seen or (gkind == "User" and kind == "User" and subject == owner):
            continue
        seen.add((gkind, subject, role))
        objs += _user_access(namespace, subject, role, settings) if gkind == "User" else \
            [_group_binding(namespace, subject, role)]
    return objs


def objects(settings, users=(), groups=(), profiles=(), namespaces=None):
    """The role's whole desired state: the Profiles, then the contributor access objects.

    settings: the profiles_* variables (and kfocp_instance); users, groups: live User and Group
    objects; profiles: live Profiles (those kfocp did not create keep their names, and their
    owners get no automatic profile); namespaces: live Namespaces, or None. When given, access
    objects are built only for profile namespaces that exist (the profile controller creates
    them after the Profile); the others get theirs on a later run.
    """
    return objects_of(plan(settings, users, groups, profiles), settings, namespaces)


def objects_of(desired, settings, namespaces=None):
    """objects() for the profiles of a plan()."""
    existing = None
    if namespaces is not None:
        existing = set(n["metadata"]["name"] for n in namespaces if (n.get("status") or {}).get("phase") != "Terminating")
    objs = [profile_object(p) for p in desired]
    for profile in desired:
        if existing is None or profile["name"] in existing:
            objs += access_objects(profile, settings)
    return objs


def pending(settings, users=(), groups=(), profiles=(), namespaces=()):
    """Names of desired profiles whose namespace does not exist yet."""
    return pending_of(plan(settings, users, groups, profiles), namespaces)


def pending_of(desired, namespaces=()):
    """pending() for the profiles of a plan()."""
    existing = set(n["metadata"]["name"] for n in namespaces or ())
    return [p["name"] for p in desired if p["name"] not in existing]


def orphans(settings, live_profiles, users=(), groups=()):
    """Names of Profiles this instance created that are no longer desired: deleted only with
    kfocp_profiles_prune: true, otherwise reported."""
    return orphans_of(plan(settings, users, groups, live_profiles), settings, live_profiles)


def orphans_of(desired, settings, live_profiles):
    """orphans() for the profiles of a plan()."""
    instance = _setting(settings, "kfocp_instance")
    wanted = set(p["name"] for p in desired)
    return sorted(p["metadata"]["name"] for p in live_profiles or ()
                  if _ours(p, instance) and p["metadata"]["name"] not in wanted)
