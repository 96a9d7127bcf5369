"""CPU accounting of one ansible-playbook run, for the benchmark: on the PYTHONPATH of the run
(benchmarks/timing.py, cpu_env), every Python process it starts appends, at its exit, one JSON line
to $KFOCP_BENCH_CPU: its CPU seconds (user and system) and what it was: an Ansible module (named by
the module it ran), ansible-playbook itself, or another process. Ansible's worker processes (forks
of ansible-playbook, ended by os._exit) write nothing: they are what is left of the run's CPU."""
import atexit
import json
import os
import resource
import sys

PATH = os.environ.get("KFOCP_BENCH_CPU")
MODULE = "AnsiballZ_"


def _what():
    name = os.path.basename(sys.argv[0] if sys.argv else "")
    if name.startswith(MODULE):
        return "module " + name[len(MODULE):].rsplit(".", 1)[0]
    return name if name == "ansible-playbook" else "other " + name


def _record():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    line = json.dumps({"what": _what(), "pid": os.getpid(), "cpu_s": round(usage.ru_utime + usage.ru_stime, 3)})
    fd = os.open(PATH, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


if PATH:
    atexit.register(_record)
