# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The policies every profile namespace gets, and the GPU guard on every other namespace.

For each profile namespace (selected by label): mesh membership (by default the way the
service_mesh role's flavour wants it: a ServiceMeshMember for Service Mesh 2, labels for Service
Mesh 3 and an existing Istio; or a ServiceMeshMember of a named control plane, or the namespace in
the ServiceMeshMemberRoll's members), the Pod Security admission labels of one level, the GPU toleration as the namespace's default
tolerations, a LimitRange, SCC use grants for the profile's service accounts, the serverless
policies and the data lake annotation of the default-editor service account, when enabled.
Every other namespace, except the configured exclusions, gets a tolerations whitelist that
admits the node-condition tolerations and nothing else, so its pods cannot tolerate the GPU
taint. Namespaces and service accounts belong to the profile controller: they are patched as
shared objects, never created or deleted.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import fnmatch
import json
import re

from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o
from ansible_collections.kfocp.kubeflow.plugins.module_utils import settings as role_settings
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh, pod_security, scc
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import (
    dns_label, dns_subdomain, label_selector, labels, plain, qualified_name, quantity, require)

# The role's defaults are its contract's (module_utils/settings.py): this is that mapping, not a copy.
DEFAULTS = role_settings.DEFAULTS["namespace_policies"]

DEFAULT_TOLERATIONS = "scheduler.alpha.kubernetes.io/defaultTolerations"
WHITELIST = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"
MESH_MODES = ("mesh", "member", "memberroll", "none")
TOLERATION_MODES = ("annotation", "gatekeeper", "none")
LIMITRANGE = "kfocp-limits"
NETWORKPOLICY = "allow-from-serving-system-namespace"
KNATIVE_SYSTEM_LABEL = "serving.knative.openshift.io/system-namespace"
MEMBERS_ANNOTATION = "kfocp.io/mesh-members"
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


class Settings(object):
    """The role's variables, checked once; a missing one is what the role's contract gives
    (module_utils/settings.py)."""

    def __init__(self, settings):
        require(isinstance(settings, dict), "settings", "must be a mapping of namespace_policies_* variables",
                "Pass the role's variables")
        self.raw = plain(settings)
        self.mesh = None

    def __getitem__(self, key):
        value = self.raw.get(key)
        return role_settings.setting("namespace_policies", self.raw, key) if value is None else value

    def check(self):
        """Raise DefinitionError, naming the variable, for anything that would make a bad object."""
        selector(self["namespace_policies_selector"])
        share = self["namespace_policies_prune_max_share"]
        require(isinstance(share, (int, float)) and not isinstance(share, bool) and 0 <= share <= 1,
                "namespace_policies_prune_max_share", "%r is not a share from 0 to 1" % (share,),
                "Give for example 0.5, or 1 to allow a run to remove any share of the policies")
        for key, allowed in (("namespace_policies_mesh_mode", MESH_MODES),
                             ("namespace_policies_tolerations_mode", TOLERATION_MODES)):
            require(self[key] in allowed, key, "%r is not one of %s" % (self[key], ", ".join(allowed)),
                    "Use one of %s" % ", ".join(allowed))
        if self["namespace_policies_mesh_mode"] == "mesh":
            # the service_mesh role's settings (mesh.MEMBERSHIP_KEYS)
            self.mesh = mesh.normalise(self["namespace_policies_service_mesh"])
        # checked in every mode (the ones that do not use them too): a wrong value is wrong input
        if self["namespace_policies_mesh_mode"] not in ("mesh", "none") or self["namespace_policies_mesh_name"]:
            dns_subdomain(self["namespace_policies_mesh_name"], "namespace_policies_mesh_name")
        if self["namespace_policies_mesh_mode"] not in ("mesh", "none") or self["namespace_policies_mesh_namespace"]:
            dns_label(self["namespace_policies_mesh_namespace"], "namespace_policies_mesh_namespace")
        for key in ("namespace_policies_gpu_tolerations", "namespace_policies_others_whitelist"):
            tolerations(self[key], key)
        levels = pod_security.LEVELS + ("none",)
        require(self["namespace_policies_pod_security"] in levels, "namespace_policies_pod_security",
                "%r is not one of %s" % (self["namespace_policies_pod_security"], ", ".join(levels)),
                "Use baseline (notebooks, pipeline runs, inference services with sidecars), another level, or none")
        if self["namespace_policies_gpu_operator_namespace"]:
            dns_label(self["namespace_policies_gpu_operator_namespace"], "namespace_policies_gpu_operator_namespace")
        for key in ("namespace_policies_whitelist_namespaces", "namespace_policies_whitelist_exclude"):
            require(isinstance(self[key], list) and all(isinstance(x, str) for x in self[key]), key,
                    "must be a list of namespace names or patterns", "For example [default, openshift-*, kube-*]")
        limits = self["namespace_policies_limitrange"]
        require(isinstance(limits, dict), "namespace_policies_limitrange", "must be a mapping",
                "Give {default: {...}, defaultRequest: {...}}, or {} for no LimitRange")
        for part, values in limits.items():
            require(part in ("default", "defaultRequest", "max", "min", "maxLimitRequestRatio"),
                    "namespace_policies_limitrange.%s" % part, "is not a LimitRange item field",
                    "Use default, defaultRequest, max, min or maxLimitRequestRatio")
            require(isinstance(values, dict), "namespace_policies_limitrange.%s" % part, "must be a mapping",
                    "Give {cpu: ..., memory: ...}")
            for key, value in values.items():
                quantity(value, "namespace_policies_limitrange.%s.%s" % (part, key))
        limitrange_order(limits)
        if self["namespace_policies_scc"]:
            require(self["namespace_policies_scc"] in scc.KNOWN_SCCS, "namespace_policies_scc",
                    "%r is not a known SCC" % self["namespace_policies_scc"], "Use nonroot-v2 or nonroot, or '' for none")
            for index, name in enumerate(self["namespace_policies_scc_serviceaccounts"]):
                dns_subdomain(name, "namespace_policies_scc_serviceaccounts[%d]" % index)
        if self["namespace_policies_serverless"]:
            principals = self["namespace_policies_serverless_principals"]
            require(isinstance(principals, list) and principals and all(isinstance(p, str) and p for p in principals),
                    "namespace_policies_serverless_principals", "must list at least one principal",
                    "Give the Knative activator's and Kourier's principals; an empty list would allow nobody")
            for index, workload in enumerate(self["namespace_policies_serverless_workloads"]):
                where = "namespace_policies_serverless_workloads[%d]" % index
                require(isinstance(workload, dict) and workload.get("name") and workload.get("match_labels"),
                        where, "needs name and match_labels", "Give {name: kserve-predictor, match_labels: {...}}")
                dns_label("kfocp-knative-" + workload["name"], where + ".name")
                labels(workload["match_labels"], where + ".match_labels")
        if self["namespace_policies_data_lake"]:
            qualified_name(self["namespace_policies_data_lake_annotation"], "namespace_policies_data_lake_annotation")
            dns_subdomain(self["namespace_policies_data_lake_serviceaccount"], "namespace_policies_data_lake_serviceaccount")
            template = self["namespace_policies_data_lake_role_template"]
            roles = self["namespace_policies_data_lake_roles"]
            require(isinstance(roles, dict), "namespace_policies_data_lake_roles", "must be a mapping",
                    "Give {<namespace>: <role ARN>}")
            require(template or roles, "namespace_policies_data_lake_role_template", "is empty",
                    "Set a template such as arn:aws:iam::123456789012:role/kubeflow-{namespace}")
            for name in _PLACEHOLDER.findall(template or ""):
                require(name in ("namespace", "owner"), "namespace_policies_data_lake_role_template",
                        "unknown placeholder {%s}" % name, "Use {namespace} and {owner} only")
        return self


# The order the API server requires of a LimitRange item's values for one resource.
_LIMIT_ORDER = (("min", "max"), ("min", "default"), ("min", "defaultRequest"), ("defaultRequest", "default"),
                ("default", "max"), ("defaultRequest", "max"))


def _overcommit_allowed(resource):
    """k8s.io/kubernetes pkg/apis/core/helper IsOvercommitAllowed: a native resource (no domain, or
    a kubernetes.io/ one) that is not hugepages. GPUs and other extended resources are not."""
    native = "/" not in resource or "kubernetes.io/" in resource
    return native and not resource.startswith("hugepages-")


def limitrange_order(limits):
    """The rules the API server checks of a LimitRange item's values for each resource
    (pkg/apis/core/validation ValidateLimitRange): min <= defaultRequest <= default <= max, a
    maxLimitRequestRatio of at least 1 and at most max/min, and default equal to defaultRequest
    for a resource that may not be overcommitted (GPUs, other extended resources, hugepages)."""
    field = "namespace_policies_limitrange"
    for low, high in _LIMIT_ORDER:
        for key in sorted(set(limits.get(low) or {}) & set(limits.get(high) or {})):
            small, large = limits[low][key], limits[high][key]
            require(o.parse_quantity(small) <= o.parse_quantity(large), "%s.%s.%s" % (field, low, key),
                    "%s is larger than %s.%s (%s)" % (small, high, key, large),
                    "Keep min <= defaultRequest <= default <= max for each resource")
    for key, ratio in sorted((limits.get("maxLimitRequestRatio") or {}).items()):
        where = "%s.maxLimitRequestRatio.%s" % (field, key)
        require(o.parse_quantity(ratio) >= 1, where, "%s is less than 1" % ratio,
                "Give a ratio of limit to request of 1 or more")
        low, high = (limits.get("min") or {}).get(key), (limits.get("max") or {}).get(key)
        if low is not None and high is not None and o.parse_quantity(low) > 0:
            most = o.parse_quantity(high) / o.parse_quantity(low)
            require(o.parse_quantity(ratio) <= most, where, "%s is larger than max/min (%s/%s)" % (ratio, high, low),
                    "Give a ratio no larger than max.%s divided by min.%s" % (key, key))
    for key in sorted(set(limits.get("default") or {}) & set(limits.get("defaultRequest") or {})):
        if not _overcommit_allowed(key):
            value, request = limits["default"][key], limits["defaultRequest"][key]
            require(o.parse_quantity(value) == o.parse_quantity(request), "%s.defaultRequest.%s" % (field, key),
                    "%s differs from default.%s (%s), and %s may not be overcommitted" % (request, key, value, key),
                    "Give %s the same default and defaultRequest, or only one of them" % key)


def selector(value):
    """A label selector as {key: value}; 'k=v,k2=v2' strings are accepted too. Checked with the
    API server's rules for label keys and values."""
    return label_selector(value, "namespace_policies_selector")


def tolerations(value, field):
    require(isinstance(value, list), field, "must be a list of tolerations", "Give [{key, operator, value, effect}]")
    for index, item in enumerate(value):
        where = "%s[%d]" % (field, index)
        require(isinstance(item, dict), where, "must be a mapping", "Give {key, operator, value, effect}")
        require(set(item) <= {"key", "operator", "value", "effect", "tolerationSeconds"}, where,
                "has unknown fields %s" % sorted(set(item) - {"key", "operator", "value", "effect", "tolerationSeconds"}),
                "Use key, operator, value, effect, tolerationSeconds")
        require(item.get("operator", "Equal") in ("Equal", "Exists"), where + ".operator",
                "%r is not Equal or Exists" % item.get("operator"), "Use Equal or Exists")
        require(item.get("effect", "") in ("", "NoSchedule", "PreferNoSchedule", "NoExecute"), where + ".effect",
                "%r is not a taint effect" % item.get("effect"), "Use NoSchedule, PreferNoSchedule or NoExecute")
    return value


def _json(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def is_profile_namespace(namespace, settings):
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    return all(labels.get(k) == v for k, v in selector(settings["namespace_policies_selector"]).items())


def _shared_namespace(name, annotations, labels=None):
    meta = {"name": name, "annotations": dict(annotations, **{o.OWNERSHIP: o.SHARED})}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def role_arn(namespace, settings):
    meta = namespace.get("metadata") or {}
    name = meta["name"]
    roles = settings["namespace_policies_data_lake_roles"] or {}
    if roles.get(name):
        return roles[name]
    template = settings["namespace_policies_data_lake_role_template"]
    if not template:
        return None
    owner = (meta.get("annotations") or {}).get("owner", "")
    values = {"namespace": name, "owner": re.sub(r"[^A-Za-z0-9+=,.@_-]+", "-", owner)}
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)


def _namespace_objects(namespace, settings, serviceaccounts=None):
    name = namespace["metadata"]["name"]
    objs = []
    annotations, labels = {}, {}
    if settings["namespace_policies_tolerations_mode"] == "annotation":
        annotations[DEFAULT_TOLERATIONS] = _json(settings["namespace_policies_gpu_tolerations"])
    if settings["namespace_policies_mesh_mode"] == "mesh":
        joined = mesh.membership(name, settings.mesh)
        labels.update(joined["labels"])
        annotations.update(joined["annotations"])
        objs += joined["objects"]
    if settings["namespace_policies_pod_security"] != "none" and not _pod_security_set_by_others(namespace, settings):
        labels.update(pod_security.labels(settings["namespace_policies_pod_security"]))
    if annotations or labels:
        objs.insert(0, _shared_namespace(name, annotations, labels))
    if settings["namespace_policies_mesh_mode"] == "member":
        objs.append({"apiVersion": "maistra.io/v1", "kind": "ServiceMeshMember",
                     "metadata": {"name": "default", "namespace": name},
                     "spec": {"controlPlaneRef": {"name": settings["namespace_policies_mesh_name"],
                                                  "namespace": settings["namespace_policies_mesh_namespace"]}}})
    limits = settings["namespace_policies_limitrange"]
    if limits:
        objs.append({"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": LIMITRANGE, "namespace": name},
                     "spec": {"limits": [dict(copy.deepcopy(limits), type="Container")]}})
    if settings["namespace_policies_scc"]:
        grants = [{"namespace": name, "serviceaccount": sa, "scc": settings["namespace_policies_scc"],
                   "reason": "profile service account runs as a non-root user of its choice"}
                  for sa in settings["namespace_policies_scc_serviceaccounts"]]
        objs += scc.rolebindings(grants, allowed=None, field="namespace_policies_scc_serviceaccounts")
    if settings["namespace_policies_serverless"]:
        objs.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                     "metadata": {"name": NETWORKPOLICY, "namespace": name},
                     "spec": {"podSelector": {}, "policyTypes": ["Ingress"],
                              "ingress": [{"from": [{"namespaceSelector": {
                                  "matchLabels": {KNATIVE_SYSTEM_LABEL: "true"}}}]}]}})
        principals = list(settings["namespace_policies_serverless_principals"])
        for workload in settings["namespace_policies_serverless_workloads"]:
            objs.append({"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
                         "metadata": {"name": "kfocp-knative-" + workload["name"], "namespace": name},
                         "spec": {"action": "ALLOW", "selector": {"matchLabels": dict(workload["match_labels"])},
                                  "rules": [{"from": [{"source": {"principals": principals}}]}]}})
    if settings["namespace_policies_data_lake"]:
        account = settings["namespace_policies_data_lake_serviceaccount"]
        arn = role_arn(namespace, settings)
        if arn and (serviceaccounts is None or (name, account) in serviceaccounts):
            objs.append({"apiVersion": "v1", "kind": "ServiceAccount",
                         "metadata": {"name": account, "namespace": name,
                                      "annotations": {settings["namespace_policies_data_lake_annotation"]: arn,
                                                      o.OWNERSHIP: o.SHARED}}})
    return objs


def _pod_security_set_by_others(namespace, settings):
    """The Pod Security labels of the namespace that another field manager set to another value than
    this role's: [(label, value, manager)]. The role then leaves all of them as they are (so does
    OpenShift's label synchronizer with labels others set), rather than fail on the conflict: the
    profile controller writes the labels of its namespace-labels file when it creates a namespace,
    and an administrator may have chosen a level for one namespace."""
    level = settings["namespace_policies_pod_security"]
    if level == "none":
        return []
    meta = namespace.get("metadata") or {}
    live = meta.get("labels") or {}
    owners = {}
    for entry in meta.get("managedFields") or []:
        manager = str(entry.get("manager") or "")
        for label in o.entry_labels(entry):
            owners.setdefault(label, []).append(manager)
    found = []
    for label, value in sorted(pod_security.labels(level).items()):
        others = [m for m in owners.get(label, []) if not m.startswith(o.MANAGER)]
        if label in live and live[label] != value and others:
            found.append((label, live[label], others[0]))
    return found


def pod_security_left_alone(namespaces, settings):
    """For the report: each profile namespace whose Pod Security labels the role leaves as they are,
    with the labels another manager set ("<namespace>: <label>=<value> (set by <manager>), ...")."""
    cfg = Settings(settings).check()
    out = []
    for namespace in sorted(namespaces or [], key=lambda n: n["metadata"]["name"]):
        if not (_live(namespace) and is_profile_namespace(namespace, cfg)):
            continue
        found = _pod_security_set_by_others(namespace, cfg)
        if found:
            out.append("%s: %s" % (namespace["metadata"]["name"], ", ".join(
                "%s=%s (set by %s)" % item for item in found)))
    return out


def objects_for_namespace(namespace, settings):
    """The complete policy objects of ONE profile namespace (a live Namespace object)."""
    return _namespace_objects(namespace, Settings(settings).check())


def whitelist_exclusions(settings):
    """The namespaces no whitelist goes to: the configured ones, the GPU operator's, and the mesh's
    CNI namespace (Service Mesh 3), whose istio-cni-node DaemonSet must run on every node: Sail's
    cni chart has it tolerate every NoSchedule and NoExecute taint, which no whitelist of keys
    admits, so the PodTolerationRestriction admission plugin would refuse its pods."""
    patterns = list(settings["namespace_policies_whitelist_exclude"])
    if settings["namespace_policies_gpu_operator_namespace"]:
        patterns.append(settings["namespace_policies_gpu_operator_namespace"])
    mesh_settings = settings.mesh or {}  # Settings.check() normalised them in mesh mode
    if mesh_settings.get("flavour") == "ossm3":
        patterns.append(mesh_settings["ossm3"]["cni_namespace"])
    return patterns


def excluded(name, settings):
    if not any(fnmatch.fnmatchcase(name, pattern) for pattern in settings["namespace_policies_whitelist_namespaces"]):
        return True
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in whitelist_exclusions(settings))


def _made_by_kfocp(namespace):
    """A namespace kfocp created (a platform namespace) already carries kfocp's own applied
    configuration, under the same field manager: a second, shared configuration would replace it.
    Such namespaces get no whitelist patch."""
    labels = (namespace.get("metadata") or {}).get("labels") or {}
    return labels.get(o.MANAGED_BY) == o.MANAGER


def _live(namespace):
    return (namespace.get("status") or {}).get("phase") != "Terminating"


def _gatekeeper(settings):
    sel = selector(settings["namespace_policies_selector"])
    kinds = [{"apiGroups": [""], "kinds": ["Namespace"]}]
    objs = [{"apiVersion": "mutations.gatekeeper.sh/v1", "kind": "AssignMetadata",
             "metadata": {"name": "kfocp-profile-gpu-tolerations"},
             "spec": {"match": {"scope": "Cluster", "kinds": kinds, "labelSelector": {"matchLabels": dict(sel)}},
                      "location": 'metadata.annotations."%s"' % DEFAULT_TOLERATIONS,
                      "parameters": {"assign": {"value": _json(settings["namespace_policies_gpu_tolerations"])}}}}]
    if settings["namespace_policies_whitelist_others"]:
        exclude = sorted(set(whitelist_exclusions(settings)))
        objs.append({"apiVersion": "mutations.gatekeeper.sh/v1", "kind": "AssignMetadata",
                     "metadata": {"name": "kfocp-gpu-tolerations-whitelist"},
                     "spec": {"match": {"scope": "Cluster", "kinds": kinds, "excludedNamespaces": exclude,
                                        "labelSelector": {"matchExpressions": [
                                            {"key": k, "operator": "NotIn", "values": [v]} for k, v in sorted(sel.items())]}},
                              "location": 'metadata.annotations."%s"' % WHITELIST,
                              "parameters": {"assign": {"value": _json(settings["namespace_policies_others_whitelist"])}}}})
    return objs


def _whitelist(namespace, cfg):
    if cfg["namespace_policies_tolerations_mode"] != "annotation" or not cfg["namespace_policies_whitelist_others"]:
        return []
    name = namespace["metadata"]["name"]
    if not _live(namespace) or is_profile_namespace(namespace, cfg) or excluded(name, cfg) or _made_by_kfocp(namespace):
        return []
    return [_shared_namespace(name, {WHITELIST: _json(cfg["namespace_policies_others_whitelist"])})]


def whitelist_for_namespace(namespace, settings):
    """The tolerations whitelist patch of ONE namespace that is no profile namespace (a live
    Namespace object): [] when it gets none (excluded, kfocp's own, or the mode has none), or
    when it already carries the whitelist."""
    cfg = Settings(settings).check()
    objs = _whitelist(namespace, cfg)
    current = ((namespace.get("metadata") or {}).get("annotations") or {}).get(WHITELIST)
    if objs and current == objs[0]["metadata"]["annotations"][WHITELIST]:
        return []
    return objs


def objects(namespaces, settings, all_namespaces=None, serviceaccounts=None, memberroll=None):
    """The role's whole desired state.

    namespaces: live Namespaces; those matching the selector are the profile namespaces (others
    in it are ignored). all_namespaces: every live Namespace, for the whitelist of the others
    (None: no whitelist patches). serviceaccounts: live ServiceAccounts, or None; when given, the
    data lake annotation goes only to accounts that exist (the profile controller creates them
    just after the namespace). memberroll: the live ServiceMeshMemberRoll, for the memberroll mode.
    """
    cfg = Settings(settings).check()
    profiles = sorted((n for n in namespaces or () if _live(n) and is_profile_namespace(n, cfg)),
                      key=lambda n: n["metadata"]["name"])
    accounts = None if serviceaccounts is None else set(
        (s["metadata"].get("namespace"), s["metadata"]["name"]) for s in serviceaccounts)
    objs = []
    for namespace in profiles:
        objs += _namespace_objects(namespace, cfg, accounts)
    mode = cfg["namespace_policies_tolerations_mode"]
    if mode == "gatekeeper":
        objs += _gatekeeper(cfg)
    elif all_namespaces is not None:
        for namespace in sorted(all_namespaces, key=lambda n: n["metadata"]["name"]):
            objs += _whitelist(namespace, cfg)
    if cfg["namespace_policies_mesh_mode"] == "memberroll":
        objs.append(memberroll_object(memberroll, [n["metadata"]["name"] for n in profiles], cfg))
    return objs


def memberroll_object(live, members, settings):
    """The mesh owner's ServiceMeshMemberRoll with the profile namespaces added to its members.

    The members list is one atomic field, so the desired list is the live one, less the members
    kfocp added before (kept in an annotation) that are no longer profile namespaces, plus the
    current ones: the members the mesh owner listed are kept as they are. It is the one object
    applied with force (kfocp.io/force): the list is one value, which the mesh owner wrote first;
    giving it back (uninstall, prune) removes only kfocp's members (kfocp.io/added-items)."""
    namespace = settings["namespace_policies_mesh_namespace"]
    require(live is not None, "namespace_policies_mesh_mode",
            "is memberroll but there is no ServiceMeshMemberRoll default in %s" % namespace,
            "Create the member roll with the mesh, or use mesh_mode member")
    meta = live.get("metadata") or {}
    before = set(x for x in ((meta.get("annotations") or {}).get(MEMBERS_ANNOTATION) or "").split(",") if x)
    ours = sorted(set(members))
    current = [m for m in ((live.get("spec") or {}).get("members")) or [] if m not in before or m in ours]
    wanted = current + [m for m in ours if m not in current]
    return {"apiVersion": "maistra.io/v1", "kind": "ServiceMeshMemberRoll",
            "metadata": {"name": "default", "namespace": namespace,
                         "annotations": {o.OWNERSHIP: o.SHARED, o.FORCE: "true", MEMBERS_ANNOTATION: ",".join(ours),
                                         o.ADDED: json.dumps({"spec.members": ours}, separators=(",", ":"))}},
            "spec": {"members": wanted}}
