"""One table of pod specs, each with the least permissive Pod Security Standards level that admits
it and the checks that forced it. The unit tests check the pure function against it; the
integration test checks the real PodSecurity admission of the local API server against it."""
import copy

IMAGE = "registry.example.com/app:1"


def container(name="app", **security):
    """A container that passes every restricted check, with `security` merged into its
    securityContext (a value of None removes the field)."""
    sc = {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True,
          "seccompProfile": {"type": "RuntimeDefault"}}
    for key, value in security.items():
        if value is None:
            sc.pop(key, None)
        else:
            sc[key] = value
    return {"name": name, "image": IMAGE, "securityContext": sc}


def pod(*containers_, annotations=None, **spec):
    """A pod template {metadata, spec}: the containers given (one restricted container by
    default) plus `spec` fields."""
    body = {"containers": list(containers_) or [container()]}
    body.update(spec)
    meta = {"annotations": dict(annotations)} if annotations else {}
    return {"metadata": meta, "spec": body}


BARE = {"name": "app", "image": IMAGE}
POD_LEVEL = {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}
WINDOWS = {"name": "win", "image": IMAGE}
CAPS_ALL = {"drop": ["ALL"]}

# (name, pod template, level, the checks the next stricter level refuses)
ROWS = [
    ("restricted-containers", pod(), "restricted", []),
    ("restricted-pod-level", pod(container(runAsNonRoot=None, seccompProfile=None), securityContext=POD_LEVEL),
     "restricted", []),
    ("bare", pod(BARE), "baseline",
     ["allowPrivilegeEscalation", "capabilities_restricted", "runAsNonRoot", "seccompProfile_restricted"]),
    # baseline checks
    ("privileged", pod(container(privileged=True, allowPrivilegeEscalation=True)), "privileged", ["privileged"]),
    ("privileged-init", pod(initContainers=[container("init", privileged=True, allowPrivilegeEscalation=True)]),
     "privileged", ["privileged"]),
    ("host-network", pod(hostNetwork=True), "privileged", ["hostNamespaces"]),
    ("host-pid", pod(hostPID=True), "privileged", ["hostNamespaces"]),
    ("host-ipc", pod(hostIPC=True), "privileged", ["hostNamespaces"]),
    ("host-port", pod(dict(container(), ports=[{"containerPort": 8080, "hostPort": 8080}])), "privileged",
     ["hostPorts"]),
    ("container-port", pod(dict(container(), ports=[{"containerPort": 8080}])), "restricted", []),
    ("host-path", pod(volumes=[{"name": "host", "hostPath": {"path": "/var/log"}}]), "privileged",
     ["hostPathVolumes"]),
    ("add-sys-admin", pod(container(capabilities={"drop": ["ALL"], "add": ["SYS_ADMIN"]})), "privileged",
     ["capabilities_baseline"]),
    ("add-net-raw", pod(container(capabilities={"drop": ["ALL"], "add": ["NET_RAW"]})), "privileged",
     ["capabilities_baseline"]),
    ("add-net-admin-init", pod(initContainers=[dict(BARE, name="init", securityContext={
        "capabilities": {"add": ["NET_ADMIN", "NET_RAW"]}})]), "privileged", ["capabilities_baseline"]),
    ("seccomp-unconfined-pod", pod(container(seccompProfile=None), securityContext={
        "seccompProfile": {"type": "Unconfined"}}), "privileged", ["seccompProfile_baseline"]),
    ("seccomp-unconfined-container", pod(container(seccompProfile={"type": "Unconfined"}),
                                         securityContext=POD_LEVEL), "privileged", ["seccompProfile_baseline"]),
    ("selinux-spc", pod(container(seLinuxOptions={"type": "spc_t"})), "privileged", ["seLinuxOptions"]),
    ("selinux-user", pod(securityContext={"seLinuxOptions": {"user": "system_u"}}), "privileged",
     ["seLinuxOptions"]),
    ("selinux-role", pod(container(seLinuxOptions={"role": "system_r"})), "privileged", ["seLinuxOptions"]),
    ("selinux-engine-level", pod(container(seLinuxOptions={"type": "container_engine_t", "level": "s0:c1,c2"})),
     "restricted", []),
    ("sysctl-unsafe", pod(securityContext={"sysctls": [{"name": "kernel.msgmax", "value": "65536"}]}),
     "privileged", ["sysctls"]),
    ("sysctl-safe", pod(securityContext={"sysctls": [{"name": "net.ipv4.tcp_rmem", "value": "4096 87380 6291456"},
                                                     {"name": "kernel.shm_rmid_forced", "value": "1"}]}),
     "restricted", []),
    ("apparmor-unconfined-container", pod(container(appArmorProfile={"type": "Unconfined"})), "privileged",
     ["appArmorProfile"]),
    ("apparmor-unconfined-pod", pod(securityContext={"appArmorProfile": {"type": "Unconfined"}}), "privileged",
     ["appArmorProfile"]),
    ("apparmor-runtime-default", pod(container(appArmorProfile={"type": "RuntimeDefault"})), "restricted", []),
    ("apparmor-annotation-unconfined", pod(annotations={
        "container.apparmor.security.beta.kubernetes.io/app": "unconfined"}), "privileged", ["appArmorProfile"]),
    ("apparmor-annotation-localhost", pod(annotations={
        "container.apparmor.security.beta.kubernetes.io/app": "localhost/kubeflow"}), "restricted", []),
    # Kubernetes ignores seccomp annotations (OpenShift's SCC admission does not: see least_level)
    ("seccomp-annotation-unconfined", pod(container(seccompProfile=None), securityContext=POD_LEVEL, annotations={
        "container.seccomp.security.alpha.kubernetes.io/app": "unconfined"}), "restricted", []),
    ("probe-host", pod(dict(container(), livenessProbe={"httpGet": {"host": "10.0.0.1", "port": 8080}})),
     "privileged", ["hostProbesAndHostLifecycle"]),
    ("lifecycle-host", pod(dict(container(), lifecycle={"postStart": {"httpGet": {"host": "node", "port": 80}}})),
     "privileged", ["hostProbesAndHostLifecycle"]),
    ("windows-host-process",
     pod(dict(WINDOWS, securityContext={"windowsOptions": {"hostProcess": True}, "runAsNonRoot": True}),
         os={"name": "windows"}, hostNetwork=True),
     "privileged", ["hostNamespaces", "windowsHostProcess"]),
    # restricted checks
    ("nfs-volume", pod(volumes=[{"name": "data", "nfs": {"server": "nfs.example.com", "path": "/exports"}}]),
     "baseline", ["restrictedVolumes"]),
    ("allowed-volumes", pod(volumes=[
        {"name": "a", "emptyDir": {}}, {"name": "b", "configMap": {"name": "c"}}, {"name": "c", "secret": {"secretName": "s"}},
        {"name": "d", "persistentVolumeClaim": {"claimName": "p"}}, {"name": "e", "downwardAPI": {"items": []}},
        {"name": "f", "projected": {"sources": []}}, {"name": "g", "csi": {"driver": "csi.example.com"}},
        {"name": "h", "ephemeral": {"volumeClaimTemplate": {"spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}}}]),
     "restricted", []),
    ("escalation-unset", pod(container(allowPrivilegeEscalation=None)), "baseline", ["allowPrivilegeEscalation"]),
    ("escalation-true-init", pod(initContainers=[container("init", allowPrivilegeEscalation=True)]), "baseline",
     ["allowPrivilegeEscalation"]),
    ("add-chown", pod(container(capabilities={"drop": ["ALL"], "add": ["CHOWN"]})), "baseline",
     ["capabilities_restricted"]),
    ("add-net-bind-service", pod(container(capabilities={"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]})),
     "restricted", []),
    ("drop-net-raw-only", pod(container(capabilities={"drop": ["NET_RAW"]})), "baseline",
     ["capabilities_restricted"]),
    ("non-root-false-pod", pod(container(runAsNonRoot=None), securityContext={"runAsNonRoot": False}), "baseline",
     ["runAsNonRoot"]),
    ("non-root-false-container", pod(container(runAsNonRoot=False), securityContext=POD_LEVEL), "baseline",
     ["runAsNonRoot"]),
    ("non-root-unset-one-container", pod(container(), container("second", runAsNonRoot=None)), "baseline",
     ["runAsNonRoot"]),
    ("run-as-root", pod(container(runAsUser=0)), "baseline", ["runAsUser"]),
    ("run-as-root-pod", pod(securityContext={"runAsUser": 0}), "baseline", ["runAsUser"]),
    ("run-as-user-1000", pod(container(runAsUser=1000)), "restricted", []),
    ("seccomp-unset", pod(container(seccompProfile=None)), "baseline", ["seccompProfile_restricted"]),
    ("seccomp-localhost", pod(container(seccompProfile={"type": "Localhost", "localhostProfile": "kf.json"})),
     "restricted", []),
    ("user-namespace", pod(container(runAsNonRoot=None, runAsUser=0), hostUsers=False), "restricted", []),
    ("unmasked-proc", pod(container(procMount="Unmasked")), "privileged", ["procMount"]),
    ("user-namespace-unmasked-proc", pod(container(procMount="Unmasked"), hostUsers=False), "baseline",
     ["procMount_restricted"]),
    ("windows", pod(dict(WINDOWS, securityContext={"runAsNonRoot": True}), os={"name": "windows"}), "restricted",
     []),
    ("windows-root-allowed", pod(WINDOWS, os={"name": "windows"}), "baseline", ["runAsNonRoot"]),
    # ephemeral containers are added to a running pod (the ephemeralcontainers subresource)
    ("ephemeral-bare", pod(ephemeralContainers=[dict(BARE, name="debug")]), "baseline",
     ["allowPrivilegeEscalation", "capabilities_restricted", "runAsNonRoot", "seccompProfile_restricted"]),
    ("ephemeral-privileged", pod(ephemeralContainers=[dict(BARE, name="debug", securityContext={
        "privileged": True})]), "privileged", ["privileged"]),
]

# Rows the API server's validation refuses before admission, in every namespace: the check they
# exercise cannot refuse a pod there, but the function follows it all the same.
INVALID = {"unmasked-proc": "`hostUsers` must be false to use `Unmasked`"}


def rows():
    return copy.deepcopy(ROWS)
