"""make demo-operator: the local control plane (already up), the Kubeflow CRD and the operator's
RBAC, the operator in the background as its own service account (log in <cluster dir>/operator.log),
and the sample Kubeflow CR, made for the local control plane. Prints how to watch it and how to
stop the operator."""
import json
import os
import sys
from pathlib import Path

import yaml

OPERATOR = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(OPERATOR / "hack"), str(OPERATOR.parent / "tests")]

import launch  # noqa: E402
from cluster import DEFAULT_DIR, ControlPlane  # noqa: E402
from measure import roles_off_except  # noqa: E402

SAMPLE = OPERATOR / "config" / "samples" / "kfocp_v1alpha1_kubeflow.yaml"
# The roles that need nothing but the API server; the others wait for operators (OLM, the mesh,
# NFD and the GPU operator, ...) that the local control plane does not run.
LOCAL_ROLES = ("scc", "namespace_policies", "profiles")


def local_sample():
    """The sample CR with the other roles' <role>State: absent and automatic profiles for Users."""
    cr = yaml.safe_load(SAMPLE.read_text())
    cr["spec"].update(roles_off_except(launch.CRD, LOCAL_ROLES), profilesAutoFromUsers=True)
    return cr


def main():
    plane = ControlPlane(os.environ.get("KFOCP_CLUSTER_DIR") or DEFAULT_DIR)
    if not plane.running():
        print("the control plane is not running: run `make up` first", file=sys.stderr)
        return 2
    launch.install_api(plane, manager="kfocp-demo")
    kubeconfig = launch.account_kubeconfig(plane, plane.dir / "operator.kubeconfig")
    pid_file = plane.dir / "operator.pid"
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text()), 0)
            print("the operator already runs (pid %s)" % pid_file.read_text().strip())
        except (OSError, ValueError):
            pid_file.unlink()
    if not pid_file.exists():
        operator = launch.Operator(kubeconfig, plane.dir / "operator.log")
        try:
            operator.start(timeout=60, detach=True)
        except RuntimeError as err:
            print(err, file=sys.stderr)
            return 1
        pid_file.write_text(str(operator.proc.pid))
        (plane.dir / "operator.port").write_text(str(operator.port))
    plane.kubectl("apply", "--server-side", "--field-manager=kfocp-demo", "-f", "-", input=json.dumps(local_sample()))
    port = (plane.dir / "operator.port").read_text().strip()
    kubectl = "%s --kubeconfig=%s" % (plane.state()["bins"]["kubectl"], plane.kubeconfig)
    print(json.dumps({"operator_pid": int(pid_file.read_text()), "log": str(plane.dir / "operator.log")}))
    print("""
The operator runs as system:serviceaccount:kfocp-system:kfocp-operator and reconciles the sample CR
(%(sample)s, with only the roles %(roles)s present: the others wait for operators that do not
run here). It becomes Ready in a minute or so.
Watch it:
  %(k)s get kubeflows -A -w
  %(k)s describe kubeflow kubeflow -n kfocp-system
  tail -f %(log)s
  curl -s http://127.0.0.1:%(port)s/metrics | grep kfocp_operator
Make a profile namespace and see its policies appear within about a second:
  %(k)s create namespace demo-team && %(k)s label namespace demo-team app.kubernetes.io/part-of=kubeflow-profile
  %(k)s get limitrange,servicemeshmember -n demo-team
Stop the operator: kill $(cat %(pid)s)   (make down stops the control plane)
""" % {"k": kubectl, "log": plane.dir / "operator.log", "port": port, "pid": pid_file,
       "sample": SAMPLE.relative_to(OPERATOR.parent), "roles": ", ".join(LOCAL_ROLES)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
