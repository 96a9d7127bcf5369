"""operator-sdk's ansible-operator, built from its Go module, runs the collection through
operator/watches.yaml against the real local API server: a Kubeflow resource converges to the
same objects as with kfocp's own operator, reports Ready through kfocp.kubeflow.cr_status, and
its deletion runs the uninstall finalizer.

ansible-operator listens on fixed ports (its Ansible proxy on 8888, its event API on 5050), so a
file lock keeps runs on one machine one at a time.
"""
import contextlib
import fcntl
import json
import os
import socket
import subprocess
import sys
import urllib.request
import uuid

import pytest
import yaml

from helpers import COLLECTIONS, ROOT, wait_for

sys.path.insert(0, str(ROOT / "operator"))
sys.path.insert(0, str(ROOT / "operator" / "hack"))

import build  # noqa: E402
from cluster import ClusterError, cache_root, free_port  # noqa: E402
from kfocp_operator.playbook import playbook_roles  # noqa: E402
from kfocp_operator.spec import SpecModel  # noqa: E402

CRD = ROOT / "operator" / "config" / "crd" / "bases" / "kfocp.io_kubeflows.yaml"
WATCHES = ROOT / "operator" / "watches.yaml"
FIXED_PORTS = (8888, 5050)
# Roles that need nothing but the API server; the others wait for operators that do not run
# here, so the resource switches them off through their <role>_state variable.
ON = ("scc", "profiles")
# Known gap: ansible-operator's snakeCaseParameters rewrites every nested key of the spec, not only
# the variable names. Roles whose values carry Kubernetes field names (namespace_policies:
# LimitRange defaultRequest, tolerationSeconds) or option names with hyphens (components:
# admission-webhook, ...) then fail their argument spec or builder even when switched off, so
# under ansible-operator this run also skips them the way a playbook user would.
SNAKE_CASE_GAPS = ("components", "namespace_policies")


@pytest.fixture(scope="module")
def ansible_operator():
    try:
        return build.ansible_operator()
    except ClusterError as err:
        pytest.skip("ansible-operator did not build from its Go module: %s" % err)


@pytest.fixture(scope="module")
def kubeflow_crd(control_plane, kube):
    control_plane.kubectl("apply", "--server-side", "--field-manager=kfocp-test", "--force-conflicts", "-f", str(CRD))
    control_plane.wait_established("kubeflows.kfocp.io")
    kube.forget()


@contextlib.contextmanager
def _fixed_ports_lock():
    path = cache_root().parent / "ansible-operator.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            for port in FIXED_PORTS:
                with socket.socket() as sock:
                    if sock.connect_ex(("127.0.0.1", port)) == 0:
                        pytest.fail("port %d is in use: ansible-operator needs it (its proxy and event API "
                                    "ports are fixed); stop what listens there" % port)
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _spec(team):
    model = SpecModel.from_collection(ROOT)
    crd = yaml.safe_load(CRD.read_text())
    fields = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    spec = {}
    for role in playbook_roles(ROOT / "playbooks" / "site.yml"):
        field = model.camel("%s_state" % role)
        if role not in ON and field in fields:
            spec[field] = "absent"
    # the local control plane has no ClusterVersion: the CR names the OpenShift version
    spec.update(kfocpOpenshiftVersion="4.20", sccGrantsDefault=[], sccGrantsExtra=[
        {"namespace": team, "serviceaccount": "trainer", "scc": "nonroot-v2", "reason": "fixed UID"}])
    return spec


def _kubeflow(kube, name, namespace):
    return kube.get(kube.resource("kfocp.io/v1alpha1", "Kubeflow"), name, namespace)


def _condition(cr, kind):
    for cond in ((cr or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == kind:
            return cond
    return {}


def _ready(kube, name, namespace):
    cr = _kubeflow(kube, name, namespace)
    return cr if _condition(cr, "Ready").get("status") == "True" else None


def owned_objects(kube, instance):
    """{(apiVersion, kind, namespace, name): set label} of everything labelled as `instance`'s,
    and of others' objects that carry its patch label."""
    found = {}
    for (api_version, kind), res in kube.resources(refresh=True).items():
        if "list" not in res.verbs or kind in ("Event", "ComponentStatus"):
            continue
        for selector, label in (("kfocp.io/instance=%s" % instance, "kfocp.io/set"),
                                ("patched.kfocp.io/%s" % instance, "patched.kfocp.io/%s" % instance)):
            try:
                items = kube.list(res, label_selector=selector)
            except Exception:  # pylint: disable=broad-except  # kinds that cannot be listed
                continue
            for item in items:
                meta = item["metadata"]
                if not meta.get("deletionTimestamp"):
                    key = (api_version, kind, meta.get("namespace", ""), meta["name"])
                    found[key] = (meta.get("labels") or {}).get(label)
    return found


def _stop(proc, log_path):
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    print("---- %s (tail) ----\n%s" % (log_path.name, log_path.read_text(errors="replace")[-6000:]))


def _health(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as resp:
            return resp.status
    except OSError:
        return 0


def _converge_and_delete(control_plane, kube, cr, start):
    """Start an operator, create `cr`, wait for Ready, read what it owns, delete `cr`, and wait
    until the finalizer has removed it. Returns (the Ready resource, the owned objects)."""
    name, namespace = cr["metadata"]["name"], cr["metadata"]["namespace"]
    proc, log_path, ready = start()
    try:
        wait_for(lambda: proc.poll() is not None or ready(), 120, interval=0.5, what="the operator to be ready")
        assert proc.poll() is None, log_path.read_text(errors="replace")[-4000:]
        control_plane.kubectl("create", "-f", "-", input=json.dumps(cr))
        try:
            done = wait_for(lambda: proc.poll() is not None or _ready(kube, name, namespace), 420, interval=1,
                            what="Ready=True on Kubeflow %s/%s" % (namespace, name))
        except AssertionError:
            raise AssertionError("not Ready: %s\n%s" % (json.dumps((_kubeflow(kube, name, namespace) or {}).get(
                "status"), indent=1), log_path.read_text(errors="replace")[-6000:])) from None
        assert proc.poll() is None, log_path.read_text(errors="replace")[-4000:]
        objects = owned_objects(kube, name)
        control_plane.kubectl("delete", "kubeflow", name, "-n", namespace, "--wait=false")
        wait_for(lambda: _kubeflow(kube, name, namespace) is None, 300, interval=1,
                 what="Kubeflow %s/%s gone after its uninstall finalizer" % (namespace, name))
        return done, objects
    finally:
        _stop(proc, log_path)


def test_ansible_operator_converges_to_the_same_objects_as_the_python_operator(
        ansible_operator, kubeflow_crd, control_plane, kube, tmp_path):
    import ansible_runner_http  # noqa: F401  # pylint: disable=unused-import,import-outside-toplevel
    namespace = "kfocp-sdk-" + uuid.uuid4().hex[:6]
    team = "team-" + uuid.uuid4().hex[:6]
    name = "kf-" + uuid.uuid4().hex[:6]
    control_plane.kubectl("create", "namespace", namespace)
    cr = {"apiVersion": "kfocp.io/v1alpha1", "kind": "Kubeflow", "metadata": {"name": name, "namespace": namespace},
          "spec": _spec(team)}
    venv_bin = os.path.dirname(sys.executable)

    # ansible-operator, in a working directory laid out like its image: watches.yaml and collections/
    workdir = tmp_path / "ansible-operator"
    workdir.mkdir()
    watches = yaml.safe_load(WATCHES.read_text())
    for role in SNAKE_CASE_GAPS:
        watches[0]["vars"]["kfocp_%s_enabled" % role] = False
    (workdir / "watches.yaml").write_text(yaml.safe_dump(watches))
    (workdir / "collections").symlink_to(COLLECTIONS)
    probe = free_port()

    def start_ansible_operator():
        log_path = tmp_path / "ansible-operator.log"
        env = dict(os.environ, KUBECONFIG=str(control_plane.kubeconfig), WATCH_NAMESPACE=namespace,
                   ANSIBLE_COLLECTIONS_PATH=str(workdir / "collections"), ANSIBLE_NOCOLOR="1",
                   PATH=venv_bin + os.pathsep + os.environ.get("PATH", ""))
        for variable in ("ANSIBLE_CONFIG", "K8S_AUTH_KUBECONFIG", "VIRTUAL_ENV", "ANSIBLE_INVENTORY"):
            env.pop(variable, None)
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [str(ansible_operator), "run", "--watches-file", str(workdir / "watches.yaml"),
                 "--health-probe-bind-address", "127.0.0.1:%d" % probe, "--metrics-bind-address", "0",
                 "--max-concurrent-reconciles", "1", "--ansible-verbosity", "1"],
                cwd=str(workdir), env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        return proc, log_path, lambda: _health(probe, "/readyz") == 200

    with _fixed_ports_lock():
        sdk_cr, sdk_objects = _converge_and_delete(control_plane, kube, cr, start_ansible_operator)

    # the status came from kfocp.kubeflow.cr_status at the end of site.yml (manageStatus: false)
    assert _condition(sdk_cr, "Ready")["reason"] == "Converged"
    assert _condition(sdk_cr, "Degraded")["status"] == "False"
    assert sdk_cr["status"]["observedGeneration"] == 1
    assert sdk_cr["status"]["components"]["scc"] == {"state": "Ready"}
    assert sdk_cr["status"]["openshift"] == {"version": "4.20", "operators": {}}
    assert "kfocp.io/uninstall" in sdk_cr["metadata"]["finalizers"]
    # the grant of the spec was applied, as the CR's install (snake_case spec, kfocp_instance from watches.yaml)
    binding = ("rbac.authorization.k8s.io/v1", "RoleBinding", team, "kfocp-scc-nonroot-v2-trainer")
    assert sdk_objects.get(binding) == "scc", sorted(sdk_objects)
    # the finalizer ran playbooks/uninstall.yml
    assert owned_objects(kube, name) == {}

    # kfocp's operator, with the same resource
    port = free_port()

    def start_python_operator():
        log_path = tmp_path / "kfocp-operator.log"
        env = dict(os.environ, KFOCP_COLLECTIONS_PATH=str(COLLECTIONS), PYTHONUNBUFFERED="1")
        env.pop("KUBECONFIG", None)
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kfocp_operator", "--kubeconfig", str(control_plane.kubeconfig),
                 "--port", str(port), "--operator-namespace", namespace, "--watch-namespace", namespace,
                 "--no-fast-path", "--default-reconcile-period", "30m"],
                cwd=str(ROOT / "operator"), env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        return proc, log_path, lambda: _health(port, "/readyz") == 200

    py_cr, py_objects = _converge_and_delete(control_plane, kube, cr, start_python_operator)
    assert _condition(py_cr, "Ready")["status"] == "True"
    assert sdk_objects == py_objects
    assert owned_objects(kube, name) == {}
    control_plane.kubectl("delete", "namespace", namespace, team, "--wait=false", check=False)
