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
supplementalGroups (MustRunAs within the namespace's range, RunAsAny), seccomp profiles (the
fields and the seccomp annotations, which SCC admission still reads), and sysctls.
runAsGroup is read too, but no SCC has a strategy for it, so it never decides.

`least_privileged()` walks ORDER, OpenShift's own order of restrictiveness, and returns the first
SCC that admits every pod, with the fields that the SCC just before it refused: the fields that
forced the grant. That order is SCC admission's sort by "points" (openshift/apiserver-library-go
pkg/securitycontextconstraints/util/sort/byrestrictions.go, pointValue): privileged containers
weigh most, then host ports, host network, host path volumes, other non-trivial volumes, the
SELinux and runAsUser strategies, and capabilities. So hostnetwork-v2 (host network and ports)
comes after anyuid and hostmount-anyuid. Nothing here does I/O.
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
        "supplementalGroups": "RunAsAny", "seccompProfiles": ["runtime/default"],
        "allowedUnsafeSysctls": None},
    "hostnetwork-v2": {
        "allowPrivilegedContainer": False, "allowPrivilegeEscalation": False, "allowedCapabilities": ["NET_BIND_SERVICE"],
        "allowHostNetwork": True, "allowHostPID": False, "allowHostIPC": False, "allowHostPorts": True,
        "allowHostDirVolumePlugin": False, "volumes": list(_RESTRICTED_VOLUMES),
        "runAsUser": "MustRunAsRange", "seLinuxContext": "MustRunAs", "fsGroup": "MustRunAs",
        "supplementalGroups": "MustRunAs", "seccompProfiles": ["runtime/default"],
        "allowedUnsafeSysctls": None},
    "nonroot-v2": {
        "allowPrivilegedContainer": False, "allowPrivilegeEscalation": False, "allowedCapabilities": ["NET_BIND_SERVICE"],
        "allowHostNetwork": False, "allowHostPID": False, "allowHostIPC": False, "allowHostPorts": False,
        "allowHostDirVolumePlugin": False, "volumes": list(_RESTRICTED_VOLUMES),
        "runAsUser": "MustRunAsNonRoot", "seLinuxContext": "MustRunAs", "fsGroup": "RunAsAny",
        "supplementalGroups": "RunAsAny", "seccompProfiles": ["runtime/default"],
        "allowedUnsafeSysctls": None},
    "anyuid": {
        "allowPrivilegedContainer": False, "allowPrivilegeEscalation": True, "allowedCapabilities": None,
        "allowHostNetwork": False, "allowHostPID": False, "allowHostIPC": False, "allowHostPorts": False,
        "allowHostDirVolumePlugin": False, "volumes": list(_RESTRICTED_VOLUMES),
        "runAsUser": "RunAsAny", "seLinuxContext": "MustRunAs", "fsGroup": "RunAsAny",
        "supplementalGroups": "RunAsAny", "seccompProfiles": None,
        "allowedUnsafeSysctls": None},
    "hostmount-anyuid": {
        "allowPrivilegedContainer": False, "allowPrivilegeEscalation": True, "allowedCapabilities": None,
        "allowHostNetwork": False, "allowHostPID": False, "allowHostIPC": False, "allowHostPorts": False,
        "allowHostDirVolumePlugin": True, "volumes": sorted(_RESTRICTED_VOLUMES + ("hostPath", "nfs")),
        "runAsUser": "RunAsAny", "seLinuxContext": "MustRunAs", "fsGroup": "RunAsAny",
        "supplementalGroups": "RunAsAny", "seccompProfiles": None,
        "allowedUnsafeSysctls": None},
    "privileged": {
        "allowPrivilegedContainer": True, "allowPrivilegeEscalation": True, "allowedCapabilities": ["*"],
        "allowHostNetwork": True, "allowHostPID": True, "allowHostIPC": True, "allowHostPorts": True,
        "allowHostDirVolumePlugin": True, "volumes": ["*"],
        "runAsUser": "RunAsAny", "seLinuxContext": "RunAsAny", "fsGroup": "RunAsAny",
        "supplementalGroups": "RunAsAny", "seccompProfiles": ["*"], "allowedUnsafeSysctls": ["*"]},
}
# Least privileged first, by SCC admission's points (restricted-v2 132010, nonroot-v2 142010,
# anyuid 154950, hostmount-anyuid 254950, hostnetwork-v2 1332010, privileged 3089000; admission
# sorts by priority before points, but a grant only decides which SCCs may be used).
# restricted-v2 is every authenticated user's already: it needs no grant.
ORDER = ("restricted-v2", "nonroot-v2", "anyuid", "hostmount-anyuid", "hostnetwork-v2", "privileged")
DEFAULT = "restricted-v2"

# The sysctls every SCC allows (apiserver-library-go sysctl/mustmatchpatterns.go: the legacy safe
# list and the three a kernel of 4.15 or later namespaces); others only where allowedUnsafeSysctls
# lists them.
SAFE_SYSCTLS = frozenset((
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes", "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"))
_SECCOMP = {"RuntimeDefault": "runtime/default", "Unconfined": "unconfined"}
# The seccomp annotations SCC admission still reads (apiserver-library-go seccomp/strategy.go): the
# pod's wins over its field, a container's field over the container's annotation.
SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER_ANNOTATION = "container.seccomp.security.alpha.kubernetes.io/"


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


def _seccomp_refusals(scc, spec, pod, annotations):
    """The seccomp profiles of the pod and of each container, as the SCC seccomp strategy reads
    them (pod: its annotation, else its field; a container: its field, else its annotation, else
    the pod's), checked against the SCC: [(field path, why)]."""
    found = []
    pod_key = "metadata.annotations[%s]" % SECCOMP_POD_ANNOTATION
    if annotations.get(SECCOMP_POD_ANNOTATION):
        where, profile = pod_key, annotations[SECCOMP_POD_ANNOTATION]
    else:
        where, profile = "spec.securityContext.seccompProfile", _seccomp(pod.get("seccompProfile"))
    why = _seccomp_refusal(scc, profile)
    if why:
        found.append((where, why))
    for path, container in _containers(spec):
        ctx = container.get("securityContext") or {}
        key = SECCOMP_CONTAINER_ANNOTATION + str(container.get("name", ""))
        if "seccompProfile" in ctx:
            where, profile = "spec.%s.securityContext.seccompProfile" % path, _seccomp(ctx.get("seccompProfile"))
        elif key in annotations:
            where, profile = "metadata.annotations[%s]" % key, annotations[key]
        else:
            continue  # the pod's profile, checked above
        why = _seccomp_refusal(scc, profile)
        if why:
            found.append((where, why))
    return found


def _unsafe_sysctl_allowed(scc, name):
    return any(name.startswith(p[:-1]) if p.endswith("*") else name == p for p in scc["allowedUnsafeSysctls"] or [])


def refusals(name, spec, uid_range=None, group_range=None, annotations=None):
    """Why SCC `name` would not admit a pod with this spec: [(field path, why)]; [] admits it.

    `uid_range` and `group_range` ({start, size}) are the namespace's UID and supplemental group
    ranges (OpenShift annotates each namespace with them; the group range is the UID range unless
    set otherwise). Unknown (None or {}): a fixed value is taken to be outside. `annotations` are
    the pod's, for the seccomp annotations SCC admission reads."""
    scc = SCCS[name]
    group_range = group_range if group_range is not None else uid_range
    found = []
    spec = spec or {}
    pod = spec.get("securityContext") or {}
    for field, allow in (("hostNetwork", "allowHostNetwork"), ("hostPID", "allowHostPID"),
                         ("hostIPC", "allowHostIPC")):
        if spec.get(field) and not scc[allow]:
            found.append(("spec.%s" % field, "host namespace not allowed"))
    for index, volume in enumerate(spec.get("volumes") or []):
        kind = _volume_type(volume or {})
        if kind == "hostPath" and not scc["allowHostDirVolumePlugin"]:
            found.append(("spec.volumes[%d].hostPath" % index, "host path volumes are not allowed"))
        elif "*" not in scc["volumes"] and kind not in scc["volumes"]:
            found.append(("spec.volumes[%d].%s" % (index, kind), "%s volumes are not allowed" % kind))
    if isinstance(pod.get("fsGroup"), int) and scc["fsGroup"] == "MustRunAs" and \
            not _in_range(pod["fsGroup"], group_range):
        found.append(("spec.securityContext.fsGroup", "%d is %s" % (pod["fsGroup"], _range_text(group_range))))
    if scc["supplementalGroups"] == "MustRunAs":
        for group in pod.get("supplementalGroups") or []:
            if not _in_range(group, group_range):
                found.append(("spec.securityContext.supplementalGroups",
                              "%d is %s" % (group, _range_text(group_range))))
    if scc["seLinuxContext"] == "MustRunAs" and pod.get("seLinuxOptions"):
        found.append(("spec.securityContext.seLinuxOptions", "only the namespace's SELinux context is allowed"))
    found += _seccomp_refusals(scc, spec, pod, annotations or {})
    for index, sysctl in enumerate(pod.get("sysctls") or []):
        sysctl_name = str((sysctl or {}).get("name", ""))
        if sysctl_name not in SAFE_SYSCTLS and not _unsafe_sysctl_allowed(scc, sysctl_name):
            found.append(("spec.securityContext.sysctls[%d]" % index, "unsafe sysctl %s is not allowed" % sysctl_name))
    for where, container in _containers(spec):
        ctx = container.get("securityContext") or {}
        path = "spec.%s.securityContext" % where
        if ctx.get("privileged") and not scc["allowPrivilegedContainer"]:
            found.append((path + ".privileged", "privileged containers are not allowed"))
        if ctx.get("allowPrivilegeEscalation") and not scc["allowPrivilegeEscalation"]:
            found.append((path + ".allowPrivilegeEscalation", "privilege escalation is not allowed"))
        allowed = scc["allowedCapabilities"] or []
        for cap in (ctx.get("capabilities") or {}).get("add") or []:
            if "*" not in allowed and cap not in allowed and "CAP_" + cap not in allowed:
                found.append((path + ".capabilities.add", "capability %s may not be added" % cap))
        for port in container.get("ports") or []:
            if port.get("hostPort") and not scc["allowHostPorts"]:
                found.append(("spec.%s.ports" % where, "host port %s is not allowed" % port["hostPort"]))
        uid = ctx.get("runAsUser", pod.get("runAsUser"))
        uid_path = path + ".runAsUser" if "runAsUser" in ctx else "spec.securityContext.runAsUser"
        has_uid = isinstance(uid, int) and not isinstance(uid, bool)
        if scc["runAsUser"] == "MustRunAsRange" and has_uid and not _in_range(uid, uid_range):
            found.append((uid_path, "%d is %s" % (uid, _range_text(uid_range))))
        elif scc["runAsUser"] == "MustRunAsNonRoot":
            if has_uid and uid == 0:
                found.append((uid_path, "0 (root) is not allowed"))
            elif ctx.get("runAsNonRoot", pod.get("runAsNonRoot")) is False and not has_uid:
                found.append((path + ".runAsNonRoot", "false without a non-root runAsUser is not allowed"))
        if scc["seLinuxContext"] == "MustRunAs" and ctx.get("seLinuxOptions"):
            found.append((path + ".seLinuxOptions", "only the namespace's SELinux context is allowed"))
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
    before it: (scc, [(pod label, field path, why)]). `pods` is [(label, pod spec)] or
    [(label, pod spec, pod annotations)]."""
    previous = []
    for name in ORDER:
        refused = [(pod[0], field, why) for pod in pods
                   for field, why in refusals(name, pod[1], uid_range, group_range, pod[2] if len(pod) > 2 else None)]
        if not refused:
            return name, previous
        previous = refused
    return ORDER[-1], previous
