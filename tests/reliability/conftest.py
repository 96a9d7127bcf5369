import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from helpers import running_operator, wait_for  # noqa: E402

KUBEFLOW = ("kfocp.io/v1alpha1", "Kubeflow")


@pytest.fixture(scope="module")
def control_plane(own_plane):
    """Each reliability module on a control plane of its own: its operator and its cluster-wide
    runs act on every profile namespace, and must not meet other tests' objects (or leave theirs)."""
    return own_plane[0]


@pytest.fixture(scope="module")
def kube(own_plane):
    return own_plane[1]


class RunningOperator:
    """The Python operator in a subprocess as its own service account (operator/hack/launch.py),
    and the Kubeflow CRs a test gives it. Its playbook runs make their ansible-runner private data
    directories under `runs` (TMPDIR), so that a test can read them while they exist."""

    def __init__(self, proc, kube, runs, kubeconfig):
        self.proc = proc
        self.kube = kube
        self.runs = runs
        self.kubeconfig = kubeconfig
        self.namespace = proc.namespace
        self.res = kube.resource(*KUBEFLOW)

    def get(self, name):
        return self.kube.get(self.res, name, self.namespace)

    def create(self, name, spec):
        body = {"apiVersion": KUBEFLOW[0], "kind": KUBEFLOW[1], "metadata": {"name": name, "namespace": self.namespace},
                "spec": spec}
        return self.kube.request("POST", self.kube.path(self.res, self.namespace), body=body)

    def settled(self, name, generation, timeout=600):
        """The CR once the operator has answered `generation`: Ready or Degraded for it, not Progressing."""
        def answered():
            cr = self.get(name)
            conditions = dict((c["type"], c) for c in ((cr or {}).get("status") or {}).get("conditions") or [])
            if (cr or {}).get("status", {}).get("observedGeneration") != generation:
                return None
            if conditions.get("Progressing", {}).get("status") == "True":
                return None
            if any(conditions.get(kind, {}).get("status") == "True" for kind in ("Ready", "Degraded")):
                return cr
            return None
        return wait_for(answered, timeout, interval=0.5, what="the operator's answer to %s generation %s\n%s"
                        % (name, generation, self.proc.log_tail(3000)))

    def delete(self, name, timeout=300):
        """Delete the CR and wait until the operator's uninstall has removed its finalizer."""
        self.kube.request("DELETE", self.kube.path(self.res, self.namespace, name), allow=(404,))
        wait_for(lambda: self.get(name) is None, timeout, interval=0.5,
                 what="the uninstall of %s\n%s" % (name, self.proc.log_tail(3000)))


@pytest.fixture(scope="module")
def kfocp_operator(control_plane, kube, tmp_path_factory):
    """One operator per test module, with a token of its service account bound only to its
    ClusterRole. It refuses every Kubeflow but the oldest, so none may be left from elsewhere."""
    workdir = tmp_path_factory.mktemp("operator")
    runs = workdir / "runs"
    runs.mkdir()
    with running_operator(control_plane, kube, workdir, ["--default-reconcile-period", "0"],
                          env={"TMPDIR": str(runs)}, alone=True, tail=2000) as proc:
        yield RunningOperator(proc, kube, runs, proc.kubeconfig)
