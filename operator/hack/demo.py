"""make demo-operator: the local control plane (already up), the Kubeflow CRD and the operator's
RBAC, the operator in the background as its own service account (log in <cluster dir>/operator.log),
and the sample Kubeflow CR. Prints how to watch it and how to stop the operator."""
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

OPERATOR = Path(__file__).resolve().parents[1]
ROOT = OPERATOR.parent
sys.path.insert(0, str(ROOT / "hack"))

from cluster import DEFAULT_DIR, ControlPlane, free_port  # noqa: E402

SAMPLE = OPERATOR / "config" / "samples" / "kfocp_v1alpha1_kubeflow.yaml"
CRD = OPERATOR / "config" / "crd" / "bases" / "kfocp.io_kubeflows.yaml"
RBAC = OPERATOR / "config" / "rbac"


def main():
    plane = ControlPlane(os.environ.get("KFOCP_CLUSTER_DIR") or DEFAULT_DIR)
    if not plane.running():
        print("the control plane is not running: run `make up` first", file=sys.stderr)
        return 2
    plane.kubectl("apply", "--server-side", "--field-manager=kfocp-demo", "-f", str(CRD))
    for _attempt in range(100):
        if plane.kubectl("wait", "--for=condition=Established", "--timeout=5s", "crd/kubeflows.kfocp.io",
                         check=False).returncode == 0:
            break
        time.sleep(0.3)
    plane.kubectl("create", "namespace", "kfocp-system", check=False)
    plane.kubectl("apply", "--server-side", "--field-manager=kfocp-demo", "-f", str(RBAC / "service_account.yaml"),
                  "-f", str(RBAC / "role.yaml"), "-f", str(RBAC / "role_binding.yaml"))
    token = plane.serviceaccount_token("kfocp-system", "kfocp-operator", seconds=24 * 3600)
    kubeconfig = plane.write_kubeconfig(plane.dir / "operator.kubeconfig",
                                        "system:serviceaccount:kfocp-system:kfocp-operator", token=token)
    pid_file = plane.dir / "operator.pid"
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text()), 0)
            print("the operator already runs (pid %s)" % pid_file.read_text().strip())
        except (OSError, ValueError):
            pid_file.unlink()
    if not pid_file.exists():
        port = free_port()
        log = open(plane.dir / "operator.log", "ab")
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        proc = subprocess.Popen([sys.executable, "-m", "kfocp_operator", "--kubeconfig", str(kubeconfig), "--port",
                                 str(port), "--operator-namespace", "kfocp-system"], cwd=str(OPERATOR), env=env,
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        pid_file.write_text(str(proc.pid))
        (plane.dir / "operator.port").write_text(str(port))
        for _attempt in range(120):
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/readyz" % port, timeout=2):
                    break
            except OSError:
                if proc.poll() is not None:
                    print((plane.dir / "operator.log").read_text()[-3000:], file=sys.stderr)
                    return 1
                time.sleep(0.5)
    plane.kubectl("apply", "--server-side", "--field-manager=kfocp-demo", "-f", str(SAMPLE))
    port = (plane.dir / "operator.port").read_text().strip()
    kubectl = "%s --kubeconfig=%s" % (plane.state()["bins"]["kubectl"], plane.kubeconfig)
    print(json.dumps({"operator_pid": int(pid_file.read_text()), "log": str(plane.dir / "operator.log")}))
    print("""
The operator runs as system:serviceaccount:kfocp-system:kfocp-operator and reconciles the sample CR.
Watch it:
  %(k)s get kubeflows -A -w
  %(k)s describe kubeflow kubeflow -n kfocp-system
  tail -f %(log)s
  curl -s http://127.0.0.1:%(port)s/metrics | grep kfocp_operator
Make a profile namespace and see its policies appear within about a second:
  %(k)s create namespace demo-team && %(k)s label namespace demo-team app.kubernetes.io/part-of=kubeflow-profile
  %(k)s get limitrange,servicemeshmember -n demo-team
Stop the operator: kill $(cat %(pid)s)   (make down stops the control plane)
""" % {"k": kubectl, "log": plane.dir / "operator.log", "port": port, "pid": pid_file})
    return 0


if __name__ == "__main__":
    sys.exit(main())
