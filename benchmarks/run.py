"""make bench: converge N profiles with five methods, side by side, each on a fresh control plane.

    python benchmarks/run.py [--quick] [--sizes 100,500,2000] [--methods kfocp,limit,...]

Prints a markdown table, writes benchmarks/results/bench-<time>.json and a log-log plot (PNG).
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "hack"), str(ROOT / ".cache" / "collections"), str(ROOT / "benchmarks")]

from cluster import ControlPlane  # noqa: E402
import limit  # noqa: E402
import workload  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
BIN = Path(sys.executable).parent
# Case 1 costs a module run per object; beyond this many profiles it would take longer than the
# whole benchmark's budget, so it is measured at this size only.
LOOP_MAX = 100


def ansible(playbook, objects_file, kubeconfig, extra=()):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=str(ROOT / ".cache" / "collections"), ANSIBLE_NOCOLOR="1")
    cmd = [str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local",
           "-e", "ansible_python_interpreter=%s" % sys.executable, "-e", "bench_kubeconfig=%s" % kubeconfig,
           "-e", "@%s" % objects_file, str(playbook), *extra]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode:
        raise RuntimeError("%s failed:\n%s" % (playbook.name, (proc.stdout + proc.stderr)[-3000:]))


def kubectl(plane, objects_file):
    yaml_file = Path(objects_file).with_suffix(".list.json")
    if not yaml_file.exists():
        data = json.loads(Path(objects_file).read_text())
        ns = [o for o in data["objects"] if o["kind"] == "Namespace"]
        rest = [o for o in data["objects"] if o["kind"] != "Namespace"]
        yaml_file.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": ns + rest}))
    plane.kubectl("apply", "--server-side", "--field-manager=kubectl-bench", "-f", str(yaml_file))


METHODS = {
    "k8s-loop": lambda plane, f: ansible(ROOT / "benchmarks/playbooks/k8s-loop.yml", f, plane.kubeconfig),
    "k8s-list": lambda plane, f: ansible(ROOT / "benchmarks/playbooks/k8s-list.yml", f, plane.kubeconfig),
    "kubectl-ssa": kubectl,
    "kfocp": lambda plane, f: ansible(ROOT / "benchmarks/playbooks/kfocp.yml", f, plane.kubeconfig),
    "limit": lambda plane, f: limit.apply_all(str(plane.kubeconfig), json.loads(Path(f).read_text())["objects"]),
}
LABELS = {
    "k8s-loop": "1. kubernetes.core, one object per task",
    "k8s-list": "2. kubernetes.core, list in one task",
    "kubectl-ssa": "3. kubectl apply --server-side",
    "kfocp": "4. kfocp",
    "limit": "5. limit (minimal concurrent SSA client)",
}


def timed(func, *args):
    started = time.monotonic()
    func(*args)
    return time.monotonic() - started


def measure(method, n, objects_file, count, workdir):
    plane = ControlPlane(Path(workdir) / ("%s-%d" % (method, n)))
    try:
        plane.up()
        converge = timed(METHODS[method], plane, objects_file)
        present = workload.count_present(plane, json.loads(Path(objects_file).read_text())["objects"])
        if present != count:
            raise RuntimeError("%s at N=%d: %d of %d objects present after converge" % (method, n, present, count))
        noop = None if method == "k8s-loop" else timed(METHODS[method], plane, objects_file)
        return {"method": method, "n": n, "objects": count, "converge_s": round(converge, 2),
                "noop_s": None if noop is None else round(noop, 2),
                "objects_per_s": round(count / converge, 1)}
    finally:
        plane.destroy()


def table(rows):
    limits = {r["n"]: r["converge_s"] for r in rows if r["method"] == "limit"}
    out = ["| method | N profiles | objects | converge (s) | objects/s | × limit | no-op re-run (s) |",
           "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        ratio = r["converge_s"] / limits[r["n"]] if r["n"] in limits else None
        out.append("| %s | %d | %d | %.2f | %.0f | %s | %s |" % (
            LABELS[r["method"]], r["n"], r["objects"], r["converge_s"], r["objects_per_s"],
            "%.2f" % ratio if ratio else "-", "%.2f" % r["noop_s"] if r["noop_s"] is not None else "-"))
    return "\n".join(out)


def ratios(rows):
    by = {(r["method"], r["n"]): r for r in rows}
    out = []
    for n in sorted(set(r["n"] for r in rows)):
        k = by.get(("kfocp", n))
        if not k:
            continue
        for other, target in (("k8s-loop", 10), ("k8s-list", 2)):
            if (other, n) in by:
                ratio = by[(other, n)]["converge_s"] / k["converge_s"]
                out.append("N=%d: kfocp is %.1fx faster than %s (target >= %dx)" % (n, ratio, LABELS[other], target))
        if ("limit", n) in by:
            out.append("N=%d: kfocp takes %.2fx the limit's time (target <= 1.5x at N=2000)"
                       % (n, k["converge_s"] / by[("limit", n)]["converge_s"]))
        if k["noop_s"] is not None:
            out.append("N=%d: kfocp no-op re-run %.2fs (target <= 5s at N=2000)" % (n, k["noop_s"]))
    return out


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for method in METHODS:
        points = sorted((r["n"], r["converge_s"]) for r in rows if r["method"] == method)
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=LABELS[method])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("profiles (about %d objects each)" % workload.PER_PROFILE)
    ax.set_ylabel("converge wall time (s)")
    ax.set_title("Converging N profiles on one API server")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="N=100 only (CI-sized)")
    parser.add_argument("--sizes", default="100,500,2000")
    parser.add_argument("--methods", default=",".join(METHODS))
    args = parser.parse_args()
    sizes = [100] if args.quick else [int(s) for s in args.sizes.split(",")]
    methods = args.methods.split(",")
    RESULTS.mkdir(parents=True, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory(prefix="kfocp-bench-") as workdir:
        for n in sizes:
            objs = workload.objects(n)
            objects_file = Path(workdir) / ("objects-%d.json" % n)
            objects_file.write_text(json.dumps({"objects": objs}))
            for method in methods:
                if method == "k8s-loop" and n > LOOP_MAX:
                    print("skip %s at N=%d: one module run per object (measured at N=%d only)" % (method, n, LOOP_MAX),
                          flush=True)
                    continue
                row = measure(method, n, str(objects_file), len(objs), workdir)
                print(json.dumps(row), flush=True)
                rows.append(row)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    doc = {"when": stamp, "cpus": os.cpu_count(), "per_profile": workload.PER_PROFILE, "rows": rows,
           "ratios": ratios(rows)}
    (RESULTS / ("bench-%s.json" % stamp)).write_text(json.dumps(doc, indent=2))
    plot(rows, RESULTS / ("bench-%s.png" % stamp))
    print("\n" + table(rows) + "\n")
    print("\n".join(ratios(rows)))
    print("\nresults: %s\nplot: %s" % (RESULTS / ("bench-%s.json" % stamp), RESULTS / ("bench-%s.png" % stamp)))


if __name__ == "__main__":
    main()
