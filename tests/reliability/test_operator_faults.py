"""The operator stopped (SIGTERM) and killed (SIGKILL to every process of it, as when its pod dies)
in the middle of a reconcile, and killed in the middle of an uninstall, then started again.

A stopped operator cancels its playbook run before it exits: no process of it is left, and the
cancelled run is not reported as a failure.

A reconcile interrupted while site.yml applies ends, after the restart, exactly as a clean one:
the same objects, field for field, and the same status. An uninstall interrupted while
uninstall.yml deletes is finished after the restart; the CR keeps its finalizer kfocp.io/uninstall
until then, and nothing labelled with the instance is left.

Each test prints its figures (-s shows them)."""
import json
import subprocess
import sys
import threading
import time
import uuid

import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o
from helpers import (ROOT, labelled_objects, operator_account, play_profile_controller, profile_controller,
                     roles_off_except, wait_for)

sys.path[:0] = [str(ROOT / "operator"), str(ROOT / "operator" / "hack")]

import launch  # noqa: E402
from kfocp_operator.processes import descendants, kill_tree  # noqa: E402

NS = launch.NAMESPACE
FINALIZER = "kfocp.io/uninstall"
# The roles of site.yml that need nothing but the API server, in their order: scc grants, a
# declared Profile, the self-service admission policy, the profile namespaces' policies.
ON = ("scc", "profiles", "profile_self_service", "namespace_policies")


@pytest.fixture(scope="module", autouse=True)
def running_profile_controller(control_plane, kube):
    """Kubeflow's profile controller runs throughout, as on a cluster: the uninstalls wait for it
    to release the Profiles."""
    with profile_controller(control_plane, kube=kube):
        yield


@pytest.fixture(scope="module")
def setup(control_plane, kube, tmp_path_factory):
    """The operator's API and RBAC, a kubeconfig of its service account, two profile namespaces
    (as the profile controller makes them) and the spec of the CR the tests create."""
    workdir = tmp_path_factory.mktemp("operator-faults")
    kubeconfig = operator_account(control_plane, kube, workdir, alone=True)
    suffix = uuid.uuid4().hex[:6]
    teams = ["faults-%s-%d" % (suffix, i) for i in range(2)]
    profiles = [{"apiVersion": "kubeflow.org/v1", "kind": "Profile", "metadata": {"name": team},
                 "spec": {"owner": {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": team + "@x"}}}
                for team in teams]
    control_plane.kubectl("apply", "--server-side", "--field-manager=kubeflow-user", "-f", "-",
                          input=json.dumps({"apiVersion": "v1", "kind": "List", "items": profiles}))
    play_profile_controller(control_plane, teams)
    spec = dict(roles_off_except(*ON), namespacePoliciesWhitelistOthers=False,
                sccGrantsExtra=[{"namespace": teams[0], "serviceaccount": "trainer", "scc": "nonroot-v2",
                                 "reason": "fixed UID"}],
                profilesList=[{"name": "faults-%s-declared" % suffix, "owner": {"user": "dana-%s" % suffix}}])
    yield {"kubeconfig": kubeconfig, "workdir": workdir, "spec": spec, "name": "kf-faults-" + suffix}
    for team in teams:
        control_plane.kubectl("delete", "profile", team, "--wait=false", check=False)
        control_plane.kubectl("delete", "namespace", team, "--wait=false", check=False)


def _operator(setup):
    return launch.Operator(setup["kubeconfig"], setup["workdir"] / "operator.log", ["--default-reconcile-period", "0"])


def _kubeflow(kube, name):
    return kube.get(kube.resource("kfocp.io/v1alpha1", "Kubeflow"), name, NS)


def _condition(cr, kind):
    for cond in ((cr or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == kind:
            return cond
    return {}


def _converged(kube, name):
    cr = _kubeflow(kube, name)
    status = (cr or {}).get("status") or {}
    if _condition(cr, "Ready").get("status") == "True" and _condition(cr, "Progressing").get("status") == "False" \
            and status.get("observedGeneration") == cr["metadata"]["generation"]:
        return cr
    failed = _condition(cr, "Degraded")
    assert failed.get("status") != "True", "the reconcile failed: %s" % failed.get("message")
    return None


def _create(control_plane, setup):
    cr = {"apiVersion": "kfocp.io/v1alpha1", "kind": "Kubeflow", "metadata": {"name": setup["name"], "namespace": NS},
          "spec": setup["spec"]}
    control_plane.kubectl("create", "-f", "-", input=json.dumps(cr))


def _state(kube, name):
    """kfocp's objects of the instance (owned and patched), without server bookkeeping, and the
    parts of the CR's status that say what the reconcile did."""
    objs = {}
    for key, obj in labelled_objects(kube, name).items():
        obj = o.strip(obj)
        for ref in obj["metadata"].get("ownerReferences") or []:  # a recreated owner (a Profile) has a new uid
            ref.pop("uid", None)
        if key[1] == "Service":  # allocated by the API server on each creation
            for field in ("clusterIP", "clusterIPs"):
                obj["spec"].pop(field, None)
        objs[key] = obj
    cr = _kubeflow(kube, name)
    status = cr.get("status") or {}
    summary = {"observedGeneration": status.get("observedGeneration"),
               "conditions": sorted((c["type"], c["status"], c["reason"]) for c in status.get("conditions") or []),
               "components": dict((role, c["state"]) for role, c in (status.get("components") or {}).items()),
               "result": (status.get("lastRun") or {}).get("result"),
               "failed": (status.get("lastRun") or {}).get("failed"),
               "finalizers": cr["metadata"].get("finalizers")}
    return objs, summary


def _uninstalled(kube, name):
    wait_for(lambda: _kubeflow(kube, name) is None, 600, interval=1, what="the CR %s gone (finalizer removed)" % name)
    left = labelled_objects(kube, name)
    assert not left, "still labelled as %s's after the uninstall: %s" % (name, sorted(left)[:20])


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _count(kube, res, name):
    return len(kube.list(res, label_selector="kfocp.io/instance=%s" % name, metadata_only=True))


def test_killing_a_process_tree_reaches_the_processes_in_sessions_of_their_own():
    """As Ansible's workers do, the grandchild starts a session of its own: killing the child's
    process group would miss it, killing the tree does not."""
    script = ("import os, subprocess, sys, time\n"
              "subprocess.Popen([sys.executable, '-c', 'import os, time; os.setsid(); time.sleep(60)'])\n"
              "time.sleep(60)\n")
    child = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    tree = wait_for(lambda: len(descendants(child.pid)) == 1 and descendants(child.pid), 10, 0.05,
                    what="the grandchild started")
    killed = kill_tree(child.pid, include_root=True)
    child.wait(10)
    wait_for(lambda: not _alive(tree[0]), 10, 0.05, what="the grandchild gone")
    print("kill_tree: killed %s (the child and its grandchild in a session of its own)" % killed)
    assert killed == sorted([child.pid] + tree)


def test_a_reconcile_killed_mid_run_ends_as_a_clean_one(setup, kube, control_plane):
    name = setup["name"]
    operator = _operator(setup).start(detach=True)
    try:
        started = time.monotonic()
        _create(control_plane, setup)
        wait_for(lambda: _converged(kube, name), 600, interval=1, what="a clean reconcile of %s" % name)
        clean_seconds = time.monotonic() - started
        reference, reference_status = _state(kube, name)
        owned = len(labelled_objects(kube, name, patched=False))
        control_plane.kubectl("delete", "kubeflow", name, "-n", NS, "--wait=false")
        _uninstalled(kube, name)

        # The same CR again. First the operator is stopped (SIGTERM) once the run has begun to
        # apply: it cancels its playbook and exits, leaving no process and no failed status behind.
        rolebindings = kube.resource("rbac.authorization.k8s.io/v1", "RoleBinding")
        _create(control_plane, setup)
        wait_for(lambda: _count(kube, rolebindings, name), 600, interval=0.05, what="the scc role applying")
        running = descendants(operator.proc.pid)
        stopping = time.monotonic()
        operator.stop(grace=60)
        stop_seconds = time.monotonic() - stopping
        survivors = [pid for pid in running if _alive(pid)]
        stopped = _kubeflow(kube, name)
        cancelled = "run of site.yml cancelled" in operator.log_tail(20000)

        # Then, started again, it is killed (SIGKILL to every process) once the profiles role has
        # applied the declared Profile, before the roles after it, and started once more.
        profiles = kube.resource("kubeflow.org/v1", "Profile")
        operator.start(detach=True)
        wait_for(lambda: _count(kube, profiles, name), 600, interval=0.05, what="the profiles role applying")
        pids = operator.kill_pod()
        killed_at = len(labelled_objects(kube, name, patched=False))
        interrupted = _kubeflow(kube, name)
        time.sleep(3)
        still = len(labelled_objects(kube, name, patched=False))
        operator.start(detach=True)
        restarted = time.monotonic()
        wait_for(lambda: _converged(kube, name), 600, interval=1, what="the reconcile after the restart")
        recovered_seconds = time.monotonic() - restarted
        recovered, recovered_status = _state(kube, name)
    finally:
        operator.stop()
    print("operator stopped (SIGTERM) mid-reconcile: exited in %.1fs, %d of its %d processes left, status %s"
          % (stop_seconds, len(survivors), len(running), sorted((c["type"], c["status"], c["reason"])
                                                                for c in stopped["status"]["conditions"])))
    assert running, "no playbook process was running when the operator was stopped"
    assert not survivors, "processes of the stopped operator still run: %s" % survivors
    assert cancelled, "the operator did not say that it cancelled its run"
    assert _condition(stopped, "Degraded").get("status") != "True", "a cancelled run was reported as failed"
    assert _condition(stopped, "Progressing").get("status") == "True"
    print("operator killed mid-reconcile: %d processes killed; %d of %d objects existed at the kill (%d three "
          "seconds later); clean reconcile %.1fs, after the restart %.1fs; %d objects compared"
          % (len(pids), killed_at, owned, still, clean_seconds, recovered_seconds, len(reference)))
    assert len(pids) > 1, "the playbook's processes were not found: the kill did not interrupt a run"
    assert _condition(interrupted, "Progressing").get("status") == "True", "the kill came after the run"
    assert 0 < killed_at < owned, "the kill did not come in the middle of the run"
    assert still == killed_at, "objects were still being applied after every process of the operator was killed"
    assert set(recovered) == set(reference), "objects differ from a clean reconcile: missing %s, extra %s" % (
        sorted(set(reference) - set(recovered))[:10], sorted(set(recovered) - set(reference))[:10])
    different = [key for key in reference if recovered[key] != reference[key]]
    assert not different, "objects that differ from a clean reconcile: %s\n%s\n%s" % (
        different[:5], different and reference[different[0]], different and recovered[different[0]])
    assert recovered_status == reference_status


def test_an_uninstall_killed_mid_run_is_finished_and_keeps_the_finalizer_until_then(setup, kube, control_plane):
    name = setup["name"]
    operator = _operator(setup).start(detach=True)
    watcher = None
    try:
        if _kubeflow(kube, name) is None:
            _create(control_plane, setup)
        wait_for(lambda: _converged(kube, name), 600, interval=1, what="%s Ready" % name)
        installed = labelled_objects(kube, name)
        rolebindings = kube.resource("rbac.authorization.k8s.io/v1", "RoleBinding")
        before = _count(kube, rolebindings, name)
        assert before > 0

        control_plane.kubectl("delete", "kubeflow", name, "-n", NS, "--wait=false")
        wait_for(lambda: _count(kube, rolebindings, name) < before, 600, interval=0.05,
                 what="uninstall.yml deleting the RoleBindings")
        pids = operator.kill_pod()
        seen = []
        for _unused in range(15):  # the operator is gone: the CR must wait, with its finalizer
            cr = _kubeflow(kube, name)
            seen.append(cr is not None and FINALIZER in cr["metadata"].get("finalizers", []))
            time.sleep(0.2)
        left_at_kill = labelled_objects(kube, name)

        # After the restart, watch the CR: while it exists it keeps its finalizer; the moment it is
        # gone, nothing of the instance may be left.
        gone = {}

        def watch():
            while True:
                cr = _kubeflow(kube, name)
                if cr is None:
                    gone["left"] = labelled_objects(kube, name)
                    return
                seen.append(FINALIZER in cr["metadata"].get("finalizers", []))
                time.sleep(0.2)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        operator.start(detach=True)
        restarted = time.monotonic()
        watcher.join(600)
        finished_seconds = time.monotonic() - restarted
    finally:
        operator.stop()
    print("operator killed mid-uninstall: %d processes killed; %d of %d objects left at the kill; uninstall "
          "finished %.1fs after the restart; the CR was seen %d times before it was gone, always with its finalizer: %s"
          % (len(pids), len(left_at_kill), len(installed), finished_seconds, len(seen), all(seen)))
    assert watcher is not None and not watcher.is_alive(), "the CR is still there 600s after the restart"
    assert left_at_kill, "the uninstall had already finished when the operator was killed"
    assert all(seen), "the finalizer was dropped while the CR still existed"
    assert not gone["left"], "the CR was gone before the uninstall finished; left: %s" % sorted(gone["left"])[:20]
