"""The Client's transport (plugins/module_utils/transport.py) against HTTP and HTTPS servers on
loopback: keep-alive reuse, connections the server closed, and the TLS settings of a kubeconfig
(CA, client certificate, tls-server-name, verification off)."""
import json
import socket
import ssl
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from kubernetes import client as k8s_client

import cluster
from ansible_collections.kfocp.kubeflow.plugins.module_utils import kubeconfig as kubeconfig_loader
from ansible_collections.kfocp.kubeflow.plugins.module_utils import transport
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client, KubeError


class Server:
    """An HTTP/1.1 server answering every request with {"path": ...}; it counts the connections
    it accepted and records the requests. With `close_after`, it closes each connection after its
    answer without saying so (as a server's idle timeout does later)."""

    def __init__(self, tls=None, close_after=False):
        self.connections = 0
        self.got = []
        self.peers = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self):
                owner.connections += 1
                super().setup()
                if tls is not None:
                    owner.peers.append(self.connection.getpeercert())

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                owner.got.append((self.command, self.path, self.rfile.read(length) if length else b""))
                data = json.dumps({"path": self.path}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                self.wfile.flush()
                if close_after:
                    self.close_connection = True

            do_GET = do_POST = do_PATCH = _answer  # noqa: N815

            def log_message(self, *args):  # pylint: disable=arguments-differ
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def plain():
    srv = Server()
    yield srv
    srv.close()


def _cfg(url, **settings):
    cfg = k8s_client.Configuration()
    cfg.host = url
    for key, value in settings.items():
        setattr(cfg, key, value)
    return cfg


def test_a_run_of_requests_shares_one_connection(plain):
    client = Client(_cfg("http://127.0.0.1:%d" % plain.port))
    for i in range(20):
        assert client.request("GET", "/api/%d" % i) == {"path": "/api/%d" % i}
        client.request("PATCH", "/apis/x/%d" % i, body={"i": i}, content_type="application/apply-patch+yaml")
    assert plain.connections == 1 and len(plain.got) == 40
    assert json.loads(plain.got[1][2]) == {"i": 0}


def test_a_server_url_with_a_path_prefixes_every_request(plain):
    client = Client(_cfg("http://127.0.0.1:%d/k8s/clusters/c-1/" % plain.port))
    assert client.request("GET", "/api", query={"limit": 1}) == {"path": "/k8s/clusters/c-1/api?limit=1"}


def test_threads_get_connections_of_their_own_and_give_them_back(plain):
    client = Client(_cfg("http://127.0.0.1:%d" % plain.port), pool_size=4)

    def run():
        for _request in range(25):
            client.request("GET", "/api")

    threads = [threading.Thread(target=run) for _thread in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(plain.got) == 200
    assert 1 <= plain.connections <= 8 + 200 // 25, "a connection is reused, not opened per request"
    assert len(client.pool._idle) <= 4  # pylint: disable=protected-access


def test_a_connection_the_server_closed_while_idle_is_not_used_and_nothing_is_sent_twice():
    srv = Server(close_after=True)
    try:
        client = Client(_cfg("http://127.0.0.1:%d" % srv.port), retries=0)
        assert client.request("GET", "/a") == {"path": "/a"}
        idle = client.pool._idle[0].sock  # pylint: disable=protected-access
        deadline = time.monotonic() + 5
        while not transport._closed_by_peer(idle) and time.monotonic() < deadline:  # pylint: disable=protected-access
            time.sleep(0.01)  # the server's close is on its way
        assert client.request("POST", "/b", body={"metadata": {"name": "c"}}) == {"path": "/b"}
        assert client.request("GET", "/c") == {"path": "/c"}
        assert [g[0] for g in srv.got] == ["GET", "POST", "GET"], "each request reached the server once"
        assert srv.connections == 3
    finally:
        srv.close()


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA, a serving certificate for api.test signed by it, a client certificate it signed,
    and a second CA that signed nothing here: their file paths."""
    d = tmp_path_factory.mktemp("pki")
    ca_pem, cert_pem, key_pem = cluster.serving_certificate("api.test")
    other_ca, _cert, _key = cluster.serving_certificate("other.test")
    client_ca_key = cluster._key()  # pylint: disable=protected-access
    client_ca = cluster._cert("client-ca", client_ca_key, ca=True)  # pylint: disable=protected-access
    client_key = cluster._key()  # pylint: disable=protected-access
    client_cert = cluster._cert("alice", client_key, client_ca, client_ca_key, client=True)  # pylint: disable=protected-access
    files = {"ca": ca_pem, "cert": cert_pem, "key": key_pem, "other_ca": other_ca,
             "client_ca": cluster._pem_cert(client_ca),  # pylint: disable=protected-access
             "client_cert": cluster._pem_cert(client_cert),  # pylint: disable=protected-access
             "client_key": cluster._pem_key(client_key)}  # pylint: disable=protected-access
    out = {}
    for name, data in files.items():
        (d / name).write_bytes(data)
        out[name] = str(d / name)
    return out


@pytest.fixture
def https(pki):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(pki["cert"], pki["key"])
    ctx.load_verify_locations(pki["client_ca"])
    ctx.verify_mode = ssl.CERT_REQUIRED
    srv = Server(tls=ctx)
    yield srv
    srv.close()


def _kubeconfig(url, pki, **cluster_fields):
    """A kubeconfig (as a dict) for the server at `url` with the client certificate of `pki`."""
    cluster_fields.setdefault("certificate-authority", pki["ca"])
    return {"apiVersion": "v1", "kind": "Config", "current-context": "x",
            "clusters": [{"name": "c", "cluster": dict(server=url, **cluster_fields)}],
            "users": [{"name": "u", "user": {"client-certificate": pki["client_cert"], "client-key": pki["client_key"]}}],
            "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}]}


@pytest.fixture(params=["kfocp loader", "kubernetes loaders"])
def client_of(request, tmp_path):
    """Makes a Client as the modules make it, from a kubeconfig: as a file, read by kfocp's own
    loader (plugins/module_utils/kubeconfig.py); as a dict, read by the `kubernetes` loaders."""
    def make(kubeconfig, **kwargs):
        if request.param == "kfocp loader":
            path = tmp_path / ("config-%d" % len(list(tmp_path.iterdir())))
            path.write_text(json.dumps(kubeconfig))
            client = Client.from_params({"kubeconfig": str(path)}, **kwargs)
            assert isinstance(client.cfg, kubeconfig_loader.Config) != ("proxy-url" in str(kubeconfig))
            return client
        client = Client.from_params({"kubeconfig": kubeconfig}, **kwargs)
        assert isinstance(client.cfg, k8s_client.Configuration)
        return client
    return make


def test_tls_checks_the_server_by_the_kubeconfig_ca_and_name_and_sends_the_client_certificate(https, pki, client_of):
    url = "https://127.0.0.1:%d" % https.port
    client = client_of(_kubeconfig(url, pki, **{"tls-server-name": "api.test"}))
    assert client.request("GET", "/api") == {"path": "/api"}
    assert dict(x[0] for x in https.peers[-1]["subject"])["commonName"] == "alice"

    refused = client_of(_kubeconfig(url, pki), retries=0)  # 127.0.0.1 is not a name of the certificate
    with pytest.raises(KubeError, match="did not answer.*certificate verify failed.*(mismatch|match)"):
        refused.request("GET", "/api")
    stranger = client_of(_kubeconfig(url, pki, **{"tls-server-name": "api.test", "certificate-authority": pki["other_ca"]}),
                         retries=0)
    with pytest.raises(KubeError, match="did not answer.*certificate verify failed"):
        stranger.request("GET", "/api")


def test_insecure_skip_tls_verify_accepts_any_server_certificate(https, pki, client_of):
    config = _kubeconfig("https://127.0.0.1:%d" % https.port, pki, **{"insecure-skip-tls-verify": True})
    del config["clusters"][0]["cluster"]["certificate-authority"]
    assert client_of(config).request("GET", "/api") == {"path": "/api"}


def test_a_connection_that_cannot_be_made_was_not_sent():
    pool = transport.Pool("http://127.0.0.1:%d" % cluster.free_port())
    with pytest.raises(transport.TransportError) as err:
        pool.request("GET", "/api", timeouts=(2, 2))
    assert err.value.sent is False
    with pytest.raises(transport.TransportError) as err:
        pool.stream("GET", "/api?watch=1", timeouts=(2, 2))
    assert err.value.sent is False


def test_a_proxy_that_cannot_be_reached_was_not_sent_to():
    proxied = transport.pool(_cfg("http://127.0.0.1:1", proxy="http://127.0.0.1:%d" % cluster.free_port()))
    assert isinstance(proxied, transport.ProxiedPool)
    for call in (proxied.request, proxied.stream):
        with pytest.raises(transport.TransportError) as err:
            call("GET", "/api", timeouts=(2, 2))
        assert err.value.sent is False, call.__name__


class ConnectProxy:
    """A forward proxy that serves CONNECT only, piping bytes both ways; it records the targets."""

    def __init__(self):
        self.targets = []
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _addr = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(conn,), daemon=True).start()

    def _tunnel(self, conn):
        head = b""
        while b"\r\n\r\n" not in head:
            head += conn.recv(4096)
        method, target = head.split(b" ")[:2]
        self.targets.append((method.decode(), target.decode()))
        host, port = target.decode().rsplit(":", 1)
        upstream = socket.create_connection((host, int(port)))
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        for src, dst in ((conn, upstream), (upstream, conn)):
            threading.Thread(target=self._pipe, args=(src, dst), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            dst.close()

    def close(self):
        self.sock.close()


def _loader_reads_proxy_url():
    """Whether the installed `kubernetes` kubeconfig loader reads a cluster's `proxy-url` (37.0 does;
    33.1, the ansible-operator image's, has no such field, and kfocp leaves that field to it)."""
    from kubernetes import config as k8s_config  # pylint: disable=import-outside-toplevel
    cfg = k8s_client.Configuration()
    k8s_config.load_kube_config_from_dict(
        {"current-context": "c", "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
         "clusters": [{"name": "c", "cluster": {"server": "https://h:1", "proxy-url": "http://p:1"}}],
         "users": [{"name": "u", "user": {"token": "t"}}]}, client_configuration=cfg, persist_config=False)
    return cfg.proxy == "http://p:1"


def test_a_proxy_carries_the_requests_unless_no_proxy_names_the_server(https, pki, monkeypatch, client_of):
    if not _loader_reads_proxy_url():
        pytest.skip("this kubernetes client (%s) reads no proxy-url from a kubeconfig" % k8s_client.__version__)
    proxy = ConnectProxy()
    try:
        url = "https://127.0.0.1:%d" % https.port
        config = _kubeconfig(url, pki, **{"tls-server-name": "api.test", "proxy-url": "http://127.0.0.1:%d" % proxy.port})
        assert client_of(config).request("GET", "/api") == {"path": "/api"}
        assert proxy.targets == [("CONNECT", "127.0.0.1:%d" % https.port)]
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # read by kubernetes.client.Configuration
        assert client_of(config).request("GET", "/apis") == {"path": "/apis"}
        assert len(proxy.targets) == 1, "no_proxy: straight to the server"
    finally:
        proxy.close()
