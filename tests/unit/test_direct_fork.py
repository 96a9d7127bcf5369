"""plugin_utils/direct.run_forked: a module's main() in a child process, as an interpreter would run
it: its arguments where AnsibleModule reads them, its stdout and stderr apart, its exit code, the
task's environment, and its own exit functions (and only its own) run at its exit."""
import atexit
import json
import os
import sys

from ansible.module_utils import basic

from ansible_collections.kfocp.kubeflow.plugins.plugin_utils import direct


def _echo():
    """A main() that prints what AnsibleModule would read, and what the environment holds."""
    print(json.dumps({"args": basic._ANSIBLE_ARGS.decode(), "profile": basic._ANSIBLE_PROFILE,
                      "env": os.environ.get("KFOCP_DIRECT_TEST")}))


def test_the_child_reads_its_arguments_and_the_tasks_environment_and_leaves_the_parent_alone():
    before = (basic._ANSIBLE_ARGS, basic._ANSIBLE_PROFILE, os.environ.get("KFOCP_DIRECT_TEST"))
    out = direct.run_forked(_echo, b'{"ANSIBLE_MODULE_ARGS": {"a": 1}}', {"KFOCP_DIRECT_TEST": 5})
    assert out["rc"] == 0 and out["stderr"] == ""
    assert json.loads(out["stdout"]) == {"args": '{"ANSIBLE_MODULE_ARGS": {"a": 1}}', "profile": "legacy",
                                         "env": "5"}
    assert (basic._ANSIBLE_ARGS, basic._ANSIBLE_PROFILE, os.environ.get("KFOCP_DIRECT_TEST")) == before


def test_exit_codes_and_a_traceback_are_what_an_interpreter_gives():
    def exits(code):
        def main():
            sys.exit(code)
        return main

    def raises():
        raise ValueError("broken module")

    assert direct.run_forked(exits(None), b"{}", {})["rc"] == 0
    assert direct.run_forked(exits(3), b"{}", {})["rc"] == 3
    assert direct.run_forked(exits("a message"), b"{}", {})["rc"] == 1
    out = direct.run_forked(raises, b"{}", {})
    assert out["rc"] == 1 and "ValueError: broken module" in out["stderr"] and out["stdout"] == ""


def test_only_the_modules_own_exit_functions_run(tmp_path):
    worker_mark, module_mark = tmp_path / "worker", tmp_path / "module"

    def worker_exit():
        worker_mark.write_text("ran")

    def main():
        atexit.register(lambda: module_mark.write_text("ran"))

    atexit.register(worker_exit)
    try:
        assert direct.run_forked(main, b"{}", {})["rc"] == 0
    finally:
        atexit.unregister(worker_exit)
    assert module_mark.read_text() == "ran" and not worker_mark.exists()


def test_same_python():
    assert direct.same_python(sys.executable)
    assert not direct.same_python("/usr/bin/env") and not direct.same_python(None) and not direct.same_python(3)
