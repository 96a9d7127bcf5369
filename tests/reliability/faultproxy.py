"""A TLS proxy on loopback in front of the local API server that injects faults: status codes,
Retry-After, latency. It terminates TLS with a certificate from the control plane's CA and
forwards with the admin certificate, so a client sees a normal API server that misbehaves."""
import http.server
import ssl
import threading
import time
from pathlib import Path

import urllib3
from cryptography import x509
from cryptography.hazmat.primitives import serialization

import cluster


class FaultProxy:
    """`policy(method, path, n)` returns None to forward, or (status, headers) to answer with a
    fault; `latency` seconds are added to every request. `n` counts requests per (method, kind of path)."""

    def __init__(self, plane, policy=None, latency=0.0):
        self.plane = plane
        self.policy = policy or (lambda method, path, n: None)
        self.latency = latency
        self.counts = {}
        self.faults = 0
        self.forwarded = []
        self._lock = threading.Lock()
        d = Path(plane.dir)
        self._upstream = urllib3.PoolManager(maxsize=32, cert_reqs="CERT_REQUIRED", ca_certs=str(d / "ca.crt"),
                                             cert_file=str(d / "admin.crt"), key_file=str(d / "admin.key"))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())  # bound now: no race
        self.port = self.server.server_address[1]
        self.server.daemon_threads = True
        self.server.socket = self._tls(d).wrap_socket(self.server.socket, server_side=True)
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self):
        return "https://127.0.0.1:%d" % self.port

    def _tls(self, d):
        ca_key = serialization.load_pem_private_key((d / "ca.key").read_bytes(), None)
        ca = x509.load_pem_x509_certificate((d / "ca.crt").read_bytes())
        key = cluster._key()
        cert = cluster._cert("fault-proxy", key, ca, ca_key, server_ips=["127.0.0.1"])
        certfile, keyfile = d / "proxy.crt", d / "proxy.key"
        certfile.write_bytes(cluster._pem_cert(cert))
        keyfile.write_bytes(cluster._pem_key(key))
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(str(certfile), str(keyfile))
        return ctx

    def kubeconfig(self, path):
        """A kubeconfig for the proxy (the client certificate is ignored; the proxy is admin upstream)."""
        import json
        self.plane.write_kubeconfig(path, "through-proxy", ["system:masters"])
        config = json.loads(Path(path).read_text())
        config["clusters"][0]["cluster"]["server"] = self.url
        Path(path).write_text(json.dumps(config))
        return path

    def _handler(self):
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                key = (self.command, self.path.split("?")[0].count("/"))
                with proxy._lock:
                    proxy.counts[key] = proxy.counts.get(key, 0) + 1
                    n = proxy.counts[key]
                if proxy.latency:
                    time.sleep(proxy.latency)
                fault = proxy.policy(self.command, self.path, n)
                if fault is not None:
                    status, headers = fault
                    with proxy._lock:
                        proxy.faults += 1
                    data = (b'{"kind":"Status","apiVersion":"v1","status":"Failure","message":"injected %d",'
                            b'"code":%d}' % (status, status))
                    self.send_response(status)
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "authorization")}
                resp = proxy._upstream.request(self.command, proxy.plane.server + self.path, body=body,
                                               headers=headers, retries=False, preload_content=True)
                with proxy._lock:
                    proxy.forwarded.append((self.command, self.path.split("?")[0], resp.status))
                self.send_response(resp.status)
                for name, value in resp.headers.items():
                    if name.lower() not in ("transfer-encoding", "connection", "content-length", "content-encoding"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(resp.data)))
                self.end_headers()
                self.wfile.write(resp.data)

            do_GET = do_PATCH = do_POST = do_PUT = do_DELETE = _any

        return Handler

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()
