# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Pod Security Standards, as the PodSecurity admission plugin checks them (policy version
"latest" of Kubernetes 1.36, k8s.io/pod-security-admission/policy v0.36): the least permissive
level that admits a pod, and the fields that forced it.

Pure functions over plain dicts (a pod's metadata and spec as the API writes them). Each check
below names the upstream check it follows (policy/check_<id>.go). Every check visits the init,
regular and ephemeral containers, as upstream's visitContainers does.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

RESTRICTED, BASELINE, PRIVILEGED = "restricted", "baseline", "privileged"
LEVELS = (RESTRICTED, BASELINE, PRIVILEGED)  # least permissive first

# The policy version these checks follow, written on the namespaces beside each level
POLICY_VERSION = "v1.36"
LABEL_PREFIX = "pod-security.kubernetes.io/"
# OpenShift's label synchronizer leaves a namespace with this label set to "false" alone
SYNC_LABEL = "security.openshift.io/scc.podSecurityLabelSync"

CONTAINER_FIELDS = ("initContainers", "containers", "ephemeralContainers")

# check_capabilities_baseline.go: capabilities_allowed_1_0
BASELINE_CAPABILITIES = frozenset((
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
    "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"))
# check_seLinuxOptions.go: selinuxAllowedTypes1_31
SELINUX_TYPES = frozenset(("", "container_t", "container_init_t", "container_kvm_t", "container_engine_t"))
# check_sysctls.go: sysctlsAllowedV1Dot32
SYSCTLS = frozenset((
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start", "net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"))
# check_restrictedVolumes.go: the volume sources restricted allows
RESTRICTED_VOLUMES = frozenset((
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image", "persistentVolumeClaim", "projected",
    "secret"))
SECCOMP_TYPES = frozenset(("RuntimeDefault", "Localhost"))
APPARMOR_TYPES = frozenset(("RuntimeDefault", "Localhost"))
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


def _containers(spec):
    """(path, container) for every init, regular and ephemeral container."""
    for field in CONTAINER_FIELDS:
        for container in spec.get(field) or []:
            yield "spec.%s[%s]" % (field, container.get("name")), container


def _sc(value):
    return value.get("securityContext") or {}


def _windows(spec):
    return ((spec.get("os") or {}).get("name")) == "windows"


def _user_namespace(spec):
    """helpers.go relaxPolicyForUserNamespacePod: hostUsers false relaxes some checks."""
    return spec.get("hostUsers") is False


# ---------------------------------------------------------------- baseline checks

def _host_process(meta, spec):  # check_windowsHostProcess.go
    if (_sc(spec).get("windowsOptions") or {}).get("hostProcess") is True:
        yield "spec.securityContext.windowsOptions.hostProcess", "true"
    for path, c in _containers(spec):
        if (_sc(c).get("windowsOptions") or {}).get("hostProcess") is True:
            yield path + ".securityContext.windowsOptions.hostProcess", "true"


def _host_namespaces(meta, spec):  # check_hostNamespaces.go
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(field) is True:
            yield "spec." + field, "true"


def _privileged(meta, spec):  # check_privileged.go
    for path, c in _containers(spec):
        if _sc(c).get("privileged") is True:
            yield path + ".securityContext.privileged", "true"


def _capabilities_baseline(meta, spec):  # check_capabilities_baseline.go
    for path, c in _containers(spec):
        added = (_sc(c).get("capabilities") or {}).get("add") or []
        bad = [cap for cap in added if cap not in BASELINE_CAPABILITIES]
        if bad:
            yield path + ".securityContext.capabilities.add", ", ".join(bad)


def _host_path_volumes(meta, spec):  # check_hostPathVolumes.go
    for volume in spec.get("volumes") or []:
        if volume.get("hostPath") is not None:
            yield "spec.volumes[%s].hostPath" % volume.get("name"), "a hostPath volume"


def _host_ports(meta, spec):  # check_hostPorts.go
    for path, c in _containers(spec):
        ports = [str(p["hostPort"]) for p in c.get("ports") or [] if p.get("hostPort")]
        if ports:
            yield path + ".ports.hostPort", ", ".join(ports)


def _profile_types(spec, field, allowed):
    """(path, type) of every `field` profile (pod and containers) whose type is not `allowed`."""
    for path, holder in [("spec", spec)] + list(_containers(spec)):
        profile = _sc(holder).get(field)
        if profile is not None and profile.get("type") not in allowed:
            yield "%s.securityContext.%s.type" % (path, field), str(profile.get("type"))


def _apparmor(meta, spec):  # check_appArmorProfile.go
    yield from _profile_types(spec, "appArmorProfile", APPARMOR_TYPES)
    for key, value in sorted(((meta or {}).get("annotations") or {}).items()):
        if key.startswith(APPARMOR_ANNOTATION) and not (
                value in ("", "runtime/default") or str(value).startswith("localhost/")):
            yield "metadata.annotations[%s]" % key, str(value)


def _selinux_bad(options):
    bad = []
    if options.get("type", "") not in SELINUX_TYPES:
        bad.append("type %s" % options.get("type"))
    if options.get("user"):
        bad.append("user")
    if options.get("role"):
        bad.append("role")
    return bad


def _selinux(meta, spec):  # check_seLinuxOptions.go (1.31 types)
    options = _sc(spec).get("seLinuxOptions")
    if options is not None and _selinux_bad(options):
        yield "spec.securityContext.seLinuxOptions", ", ".join(_selinux_bad(options))
    for path, c in _containers(spec):
        options = _sc(c).get("seLinuxOptions")
        if options is not None and _selinux_bad(options):
            yield path + ".securityContext.seLinuxOptions", ", ".join(_selinux_bad(options))


def _proc_mount_any(spec):
    for path, c in _containers(spec):
        mount = _sc(c).get("procMount")
        if mount is not None and mount != "Default":
            yield path + ".securityContext.procMount", str(mount)


def _proc_mount_baseline(meta, spec):  # check_procMount_baseline.go (1.35: user namespaces relax it)
    if _user_namespace(spec):
        return
    yield from _proc_mount_any(spec)


def _seccomp_baseline(meta, spec):  # check_seccompProfile_baseline.go (1.19: fields, not annotations)
    yield from _profile_types(spec, "seccompProfile", SECCOMP_TYPES)


def _sysctls(meta, spec):  # check_sysctls.go (1.32 list)
    for sysctl in _sc(spec).get("sysctls") or []:
        if sysctl.get("name") not in SYSCTLS:
            yield "spec.securityContext.sysctls[%s]" % sysctl.get("name"), "not a safe sysctl"


def _host_probes(meta, spec):  # check_hostProbesAndhostLifecycle.go (1.34)
    for path, c in _containers(spec):
        handlers = [("%s.%s" % (path, probe), c.get(probe)) for probe in ("livenessProbe", "readinessProbe",
                                                                          "startupProbe")]
        lifecycle = c.get("lifecycle") or {}
        handlers += [("%s.lifecycle.%s" % (path, hook), lifecycle.get(hook)) for hook in ("postStart", "preStop")]
        for where, handler in handlers:
            for action in ("httpGet", "tcpSocket"):
                host = ((handler or {}).get(action) or {}).get("host")
                if host:
                    yield "%s.%s.host" % (where, action), host


# ---------------------------------------------------------------- restricted checks

def _restricted_volumes(meta, spec):  # check_restrictedVolumes.go
    for volume in spec.get("volumes") or []:
        sources = [key for key in volume if key != "name"]
        # a volume without a source is an emptyDir: the API server defaults it before admission
        if sources and not any(key in RESTRICTED_VOLUMES for key in sources):
            yield "spec.volumes[%s]" % volume.get("name"), "volume type %s" % (", ".join(sources) or "unknown")


def _privilege_escalation(meta, spec):  # check_allowPrivilegeEscalation.go (1.25: not on Windows)
    if _windows(spec):
        return
    for path, c in _containers(spec):
        if _sc(c).get("allowPrivilegeEscalation") is not False:
            yield path + ".securityContext.allowPrivilegeEscalation", "not set to false"


def _run_as_non_root(meta, spec):  # check_runAsNonRoot.go (1.35: user namespaces relax it)
    if _user_namespace(spec):
        return
    pod = _sc(spec).get("runAsNonRoot")
    if pod is False:
        yield "spec.securityContext.runAsNonRoot", "false"
    for path, c in _containers(spec):
        own = _sc(c).get("runAsNonRoot")
        if own is False:
            yield path + ".securityContext.runAsNonRoot", "false"
        elif own is None and pod is not True:
            yield path + ".securityContext.runAsNonRoot", "not set, nor on the pod"


def _run_as_user(meta, spec):  # check_runAsUser.go (1.35: user namespaces relax it)
    if _user_namespace(spec):
        return
    if _sc(spec).get("runAsUser") == 0:
        yield "spec.securityContext.runAsUser", "0"
    for path, c in _containers(spec):
        if _sc(c).get("runAsUser") == 0:
            yield path + ".securityContext.runAsUser", "0"


def _seccomp_restricted(meta, spec):  # check_seccompProfile_restricted.go (1.25: not on Windows)
    if _windows(spec):
        return
    profile = _sc(spec).get("seccompProfile")
    pod_set = profile is not None and profile.get("type") in SECCOMP_TYPES
    if profile is not None and not pod_set:
        yield "spec.securityContext.seccompProfile.type", str(profile.get("type"))
    for path, c in _containers(spec):
        own = _sc(c).get("seccompProfile")
        if own is not None and own.get("type") not in SECCOMP_TYPES:
            yield path + ".securityContext.seccompProfile.type", str(own.get("type"))
        elif own is None and not pod_set:
            yield path + ".securityContext.seccompProfile", "not RuntimeDefault or Localhost, nor on the pod"


def _capabilities_restricted(meta, spec):  # check_capabilities_restricted.go (1.25: not on Windows)
    if _windows(spec):
        return
    for path, c in _containers(spec):
        capabilities = _sc(c).get("capabilities") or {}
        if "ALL" not in (capabilities.get("drop") or []):
            yield path + ".securityContext.capabilities.drop", "does not drop ALL"
        bad = [cap for cap in capabilities.get("add") or [] if cap != "NET_BIND_SERVICE"]
        if bad:
            yield path + ".securityContext.capabilities.add", ", ".join(bad)


def _proc_mount_restricted(meta, spec):  # check_procMount_restricted.go (1.35: no relaxation)
    yield from _proc_mount_any(spec)


# (check id, level it belongs to, function), in upstream's registration order
CHECKS = (
    ("allowPrivilegeEscalation", RESTRICTED, _privilege_escalation),
    ("appArmorProfile", BASELINE, _apparmor),
    ("capabilities_baseline", BASELINE, _capabilities_baseline),
    ("capabilities_restricted", RESTRICTED, _capabilities_restricted),
    ("hostNamespaces", BASELINE, _host_namespaces),
    ("hostPathVolumes", BASELINE, _host_path_volumes),
    ("hostPorts", BASELINE, _host_ports),
    ("hostProbesAndHostLifecycle", BASELINE, _host_probes),
    ("privileged", BASELINE, _privileged),
    ("procMount", BASELINE, _proc_mount_baseline),
    ("procMount_restricted", RESTRICTED, _proc_mount_restricted),
    ("restrictedVolumes", RESTRICTED, _restricted_volumes),
    ("runAsNonRoot", RESTRICTED, _run_as_non_root),
    ("runAsUser", RESTRICTED, _run_as_user),
    ("seLinuxOptions", BASELINE, _selinux),
    ("seccompProfile_baseline", BASELINE, _seccomp_baseline),
    ("seccompProfile_restricted", RESTRICTED, _seccomp_restricted),
    ("sysctls", BASELINE, _sysctls),
    ("windowsHostProcess", BASELINE, _host_process),
)


SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER_ANNOTATION = "container.seccomp.security.alpha.kubernetes.io/"


def scc_seccomp_annotations(metadata):
    """The seccomp annotations OpenShift's SCC admission turns into seccomp profile fields before
    PodSecurity sees the pod (the Kubernetes API server itself ignores them since 1.27), whose value
    baseline refuses there: [(field path, value)]. (The SCC's other defaults only tighten a pod.)"""
    found = []
    for key, value in sorted(((metadata or {}).get("annotations") or {}).items()):
        if key == SECCOMP_POD_ANNOTATION or key.startswith(SECCOMP_CONTAINER_ANNOTATION):
            if not (value in ("runtime/default", "docker/default") or str(value).startswith("localhost/")):
                found.append(("metadata.annotations[%s]" % key, str(value)))
    return found


def violations(spec, metadata=None):
    """Every failed check: [(check id, the level that forbids it, field path, what is wrong)].
    A baseline check's failure forbids both baseline and restricted; a restricted check's only
    restricted. (Upstream's restricted checks override some baseline ones, each with a stricter
    rule, so a pod that passes the restricted ones passes those baseline ones too.)"""
    spec, metadata = spec or {}, metadata or {}
    return [(check, level, field, detail) for check, level, func in CHECKS for field, detail in func(metadata, spec)]


def least_level(spec, metadata=None, openshift=False):
    """(level, reasons): the least permissive level that admits the pod, and the violations of the
    next stricter level, which forced it ([] for restricted). With `openshift`, the seccomp
    annotations SCC admission turns into fields count too (scc_seccomp_annotations): the level then
    admits the pod on both platforms."""
    found = violations(spec, metadata)
    if openshift:
        found += [("seccompProfile_baseline", BASELINE, field, "%s (SCC admission makes it the seccomp profile)" % value)
                  for field, value in scc_seccomp_annotations(metadata)]
    baseline = [v for v in found if v[1] == BASELINE]
    if baseline:
        return PRIVILEGED, baseline
    if found:
        return BASELINE, found
    return RESTRICTED, []


def templates_level(templates, openshift=False):
    """The least permissive level that admits the pods of every (spec, metadata) in `templates`:
    a namespace's level from the pod templates of the workloads that live there."""
    level = RESTRICTED
    for spec, metadata in templates:
        level = more_permissive(level, least_level(spec, metadata, openshift)[0])
    return level


def labels(level):
    """The PodSecurity admission labels of a namespace at `level`: enforced, warned and audited at
    the policy version these checks follow. Setting all six keeps OpenShift's label synchronizer
    off them (it writes only the labels no other manager set), and its sync label says so."""
    out = {SYNC_LABEL: "false"}
    for mode in ("enforce", "warn", "audit"):
        out[LABEL_PREFIX + mode] = level
        out[LABEL_PREFIX + mode + "-version"] = POLICY_VERSION
    return out


def pod_level(pod):
    """{level, reasons} of one pod (an object with metadata and spec, as the API returns it):
    the least permissive level that admits it, and "field: detail" for each field the next stricter
    level refuses."""
    pod = pod or {}
    level, reasons = least_level(pod.get("spec") or {}, pod.get("metadata") or {})
    return {"level": level, "reasons": ["%s: %s" % (r[2], r[3]) for r in reasons]}


def verify_rows(names, namespaces, pods):
    """One check row per namespace name ({check: podsecurity, target, pass, detail}): it passes when
    the namespace carries enforce, warn and audit labels at one level and every pod in it (as
    admitted) needs no more than that level. `namespaces` and `pods` are live objects."""
    found = dict(((n.get("metadata") or {}).get("name"), (n.get("metadata") or {}).get("labels") or {})
                 for n in namespaces or [])
    rows = []
    for name in names:
        labels = found.get(name)
        if labels is None:
            rows.append({"check": "podsecurity", "target": name, "pass": False, "detail": "no such namespace"})
            continue
        enforced = labels.get(LABEL_PREFIX + "enforce")
        same = enforced in LEVELS and all(labels.get(LABEL_PREFIX + mode) == enforced for mode in ("warn", "audit"))
        over = []
        for pod in pods or []:
            if (pod.get("metadata") or {}).get("namespace") != name:
                continue
            needed = pod_level(pod)["level"]
            if same and LEVELS.index(needed) > LEVELS.index(enforced):
                over.append("%s needs %s" % (pod["metadata"].get("name"), needed))
        detail = "enforce/warn/audit %s%s%s" % (enforced or "unset", "" if same else " (not one level)",
                                                ("; " + ", ".join(over)) if over else "")
        rows.append({"check": "podsecurity", "target": name, "pass": same and not over, "detail": detail})
    return rows


def more_permissive(a, b):
    """The more permissive of two levels."""
    return a if LEVELS.index(a) >= LEVELS.index(b) else b


def stricter(level):
    """The next stricter level, or None for restricted."""
    index = LEVELS.index(level)
    return LEVELS[index - 1] if index else None
