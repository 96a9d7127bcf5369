"""An upstream program the tests run beside a local control plane as a judge (the GPU operator,
the Knative operator, cert-manager): each of its processes in a session of its own, with its log
in the plane's directory, stopped with its process group; and the CRDs it brings, served as the
cluster's own."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time

from cluster import ClusterError


class Judge:
    """A context manager: started on entry, stopped on exit. A subclass names itself (`what`) and
    gives `commands()`: {process name: (argv, environment)}; each process logs to
    <plane dir>/<prefix><process name>.log."""

    what = "the judge"
    prefix = ""

    def __init__(self, plane):
        self.plane = plane
        self.procs: dict[str, subprocess.Popen] = {}

    def commands(self) -> dict[str, tuple[list[str], dict[str, str]]]:
        raise NotImplementedError

    def log(self, name: str):
        return self.plane.dir / f"{self.prefix}{name}.log"

    def start(self):
        for name, (cmd, env) in self.commands().items():
            with open(self.log(name), "ab") as log:
                self.procs[name] = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                                    start_new_session=True)
        time.sleep(1)
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                self.stop()
                raise ClusterError(f"{self.what} ({name}) exited at once ({proc.returncode}): {self.tail(name)}")
        return self

    def tail(self, name: str | None = None, chars: int = 4000) -> str:
        """The end of a process's log (the first process's when no name is given)."""
        log = self.log(name or next(iter(self.procs), ""))
        return log.read_text(errors="replace")[-chars:] if log.exists() else ""

    def stop(self) -> None:
        running = [proc for proc in self.procs.values() if proc.poll() is None]
        for proc in running:
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in running:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def serve_crds(plane, documents: list[str], namespace: str) -> None:
    """Apply a judge's CRDs (YAML texts) as the cluster's own, wait until they are served, and
    make the judge's namespace."""
    for text in documents:
        plane.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=cluster-bootstrap",
                      "-f", "-", input=text)
    plane.wait_established()
    plane.kubectl("apply", "--server-side", "--field-manager=cluster-bootstrap", "-f", "-",
                  input=json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}))
