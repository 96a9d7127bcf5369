"""A real Argo CD, built from its Go module, run as local processes against a local control plane
(hack/cluster.py): Redis, the repo server, the application controller and the ApplicationSet
controller, each a child process on free loopback ports, with its own log under a work directory.

    python hack/argocd.py build              # build (or reuse) the argocd binary and print its path
    python hack/argocd.py demo --dir DIR     # a control plane, Argo CD and one Application, timed

The module is also imported by the tests and the benchmarks:

    with ArgoCD(plane, workdir).up() as argocd:
        repo = argocd.git_repo(workdir / "apps.git", tree)
        argocd.apply_application("demo", repo.url, ".")
        argocd.wait_synced("demo", timeout=60, revision=repo.head)

Argo CD finds its settings in the cluster (the argocd-cm, argocd-cmd-params-cm and argocd-secret of
upstream's manifests/base/config) and reaches "in-cluster" (https://kubernetes.default.svc) through
the plane's kubeconfig (ARGOCD_FAKE_IN_CLUSTER). Git repositories are local bare repositories,
served to the repo server as file:// URLs. No host name is looked up and every address dialled is
127.0.0.1; the servers listen there too, but for the application controller's metrics port, which
upstream binds to 0.0.0.0.

Upstream paths cited below are relative to the module's directory in the Go module cache
(`go mod download -json github.com/argoproj/argo-cd/v3@v3.6.1` prints it as Dir).
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import functools
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import yaml

from cluster import ClusterError, ControlPlane, _digest, cache_root, free_port

MODULE = "github.com/argoproj/argo-cd/v3"
VERSION = "v3.6.1"
# argo-cd's go.mod says `go 1.27.0`; only its go commands run with this toolchain, the rest of the
# project builds with the machine's Go.
GO_TOOLCHAIN = "go1.27.3"
# common/version.go: the variables its Makefile stamps (LDFLAGS). Without gitCommit the version
# reads v3.6.1+unknown.
_STAMP = "github.com/argoproj/argo-cd/v3/common"
LDFLAGS = (f"-s -w -X {_STAMP}.version={VERSION.lstrip('v')} -X {_STAMP}.gitTag={VERSION} "
           f"-X {_STAMP}.gitTreeState=clean -X {_STAMP}.buildDate=1970-01-01T00:00:00Z")
# cmd/main.go:42 picks the component from the name it runs under (the image links them all to argocd);
# hack/argocd/main.go, the main kfocp builds, picks these the same way.
LINKS = ("argocd-repo-server", "argocd-application-controller", "argocd-applicationset-controller",
         "argocd-git-ask-pass")
# The image puts these on PATH (Dockerfile, COPY hack/gpg-wrapper.sh hack/git-verify-wrapper.sh).
# The repo server runs git-verify-wrapper.sh for every manifest generation
# (reposerver/repository/repository.go:556 -> util/git/client.go:1173), GPG enabled or not.
WRAPPERS = ("git-verify-wrapper.sh", "gpg-wrapper.sh")
CRDS = ("application-crd.yaml", "applicationset-crd.yaml", "appproject-crd.yaml")
CRD_NAMES = ("applications.argoproj.io", "applicationsets.argoproj.io", "appprojects.argoproj.io")
# Upstream's base settings (manifests/base/config). They carry app.kubernetes.io/part-of=argocd,
# which the settings informers select on (util/settings/settings.go:565).
CONFIG = ("argocd-cm", "argocd-rbac-cm", "argocd-cmd-params-cm", "argocd-secret")
# The workloads whose env upstream maps from argocd-cm and argocd-cmd-params-cm (configMapKeyRef).
WORKLOADS = {
    "repo-server": "repo-server/argocd-repo-server-deployment.yaml",
    "application-controller": "application-controller/argocd-application-controller-statefulset.yaml",
    "applicationset-controller": "applicationset-controller/argocd-applicationset-controller-deployment.yaml",
}
# argocd-cm keys, mapped by the controller's StatefulSet to ARGOCD_RECONCILIATION_TIMEOUT and
# ARGOCD_RECONCILIATION_JITTER (manifests/base/application-controller/
# argocd-application-controller-statefulset.yaml:37-53), which give --app-resync and
# --app-resync-jitter their defaults (cmd/argocd-application-controller/commands/
# argocd_application_controller.go:252,254; 120 s and 60 s). Short, so that tests see git changes soon.
TEST_SETTINGS = {"timeout.reconciliation": "10s", "timeout.reconciliation.jitter": "0s"}
# pkg/apis/application/v1alpha1/application_annotations.go:6 and types.go:543: the controller refreshes
# an Application that carries it (comparing with git again), then removes it.
REFRESH_ANNOTATION = ("argocd.argoproj.io/refresh", "normal")
# common/common.go:198,202: how the controller finds the clusters it deploys to.
CLUSTER_SECRET_LABEL = ("argocd.argoproj.io/secret-type", "cluster")
# pkg/apis/application/v1alpha1/types.go:4019: with ARGOCD_FAKE_IN_CLUSTER=true this address is
# served from $KUBECONFIG (cluster_constants.go:14).
IN_CLUSTER = "https://kubernetes.default.svc"
AUTO_SYNC = {"automated": {"prune": True, "selfHeal": True}}
COMPONENTS = ("redis", "repo-server", "application-controller", "applicationset-controller")
PORT_ATTEMPTS = 3
GIT = ("git", "-c", "user.name=kfocp", "-c", "user.email=kfocp@localhost", "-c", "commit.gpgsign=false",
       "-c", "init.defaultBranch=main")


class ArgoCDError(RuntimeError):
    """An Argo CD step failed; the message says which and why."""


class Launch(NamedTuple):
    """How to start one process: `command(ports)` once `ports` are chosen, and how to tell it is
    ready (`ready()`, described by `what` in errors)."""
    name: str
    ports: tuple
    command: Callable[[dict], list]
    env: dict
    ready: Callable[[], bool]
    what: str
    any_interface: bool = False


# ---------------------------------------------------------------- build

def _go(args: list, cwd: Path, **env) -> str:
    """Run an argo-cd go command with its toolchain; its output, or an error with the tail of it."""
    cmd = ["nice", "-n", "10", "go", *args]
    full_env = dict(os.environ, GOTOOLCHAIN=GO_TOOLCHAIN, GOWORK="off", GOFLAGS="-buildvcs=false", **env)
    proc = subprocess.run(cmd, cwd=cwd, env=full_env, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise ArgoCDError(f"{' '.join(cmd)} failed (in {cwd}, GOTOOLCHAIN={GO_TOOLCHAIN}):\n"
                          f"{(proc.stdout + proc.stderr)[-4000:]}")
    return proc.stdout


@functools.cache
def module_dir() -> Path:
    """The argo-cd module's directory in the Go module cache (downloaded when missing)."""
    if not shutil.which("go"):
        raise ArgoCDError("go is not on PATH: Argo CD is built from its Go module")
    cwd = cache_root().parent
    cwd.mkdir(parents=True, exist_ok=True)
    return Path(json.loads(_go(["mod", "download", "-json", f"{MODULE}@{VERSION}"], cwd))["Dir"])


MAIN = Path(__file__).resolve().parent / "argocd" / "main.go"


def binary_path() -> Path:
    """Where build() puts the binary: the kfocp cache, by version and the digest of its main."""
    return cache_root() / f"argocd-{VERSION}-{_digest(MAIN.read_text(encoding='utf-8'))}"


@contextlib.contextmanager
def _lock(path: Path):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build() -> Path:
    """The argocd binary, built when not cached: hack/argocd/main.go (the components the tests
    run, in one binary) in a small module that requires argo-cd.

    argo-cd's replace directives (k8s.io/* pinned to its versions) do not apply to a module that
    requires it, so a small module requires argo-cd and copies them; its last one
    (gitops-engine => ./gitops-engine) is left out, as the tagged gitops-engine module of the same
    version is on the proxy. The binary is written to a .tmp file and renamed."""
    dest = binary_path()
    if dest.exists():
        return dest
    with _lock(dest.parent / f".{dest.name}.lock"):
        if dest.exists():
            return dest
        source = module_dir()
        match = re.search(r"^replace \($.*?^\)$", (source / "go.mod").read_text(encoding="utf-8"), re.M | re.S)
        if not match:
            raise ArgoCDError(f"{source / 'go.mod'}: no replace block to copy")
        work = cache_root().parent / "build-argocd"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        (work / "go.mod").write_text(f"module kfocpargocd\n\ngo 1.27\n\nrequire {MODULE} {VERSION}\n\n"
                                     f"{match.group(0)}\n", encoding="utf-8")
        shutil.copyfile(MAIN, work / "main.go")
        print(f"building argocd {VERSION} from its Go module (GOTOOLCHAIN={GO_TOOLCHAIN}; long the first time)",
              file=sys.stderr, flush=True)
        _go(["mod", "tidy"], work)
        tmp = dest.with_name(dest.name + ".tmp")
        _go(["build", "-trimpath", "-ldflags", LDFLAGS, "-o", str(tmp), "."], work, CGO_ENABLED="0")
        tmp.rename(dest)
    return dest


def redis_server() -> str:
    """The path of redis-server (the Debian package's)."""
    path = shutil.which("redis-server")
    if not path:
        raise ArgoCDError("redis-server is not on PATH: Argo CD keeps its caches in Redis; "
                          "install it with `apt-get install redis-server`")
    return path


# ---------------------------------------------------------------- processes

def group_members(pgid: int) -> list[int]:
    """The live processes of process group `pgid`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(entry))
    return found


def _http_ok(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=5) as resp:
            return resp.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _redis_pong(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _data(path: Path) -> dict:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def upstream_env(workload: Path, configmaps: dict[str, dict]) -> dict[str, str]:
    """The environment variables upstream's `workload` manifest takes from the ConfigMaps
    ({name: data}) with configMapKeyRef, for the keys they hold."""
    env = {}
    for doc in yaml.safe_load_all(workload.read_text(encoding="utf-8")):
        for container in ((doc or {}).get("spec", {}).get("template", {}).get("spec", {}).get("containers") or []):
            for var in container.get("env") or []:
                ref = (var.get("valueFrom") or {}).get("configMapKeyRef") or {}
                value = configmaps.get(ref.get("name"), {}).get(ref.get("key"))
                if value is not None:
                    env[var["name"]] = str(value)
    return env


class GitRepo:
    """A local bare repository that the repo server reads through its file:// URL, and the
    working repository that pushes trees into it."""

    def __init__(self, bare: Path | str):
        self.bare = Path(bare).resolve()
        self.work = self.bare.with_name(self.bare.name + ".work")

    @property
    def url(self) -> str:
        """What an Application's repoURL names."""
        return f"file://{self.bare}"

    @property
    def head(self) -> str:
        """The SHA main points to."""
        return self._git("rev-parse", "refs/heads/main", git_dir=self.bare)

    def _git(self, *args: str, git_dir: Path | None = None, tree: Path | None = None) -> str:
        cmd = [*GIT, *([f"--git-dir={git_dir}"] if git_dir else []), *([f"--work-tree={tree}"] if tree else []),
               *args]
        env = dict(os.environ, GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0")
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=60)
        if proc.returncode:
            raise ArgoCDError(f"{' '.join(cmd)} failed: {proc.stderr.strip()[-2000:]}")
        return proc.stdout.strip()

    def create(self) -> "GitRepo":
        """Initialise both repositories when missing."""
        if not (self.bare / "HEAD").exists():
            self.bare.parent.mkdir(parents=True, exist_ok=True)
            self._git("init", "-q", "--bare", "-b", "main", str(self.bare))
        if not (self.work / ".git").exists():
            self._git("init", "-q", "-b", "main", str(self.work))
        return self

    def push(self, tree: Path | str, message: str = "update") -> str:
        """Commit everything in the directory `tree` (files gone from it are deleted) and
        force-push it to main; returns the commit's SHA."""
        git_dir = self.work / ".git"
        self._git("add", "-A", ".", git_dir=git_dir, tree=Path(tree).resolve())
        self._git("commit", "-q", "--allow-empty", "-m", message, git_dir=git_dir)
        self._git("push", "-q", "--force", str(self.bare), "HEAD:refs/heads/main", git_dir=git_dir)
        return self._git("rev-parse", "HEAD", git_dir=git_dir)


# ---------------------------------------------------------------- Argo CD

class ArgoCD:
    """Argo CD's controllers for one control plane, state and logs in `workdir`."""

    def __init__(self, plane: ControlPlane, workdir: Path | str, namespace: str = "argocd"):
        self.plane = plane
        self.dir = Path(workdir).resolve()
        self.namespace = namespace
        self.ports: dict[str, int] = {}
        self.procs: dict[str, subprocess.Popen] = {}
        self.timings: dict[str, float] = {}
        self._log_start: dict[str, int] = {}

    # -- lifecycle
    def __enter__(self) -> "ArgoCD":
        return self if self.procs else self.up()

    def __exit__(self, *exc) -> None:
        self.down()

    def up(self, timeout: float = 120, settings: dict | None = None, params: dict | None = None,
           applicationset: bool = True) -> "ArgoCD":
        """Install the CRDs and settings, start the processes and wait until each is ready.

        `settings` are merged into argocd-cm (over TEST_SETTINGS), `params` into argocd-cmd-params-cm;
        both before the controllers start, which also take the environment upstream's manifests map
        from these keys (upstream_env). The flags given here (ports, addresses) win over params."""
        if self.procs:
            raise ArgoCDError(f"Argo CD in {self.dir} is already up (pids {self.pids()}): down() first")
        deadline = time.monotonic() + timeout
        start = time.monotonic()
        binary, redis = build(), redis_server()
        source = module_dir()
        self._layout(binary, source)
        try:
            configmaps = self._install(source, dict(TEST_SETTINGS, **(settings or {})), params or {}, deadline)
            self.timings["install"] = time.monotonic() - start
            self._start_redis(redis, deadline)
            self._start_repo_server(source, configmaps, deadline)
            self._start_controller(source, configmaps, deadline)
            if applicationset:
                self._start_applicationset(source, configmaps, deadline)
        except BaseException:
            self.down()
            raise
        self.timings["up"] = time.monotonic() - start
        return self

    def down(self, timeout: float = 15) -> None:
        """Stop every process (and its children): SIGTERM to its process group, SIGKILL after
        `timeout` seconds; raises if one is still there after that."""
        left = []
        for name in reversed(list(self.procs)):
            left += self._stop(name, self.procs.pop(name), timeout)
        self._save()
        if left:
            raise ArgoCDError(f"processes of Argo CD still running after SIGKILL: {left}")

    def pids(self) -> dict[str, int]:
        """{component: pid} of the processes that run (each leads its own process group)."""
        return {name: proc.pid for name, proc in self.procs.items() if proc.poll() is None}

    def rss(self) -> dict[str, int]:
        """{component: resident memory in KiB} of each running process (VmRSS)."""
        out = {}
        for name, pid in self.pids().items():
            with contextlib.suppress(OSError):
                with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
                    for line in handle:
                        if line.startswith("VmRSS:"):
                            out[name] = int(line.split()[1])
        return out

    def log(self, name: str) -> Path:
        """The log file of component `name`."""
        return self.dir / f"{name}.log"

    def log_tail(self, name: str, lines: int = 30) -> str:
        """The last `lines` lines of component `name`'s log."""
        try:
            return "\n".join(self.log(name).read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    # -- the cluster side
    def kubectl(self, *args: str, stdin: str | None = None) -> str:
        """kubectl against the plane (its admin kubeconfig); its stdout."""
        try:
            return self.plane.kubectl(*args, input=stdin).stdout
        except ClusterError as err:
            raise ArgoCDError(str(err)) from None

    def apply(self, *objects: dict) -> None:
        """kubectl apply `objects`, in order."""
        self.kubectl("apply", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}))

    def add_cluster(self, name: str, other: ControlPlane) -> str:
        """Register `other` plane as cluster `name` (a cluster Secret with its admin kubeconfig's
        client certificate, util/db/cluster.go:428 SecretToCluster); returns its server URL."""
        config = json.loads(other.kubeconfig.read_text(encoding="utf-8"))
        cluster, user = config["clusters"][0]["cluster"], config["users"][0]["user"]
        tls = {"insecure": False, "caData": cluster["certificate-authority-data"],
               "certData": user["client-certificate-data"], "keyData": user["client-key-data"]}
        self.apply({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                    "metadata": {"name": f"cluster-{name}", "namespace": self.namespace,
                                 "labels": dict([CLUSTER_SECRET_LABEL])},
                    "stringData": {"name": name, "server": cluster["server"],
                                   "config": json.dumps({"tlsClientConfig": tls})}})
        return cluster["server"]

    def git_repo(self, path: Path | str, tree: Path | str | None = None, message: str = "initial") -> GitRepo:
        """A local bare repository at `path` (created when missing), `tree` pushed into it when given.
        Its `url` (file://) is what an Application's repoURL names; push() updates it."""
        repo = GitRepo(path).create()
        if tree is not None:
            repo.push(tree, message)
        return repo

    def apply_application(self, name: str, repo_url: str, path: str, *, revision: str = "main",
                          destination: dict | None = None, sync_policy: dict | None = None) -> None:
        """An Application of the default project: `path` of `repo_url` at `revision`, to in-cluster
        by default, synced automatically with prune and selfHeal by default (sync_policy={} for manual)."""
        spec = {"project": "default", "source": {"repoURL": repo_url, "targetRevision": revision, "path": path},
                "destination": destination or {"server": IN_CLUSTER},
                "syncPolicy": AUTO_SYNC if sync_policy is None else sync_policy}
        self.apply({"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
                    "metadata": {"name": name, "namespace": self.namespace}, "spec": spec})

    def application_url(self, name: str) -> str:
        """The API server's URL of the Application `name`."""
        return f"{self.plane.server}/apis/argoproj.io/v1alpha1/namespaces/{self.namespace}/applications/{name}"

    def application(self, name: str) -> dict | None:
        """The Application `name` as the API server has it (its status included), None when absent."""
        try:
            return self.plane.request("GET", self.application_url(name))
        except ClusterError as err:
            if ": 404 " in str(err):
                return None
            raise ArgoCDError(str(err)) from None

    def refresh(self, name: str) -> None:
        """Have the controller compare the Application with git now, not at the next resync."""
        self.kubectl("-n", self.namespace, "annotate", "--overwrite", "application", name, "=".join(REFRESH_ANNOTATION))

    def wait_synced(self, name: str, timeout: float = 60, revision: str | None = None) -> dict:
        """Wait until the Application is Synced and Healthy (at `revision`, when given) and no sync
        operation runs; returns it."""
        deadline = time.monotonic() + timeout
        app = None
        while time.monotonic() < deadline:
            app = self.application(name)
            status = (app or {}).get("status") or {}
            sync, health = status.get("sync") or {}, status.get("health") or {}
            operation = (status.get("operationState") or {}).get("phase")
            if (sync.get("status") == "Synced" and health.get("status") == "Healthy"
                    and revision in (None, sync.get("revision")) and operation not in ("Running", "Terminating")):
                return app
            time.sleep(0.25)
        raise ArgoCDError(f"Application {self.namespace}/{name} not Synced/Healthy"
                          f"{' at ' + revision if revision else ''} after {timeout:.0f}s: {describe(app)}\n"
                          f"last lines of {self.log('application-controller')}:\n"
                          + self.log_tail("application-controller", 15))

    # -- internals
    def _layout(self, binary: Path, source: Path) -> None:
        for sub in ("bin", "home", "tmp", "tls", "ssh", "gpg/keys", "gpg/source"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        (self.dir / "gpg" / "keys").chmod(0o700)
        if len(str(self._askpass_socket)) > 100:  # sun_path holds 108 bytes
            raise ArgoCDError(f"work directory {self.dir} too long for the repo server's socket "
                              f"{self._askpass_socket}: use a shorter one")
        for name in LINKS:
            link = self.dir / "bin" / name
            link.unlink(missing_ok=True)
            link.symlink_to(binary)
        for name in WRAPPERS:  # read-only in the module cache
            shutil.copyfile(source / "hack" / name, self.dir / "bin" / name)
            (self.dir / "bin" / name).chmod(0o755)

    def _install(self, source: Path, settings: dict, params: dict, deadline: float) -> dict[str, dict]:
        """CRDs, namespace, settings and the default project; returns {ConfigMap name: data}."""
        crds = source / "manifests" / "crds"
        # server-side: the Application CRD is too large for the last-applied annotation
        self.kubectl("apply", "--server-side", "--field-manager=kfocp-argocd", "--force-conflicts",
                     *[arg for name in CRDS for arg in ("-f", str(crds / name))])
        config = {name: _data(source / "manifests" / "base" / "config" / f"{name}.yaml") for name in CONFIG}
        for name in CONFIG:
            config[name]["metadata"]["namespace"] = self.namespace
        config["argocd-cm"]["data"] = dict(config["argocd-cm"].get("data") or {}, **settings)
        config["argocd-cmd-params-cm"]["data"] = dict(config["argocd-cmd-params-cm"].get("data") or {}, **params)
        # util/settings/settings.go:435: the key the ApplicationSet controller's webhook handler needs
        config["argocd-secret"]["stringData"] = {"server.secretkey": secrets.token_urlsafe(32)}
        self.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.namespace}}, *config.values())
        self._wait_served(deadline)
        # Argo CD's API server creates the default project; it is not run here.
        self.apply({"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
                    "metadata": {"name": "default", "namespace": self.namespace},
                    "spec": {"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}],
                             "clusterResourceWhitelist": [{"group": "*", "kind": "*"}]}})
        return {name: config[name]["data"] for name in ("argocd-cm", "argocd-cmd-params-cm")}

    def _wait_served(self, deadline: float) -> None:
        """Wait until the API server serves the three CRDs. Discovery lists a CRD's resource once it
        is Established (k8s.io/apiextensions-apiserver@v0.36.4
        pkg/apiserver/customresource_discovery_controller.go:105), and is small; the CRDs themselves
        are megabytes, too much to poll."""
        wanted = {name.split(".", 1)[0] for name in CRD_NAMES}
        served: set = set()
        while time.monotonic() < deadline:
            with contextlib.suppress(ClusterError):  # 404 until the group is served
                found = self.plane.request("GET", f"{self.plane.server}/apis/argoproj.io/v1alpha1")
                served = {resource["name"] for resource in found.get("resources") or []}
            if wanted <= served:
                return
            time.sleep(0.2)
        raise ArgoCDError(f"timed out waiting for the API server to serve Argo CD's CRDs: "
                          f"{', '.join(sorted(wanted - served))} not in /apis/argoproj.io/v1alpha1")

    @property
    def _askpass_socket(self) -> Path:
        return self.dir / "tmp" / "askpass.sock"

    def _env(self, source: Path, component: str, configmaps: dict, kube: bool) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ARGOCD_") and k != "KUBECONFIG"}
        if component in WORKLOADS:
            env.update(upstream_env(source / "manifests" / "base" / WORKLOADS[component], configmaps))
        d = self.dir
        env.update({
            "PATH": f"{d / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", "HOME": str(d / "home"),
            # the repo server clones into $TMPDIR (util/git/client.go:304)
            "TMPDIR": str(d / "tmp"),
            # common/common.go:272,274,288,336 and util/sourceintegrity/source_integrity.go:268
            "ARGOCD_TLS_DATA_PATH": str(d / "tls"), "ARGOCD_SSH_DATA_PATH": str(d / "ssh"),
            "ARGOCD_GNUPGHOME": str(d / "gpg" / "keys"), "ARGOCD_GPG_DATA_PATH": str(d / "gpg" / "source"),
            "ARGOCD_GPG_ENABLED": "false",
            # util/askpass/common.go:7,13: /tmp/reposerver-ask-pass.sock unless set, one per machine
            "ARGOCD_ASK_PASS_SOCK": str(self._askpass_socket),
        })
        if kube:
            env.update({"ARGOCD_FAKE_IN_CLUSTER": "true", "KUBECONFIG": str(self.plane.kubeconfig)})
        return env

    def _start_redis(self, redis: str, deadline: float) -> None:
        def command(ports):
            return [redis, "--port", str(ports["redis"]), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                    "--dir", str(self.dir / "tmp")]
        self._launch(Launch("redis", ("redis",), command, {k: v for k, v in os.environ.items() if k != "KUBECONFIG"},
                            lambda: _redis_pong(self.ports["redis"]), "Redis answering PING"), deadline)

    def _start_repo_server(self, source: Path, configmaps: dict, deadline: float) -> None:
        def command(ports):
            return [self.dir / "bin" / "argocd-repo-server", "--logformat", "text", "--loglevel", "info",
                    "--address", "127.0.0.1", "--port", str(ports["repo-server"]),
                    "--metrics-address", "127.0.0.1", "--metrics-port", str(ports["repo-server-metrics"]),
                    "--redis", f"127.0.0.1:{self.ports['redis']}", "--disable-tls", "--client-ca-path="]
        # /healthz?full=true makes a gRPC health check against the repo server's own port
        # (cmd/argocd-repo-server/commands/argocd_repo_server.go:189; upstream's liveness probe)
        self._launch(Launch(
            "repo-server", ("repo-server", "repo-server-metrics"), command,
            self._env(source, "repo-server", configmaps, kube=False),
            lambda: _http_ok(f"http://127.0.0.1:{self.ports['repo-server-metrics']}/healthz?full=true"),
            "the repo server's gRPC health check (/healthz?full=true)"), deadline)

    def _start_controller(self, source: Path, configmaps: dict, deadline: float) -> None:
        def command(ports):
            return [self.dir / "bin" / "argocd-application-controller", "--logformat", "text", "--loglevel", "info",
                    "--namespace", self.namespace, "--redis", f"127.0.0.1:{self.ports['redis']}",
                    "--repo-server", f"127.0.0.1:{self.ports['repo-server']}", "--repo-server-plaintext",
                    # not run; an address given so that no host name is looked up
                    "--commit-server", f"127.0.0.1:{ports['commit-server']}",
                    "--metrics-port", str(ports["controller-metrics"])]
        # The metrics server (and its /healthz, upstream's readiness probe) starts once the
        # Application and AppProject informers have synced and the live state cache is initialised
        # (controller/appcontroller.go:958-969). It binds 0.0.0.0 (controller/appcontroller.go:293).
        self._launch(Launch(
            "application-controller", ("controller-metrics", "commit-server"), command,
            self._env(source, "application-controller", configmaps, kube=True),
            lambda: _http_ok(f"http://127.0.0.1:{self.ports['controller-metrics']}/healthz"),
            "the application controller's /healthz (informers synced)", any_interface=True), deadline)

    def _start_applicationset(self, source: Path, configmaps: dict, deadline: float) -> None:
        def command(ports):
            return [self.dir / "bin" / "argocd-applicationset-controller", "--logformat", "text",
                    "--loglevel", "info", "--namespace", self.namespace,
                    "--argocd-repo-server", f"127.0.0.1:{self.ports['repo-server']}", "--repo-server-plaintext",
                    "--metrics-addr", f"127.0.0.1:{ports['appset-metrics']}",
                    "--probe-addr", f"127.0.0.1:{ports['appset-probe']}",
                    "--webhook-addr", f"127.0.0.1:{ports['appset-webhook']}", "--enable-leader-election=false"]
        name = "applicationset-controller"
        # controller-runtime logs it once the watches' caches have synced
        # (sigs.k8s.io/controller-runtime@v0.24.1 pkg/internal/controller/controller.go:305)
        self._launch(Launch(
            name, ("appset-metrics", "appset-probe", "appset-webhook"), command,
            self._env(source, name, configmaps, kube=True),
            lambda: 'msg="Starting workers" controller=applicationset' in self._log_since(name),
            'its log line "Starting workers" (caches synced)'), deadline)

    def _log_since(self, name: str) -> str:
        with contextlib.suppress(FileNotFoundError):
            with open(self.log(name), "rb") as handle:
                handle.seek(self._log_start.get(name, 0))
                return handle.read().decode(errors="replace")
        return ""

    def _launch(self, launch: Launch, deadline: float) -> None:
        """Start a process on free ports and wait until it is ready; start it again on other ports
        when it found one taken (a port free when chosen can be taken before the process binds it)."""
        name = launch.name
        for attempt in range(1, PORT_ATTEMPTS + 1):
            for port in launch.ports:
                self.ports[port] = _free_port_any() if launch.any_interface else free_port()
            log = self.log(name)
            self._log_start[name] = log.stat().st_size if log.exists() else 0
            started = time.monotonic()
            with open(log, "ab") as out:
                # pylint: disable-next=consider-using-with  # down() stops it
                self.procs[name] = subprocess.Popen(
                    [str(arg) for arg in launch.command(self.ports)], env=launch.env, cwd=self.dir,
                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            self._save()
            try:
                self._wait(name, launch.ready, launch.what, deadline)
                self.timings[name] = time.monotonic() - started
                return
            except ArgoCDError:
                taken = "address already in use" in self._log_since(name).lower()
                self._stop(name, self.procs.pop(name), 5)
                if attempt == PORT_ATTEMPTS or not taken:
                    raise

    def _wait(self, name: str, ready, what: str, deadline: float) -> None:
        proc = self.procs[name]
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ArgoCDError(f"{name} exited (rc {proc.returncode}) while waiting for {what}; "
                                  f"last lines of {self.log(name)}:\n{self.log_tail(name)}")
            if ready():
                return
            time.sleep(0.1)
        raise ArgoCDError(f"{name} not ready: timed out waiting for {what}; last lines of {self.log(name)}:\n"
                          + self.log_tail(name))

    def _stop(self, name: str, proc: subprocess.Popen, timeout: float) -> list[str]:
        """Stop the process group `proc` leads; the members still alive after SIGKILL."""
        pgid = proc.pid
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout)
        deadline = time.monotonic() + 5
        while True:  # the leader and whatever it left in its group (git, gpg)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(0.1)
            members = group_members(pgid)
            if not members or time.monotonic() > deadline:
                return [f"{name}: pid {pid}" for pid in members]

    def _save(self) -> None:
        if not self.dir.is_dir():
            return
        state = {"pids": {name: proc.pid for name, proc in self.procs.items()}, "ports": self.ports}
        (self.dir / "state.json").write_text(json.dumps(state, indent=2), encoding="utf-8")


def _free_port_any() -> int:
    """A port free on every interface (for a server that binds 0.0.0.0)."""
    with socket.socket() as sock:
        sock.bind(("0.0.0.0", 0))
        return sock.getsockname()[1]


def describe(app: dict | None) -> str:
    """An Application's sync and health state, conditions and last operation, in one paragraph."""
    if app is None:
        return "no such Application"
    status = app.get("status") or {}
    sync, health = status.get("sync") or {}, status.get("health") or {}
    operation = status.get("operationState") or {}
    conditions = "; ".join(f"{c.get('type')}: {c.get('message')}" for c in status.get("conditions") or [])
    return (f"sync={sync.get('status')} revision={sync.get('revision')} health={health.get('status')} "
            f"{health.get('message') or ''}; conditions: {conditions or 'none'}; "
            f"operation: {operation.get('phase')} {operation.get('message') or ''}")


# ---------------------------------------------------------------- demo and command line

DEMO_TREE = {
    "namespace.yaml": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "argocd-demo"}},
    "configmap.yaml": {"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "demo-config", "namespace": "argocd-demo"},
                       "data": {"greeting": "hello"}},
}


def write_tree(tree: Path, files: dict[str, dict]) -> Path:
    """Write `files` ({relative path: object}) as YAML under `tree`, replacing what it held."""
    shutil.rmtree(tree, ignore_errors=True)
    for rel, obj in files.items():
        path = tree / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(obj, sort_keys=False), encoding="utf-8")
    return tree


def demo(directory: Path) -> None:
    """A control plane, Argo CD, one Application from a local git repository: timed, then stopped."""
    plane = ControlPlane(directory / "plane")
    plane.destroy()  # a fresh start: no Application left from a previous run
    shutil.rmtree(directory / "git", ignore_errors=True)
    directory.mkdir(parents=True, exist_ok=True)
    argocd = ArgoCD(plane, directory / "argocd")
    t0 = time.monotonic()
    try:
        plane.up(install=False)
        t_plane = time.monotonic()
        argocd.up()
        t_argocd = time.monotonic()
        repo = argocd.git_repo(directory / "git" / "apps.git", write_tree(directory / "git" / "tree", DEMO_TREE))
        argocd.apply_application("demo", repo.url, ".")
        app = argocd.wait_synced("demo", timeout=120, revision=repo.head)
        t_synced = time.monotonic()
        print(f"control plane up      {t_plane - t0:6.1f}s  ({plane.server})")
        print(f"argo cd up            {t_argocd - t_plane:6.1f}s  ("
              + ", ".join(f"{k} {v:.1f}s" for k, v in argocd.timings.items()) + ")")
        print(f"application synced    {t_synced - t_argocd:6.1f}s  ({describe(app)})")
        print("rss (KiB)             " + ", ".join(f"{k} {v}" for k, v in argocd.rss().items()))
    finally:
        argocd.down()
        plane.down(quiet=True)
    print(f"stopped; logs in {argocd.dir} and {plane.dir}")


def main(argv=None) -> int:
    """The command line; its exit code."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="build (or reuse) the argocd binary and print its path")
    demo_cmd = sub.add_parser("demo", help="run a control plane, Argo CD and one Application, then stop them")
    demo_cmd.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()) / "kfocp-argocd-demo")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            print(build())
        else:
            demo(args.dir.resolve())
    except (ArgoCDError, ClusterError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
