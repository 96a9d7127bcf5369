"""A smoke test of hack/argocd.py: a real Argo CD (built from its Go module) against a control
plane of its own syncs a local git repository, puts back a hand edit (selfHeal), follows a push,
and leaves no process behind."""
import json
import time

import pytest

from argocd import COMPONENTS, REFRESH_ANNOTATION, ArgoCD, build, group_members, write_tree
from cluster import ControlPlane
from helpers import wait_for


@pytest.fixture(scope="module", name="plane")
def plane_fixture(tmp_path_factory):
    """A plane of the module's own: Argo CD's CRDs and its argocd namespace stay out of the others'."""
    build()  # the argocd binary first (cached; `make build` builds it)
    control_plane = ControlPlane(tmp_path_factory.mktemp("argocd-plane")).up(install=False)
    try:
        yield control_plane
    finally:
        control_plane.destroy()


def tree_files(greeting):
    """The repository's files: a Namespace and a ConfigMap holding `greeting`."""
    return {
        "namespace.yaml": {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "argocd-smoke"}},
        "configmap.yaml": {"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "smoke-config", "namespace": "argocd-smoke"},
                           "data": {"greeting": greeting}},
    }


def greeting_on(plane):
    """The greeting the live ConfigMap holds (None when it is absent)."""
    proc = plane.kubectl("-n", "argocd-smoke", "get", "configmap", "smoke-config", "-o", "json", check=False)
    return json.loads(proc.stdout)["data"].get("greeting") if proc.returncode == 0 else None


def test_argocd_syncs_heals_follows_git_and_stops_cleanly(plane, tmp_path):
    """Synced/Healthy from a file:// repository, a hand edit put back (selfHeal), a push followed after a
    refresh, and no process left after down()."""
    argocd = ArgoCD(plane, tmp_path / "argocd")
    started = time.monotonic()
    with argocd.up(timeout=120):
        pids = argocd.pids()
        assert sorted(pids) == sorted(COMPONENTS)
        assert all(kib > 0 for kib in argocd.rss().values()) and sorted(argocd.rss()) == sorted(COMPONENTS)
        # timeout.reconciliation in argocd-cm reached the controller as upstream's StatefulSet passes it
        # (its start-up line, controller/appcontroller.go:197)
        assert "appResyncPeriod=10s" in argocd.log("application-controller").read_text()

        repo = argocd.git_repo(tmp_path / "apps.git", write_tree(tmp_path / "tree", tree_files("hello")))
        assert repo.url.startswith("file://")
        argocd.apply_application("smoke", repo.url, ".")
        app = argocd.wait_synced("smoke", timeout=60, revision=repo.head)
        assert {(r["kind"], r["status"]) for r in app["status"]["resources"]} == {
            ("Namespace", "Synced"), ("ConfigMap", "Synced")}
        assert greeting_on(plane) == "hello"
        synced = time.monotonic()

        # selfHeal: a hand edit is put back
        plane.kubectl("-n", "argocd-smoke", "patch", "configmap", "smoke-config", "--type", "merge",
                      "-p", json.dumps({"data": {"greeting": "tampered"}}))
        wait_for(lambda: greeting_on(plane) == "hello", 30, what="Argo CD to put the edited ConfigMap back")
        healed = time.monotonic()

        # a push, and a refresh instead of the next poll of git
        revision = repo.push(write_tree(tmp_path / "tree", tree_files("bonjour")), "bonjour")
        argocd.refresh("smoke")
        app = argocd.wait_synced("smoke", timeout=30, revision=revision)
        assert greeting_on(plane) == "bonjour"
        # the controller removes the annotation once it has refreshed (application_annotations.go:4)
        assert REFRESH_ANNOTATION[0] not in (app["metadata"].get("annotations") or {})
        timings = {k: round(v, 1) for k, v in argocd.timings.items()}
        print(f"argo cd up {timings}, synced {synced - started - argocd.timings['up']:.1f}s, "
              f"healed {healed - synced:.1f}s, push followed {time.monotonic() - healed:.1f}s; rss {argocd.rss()}")

    assert argocd.pids() == {}
    left = {name: group_members(pid) for name, pid in pids.items() if group_members(pid)}
    assert not left, f"processes left behind: {left}"
