"""Pure parts of the operator: configuration precedence, durations, status computation, the work
queue's coalescing, runner event accounting, extravars, the singleton choice, token handling."""
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "operator"))

from kfocp_operator import collection  # noqa: E402

collection.importable()

from kfocp_operator import auth, config, playbook, status  # noqa: E402
from kfocp_operator.controller import active_key  # noqa: E402
from kfocp_operator.playbook import CR_VARIABLE, EventRecorder, RunResult, extravars, inventory, playbook_roles  # noqa: E402
from kfocp_operator.spec import SpecModel  # noqa: E402
from kfocp_operator.workqueue import WorkQueue  # noqa: E402

ROLES = {"demo": {"description": "", "defaults": {}, "options": {
    "demo_state": {"type": "str", "choices": ["present", "absent"]},
    "demo_items": {"type": "list", "elements": "dict", "options": {"target_namespace": {"type": "str"}}},
    "demo_count": {"type": "int"}}}}
MODEL = SpecModel(ROLES)


# ------------------------------------------------------------ configuration precedence

@pytest.mark.parametrize("env, configmap, spec, expected", [
    ({}, {}, {}, {}),
    ({"KFOCP_DEMO_COUNT": "3"}, {}, {}, {"demo_count": 3}),
    ({"KFOCP_DEMO_COUNT": "3"}, {"demo_count": "4"}, {}, {"demo_count": 4}),
    ({"KFOCP_DEMO_COUNT": "3"}, {"demoCount": "4"}, {"demoCount": 5}, {"demo_count": 5}),
    ({}, {"demoItems": "[{targetNamespace: a}]"}, {}, {"demo_items": [{"target_namespace": "a"}]}),
    ({"KFOCP_DEMO_STATE": "absent", "KFOCP_UNRELATED": "x"}, {}, {"demoCount": 1},
     {"demo_state": "absent", "demo_count": 1}),
])
def test_spec_beats_configmap_beats_environment(env, configmap, spec, expected):
    variables, ignored = config.merge(MODEL, spec, configmap, env)
    assert variables == expected and ignored == []


def test_unknown_configmap_keys_are_reported_not_used():
    variables, ignored = config.merge(MODEL, {}, {"nonsense": "1", "demo_count": "2"}, {})
    assert variables == {"demo_count": 2} and ignored == ["nonsense"]


@pytest.mark.parametrize("field, value", [("componentsKubectl", "/bin/sh"), ("componentsRenderDir", "/etc"),
                                          ("sccRenderDir", "/etc"),
                                          ("componentsMirrorFile", "/root/.ssh/authorized_keys")])
def test_a_cr_cannot_set_what_acts_on_the_operators_host(field, value):
    model = SpecModel.from_collection(ROOT)
    with pytest.raises(config.ConfigError, match="spec.%s: .* only the operator's configuration may set it" % field):
        config.merge(model, {field: value}, {}, {})
    # the operator's own configuration may
    name = {"componentsKubectl": "components_kubectl", "componentsRenderDir": "components_render_dir",
            "sccRenderDir": "scc_render_dir", "componentsMirrorFile": "components_mirror_file"}[field]
    variables, _ignored = config.merge(model, {}, {name: value}, {})
    assert variables[name] == value


@pytest.mark.parametrize("annotations, variables, named", [
    ({"ansible.sdk.operatorframework.io/reconcile-period": "soon"}, {}, "the annotation ansible.sdk.operatorframework.io/reconcile-period"),
    ({"ansible.sdk.operatorframework.io/reconcile-period": "5 m"}, {"reconcile_period": "5m"},
     "the annotation ansible.sdk.operatorframework.io/reconcile-period"),
    ({}, {"reconcile_period": "1x"}, "spec.reconcilePeriod"),
])
def test_a_bad_reconcile_period_names_where_it_was_set(annotations, variables, named):
    with pytest.raises(config.ConfigError) as err:
        config.reconcile_period(annotations, variables)
    assert str(err.value).startswith(named + ": "), err.value


def test_a_value_nested_too_deep_is_refused_naming_the_field():
    deep = "bottom"
    for level in range(200):
        deep = {"l%d" % level: deep} if level % 2 else [deep]
    with pytest.raises(config.ConfigError, match=r"spec.demoItems: nested more than 64 levels deep"):
        config.merge(MODEL, {"demoCount": 1, "demoItems": deep}, {}, {})
    assert config.depth(deep) == 65  # counted no further than needed
    shallow = {"a": [{"b": 1}]}
    assert config.depth(shallow) == 3 and config.merge(MODEL, {"demoState": shallow}, {}, {})[0]


def test_bad_yaml_in_the_configmap_names_the_key():
    with pytest.raises(config.ConfigError, match="ConfigMap key demo_items"):
        config.merge(MODEL, {}, {"demo_items": "[unclosed"}, {})


@pytest.mark.parametrize("text, seconds", [("90s", 90), ("10m", 600), ("1h30m", 5400), ("1.5h", 5400), ("250ms", 0.25),
                                           ("45", 45)])
def test_durations(text, seconds):
    assert config.parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "10", "ten minutes", "10x", "m10"][2:])
def test_bad_durations(text):
    with pytest.raises(config.ConfigError, match="is not a duration"):
        config.parse_duration(text)


def test_reconcile_period_annotation_then_setting_then_default():
    annotation = {"ansible.sdk.operatorframework.io/reconcile-period": "2m"}
    assert config.reconcile_period(annotation, {"reconcile_period": "5m"}) == 120
    assert config.reconcile_period({}, {"reconcile_period": "5m"}) == 300
    assert config.reconcile_period({}, {}, default=42) == 42
    assert config.reconcile_period({}, {"reconcile_period": "0s"}) == 0


@pytest.mark.parametrize("annotations, variables, field", [
    ({"ansible.sdk.operatorframework.io/reconcile-period": "1ms"}, {}, "the annotation ansible.sdk.operatorframework.io/reconcile-period"),
    ({}, {"reconcile_period": "59s"}, "spec.reconcilePeriod"),
    ({"ansible.sdk.operatorframework.io/reconcile-period": "soon"}, {}, "the annotation ansible.sdk.operatorframework.io/reconcile-period")])
def test_a_reconcile_period_below_the_minimum_or_malformed_names_its_field(annotations, variables, field):
    with pytest.raises(config.ConfigError) as err:
        config.reconcile_period(annotations, variables)
    assert str(err.value).startswith(field + ":")


# ------------------------------------------------------------ status

def test_condition_keeps_its_transition_time_while_the_status_holds():
    old = [{"type": "Ready", "status": "True", "reason": "Reconciled", "lastTransitionTime": "T0"},
           {"type": "Degraded", "status": "False", "reason": "Reconciled", "lastTransitionTime": "T0"}]
    new = status.merge_conditions(old, [status.condition("Ready", True, "Reconciled", "again"),
                                        status.condition("Degraded", True, "PlaybookFailed", "boom")], "T1")
    assert [(c["type"], c["lastTransitionTime"]) for c in new] == [("Ready", "T0"), ("Degraded", "T1")]


def test_running_changes_only_progressing():
    old = [{"type": "Ready", "status": "True", "reason": "Reconciled", "lastTransitionTime": "T0"}]
    new = status.merge_conditions(old, status.running(3), "T1")
    assert [c["type"] for c in new] == ["Ready", "Progressing"]
    assert new[0]["status"] == "True" and new[1]["status"] == "True" and new[1]["observedGeneration"] == 3


def _result(rc, failures=(), roles=None, invalid=False):
    result = RunResult("site.yml")
    result.rc, result.status = rc, "successful" if rc == 0 else "failed"
    result.failures = list(failures)
    result.roles = roles or {}
    result.invalid_spec = invalid
    result.finished = "T"
    return result


def test_status_after_a_good_run():
    out = status.after_run(_result(0, roles={"scc": {"ok": 3, "changed": 1, "failed": 0, "skipped": 0}}), 4,
                           ["scc", "profiles"])
    ready = status.get(out["conditions"], "Ready")
    assert ready["status"] == "True" and ready["reason"] == "Reconciled" and out["observedGeneration"] == 4
    assert out["components"]["scc"]["state"] == "Ready" and out["components"]["profiles"]["state"] == "NotRun"
    assert out["lastRun"]["result"] == "Succeeded"


def test_status_after_a_failed_run_names_the_failure():
    out = status.after_run(_result(2, ["scc : Build: scc_grants[0].scc: 'x' is not an allowed SCC"],
                                   {"scc": {"ok": 1, "changed": 0, "failed": 1, "skipped": 0, "message": "m"}},
                                   invalid=False), 5)
    degraded = status.get(out["conditions"], "Degraded")
    assert degraded["status"] == "True" and "scc_grants[0].scc" in degraded["message"]
    assert status.get(out["conditions"], "Ready")["status"] == "False"
    assert out["components"]["scc"]["state"] == "Failed"


def test_the_pre_flights_reading_of_the_cluster_goes_into_the_status():
    result = RunResult("site.yml")
    record = EventRecorder(result)
    facts = {"kfocp_openshift": "4.18", "kfocp_operator_versions": {"nfd": "4.18.0-202501"}}
    record({"event": "runner_on_ok", "event_data": {"task": "Give the roles the cluster's OpenShift version",
                                                    "res": {"changed": False, "ansible_facts": facts}}})
    result.rc, result.status, result.finished = 0, "successful", "T"
    assert status.after_run(result, 1)["openshift"] == {"version": "4.18", "operators": {"nfd": "4.18.0-202501"}}
    assert "openshift" not in status.after_run(_result(2, ["x"]), 1)  # stopped before the pre-flight read it


def test_argument_spec_failures_are_invalid_spec():
    out = status.after_run(_result(2, ["x"], invalid=True), 1)
    assert status.get(out["conditions"], "Degraded")["reason"] == "InvalidSpec"


def test_refused_names_the_active_cr():
    out = status.refused("ns/first", 1)
    assert "ns/first is the active one" in status.get(out["conditions"], "Degraded")["message"]
    assert status.get(out["conditions"], "Ready")["reason"] == "Refused"


# ------------------------------------------------------------ the singleton

def _cr(ns, name, created):
    return {"metadata": {"namespace": ns, "name": name, "creationTimestamp": created}}


def test_the_oldest_cr_is_the_active_one():
    crs = [_cr("b", "x", "2026-01-02T00:00:00Z"), _cr("a", "y", "2026-01-01T00:00:00Z"),
           _cr("a", "a", "2026-01-01T00:00:00Z")]
    assert active_key(crs) == ("a", "a")
    assert active_key([]) is None


# ------------------------------------------------------------ work queue

def test_adds_during_a_run_coalesce_into_one_follow_up():
    queue = WorkQueue()
    queue.add("k")
    assert queue.get(0.1) == "k"
    for _attempt in range(5):
        queue.add("k")
    assert queue.get(0.05) is None, "a key must not be handed out while it is being handled"
    queue.done("k")
    assert queue.get(0.1) == "k"
    queue.done("k")
    assert queue.get(0.05) is None, "exactly one follow-up"


def test_one_worker_at_a_time_per_key():
    queue, active, overlaps = WorkQueue(), [], []

    def worker():
        while True:
            key = queue.get(0.3)
            if key is None:
                return
            if key in active:
                overlaps.append(key)
            active.append(key)
            time.sleep(0.01)
            active.remove(key)
            queue.done(key)

    threads = [threading.Thread(target=worker) for _index in range(4)]
    for thread in threads:
        thread.start()
    for _attempt in range(50):
        queue.add("same")
        time.sleep(0.002)
    for thread in threads:
        thread.join()
    assert not overlaps


def test_add_after_delays():
    queue = WorkQueue()
    queue.add_after("k", 0.2)
    assert queue.get(0.05) is None
    assert queue.get(1.0) == "k"
    queue.forget("k")


def test_one_pending_schedule_per_key_the_last_one_wins():
    queue = WorkQueue()
    for delay in (0.05, 0.1, 0.15, 0.3):
        queue.add_after("k", delay)
    assert 0.2 < queue.scheduled("k") <= 0.3
    assert queue.get(0.2) is None, "an earlier, replaced schedule fired"
    assert queue.get(0.5) == "k"
    queue.done("k")
    assert queue.get(0.4) is None, "one schedule gave more than one run"


def test_handing_a_key_out_drops_its_schedule():
    queue = WorkQueue()
    queue.add_after("k", 0.1)
    queue.add("k")  # an event: the run it causes decides the next schedule
    assert queue.get(0.05) == "k" and queue.scheduled("k") is None
    queue.done("k")
    assert queue.get(0.3) is None
    queue.add_after("gone", 0.05)
    queue.forget("gone")
    assert queue.get(0.2) is None


def test_failures_back_off_exponentially_to_a_cap_and_a_success_resets(monkeypatch):
    from kfocp_operator import controller
    from kfocp_operator.metrics import Metrics

    outcomes = iter([RuntimeError("boom")] * 9 + [None, RuntimeError("boom")])

    class Probe(controller.Controller):
        def reconcile(self, key):
            outcome = next(outcomes)
            if outcome is not None:
                raise outcome
            self.failures.pop(key, None)
            return None

        def _safe_status(self, key, new):
            return None

    settings = controller.Settings(None, ROOT)
    metrics = Metrics()
    ctl = Probe(None, settings, MODEL, metrics)
    delays = []
    real_add_after = ctl.queue.add_after
    monkeypatch.setattr(ctl.queue, "add_after", lambda key, delay: (delays.append(delay), real_add_after(key, 3600)))
    key = ("ns", "kf")
    for _run in range(11):
        ctl.queue.add(key)
        ctl.stop.clear()
        worker = threading.Thread(target=ctl._work)  # pylint: disable=protected-access
        worker.start()
        deadline = time.monotonic() + 5
        while ctl.queue.depth() and time.monotonic() < deadline:
            time.sleep(0.01)
        ctl.stop.set()
        worker.join(5)
        assert len(ctl.queue._waiting) <= 1, "one pending retry per key"  # pylint: disable=protected-access
    assert delays == [5, 10, 20, 40, 80, 160, 320, 600, 600, 5]
    assert metrics.registry.get_sample_value("kfocp_operator_retries_total", {"kind": "kubeflow"}) == 10
    assert metrics.registry.get_sample_value("kfocp_operator_retry_backoff_seconds", {"kind": "kubeflow"}) == 5


# ------------------------------------------------------------ runner events and extravars

def test_events_are_counted_per_role_with_failures():
    result = RunResult("site.yml")
    record = EventRecorder(result)
    events = [
        {"event": "runner_on_ok", "event_data": {"role": "kfocp.kubeflow.scc", "task": "a", "res": {"changed": True}}},
        {"event": "runner_on_ok", "event_data": {"role": "scc", "task": "b", "res": {"changed": False}}},
        {"event": "runner_on_skipped", "event_data": {"role": "scc", "task": "c", "res": {}}},
        {"event": "runner_on_failed", "event_data": {"role": "profiles", "task": "d", "ignore_errors": True, "res": {}}},
        {"event": "runner_on_failed", "event_data": {"role": "profiles", "task": "Validating arguments",
                                                     "task_action": "ansible.builtin.validate_argument_spec",
                                                     "res": {"msg": "bad", "argument_errors": ["x is wrong"]}}},
    ]
    for event in events:
        record(event)
    assert result.roles["scc"] == {"ok": 2, "changed": 1, "failed": 0, "skipped": 1}
    assert result.roles["profiles"]["failed"] == 1 and result.roles["profiles"]["ok"] == 1
    assert result.totals["changed"] == 1 and result.totals["failed"] == 1
    assert result.failures == ["profiles : Validating arguments: bad: x is wrong"]
    assert result.invalid_spec


def test_the_pre_flight_check_of_argument_specs_is_an_invalid_spec():
    result = RunResult("site.yml")
    EventRecorder(result)({"event": "runner_on_failed", "event_data": {
        "role": "kfocp.kubeflow.gpu", "task": "Check the variables of the gpu role against its argument specs",
        "task_action": "kfocp.kubeflow.role_inputs", "res": {"msg": "bad", "argument_errors": ["y is wrong"]}}})
    assert result.invalid_spec and result.failures[0].endswith("y is wrong")


def test_a_change_made_by_a_no_log_task_is_counted(tmp_path):
    """The real ansible-runner: it replaces a no_log task's result by {"censored": ...} in its
    events (ansible_runner/display_callback/callback/awx_display.py, capture_event_data), so the
    change is known only from the run's statistics (the playbook_on_stats event)."""
    book = tmp_path / "secret.yml"
    book.write_text("- hosts: localhost\n  gather_facts: false\n  tasks:\n"
                    "    - name: Change something secret\n      ansible.builtin.command: 'true'\n"
                    "      changed_when: true\n      no_log: true\n")
    result = playbook.run(str(book), {}, tmp_path)
    assert result.ok, result.failures
    assert result.totals["changed"] == 1


def test_extravars_have_ansible_operators_shape():
    cr = {"apiVersion": "kfocp.io/v1alpha1", "kind": "Kubeflow", "metadata": {"name": "kf", "namespace": "ns"},
          "spec": {"demoCount": 1}}
    out = extravars(cr, {"demo_count": 1}, "/k.conf")
    assert CR_VARIABLE == "_kfocp_io_kubeflow"
    assert out == {"demo_count": 1, "ansible_operator_meta": {"name": "kf", "namespace": "ns"},
                   "_kfocp_io_kubeflow": cr, "kfocp_instance": "kf", "kfocp_kubeconfig": "/k.conf"}


def test_inventory_is_one_local_host_with_the_operators_python():
    host = inventory("/py")["all"]["hosts"]["localhost"]
    assert host == {"ansible_connection": "local", "ansible_python_interpreter": "/py"}


def test_site_roles_are_read_in_order():
    roles = playbook_roles(ROOT / "playbooks" / "site.yml")
    assert roles and roles[0] == "scc"


# ------------------------------------------------------------ tokens

class _Cfg:
    def __init__(self, api_key, hook=None):
        self.api_key = dict(api_key)
        self.api_key_prefix = {}
        self.refresh_api_key_hook = hook
        self.host = "https://h"
        self.ssl_ca_cert = "/ca.crt"

    def get_api_key_with_prefix(self, identifier):
        if self.refresh_api_key_hook:
            self.refresh_api_key_hook(self)
        return self.api_key.get(identifier)


def test_bearer_token_is_shared_and_follows_refreshes():
    def rotate(cfg):
        cfg.api_key["BearerToken"] = "bearer new"
    cfg = auth.share_bearer_token(_Cfg({"BearerToken": "Bearer old"}, rotate))
    assert cfg.api_key["authorization"] == "Bearer old"
    assert cfg.get_api_key_with_prefix("authorization") == "bearer new"  # the refresh is followed


def test_extra_variables_are_text_never_templates():
    import yaml
    variables = {"reason": "{{ lookup('pipe', 'id') }}", "n": 3, "enabled": True, "none": None,
                 "grants": [{"scc": "anyuid"}], "labels": {"a.io/b": "null"}, "patterns": ["*", "1.0"]}
    text = playbook.extravars_yaml(variables)
    assert text.startswith("!unsafe\n")  # the whole mapping: every string in it is text to Ansible
    loader = type("Loader", (yaml.SafeLoader,), {})
    loader.add_constructor("!unsafe", lambda load, node: load.construct_mapping(node, deep=True))
    assert yaml.load(text, Loader=loader) == variables


def test_a_playbook_run_is_told_where_the_credentials_are_never_given_them():
    assert auth.playbook_env("/kc") == {"K8S_AUTH_KUBECONFIG": "/kc"}
    assert auth.playbook_env() == {}  # in a pod: the run loads the service account's token file itself


@pytest.mark.parametrize("variables, labels, members", [
    ({}, {"kfocp.io/mesh": "kubeflow"}, 1),
    ({"service_mesh_flavour": "ossm3"}, {"kfocp.io/mesh": "kubeflow", "istio-injection": "enabled"}, 0),
    ({"service_mesh_flavour": "ossm3", "service_mesh_member_label": {"mesh": "ai"}},
     {"mesh": "ai", "istio-injection": "enabled"}, 0),
    ({"service_mesh_flavour": "ossm3", "namespace_policies_mesh_mode": "none"}, None, 0),
])
def test_fast_path_joins_the_mesh_the_way_the_role_does(variables, labels, members):
    """The fast path's settings carry the service_mesh variables, as the role's vars do."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies
    from kfocp_operator.fastpath import tenancy_settings
    ns = {"metadata": {"name": "team-a", "labels": {"app.kubernetes.io/part-of": "kubeflow-profile"}}}
    objs = namespace_policies.objects_for_namespace(ns, tenancy_settings(variables, "kf")["namespace_policies"])
    patch = [o for o in objs if o["kind"] == "Namespace"][0]
    pod_security = ("pod-security.kubernetes.io/", "security.openshift.io/scc.podSecurityLabelSync")
    assert patch["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "baseline"  # the role's default
    others = dict((k, v) for k, v in patch["metadata"]["labels"].items() if not k.startswith(pod_security))
    assert (others or None) == labels
    assert len([o for o in objs if o["kind"] == "ServiceMeshMember"]) == members


def test_an_outside_edit_is_told_from_kfocps_own_apply():
    from kfocp_operator.fastpath import outside_edit

    def obj(*entries):
        return {"metadata": {"managedFields": [dict(manager=m, operation=op, time=t) for m, op, t in entries]}}

    ours = obj(("kfocp", "Apply", "2026-01-01T00:00:00Z"))
    assert not outside_edit(ours, obj(("kfocp", "Apply", "2026-01-01T00:00:05Z")))
    assert not outside_edit(obj(("kfocp-namespace-policies", "Apply", "t1")), obj(("kfocp-namespace-policies", "Apply", "t2")))
    # an edit in the same second as kfocp's apply is still an edit
    assert outside_edit(ours, obj(("kfocp", "Apply", "2026-01-01T00:00:00Z"), ("kubectl-patch", "Update", "2026-01-01T00:00:00Z")))
    assert outside_edit(obj(("kfocp", "Apply", "t"), ("kubectl-edit", "Update", "t1")),
                        obj(("kfocp", "Apply", "t"), ("kubectl-edit", "Update", "t2")))
    assert outside_edit(None, ours)


def test_liveness_catches_a_wedged_worker_or_watch_but_not_a_busy_one():
    from kfocp_operator import controller
    from kfocp_operator.metrics import Metrics

    ctl = controller.Controller(None, controller.Settings(None, ROOT), MODEL, Metrics())
    now = time.monotonic()
    ctl.beats["worker-0"] = (now, None)
    assert ctl.wedged() is None
    ctl.beats["worker-0"] = (now - 3600, ("ns", "kf"))  # an hour into a run: busy, not wedged
    assert ctl.wedged() is None
    ctl.beats["worker-0"] = (now - 3600, None)  # idle, and its loop has not turned for an hour
    assert "worker-0" in ctl.wedged()
    ctl.beats["worker-0"] = (now, None)
    ctl.informer.beat = now - 3600
    assert "watch" in ctl.wedged()
