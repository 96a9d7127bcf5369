"""kfocp.kubeflow.cr_status and the status step of playbooks/site.yml, against the real API server."""
import json
import textwrap
import time

import pytest

from helpers import ROOT, only_roles, site_roles, wait_for

CRD = ROOT / "operator" / "config" / "crd" / "bases" / "kfocp.io_kubeflows.yaml"


@pytest.fixture(scope="module")
def kubeflow_crd(control_plane, kube):
    control_plane.kubectl("apply", "--server-side", "--field-manager=kfocp-test", "--force-conflicts", "-f", str(CRD))
    control_plane.wait_established("kubeflows.kfocp.io")
    # the API server's discovery serves a CRD's kind a moment after the CRD is Established
    wait_for(lambda: kube.resources(refresh=True).get(("kfocp.io/v1alpha1", "Kubeflow")), 30,
             what="the API server's discovery to serve kfocp.io/v1alpha1 Kubeflow")
    return CRD


@pytest.fixture
def kubeflow(control_plane, kube, kubeflow_crd, instance):
    """A namespace and an empty Kubeflow resource in it."""
    control_plane.kubectl("create", "namespace", instance)
    cr = {"apiVersion": "kfocp.io/v1alpha1", "kind": "Kubeflow",
          "metadata": {"name": "kubeflow", "namespace": instance}, "spec": {}}
    control_plane.kubectl("apply", "--server-side", "--field-manager=kfocp-test", "-f", "-", input=json.dumps(cr))
    yield instance
    control_plane.kubectl("delete", "namespace", instance, "--wait=false", check=False)


def read(kube, namespace):
    return kube.get(kube.resource("kfocp.io/v1alpha1", "Kubeflow"), "kubeflow", namespace)


def status_play(tmp_path, namespace, conditions, status=None, generation=None):
    """A playbook that sets the given status with the module."""
    task = {"name": "Set the status", "kfocp.kubeflow.cr_status": {
        "kubeconfig": "{{ kfocp_kubeconfig }}", "name": "kubeflow", "namespace": namespace,
        "conditions": conditions}}
    if status is not None:
        task["kfocp.kubeflow.cr_status"]["status"] = status
    if generation is not None:
        task["kfocp.kubeflow.cr_status"]["observed_generation"] = generation
    path = tmp_path / ("status-%d.yml" % int(time.monotonic() * 1e6))
    path.write_text(json.dumps([{"name": "Status", "hosts": "all", "gather_facts": False, "tasks": [task]}]))
    return str(path)


READY = [{"type": "Ready", "status": "True", "reason": "Converged", "message": "all applied"},
         {"type": "Degraded", "status": "False", "reason": "Converged"}]


def test_sets_conditions_and_fields_idempotently_with_check_and_diff(playbook, kube, kubeflow, tmp_path):
    ns = kubeflow
    play = status_play(tmp_path, ns, READY, {"components": {"scc": {"state": "Ready", "changed": 1}}}, 1)

    check = playbook(play, check=True, diff=True)
    assert check.rc == 0 and check.count("changed") == 1, check.stdout
    assert "status" not in read(kube, ns)  # a dry run writes nothing

    first = playbook(play)
    assert first.rc == 0 and first.count("changed") == 1, first.stdout
    status = read(kube, ns)["status"]
    assert status["observedGeneration"] == 1
    assert status["components"] == {"scc": {"state": "Ready", "changed": 1}}
    ready = {c["type"]: c for c in status["conditions"]}
    assert ready["Ready"]["status"] == "True" and ready["Ready"]["message"] == "all applied"
    assert ready["Ready"]["observedGeneration"] == 1
    assert ready["Degraded"]["status"] == "False"
    stamp = ready["Ready"]["lastTransitionTime"]

    time.sleep(1.1)  # a rewrite would carry a later second
    second = playbook(play)
    assert second.rc == 0 and second.count("changed") == 0, second.stdout
    assert read(kube, ns)["status"] == status

    # a new message with the same status keeps the transition time
    same = playbook(status_play(tmp_path, ns, [dict(READY[0], message="again")]))
    assert same.rc == 0 and same.count("changed") == 1
    again = {c["type"]: c for c in read(kube, ns)["status"]["conditions"]}
    assert again["Ready"]["message"] == "again" and again["Ready"]["lastTransitionTime"] == stamp
    assert again["Degraded"] == ready["Degraded"]  # other conditions are left alone

    # a flip moves it, and diff mode shows before and after
    flip = playbook(status_play(tmp_path, ns, [{"type": "Ready", "status": "False", "reason": "Failed"}]), diff=True)
    assert flip.rc == 0 and flip.count("changed") == 1
    res = flip.task_results("cr_status")[0]
    assert res["diff"]["before"]["status"]["conditions"][0]["status"] == "True"
    assert res["diff"]["after"]["status"]["conditions"][0]["status"] == "False"
    flipped = {c["type"]: c for c in read(kube, ns)["status"]["conditions"]}
    assert flipped["Ready"]["status"] == "False" and flipped["Ready"]["lastTransitionTime"] > stamp
    # fields not given are kept
    assert read(kube, ns)["status"]["components"] == {"scc": {"state": "Ready", "changed": 1}}


def test_bad_condition_fails_before_any_change(playbook, kube, kubeflow, tmp_path):
    ns = kubeflow
    bad = playbook(status_play(tmp_path, ns, [{"type": "Ready", "status": "True", "reason": "not camel"}]))
    assert bad.rc != 0
    assert "conditions[0].reason: 'not camel' is not a CamelCase reason" in bad.stdout
    assert "status" not in read(kube, ns)

    wrong = playbook(status_play(tmp_path, ns, [{"type": "Ready", "status": "yes", "reason": "R"}]))
    assert wrong.rc != 0 and "conditions[0].status: 'yes' is not True, False or Unknown" in wrong.stdout
    assert "status" not in read(kube, ns)


def test_missing_resource_is_a_clear_error(playbook, kube, kubeflow, tmp_path):
    play = tmp_path / "missing.yml"
    play.write_text(textwrap.dedent("""\
        - name: Status of a resource that does not exist
          hosts: all
          gather_facts: false
          tasks:
            - name: Set the status
              kfocp.kubeflow.cr_status:
                kubeconfig: "{{ kfocp_kubeconfig }}"
                name: nothing-here
                namespace: %s
                conditions: [{type: Ready, status: "True", reason: Converged}]
        """ % kubeflow))
    result = playbook(str(play))
    assert result.rc != 0
    assert "Kubeflow %s/nothing-here not found" % kubeflow in result.stdout


def only_scc(instance):
    """Extravars that run the scc role with no grant and turn every other role off."""
    return dict(only_roles("scc"), kfocp_instance=instance, scc_grants=[])


def operator_vars(kube, namespace, instance):
    """The variables an operator (ansible-operator or kfocp's) passes to the playbook."""
    cr = read(kube, namespace)
    return dict(only_scc(instance), ansible_operator_meta={"name": "kubeflow", "namespace": namespace},
                _kfocp_io_kubeflow=cr)


def test_site_reports_status_only_under_an_operator(playbook, kube, kubeflow, instance):
    ns = kubeflow
    plain = playbook("site", only_scc(instance))
    assert plain.rc == 0, plain.stdout
    assert "status" not in read(kube, ns)
    assert plain.task_results("cr_status") == []

    extra = operator_vars(kube, ns, instance)
    run = playbook("site", extra)
    assert run.rc == 0, run.stdout
    status = read(kube, ns)["status"]
    conditions = {c["type"]: c for c in status["conditions"]}
    assert conditions["Ready"]["status"] == "True" and conditions["Ready"]["reason"] == "Converged"
    assert conditions["Progressing"]["status"] == "False"
    assert conditions["Degraded"]["status"] == "False"
    assert status["observedGeneration"] == extra["_kfocp_io_kubeflow"]["metadata"]["generation"]
    expected = dict((role, {"state": "Ready" if role == "scc" else "NotRun"}) for role in site_roles())
    assert status["components"] == expected
    assert "scc" in conditions["Ready"]["message"]

    # kfocp_report_status: false leaves the status to the caller
    quiet = playbook("site", dict(extra, kfocp_report_status=False))
    assert quiet.rc == 0 and quiet.task_results("cr_status") == []
