"""The local control plane's egress proxy: kube-apiserver opens every connection toward the
cluster (webhooks, aggregated APIs, CRD conversion, `logs`, `exec`, the proxy subresources)
through this HTTP CONNECT proxy (its --egress-selector-config-file, selections `cluster` and
`controlplane`), and the proxy dials only loopback.

- A Service that the plane or a test registered (ControlPlane.serve_service: the file given with
  --services maps `namespace/name:port` to a loopback port) is reached on that loopback port: a
  CONNECT to the Service's ClusterIP and port (read from the API server) is tunnelled there.
- A loopback target (a webhook's `url` on 127.0.0.1 or localhost) is tunnelled as it is.
- Anything else is refused at once (502), and logged with what it was meant for: the Service
  that holds the ClusterIP, the Pod that holds the pod IP, the Node that has the address.

Every CONNECT is written to each --events file as a JSON line: {"target", "outcome": "served" | "refused"
| "failed", "meant_for", "to"}. The proxy speaks TLS and takes only clients with a certificate
signed by the plane's CA (the API server's egress client certificate).

    python hack/egress.py --listen 127.0.0.1:PORT --cert C --key K --ca CA --server URL \
        --client-cert C --client-key K --services FILE --events FILE
"""
from __future__ import annotations

import argparse
import ipaddress
import json
import select
import socket
import socketserver
import ssl
import sys
import threading
import time
import urllib.parse
import urllib.request

DIAL_TIMEOUT = 5
LOOKUP_TIMEOUT = 5
MAX_HEADER = 16384


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def split_target(target: str) -> tuple[str, int]:
    """`host:port` or `[v6]:port` of a CONNECT line, as (host, port)."""
    host, port = target.rsplit(":", 1)
    return host.strip("[]"), int(port)


class Cluster:
    """What the proxy asks the API server: a Service's ClusterIP, and who holds an address."""

    def __init__(self, server: str, ca: str, cert: str, key: str):
        self.server = server.rstrip("/")
        self.context = ssl.create_default_context(cafile=ca)
        self.context.load_cert_chain(cert, key)

    def get(self, path: str) -> dict | None:
        try:
            with urllib.request.urlopen(self.server + path, context=self.context, timeout=LOOKUP_TIMEOUT) as resp:
                return json.loads(resp.read())
        except (OSError, ValueError):
            return None

    def cluster_ips(self, namespace: str, name: str) -> list[str]:
        svc = self.get(f"/api/v1/namespaces/{namespace}/services/{name}") or {}
        spec = svc.get("spec") or {}
        return [ip for ip in spec.get("clusterIPs") or [spec.get("clusterIP")] if ip and ip != "None"]

    def holder(self, host: str) -> str:
        """Which Service, Pod or Node holds the address `host` ("unknown" when none does)."""
        for svc in (self.get("/api/v1/services") or {}).get("items") or []:
            spec = svc.get("spec") or {}
            if host in (spec.get("clusterIPs") or [spec.get("clusterIP")]):
                return "Service %s/%s" % (svc["metadata"]["namespace"], svc["metadata"]["name"])
        selector = urllib.parse.quote("status.podIP=" + host)
        for pod in (self.get("/api/v1/pods?fieldSelector=" + selector) or {}).get("items") or []:
            return "Pod %s/%s" % (pod["metadata"]["namespace"], pod["metadata"]["name"])
        for node in (self.get("/api/v1/nodes") or {}).get("items") or []:
            addresses = [a.get("address") for a in (node.get("status") or {}).get("addresses") or []]
            if host in addresses or host == node["metadata"]["name"]:
                return "Node %s" % node["metadata"]["name"]
        return "unknown"


class Routes:
    """The registered Services (re-read from the file at each CONNECT) and their ClusterIPs."""

    def __init__(self, path: str, cluster: Cluster):
        self.path, self.cluster = path, cluster
        self.ips: dict[str, list[str]] = {}  # "ns/name" -> its ClusterIPs, as last read
        self.lock = threading.Lock()

    def registered(self) -> dict[str, int]:
        try:
            with open(self.path) as handle:
                return {key: int(port) for key, port in json.load(handle).items()}
        except (OSError, ValueError):
            return {}

    def find(self, host: str, port: int) -> tuple[str, int] | None:
        """(`namespace/name:port`, loopback port) of the registered Service at host:port."""
        services = self.registered()
        for fresh in (False, True):
            for key, loopback in services.items():
                service, service_port = key.rsplit(":", 1)
                if int(service_port) != port:
                    continue
                with self.lock:
                    if fresh or service not in self.ips:
                        self.ips[service] = self.cluster.cluster_ips(*service.split("/", 1))
                    if host in self.ips[service]:
                        return key, loopback
        return None


class Handler(socketserver.BaseRequestHandler):
    server: "Proxy"

    def handle(self):
        try:
            conn = self.server.tls.wrap_socket(self.request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        with conn:
            conn.settimeout(30)
            try:
                head = self.read_head(conn)
            except (OSError, ValueError):
                return
            method, target = (head.split(b"\r\n", 1)[0].decode("latin-1").split() + ["", ""])[:2]
            if method == "GET" and target == "/healthz":
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
                return
            if method != "CONNECT":
                conn.sendall(b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                return
            self.connect(conn, target)

    @staticmethod
    def read_head(conn) -> bytes:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk or len(data) > MAX_HEADER:
                raise ValueError("incomplete request")
            data += chunk
        return data

    def connect(self, conn, target: str) -> None:
        try:
            host, port = split_target(target)
        except ValueError:
            self.refuse(conn, target, "not host:port")
            return
        if is_loopback(host):
            route, dest = target, (host, port)
        else:
            found = self.server.routes.find(host, port)
            if not found:
                self.refuse(conn, target, self.server.cluster.holder(host))
                return
            route, dest = found[0], ("127.0.0.1", found[1])
        try:
            upstream = socket.create_connection(dest, timeout=DIAL_TIMEOUT)
        except OSError as err:
            self.server.record(target, "failed", route, "%s:%d (%s)" % (dest[0], dest[1], err))
            conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        self.server.record(target, "served", route, "%s:%d" % dest)
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        with upstream:
            pipe(conn, upstream)

    def refuse(self, conn, target: str, meant_for: str) -> None:
        self.server.record(target, "refused", meant_for, None)
        body = ("refused: %s (meant for %s) is not a loopback endpoint registered with the local control "
                "plane\n" % (target, meant_for)).encode()
        conn.sendall(b"HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))


def pipe(left, right) -> None:
    """Copy bytes both ways until either side closes."""
    left.settimeout(None)
    right.settimeout(None)
    sockets = [left, right]
    while True:
        readable = [s for s in sockets if isinstance(s, ssl.SSLSocket) and s.pending()]
        if not readable:
            readable = select.select(sockets, [], [], 300)[0]
            if not readable:
                return
        for sock in readable:
            try:
                data = sock.recv(65536)
            except (OSError, ssl.SSLError):
                return
            if not data:
                return
            try:
                (right if sock is left else left).sendall(data)
            except OSError:
                return


class Proxy(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = False

    def __init__(self, address, tls, routes: Routes, cluster: Cluster, events: str):
        self.tls, self.routes, self.cluster, self.events = tls, routes, cluster, events
        self.write_lock = threading.Lock()
        super().__init__(address, Handler)

    def record(self, target: str, outcome: str, meant_for: str, to: str | None) -> None:
        event = {"time": time.time(), "target": target, "outcome": outcome, "meant_for": meant_for, "to": to}
        line = json.dumps(event)
        print(line, flush=True)
        with self.write_lock:
            for path in self.events:
                with open(path, "a") as handle:
                    handle.write(line + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for name in ("listen", "cert", "key", "ca", "server", "client-cert", "client-key", "services"):
        parser.add_argument("--" + name, required=True)
    parser.add_argument("--events", required=True, action="append", help="a JSON lines file (repeat for more)")
    args = parser.parse_args(argv)
    host, port = split_target(args.listen)
    if not is_loopback(host):
        parser.error("--listen must be a loopback address: %s" % args.listen)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(args.cert, args.key)
    tls.load_verify_locations(args.ca)
    tls.verify_mode = ssl.CERT_REQUIRED
    cluster = Cluster(args.server, args.ca, args.client_cert, args.client_key)
    try:
        proxy = Proxy((host, port), tls, Routes(args.services, cluster), cluster, args.events)
    except OSError as err:  # "address already in use": the plane starts again on other ports
        print("egress proxy: cannot listen on %s: %s" % (args.listen, err), flush=True)
        return 1
    print("egress proxy listening on %s" % args.listen, flush=True)
    with proxy:
        proxy.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
