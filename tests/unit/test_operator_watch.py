"""The operator's informer against a scripted watch stream (an HTTP server on loopback that
answers LISTs and WATCHes from a script): resourceVersion tracking, bookmarks, 410 Gone as a status
and as an ERROR event, a stream that ends, a dropped connection, an idle stream, and jittered
reconnection."""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest
from kubernetes import client as k8s_client

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "operator"))

from kfocp_operator import collection  # noqa: E402

collection.importable()

from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client  # noqa: E402
from kfocp_operator import kube  # noqa: E402
from kfocp_operator.kube import NAMESPACES, Informer, retry_delay  # noqa: E402


def ns(name, version):
    return {"metadata": {"name": name, "resourceVersion": str(version)}}


def event(kind, obj):
    return {"type": kind, "object": obj}


class Stream:
    """Answers each LIST with the next of `lists` and each WATCH with the next of `watches`:
    a list of events (then the stream ends), ("status", code), ("drop", events) (the connection
    is cut after them) or ("idle", events) (the connection stays open and silent). Records the
    query of every request."""

    def __init__(self):
        self.lists, self.watches, self.got = [], [], []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            close_connection = True

            def do_GET(self):  # noqa: N802
                query = dict((k, v[0]) for k, v in parse_qs(urlparse(self.path).query).items())
                owner.got.append(query)
                if query.get("watch"):
                    self._watch(owner.watches.pop(0) if owner.watches else ("idle", []))
                else:
                    items, version = owner.lists.pop(0)
                    self._send(200, {"metadata": {"resourceVersion": str(version)}, "items": items})

            def _send(self, code, doc):
                data = json.dumps(doc).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _watch(self, step):
                if step == ("close",):  # the connection is cut before any answer
                    self.connection.shutdown(2)
                    return
                if isinstance(step, tuple) and step[0] == "status":
                    self._send(step[1], {"kind": "Status", "code": step[1]})
                    return
                how, events = step if isinstance(step, tuple) else ("end", step)
                self.send_response(200)  # chunked, one event a chunk, as the API server streams them
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for item in events:
                    line = json.dumps(item).encode() + b"\n"
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                    self.wfile.flush()
                if how == "drop":
                    self.connection.shutdown(2)
                    return
                if how == "idle":
                    time.sleep(3)
                self.wfile.write(b"0\r\n\r\n")

            def log_message(self, *args):  # pylint: disable=arguments-differ
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def client(self):
        cfg = k8s_client.Configuration()
        cfg.host = "http://127.0.0.1:%d" % self.server.server_address[1]
        return Client(cfg, retries=0)

    def watch_queries(self):
        return [q for q in self.got if q.get("watch")]

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stream(monkeypatch):
    monkeypatch.setattr(kube, "RETRY_FIRST", 0.05)
    monkeypatch.setattr(kube, "IDLE_MARGIN", 0)
    srv = Stream()
    yield srv
    srv.close()


def run_informer(stream, until, timeout=1, seconds=10, transform=None, handled=None):
    seen = []
    stop = threading.Event()

    def handler(kind, obj, old):
        seen.append((kind, obj["metadata"]["name"]))
        if handled is not None:
            handled.append((obj, old))

    informer = Informer(stream.client(), NAMESPACES, handler, stop=stop, timeout=timeout, transform=transform)
    informer.start()
    deadline = time.monotonic() + seconds
    while not until(informer, seen) and time.monotonic() < deadline:
        time.sleep(0.02)
    stop.set()
    assert until(informer, seen), "informer state: seen=%s got=%s" % (seen, stream.got)
    return informer, seen


def test_watch_starts_at_the_list_version_follows_events_and_resumes_without_a_list(stream):
    stream.lists = [([ns("a", 10)], 12)]
    stream.watches = [[event("ADDED", ns("b", 13)), event("MODIFIED", ns("a", 14))],  # then the server ends it
                      [event("DELETED", ns("b", 15))]]
    informer, seen = run_informer(stream, lambda i, seen: len(stream.watch_queries()) >= 3)
    watches = stream.watch_queries()
    assert [q["resourceVersion"] for q in watches[:3]] == ["12", "14", "15"]
    assert all(q["allowWatchBookmarks"] == "true" and 1 <= int(q["timeoutSeconds"]) <= 2 for q in watches)
    assert seen == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    assert informer.lists == 1 and sorted(o["metadata"]["name"] for o in informer.items()) == ["a"]


def test_the_transform_makes_what_is_cached_and_handled_listed_or_watched(stream):
    stream.lists = [([dict(ns("a", 10), spec={"big": "x" * 100})], 12)]
    stream.watches = [[event("MODIFIED", dict(ns("a", 14), spec={"big": "y"}))]]
    handled = []
    informer, _seen = run_informer(stream, lambda i, seen: len(seen) >= 2, handled=handled,
                                   transform=lambda obj: {"metadata": obj["metadata"], "kept": True})
    assert [set(obj) for obj, _old in handled] == [{"metadata", "kept"}] * 2
    assert handled[1][1] is handled[0][0]  # the old version handed on is the cached, transformed one
    assert informer.get("a") == handled[1][0] and informer.get("b") is None


def test_bookmarks_move_the_version_and_reach_no_handler(stream):
    stream.lists = [([], 5)]
    stream.watches = [[{"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "40"}}}]]
    _informer, seen = run_informer(stream, lambda i, seen: len(stream.watch_queries()) >= 2)
    assert stream.watch_queries()[1]["resourceVersion"] == "40"
    assert seen == []


@pytest.mark.parametrize("gone", [("status", 410), [event("ERROR", {"kind": "Status", "code": 410})]],
                         ids=["http-410", "error-event-410"])
def test_410_gone_lists_again_and_reports_what_changed_meanwhile(stream, gone):
    stream.lists = [([ns("a", 1), ns("b", 2)], 2), ([ns("b", 7), ns("c", 8)], 9)]
    stream.watches = [gone]
    informer, seen = run_informer(stream, lambda i, seen: i.lists == 2 and len(stream.watch_queries()) >= 2)
    assert seen == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "b"), ("ADDED", "c"), ("DELETED", "a")]
    assert stream.watch_queries()[1]["resourceVersion"] == "9"
    assert sorted(o["metadata"]["name"] for o in informer.items()) == ["b", "c"]


def test_a_dropped_connection_resumes_from_the_last_event(stream):
    stream.lists = [([], 3)]
    stream.watches = [("drop", [event("ADDED", ns("a", 4))])]
    informer, seen = run_informer(stream, lambda i, seen: len(stream.watch_queries()) >= 2)
    assert stream.watch_queries()[1]["resourceVersion"] == "4" and informer.lists == 1
    assert seen == [("ADDED", "a")]


def test_an_idle_stream_times_out_and_reconnects_from_its_version(stream):
    stream.lists = [([], 3)]
    stream.watches = [("idle", [event("ADDED", ns("a", 6))])]  # then silence, longer than the read timeout
    started = time.monotonic()
    informer, seen = run_informer(stream, lambda i, seen: len(stream.watch_queries()) >= 2, timeout=0.5)
    assert time.monotonic() - started < 3, "the idle watch was not given up"
    assert stream.watch_queries()[1]["resourceVersion"] == "6" and informer.lists == 1
    assert informer.errors == 1 and seen == [("ADDED", "a")]


def test_an_error_status_lists_again(stream):
    stream.lists = [([], 3), ([ns("a", 9)], 9)]
    stream.watches = [("status", 500)]
    informer, seen = run_informer(stream, lambda i, seen: i.lists == 2)
    assert seen == [("ADDED", "a")] and informer.errors == 1


def test_a_429_resumes_from_its_version_without_a_list(stream):
    """A restarted API server answers watches 429 ("storage is (re)initializing") while its watch
    cache fills: the version is still good, so the watch comes back to it, as client-go's reflector
    does."""
    stream.lists = [([], 3)]
    stream.watches = [[event("ADDED", ns("a", 4))], ("status", 429), ("status", 429), []]
    informer, seen = run_informer(stream, lambda i, seen: len(stream.watch_queries()) >= 4)
    assert [q["resourceVersion"] for q in stream.watch_queries()[:4]] == ["3", "4", "4", "4"]
    assert informer.lists == 1 and informer.errors == 2 and seen == [("ADDED", "a")]


def test_a_failing_watch_is_not_healthy_and_a_quiet_accepted_one_is(stream):
    stream.lists = [([], 3)]
    stream.watches = [("close",), ("close",), ("idle", [])]
    seen_unhealthy = []
    informer, _seen = run_informer(stream, lambda i, seen: (seen_unhealthy.append(not i.healthy()) or True) and
                                   len(stream.watch_queries()) >= 3 and i.healthy(), timeout=5)
    assert any(seen_unhealthy) and informer.errors == 2 and informer.lists == 1
    assert informer.healthy(), "a watch the server accepted, with nothing to tell, counts as working"


def test_reconnection_delays_grow_to_a_cap_with_jitter():
    assert retry_delay(0) == 0
    high = [retry_delay(n, rand=lambda: 1.0) for n in range(1, 10)]
    low = [retry_delay(n, rand=lambda: 0.0) for n in range(1, 10)]
    assert high[:3] == [0.5, 1.0, 2.0] and high[-1] == kube.RETRY_MAX == 5.0
    assert low == [h / 2 for h in high]
