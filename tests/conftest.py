"""Shared fixtures: one real control plane per test session, API helpers, and playbook runs.

Set KFOCP_TEST_CLUSTER_DIR to reuse a running control plane (make up) instead of starting one.
"""
import json
import os
import sys
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COLLECTIONS = ROOT / ".cache" / "collections"
_LINK = COLLECTIONS / "ansible_collections" / "kfocp" / "kubeflow"
if not _LINK.exists():
    _LINK.parent.mkdir(parents=True, exist_ok=True)
    _LINK.symlink_to(Path("../../../.."))
for path in (str(COLLECTIONS), str(ROOT / "hack"), str(ROOT / "tests")):
    if path not in sys.path:
        sys.path.insert(0, path)

from cluster import ControlPlane  # noqa: E402
from egress_guard import DialRecorder, EgressGuard  # noqa: E402


# The test files that take longest (each over a minute on one of make test's workers, 2 cores), longest
# first. make test runs a file on one worker (--dist loadfile) in the order collected (with
# --no-loadscope-reorder); these go first, then the other integration and reliability files, then
# the unit tests, which are many and short and keep every worker busy to the end.
SLOWEST_FIRST = ("test_components_releases.py", "test_request_path_release.py", "test_molecule.py",
                 "test_bad_input.py", "test_ansible_operator.py", "test_data_lake.py", "test_bench.py",
                 "test_components_upgrade.py", "test_fleet.py", "test_knative_operator_judge.py",
                 "test_operator_faults.py", "test_distribution.py", "test_uninstall.py",
                 "test_knative_serving_judge.py", "test_components_example.py", "test_least_privilege.py")


def pytest_collection_modifyitems(items):
    """The slowest files first, the unit tests last (SLOWEST_FIRST)."""
    def rank(item):
        path = item.path
        if path.name in SLOWEST_FIRST:
            return SLOWEST_FIRST.index(path.name)
        return len(SLOWEST_FIRST) + (path.parent.name == "unit")
    items.sort(key=rank)


@pytest.fixture(scope="session", autouse=True)
def egress_guard(request, tmp_path_factory):
    """No process of the tests or of their control planes dials an address off this machine: the
    session fails at its end naming each target and process (hack/egress_guard.py), and each dial
    the tests' own Python tries, with the test that tried it (DialRecorder: under `make test`'s
    network namespace, hack/netns.py, such a dial fails at once and the socket tables never hold
    it). What the planes' egress proxies refused (a webhook or a node with no loopback server) is
    printed."""
    reuse = os.environ.get("KFOCP_TEST_CLUSTER_DIR")
    events = tmp_path_factory.getbasetemp() / "egress-events.jsonl"
    os.environ["KFOCP_EGRESS_EVENTS"] = str(events)
    tried = DialRecorder.install()
    guard = EgressGuard(roots=[os.getpid()], plane_dirs=[reuse] if reuse else []).start()
    yield guard
    found = guard.stop() + tried.found
    lines = events.read_text().splitlines() if events.exists() else []
    refused = sorted(set("%s (meant for %s)" % (e["target"], e["meant_for"])
                         for e in map(json.loads, lines) if e["outcome"] == "refused"))
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    if reporter:
        reporter.write_line("egress: %d connection(s) off this machine; the planes' egress proxies refused %d "
                            "target(s)%s" % (len(found), len(refused), (": " + "; ".join(refused)) if refused else ""))
    if found:
        pytest.fail("%d connection(s) off this machine:\n%s" % (len(found), "\n".join(found)), pytrace=False)


@pytest.fixture(scope="session")
def shared_plane(tmp_path_factory):
    """The control plane the test modules of one pytest process share."""
    reuse = os.environ.get("KFOCP_TEST_CLUSTER_DIR")
    plane = ControlPlane(reuse or tmp_path_factory.mktemp("cluster"))
    plane.up()
    yield plane
    if not reuse:
        plane.destroy()


def _plane_of(module, tmp_path_factory, name):
    """A control plane and a client of it, for `module`: it runs Pods when the module sets
    WORKLOADS = True, with WORKERS (default 0) simulated worker nodes. Destroyed when the generator
    closes."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client
    plane = ControlPlane(tmp_path_factory.mktemp(name)).up(workloads=getattr(module, "WORKLOADS", False))
    try:
        if getattr(module, "WORKERS", 0):
            plane.add_workers(module.WORKERS)
        yield plane, Client.from_params({"kubeconfig": str(plane.kubeconfig)})
    finally:
        plane.destroy()


@pytest.fixture(scope="module")
def own_plane(request, tmp_path_factory):
    """A control plane of the test module's own, for tests that run every role cluster-wide, make
    cluster-wide objects with fixed names, or compare the whole API before and after: on the shared
    plane they would act on, and see, the other tests' objects (_plane_of). Yields (plane, client)."""
    yield from _plane_of(request.module, tmp_path_factory, "own-plane")


@pytest.fixture
def case_plane(request, tmp_path_factory):
    """A control plane of one test's own (_plane_of), for cases that each install what makes
    cluster-wide objects with fixed names; a module uses it by returning its parts from function
    fixtures `control_plane` and `kube`. Yields (plane, client)."""
    yield from _plane_of(request.module, tmp_path_factory, "case-plane")


@pytest.fixture(scope="session")
def shared_kube(shared_plane):
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client
    return Client.from_params({"kubeconfig": str(shared_plane.kubeconfig)})


@pytest.fixture(scope="module")
def control_plane(request):
    """The shared control plane, or the module's own when the module sets OWN_PLANE = True."""
    if getattr(request.module, "OWN_PLANE", False):
        return request.getfixturevalue("own_plane")[0]
    return request.getfixturevalue("shared_plane")


@pytest.fixture(scope="module")
def kube(request):
    """A client of the module's control plane (see control_plane)."""
    if getattr(request.module, "OWN_PLANE", False):
        return request.getfixturevalue("own_plane")[1]
    return request.getfixturevalue("shared_kube")


@pytest.fixture
def instance():
    """A fresh kfocp instance name, so that tests never see each other's objects."""
    return "t-" + uuid.uuid4().hex[:8]


@pytest.fixture
def playbook(control_plane, tmp_path):
    """Run a playbook of this collection against the control plane; returns the runner result."""
    from helpers import run_playbook

    def run(name, extravars=None, **kwargs):
        return run_playbook(control_plane, name, extravars or {}, tmp_path, **kwargs)
    return run


def dump(obj):
    return json.dumps(obj, indent=2, sort_keys=True)
