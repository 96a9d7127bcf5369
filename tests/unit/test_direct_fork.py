"""plugin_utils/direct.run_forked: a module in a child process, run by AnsiballZ's own loader (the
module_utils' `_ansiballz._loader.run_module`): its arguments where AnsibleModule reads them, its
stdout and stderr apart, its exit code, the task's environment, module_utils as in a module's
process, and its own exit functions (and only its own) run at its exit."""
import atexit
import importlib.util
import json
import os
import sys
import textwrap

import pytest
from ansible.release import __version__ as ansible_core_version

from ansible_collections.kfocp.kubeflow.plugins.plugin_utils import direct

# ansible-core 2.18 (the ansible-operator image's stack) has no AnsiballZ loader in module_utils: its
# AnsiballZ wrapper runs the module with runpy itself, and kfocp runs every module as ansible-core does.
LOADER = importlib.util.find_spec("ansible.module_utils._internal._ansiballz") is not None
forks = pytest.mark.skipif(not LOADER, reason="ansible-core %s has no AnsiballZ loader in module_utils: "
                           "no module runs forked from the worker" % ansible_core_version)

PROBE = textwrap.dedent('''
    import atexit
    import os
    import sys

    from ansible.module_utils.basic import AnsibleModule


    def main():
        module = AnsibleModule(argument_spec={"a": {"type": "int"}, "how": {"type": "str"}, "mark": {"type": "str"}})
        how = module.params["how"]
        if how == "raise":
            raise ValueError("broken module")
        if how == "exit3":
            sys.exit(3)
        if how == "no exit":
            return
        if module.params["mark"]:
            atexit.register(lambda: open(module.params["mark"], "w").write("ran"))
        module.warn("careful")
        module.exit_json(changed=False, a=module.params["a"], env=os.environ.get("KFOCP_DIRECT_TEST"))


    if __name__ == "__main__":
        main()
''')


@pytest.fixture
def probe(tmp_path, monkeypatch):
    """The name of a module, importable here, that does what its `how` argument says."""
    (tmp_path / "kfocp_direct_probe.py").write_text(PROBE)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "kfocp_direct_probe"


def _run(probe, env=None, **args):
    payload = json.dumps({"ANSIBLE_MODULE_ARGS": args}).encode()
    return direct.run_forked(probe, payload, env or {})


@forks
def test_the_module_reads_its_arguments_and_the_tasks_environment_and_warns_in_its_result(probe):
    before = os.environ.get("KFOCP_DIRECT_TEST")
    out = _run(probe, {"KFOCP_DIRECT_TEST": 5}, a="1")
    assert out["rc"] == 0, out
    result = json.loads(out["stdout"])
    assert result["a"] == 1 and result["env"] == "5"
    # a module's warning goes in its result, as in a module's own process (not to the controller's Display)
    assert "careful" in json.dumps(result["warnings"])
    assert os.environ.get("KFOCP_DIRECT_TEST") == before


@forks
def test_an_exception_and_exit_codes_are_what_ansiballz_gives(probe):
    out = _run(probe, how="raise")
    result = json.loads(out["stdout"])
    assert out["rc"] == 1 and result["failed"] and "broken module" in json.dumps(result["exception"]), out
    assert _run(probe, how="exit3")["rc"] == 3
    out = _run(probe, how="no exit")  # AnsiballZ's loader: a module must exit
    assert out["rc"] == 1 and "did not handle its own exit" in out["stdout"], out


@forks
def test_only_the_modules_own_exit_functions_run(probe, tmp_path):
    worker_mark, module_mark = tmp_path / "worker", tmp_path / "module"

    def worker_exit():
        worker_mark.write_text("ran")

    atexit.register(worker_exit)
    try:
        assert _run(probe, mark=str(module_mark))["rc"] == 0
    finally:
        atexit.unregister(worker_exit)
    assert module_mark.read_text() == "ran" and not worker_mark.exists()


def test_the_fork_is_used_exactly_when_ansible_core_has_ansiballzs_loader():
    assert direct.FORKS == LOADER == (tuple(int(p) for p in ansible_core_version.split(".")[:2]) >= (2, 19))
    if not LOADER:
        with pytest.raises(RuntimeError, match="ansible-core 2.19's module loader"):
            direct.run_forked("os", b"{}", {})


def test_same_python():
    assert direct.same_python(sys.executable)
    assert not direct.same_python("/usr/bin/env") and not direct.same_python(None) and not direct.same_python(3)
