# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which SCC OpenShift would admit a pod under: the SCC strategies themselves, as data.

SCCS holds the strategy fields of the six SCCs every supported OpenShift version ships that a
workload may be granted, copied from their definitions (hack/seed/sccs.yaml, from
openshift/cluster-kube-apiserver-operator). The default SCCs differ by version, so `model(version)`
gives each supported version's own: 4.17 adds hostmount-anyuid-v2; 4.20 adds restricted-v3 (which,
like restricted-v2, every authenticated user may use) and nested-container, both for pods in a user
namespace only (userNamespaceLevel RequirePodLevel: spec.hostUsers false) with ranges fixed in the
SCC, and lets every SCC mount `image` volumes (hack/seed/sccs-<version>.yaml, each upstream's files
verbatim; tests/unit/test_scc_versions.py checks that the models are those files' strategies). `admits()` evaluates one SCC's
strategies against a pod spec the way OpenShift's SCC admission validates it
(openshift/apiserver-library-go pkg/securitycontextconstraints): privileged containers,
privilege escalation, added capabilities, host network/PID/IPC and host ports, volume types and
hostPath, runAsUser (MustRunAsRange, MustRunAsNonRoot, RunAsAny), SELinux (MustRunAs: options
set must be the SCC's, with the namespace's level, openshift.io/sa.scc.mcs, where the SCC gives
none), fsGroup (MustRunAs: the first value of the namespace's group block only), supplementalGroups (MustRunAs within any of the
namespace's group blocks), RunAsAny, ranges fixed in the SCC in place of the namespace's,
userNamespaceLevel (RequirePodLevel: spec.hostUsers must be false), seccomp profiles (the
fields and the seccomp annotations, which SCC admission still reads) and sysctls: one check per
field, pod fields first, then each container's (_POD_CHECKS, _CONTAINER_CHECKS).
runAsGroup is not read: none of these SCCs sets a runAsGroup strategy, and the admission
checks runAsGroup only under one (newer releases' sccmatching/provider.go, where an SCC without
one is RunAsAny), so it never decides.

`least_privileged()` walks ORDER, OpenShift's own order of restrictiveness, and returns the first
SCC that, with the SCCs every authenticated user may use, admits every pod (admission admits a pod
under any SCC the account may use that admits it, so the grant need only admit the pods the defaults
refuse), with the fields that the SCC just before it refused: the fields that forced the grant.
A pod annotated openshift.io/required-scc (OpenShift 4.14 on) is validated against that SCC
alone (sccadmission/admission.go listSortedSCCs), so an account with such pods needs that SCC and
no other. That order is SCC admission's sort by "points" (openshift/apiserver-library-go
pkg/securitycontextconstraints/util/sort/byrestrictions.go, pointValue): privileged containers
weigh most, then host ports, host network, host path volumes, other non-trivial volumes, the
SELinux and runAsUser strategies, and capabilities. So hostnetwork-v2 (host network and ports)
comes after anyuid and hostmount-anyuid. On 4.20 an account needs no grant when each of its pods is
admitted by restricted-v2 or restricted-v3. Nothing here does I/O.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
from collections import namedtuple

from ansible_collections.kfocp.kubeflow.plugins.module_utils import versions

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
# None of the six requires a user namespace or fixes a range or SELinux options: the namespace's
# ranges and SELinux level apply.
_UNFIXED = {"userNamespaceLevel": "AllowHostLevel", "runAsUserRange": None, "fsGroupRanges": None,
            "supplementalGroupsRanges": None, "seLinuxOptions": None}
for _fields in SCCS.values():
    for _key, _value in _UNFIXED.items():
        _fields.setdefault(_key, _value)
# Least privileged first, by SCC admission's points (restricted-v2 132010, nonroot-v2 142010,
# anyuid 154950, hostmount-anyuid 254950, hostnetwork-v2 1332010, privileged 3089000; admission
# sorts by priority before points, but a grant only decides which SCCs may be used).
# restricted-v2 is every authenticated user's already: it needs no grant.
ORDER = ("restricted-v2", "nonroot-v2", "anyuid", "hostmount-anyuid", "hostnetwork-v2", "privileged")
DEFAULT = "restricted-v2"


def _span(first, last):
    return {"start": first, "size": last - first + 1}


# 4.17 on (release-4.17 84e19b21): hostmount-anyuid-v2 is hostmount-anyuid with any SELinux context.
_SCCS_417 = dict(SCCS, **{"hostmount-anyuid-v2": dict(SCCS["hostmount-anyuid"], seLinuxContext="RunAsAny")})
# 4.20 on (release-4.20 e9accf88): every SCC that lists volumes also lists image; restricted-v3 and
# nested-container admit only pods in a user namespace, with the ranges they fix.
_SCCS_420 = dict((name, dict(fields, volumes=sorted(fields["volumes"] + ["image"]))
                  if "*" not in fields["volumes"] else fields) for name, fields in _SCCS_417.items())
_SCCS_420["restricted-v3"] = dict(
    _SCCS_420["restricted-v2"], userNamespaceLevel="RequirePodLevel", runAsUserRange=_span(1000, 65534),
    fsGroupRanges=[_span(1000, 65534)], supplementalGroups="MustRunAs", supplementalGroupsRanges=[_span(1000, 65534)])
_SCCS_420["nested-container"] = dict(
    _SCCS_420["restricted-v3"], allowPrivilegeEscalation=True, allowedCapabilities=["SETUID", "SETGID"],
    seccompProfiles=["*"], runAsUserRange=_span(0, 65534), fsGroupRanges=[_span(0, 65534)],
    supplementalGroupsRanges=[_span(0, 65534)], seLinuxOptions={"type": "container_engine_t"})

# What one OpenShift version ships: its SCCs (strategies), the order derivation tries them in (SCC
# admission's points, least first: hostmount-anyuid-v2 284950; restricted-v3 132010, after
# restricted-v2 by name; nested-container 135020) and the SCCs every authenticated user may use
# (ClusterRoleBindings system:openshift:scc:<name> to system:authenticated), which need no grant.
Model = namedtuple("Model", "sccs order defaults")
_MODELS = (
    ("4.14", Model(SCCS, ORDER, (DEFAULT,))),
    ("4.17", Model(_SCCS_417, ("restricted-v2", "nonroot-v2", "anyuid", "hostmount-anyuid", "hostmount-anyuid-v2",
                               "hostnetwork-v2", "privileged"), (DEFAULT,))),
    ("4.20", Model(_SCCS_420, ("restricted-v2", "restricted-v3", "nested-container", "nonroot-v2", "anyuid",
                               "hostmount-anyuid", "hostmount-anyuid-v2", "hostnetwork-v2", "privileged"),
                   (DEFAULT, "restricted-v3"))),
)


def model(version=None):
    """The SCCs of OpenShift `version` (a supported minor such as "4.18"; raises naming
    kfocp_openshift_version otherwise). None, the version not known: the six SCCs every supported
    version ships with restricted-v2 the one default, so that a grant works on any of them."""
    if version is None:
        return _MODELS[0][1]
    found = _minor(versions.supported(version))
    return [entry for since, entry in _MODELS if _minor(since) <= found][-1]


def _minor(version):
    return tuple(int(part) for part in version.split("."))


# The pod annotation that pins a pod to one SCC (openshift/api security/v1 RequiredSCCAnnotation): SCC
# admission then lists that SCC alone (sccadmission/admission.go listSortedSCCs, release-4.14 on).
REQUIRED_SCC_ANNOTATION = "openshift.io/required-scc"

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


_BOOLEANS = ("allowPrivilegedContainer", "allowHostNetwork", "allowHostPID", "allowHostIPC", "allowHostPorts",
             "allowHostDirVolumePlugin")
_LISTS = ("allowedCapabilities", "volumes", "seccompProfiles", "allowedUnsafeSysctls")
_STRATEGIES = {"runAsUser": ("MustRunAsRange", "MustRunAsNonRoot", "RunAsAny"), "seLinuxContext": ("MustRunAs", "RunAsAny"),
               "fsGroup": ("MustRunAs", "RunAsAny"), "supplementalGroups": ("MustRunAs", "RunAsAny")}


# The options of a strategy modelled here: runAsUser MustRunAsRange's fixed range, the groups' fixed
# ranges under MustRunAs, and MustRunAs SELinux options (user, role, type, level; a level left out
# is the namespace's, openshift.io/sa.scc.mcs).
_OPTIONS = {("runAsUser", "MustRunAsRange"): ("uidRangeMin", "uidRangeMax"), ("fsGroup", "MustRunAs"): ("ranges",),
            ("supplementalGroups", "MustRunAs"): ("ranges",), ("seLinuxContext", "MustRunAs"): ("seLinuxOptions",)}
_USER_NAMESPACE_LEVELS = ("AllowHostLevel", "RequirePodLevel")
_SELINUX_FIELDS = ("user", "role", "type", "level")
# The namespace annotation SCC admission takes an SCC's SELinux level from when the SCC gives none
# (openshift/api security/v1 MCSAnnotation; sccmatching/matcher.go getPreallocatedLevel).
MCS_ANNOTATION = "openshift.io/sa.scc.mcs"


def strategies(obj):
    """The fields of an SCC object that decide admission, in SCCS's form, for the strategies modelled
    here: ranges from the namespace or fixed in the SCC (runAsUser MustRunAsRange, fsGroup and
    supplementalGroups MustRunAs), userNamespaceLevel, no fixed UID or read-only root filesystem, no
    forbidden sysctls or flex volumes. Raises ValueError naming the first field of `obj` it does not
    model. allowPrivilegeEscalation left out is true, userNamespaceLevel AllowHostLevel (openshift/api
    security/v1 types.go)."""
    name = (obj.get("metadata") or {}).get("name", "")
    out = dict((key, bool(obj.get(key))) for key in _BOOLEANS)
    out["allowPrivilegeEscalation"] = obj.get("allowPrivilegeEscalation") is not False
    out.update((key, obj.get(key)) for key in _LISTS)
    out["volumes"] = out["volumes"] or []
    for key, known in sorted(_STRATEGIES.items()):
        options = obj.get(key) or {}
        allowed = _OPTIONS.get((key, options.get("type")), ())
        extra = sorted(k for k, v in options.items() if k != "type" and k not in allowed and v not in (None, [], {}))
        if options.get("type") not in known or extra:
            raise ValueError("SCC %s: %s %s is not a strategy modelled here (%s, ranges only where fixed ranges are "
                             "modelled)" % (name, key, json.dumps(options, sort_keys=True), ", ".join(known)))
        out[key] = options["type"]
    user = obj.get("runAsUser") or {}
    fixed = user.get("uidRangeMin") is not None or user.get("uidRangeMax") is not None
    out["runAsUserRange"] = _span(int(user["uidRangeMin"]), int(user["uidRangeMax"])) if fixed else None
    for key in ("fsGroup", "supplementalGroups"):
        ranges = (obj.get(key) or {}).get("ranges") or []
        out[key + "Ranges"] = [_span(int(r["min"]), int(r["max"])) for r in ranges] or None
    selinux = (obj.get("seLinuxContext") or {}).get("seLinuxOptions") or {}
    out["seLinuxOptions"] = dict((key, str(selinux[key])) for key in _SELINUX_FIELDS if selinux.get(key)) or None
    out["userNamespaceLevel"] = obj.get("userNamespaceLevel") or "AllowHostLevel"
    if out["userNamespaceLevel"] not in _USER_NAMESPACE_LEVELS:
        raise ValueError("SCC %s: userNamespaceLevel %s is not modelled here (%s)" % (
            name, out["userNamespaceLevel"], ", ".join(_USER_NAMESPACE_LEVELS)))
    for key in ("readOnlyRootFilesystem", "forbiddenSysctls", "allowedFlexVolumes"):
        if obj.get(key):
            raise ValueError("SCC %s: %s %s is not modelled here" % (name, key, json.dumps(obj[key])))
    return out


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

    __slots__ = ("spec", "context", "annotations", "uid_range", "group_range", "group_blocks", "selinux_level")

    def __init__(self, spec, uid_range, group_range, annotations=None, selinux_level=None):
        self.spec = spec or {}
        self.selinux_level = selinux_level or None
        self.context = self.spec.get("securityContext") or {}
        self.annotations = annotations or {}
        self.uid_range = uid_range
        group_range = group_range if group_range is not None else uid_range
        # The namespace's group blocks: one range, or a list of them (the annotation's comma-separated
        # blocks). fsGroup gets the first block's start, supplementalGroups every block.
        self.group_blocks = [b for b in (group_range if isinstance(group_range, list) else [group_range]) if b]
        self.group_range = self.group_blocks[0] if self.group_blocks else group_range


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


def _user_namespace(scc, pod):
    """RequirePodLevel: the pod must have a user namespace of its own, spec.hostUsers false
    (sccmatching/provider.go ValidatePodSecurityContext, release-4.20)."""
    if scc.get("userNamespaceLevel") == "RequirePodLevel" and pod.spec.get("hostUsers") is not False:
        return [("spec.hostUsers", "must be false: the SCC admits pods in a user namespace only")]
    return []


def _volumes(scc, pod):
    found = []
    for index, volume in enumerate(pod.spec.get("volumes") or []):
        kind = _volume_type(volume or {})
        if kind == "hostPath" and not scc["allowHostDirVolumePlugin"]:
            found.append(("spec.volumes[%d].hostPath" % index, "host path volumes are not allowed"))
        elif "*" not in scc["volumes"] and kind not in scc["volumes"]:
            found.append(("spec.volumes[%d].%s" % (index, kind), "%s volumes are not allowed" % kind))
    return found


def _fixed_blocks(blocks):
    return ", ".join("%d-%d" % (int(b["start"]), int(b["start"]) + int(b["size"]) - 1) for b in blocks)


def _fs_group(scc, pod):
    """MustRunAs: the namespace's first group only. SCC admission gives the fsGroup strategy one
    range, Min = Max = the first block's start (sccmatching/matcher.go getPreallocatedFSGroup), where
    supplementalGroups gets every block whole (getPreallocatedSupplementalGroups). An SCC that fixes
    ranges (restricted-v3) allows a group in any of them instead."""
    group = pod.context.get("fsGroup")
    if scc["fsGroup"] != "MustRunAs" or not isinstance(group, int) or isinstance(group, bool):
        return []
    if scc.get("fsGroupRanges"):
        if any(_in_range(group, block) for block in scc["fsGroupRanges"]):
            return []
        return [("spec.securityContext.fsGroup", "%d is outside the SCC's ranges %s" % (
            group, _fixed_blocks(scc["fsGroupRanges"])))]
    if pod.group_range and group == int(pod.group_range.get("start", -1)):
        return []
    if not pod.group_range:
        return [("spec.securityContext.fsGroup", "%d is %s" % (group, _range_text(pod.group_range)))]
    return [("spec.securityContext.fsGroup", "%d is not %d, the first group of the namespace's range, the only fsGroup "
             "allowed" % (group, int(pod.group_range["start"])))]


def _supplemental_groups(scc, pod):
    """MustRunAs: a group in any of the namespace's blocks, each a range of its own
    (sccmatching/matcher.go getPreallocatedSupplementalGroups, group/mustrunas.go isGroupValid)."""
    if scc["supplementalGroups"] != "MustRunAs":
        return []
    fixed = scc.get("supplementalGroupsRanges")
    if fixed:
        return [("spec.securityContext.supplementalGroups", "%d is outside the SCC's ranges %s" % (
            group, _fixed_blocks(fixed))) for group in pod.context.get("supplementalGroups") or []
            if not any(_in_range(group, block) for block in fixed)]
    where = (_range_text(pod.group_range) if len(pod.group_blocks) < 2 else
             "outside the namespace's group blocks %s" % ", ".join(
                 "%d-%d" % (int(b["start"]), int(b["start"]) + int(b["size"]) - 1) for b in pod.group_blocks))
    return [("spec.securityContext.supplementalGroups", "%d is %s" % (group, where))
            for group in pod.context.get("supplementalGroups") or []
            if not any(_in_range(group, block) for block in pod.group_blocks)]


def _pod_selinux(scc, pod):
    return _selinux(scc, pod, pod.context, "spec.securityContext")


def _seccomp_profiles(scc, pod):
    """The seccomp profiles of the pod and of each container, as the SCC seccomp strategy reads
    them (pod: its annotation, else its field; a container: its field, else its annotation, else
    the pod's, which is checked once for the pod)."""
    if pod.annotations.get(SECCOMP_POD_ANNOTATION):
        found = [("metadata.annotations[%s]" % SECCOMP_POD_ANNOTATION, pod.annotations[SECCOMP_POD_ANNOTATION])]
    else:
        found = [("spec.securityContext.seccompProfile", _seccomp(pod.context.get("seccompProfile")))]
    for path, container in _containers(pod.spec):
        ctx = container.get("securityContext") or {}
        key = SECCOMP_CONTAINER_ANNOTATION + str(container.get("name", ""))
        if "seccompProfile" in ctx:
            found.append(("spec.%s.securityContext.seccompProfile" % path, _seccomp(ctx.get("seccompProfile"))))
        elif key in pod.annotations:
            found.append(("metadata.annotations[%s]" % key, pod.annotations[key]))
    return [(where, why) for where, why in ((where, _seccomp_refusal(scc, profile)) for where, profile in found) if why]


def _sysctls(scc, pod):
    """Sysctls: the safe ones anywhere, any other only where allowedUnsafeSysctls lists it."""
    found = []
    for index, sysctl in enumerate(pod.context.get("sysctls") or []):
        name = str((sysctl or {}).get("name", ""))
        if name not in SAFE_SYSCTLS and not _unsafe_sysctl_allowed(scc, name):
            found.append(("spec.securityContext.sysctls[%d]" % index, "unsafe sysctl %s is not allowed" % name))
    return found


def _unsafe_sysctl_allowed(scc, name):
    return any(name.startswith(p[:-1]) if p.endswith("*") else name == p for p in scc["allowedUnsafeSysctls"] or [])


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
    return check(scc, pod, box, uid if has_uid else None, where)


def _user_in_range(scc, pod, _box, uid, where):
    """MustRunAsRange: the SCC's own range where it fixes one (restricted-v3), else the namespace's."""
    fixed = scc.get("runAsUserRange")
    if uid is None or _in_range(uid, fixed or pod.uid_range):
        return []
    if fixed:
        return [(where, "%d is outside the SCC's range %s" % (uid, _fixed_blocks([fixed])))]
    return [(where, "%d is %s" % (uid, _range_text(pod.uid_range)))]


def _user_not_root(_scc, pod, box, uid, where):
    """MustRunAsNonRoot (user/nonroot.go Validate): runAsNonRoot false is refused whatever the UID,
    then UID 0; with neither set, admission sets runAsNonRoot true (sccmatching/provider.go)."""
    if box.context.get("runAsNonRoot", pod.context.get("runAsNonRoot")) is False:
        path = box.path if "runAsNonRoot" in box.context else "spec.securityContext"
        return [(path + ".runAsNonRoot", "false is not allowed (it must be true)")]
    if uid == 0:
        return [(where, "0 (root) is not allowed")]
    return []


_USER_STRATEGIES = {"MustRunAsRange": _user_in_range, "MustRunAsNonRoot": _user_not_root}


def _container_selinux(scc, pod, box):
    """A container's own options; one that sets none has the pod's (the effective context), which
    the pod's check has judged already."""
    return _selinux(scc, pod, box.context, box.path)


def _selinux(scc, pod, context, path):
    """MustRunAs (selinux/mustrunas.go Validate): options left out are the SCC's, which admission
    sets (sccmatching/provider.go); options set must have the SCC's user, role and type (each empty
    unless the SCC sets it) and its level, which is the namespace's openshift.io/sa.scc.mcs where
    the SCC gives none (sccmatching/matcher.go requiresPreAllocatedSELinuxLevel,
    getPreallocatedLevel). Levels are equal as equalLevels compares them: the same string, or the
    same sensitivity and the same set of categories ("s0:c6,c0" is "s0:c0,c6"). A namespace level
    not known (None) is taken to differ from any level, as a range not known is taken to hold no
    fixed ID. RunAsAny: any options."""
    options = context.get("seLinuxOptions")
    if scc["seLinuxContext"] != "MustRunAs" or options is None:
        return []
    options = options if isinstance(options, dict) else {}
    wanted = dict(scc.get("seLinuxOptions") or {})
    found = []
    level = wanted.get("level") or pod.selinux_level
    given = str(options.get("level") or "")
    if level is None:
        found.append((path + ".seLinuxOptions.level", "%r is not known to be the namespace's SELinux level "
                      "(components_scc_selinux_level is not set)" % given))
    elif not equal_levels(level, given):
        found.append((path + ".seLinuxOptions.level", "%r is not %s, the %s SELinux level" % (
            given, level, "SCC's" if wanted.get("level") else "namespace's")))
    for key in ("role", "type", "user"):
        if str(options.get(key) or "") != wanted.get(key, ""):
            found.append((path + ".seLinuxOptions." + key, "%r is not %r, the SCC's" % (
                str(options.get(key) or ""), wanted.get(key, ""))))
    return found


def equal_levels(expected, actual):
    """selinux/mustrunas.go equalLevels: the same string, or both "<sensitivity>:<categories>" with
    the same sensitivity and the same categories in any order."""
    if expected == actual:
        return True
    expected_parts, actual_parts = expected.split(":", 1), actual.split(":", 1)
    if len(expected_parts) != 2 or len(actual_parts) != 2 or expected_parts[0] != actual_parts[0]:
        return False
    return sorted(expected_parts[1].split(",")) == sorted(actual_parts[1].split(","))


# The checks in the order their refusals are listed: the first refusal is the field that forced a
# grant (least_privileged).
_POD_CHECKS = (_host_namespaces, _user_namespace, _volumes, _fs_group, _supplemental_groups, _pod_selinux, _seccomp_profiles,
               _sysctls)
_CONTAINER_CHECKS = (_privileged, _privilege_escalation, _capabilities, _host_ports, _user, _container_selinux)


def refusals(name, spec, uid_range=None, group_range=None, annotations=None, version=None, selinux_level=None):
    """Why SCC `name` would not admit a pod with this spec: [(field path, why)]; [] admits it.

    `uid_range` and `group_range` ({start, size}) are the namespace's UID and supplemental group
    ranges (OpenShift annotates each namespace with them; the group range is the UID range unless
    set otherwise); `group_range` may also be a list of such blocks. Unknown (None or {}): a fixed
    value is taken to be outside. `selinux_level` is the namespace's SELinux level (its annotation
    openshift.io/sa.scc.mcs, such as "s0:c26,c5"); unknown (None or ""), a level the pod sets is
    taken to differ from it. `annotations` are the pod's, for the seccomp annotations SCC admission
    reads. `name` may also be the strategies of an SCC object (strategies()); a name is looked up in
    the SCCs of OpenShift `version` (model())."""
    scc = model(version).sccs[name] if isinstance(name, str) else name
    pod = _Pod(spec, uid_range, group_range, annotations, selinux_level)
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


def _refused(name, pods, namespace, version=None):
    uid_range, group_range, selinux_level = namespace
    return [(pod[0], field, why) for pod in pods
            for field, why in refusals(name, pod[1], uid_range, group_range, pod[2] if len(pod) > 2 else None,
                                       version, selinux_level)]


def _by_default(pod, namespace, version):
    """Whether an SCC every authenticated user may use admits the pod."""
    return any(not _refused(name, [pod], namespace, version) for name in model(version).defaults)


def _pin(pod):
    return ((pod[2] if len(pod) > 2 else None) or {}).get(REQUIRED_SCC_ANNOTATION) or None


def required_scc(pods, version=None):
    """The SCC the pods pin with openshift.io/required-scc and the label of the first pod that
    does, or (None, None). Raises ValueError, naming the annotation and the fix, when pods pin
    different SCCs (one service account gets one SCC here) or one that kfocp does not model (for
    OpenShift `version`)."""
    pins = [(pod[0], _pin(pod)) for pod in pods if _pin(pod)]
    if not pins:
        return None, None
    names = sorted(set(name for _label, name in pins))
    where = "metadata.annotations[%s]" % REQUIRED_SCC_ANNOTATION
    if len(names) > 1:
        raise ValueError("%s: the pods of one service account pin different SCCs (%s). Give each pod that pins "
                         "an SCC a service account of its own" % (where, ", ".join(names)))
    if names[0] not in model(version).sccs:
        on = " for OpenShift %s" % version if version else ""
        raise ValueError("%s: %s (on %s) is not one of the SCCs kfocp models%s (%s). Pin one of those or leave the "
                         "annotation out" % (where, names[0], pins[0][0], on, ", ".join(model(version).order)))
    return names[0], pins[0][0]


def least_privileged(pods, uid_range=None, group_range=None, version=None, selinux_level=None):
    """The least privileged SCC (in the order of OpenShift `version`'s model()) that, with the SCCs
    every authenticated user may use, admits every pod, and the refusals of the SCC just before it:
    (scc, [(pod label, field path, why)]). `pods` is [(label, pod spec)] or [(label, pod spec, pod
    annotations)]; `selinux_level` is the namespace's (refusals()). choose() also names that SCC."""
    scc, refused, _before = choose(pods, uid_range, group_range, version, selinux_level)
    return scc, refused


def choose(pods, uid_range=None, group_range=None, version=None, selinux_level=None):
    """least_privileged()'s answer and the SCC whose refusals it gives: (scc, refusals, that SCC).

    SCC admission admits a pod when any SCC it may use admits it, and takes the first of those by
    priority, points and name (sccadmission/admission.go computeSecurityContext, util/sort): so the
    grant need only admit the pods that no default SCC admits, and the refusals given are that
    grant's predecessor's on those pods. When every pod is admitted by one of the default SCCs (on
    4.20 restricted-v2 or restricted-v3), it is the first of those, restricted-v2: no grant, and no
    predecessor (None).

    When pods pin an SCC (required_scc) it is that SCC, with the pin as the reason and no
    predecessor: admission validates a pinned pod against it alone, and the account's other pods
    against the defaults and it. A pod that would then be refused raises ValueError naming the field."""
    namespace = (uid_range, group_range, selinux_level)
    pinned, label = required_scc(pods, version)
    if pinned:
        refused = []
        for pod in pods:
            if _pin(pod) or not _by_default(pod, namespace, version):
                refused += _refused(pinned, [pod], namespace, version)
        if refused:
            raise ValueError("%s: %s, the SCC %s pins with %s, refuses it: %s %s. Change the pod or the pin" % (
                refused[0][1], pinned, label, REQUIRED_SCC_ANNOTATION, refused[0][0], refused[0][2]))
        return pinned, [(label, "metadata.annotations[%s]" % REQUIRED_SCC_ANNOTATION, "pins %s" % pinned)], None
    needy = needing_a_grant(pods, uid_range, group_range, version, selinux_level)
    order = _candidates(needy, version)
    if not needy:
        return order[0], [], None
    previous, tried = [], None
    for name in order:
        refused = _refused(name, needy, namespace, version)
        if not refused:
            return name, previous, tried
        previous, tried = refused, name
    return order[-1], previous, tried


def grants(pods, uid_range=None, group_range=None, version=None, selinux_level=None):
    """The grants the account of `pods` needs, as choose() gives each: [(scc, refusals, predecessor)].

    One grant, choose()'s, except where that is `privileged` (which admits any pod) while less
    privileged SCCs admit each pod that needs a grant. Admission admits a pod under any SCC the
    account may use that admits it (sccadmission/admission.go computeSecurityContext), so those
    SCCs together admit every pod: each pod's least SCC, keeping only the SCCs whose pods no other
    kept one admits (most privileged dropped first). A pod that needs nonroot-v2 (a fixed UID with a
    seccomp profile, which anyuid refuses) beside one that needs anyuid (root) gets the two."""
    first = choose(pods, uid_range, group_range, version, selinux_level)
    if first[0] != "privileged" or first[2] is None:
        return [first]
    namespace = (uid_range, group_range, selinux_level)
    needy = needing_a_grant(pods, uid_range, group_range, version, selinux_level)
    order = model(version).order
    least = [choose([pod], uid_range, group_range, version, selinux_level)[0] for pod in needy]
    if "privileged" in least:
        return [first]
    kept = sorted(set(least), key=order.index)
    for name in reversed(kept[:]):
        others = [other for other in kept if other != name]
        if all(any(not _refused(other, [pod], namespace, version) for other in others) for pod in needy):
            kept = others
    mine = dict((name, []) for name in kept)
    for pod, name in zip(needy, least):
        mine[name if name in kept else next(k for k in kept if not _refused(k, [pod], namespace, version))].append(pod)
    return [choose(mine[name], uid_range, group_range, version, selinux_level) for name in kept]


def needing_a_grant(pods, uid_range=None, group_range=None, version=None, selinux_level=None):
    """The pods (as least_privileged() takes them) that no SCC every authenticated user may use
    admits: those a grant must admit."""
    return [pod for pod in pods if not _by_default(pod, (uid_range, group_range, selinux_level), version)]


def _candidates(pods, version):
    """The order, without the SCCs for pods in a user namespace (userNamespaceLevel RequirePodLevel)
    when a pod has none (spec.hostUsers not false): those refuse it anyway, and the fields that force
    a grant are then the ones the SCC before them refuses."""
    found = model(version)
    if all(pod[1].get("hostUsers") is False for pod in pods):
        return found.order
    return tuple(name for name in found.order if found.sccs[name]["userNamespaceLevel"] != "RequirePodLevel")
