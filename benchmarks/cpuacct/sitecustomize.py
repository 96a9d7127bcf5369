"""CPU accounting of one ansible-playbook run, for the benchmark: on the PYTHONPATH of the run
(benchmarks/timing.py, cpu_env), every Python process it starts appends, at its exit, one JSON line
to $KFOCP_BENCH_CPU: its CPU seconds (user and system) and what it was: an Ansible module (named by
the module it ran), ansible-playbook itself, or another process. Ansible's worker processes (forks
of ansible-playbook) end by os._exit, and so do the processes kfocp's module actions fork from them
to run a module (plugins/plugin_utils/direct.py): os._exit records those first, a module by the
name in its arguments, and a worker as "ansible worker"."""
import atexit
import json
import os
import re
import resource
import sys

PATH = os.environ.get("KFOCP_BENCH_CPU")
MODULE = "AnsiballZ_"


def _what():
    name = os.path.basename(sys.argv[0] if sys.argv else "")
    if name.startswith(MODULE):
        return "module " + name[len(MODULE):].rsplit(".", 1)[0]
    return name if name == "ansible-playbook" else "other " + name


def _module_name():
    """The module a forked module process runs (the `_ansible_module_name` of its arguments), or None.
    Found in the JSON text, not parsed from it: a tenancy module's arguments are megabytes, and the
    process's CPU is read after this."""
    basic = sys.modules.get("ansible.module_utils.basic")
    args = getattr(basic, "_ANSIBLE_ARGS", None)
    if not args:
        return None
    found = re.search(rb'"_ansible_module_name": "([^"]+)"', args)
    return "module " + (found.group(1).decode().rsplit(".", 1)[-1] if found else "unknown")


def _record(what=None):
    usage = resource.getrusage(resource.RUSAGE_SELF)
    line = json.dumps({"what": what or _what(), "pid": os.getpid(), "cpu_s": round(usage.ru_utime + usage.ru_stime, 3)})
    fd = os.open(PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def _exit_recorded(code, _exit=os._exit):
    if _what() == "ansible-playbook":  # a fork of it: a worker, or a module forked from one
        _record(_module_name() or "ansible worker")
    _exit(code)


if PATH:
    atexit.register(_record)
    os._exit = _exit_recorded
