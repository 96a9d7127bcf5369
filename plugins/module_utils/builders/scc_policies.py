# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which SCC OpenShift would admit a pod under: the SCC strategies themselves, as data.

SCCS holds the strategy fields of the six SCCs OpenShift ships that a workload may be granted,
copied from their definitions (hack/seed/sccs.yaml, from openshift/cluster-kube-apiserver-operator;
tests/unit/test_scc_policies.py checks that they agree). `admits()` evaluates one SCC's
strategies against a pod spec the way OpenShift's SCC admission validates it
(openshift/apiserver-library-go pkg/securitycontextconstraints): privileged containers,
privilege escalation, added capabilities, host network/PID/IPC and host ports, volume types and
hostPath, runAsUser (MustRunAsRange, MustRunAsNonRoot, RunAsAny), SELinux, fsGroup and
supplementalGroups (MustRunAs within the namespace's range, RunAsAny), and seccomp profiles: one
check per field, pod fields first, then each container's (_POD_CHECKS, _CONTAINER_CHECKS).
runAsGroup is not read: none of these six SCCs sets a runAsGroup strategy, and the admission
checks runAsGroup only under one (newer releases' sccmatching/provider.go, where an SCC without
one is RunAsAny), so it never decides.

`least_privileged()` walks ORDER, OpenShift's own order of restrictiveness (its SCC sort by
"points": the UID strategy, then host volumes, then privileged containers), and returns the first
SCC that admits every pod, with the fields that the SCC just before it refused: the fields that
forced the grant. Nothing here does I/O.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

_RESTRICTED_VOLUMES = ("configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "persistentVolumeClaim",
                       "projected", "secret")

# The fields of each SCC that decide admission, as upstream defines them (hack/seed/sccs.yaml).
SCCS = {
    "restricted-v2": {
        "allowPrivilegedContainer": False, "allowPrivilegeEscalation": False, "allowedCapabilities": ["NET_BIND_SERVICE"],
        "allowHostNetwork": False, "allowHostPID": False, "allowHostIPC": False, "allowHostPorts": False,
        "allowHostDirVolumePlugin": False, "volumes": list(_RESTRICTED_VOLUMES),
        "runAsUser": "MustRunAsRange", "seLinuxContext": "MustRunAs", "fsGroup": "MustRunAs",
        "supplementalGroups": "RunAsAny", "seccompProfiles": ["runtime/default"]},
    "hostnetwork-v2": {
        "allowPrivilegedContainer": False, "allowPrivilegeEscalation": False, "allowedCapabilities": ["NET_BIND_SERVICE"],
        "allowHostNetwork": True, "allowHostPID": False, "allowHostIPC": False, "allowHostPorts": True,
        "allowHostDirVolumePlugin": False, "volumes": list(_RESTRICTED_VOLUMES),
        "runAsUser": "MustRunAsRange", "seLinuxContext": "MustRunAs", "fsGroup": "MustRunAs",
        "supplementalGroups": "MustRunAs", "seccompProfiles": ["runtime/default"]},
    "nonroot-v2": {
        "allowPrivilegedContainer": False, "allowPrivilegeEscalation": False, "allowedCapabilities": ["NET_BIND_SERVICE"],
        "allowHostNetwork": False, "allowHostPID": False, "allowHostIPC": False, "allowHostPorts": False,
        "allowHostDirVolumePlugin": False, "volumes": list(_RESTRICTED_VOLUMES),
        "runAsUser": "MustRunAsNonRoot", "seLinuxContext": "MustRunAs", "fsGroup": "RunAsAny",
        "supplementalGroups": "RunAsAny", "seccompProfiles": ["runtime/default"]},
    "anyuid": {
        "allowPrivilegedContainer": False, "allowPrivilegeEscalation": True, "allowedCapabilities": None,
        "allowHostNetwork": False, "allowHostPID": False, "allowHostIPC": False, "allowHostPorts": False,
        "allowHostDirVolumePlugin": False, "volumes": list(_RESTRICTED_VOLUMES),
        "runAsUser": "RunAsAny", "seLinuxContext": "MustRunAs", "fsGroup": "RunAsAny",
        "supplementalGroups": "RunAsAny", "seccompProfiles": None},
    "hostmount-anyuid": {
        "allowPrivilegedContainer": False, "allowPrivilegeEscalation": True, "allowedCapabilities": None,
        "allowHostNetwork": False, "allowHostPID": False, "allowHostIPC": False, "allowHostPorts": False,
        "allowHostDirVolumePlugin": True, "volumes": sorted(_RESTRICTED_VOLUMES + ("hostPath", "nfs")),
        "runAsUser": "RunAsAny", "seLinuxContext": "MustRunAs", "fsGroup": "RunAsAny",
        "supplementalGroups": "RunAsAny", "seccompProfiles": None},
    "privileged": {
        "allowPrivilegedContainer": True, "allowPrivilegeEscalation": True, "allowedCapabilities": ["*"],
        "allowHostNetwork": True, "allowHostPID": True, "allowHostIPC": True, "allowHostPorts": True,
        "allowHostDirVolumePlugin": True, "volumes": ["*"],
        "runAsUser": "RunAsAny", "seLinuxContext": "RunAsAny", "fsGroup": "RunAsAny",
        "supplementalGroups": "RunAsAny", "seccompProfiles": ["*"]},
}
# Least privileged first. restricted-v2 is every authenticated user's already: it needs no grant.
ORDER = ("restricted-v2", "hostnetwork-v2", "nonroot-v2", "anyuid", "hostmount-anyuid", "privileged")
DEFAULT = "restricted-v2"

_SECCOMP = {"RuntimeDefault": "runtime/default", "Unconfined": "unconfined"}


def _containers(spec):
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for index, container in enumerate(spec.get(field) or []):
            yield "%s[%d]" % (field, index), container or {}


def _in_range(value, value_range):
    if not value_range:
        return False
    start, size = int(value_range.get("start", 0)), int(value_range.get("size", 0))
    return start <= value < start + size


def _range_text(value_range):
    if not value_range:
        return "not known to be in the namespace's range (components_scc_uid_range is not set)"
    start = int(value_range["start"])
    return "outside the namespace's range %d-%d" % (start, start + int(value_range["size"]) - 1)


def _seccomp(profile):
    """The annotation form of a seccompProfile field, as the SCC seccomp strategy compares it."""
    if not profile:
        return ""
    kind = profile.get("type")
    if kind == "Localhost":
        return "localhost/%s" % profile.get("localhostProfile", "") if profile.get("localhostProfile") else ""
    return _SECCOMP.get(kind, "")


def _seccomp_refusal(scc, profile):
    allowed = scc["seccompProfiles"] or []
    if "*" in allowed or not profile and not allowed:
        return None
    if not allowed:
        return "seccomp may not be set"
    if not profile or profile in allowed or profile == "docker/default" and "runtime/default" in allowed:
        return None  # unset: the SCC sets its first profile
    return "%s is not an allowed seccomp profile (%s)" % (profile, ", ".join(allowed))


def _volume_type(volume):
    return next((key for key in sorted(volume) if key != "name"), "")


class _Pod:
    """A pod spec under check, with the namespace's ranges its fixed IDs must fall in."""

    __slots__ = ("spec", "context", "uid_range", "group_range")

    def __init__(self, spec, uid_range, group_range):
        self.spec = spec or {}
        self.context = self.spec.get("securityContext") or {}
        self.uid_range = uid_range
        self.group_range = group_range if group_range is not None else uid_range


class _Container:
    """One container of the pod under check: its fields, its securityContext and that one's path."""

    __slots__ = ("where", "fields", "context", "path")

    def __init__(self, where, fields):
        self.where = where
        self.fields = fields
        self.context = fields.get("securityContext") or {}
        self.path = "spec.%s.securityContext" % where


# -- the pod's fields (OpenShift's pod validators)

def _host_namespaces(scc, pod):
    return [("spec.%s" % field, "host namespace not allowed")
            for field, allow in (("hostNetwork", "allowHostNetwork"), ("hostPID", "allowHostPID"),
                                 ("hostIPC", "allowHostIPC"))
            if pod.spec.get(field) and not scc[allow]]


def _volumes(scc, pod):
    found = []
    for index, volume in enumerate(pod.spec.get("volumes") or []):
        kind = _volume_type(volume or {})
        if kind == "hostPath" and not scc["allowHostDirVolumePlugin"]:
            found.append(("spec.volumes[%d].hostPath" % index, "host path volumes are not allowed"))
        elif "*" not in scc["volumes"] and kind not in scc["volumes"]:
            found.append(("spec.volumes[%d].%s" % (index, kind), "%s volumes are not allowed" % kind))
    return found


def _fs_group(scc, pod):
    group = pod.context.get("fsGroup")
    if scc["fsGroup"] != "MustRunAs" or not isinstance(group, int) or _in_range(group, pod.group_range):
        return []
    return [("spec.securityContext.fsGroup", "%d is %s" % (group, _range_text(pod.group_range)))]


def _supplemental_groups(scc, pod):
    if scc["supplementalGroups"] != "MustRunAs":
        return []
    return [("spec.securityContext.supplementalGroups", "%d is %s" % (group, _range_text(pod.group_range)))
            for group in pod.context.get("supplementalGroups") or [] if not _in_range(group, pod.group_range)]


def _pod_selinux(scc, pod):
    return _selinux(scc, pod.context, "spec.securityContext")


def _pod_seccomp(scc, pod):
    why = _seccomp_refusal(scc, _seccomp(pod.context.get("seccompProfile")))
    return [("spec.securityContext.seccompProfile", why)] if why else []


# -- each container's fields (OpenShift's container validators)

def _privileged(scc, _pod, box):
    if box.context.get("privileged") and not scc["allowPrivilegedContainer"]:
        return [(box.path + ".privileged", "privileged containers are not allowed")]
    return []


def _privilege_escalation(scc, _pod, box):
    if box.context.get("allowPrivilegeEscalation") and not scc["allowPrivilegeEscalation"]:
        return [(box.path + ".allowPrivilegeEscalation", "privilege escalation is not allowed")]
    return []


def _capabilities(scc, _pod, box):
    allowed = scc["allowedCapabilities"] or []
    if "*" in allowed:
        return []
    return [(box.path + ".capabilities.add", "capability %s may not be added" % cap)
            for cap in (box.context.get("capabilities") or {}).get("add") or []
            if cap not in allowed and "CAP_" + cap not in allowed]


def _host_ports(scc, _pod, box):
    if scc["allowHostPorts"]:
        return []
    return [("spec.%s.ports" % box.where, "host port %s is not allowed" % port["hostPort"])
            for port in box.fields.get("ports") or [] if port.get("hostPort")]


def _user(scc, pod, box):
    """runAsUser, the container's or else the pod's, under the SCC's strategy (RunAsAny: any)."""
    check = _USER_STRATEGIES.get(scc["runAsUser"])
    if check is None:
        return []
    uid = box.context.get("runAsUser", pod.context.get("runAsUser"))
    has_uid = isinstance(uid, int) and not isinstance(uid, bool)
    where = box.path + ".runAsUser" if "runAsUser" in box.context else "spec.securityContext.runAsUser"
    return check(pod, box, uid if has_uid else None, where)


def _user_in_range(pod, _box, uid, where):
    if uid is None or _in_range(uid, pod.uid_range):
        return []
    return [(where, "%d is %s" % (uid, _range_text(pod.uid_range)))]


def _user_not_root(pod, box, uid, where):
    if uid == 0:
        return [(where, "0 (root) is not allowed")]
    if uid is None and box.context.get("runAsNonRoot", pod.context.get("runAsNonRoot")) is False:
        return [(box.path + ".runAsNonRoot", "false without a non-root runAsUser is not allowed")]
    return []


_USER_STRATEGIES = {"MustRunAsRange": _user_in_range, "MustRunAsNonRoot": _user_not_root}


def _container_selinux(scc, _pod, box):
    return _selinux(scc, box.context, box.path)


def _container_seccomp(scc, _pod, box):
    if "seccompProfile" not in box.context:
        return []  # the pod's profile, checked once for the pod
    why = _seccomp_refusal(scc, _seccomp(box.context.get("seccompProfile")))
    return [(box.path + ".seccompProfile", why)] if why else []


def _selinux(scc, context, path):
    """MustRunAs: only the namespace's context, which admission sets; any other is refused."""
    if scc["seLinuxContext"] == "MustRunAs" and context.get("seLinuxOptions"):
        return [(path + ".seLinuxOptions", "only the namespace's SELinux context is allowed")]
    return []


# The checks in the order their refusals are listed: the first refusal is the field that forced a
# grant (least_privileged).
_POD_CHECKS = (_host_namespaces, _volumes, _fs_group, _supplemental_groups, _pod_selinux, _pod_seccomp)
_CONTAINER_CHECKS = (_privileged, _privilege_escalation, _capabilities, _host_ports, _user, _container_selinux,
                     _container_seccomp)


def refusals(name, spec, uid_range=None, group_range=None):
    """Why SCC `name` would not admit a pod with this spec: [(field path, why)]; [] admits it.

    `uid_range` and `group_range` ({start, size}) are the namespace's UID and supplemental group
    ranges (OpenShift annotates each namespace with them; the group range is the UID range unless
    set otherwise). Unknown (None or {}): a fixed value is taken to be outside."""
    scc = SCCS[name]
    pod = _Pod(spec, uid_range, group_range)
    found = []
    for check in _POD_CHECKS:
        found += check(scc, pod)
    for where, fields in _containers(pod.spec):
        box = _Container(where, fields)
        for check in _CONTAINER_CHECKS:
            found += check(scc, pod, box)
    return _unique(found)


def _unique(items):
    seen, out = set(), []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def least_privileged(pods, uid_range=None, group_range=None):
    """The least privileged SCC (in ORDER) that admits every pod, and the refusals of the SCC just
    before it: (scc, [(pod label, field path, why)]). `pods` is [(label, pod spec)]."""
    previous = []
    for name in ORDER:
        refused = [(label, field, why) for label, spec in pods
                   for field, why in refusals(name, spec, uid_range, group_range)]
        if not refused:
            return name, previous
        previous = refused
    return ORDER[-1], previous
