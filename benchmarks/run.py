"""make bench: converge N profiles with the real alternatives, side by side, each on a fresh control
plane; the operator's reaction latency and memory; run time across several clusters.

    python benchmarks/run.py                  # the full set (make bench)
    python benchmarks/run.py --quick          # a CI-sized subset (make bench QUICK=1)
    python benchmarks/run.py --sizes 5 --methods kfocp-roles,limit --no-operator --no-clusters --no-render
    python benchmarks/run.py --only-render    # the render case alone, with its target lines
    python benchmarks/run.py --only-render --render-weights real   # at the real render's weight only

The Go limit (methods limit-go, limit-go-roles; benchmarks/limit) is built first, with go, into
~/.cache/kfocp (once per client-go version and source). The render case (benchmarks/render.py)
runs first, over each of its trees: upstream's kubeflow/manifests 26.03 (every component of the
release's catalog; a few of them with --quick), then the generated trees at the real render's weight
and the light tree's, each of its three appliers on a fresh control plane.

Every control plane is warmed first (workload.warm: every kind listed once), as a cluster in use
is. Prints a markdown table and the targets (measured value, MET or MISSED), writes
benchmarks/results/bench-<time>.json and a log-log plot (PNG) of time versus N.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "benchmarks", ROOT / "hack", ROOT / "tests", ROOT / ".cache" / "collections"):
    if str(_path) not in sys.path:
        sys.path.append(str(_path))

from cluster import ControlPlane  # noqa: E402
import limit  # noqa: E402
import render  # noqa: E402
import roles  # noqa: E402
import timing  # noqa: E402
import workload  # noqa: E402
from helpers import ansible_env  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results"
BIN = Path(sys.executable).parent
LABELS = {
    "k8s-loop": "1. kubernetes.core, one object per task",
    "k8s-list": "2. kubernetes.core, list in one task",
    "kubectl-ssa": "3. kubectl apply --server-side",
    "kfocp-apply": "4a. kfocp apply module, one task",
    "kfocp-roles": "4b. kfocp roles (playbooks/profiles.yml)",
    "limit": "5. limit (minimal concurrent SSA client)",
    "limit-roles": "5b. limit, over the objects of 4b",
    "limit-go": "6. Go limit (client-go, HTTP/2, protobuf)",
    "limit-go-roles": "6b. Go limit, over the objects of 4b",
}
# Each method's physical reference: 4b writes other kinds than the shared workload (see roles.py).
# The Python limit (5, 5b) and the Go limit (6, 6b): every ratio is given against both.
REFERENCE = {"kfocp-roles": "limit-roles", "limit-roles": "limit-roles", "limit-go-roles": "limit-roles"}
GO_REFERENCE = {"kfocp-roles": "limit-go-roles", "limit-roles": "limit-go-roles", "limit-go-roles": "limit-go-roles"}
# Case 1 runs a module per object (one to three seconds each on 2 cores), so it is measured at a
# small N only; case 2 applies one object after the other, so it stops at N=500. Their cost per
# object does not depend on N.
# Case 2 and kfocp's roles are run side by side `case2_repeats` more times at case 2's largest N:
# case 2's own time varies by a fifth from one run to the next.
FULL = {"sizes": [100, 500, 2000], "loop_n": 5, "list_max": 500, "burst": 200, "watch": 2000,
        "clusters": [1, 2, 4], "clusters_n": 50, "case2_repeats": 2}
QUICK = {"sizes": [100], "loop_n": 2, "list_max": 100, "burst": 200, "watch": 500,
         "clusters": [1, 2], "clusters_n": 10, "case2_repeats": 0}
CASE2 = ("k8s-list", "kfocp-roles")
# The bounds: the no-op re-run at N=2000 in seconds (the note says when a part alone is beyond
# it); the burst's p50 as a ratio to the floor measured in the same run (the time by which the
# limit client has written half the burst's objects); the operator's memory watching 2000
# namespaces, in MiB.
NOOP_TARGET_S = 3.0
BURST_P50_TARGET = 1.3
RSS_TARGET_MIB = 100
BURST_P50_NAME = "operator reaction to a burst p50 <= %.1fx the floor" % BURST_P50_TARGET
BURST_P99_TARGET_S = 1
BURST_P99_NAME = "operator reaction to a burst p99 < %d s" % BURST_P99_TARGET_S
RSS_NAME = "operator RSS <= %d MiB at 2000 namespaces" % RSS_TARGET_MIB
# The numbers of the set that the command line can change.
SETTINGS = ("burst", "watch", "clusters_n", "case2_repeats")


def ansible(playbook, objects_file, kubeconfig, extra_env=None):
    cmd = [str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local",
           "-e", "ansible_python_interpreter=%s" % sys.executable, "-e", "bench_kubeconfig=%s" % kubeconfig,
           "-e", "@%s" % objects_file, str(ROOT / "benchmarks" / "playbooks" / playbook)]
    proc = subprocess.run(cmd, env=ansible_env(None, extra_env), capture_output=True, text=True, check=False, cwd=ROOT)
    if proc.returncode:
        raise RuntimeError("%s failed:\n%s" % (playbook, (proc.stdout + proc.stderr)[-3000:]))


def kubectl(plane, objects_file):
    list_file = Path(objects_file).with_suffix(".list.json")
    if not list_file.exists():
        objs = json.loads(Path(objects_file).read_text())["objects"]
        ordered = [o for o in objs if o["kind"] == "Namespace"] + [o for o in objs if o["kind"] != "Namespace"]
        list_file.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": ordered}))
    plane.kubectl("apply", "--server-side", "--field-manager=kubectl-bench", "-f", str(list_file))


# Each method converges the workload of benchmarks/workload.py on a fresh plane: (plane, objects file).
APPLY = {
    "k8s-loop": lambda plane, f: ansible("k8s-loop.yml", f, plane.kubeconfig),
    "k8s-list": lambda plane, f: ansible("k8s-list.yml", f, plane.kubeconfig),
    "kubectl-ssa": kubectl,
    "kfocp-apply": lambda plane, f: ansible("kfocp.yml", f, plane.kubeconfig),
    "limit": lambda plane, f: limit.apply_all(str(plane.kubeconfig), json.loads(Path(f).read_text())["objects"]),
    "limit-go": lambda plane, f: limit.go_apply_all(plane.kubeconfig, json.loads(Path(f).read_text())["objects"]),
}


def timed(func, *args):
    started = time.monotonic()
    func(*args)
    return time.monotonic() - started


def measure(method, n, workdir, noop=True):
    """One method at one size on a fresh control plane: converge, check, no-op re-run (for the
    methods of APPLY, only with `noop`)."""
    plane = ControlPlane(Path(workdir) / ("%s-%d" % (method, n)))
    try:
        plane.up()
        workload.warm(plane)
        if method == "kfocp-roles":
            row = roles.run([plane], n, workdir, floor=True)
        elif method == "limit-roles":
            row = roles.limit_run(plane, n)
        elif method == "limit-go-roles":
            row = roles.limit_run(plane, n, limit.go_apply_all)
        else:
            objects_file = Path(workdir) / ("objects-%d.json" % n)
            if not objects_file.exists():
                objects_file.write_text(json.dumps({"objects": workload.objects(n)}))
            objs = json.loads(objects_file.read_text())["objects"]
            meter = timing.Meter([plane])
            with meter:
                converge = timed(APPLY[method], plane, str(objects_file))
            present = workload.count_present(plane, objs)
            if present != len(objs):
                raise RuntimeError("%s at N=%d: %d of %d objects present after converge"
                                   % (method, n, present, len(objs)))
            row = dict(meter.figures(), converge_s=round(converge, 2), objects=len(objs))
            noop_s = None
            if method == "kfocp-apply" and noop:  # where its no-op re-run's time goes, as for the roles
                timing_file = Path(workdir) / ("noop-timing-apply-%d.json" % n)
                noop_s = timed(ansible, "kfocp.yml", str(objects_file), plane.kubeconfig, timing.env(timing_file))
                row["noop_breakdown"] = timing.read(timing_file, noop_s)
            elif noop and method != "k8s-loop":
                noop_s = timed(APPLY[method], plane, str(objects_file))
            row.update(noop_s=None if noop_s is None else round(noop_s, 2), load1=round(os.getloadavg()[0], 2))
        row.update(method=method, n=n, objects_per_s=round(row["objects"] / row["converge_s"], 1))
        return row
    finally:
        plane.destroy()


def clusters(counts, n, workdir):
    """Run time of the roles across 1, 2, 4... clusters, N profiles each: forks (one
    ansible-playbook over an inventory of K hosts) and runners (one ansible-runner per cluster)."""
    rows = []
    for mode in ("forks", "runners"):
        # one runner per cluster at the largest count only, beside forks at the same count
        for count in counts if mode == "forks" else [max(counts)]:
            planes = [ControlPlane(Path(workdir) / ("clusters-%s-%d-%d" % (mode, count, i))) for i in range(count)]
            try:
                for plane in planes:
                    plane.up()
                    workload.warm(plane)
                row = roles.run(planes, n, Path(workdir) / ("clusters-%s-%d" % (mode, count)), mode)
            finally:
                for plane in planes:
                    plane.destroy()
            row.update(mode=mode, clusters=count, n=n)
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


# ------------------------------------------------------------------ report

def reference_row(rows, row, go=False):
    """The row of the row's reference limit at the same N (REFERENCE, or GO_REFERENCE with `go`),
    or None."""
    reference = (GO_REFERENCE if go else REFERENCE).get(row["method"], "limit-go" if go else "limit")
    return next((other for other in rows if other["method"] == reference and other["n"] == row["n"]), None)


def ratio_to_limit(rows, row, go=False):
    """The row's converge time over its reference limit's at the same N, or None."""
    other = reference_row(rows, row, go)
    return row["converge_s"] / other["converge_s"] if other else None


def _cpu_note(rows, row):
    """The client CPU seconds of a converge, split by process (each module, ansible-playbook, its
    workers) when recorded, and of its Go reference's: on CPUs the API server shares, what the
    client takes from it."""
    other = reference_row(rows, row, go=True)
    if not other or row.get("client_cpu_s") is None or other.get("client_cpu_s") is None:
        return ""
    split = row.get("client_cpu_split") or {}
    parts = " (%s)" % ", ".join("%s %.1f s" % item for item in split.items()) if split else ""
    note = "; client CPU %.1f s%s against the Go limit's %.1f s" % (row["client_cpu_s"], parts, other["client_cpu_s"])
    if row.get("server_cpu_s") is not None and other.get("server_cpu_s") is not None:
        cpus = os.cpu_count() or 1
        least = (row["client_cpu_s"] + row["server_cpu_s"]) / cpus
        note += ("; kube-apiserver and etcd CPU %.1f s against %.1f s; the %d CPUs busy %.0f%% against %.0f%%; "
                 "the converge's CPU seconds need %.1f s on %d CPUs kept busy, %.2fx the Go limit's time" % (
                     row["server_cpu_s"], other["server_cpu_s"], cpus, _busy(row), _busy(other), least, cpus,
                     least / other["converge_s"]))
    return note


def _busy(row):
    """The share of the machine's CPUs that the client and the API server used over a converge."""
    return 100.0 * (row["client_cpu_s"] + row["server_cpu_s"]) / ((os.cpu_count() or 1) * row["converge_s"])


def table(rows):
    out = ["| method | N profiles | objects | converge (s) | objects/s | × Python limit (5, or 5b for 4b) "
           "| × Go limit (6, or 6b for 4b) | no-op re-run (s) |",
           "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in sorted(rows, key=lambda r: (list(LABELS).index(r["method"]), r["n"])):
        ratio, go = ratio_to_limit(rows, r), ratio_to_limit(rows, r, go=True)
        out.append("| %s | %d | %d | %.2f | %.0f | %s | %s | %s |" % (
            LABELS[r["method"]], r["n"], r["objects"], r["converge_s"], r["objects_per_s"],
            "%.2f" % ratio if ratio else "-", "%.2f" % go if go else "-",
            "%.2f" % r["noop_s"] if r["noop_s"] is not None else "-"))
    return "\n".join(out)


def clusters_table(rows):
    out = ["| clusters | how | N per cluster | converge (s) | no-op re-run (s) | objects | load |",
           "|---:|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        how = "one ansible-playbook, forks" if r["mode"] == "forks" else "one ansible-runner per cluster"
        out.append("| %d | %s | %d | %.1f | %.1f | %d | %.1f |"
                   % (r["clusters"], how, r["n"], r["converge_s"], r["noop_s"], r["objects"], r["load1"]))
    return "\n".join(out)


def _burst_p50(burst):
    """(measured, verdict) of the burst's p50 against its floor: the limit client writes the whole
    burst's objects in limit_s, so half of them are in after about limit_s / 2."""
    floor = (burst.get("limit_s") or 0) / 2
    if not floor:
        return "%.0f ms (%d namespaces; no floor measured)%s" % (
            burst["p50"] * 1000, burst["count"], _batches_note(burst)), None
    return ("%.2fx (p50 %.0f ms, %d namespaces; the floor: the limit client writes the whole burst's objects in %.2f s, "
            "so the first half of them take about %.0f ms%s%s)" % (
                burst["p50"] / floor, burst["p50"] * 1000, burst["count"], burst["limit_s"], floor * 1000,
                _batches_note(burst), _limit_burst_note(burst, "p50")), burst["p50"] <= BURST_P50_TARGET * floor)


def _burst_p99(burst):
    """The p99 and what the floor's pace allows it: a writer at the limit client's pace (the whole
    burst's objects in limit_s, once they exist) that began with the first namespace would have
    the 99th percentile's objects in 0.99 * limit_s, and that namespace was created about 0.99 *
    created_s after the first: it would wait about the difference."""
    out = "%.2f s (p95 %.2f s)" % (burst["p99"], burst["p95"])
    if burst.get("limit_s") and burst.get("created_s") is not None:
        bound = 0.99 * (burst["limit_s"] - burst["created_s"])
        out += ("; at the limit client's pace the 99th percentile's namespace waits about %.2f s "
                "(0.99 x (%.2f s to write the burst - %.2f s to create it))" % (bound, burst["limit_s"], burst["created_s"]))
    return out + _limit_burst_note(burst, "p99")


def _limit_burst_note(burst, rank):
    """The same burst from the limit client, its creations included (operator_bench._limit_burst):
    what the API server allows once it also creates the namespaces and its controllers answer them,
    which the floor above leaves out; and the operator's figure as a ratio to it."""
    other = (burst.get("limit_burst") or {}).get(rank)
    if not other:
        return ""
    return ("; the limit client, creating the same burst's namespaces and writing each one's objects as soon as it "
            "exists, reaches a %s of %.0f ms: the operator's is %.2fx of it" % (rank, other * 1000, burst[rank] / other))


def _batches_note(burst):
    """Where the burst's time went beyond the floor, from the operator's log of its batches."""
    batches = burst.get("batches") or []
    if not batches:
        return ""
    half, total, median = burst["count"] / 2.0, 0, batches[-1]
    for batch in batches:
        total += batch["namespaces"]
        if total >= half:
            median = batch
            break
    began = median["end_s"] - sum(median["stages"].values())
    return ("; the bench created the namespaces over %.2f s, and the operator applied them in %d batches of %s "
            "namespaces, done %s s after the burst began; the median namespace's batch (%d namespaces) "
            "began at %.2f s, read for %.2f s and wrote for %.2f s" % (
                burst.get("created_s", 0), len(batches), ", ".join(str(b["namespaces"]) for b in batches),
                ", ".join("%.2f" % b["end_s"] for b in batches), median["namespaces"], began,
                median["stages"].get("read", 0), median["stages"].get("compare and write", 0)))


def case2_ratios(rows, repeats=()):
    """N and case 2's converge time over the roles', for the run of each at case 2's largest N
    that both have, then for each pair of `repeats` rows (run side by side after them)."""
    by = dict(((r["method"], r["n"]), r) for r in rows)
    common = sorted(n for m, n in by if m == CASE2[0] and (CASE2[1], n) in by)
    if not common:
        return None, []
    n = common[-1]
    pairs = [(by[(CASE2[0], n)], by[(CASE2[1], n)])]
    later = dict((m, [r for r in repeats if r["method"] == m and r["n"] == n]) for m in CASE2)
    pairs += list(zip(later[CASE2[0]], later[CASE2[1]]))
    return n, [round(a["converge_s"] / b["converge_s"], 2) for a, b in pairs]


def targets(rows, operator=None, render_rows=None, repeats=(), render_weights=None):
    """Each target of the issue with its measured value: (target, measured, verdict)."""
    by = dict(((r["method"], r["n"]), r) for r in rows)
    out = []

    def largest(method, at_most=None):
        sizes = [n for m, n in by if m == method and (at_most is None or n <= at_most)]
        return by[(method, max(sizes))] if sizes else None

    def add(target, measured, met):
        out.append((target, measured, "not measured" if met is None else ("MET" if met else "MISSED")))

    kfocp = largest("kfocp-roles", 100) or largest("kfocp-roles")
    loop = largest("k8s-loop")
    if kfocp and loop:
        # Case 1 runs one module per object: its objects/s is the same at every N.
        speedup = kfocp["objects_per_s"] / loop["objects_per_s"]
        add("kfocp >= 10x faster than case 1", "%.1fx (objects/s: %.1f at N=%d vs %.2f at N=%d; case 1 would take "
            "%.0f s at N=%d)" % (speedup, kfocp["objects_per_s"], kfocp["n"], loop["objects_per_s"], loop["n"],
                                 kfocp["objects"] / loop["objects_per_s"], kfocp["n"]), speedup >= 10)
    else:
        add("kfocp >= 10x faster than case 1", "-", None)
    n, ratios = case2_ratios(rows, repeats)
    if ratios:
        median = statistics.median(ratios)
        runs = "" if len(ratios) == 1 else " (median of %d runs side by side: %s)" % (
            len(ratios), ", ".join("%.2fx" % r for r in ratios))
        add("kfocp >= 2x faster than case 2", "%.2fx at N=%d%s" % (median, n, runs), median >= 2)
    else:
        add("kfocp >= 2x faster than case 2", "-", None)
    for method in ("kfocp-roles", "kfocp-apply"):
        name = "kfocp" if method == "kfocp-roles" else "4a (module)"
        row = by.get((method, 2000))
        go, py = (ratio_to_limit(rows, row, go=True), ratio_to_limit(rows, row)) if row else (None, None)
        if go is not None:
            add("%s converge within 1.3x of the Go limit at N=2000" % name, "%.2fx (of %s; %s of the Python limit%s)"
                % (go, LABELS[GO_REFERENCE.get(method, "limit-go")].split(" ", 1)[0].rstrip("."),
                   "%.2fx" % py if py else "-", _cpu_note(rows, row)), go <= 1.3)
        else:
            add("%s converge within 1.3x of the Go limit at N=2000" % name,
                "%.2fx of the Python limit" % py if py else "-", None)
        if row:
            add("%s no-op re-run at N=2000 <= 3 s" % name, "%.1f s%s%s" % (row["noop_s"], _noop_split(row),
                                                                           _noop_floor_note(row)),
                row["noop_s"] <= NOOP_TARGET_S)
        else:
            add("%s no-op re-run at N=2000 <= 3 s" % name, "-", None)
    burst = (operator or {}).get("burst")
    if burst:
        add(BURST_P50_NAME, *_burst_p50(burst))
        add(BURST_P99_NAME, _burst_p99(burst), burst["p99"] < BURST_P99_TARGET_S)
    else:
        add(BURST_P50_NAME + ", p99 < %d s" % BURST_P99_TARGET_S, "-", None)
    watch = (operator or {}).get("watch")
    if watch:
        add(RSS_NAME, "%.1f MiB watching %d" % (watch["rss_mib"], watch["namespaces"]),
            watch["rss_mib"] <= RSS_TARGET_MIB if watch["namespaces"] >= 2000 else None)
    else:
        add(RSS_NAME, "-", None)
    # per weight, from the same run: the role >= 3x faster than kubectl, and <= 1.3x the Go limit
    for target, measured, met in render.targets(render_rows or [], render_weights):
        add(target, measured, met)
    return out


def _noop_floor_note(row):
    """The no-op re-run beside its floor measured in the same run (benchmarks/roles.py, noop_floor),
    and whether the floor alone is over the target."""
    floor = row.get("noop_floor")
    if not floor:
        return ""
    over = "; the floor alone is over the %g s target" % NOOP_TARGET_S if floor["floor_s"] > NOOP_TARGET_S else ""
    return ("; its floor in the same run %.2f s (Ansible starting one module with the same inventory and "
            "variables %.2f s, the Python limit client reading the metadata of the roles' objects %.2f s): "
            "the no-op is %.2fx its floor, the target %.2fx%s"
            % (floor["floor_s"], floor["ansible_s"], floor["reads_s"], row["noop_s"] / floor["floor_s"],
               NOOP_TARGET_S / floor["floor_s"], over))


def _noop_split(row):
    """Where a no-op re-run's time went: kfocp's modules' own stages (reads, comparison, prune,
    builds), and the rest: Ansible around them (start-up, argument specs, templating the declared
    profiles into each task, module starts) and the API server's answers while modules wait."""
    breakdown = row.get("noop_breakdown") or {}
    stages = breakdown.get("stages") or {}
    if not stages:
        return ""
    inside = dict()
    for per_task in stages.values():
        for stage, seconds in per_task.items():
            inside[stage] = inside.get(stage, 0) + seconds
    modules = sum(inside.values())
    parts = ", ".join("%s %.2f s" % (stage, seconds) for stage, seconds in
                      sorted(inside.items(), key=lambda item: -item[1]))
    outside = row["noop_s"] - modules
    beyond = " (more than the %g s target alone)" % NOOP_TARGET_S if outside > NOOP_TARGET_S else ""
    return ("; %.2f s in kfocp's modules (%s), %.2f s around them in Ansible%s (start-up %.2f s, argument "
            "specs, checks, templating, module starts, exit)"
            % (modules, parts, outside, beyond, breakdown.get("startup_s", 0)))


def plot(rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for method in LABELS:
        points = sorted((r["n"], r["converge_s"]) for r in rows if r["method"] == method)
        if points:
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=LABELS[method])
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("profiles (%d objects each)" % workload.PER_PROFILE)
    ax.set_ylabel("converge wall time (s)")
    ax.set_title("Converging N profiles on one API server (%d CPUs)" % os.cpu_count())
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def plan(args):
    """The (method, N) pairs to measure, in order."""
    profile = QUICK if args.quick else FULL
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else profile["sizes"]
    methods = args.methods.split(",") if args.methods else list(LABELS)
    unknown = [m for m in methods if m not in LABELS]
    if unknown:
        raise SystemExit("unknown methods %s; known: %s" % (", ".join(unknown), ", ".join(LABELS)))
    loop_n = args.loop_n or (min(sizes) if args.sizes else profile["loop_n"])
    list_max = max(sizes) if args.sizes else profile["list_max"]
    pairs = [("k8s-loop", loop_n)] if "k8s-loop" in methods else []
    for n in sizes:
        pairs += [(m, n) for m in methods if m != "k8s-loop" and (m != "k8s-list" or n <= list_max)]
    return profile, pairs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="the CI-sized subset")
    parser.add_argument("--sizes", help="profile counts, comma-separated (every method at every size)")
    parser.add_argument("--methods", help="comma-separated: %s" % ",".join(LABELS))
    parser.add_argument("--no-operator", action="store_true", help="skip the operator's latency and RSS")
    parser.add_argument("--no-clusters", action="store_true", help="skip the run time across clusters")
    parser.add_argument("--no-render", action="store_true", help="skip the render case (benchmarks/render.py)")
    parser.add_argument("--no-fleet", action="store_true",
                        help="skip the fleet: Argo CD beside ansible-playbook forks (benchmarks/fleet_bench.py)")
    parser.add_argument("--only-render", action="store_true",
                        help="only the render case: no profile sizes, operator or clusters")
    parser.add_argument("--render-weights",
                        help="the render case's trees, in order (default %s; with --quick %s; known: %s)"
                        % (",".join(render.DEFAULT_WEIGHTS), ",".join(render.QUICK_WEIGHTS), ", ".join(render.KNOWN)))
    parser.add_argument("--render-component", default=render.COMPONENT,
                        help="the components_catalog entry the render case's tree is (default %(default)s)")
    parser.add_argument("--out", default=str(RESULTS), help="directory for the JSON and the plot")
    for key in SETTINGS:
        parser.add_argument("--" + key.replace("_", "-"), type=int, help="instead of the set's %s" % key)
    parser.add_argument("--clusters", help="cluster counts, comma-separated, instead of the set's")
    parser.add_argument("--loop-n", type=int, help="case 1's N (one module run per object), instead of the "
                        "smallest size")
    args = parser.parse_args(argv)
    profile, pairs = plan(args)
    weights = (args.render_weights.split(",") if args.render_weights
               else list(render.QUICK_WEIGHTS if args.quick else render.DEFAULT_WEIGHTS))
    if any(w not in render.KNOWN for w in weights):
        raise SystemExit("unknown render weights %s; known: %s" % (args.render_weights, ", ".join(render.KNOWN)))
    if args.only_render:
        pairs, args.no_operator, args.no_clusters, args.no_render, args.no_fleet = [], True, True, False, True
    profile = dict(profile, **dict((k, getattr(args, k)) for k in SETTINGS if getattr(args, k) is not None))
    if args.clusters:
        profile["clusters"] = [int(c) for c in args.clusters.split(",")]
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    doc = {"when": datetime.datetime.now().strftime("%Y%m%d-%H%M%S"), "cpus": os.cpu_count(),
           "load1_start": round(os.getloadavg()[0], 2), "per_profile": workload.PER_PROFILE, "rows": []}
    if any(m.startswith("limit-go") for m, _rest in pairs) or not args.no_render:
        limit.go_binary()  # built (or found in the cache) before anything is timed
    with tempfile.TemporaryDirectory(prefix="kfocp-bench-") as workdir:
        if not args.no_render:
            doc["render"] = render.run(workdir, component=args.render_component, weights=weights)
        for method, n in pairs:
            row = measure(method, n, workdir)
            print(json.dumps(row), flush=True)
            doc["rows"].append(row)
        n, _ratios = case2_ratios(doc["rows"])
        doc["repeats"] = []
        for repeat in range(profile["case2_repeats"] if n else 0):
            again = Path(workdir) / ("repeat-%d" % (repeat + 1))  # its own records of CPU and timing
            again.mkdir()
            for method in CASE2:
                row = measure(method, n, again, noop=False)
                print(json.dumps(dict(row, repeat=True)), flush=True)
                doc["repeats"].append(row)
        if not args.no_operator:
            import operator_bench
            doc["operator"] = operator_bench.run(Path(workdir), profile["burst"], profile["watch"])
            print(json.dumps({"operator": doc["operator"]}), flush=True)
        if not args.no_clusters:
            doc["clusters"] = clusters(profile["clusters"], profile["clusters_n"], workdir)
        if not args.no_fleet:
            import fleet_bench
            doc["fleet"] = fleet_bench.run(workdir, profile["clusters"])
    doc["targets"] = [{"target": t, "measured": m, "verdict": v}
                      for t, m, v in targets(doc["rows"], doc.get("operator"), doc.get("render"), doc["repeats"],
                                             weights if not args.no_render else None)]
    doc["load1_end"] = round(os.getloadavg()[0], 2)
    doc["total_s"] = round(time.monotonic() - started, 1)
    stem = out_dir / ("bench-%s" % doc["when"])
    stem.with_suffix(".json").write_text(json.dumps(doc, indent=2))
    if doc["rows"]:
        plot(doc["rows"], stem.with_suffix(".png"))
        print("\n" + table(doc["rows"]) + "\n")
    if doc.get("clusters"):
        print(clusters_table(doc["clusters"]) + "\n")
    if doc.get("render"):
        print(render.table(doc["render"]) + "\n")
    if doc.get("fleet"):
        import fleet_bench
        print(fleet_bench.table(doc["fleet"]) + "\n")
    for row in doc["rows"]:
        if row.get("noop_breakdown") and row["n"] == max(r["n"] for r in doc["rows"] if r["method"] == row["method"]):
            print("where the no-op re-run's %.1f s go (%s, N=%d):" % (row["noop_s"], row["method"], row["n"]))
            print("\n".join(timing.lines(row["noop_breakdown"])) + "\n")
    for row in doc.get("render") or []:
        if row.get("breakdown"):
            print("where the render case's role run's %.1f s go (%s weight):" % (row["total_s"], row["weight"]))
            print("\n".join(timing.lines(row["breakdown"])) + "\n")
    for entry in doc["targets"]:
        print("%-60s %-12s %s" % (entry["target"], entry["verdict"], entry["measured"]))
    print("\n%d CPUs, load average %.1f at the start, %.1f at the end; %.0f s in all"
          % (doc["cpus"], doc["load1_start"], doc["load1_end"], doc["total_s"]))
    print("results: %s" % stem.with_suffix(".json") + ("\nplot: %s" % stem.with_suffix(".png") if doc["rows"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
