"""The client CPU benchmark's pure parts: its objects, its reading of TCP_INFO, and its summary."""
import json
import struct
import sys

import pytest

from helpers import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))

import client_cpu  # noqa: E402  pylint: disable=wrong-import-position


def test_configmap_is_about_one_kilobyte_and_labelled_with_its_run():
    obj = client_cpu.configmap("ns", "urllib3-r0-t1-1999", "urllib3-r0-t1")
    size = len(json.dumps(obj, separators=(",", ":")))
    assert 900 <= size <= 1300
    assert obj["metadata"]["labels"][client_cpu.LABEL] == "urllib3-r0-t1"
    assert all(len(value) == 100 for value in obj["data"].values())


def test_parse_tcp_info_reads_bytes_acked_and_received():
    info = bytearray(232)
    struct.pack_into("=QQ", info, 120, 12345, 678)
    assert client_cpu.parse_tcp_info(bytes(info)) == (12345, 678)
    assert client_cpu.parse_tcp_info(bytes(100)) is None


def _run(client, threads, round_no, cpu):
    phase = {"cpu_ms": cpu, "sys_ms": cpu / 4, "wall_ms": 2 * cpu, "sent": 1000.0, "received": 2000.0}
    return {"client": client, "threads": threads, "round": round_no, "protocol": "HTTP/1.1", "notes": [],
            "result": {p: dict(phase) for p in client_cpu.PHASES}}


def test_summarise_takes_the_mean_of_the_rounds_and_their_spread():
    summary = client_cpu.summarise([_run("project", 1, 0, 0.8), _run("project", 1, 1, 1.2),
                                    _run("pycurl", 1, 0, 0.4)])
    assert summary[("project", 1)]["apply"]["cpu_ms"] == pytest.approx(1.0)
    assert summary[("project", 1)]["spread"] == pytest.approx(40.0)
    assert summary[("pycurl", 1)]["spread"] == 0.0


def test_request_table_gives_each_client_against_the_project():
    summary = client_cpu.summarise([_run("project", 1, 0, 0.8), _run("pycurl", 1, 0, 0.2)])
    lines = client_cpu.request_table(summary, ["project", "pycurl"])
    pycurl = next(line for line in lines if line.startswith("pycurl"))
    assert " 0.25 " in pycurl
    assert " 25% " in pycurl  # the system share of its CPU


def test_codec_costs_times_every_codec_on_the_answers():
    obj = client_cpu.configmap("ns", "a", "t")
    costs, sizes = client_cpu.codec_costs(obj, {"apply": obj, "get": obj}, loops=5, repeats=1)
    assert sizes[0] == sizes[1] > 900
    assert set(costs) >= {"json compact (project)", "json defaults", "orjson"}
    assert all(isinstance(c, str) or (len(c) == 3 and min(c) >= 0) for c in costs.values())


def test_missing_names_the_import_error():
    class Absent(client_cpu.Bench):
        needs = ("json", "no_such_module_for_the_bench")

    assert "no_such_module_for_the_bench" in client_cpu.missing(Absent)
    assert client_cpu.missing(client_cpu.Stdlib) is None


def test_unknown_clients_are_refused():
    with pytest.raises(SystemExit):
        client_cpu.parse_args(["--clients", "project,nope"])
    assert client_cpu.parse_args(["--clients", "project, pycurl"]).clients == ["project", "pycurl"]
