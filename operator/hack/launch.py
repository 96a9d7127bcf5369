"""The Python operator on the local control plane, as its own service account: install its API and
RBAC, start it in a subprocess, probe it, stop it. Used by `make demo-operator`, the tests and the
benchmarks, so that each runs the operator the same way."""
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

OPERATOR = Path(__file__).resolve().parents[1]
ROOT = OPERATOR.parent
CRD = OPERATOR / "config" / "crd" / "bases" / "kfocp.io_kubeflows.yaml"
RBAC = OPERATOR / "config" / "rbac"
RBAC_FILES = ("service_account.yaml", "role.yaml", "role_binding.yaml")
NAMESPACE = "kfocp-system"
ACCOUNT = "kfocp-operator"
USER = "system:serviceaccount:%s:%s" % (NAMESPACE, ACCOUNT)
for _path in (ROOT / "hack", OPERATOR):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

from cluster import free_port, log_sizes, port_taken  # noqa: E402
from kfocp_operator.processes import kill_tree  # noqa: E402


def install_api(plane, manager="kfocp-local", role_file=None, timeout=60):
    """The Kubeflow CRD (Established), the operator's namespace, service account, ClusterRole
    (`role_file` instead of config/rbac/role.yaml, if given) and binding."""
    plane.kubectl("apply", "--server-side", "--field-manager=%s" % manager, "-f", str(CRD))
    plane.wait_established("kubeflows.kfocp.io", timeout=timeout)
    plane.kubectl("create", "namespace", NAMESPACE, check=False)
    files = [str(role_file) if name == "role.yaml" and role_file else str(RBAC / name) for name in RBAC_FILES]
    args = ["apply", "--server-side", "--force-conflicts", "--field-manager=%s" % manager]
    for path in files:
        args += ["-f", path]
    plane.kubectl(*args)


def account_kubeconfig(plane, path, seconds=24 * 3600):
    """A kubeconfig with a token of the operator's service account, and nothing else."""
    token = plane.serviceaccount_token(NAMESPACE, ACCOUNT, seconds=seconds)
    return plane.write_kubeconfig(Path(path), USER, token=token)


class Operator:
    """The operator in a subprocess: `start()` waits for /readyz, `stop()` terminates it. It runs
    this checkout's collection, or the one KFOCP_COLLECTIONS_PATH names in the environment."""

    def __init__(self, kubeconfig, log_path, args=(), env=None, namespace=NAMESPACE):
        self.kubeconfig = Path(kubeconfig)
        self.namespace = namespace
        self.log_path = Path(log_path)
        self.args = list(args)
        self.env = dict(env or {})
        self.port = None
        self.proc = None

    def start(self, timeout=60, detach=False, attempts=3):
        """Start the operator on a free port and wait until it is ready. A port free when chosen can
        be taken before the operator binds it (by any outgoing connection): then it is started again
        on another, `attempts` times in all."""
        for attempt in range(1, attempts + 1):
            written = log_sizes([self.log_path]).get(self.log_path, 0)
            try:
                self._start(timeout, detach)
                break
            except RuntimeError:
                if attempt == attempts or not port_taken(self.log_path, written):
                    raise
        return self

    def _start(self, timeout, detach):
        self.port = free_port()
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.setdefault("KFOCP_COLLECTIONS_PATH", str(ROOT / ".cache" / "collections"))
        env.pop("KUBECONFIG", None)
        # The local control plane has no ClusterVersion: it runs the roles for the local inventory's
        # OpenShift version (the operator's configuration, as on a plain Kubernetes cluster).
        env.setdefault("KFOCP_KFOCP_OPENSHIFT_VERSION", '"4.20"')
        env.update(self.env)
        cmd = [sys.executable, "-m", "kfocp_operator", "--kubeconfig", str(self.kubeconfig), "--port", str(self.port),
               "--operator-namespace", self.namespace] + self.args
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(cmd, cwd=str(OPERATOR), env=env, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=detach)
        deadline = time.monotonic() + timeout
        while self.get("/readyz")[0] != 200:
            if self.proc.poll() is not None:
                raise RuntimeError("the operator exited with %s:\n%s" % (self.proc.returncode, self.log_tail()))
            if time.monotonic() > deadline:
                raise RuntimeError("the operator is not ready after %ds:\n%s" % (timeout, self.log_tail()))
            time.sleep(0.2)
        return self

    def get(self, path):
        """(status, body) of GET http://127.0.0.1:<port><path>; (0, '') when nothing answers."""
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.port, path), timeout=5) as resp:
                return resp.status, resp.read().decode()
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode()
        except OSError:
            return 0, ""

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self, sig):
        self.proc.send_signal(sig)
        self.proc.wait(30)

    def kill_pod(self):
        """What the death of the operator's pod does: SIGKILL to every process of it, the operator's
        own process group (start it with detach=True) and the processes it started in sessions of
        their own (ansible-runner gives each playbook a terminal, hence its own session). The tree
        is stopped first, so that no process escapes by being handed to init. Returns the pids."""
        pids = kill_tree(self.proc.pid, include_root=True)
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(30)
        return pids

    def rss(self):
        """The operator process's resident memory in bytes (VmRSS), or None once it has exited."""
        try:
            with open("/proc/%d/status" % self.proc.pid) as handle:
                for line in handle:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return None

    def stop(self, grace=20):
        if not self.alive():
            return
        self.proc.terminate()
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)

    def log_tail(self, chars=6000):
        return self.log_path.read_text(errors="replace")[-chars:] if self.log_path.exists() else ""
