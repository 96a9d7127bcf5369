"""Faults: an API server that throttles, fails, or dies in the middle of a converge.

Each test prints its figures (-s shows them; they are also in the assertion messages)."""
import json
import os
import signal
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client
from ansible_collections.kfocp.kubeflow.plugins.module_utils.engine import ApplyError, Engine
from cluster import ControlPlane
from faultproxy import FaultProxy
from helpers import ROOT, ansible_env, port_taken_first

sys.path.insert(0, str(ROOT / "benchmarks"))
import workload  # noqa: E402

# 500 profiles in `make soak`; a reduced N keeps `make test` short.
KILL_PROFILES = int(os.environ.get("KFOCP_FAULT_PROFILES", "60"))


def configmaps(namespace, count):
    objs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}]
    objs += [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c%03d" % i, "namespace": namespace},
              "data": {"i": str(i)}} for i in range(count)]
    return objs


def test_429_and_5xx_are_retried_with_backoff_and_create_no_duplicates(control_plane, kube, instance, tmp_path):
    # Faults chosen by the request's path and its attempt, so that every object meets them and none
    # meets more than two in a row: within the client's retries whatever the order of the requests.
    attempts, lock = {}, threading.Lock()

    def policy(method, path, unused_n):
        path = path.split("?")[0]
        with lock:
            attempt = attempts[method, path] = attempts.get((method, path), 0) + 1
        which = zlib.crc32(path.encode()) % 6
        if method == "PATCH" and attempt == 1 and which in (0, 1):
            return 429, {"Retry-After": "1"}
        if method == "PATCH" and attempt <= 2 and which in (2, 3) or method == "PATCH" and attempt == 2 and which == 0:
            return 503, None
        if method == "GET" and attempt == 1 and which == 4:
            return 500, None  # e.g. "etcdserver: request timed out"
        return None

    with FaultProxy(control_plane, policy) as proxy:
        client = Client.from_params({"kubeconfig": str(proxy.kubeconfig(tmp_path / "proxy.kubeconfig"))},
                                    max_backoff=1.0)
        started = time.monotonic()
        result = Engine(client, instance=instance, set_name="faults").apply(configmaps(instance, 150))
        elapsed = time.monotonic() - started
    print("faults injected %d, requests sent %d, %.1fs" % (proxy.faults, client.requests, elapsed))
    assert proxy.faults > 30
    assert result.counts()["created"] == 151 and not result.errors
    live = kube.list(kube.resource("v1", "ConfigMap"), namespace=instance, label_selector=o.owner_selector(instance))
    assert sorted(m["metadata"]["name"] for m in live) == ["c%03d" % i for i in range(150)]
    patches = [f for f in proxy.forwarded if f[0] == "PATCH"]
    assert len(patches) == 151, "every object reached the API server exactly once"


def test_a_server_that_keeps_failing_gives_a_clear_error_in_bounded_time(control_plane, instance, tmp_path):
    with FaultProxy(control_plane, lambda method, path, n: (503, None) if method == "PATCH" else None) as proxy:
        client = Client.from_params({"kubeconfig": str(proxy.kubeconfig(tmp_path / "proxy.kubeconfig"))},
                                    retries=3, max_backoff=0.5)
        started = time.monotonic()
        with pytest.raises(ApplyError) as err:
            Engine(client, instance=instance, set_name="faults").apply(configmaps(instance, 5))
        elapsed = time.monotonic() - started
    print("gave up after %.1fs: %s" % (elapsed, str(err.value)[:200]))
    assert "Namespace %s" % instance in str(err.value) and "503" in str(err.value)
    assert elapsed < 10
    # every phase goes on after a failure, so each of the six objects is tried: one try and three retries each
    assert proxy.faults == 6 * 4, "one try and three retries per object"


def _dump(plane, instance, kinds):
    """kfocp's objects of `instance` of the given kinds, without server bookkeeping, keyed by identity."""
    client = Client.from_params({"kubeconfig": str(plane.kubeconfig)})
    out = {}
    for api_version, kind in kinds:
        res = client.resource(api_version, kind)
        for item in client.list(res, label_selector=o.owner_selector(instance)):
            meta = item["metadata"]
            key = (api_version, kind, meta.get("namespace", ""), meta["name"])
            out[key] = o.strip(dict(item, apiVersion=api_version, kind=kind))
    return out


def _converge(plane, objects_file, instance):
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
           "-e", "ansible_python_interpreter=%s" % sys.executable, "-e", "bench_kubeconfig=%s" % plane.kubeconfig,
           "-e", "@%s" % objects_file, "-e", "bench_instance=%s" % instance,
           str(ROOT / "tests" / "reliability" / "converge.yml")]
    return subprocess.Popen(cmd, env=ansible_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture
def killable_plane(tmp_path):
    plane = ControlPlane(tmp_path / "plane").up()
    yield plane
    plane.destroy()


def test_api_server_killed_mid_converge(killable_plane, tmp_path):
    objs = workload.objects(KILL_PROFILES)
    objects_file = tmp_path / "objects.json"
    objects_file.write_text(json.dumps({"objects": objs}))
    client = Client.from_params({"kubeconfig": str(killable_plane.kubeconfig)})
    cms = client.resource("v1", "LimitRange")

    run = _converge(killable_plane, objects_file, "faults")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and len(client.list(cms, metadata_only=True)) < KILL_PROFILES // 4:
        time.sleep(0.05)
    killable_plane.kill("kube-apiserver", signal.SIGKILL)
    out, _unused = run.communicate(timeout=180)
    print("killed run rc=%s, tail: %s" % (run.returncode, out[-400:]))
    assert run.returncode != 0
    assert "Traceback" not in out
    assert "did not answer" in out and killable_plane.server in out

    killable_plane.restart("kube-apiserver")
    again = _converge(killable_plane, objects_file, "faults")
    out2, _unused = again.communicate(timeout=600)
    assert again.returncode == 0, out2[-3000:]

    clean = ControlPlane(tmp_path / "clean").up()
    try:
        first = _converge(clean, objects_file, "faults")
        out3, _unused = first.communicate(timeout=600)
        assert first.returncode == 0, out3[-3000:]
        kinds = sorted(set((obj["apiVersion"], obj["kind"]) for obj in objs))
        recovered, reference = _dump(killable_plane, "faults", kinds), _dump(clean, "faults", kinds)
    finally:
        clean.destroy()
    assert len(reference) == len(objs)
    assert set(recovered) == set(reference)
    different = [key for key in reference if recovered[key] != reference[key]]
    assert not different, "objects that differ from a clean run: %s" % different[:5]


def test_a_port_taken_before_etcd_binds_it_is_replaced(tmp_path, monkeypatch):
    """A port is free when the control plane chooses it, but any outgoing connection may take it
    before etcd binds it: up() starts again on new ports instead of failing."""
    import cluster  # pylint: disable=import-outside-toplevel
    with port_taken_first(monkeypatch, cluster) as port:
        plane = ControlPlane(tmp_path / "plane")
        try:
            plane.up(install=False)
            assert plane.state()["ports"]["etcd"] != port
            assert "address already in use" in (plane.dir / "etcd.log").read_text()
            assert plane.kubectl("get", "--raw", "/readyz").stdout.strip() == "ok"
        finally:
            plane.destroy()
