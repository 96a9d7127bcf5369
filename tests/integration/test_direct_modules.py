"""kfocp's modules run in a process forked from the task's worker (plugins/plugin_utils/direct.py)
when they would run on this machine with Ansible's own Python. The oracle is ansible-core's own
way of running a module: the same tasks, run once more with the host's interpreter a wrapper of
the same Python, which ansible-core runs as an AnsiballZ payload over the local connection. Both
must give the same results, task by task: changes, check and diff mode, a failure, no_log, the
task's environment, a warning of the module's, a loop, and async (which always takes ansible-core's way)."""
import json
import re
import sys

from helpers import run_playbook

# the stages a module times itself: the only field that differs from one run to the next
VOLATILE = ("timing",)


def _playbook(path):
    """Tasks over kfocp's modules, each registered; `sfx` names the run's objects."""
    cm = ("{apiVersion: v1, kind: ConfigMap, metadata: {name: 'direct-{{ sfx }}', namespace: default}, "
          "data: {a: b}}")
    secret = ("{apiVersion: v1, kind: Secret, metadata: {name: 'direct-{{ sfx }}', namespace: default}, "
              "stringData: {token: s3cr3t-direct}}")
    path.write_text("""
- hosts: local
  gather_facts: false
  module_defaults:
    group/kfocp.kubeflow.kfocp:
      kubeconfig: "{{ kfocp_kubeconfig }}"
      instance: "direct-{{ sfx }}"
  tasks:
    - name: create
      kfocp.kubeflow.apply: {definitions: [%(cm)s]}
    - name: again
      kfocp.kubeflow.apply: {definitions: [%(cm)s]}
    - name: check and diff
      kfocp.kubeflow.apply:
        definitions: [{apiVersion: v1, kind: ConfigMap, metadata: {name: 'direct-{{ sfx }}', namespace: default},
                       data: {a: c}}]
      check_mode: true
      diff: true
    - name: failure
      kfocp.kubeflow.apply: {definitions: [{apiVersion: v1, kind: ConfigMap, metadata: {namespace: default}}]}
      ignore_errors: true
    - name: secret
      kfocp.kubeflow.apply: {definitions: [%(secret)s]}
      no_log: true
    - name: environment
      kfocp.kubeflow.info: {api_version: v1, kind: ConfigMap, namespace: default, name: 'direct-{{ sfx }}',
                            kubeconfig: null}
      environment: {K8S_AUTH_KUBECONFIG: "{{ kfocp_kubeconfig }}"}
    - name: warning
      kfocp.kubeflow.info: {api_version: v1, kind: ConfigMap, namespace: default, name: 'direct-{{ sfx }}',
                            ca_cert: "{{ kfocp_ca }}", ssl_ca_cert: "{{ kfocp_ca }}"}
    - name: loop
      kfocp.kubeflow.info: {api_version: v1, kind: "{{ item }}", namespace: default, name: 'direct-{{ sfx }}'}
      loop: [ConfigMap, Secret]
    - name: async
      kfocp.kubeflow.info: {api_version: v1, kind: ConfigMap, namespace: default, name: 'direct-{{ sfx }}'}
      async: 60
      poll: 1
""" % {"cm": cm, "secret": secret})


def _results(result, sfx):
    """[(task, result)] with the run's suffix taken out and the stages' timing left out."""
    out = []
    for event in result.events:
        data = event.get("event_data") or {}
        if event.get("event") in ("runner_on_ok", "runner_on_failed", "runner_item_on_ok"):
            res = dict((k, v) for k, v in (data.get("res") or {}).items() if k not in VOLATILE)
            text = json.dumps(res, sort_keys=True).replace(sfx, "SFX")
            # what the API server or the clock gives each object or async job
            text = re.sub(r'"(ansible_job_id|results_file|started|finished|uid|resourceVersion|creationTimestamp|time|'
                          r'kfocp.io/applied-hash)": ("[^"]*"|\d+)', r'"\1": "-"', text)
            out.append((event["event"], data.get("task"), text))
    return out


def _run(control_plane, tmp_path, playbook, sfx, interpreter=None):
    extravars = {"sfx": sfx, "kfocp_kubeconfig": str(control_plane.kubeconfig), "kfocp_ca": str(control_plane.dir / "ca.crt")}
    if interpreter:
        extravars["ansible_python_interpreter"] = str(interpreter)
    return run_playbook(control_plane, str(playbook), extravars, tmp_path, verbosity=3,
                        env={"TMPDIR": str(tmp_path / ("tmp-" + sfx))})


def test_a_module_forked_from_the_worker_gives_what_ansible_cores_own_run_gives(control_plane, tmp_path):
    playbook = tmp_path / "modules.yml"
    _playbook(playbook)
    wrapper = tmp_path / "python"  # the same Python, at a path that is not Ansible's: ansible-core's way
    wrapper.write_text("#!/bin/sh\nexec %s \"$@\"\n" % sys.executable)
    wrapper.chmod(0o755)
    for sfx in ("core", "forked"):
        (tmp_path / ("tmp-" + sfx)).mkdir()

    core = _run(control_plane, tmp_path, playbook, "core", wrapper)
    forked = _run(control_plane, tmp_path, playbook, "forked")

    # each run took the way it was meant to: ansible-core's payload, or the forked worker
    assert "AnsiballZ_apply.py" in core.stdout and "forked from the worker" not in core.stdout, core.stdout[-3000:]
    assert "Running kfocp.kubeflow.apply in a process forked from the worker" in forked.stdout, forked.stdout[-3000:]
    assert "AnsiballZ_apply.py" not in forked.stdout
    # async always takes ansible-core's way (its wrapper runs the payload in the background)
    assert "AnsiballZ_info.py" in forked.stdout and "async_wrapper" in forked.stdout
    assert core.rc == forked.rc == 0, (core.stdout[-3000:], forked.stdout[-3000:])

    expected, got = _results(core, "core"), _results(forked, "forked")
    assert [(e, t) for e, t, _r in got] == [(e, t) for e, t, _r in expected]
    for (event, task, want), (_e, _t, have) in zip(expected, got):
        assert have == want, "%s %s:\nansible-core: %s\nforked:       %s" % (event, task, want, have)
    tasks = dict((t, json.loads(r)) for _e, t, r in got if t != "loop")
    events = dict((t, e) for e, t, _r in got)
    # what the comparison covered: a change, a no-op, a diff in check mode, a failure, a secret
    assert tasks["create"]["changed"] and not tasks["again"]["changed"]
    assert tasks["check and diff"]["changed"] and tasks["check and diff"]["diff"]
    assert events["failure"] == "runner_on_failed" and "name" in tasks["failure"]["msg"], tasks["failure"]
    assert "s3cr3t" not in forked.stdout and "censored" in tasks["secret"]
    # AnsibleModule's own warning (an option and its alias both set) reaches the result, and the output
    assert "ssl_ca_cert" in json.dumps(tasks["warning"].get("warnings")), tasks["warning"]
    assert "[WARNING]: Both option ca_cert and its alias ssl_ca_cert are set" in forked.stdout
    # the module's own cleanups ran at its exit: no private copy of the credentials is left
    assert not list((tmp_path / "tmp-forked").iterdir()), list((tmp_path / "tmp-forked").iterdir())
