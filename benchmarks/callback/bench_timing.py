"""Where an ansible-playbook run's seconds go: a callback that writes, to $KFOCP_BENCH_TIMING, the
time from the process's launch ($KFOCP_BENCH_LAUNCHED, epoch seconds, set by the caller just
before it starts ansible-playbook) to the first task (Python and Ansible start-up, inventory and
playbook parsing), and each task's wall time (argument specs validation, set_fact templating,
every module), in order; and, for the tasks whose module reports it (kfocp's apply and tenancy
modules' `timing`), the seconds of each stage inside the module."""
import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = """
name: bench_timing
type: aggregate
short_description: per-task wall time for the benchmark
description: Writes the start-up time and each task's wall time to $KFOCP_BENCH_TIMING as JSON.
requirements: [whitelist in configuration]
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "bench_timing"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self):
        super().__init__()
        self._launched = float(os.environ.get("KFOCP_BENCH_LAUNCHED") or time.time())
        self._tasks = []
        self._current = None
        self._playbook_start = None
        self._stages = {}

    def v2_playbook_on_start(self, playbook):
        self._playbook_start = time.time()

    def _close(self):
        if self._current:
            name, started = self._current
            self._tasks.append([name, round(time.time() - started, 3)])
            self._current = None

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._close()
        if not self._tasks and self._current is None:
            self._first = time.time()
        self._current = (task.get_name(), time.time())

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self.v2_runner_on_ok(result)

    def v2_playbook_on_handler_task_start(self, task):
        self.v2_playbook_on_task_start(task, False)

    def v2_runner_on_ok(self, result):
        timing = result._result.get("timing")  # hidden when the task has no_log
        if isinstance(timing, dict):
            stages = self._stages.setdefault(result._task.get_name(), {})
            for stage, seconds in timing.items():
                stages[stage] = round(stages.get(stage, 0) + seconds, 3)

    def v2_playbook_on_stats(self, stats):
        self._close()
        path = os.environ.get("KFOCP_BENCH_TIMING")
        if not path:
            return
        first = getattr(self, "_first", time.time())
        doc = {"startup_s": round(first - self._launched, 3),
               "parse_s": round(first - (self._playbook_start or first), 3),
               "tasks": self._tasks, "stages": self._stages, "tasks_s": round(sum(t[1] for t in self._tasks), 3),
               "end_s": round(time.time() - self._launched, 3)}
        with open(path, "w") as handle:
            json.dump(doc, handle)
