"""The local control plane: etcd, kube-apiserver and kube-controller-manager on loopback; with
workloads, also kube-scheduler and kwok (simulated nodes), so that Pods are admitted, scheduled
and reported Running.

The binaries are built from their Go modules (hack/kube/go.mod, hack/etcd/go.mod) and
cached by version under ~/.cache/kfocp/bin/. Nothing is downloaded but Go modules.

    python hack/cluster.py build                 # build (or reuse) the binaries
    python hack/cluster.py build --judges        # ... and OpenShift's CRDs and judges (hack/openshift)
    python hack/cluster.py up [--dir DIR]        # start, install CRDs and OpenShift built-ins
    python hack/cluster.py up --workloads        # ... and run Pods on two simulated worker nodes
    python hack/cluster.py down [--dir DIR]      # stop, leave no process behind
    python hack/cluster.py status [--dir DIR]
    python hack/cluster.py kubeconfig --user alice --group devs --out alice.kubeconfig
    python hack/cluster.py kubeconfig --serviceaccount kfocp-system:kfocp-operator --out sa.kubeconfig

The module is also imported by the tests (ControlPlane).
"""
from __future__ import annotations

import argparse
import base64
import contextlib
import datetime
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

HACK = Path(__file__).resolve().parent
ROOT = HACK.parent
CRD_DIR = HACK / "crds"
SEED_DIR = HACK / "seed"
DEFAULT_DIR = Path(os.environ.get("KFOCP_CLUSTER_DIR", ROOT / ".cluster"))

# The kube-controller-manager controllers the tests rely on: namespace deletion, garbage
# collection (ownerReferences), service accounts and their tokens, quota usage, RBAC aggregation,
# and the protection of volumes and claims, which lifts the finalizer the API server's
# StorageObjectInUseProtection admission puts on each one once no pod uses it (without it a
# namespace with a PersistentVolumeClaim, such as Kubeflow's, is never deleted).
CONTROLLERS = ",".join([
    "namespace-controller", "garbage-collector-controller", "serviceaccount-controller",
    "serviceaccount-token-controller", "resourcequota-controller", "root-ca-certificate-publisher-controller",
    "clusterrole-aggregation-controller", "persistentvolumeclaim-protection-controller",
    "persistentvolume-protection-controller",
])

# With workloads on, the controllers that turn Deployments, StatefulSets, DaemonSets and Jobs into
# Pods, and Services into EndpointSlices; and node lifecycle, which lifts the not-ready taint the
# API server puts on a new node once kwok reports it Ready.
WORKLOAD_CONTROLLERS = ",".join([
    "deployment-controller", "replicaset-controller", "statefulset-controller", "daemonset-controller",
    "job-controller", "cronjob-controller", "endpoints-controller", "endpointslice-controller",
    "endpointslice-mirroring-controller", "disruption-controller", "pod-garbage-collector-controller",
    "ttl-after-finished-controller", "node-lifecycle-controller",
])
# kwok manages the nodes that carry this annotation: it plays their kubelets.
KWOK_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")
# kwok's "fast" stages (its default stage set): nodes become Ready and keep a lease, pods become
# Running (and Succeeded for Jobs), deleted pods go away.
KWOK_STAGES = ("node/fast/node-initialize.yaml", "node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
               "pod/fast/pod-ready.yaml", "pod/fast/pod-complete.yaml", "pod/fast/pod-delete.yaml")
# A worker node's capacity, like a small cloud VM.
WORKER_CAPACITY = {"cpu": "8", "memory": "32Gi", "pods": "110"}

# Admission: the default-on set plus PodTolerationRestriction, which OpenShift also runs and
# which the per-namespace toleration policies rely on.
ADMISSION = "PodTolerationRestriction"


class ClusterError(RuntimeError):
    """A control plane step failed; the message says which and why."""


# ---------------------------------------------------------------- build and cache

def cache_root() -> Path:
    base = os.environ.get("KFOCP_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kfocp")
    return Path(base) / "bin"


def module_version(gomod: Path, module: str) -> str:
    match = re.search(rf"^\s*(?:require\s+)?{re.escape(module)}\s+(v\S+)", gomod.read_text(), re.M)
    if not match:
        raise ClusterError(f"{gomod}: no require line for {module}")
    return match.group(1)


def kube_version() -> str:
    return module_version(HACK / "kube" / "go.mod", "k8s.io/kubernetes")


def etcd_version() -> str:
    return module_version(HACK / "etcd" / "go.mod", "go.etcd.io/etcd/server/v3")


def _ldflags(version: str) -> str:
    major, minor = version.lstrip("v").split(".")[:2]
    stamp = {"gitVersion": version, "gitMajor": major, "gitMinor": minor,
             "gitTreeState": "clean", "buildDate": "1970-01-01T00:00:00Z"}
    flags = ["-s", "-w"]
    for pkg in ("k8s.io/component-base/version", "k8s.io/client-go/pkg/version"):
        flags += [f"-X {pkg}.{key}={value}" for key, value in stamp.items()]
    return " ".join(flags)


@contextlib.contextmanager
def _lock(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def go_build(module_dir: Path, packages: dict[str, str], dest: Path, ldflags: str = "-s -w") -> Path:
    """Build `packages` ({binary: import path}) of the Go module in `module_dir` into `dest`.

    Reuses `dest` when every binary is there. Builds into a temporary directory and renames it,
    so an interrupted build never leaves a half-filled cache entry.
    """
    if all((dest / name).exists() for name in packages):
        return dest
    if not shutil.which("go"):
        raise ClusterError("go is not on PATH: the control plane is built from Go modules")
    with _lock(dest.parent / f".{dest.name}.lock"):
        if all((dest / name).exists() for name in packages):
            return dest
        tmp = dest.parent / f".{dest.name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        env = dict(os.environ, CGO_ENABLED="0", GOFLAGS="-mod=readonly -buildvcs=false")
        # binaries named as their packages are built by one `go build`, which compiles the packages
        # they share once and keeps both cores busy until the last link
        together = [p for n, p in packages.items() if len(packages) > 1 and n == p.rstrip("/").rsplit("/", 1)[-1]]
        steps = [(" ".join(packages), together, str(tmp) + os.sep)] if len(together) == len(packages) else [
            (name, [package], str(tmp / name)) for name, package in packages.items()]
        for names, targets, out in steps:
            print(f"building {names} from {' '.join(targets)} ({module_dir.name}/go.mod)", file=sys.stderr, flush=True)
            cmd = ["nice", "-n", "10", "go", "build", "-trimpath", "-ldflags", ldflags, "-o", out, *targets]
            proc = subprocess.run(cmd, cwd=module_dir, env=env, capture_output=True, text=True, check=False)
            if proc.returncode:
                raise ClusterError(f"build of {names} failed: {' '.join(cmd)} (in {module_dir})\n{proc.stderr[-4000:]}")
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    return dest


# Tools built from a module of kfocp's whose go.mod names the tool (a `tool` line) at its version,
# with the modules it shares with hack/kube (the Kubernetes client libraries among them) at
# hack/kube's versions: the Go build cache then compiles those libraries once for both.
# kwok plays the kubelets of the workload nodes.
KWOK_MODULE = HACK / "kwok"
KWOK = ("sigs.k8s.io/kwok/cmd/kwok", module_version(KWOK_MODULE / "go.mod", "sigs.k8s.io/kwok"))
# cyclonus evaluates NetworkPolicies for given pods and traffic (the request path tests use it).
CYCLONUS_MODULE = HACK / "cyclonus"
CYCLONUS = ("github.com/mattfenwick/cyclonus/cmd/cyclonus",
            module_version(CYCLONUS_MODULE / "go.mod", "github.com/mattfenwick/cyclonus"))
# istioctl's analyzers check the mesh wiring the roles write (istio.io/istio publishes no module
# tags, so the proxy serves it by pseudo-version, the one hack/istio/go.mod pins for the istio-authz
# judge too). A large build: minutes of CPU, cached.
ISTIOCTL = ("istio.io/istio/istioctl/cmd/istioctl", module_version(HACK / "istio" / "go.mod", "istio.io/istio"))


def go_install(package: str, version: str, dest: Path) -> Path:
    """`go install package@version` into `dest` (cached: reused when the binary is there)."""
    name = package.rstrip("/").rsplit("/", 1)[-1]
    if (dest / name).exists():
        return dest / name
    if not shutil.which("go"):
        raise ClusterError(f"go is not on PATH: {name} is built from its Go module")
    with _lock(dest.parent / f".{dest.name}.lock"):
        if (dest / name).exists():
            return dest / name
        tmp = dest.parent / f".{dest.name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        print(f"building {name} from {package}@{version}", file=sys.stderr, flush=True)
        env = dict(os.environ, CGO_ENABLED="0", GOBIN=str(tmp), GOFLAGS="-buildvcs=false")
        cmd = ["nice", "-n", "10", "go", "install", "-trimpath", "-ldflags", "-s -w", f"{package}@{version}"]
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        if proc.returncode:
            raise ClusterError(f"build of {name} failed: {' '.join(cmd)}\n{proc.stderr[-4000:]}")
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    return dest / name


def build_cyclonus() -> Path:
    """Build or reuse cyclonus, which the tests ask whether NetworkPolicies admit given traffic
    (a judge: built by `build --judges`, not for the demo)."""
    return _build_tool(CYCLONUS_MODULE, CYCLONUS[0], "cyclonus")


def _build_tool(module_dir: Path, package: str, name: str) -> Path:
    """Build or reuse the tool `package` of the module in `module_dir` (cached by the digest of its
    go.mod and go.sum)."""
    digest = _digest("".join((module_dir / f).read_text() for f in ("go.mod", "go.sum")))
    return go_build(module_dir, {name: package}, cache_root() / f"{name}-{digest}") / name


def build_istioctl() -> Path:
    """Build or reuse istioctl (for `istioctl analyze` against the live control plane)."""
    return go_install(ISTIOCTL[0], ISTIOCTL[1], cache_root() / f"istioctl-{ISTIOCTL[1][-12:]}")


def kwok_stages(dest: Path) -> Path:
    """kwok's stage configuration, taken from its module (the same version as the binary)."""
    path = dest / "stages.yaml"
    if path.exists():
        return path
    proc = subprocess.run(["go", "mod", "download", "-json", f"{KWOK[0].split('/cmd/', maxsplit=1)[0]}@{KWOK[1]}"],
                          capture_output=True, text=True, check=False, cwd=HACK)
    if proc.returncode:
        raise ClusterError(f"cannot download kwok {KWOK[1]}'s module for its stages: {proc.stderr[-2000:]}")
    module = Path(json.loads(proc.stdout)["Dir"])
    docs = [(module / "kustomize" / "stage" / name).read_text() for name in KWOK_STAGES]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n---\n".join(doc.strip() for doc in docs) + "\n")
    tmp.rename(path)
    return path


# OpenShift's own code, pinned in hack/openshift/go.mod: the CRD manifests its modules ship (in
# place of hand-written ones), and the programs that judge kfocp's objects with OpenShift's code
# (tests/judges.py): oauth-proxy's --openshift-sar as openshift-apiserver reads it, and the
# admission checks of cluster-autoscaler-operator and machine-api-operator.
OPENSHIFT = HACK / "openshift"
OPENSHIFT_CRDS = {
    "github.com/openshift/api": (
        "security/v1/zz_generated.crd-manifests/0000_03_config-operator_01_securitycontextconstraints.crd.yaml",
        "route/v1/zz_generated.crd-manifests/routes.crd.yaml",
        "machine/v1beta1/zz_generated.crd-manifests/0000_10_machine-api_01_machinesets-Default.crd.yaml",
        "config/v1/zz_generated.crd-manifests/0000_00_cluster-version-operator_01_clusterversions-Default.crd.yaml",
        # the data lake reads the service account issuer and the credentials mode
        "config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_authentications-Default.crd.yaml",
        "operator/v1/zz_generated.crd-manifests/0000_40_cloud-credential_00_cloudcredentials.crd.yaml",
    ),
    "github.com/openshift/cluster-autoscaler-operator": (
        "install/01_clusterautoscaler.crd.yaml",
        "install/02_machineautoscaler.crd.yaml",
    ),
}
JUDGES = {"openshift-sar": "./cmd/openshift-sar", "cao-judge": "./cmd/cao-judge", "mao-judge": "./cmd/mao-judge"}


def _module_dir(module: str, version: str) -> Path:
    """The directory of `module`@`version` in the Go module cache (downloaded when missing)."""
    proc = subprocess.run(["go", "mod", "download", "-json", f"{module}@{version}"],
                          capture_output=True, text=True, check=False, cwd=OPENSHIFT)
    if proc.returncode:
        raise ClusterError(f"cannot download {module}@{version}: {(proc.stdout + proc.stderr)[-2000:]}")
    return Path(json.loads(proc.stdout)["Dir"])


def openshift_crds() -> list[Path]:
    """OpenShift's CRD manifests, copied from their modules (the versions of hack/openshift/go.mod)
    into the cache."""
    gomod = OPENSHIFT / "go.mod"
    versions = {module: module_version(gomod, module) for module in OPENSHIFT_CRDS}
    dest = cache_root() / ("openshift-crds-" + _digest("".join(f"{m}@{v}" for m, v in sorted(versions.items()))))
    files = [dest / Path(path).name for paths in OPENSHIFT_CRDS.values() for path in paths]
    if all(path.exists() for path in files):
        return files
    with _lock(dest.parent / f".{dest.name}.lock"):
        if not all(path.exists() for path in files):
            tmp = dest.parent / f".{dest.name}.tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
            for module, paths in OPENSHIFT_CRDS.items():
                source = _module_dir(module, versions[module])
                for path in paths:
                    shutil.copyfile(source / path, tmp / Path(path).name)
            shutil.rmtree(dest, ignore_errors=True)
            tmp.rename(dest)
    return files


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


# Istio's own code, pinned in hack/istio/go.mod at the version istioctl is built from: the judge of
# what the request path tests decide with plugins/module_utils/authz.py (tests/judges.py istio_authz):
# the Envoy RBAC filters istiod gives a sidecar for the AuthorizationPolicies a cluster holds.
ISTIO = HACK / "istio"
ISTIO_JUDGES = {"istio-authz": "./cmd/istio-authz"}


def build_istio_judge() -> Path:
    """Build or reuse istio-authz (cached by the digest of hack/istio's go.mod, go.sum and sources).
    Shares istioctl's module and much of its build cache; minutes of CPU on a cold cache."""
    sources = sorted([ISTIO / "go.mod", ISTIO / "go.sum", *ISTIO.glob("cmd/*/*.go")])
    digest = _digest("".join(path.read_text() for path in sources))
    return go_build(ISTIO, ISTIO_JUDGES, cache_root() / f"istio-judges-{digest}") / "istio-authz"


def build_judges() -> dict[str, Path]:
    """Build or reuse the judges of hack/openshift (cached by the digest of its go.mod and sources)."""
    sources = sorted([OPENSHIFT / "go.mod", OPENSHIFT / "go.sum", *OPENSHIFT.glob("cmd/*/*.go")])
    digest = _digest("".join(path.read_text() for path in sources))
    dest = go_build(OPENSHIFT, JUDGES, cache_root() / f"openshift-judges-{digest}")
    return {name: dest / name for name in JUDGES}


KUBE = ("kube-apiserver", "kube-controller-manager", "kubectl", "kube-scheduler")
WORKLOADS = ("kube-scheduler", "kwok", "kwok-stages")


def build(workloads: bool = False) -> dict[str, Path]:
    """Build or reuse every control plane binary, and with `workloads` kwok too; return {name: path}.

    The Kubernetes binaries (kube-scheduler among them) come from one `go build`, and etcd and kwok
    build beside it: on a cold cache the three run at once."""
    kv, ev = kube_version(), etcd_version()
    with ThreadPoolExecutor(max_workers=3) as pool:
        kube = pool.submit(go_build, HACK / "kube", dict((name, "k8s.io/kubernetes/cmd/" + name) for name in KUBE),
                           cache_root() / f"kube-{kv}", _ldflags(kv))
        etcd = pool.submit(go_build, HACK / "etcd", {"etcd": "."}, cache_root() / f"etcd-{ev}")
        kwok = pool.submit(_build_tool, KWOK_MODULE, KWOK[0], "kwok") if workloads else None
        built = dict((name, kube.result() / name) for name in KUBE)
        built["etcd"] = etcd.result() / "etcd"
        if kwok:
            built.update(kwok=kwok.result(), **{"kwok-stages": kwok_stages(kwok.result().parent)})
    return built if workloads else dict((name, path) for name, path in built.items() if name not in WORKLOADS)


# ---------------------------------------------------------------- certificates

def _key():
    return ec.generate_private_key(ec.SECP256R1())


def _pem_key(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert(subject_cn, key, issuer=None, issuer_key=None, orgs=(), ca=False, server_names=(), server_ips=(),
          client=False):
    now = datetime.datetime.now(datetime.timezone.utc)
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, org) for org in orgs]
    name = x509.Name(attrs + [x509.NameAttribute(NameOID.COMMON_NAME, subject_cn)])
    builder = (x509.CertificateBuilder().subject_name(name)
               .issuer_name(issuer.subject if issuer else name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=365))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(True, False, False, False, False, True, True, False, False), True)
    else:
        usages = [x509.ExtendedKeyUsageOID.CLIENT_AUTH] if client else [x509.ExtendedKeyUsageOID.SERVER_AUTH]
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    if server_names or server_ips:
        import ipaddress
        alt = [x509.DNSName(n) for n in server_names] + [x509.IPAddress(ipaddress.ip_address(i)) for i in server_ips]
        builder = builder.add_extension(x509.SubjectAlternativeName(alt), critical=False)
    return builder.sign(issuer_key or key, hashes.SHA256())


def serving_certificate(*names: str) -> tuple[bytes, bytes, bytes]:
    """A CA of its own and a serving certificate for the DNS `names` it signed: (CA certificate,
    certificate, key), PEM. For a loopback server that the API server calls, e.g. a webhook
    `<service>.<namespace>.svc` with the CA as its caBundle."""
    ca_key, key = _key(), _key()
    ca = _cert("kfocp-local-serving-ca", ca_key, ca=True)
    cert = _cert(names[0], key, ca, ca_key, server_names=names)
    return _pem_cert(ca), _pem_cert(cert), _pem_key(key)


def _pem_cert(cert) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _write(path: Path, data: bytes, mode=0o600):
    path.write_bytes(data)
    path.chmod(mode)


# How many times up() starts the components on new ports when one finds its port taken.
PORT_ATTEMPTS = 3
# The processes up() starts, each logging to <name>.log in the plane's directory.
COMPONENTS = ("etcd", "egress", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def log_sizes(paths) -> dict:
    """{path: its size now} of the log files among `paths` that exist: where an attempt's lines start."""
    return dict((Path(p), Path(p).stat().st_size) for p in paths if Path(p).exists())


def port_taken(path: Path, since: int = 0) -> bool:
    """Whether what the log `path` got after byte `since` says a port was already in use (EADDRINUSE:
    Go and Python both print "address already in use"). A port free when chosen can be taken
    before the process binds it, by any outgoing connection, which draws from the same range."""
    try:
        with open(path, "rb") as log:
            log.seek(since)
            return b"address already in use" in log.read().lower()
    except FileNotFoundError:
        return False


# ---------------------------------------------------------------- the control plane

class ControlPlane:
    """One etcd + kube-apiserver + kube-controller-manager, state kept in `directory`."""

    def __init__(self, directory: Path | str = DEFAULT_DIR):
        self.dir = Path(directory).resolve()
        self.state_file = self.dir / "state.json"

    # -- state
    def state(self) -> dict:
        try:
            return json.loads(self.state_file.read_text())
        except FileNotFoundError:
            return {}

    @property
    def kubeconfig(self) -> Path:
        return self.dir / "admin.kubeconfig"

    @property
    def server(self) -> str:
        return self.state()["server"]

    def running(self) -> bool:
        pids = self.state().get("pids", {})
        return bool(pids) and all(_alive(pid) for pid in pids.values())

    # -- lifecycle
    @property
    def audit_log(self) -> Path:
        """The API server's audit log (JSON lines), written when up() was given an audit policy."""
        return self.dir / "audit.log"

    def up(self, install: bool = True, timeout: float = 120, audit_policy: dict | None = None,
           workloads: bool = False) -> "ControlPlane":
        """Start (or reuse) the control plane. `audit_policy` (an audit.k8s.io/v1 Policy) turns on
        the API server's audit log, `audit_log`; it is off by default.

        `workloads` also runs Pods: the workload controllers in the controller manager,
        kube-scheduler, and kwok, which plays the kubelets of the nodes add_nodes() creates
        (none at first). It costs a few seconds and a little CPU, so it is off by default."""
        if self.running() and (self.state().get("workloads", False) or not workloads):
            return self  # one that runs workloads serves those that do not need them too
        self.down(quiet=True)
        bins = build(workloads=workloads)
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "etcd").mkdir(exist_ok=True)
        logs = [self.dir / f"{name}.log" for name in COMPONENTS]
        for attempt in range(1, PORT_ATTEMPTS + 1):
            before = log_sizes(logs)
            try:
                self._launch(bins, workloads, timeout, audit_policy)
                break
            except ClusterError:
                # a component found its port taken (see port_taken): start again on new ports
                if attempt == PORT_ATTEMPTS or not any(port_taken(log, before.get(log, 0)) for log in logs):
                    raise
                self.down(quiet=True)
        if install:
            self.install()
        return self

    def _launch(self, bins: dict, workloads: bool, timeout: float, audit_policy: dict | None) -> None:
        """Start every component on ports chosen now, and wait until each is ready."""
        ports = {"etcd": free_port(), "peer": free_port(), "apiserver": free_port(), "kcm": free_port(),
                 "egress": free_port()}
        if workloads:
            ports.update(scheduler=free_port(), kwok=free_port())
        self._certs()
        self._egress_certs()
        server = f"https://127.0.0.1:{ports['apiserver']}"
        state = {"server": server, "ports": ports, "pids": {}, "bins": {k: str(v) for k, v in bins.items()},
                 "workloads": workloads}
        self.state_file.write_text(json.dumps(state, indent=2))
        etcd_url = f"http://127.0.0.1:{ports['etcd']}"
        peer_url = f"http://127.0.0.1:{ports['peer']}"
        d = self.dir
        self._start(state, "etcd", [
            bins["etcd"], f"--data-dir={d / 'etcd'}", "--name=kfocp",
            f"--listen-client-urls={etcd_url}", f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls={peer_url}", f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=kfocp={peer_url}", "--unsafe-no-fsync=true", "--log-level=warn",
            "--quota-backend-bytes=8589934592"])
        self._wait(f"{etcd_url}/health", "etcd", timeout, tls=False)
        self._start_egress(state, server, timeout)
        self._start(state, "kube-apiserver", [
            bins["kube-apiserver"], f"--etcd-servers={etcd_url}",
            "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", f"--secure-port={ports['apiserver']}",
            f"--cert-dir={d}", f"--tls-cert-file={d / 'apiserver.crt'}", f"--tls-private-key-file={d / 'apiserver.key'}",
            f"--client-ca-file={d / 'ca.crt'}", "--authorization-mode=RBAC",
            f"--service-account-issuer={server}", f"--service-account-key-file={d / 'sa.pub'}",
            f"--service-account-signing-key-file={d / 'sa.key'}", "--service-cluster-ip-range=10.0.0.0/24",
            f"--enable-admission-plugins={ADMISSION}", "--endpoint-reconciler-type=none",
            "--allow-privileged=true", "--profiling=false", "--event-ttl=1h", "--v=0",
            f"--egress-selector-config-file={self._egress_selector(ports['egress'])}",
            *self._audit_flags(audit_policy)])
        self._wait(f"{server}/readyz", "kube-apiserver", timeout)
        self._start(state, "kube-controller-manager", [
            bins["kube-controller-manager"], f"--kubeconfig={d / 'kcm.kubeconfig'}",
            "--bind-address=127.0.0.1", f"--secure-port={ports['kcm']}", "--leader-elect=false",
            f"--controllers={CONTROLLERS + (',' + WORKLOAD_CONTROLLERS if workloads else '')}",
            f"--service-account-private-key-file={d / 'sa.key'}",
            f"--root-ca-file={d / 'ca.crt'}", "--use-service-account-credentials=true",
            f"--authentication-kubeconfig={d / 'kcm.kubeconfig'}", f"--authorization-kubeconfig={d / 'kcm.kubeconfig'}",
            "--concurrent-namespace-syncs=10", "--concurrent-gc-syncs=20", "--v=0"])
        # KCM serves a self-signed certificate on loopback; its /healthz needs no credentials.
        self._wait(f"https://127.0.0.1:{ports['kcm']}/healthz", "kube-controller-manager", timeout, tls=None)
        self.write_kubeconfig(self.kubeconfig, "kfocp-admin", ["system:masters"])
        if workloads:
            self._start_workloads(state, bins, timeout)

    def _start_workloads(self, state: dict, bins: dict, timeout: float) -> None:
        d, ports = self.dir, state["ports"]
        self._start(state, "kube-scheduler", [
            bins["kube-scheduler"], f"--kubeconfig={d / 'scheduler.kubeconfig'}",
            f"--authentication-kubeconfig={d / 'scheduler.kubeconfig'}",
            f"--authorization-kubeconfig={d / 'scheduler.kubeconfig'}",
            "--bind-address=127.0.0.1", f"--secure-port={ports['scheduler']}", "--leader-elect=false", "--v=0"])
        self._wait(f"https://127.0.0.1:{ports['scheduler']}/healthz", "kube-scheduler", timeout, tls=None)
        annotation = "=".join(KWOK_NODE_ANNOTATION)
        self._start(state, "kwok", [
            bins["kwok"], f"--kubeconfig={self.kubeconfig}", f"--config={bins['kwok-stages']}",
            "--manage-all-nodes=false", f"--manage-nodes-with-annotation-selector={annotation}",
            "--cidr=10.128.0.0/14", "--node-ip=10.0.1.1", f"--server-address=127.0.0.1:{ports['kwok']}",
            # the nodes' leases: node lifecycle marks a node whose lease is not renewed NotReady
            # (and its pods not Ready); without the flag kwok keeps none
            "--node-lease-duration-seconds=40"])
        self._wait(f"http://127.0.0.1:{ports['kwok']}/healthz", "kwok", timeout, tls=False)

    # -- simulated nodes (workloads=True)
    def add_nodes(self, nodes: list[dict]) -> list[str]:
        """Create simulated nodes, played by kwok: each {name, labels, taints, capacity}.
        Returns their names once every one is Ready."""
        if not self.state().get("workloads"):
            raise ClusterError("add_nodes needs a control plane started with workloads=True")
        items = [node_object(**node) for node in nodes]
        self.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        names = [item["metadata"]["name"] for item in items]
        self.wait_nodes_ready(names)
        return names

    def add_workers(self, count: int = 2, prefix: str = "worker") -> list[str]:
        """`count` plain worker nodes (no taints)."""
        return self.add_nodes([{"name": f"{prefix}-{index}", "labels": {"node-role.kubernetes.io/worker": ""}}
                               for index in range(count)])

    def add_machineset_nodes(self, namespace: str = "openshift-machine-api", at_least: int = 1) -> list[str]:
        """Nodes for every MachineSet in `namespace`, as the machine API would make them: the
        template's node labels and taints, and nvidia.com/gpu capacity from the MachineSet's
        machine.openshift.io/GPU annotation (the one the autoscaler reads; 1 when absent and the
        node carries the cluster-api/accelerator label). At least `at_least` nodes per MachineSet,
        so that an autoscaled MachineSet at zero replicas still shows where its pods would land."""
        out = self.kubectl("get", "machinesets.machine.openshift.io", "-n", namespace, "-o", "json")
        nodes = []
        for ms in json.loads(out.stdout)["items"]:
            nodes += machineset_nodes(ms, at_least)
        return self.add_nodes(nodes) if nodes else []

    def wait_nodes_ready(self, names: list[str], timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            items = self.request("GET", f"{self.server}/api/v1/nodes")["items"]
            # Ready, and the not-ready taint the API server put on the new node lifted by node lifecycle
            ready = {n["metadata"]["name"] for n in items if any(
                c.get("type") == "Ready" and c.get("status") == "True" for c in n.get("status", {}).get("conditions") or [])
                and not any(t.get("key") == "node.kubernetes.io/not-ready" for t in n["spec"].get("taints") or [])}
            pending = sorted(set(names) - ready)
            if not pending:
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"nodes not Ready after {timeout:.0f}s (is kwok running? see "
                                   f"{self.dir / 'kwok.log'}): {', '.join(pending)}")
            time.sleep(0.2)

    def down(self, quiet: bool = False) -> None:
        """Stop every process this directory started: SIGTERM, then SIGKILL after 10 s."""
        state = self.state()
        pids = state.get("pids", {})
        for name in reversed(list(pids)):
            _stop(pids[name])
        if pids:
            state["pids"] = {}
            self.state_file.write_text(json.dumps(state, indent=2))
        elif not quiet:
            print(f"no control plane running in {self.dir}", file=sys.stderr)

    def kill(self, name: str, sig: int = signal.SIGKILL) -> None:
        """Send `sig` to one component (for fault tests): the state keeps how to start it again."""
        pid = self.state()["pids"].get(name)
        if pid and _alive(pid):
            os.killpg(pid, sig)
            deadline = time.monotonic() + 10
            while _alive(pid) and time.monotonic() < deadline:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
                time.sleep(0.05)

    def restart(self, name: str, timeout: float = 60) -> None:
        """Start one component again with the command it was started with, and wait until it is ready."""
        state = self.state()
        self.kill(name, signal.SIGTERM)
        self._start(state, name, state["cmds"][name])
        if name == "kube-apiserver":
            self._wait(f"{state['server']}/readyz", name, timeout)
        elif name == "etcd":
            self._wait(f"http://127.0.0.1:{state['ports']['etcd']}/health", name, timeout, tls=False)

    def destroy(self) -> None:
        self.down(quiet=True)
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- what the API server dials (hack/egress.py)
    @property
    def egress_services(self) -> Path:
        """The Services the egress proxy reaches on loopback: {"namespace/name:port": loopback port}."""
        return self.dir / "egress-services.json"

    @property
    def egress_events_file(self) -> Path:
        return self.dir / "egress-events.jsonl"

    def serve_service(self, namespace: str, name: str, port: int, loopback_port: int) -> None:
        """Have the API server's calls to the Service namespace/name on `port` (a webhook's
        clientConfig.service, an APIService's service) reach 127.0.0.1:`loopback_port`. Calls to a
        Service not registered here are refused by the egress proxy, as when no pod backs it."""
        self._set_service(f"{namespace}/{name}:{int(port)}", int(loopback_port))

    def stop_serving(self, namespace: str, name: str, port: int) -> None:
        """Forget a Service registered with serve_service: calls to it are refused again."""
        self._set_service(f"{namespace}/{name}:{int(port)}", None)

    def _set_service(self, key: str, loopback_port: int | None) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        with _lock(self.dir / ".egress-services.lock"):
            try:
                services = json.loads(self.egress_services.read_text())
            except FileNotFoundError:
                services = {}
            if loopback_port is None:
                services.pop(key, None)
            else:
                services[key] = loopback_port
            tmp = self.egress_services.with_suffix(".tmp")
            tmp.write_text(json.dumps(services, indent=2, sort_keys=True))
            tmp.rename(self.egress_services)

    def egress_events(self) -> list[dict]:
        """Every CONNECT the egress proxy answered: {target, outcome (served, refused, failed),
        meant_for (the Service key, or who holds a refused address), to}."""
        try:
            lines = self.egress_events_file.read_text().splitlines()
        except FileNotFoundError:
            return []
        return [json.loads(line) for line in lines if line.strip()]

    # -- CRDs and OpenShift built-ins
    def crd_files(self, mesh_flavour: str = "ossm2") -> list[Path]:
        files = openshift_crds() + sorted(CRD_DIR.glob("*.yaml"))
        if mesh_flavour in ("ossm2", "istio"):
            files += sorted((CRD_DIR / mesh_flavour).glob("*.yaml"))
        return files

    def install(self, mesh_flavour: str = "ossm2") -> None:
        """Install the CRDs the roles write to and seed the built-in SCCs and their ClusterRoles."""
        files = self.crd_files(mesh_flavour)
        if files:
            # kubectl applies one object after the other: four of them at once take a third of the time
            chunks = [files[start::4] for start in range(min(4, len(files)))]
            with ThreadPoolExecutor(len(chunks)) as pool:
                list(pool.map(lambda chunk: self.kubectl(
                    "apply", "--server-side", "--field-manager=cluster-bootstrap",
                    *[arg for path in chunk for arg in ("-f", str(path))]), chunks))
            self.wait_established()
        seeds = sorted(SEED_DIR.glob("*.yaml"))
        if seeds:
            args = []
            for path in seeds:
                args += ["-f", str(path)]
            self.kubectl("apply", "--server-side", "--field-manager=cluster-bootstrap", *args)

    def kubectl(self, *args: str, check: bool = True, input: str | None = None) -> subprocess.CompletedProcess:
        cmd = [self.state()["bins"]["kubectl"], f"--kubeconfig={self.kubeconfig}", *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, input=input, check=False)
        if check and proc.returncode:
            raise ClusterError(f"kubectl {' '.join(args[:4])} failed: {proc.stderr.strip()[-2000:]}")
        return proc

    # -- credentials
    def write_kubeconfig(self, path: Path, user: str, groups=(), token: str | None = None) -> Path:
        """Write a kubeconfig for `user` (a client certificate with `groups`), or for a bearer `token`."""
        d = self.dir
        if token is None:
            ca_key = serialization.load_pem_private_key((d / "ca.key").read_bytes(), None)
            ca = x509.load_pem_x509_certificate((d / "ca.crt").read_bytes())
            key = _key()
            cert = _cert(user, key, ca, ca_key, orgs=groups, client=True)
            creds = {"client-certificate-data": _b64(_pem_cert(cert)), "client-key-data": _b64(_pem_key(key))}
        else:
            creds = {"token": token}
        config = {
            "apiVersion": "v1", "kind": "Config", "current-context": "kfocp",
            "clusters": [{"name": "kfocp", "cluster": {
                "server": self.server, "certificate-authority-data": _b64((d / "ca.crt").read_bytes())}}],
            "users": [{"name": user, "user": creds}],
            "contexts": [{"name": "kfocp", "context": {"cluster": "kfocp", "user": user}}],
        }
        path = Path(path)
        _write(path, json.dumps(config, indent=2).encode())
        return path

    def serviceaccount_token(self, namespace: str, name: str, seconds: int = 3600) -> str:
        """A bound token for namespace/name, from the TokenRequest API (the service account must exist)."""
        body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": seconds}}
        url = f"{self.server}/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"
        return self.request("POST", url, body)["status"]["token"]

    def request(self, method: str, url: str, body: dict | None = None) -> dict:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, context=self._admin_tls(), timeout=30) as resp:
                return json.loads(resp.read() or b"{}")
        except urllib.error.HTTPError as err:
            raise ClusterError(f"{method} {url}: {err.code} {err.read().decode(errors='replace')[:500]}") from None

    # -- internals
    def wait_established(self, *names: str, timeout: float = 60) -> None:
        """Wait until the named CRDs (every CRD when none is named) are Established.

        `kubectl wait` takes three seconds even when they are, and fails outright on a CRD
        whose status the API server has not written yet."""
        deadline = time.monotonic() + timeout
        while True:
            items = self.request("GET", f"{self.server}/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]
            established = {crd["metadata"]["name"] for crd in items if any(
                c.get("type") == "Established" and c.get("status") == "True"
                for c in (crd.get("status") or {}).get("conditions") or [])}
            wanted = set(names) or {crd["metadata"]["name"] for crd in items}
            pending = sorted(wanted - established)
            if not pending:
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"CRDs not Established after {timeout:.0f}s: {', '.join(pending[:10])}")
            time.sleep(0.1)

    def _certs(self) -> None:
        d = self.dir
        if (d / "ca.crt").exists():
            return
        ca_key = _key()
        ca = _cert("kfocp-local-ca", ca_key, ca=True)
        _write(d / "ca.key", _pem_key(ca_key))
        _write(d / "ca.crt", _pem_cert(ca), 0o644)
        key = _key()
        names = ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
                 "kubernetes.default.svc.cluster.local"]
        _write(d / "apiserver.key", _pem_key(key))
        serving = _cert("kube-apiserver", key, ca, ca_key, server_names=names, server_ips=["127.0.0.1", "10.0.0.1"])
        _write(d / "apiserver.crt", _pem_cert(serving), 0o644)
        sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        _write(d / "sa.key", sa_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                  serialization.NoEncryption()))
        _write(d / "sa.pub", sa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                              serialization.PublicFormat.SubjectPublicKeyInfo), 0o644)
        admin_key = _key()
        _write(d / "admin.key", _pem_key(admin_key))
        _write(d / "admin.crt", _pem_cert(_cert("kfocp-admin", admin_key, ca, ca_key, orgs=["system:masters"],
                                                client=True)))

    def _egress_certs(self) -> None:
        """The egress proxy's serving certificate (127.0.0.1) and the API server's client certificate
        for it, both signed by the plane's CA."""
        d = self.dir
        if (d / "egress-client.crt").exists():
            return
        ca_key = serialization.load_pem_private_key((d / "ca.key").read_bytes(), None)
        ca = x509.load_pem_x509_certificate((d / "ca.crt").read_bytes())
        for name, cert in (("egress-proxy", lambda key: _cert("kfocp-egress-proxy", key, ca, ca_key,
                                                              server_ips=["127.0.0.1"])),
                           ("egress-client", lambda key: _cert("kube-apiserver-egress", key, ca, ca_key,
                                                               client=True))):
            key = _key()
            _write(d / f"{name}.key", _pem_key(key))
            _write(d / f"{name}.crt", _pem_cert(cert(key)), 0o644)

    def _egress_selector(self, port: int) -> Path:
        """kube-apiserver's EgressSelectorConfiguration: what it dials toward the cluster (webhooks
        and CRD conversion with a `service`, aggregated APIs, kubelets for logs and exec, the proxy
        subresources) and toward the control plane (webhooks with a `url`) goes through the proxy."""
        d = self.dir
        connection = {"proxyProtocol": "HTTPConnect", "transport": {"tcp": {
            "url": f"https://127.0.0.1:{port}",
            "tlsConfig": {"caBundle": str(d / "ca.crt"), "clientCert": str(d / "egress-client.crt"),
                          "clientKey": str(d / "egress-client.key")}}}}
        config = {"apiVersion": "apiserver.k8s.io/v1beta1", "kind": "EgressSelectorConfiguration",
                  "egressSelections": [{"name": name, "connection": connection}
                                       for name in ("cluster", "controlplane")]}
        path = d / "egress-selector.json"
        path.write_text(json.dumps(config, indent=2))
        return path

    def _start_egress(self, state: dict, server: str, timeout: float) -> None:
        """The egress proxy; it also writes its events to $KFOCP_EGRESS_EVENTS when that is set
        (the tests' session collects every plane's there)."""
        d, port = self.dir, state["ports"]["egress"]
        self._start(state, "egress", [
            sys.executable, HACK / "egress.py", f"--listen=127.0.0.1:{port}",
            f"--cert={d / 'egress-proxy.crt'}", f"--key={d / 'egress-proxy.key'}", f"--ca={d / 'ca.crt'}",
            f"--server={server}", f"--client-cert={d / 'admin.crt'}", f"--client-key={d / 'admin.key'}",
            f"--services={self.egress_services}", f"--events={self.egress_events_file}",
            *[f"--events={path}" for path in [os.environ.get("KFOCP_EGRESS_EVENTS")] if path]])
        self._wait(f"https://127.0.0.1:{port}/healthz", "egress", timeout)

    def _audit_flags(self, policy: dict | None) -> list:
        if not policy:
            return []
        path = self.dir / "audit-policy.json"
        path.write_text(json.dumps(policy, indent=2))
        return [f"--audit-policy-file={path}", f"--audit-log-path={self.audit_log}", "--audit-log-format=json"]

    def _admin_tls(self) -> ssl.SSLContext:
        ctx = ssl.create_default_context(cafile=str(self.dir / "ca.crt"))
        ctx.load_cert_chain(str(self.dir / "admin.crt"), str(self.dir / "admin.key"))
        return ctx

    def _start(self, state: dict, name: str, cmd: list) -> None:
        if name == "kube-controller-manager":
            # KCM authenticates with its own well-known user, bound by the RBAC bootstrap policy.
            self.state_file.write_text(json.dumps(state, indent=2))
            self.write_kubeconfig(self.dir / "kcm.kubeconfig", "system:kube-controller-manager")
        elif name == "kube-scheduler":
            self.write_kubeconfig(self.dir / "scheduler.kubeconfig", "system:kube-scheduler")
        log = open(self.dir / f"{name}.log", "ab")
        proc = subprocess.Popen([str(c) for c in cmd], stdout=log, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        state["pids"][name] = proc.pid
        state.setdefault("cmds", {})[name] = [str(c) for c in cmd]
        self.state_file.write_text(json.dumps(state, indent=2))

    def _wait(self, url: str, name: str, timeout: float, tls: bool | None = True) -> None:
        """Poll `url` until 200. tls: True = verify with our CA and send the admin certificate,
        None = an unverified TLS probe, False = plain HTTP."""
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            pid = self.state()["pids"].get(name)
            if pid and not _alive(pid):
                raise ClusterError(f"{name} exited during start-up; last lines of {self.dir / (name + '.log')}:\n"
                                   + self.log_tail(name))
            try:
                context = self._admin_tls() if tls else (ssl._create_unverified_context() if tls is None else None)
                with urllib.request.urlopen(url, context=context, timeout=5) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, OSError, ssl.SSLError) as err:
                last = str(err)
            time.sleep(0.2)
        raise ClusterError(f"{name} not ready at {url} after {timeout:.0f}s ({last}); last lines of its log:\n"
                           + self.log_tail(name))

    def log_tail(self, name: str, lines: int = 30) -> str:
        try:
            return "\n".join((self.dir / f"{name}.log").read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"


def node_object(name: str, labels: dict | None = None, taints: list | None = None,
                capacity: dict | None = None) -> dict:
    """A Node that kwok manages, with its capacity (also its allocatable)."""
    resources = dict(WORKER_CAPACITY, **(capacity or {}))
    labels = dict({"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
                   "type": "kwok"}, **(labels or {}))
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "annotations": dict([KWOK_NODE_ANNOTATION])},
            "spec": {"taints": list(taints or [])},
            "status": {"capacity": resources, "allocatable": dict(resources)}}


def machineset_nodes(machineset: dict, at_least: int = 1) -> list[dict]:
    """The nodes (add_nodes() entries) the machine API would make for `machineset`."""
    meta, spec = machineset["metadata"], machineset.get("spec") or {}
    node = ((spec.get("template") or {}).get("spec") or {})
    labels = dict((node.get("metadata") or {}).get("labels") or {})
    labels.setdefault("node-role.kubernetes.io/worker", "")
    capacity = {}
    gpus = (meta.get("annotations") or {}).get("machine.openshift.io/GPU")
    if gpus or "cluster-api/accelerator" in labels:
        capacity["nvidia.com/gpu"] = str(gpus or 1)
    count = max(int(spec.get("replicas") or 0), at_least)
    return [{"name": f"{meta['name']}-{index}", "labels": labels, "taints": list(node.get("taints") or []),
             "capacity": capacity} for index in range(count)]


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours counts as gone
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ")[-1][:1] != "Z"
    except OSError:
        return True


def _stop(pid: int, grace: float = 10) -> None:
    if not _alive(pid):
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _alive(pid):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.1)
    if _alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


# ---------------------------------------------------------------- command line

def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default=str(DEFAULT_DIR), help="state directory (default %(default)s)")
    sub = parser.add_subparsers(dest="command", required=True)
    build_cmd = sub.add_parser("build", help="build or reuse the binaries and print their paths")
    build_cmd.add_argument("--workloads", action="store_true", help="also kube-scheduler and kwok")
    build_cmd.add_argument("--istioctl", action="store_true",
                           help="also istioctl and the istio-authz judge (long builds)")
    build_cmd.add_argument("--judges", action="store_true",
                           help="also OpenShift's CRDs and the judges built from OpenShift's code (hack/openshift)")
    up = sub.add_parser("up", help="start the control plane and install the CRDs and built-ins")
    up.add_argument("--no-install", action="store_true", help="start only; install no CRD")
    up.add_argument("--mesh", default="ossm2", choices=["ossm2", "istio"], help="which Istio CRD versions to serve")
    up.add_argument("--workloads", action="store_true",
                    help="also run Pods: workload controllers, kube-scheduler, kwok and two worker nodes")
    sub.add_parser("down", help="stop the control plane")
    sub.add_parser("destroy", help="stop and delete the state directory")
    sub.add_parser("status", help="say whether it runs, and where")
    kc = sub.add_parser("kubeconfig", help="mint a kubeconfig for a user or a service account")
    who = kc.add_mutually_exclusive_group(required=True)
    who.add_argument("--user")
    who.add_argument("--serviceaccount", metavar="NAMESPACE:NAME")
    kc.add_argument("--group", action="append", default=[])
    kc.add_argument("--out", required=True)
    args = parser.parse_args(argv)
    plane = ControlPlane(args.dir)
    try:
        if args.command == "build":
            built = build(workloads=args.workloads)
            if args.istioctl:
                built["istioctl"] = build_istioctl()
                built["istio-authz"] = build_istio_judge()
            if args.judges:
                built.update(build_judges(), cyclonus=build_cyclonus(), **{"openshift-crds": openshift_crds()[0].parent})
            for name, path in built.items():
                print(f"{name}\t{path}")
        elif args.command == "up":
            plane.up(install=False, workloads=args.workloads)
            if not args.no_install:
                plane.install(args.mesh)
            if args.workloads:
                plane.add_workers()
            print(f"control plane running: {plane.server}\nexport KUBECONFIG={plane.kubeconfig}")
        elif args.command == "down":
            plane.down()
        elif args.command == "destroy":
            plane.destroy()
        elif args.command == "status":
            if plane.running():
                print(f"running: {plane.server} (kubeconfig {plane.kubeconfig})")
            else:
                print(f"not running ({plane.dir})")
                return 1
        elif args.command == "kubeconfig":
            if not plane.running():
                raise ClusterError(f"no control plane running in {plane.dir}: run `hack/cluster.py up` first")
            if args.user:
                plane.write_kubeconfig(Path(args.out), args.user, args.group)
            else:
                namespace, name = args.serviceaccount.split(":", 1)
                token = plane.serviceaccount_token(namespace, name)
                plane.write_kubeconfig(Path(args.out), f"system:serviceaccount:{namespace}:{name}", token=token)
            print(args.out)
    except ClusterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
