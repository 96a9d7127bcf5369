"""Where an ansible-playbook run's seconds go (benchmarks/callback/bench_timing.py): the
environment that enables the callback, and the breakdown it wrote, summed and printed."""
import json
import time
from pathlib import Path

CALLBACKS = Path(__file__).resolve().parent / "callback"


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
            "tasks": sorted(by_name.items(), key=lambda item: -item[1]), "seconds": doc.get("seconds") or {}}


def lines(breakdown, top=10):
    """The breakdown as text, the largest tasks first."""
    if not breakdown:
        return ["  (no timing)"]
    out = ["  %6.2f s  start-up before the first task (Python, Ansible, inventory; playbook parse %.2f s)"
           % (breakdown["startup_s"], breakdown["parse_s"])]
    out += ["  %6.2f s  %s" % (seconds, name) for name, seconds in breakdown["tasks"][:top]]
    rest = breakdown["tasks"][top:]
    if rest:
        out.append("  %6.2f s  %d other tasks" % (sum(s for _task, s in rest), len(rest)))
    out.append("  %6.2f s  after the last task (stats, exit)" % breakdown["exit_s"])
    out.append("  %6.2f s  in all, ansible-playbook start to exit" % breakdown["total_s"])
    return out
