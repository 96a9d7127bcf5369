"""Where an ansible-playbook run's seconds go (benchmarks/callback/bench_timing.py): the
environment that enables the callback, and the breakdown it wrote, summed and printed."""
import json
import os
import resource
import time
from pathlib import Path

CALLBACKS = Path(__file__).resolve().parent / "callback"
CPUACCT = Path(__file__).resolve().parent / "cpuacct"


def env(path):
    """Environment entries for one ansible-playbook run that writes its timing to `path`; set
    just before the run starts (the launch time is taken now)."""
    return {"ANSIBLE_CALLBACK_PLUGINS": str(CALLBACKS), "ANSIBLE_CALLBACKS_ENABLED": "bench_timing",
            "KFOCP_BENCH_TIMING": str(path), "KFOCP_BENCH_LAUNCHED": repr(time.time())}


def read(path, total_s):
    """The breakdown of one run whose wall time was `total_s`: start-up (interpreter, Ansible,
    inventory, playbook parsing) before the first task, each task summed by name, and the exit
    after the last. None when the callback wrote nothing."""
    path = Path(path)
    if not path.exists():
        return None
    doc = json.loads(path.read_text())
    by_name = {}
    for name, seconds in doc["tasks"]:
        by_name[name] = round(by_name.get(name, 0) + seconds, 3)
    return {"total_s": round(total_s, 2), "startup_s": doc["startup_s"], "parse_s": doc["parse_s"],
            "tasks_s": doc["tasks_s"], "exit_s": round(max(0.0, total_s - doc["end_s"]), 3),
            "tasks": sorted(by_name.items(), key=lambda item: -item[1]), "stages": doc.get("stages") or {}}


def lines(breakdown, top=10):
    """The breakdown as text, the largest tasks first."""
    if not breakdown:
        return ["  (no timing)"]
    out = ["  %6.2f s  start-up before the first task (Python, Ansible, inventory; playbook parse %.2f s)"
           % (breakdown["startup_s"], breakdown["parse_s"])]
    for name, seconds in breakdown["tasks"][:top]:
        out.append("  %6.2f s  %s" % (seconds, name))
        stages = (breakdown.get("stages") or {}).get(name)
        if stages:
            inside = sum(stages.values())
            out += ["  %14.2f s  %s" % (part, stage) for stage, part in stages.items()]
            out.append("  %14.2f s  module start, arguments and result (the task's time outside these)"
                       % max(0.0, seconds - inside))
    rest = breakdown["tasks"][top:]
    if rest:
        out.append("  %6.2f s  %d other tasks" % (sum(s for _task, s in rest), len(rest)))
    out.append("  %6.2f s  after the last task (stats, exit)" % breakdown["exit_s"])
    out.append("  %6.2f s  in all, ansible-playbook start to exit" % breakdown["total_s"])
    return out


def cpu():
    """CPU seconds (user and system) of this process and of its finished child processes: the
    client's own cost, whichever process applies (in process, ansible-playbook and its modules, the
    Go client). On a machine whose CPUs the API server shares, it is what the client takes from it."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


SERVER = ("kube-apiserver", "etcd")


def server_cpu(planes):
    """CPU seconds (user and system) that the control planes' kube-apiserver and etcd have used
    so far, read from /proc."""
    ticks, total = os.sysconf("SC_CLK_TCK"), 0.0
    for plane in planes:
        for name, pid in plane.state().get("pids", {}).items():
            if name in SERVER:
                fields = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / ticks
    return total


class Meter:
    """CPU seconds over the timed parts of a run (`with meter:` around each): the client's (this
    process and its finished children, cpu()) and the API server's and etcd's (server_cpu)."""

    def __init__(self, planes):
        self.planes = planes
        self.client = self.server = 0.0
        self._at = None

    def __enter__(self):
        self._at = (cpu(), server_cpu(self.planes))
        return self

    def __exit__(self, *exc):
        self.client += cpu() - self._at[0]
        self.server += server_cpu(self.planes) - self._at[1]

    def figures(self):
        return {"client_cpu_s": round(self.client, 2), "server_cpu_s": round(self.server, 2)}


def cpu_env(path, env):
    """Environment entries for ansible-playbook runs whose Python processes each record their CPU
    seconds in `path` (benchmarks/cpuacct/sitecustomize.py)."""
    python_path = [str(CPUACCT)] + [p for p in (env.get("PYTHONPATH") or "").split(os.pathsep) if p]
    return {"KFOCP_BENCH_CPU": str(path), "PYTHONPATH": os.pathsep.join(python_path)}


def cpu_split(path, total_s):
    """{what: CPU seconds} of the runs recorded in `path`: each module by name (its processes
    summed, with their count), ansible-playbook itself, its worker processes (one for each task and
    host), and the rest of `total_s` (the CPU of the runs in all)."""
    split, counts = {}, {}
    for line in Path(path).read_text().splitlines() if Path(path).exists() else []:
        entry = json.loads(line)
        split[entry["what"]] = split.get(entry["what"], 0) + entry["cpu_s"]
        counts[entry["what"]] = counts.get(entry["what"], 0) + 1
    out = dict(("%s (%d)" % (what, counts[what]) if what.startswith(("module ", "ansible worker")) else what,
                round(seconds, 2))
               for what, seconds in sorted(split.items(), key=lambda item: -item[1]))
    out["the rest"] = round(max(0.0, total_s - sum(split.values())), 2)
    return out
