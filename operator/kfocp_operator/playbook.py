"""Running the collection's playbooks with ansible-runner, the way ansible-operator does: the CR
spec as snake_case extravars plus `ansible_operator_meta` and `_kfocp_io_kubeflow`, a one-host
local inventory, runner events streamed into the operator's log and counted per role."""
import json
import logging
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import yaml

from kfocp_operator import GROUP, KIND
from kfocp_operator.kube import now

LOG = logging.getLogger("kfocp.operator.playbook")
CR_VARIABLE = "_%s_%s" % (GROUP.replace(".", "_").replace("-", "_"), KIND.lower())
_COUNTED = {"runner_on_ok": "ok", "runner_on_failed": "failed", "runner_on_skipped": "skipped",
            "runner_on_unreachable": "unreachable"}


def extravars(cr, variables, kubeconfig=None):
    """The extra variables of a run for `cr`, in ansible-operator's shape."""
    meta = cr.get("metadata") or {}
    out = dict(variables)
    out["ansible_operator_meta"] = {"name": meta.get("name"), "namespace": meta.get("namespace")}
    out[CR_VARIABLE] = cr
    out["kfocp_instance"] = meta.get("name")
    if kubeconfig:
        out["kfocp_kubeconfig"] = str(kubeconfig)
    return out


class _Untrusted(dict):
    """The extra variables' mapping: written with the tag !unsafe."""


class _ExtravarsDumper(yaml.SafeDumper):
    pass


_ExtravarsDumper.add_representer(_Untrusted, lambda dumper, value: dumper.represent_mapping("!unsafe", dict(value)))


def extravars_yaml(variables):
    """The extra variables as YAML whose mapping is tagged !unsafe: Ansible takes every string in
    it as text, never as a template. A CR's spec is input: "{{ lookup('pipe', ...) }}" in it must
    not run in the operator, with the operator's rights. (The tag is on the mapping: on a single
    string, Ansible would resolve the string's type again, and read 'null' as null.)"""
    return yaml.dump(_Untrusted(variables), Dumper=_ExtravarsDumper, default_flow_style=False, sort_keys=True)


def inventory(python=None):
    """One host, this machine, with the operator's own Python (it has the collection's dependencies)."""
    return {"all": {"hosts": {"localhost": {"ansible_connection": "local",
                                            "ansible_python_interpreter": python or sys.executable}}}}


def playbook_roles(path, seen=None):
    """The roles a playbook runs, in order, following import_playbook (short names): a play's
    roles: entries, then the roles its tasks include one by one from its __kfocp_roles."""
    seen = seen if seen is not None else set()
    path = Path(path)
    if path in seen or not path.exists():
        return []
    seen.add(path)
    roles = []
    for play in yaml.safe_load(path.read_text()) or []:
        imported = play.get("ansible.builtin.import_playbook") or play.get("import_playbook")
        if imported and "{{" not in imported:
            target = Path(imported)
            if not target.is_absolute():
                target = path.parent / target
            roles += playbook_roles(target, seen)
            continue
        for entry in play.get("roles") or []:
            name = entry.get("role") or entry.get("name") if isinstance(entry, dict) else entry
            if name:
                roles.append(str(name).rsplit(".", 1)[-1])
        roles += [str(name) for name in (play.get("vars") or {}).get("__kfocp_roles") or []]
    return roles


class RunResult:
    def __init__(self, playbook):
        self.playbook = playbook
        self.rc = None
        self.status = None
        self.totals = dict.fromkeys(("ok", "changed", "failed", "skipped", "unreachable"), 0)
        self.roles = {}
        self.failures = []
        self.invalid_spec = False
        # the pre-flight's reading of the cluster (playbooks/tasks/detect_versions.yml): the OpenShift
        # version the roles were chosen for and the operators installed, when the run got that far
        self.openshift = None
        self.started = now()
        self.finished = None
        self.duration = 0.0

    @property
    def ok(self):
        return self.rc == 0 and self.status == "successful"


class EventRecorder:
    """Counts runner events per role and for the run, keeps failure messages, and logs each task
    result as one line."""

    def __init__(self, result, log=LOG):
        self.result = result
        self.log = log

    def __call__(self, event):
        kind = event.get("event")
        data = event.get("event_data") or {}
        if kind == "playbook_on_task_start":
            self.log.debug("TASK [%s]", data.get("task"))
            return True
        if kind == "playbook_on_stats":
            # ansible-runner replaces the result of a no_log task by {"censored": ...}, which drops
            # its "changed": the run's own statistics count it (per host)
            changed = data.get("changed")
            if isinstance(changed, dict):
                self.result.totals["changed"] = max(self.result.totals["changed"], sum(changed.values()))
            return True
        counted = _COUNTED.get(kind)
        if counted is None:
            return True
        res = data.get("res") or {}
        facts = res.get("ansible_facts") or {}
        if counted == "ok" and facts.get("kfocp_openshift"):
            self.result.openshift = {"version": str(facts["kfocp_openshift"]),
                                     "operators": dict(facts.get("kfocp_operator_versions") or {})}
        ignored = bool(data.get("ignore_errors"))
        role = str(data.get("role") or "playbook").rsplit(".", 1)[-1]
        per_role = self.result.roles.setdefault(role, dict.fromkeys(("ok", "changed", "failed", "skipped"), 0))
        if counted == "failed" and ignored:
            counted = "ok"
        if counted == "unreachable":
            per_role["failed"] += 1
        else:
            per_role[counted] += 1
        self.result.totals[counted] += 1
        changed = counted == "ok" and bool(res.get("changed"))
        if changed:
            per_role["changed"] += 1
            self.result.totals["changed"] += 1
        task = data.get("task") or "?"
        where = "%s : %s" % (role, task) if role != "playbook" else task
        if counted in ("failed", "unreachable"):
            message = _message(res)
            self.result.failures.append("%s: %s" % (where, message))
            per_role.setdefault("message", "%s: %s" % (task, message))
            # a role's variables against its argument specs: when it starts, or in the pre-flight
            if str(data.get("task_action", "")).endswith(("validate_argument_spec", "role_inputs")):
                self.result.invalid_spec = True
            self.log.error("[%s] %s: %s", where, counted, message)
        else:
            summary = res.get("summary")
            detail = (" %s" % json.dumps(summary, sort_keys=True)) if isinstance(summary, dict) else ""
            self.log.info("[%s] %s%s", where, "changed" if changed else counted, detail)
        return True


def _message(res):
    message = res.get("msg") or res.get("message") or res.get("stderr") or ""
    if isinstance(message, (list, dict)):
        message = json.dumps(message)
    errors = res.get("argument_errors") or res.get("errors")
    if errors and isinstance(errors, list):
        message = "%s: %s" % (message, "; ".join(str(e) for e in errors))
    return str(message).strip() or "failed"


def run(playbook, variables, collections_path, cancel=None, env=None, log=LOG):
    """Run `playbook` with ansible-runner and return a RunResult. Blocks until it ends."""
    import ansible_runner

    result = RunResult(Path(playbook).name)
    started = time.monotonic()
    private = Path(tempfile.mkdtemp(prefix="kfocp-run-"))
    try:
        (private / "inventory").mkdir()
        (private / "inventory" / "hosts.json").write_text(json.dumps(inventory()))
        (private / "env").mkdir()
        extra = private / "env" / "extravars"
        extra.write_text(extravars_yaml(variables))  # ansible-runner passes it as -e @env/extravars
        extra.chmod(0o600)
        envvars = {
            "ANSIBLE_COLLECTIONS_PATH": str(collections_path),
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_DEPRECATION_WARNINGS": "0",
            "ANSIBLE_RETRY_FILES_ENABLED": "0",
            "ANSIBLE_LOCALHOST_WARNING": "0",
            "ANSIBLE_INVENTORY_UNPARSED_WARNING": "0",
            "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""),
        }
        envvars.update(env or {})
        runner = ansible_runner.run(
            private_data_dir=str(private), playbook=str(playbook), inventory=str(private / "inventory"),
            envvars=envvars, quiet=True, event_handler=EventRecorder(result, log),
            cancel_callback=cancel, project_dir=str(Path(playbook).parent), settings={"suppress_ansible_output": True})
        result.rc = runner.rc
        result.status = runner.status
        if not result.ok and not result.failures:  # a syntax or inventory error: no task ran
            stdout = runner.stdout.read() if runner.stdout else ""
            tail = [line.strip() for line in stdout.splitlines() if line.strip()][-6:]
            result.failures.append("%s failed (rc %s): %s" % (result.playbook, result.rc, " ".join(tail)))
    finally:
        shutil.rmtree(private, ignore_errors=True)
    result.finished = now()
    result.duration = time.monotonic() - started
    return result
