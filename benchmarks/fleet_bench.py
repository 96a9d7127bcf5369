"""The fleet: how long 1, 2 and 4 clusters take from empty to converged, two ways, each on fresh
control planes that run Pods (two kwok workers each):

- Argo CD (hack/argocd.py, on the first cluster, the others registered as clusters) syncing the
  render of playbooks/render.yml through the ApplicationSet it writes: from the start of the render
  until every Application is Synced, and until every one is also Healthy (its Deployments Available);
- ansible-playbook applying the same roles (scc and components) to the same number of clusters,
  one host per cluster, with as many forks as clusters.

    python benchmarks/fleet_bench.py [--clusters 1,2,4]
"""
import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "benchmarks", ROOT / "hack", ROOT / "tests", ROOT / ".cache" / "collections"):
    if str(_path) not in sys.path:
        sys.path.append(str(_path))

import argocd  # noqa: E402
import fleet  # noqa: E402
from cluster import ControlPlane  # noqa: E402
from helpers import ansible_env  # noqa: E402

COUNTS = (1, 2, 4)
ROLES = ["kfocp.kubeflow.scc", "kfocp.kubeflow.components"]


def _planes(workdir, name, count):
    planes = []
    for index in range(count):
        plane = ControlPlane(Path(workdir) / ("%s-%d-%d" % (name, count, index)))
        planes.append(plane)
        plane.up(workloads=True)
        plane.add_workers(2)
    return planes


def _all(argo, apps, health):
    for app in apps:
        status = (argo.application(app) or {}).get("status") or {}
        if (status.get("sync") or {}).get("status") != "Synced":
            return False
        if health and (status.get("health") or {}).get("status") != "Healthy":
            return False
    return True


def _until(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return time.monotonic()
        time.sleep(0.5)
    raise RuntimeError("%s not reached after %ds" % (what, timeout))


def by_argocd(workdir, count, timeout=900):
    """Render, push, ApplicationSet, every Application Synced then Healthy: seconds from the start."""
    planes = _planes(workdir, "argocd", count)
    argo = argocd.ArgoCD(planes[0], Path(workdir) / ("argocd-%d" % count))
    try:
        argo.up()
        servers = {"c0": None}
        for index, plane in enumerate(planes[1:], 1):
            servers["c%d" % index] = argo.add_cluster("c%d" % index, plane)
        hosts = fleet.inventory(Path(workdir) / ("fleet-%d.yml" % count), planes[0].state()["bins"]["kubectl"], servers)
        tree = Path(workdir) / ("tree-%d" % count)
        tree.mkdir()
        repo = argo.git_repo(Path(workdir) / ("fleet-%d.git" % count))
        started = time.monotonic()
        fleet.render(hosts, tree, repo.url, forks=count)
        rendered = time.monotonic()
        repo.push(tree, "kfocp render")
        argo.kubectl("apply", "-f", str(tree / "applicationset.yaml"))
        apps = ["kfocp-%s" % host for host in servers]
        synced = _until(lambda: _all(argo, apps, False), timeout, "every Application Synced")
        healthy = _until(lambda: _all(argo, apps, True), timeout, "every Application Synced and Healthy")
        return {"method": "argocd", "clusters": count, "render_s": round(rendered - started, 1),
                "synced_s": round(synced - started, 1), "healthy_s": round(healthy - started, 1),
                "argocd_rss_mib": round(sum(argo.rss().values()) / 1024.0, 1)}
    finally:
        argo.down()
        for plane in planes:
            plane.destroy()


def by_forks(workdir, count):
    """ansible-playbook over one host per cluster, forks = clusters: seconds of the run."""
    planes = _planes(workdir, "forks", count)
    try:
        servers = dict(("c%d" % index, None) for index in range(count))
        # each host applies to its own cluster
        hostvars = dict(("c%d" % index, {"kfocp_kubeconfig": str(plane.kubeconfig), "kfocp_roles": ROLES})
                        for index, plane in enumerate(planes))
        hosts = fleet.inventory(Path(workdir) / ("forks-%d.yml" % count), planes[0].state()["bins"]["kubectl"], servers,
                                hostvars)
        started = time.monotonic()
        proc = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(hosts), "-f", str(count),
                               str(ROOT / "tests" / "fixtures" / "playbooks" / "roles.yml")],
                              env=ansible_env(None), capture_output=True, text=True, check=False, cwd=ROOT, timeout=1800)
        took = time.monotonic() - started
        if proc.returncode:
            raise RuntimeError("ansible-playbook failed:\n" + proc.stdout[-3000:])
        return {"method": "forks", "clusters": count, "converge_s": round(took, 1)}
    finally:
        for plane in planes:
            plane.destroy()


def run(workdir, counts=COUNTS):
    rows = []
    for count in counts:
        for measure in (by_forks, by_argocd):
            row = measure(workdir, count)
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def table(rows):
    out = ["| clusters | ansible-playbook, forks (s) | Argo CD: render (s) | Synced (s) | Synced and Healthy (s) "
           "| Argo CD RSS (MiB) |", "|---:|---:|---:|---:|---:|---:|"]
    for count in sorted(set(r["clusters"] for r in rows)):
        forks = next((r for r in rows if r["clusters"] == count and r["method"] == "forks"), {})
        argo = next((r for r in rows if r["clusters"] == count and r["method"] == "argocd"), {})
        keys = ("render_s", "synced_s", "healthy_s", "argocd_rss_mib")
        cells = [forks.get("converge_s", "-")] + [argo.get(k, "-") for k in keys]
        out.append("| %d | %s |" % (count, " | ".join(str(c) for c in cells)))
    return "\n".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clusters", default=",".join(str(c) for c in COUNTS))
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="kfocp-fleet-") as workdir:
        rows = run(workdir, [int(c) for c in args.clusters.split(",")])
    print("\n" + table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
