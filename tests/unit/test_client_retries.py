"""The client's retries against a scripted HTTP server on loopback: which requests are repeated,
and reachability that recovers as soon as the server answers again."""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes import client as k8s_client

from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client, KubeError
from cluster import free_port


class Scripted:
    """An HTTP server answering each request with the next (status, body) of `script` for its
    method, or `drop` to close the connection without an answer; it records what it got."""

    def __init__(self, port=None):
        self.script = {}
        self.got = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                owner.got.append((self.command, self.path, body))
                queue = owner.script.get((self.command, self.path.split("?")[0])) or owner.script.get(self.command)
                status, doc = queue.pop(0) if queue and len(queue) > 1 else (queue[0] if queue else (404, {}))
                if status == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                data = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer  # noqa: N815

            def log_message(self, *args):  # pylint: disable=arguments-differ
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", port or 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _client(port, **kwargs):
    cfg = k8s_client.Configuration()
    cfg.host = "http://127.0.0.1:%d" % port
    kwargs.setdefault("backoff", 0.01)
    kwargs.setdefault("max_backoff", 0.02)
    return Client(cfg, **kwargs)


@pytest.fixture
def server():
    srv = Scripted()
    yield srv
    srv.close()


def test_an_outage_does_not_stick_the_first_answer_clears_it():
    port = free_port()
    client = _client(port, retries=3)
    started = time.monotonic()
    with pytest.raises(KubeError, match="did not answer after 4 attempts"):
        client.request("GET", "/api")
    assert client.unreachable and client.requests == 4
    with pytest.raises(KubeError):  # while down: one attempt, not a whole retry sequence
        client.request("GET", "/api")
    assert client.requests == 5 and time.monotonic() - started < 5
    srv = Scripted(port)
    try:
        srv.script["GET"] = [(200, {"kind": "APIVersions"})]
        assert client.request("GET", "/api") == {"kind": "APIVersions"}
        assert client.unreachable is None
    finally:
        srv.close()


def test_503_is_retried_for_get_and_apply_not_for_post_or_json_patch(server):
    client = _client(server.port)
    server.script["GET"] = [(503, {}), (503, {}), (200, {"ok": 1})]
    assert client.request("GET", "/api/v1/namespaces/a") == {"ok": 1}
    server.script["PATCH"] = [(503, {}), (200, {"applied": 1})]
    assert client.request("PATCH", "/api/v1/namespaces/a", body={}, content_type="application/apply-patch+yaml") \
        == {"applied": 1}
    del server.got[:]
    server.script["POST"] = [(503, {"message": "busy"}), (201, {})]
    with pytest.raises(KubeError) as err:
        client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": "a"}})
    assert err.value.status == 503 and len(server.got) == 1
    server.script["PATCH"] = [(503, {}), (200, {})]
    with pytest.raises(KubeError):
        client.request("PATCH", "/api/v1/namespaces/a", body=[{"op": "add", "path": "/x", "value": 1}],
                       content_type="application/json-patch+json")
    assert len(server.got) == 2


def test_429_is_retried_for_every_method(server):
    client = _client(server.port)
    server.script["POST"] = [(429, {}), (201, {"created": 1})]
    assert client.request("POST", "/api/v1/namespaces", body={"metadata": {"name": "a"}}) == {"created": 1}
    assert len(server.got) == 2


def test_a_500_is_retried_twice_at_most_and_its_text_is_not_read(server):
    client = _client(server.port, retries=6)
    server.script["PATCH"] = [(500, {"message": "failed to create typed patch object"})]
    with pytest.raises(KubeError) as err:
        client.request("PATCH", "/api/v1/namespaces/a", body={}, content_type="application/apply-patch+yaml")
    assert err.value.status == 500 and len(server.got) == 3
    del server.got[:]
    server.script["GET"] = [(500, {"message": "etcdserver: request timed out"}), (200, {"ok": 1})]
    assert client.request("GET", "/api/v1/namespaces/a") == {"ok": 1}


def test_a_post_whose_answer_was_lost_is_repeated_only_if_its_object_is_absent(server):
    client = _client(server.port)
    path = "/api/v1/namespaces/n/configmaps"
    server.script[("POST", path)] = [("drop", None), (201, {"metadata": {"name": "c"}, "created": 1})]
    server.script[("GET", path + "/c")] = [(404, {})]
    assert client.request("POST", path, body={"metadata": {"name": "c"}}) == {"metadata": {"name": "c"}, "created": 1}
    assert [g[0] for g in server.got] == ["POST", "GET", "POST"]
    del server.got[:]
    server.script[("POST", path)] = [("drop", None), (409, {})]
    server.script[("GET", path + "/c")] = [(200, {"metadata": {"name": "c"}, "found": 1})]
    assert client.request("POST", path, body={"metadata": {"name": "c"}})["found"] == 1
    assert [g[0] for g in server.got] == ["POST", "GET"], "the object the first POST made was not made twice"
    del server.got[:]
    server.script[("POST", path)] = [("drop", None), (201, {})]
    with pytest.raises(KubeError, match="not repeated"):
        client.request("POST", path, body={"metadata": {"generateName": "c-"}})
    assert [g[0] for g in server.got] == ["POST"]
