"""The benchmark's reading of the operator's batch log, and the explanation it prints of a burst."""
import datetime
import sys
import time

from helpers import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

import measure  # noqa: E402  pylint: disable=wrong-import-position
import operator_bench  # noqa: E402  pylint: disable=wrong-import-position
import run  # noqa: E402  pylint: disable=wrong-import-position


def _line(when, namespaces, write, plan, read):
    """A line of the fast path's log for a batch, as kfocp_operator/fastpath.py writes it."""
    return ("2026-11-25 %s INFO kfocp.operator.fastpath policies of %d namespace(s) applied: %d created, %d updated, "
            "0 unchanged (compare and write %.3fs, plan %.3fs, read %.3fs)"
            % (when, namespaces, 2 * namespaces, namespaces, write, plan, read))


LOG = [
    _line("07:39:19,197", 7, 0.029, 0.0, 0.0),
    _line("07:39:32,582", 16, 0.238, 0.001, 0.049),
    '2026-11-25 07:39:32,600 INFO kfocp.operator.playbook [namespace_policies : Apply] ok {"created": 0}',
    _line("07:39:33,131", 100, 0.472, 0.003, 0.012),
    _line("07:39:33,428", 84, 0.267, 0.003, 0.014),
    _line("07:39:35,646", 95, 0.675, 0.020, 0.178),
]


def _at(text):
    return datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S,%f").timestamp()


def test_batches_are_read_from_the_window_of_the_burst_only():
    started = _at("2026-11-25 07:39:32,300000")
    got = operator_bench.batches(LOG, started, started + 1.5)
    assert [b["namespaces"] for b in got] == [16, 100, 84]
    assert [b["end_s"] for b in got] == [0.282, 0.831, 1.128]
    assert got[1]["stages"] == {"compare and write": 0.472, "plan": 0.003, "read": 0.012}


def test_the_note_names_the_batch_of_the_median_namespace():
    started = _at("2026-11-25 07:39:32,300000")
    burst = {"count": 200, "created_s": 0.31, "batches": operator_bench.batches(LOG, started, started + 1.5)}
    note = run._batches_note(burst)  # pylint: disable=protected-access
    assert "3 batches of 16, 100, 84 namespaces, done 0.28, 0.83, 1.13 s" in note
    # the 100th namespace is in the second batch: it began at 0.831 - 0.487 s
    assert "batch (100 namespaces) began at 0.34 s, read for 0.01 s and wrote for 0.47 s" in note
    assert "over 0.31 s" in note
    assert run._batches_note({"count": 200}) == ""  # pylint: disable=protected-access


def _row(method, n, seconds):
    return {"method": method, "n": n, "converge_s": seconds}


def test_case_2_is_judged_on_the_median_of_the_runs_side_by_side():
    rows = [_row("k8s-list", 100, 9.0), _row("kfocp-roles", 100, 3.0), _row("k8s-list", 500, 38.3),
            _row("kfocp-roles", 500, 19.4)]
    repeats = [_row("k8s-list", 500, 46.0), _row("kfocp-roles", 500, 20.0), _row("k8s-list", 500, 44.0),
               _row("kfocp-roles", 500, 21.0)]
    assert run.case2_ratios(rows, repeats) == (500, [1.97, 2.3, 2.1])
    verdict = dict((t, (m, v)) for t, m, v in run.targets(rows, repeats=repeats))["kfocp >= 2x faster than case 2"]
    assert verdict == ("2.10x at N=500 (median of 3 runs side by side: 1.97x, 2.30x, 2.10x)", "MET")
    verdict = dict((t, (m, v)) for t, m, v in run.targets(rows))["kfocp >= 2x faster than case 2"]
    assert verdict == ("1.97x at N=500", "MISSED")


def test_the_converge_note_gives_the_least_time_its_cpu_seconds_need(monkeypatch):
    monkeypatch.setattr(run.os, "cpu_count", lambda: 2)
    roles = dict(_row("kfocp-roles", 2000, 50.0), client_cpu_s=23.6, server_cpu_s=60.4)
    go = dict(_row("limit-go-roles", 2000, 30.0), client_cpu_s=5.2, server_cpu_s=50.2)
    note = run._cpu_note([roles, go], roles)  # pylint: disable=protected-access
    # (23.6 + 60.4) / 2 CPUs = 42.0 s, 1.40 times the Go limit's 30 s
    assert "need 42.0 s on 2 CPUs kept busy, 1.40x the Go limit's time" in note
    assert "busy 84% against 92%" in note


def test_the_burst_p50_is_a_ratio_to_the_floor_of_the_same_run():
    burst = {"count": 200, "p50": 0.664, "p95": 0.96, "p99": 0.98, "limit_s": 0.605}
    verdicts = dict((t, (m, v)) for t, m, v in run.targets([], {"burst": burst}))
    measured, met = verdicts[run.BURST_P50_NAME]
    assert measured.startswith("2.20x (p50 664 ms, 200 namespaces;") and "first half of them take about 302 ms" in measured
    assert met == "MISSED"
    burst["limit_s"] = 1.1  # floor 550 ms: 664 ms is 1.21x of it
    measured, met = dict((t, (m, v)) for t, m, v in run.targets([], {"burst": burst}))[run.BURST_P50_NAME]
    assert measured.startswith("1.21x") and met == "MET"
    burst["limit_s"] = None
    measured, met = dict((t, (m, v)) for t, m, v in run.targets([], {"burst": burst}))[run.BURST_P50_NAME]
    assert "no floor measured" in measured and met == "not measured"


def test_the_burst_p99_says_what_the_floors_pace_allows():
    burst = {"count": 200, "p50": 1.236, "p95": 1.856, "p99": 1.887, "limit_s": 1.79, "created_s": 0.34}
    measured, met = dict((t, (m, v)) for t, m, v in run.targets([], {"burst": burst}))[run.BURST_P99_NAME]
    assert met == "MISSED"
    assert measured == ("1.89 s (p95 1.86 s); at the limit client's pace the 99th percentile's namespace waits about "
                        "1.44 s (0.99 x (1.79 s to write the burst - 0.34 s to create it))")
    burst.update(p99=0.9, limit_s=None)
    measured, met = dict((t, (m, v)) for t, m, v in run.targets([], {"burst": burst}))[run.BURST_P99_NAME]
    assert (measured, met) == ("0.90 s (p95 1.86 s)", "MET")


def test_the_burst_lines_give_the_limit_clients_own_burst_without_moving_the_verdict():
    burst = {"count": 200, "p50": 0.96, "p95": 1.3, "p99": 1.44, "limit_s": 0.8, "created_s": 0.3,
             "limit_burst": {"p50": 0.8, "p99": 1.2}}
    verdicts = dict((t, (m, v)) for t, m, v in run.targets([], {"burst": burst}))
    p50, met50 = verdicts[run.BURST_P50_NAME]
    p99, met99 = verdicts[run.BURST_P99_NAME]
    assert p50.startswith("2.40x") and met50 == "MISSED"  # still against the floor of 400 ms
    assert p50.endswith("reaches a p50 of 800 ms: the operator's is 1.20x of it)")
    assert met99 == "MISSED" and p99.endswith("reaches a p99 of 1200 ms: the operator's is 1.20x of it")


def test_the_rss_target_is_100_mib_watching_2000():
    verdicts = dict((t, v) for t, _m, v in run.targets([], {"watch": {"rss_mib": 101, "namespaces": 2000}}))
    assert verdicts[run.RSS_NAME] == "MISSED" and run.RSS_NAME == "operator RSS <= 100 MiB at 2000 namespaces"
    verdicts = dict((t, v) for t, _m, v in run.targets([], {"watch": {"rss_mib": 99, "namespaces": 2000}}))
    assert verdicts[run.RSS_NAME] == "MET"
    # a figure just over the target reads as over it, not as the target rounded
    measured = dict((t, (m, v)) for t, m, v in run.targets([], {"watch": {"rss_mib": 100.46, "namespaces": 2000}}))
    assert measured[run.RSS_NAME] == ("100.5 MiB watching 2000", "MISSED")


def test_the_no_op_note_says_when_ansible_alone_is_over_the_target():
    row = {"noop_s": 8.1, "noop_breakdown": {"startup_s": 0.55, "stages": {"a": {"build": 2.0, "read": 2.46}}}}
    note = run._noop_split(row)  # pylint: disable=protected-access
    assert "4.46 s in kfocp's modules (read 2.46 s, build 2.00 s), 3.64 s around them in Ansible (more than the 3 s" \
        " target alone)" in note
    row["noop_s"] = 6.0
    assert "target alone" not in run._noop_split(row)  # pylint: disable=protected-access


def test_the_no_op_line_gives_its_floor_from_the_same_run():
    row = {"noop_s": 6.0, "noop_floor": {"ansible_s": 1.5, "reads_s": 1.0, "floor_s": 2.5}}
    note = run._noop_floor_note(row)  # pylint: disable=protected-access
    assert "its floor in the same run 2.50 s (Ansible starting one module with the same inventory and variables " \
        "1.50 s, the Python limit client reading the metadata of the roles' objects 1.00 s): the no-op is 2.40x " \
        "its floor, the target 1.20x" in note
    assert "over the 3 s target" not in note
    row["noop_floor"] = {"ansible_s": 2.0, "reads_s": 1.5, "floor_s": 3.5}
    assert note != run._noop_floor_note(row)  # pylint: disable=protected-access
    assert run._noop_floor_note(row).endswith("; the floor alone is over the 3 s target")  # pylint: disable=protected-access
    assert run._noop_floor_note({"noop_s": 6.0}) == ""  # pylint: disable=protected-access
    # the target's line carries it
    measured = dict((t, m) for t, m, _v in run.targets([dict(row, method="kfocp-roles", n=2000)]))
    assert "its floor in the same run 3.50 s" in measured["kfocp no-op re-run at N=2000 <= 3 s"]


def test_every_results_file_the_docs_cite_is_in_the_repository():
    """A figure in the README must be traceable to a results file a clone has (benchmarks/results/
    ignores fresh bench-* runs, so a cited one must be added on purpose)."""
    import re
    import subprocess
    tracked = set(subprocess.run(["git", "ls-files", "benchmarks/results"], cwd=str(ROOT), capture_output=True,
                                 text=True, check=True).stdout.split())
    cited = set()
    for doc in [ROOT / "README.md", ROOT / "operator" / "README.md"] + sorted((ROOT / "docs").glob("*.md")):
        cited.update(re.findall(r"benchmarks/results/[\w.-]*\d[\w.-]*\.(?:json|png|txt)", doc.read_text()))
    assert cited, "the README cites its results files"
    assert sorted(cited - tracked) == []


def test_a_burst_of_no_namespaces_returns_at_once():
    # operator_bench fills up to `watch` namespaces after the burst's: none when watch <= burst.
    # The observer of an empty burst used to wait out its whole timeout (600 s in the bench).
    started = time.monotonic()
    assert measure.burst(None, [], "bench", [("v1", "LimitRange")], timeout=30) == {}
    assert time.monotonic() - started < 1
