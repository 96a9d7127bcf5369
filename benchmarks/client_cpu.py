"""Client CPU per request: the project's Kubernetes client (plugins/module_utils/client.py) next to
other Python HTTP stacks, each doing the same work against a real kube-apiserver over TLS.

The work, for every client: N server-side apply PATCHes of small ConfigMaps (about 1 KB of JSON)
into one namespace (each creates its object), N GETs of them, then the same N applies again (each
a no-op), one request after the other on one connection; then the same three phases again with
8 threads (`--threads`), for the clients that can be shared by threads (or keep a handle per
thread). Every client takes its credentials from the `kubernetes` config loaders (a
kubernetes.client.Configuration: CA, client certificate and key, bearer token with the refresh
hook of exec plugins), as the project's client does.

Measured per request: process CPU (getrusage RUSAGE_SELF: user + system, every thread), wall time,
and bytes sent and received (TCP_INFO byte counters of this process's sockets to the API server:
HTTP framing, TLS records and headers included). Each client runs in every one of `--rounds`
rounds, the order reversed from one round to the next; the tables give the mean of the rounds
and, in "spread", how far the rounds' mean CPU were apart ("sys" is the kernel's share of the
CPU). The import cost of each client's libraries (what an Ansible module, a new interpreter per
task, pays before its first request) is measured in fresh interpreters, the median of
`--import-runs`: alone, and on top of `import kubernetes.config`, which the config loaders need
whatever the transport. Last, the JSON work of one request (encode the body, decode the answers)
is timed on its own for json and orjson.

    python benchmarks/client_cpu.py [--requests N] [--clients project,urllib3,...] [--kubeconfig PATH]
    python benchmarks/client_cpu.py --requests 0     # the import costs only, no API server

A client whose library is not installed is skipped, with the import error printed, so the script
runs in the project's environment with what is there. Without --kubeconfig it starts (and at the
end removes) a control plane of its own (hack/cluster.py).
"""
import argparse
import gc
import importlib
import io
import json
import os
import queue
import resource
import signal
import socket
import ssl
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLLECTIONS = ROOT / ".cache" / "collections"
for _path in (ROOT / "hack", COLLECTIONS):
    if str(_path) not in sys.path:
        sys.path.append(str(_path))

NAMESPACE = "client-cpu"
FIELD_MANAGER = "kfocp-bench"
LABEL = "bench.kfocp.io/run"
APPLY_TYPE = "application/apply-patch+yaml"
# What Client.apply(res, obj, field_manager) sends (force and dryRun off), and the least an apply needs.
QUERY = "fieldManager=%s&fieldValidation=Strict" % FIELD_MANAGER
MIN_QUERY = "fieldManager=%s&force=true" % FIELD_MANAGER
WARM = 5  # requests per connection before the measured phases (connections open, code paths warm)
PHASES = ("apply", "get", "noop")
PHASE_TIMEOUT = 900  # seconds a threaded phase may take before the client is given up
CLIENT_MODULE = "ansible_collections.kfocp.kubeflow.plugins.module_utils.client"


# ---------------------------------------------------------------- the objects

def configmap(namespace, name, tag):
    """A ConfigMap of about 1 KB of JSON, labelled with `tag` (the run it belongs to)."""
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": FIELD_MANAGER, LABEL: tag}},
            "data": {"key-%d" % k: ("%s.%d." % (name, k) * 40)[:100] for k in range(8)}}


# ---------------------------------------------------------------- credentials and TLS

def load_configuration(kubeconfig):
    """A kubernetes.client.Configuration from the kubeconfig, as the project's client makes it."""
    try:
        module = importlib.import_module(CLIENT_MODULE)
        return module.configuration(module.auth_from({"kubeconfig": str(kubeconfig)}))
    except ImportError:
        from kubernetes import client, config
        cfg = client.Configuration()
        config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg, persist_config=False)
        return cfg


def bearer(cfg):
    """The Authorization header value, or None; an exec plugin's token is refreshed by its hook."""
    return cfg.get_api_key_with_prefix("BearerToken", alias="authorization") if cfg.api_key else None


def ssl_context(cfg):
    """An SSLContext with the Configuration's CA, client certificate and key."""
    if cfg.verify_ssl:
        ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert)
    else:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    return ctx


def host_port(url):
    from urllib.parse import urlsplit
    parts = urlsplit(url)
    return parts.hostname, parts.port or 443


# ---------------------------------------------------------------- bytes on the wire

# struct tcp_info (linux/tcp.h): tcpi_bytes_acked and tcpi_bytes_received, two u64 at offset 120
TCP_INFO_BYTES = struct.Struct("=QQ")
TCP_INFO_OFFSET = 120


def parse_tcp_info(info):
    """(bytes sent and acknowledged, bytes received) of a TCP_INFO answer; None if it is too short."""
    if len(info) < TCP_INFO_OFFSET + TCP_INFO_BYTES.size:
        return None
    return TCP_INFO_BYTES.unpack_from(info, TCP_INFO_OFFSET)


def tcp_bytes(port):
    """(sent, received) over every TCP socket of this process whose peer port is `port`."""
    sent = received = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if not os.readlink("/proc/self/fd/" + fd).startswith("socket:"):
                continue
            sock = socket.socket(fileno=os.dup(int(fd)))
        except OSError:
            continue
        try:
            if sock.type != socket.SOCK_STREAM or sock.family not in (socket.AF_INET, socket.AF_INET6):
                continue
            if sock.getpeername()[1] != port:
                continue
            counts = parse_tcp_info(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256))
        except OSError:
            continue
        finally:
            sock.close()
        if counts:
            sent += counts[0]
            received += counts[1]
    return sent, received


# ---------------------------------------------------------------- the clients

class RequestError(RuntimeError):
    pass


class Bench:
    """One client under test. `apply(obj)` and `get(name)` return the decoded answer."""
    name = ""
    label = ""
    needs = ()  # modules the client imports: missing, the client is skipped
    imports = "import json, ssl"  # what a fresh interpreter imports to use it
    threads = True  # can run the phases with several threads

    def __init__(self, cfg, namespace, concurrency):
        self.cfg = cfg
        self.host = cfg.host.rstrip("/")
        self.namespace = namespace
        self.base = "/api/v1/namespaces/%s/configmaps/" % namespace
        self.concurrency = concurrency

    def headers(self, content_type=None):
        headers = {"Accept": "application/json", "User-Agent": "kfocp"}
        if content_type:
            headers["Content-Type"] = content_type
        token = bearer(self.cfg)
        if token:
            headers["Authorization"] = token
        return headers

    def encode(self, obj):
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")

    def decode(self, data):
        return json.loads(data)

    def apply(self, obj):
        return self.request("PATCH", self.base + obj["metadata"]["name"] + "?" + QUERY, self.encode(obj), APPLY_TYPE)

    def get(self, name):
        return self.request("GET", self.base + name, None, None)

    def check(self, method, url, status, data):
        if status >= 300:
            raise RequestError("%s %s: %d %s" % (method, url, status, data[:300]))
        return self.decode(data)

    def protocol(self):
        return "HTTP/1.1"

    def close(self):
        pass


class Project(Bench):
    name = "project"
    label = "project Client (transport.py: http.client keep-alive pool, json)"
    needs = (CLIENT_MODULE,)
    imports = "from %s import Client, configuration, auth_from" % CLIENT_MODULE

    def __init__(self, cfg, namespace, concurrency):
        super().__init__(cfg, namespace, concurrency)
        self.client = importlib.import_module(CLIENT_MODULE).Client(cfg)
        self.res = self.client.resource("v1", "ConfigMap")

    def apply(self, obj):
        return self.client.apply(self.res, obj, FIELD_MANAGER)

    def get(self, name):
        found = self.client.get(self.res, name, self.namespace)
        if found is None:
            raise RequestError("GET %s: not found" % name)
        return found

    def close(self):
        self.client.pool.clear()


class Urllib3PoolManager(Bench):
    name = "urllib3-pm"
    label = "urllib3 PoolManager of RESTClientObject, no Client logic"
    needs = ("urllib3", "kubernetes.client.rest")
    imports = "import json, urllib3; from kubernetes.client.rest import RESTClientObject"

    def __init__(self, cfg, namespace, concurrency):
        super().__init__(cfg, namespace, concurrency)
        import urllib3
        from kubernetes.client.rest import RESTClientObject
        cfg.connection_pool_maxsize = max(1, concurrency)
        self.pool = RESTClientObject(cfg).pool_manager
        self.timeout = urllib3.Timeout(connect=10, read=60)

    def request(self, method, url, body, content_type):
        resp = self.pool.request(method, self.host + url, body=body, headers=self.headers(content_type),
                                 retries=False, timeout=self.timeout)
        return self.check(method, url, resp.status, resp.data)

    def close(self):
        self.pool.clear()


class Urllib3Pool(Bench):
    name = "urllib3"
    label = "urllib3 HTTPSConnectionPool, json"
    needs = ("urllib3",)
    imports = "import json, ssl, urllib3"
    query = QUERY

    def __init__(self, cfg, namespace, concurrency):
        super().__init__(cfg, namespace, concurrency)
        import urllib3
        host, port = host_port(self.host)
        self.pool = urllib3.HTTPSConnectionPool(
            host, port, maxsize=max(1, concurrency), block=True, retries=False,
            timeout=urllib3.Timeout(connect=10, read=60), ssl_context=ssl_context(cfg),
            server_hostname=getattr(cfg, "tls_server_name", None) or None)

    def request(self, method, url, body, content_type):
        resp = self.pool.urlopen(method, url, body=body, headers=self.headers(content_type), retries=False)
        return self.check(method, url, resp.status, resp.data)

    def close(self):
        self.pool.close()


class OrjsonCodec:  # pylint: disable=too-few-public-methods
    """Mixed in before a client class: orjson encodes and decodes in its place."""

    def __init__(self, cfg, namespace, concurrency):
        super().__init__(cfg, namespace, concurrency)
        import orjson
        self.encode = orjson.dumps
        self.decode = orjson.loads


class Urllib3Orjson(OrjsonCodec, Urllib3Pool):
    name = "urllib3-orjson"
    label = "urllib3 HTTPSConnectionPool, orjson"
    needs = ("urllib3", "orjson")
    imports = "import ssl, urllib3, orjson"


class Urllib3Spaced(Urllib3Pool):
    name = "urllib3-spaced"
    label = "urllib3 pool, json.dumps defaults (', ' ': ' and \\u escapes)"
    threads = False

    def encode(self, obj):
        return json.dumps(obj).encode("utf-8")


class Urllib3Minimal(Urllib3Pool):
    name = "urllib3-min"
    label = "urllib3 pool, ?fieldManager=..&force=true, no Accept/User-Agent"
    threads = False

    def headers(self, content_type=None):
        headers = {"Content-Type": content_type} if content_type else {}
        token = bearer(self.cfg)
        if token:
            headers["Authorization"] = token
        return headers

    def apply(self, obj):
        return self.request("PATCH", self.base + obj["metadata"]["name"] + "?" + MIN_QUERY, self.encode(obj),
                            APPLY_TYPE)


class Httpx(Bench):
    name = "httpx"
    label = "httpx Client HTTP/1.1, json"
    needs = ("httpx",)
    imports = "import json, ssl, httpx"
    http2 = False

    def __init__(self, cfg, namespace, concurrency):
        super().__init__(cfg, namespace, concurrency)
        import httpx
        connections = 1 if self.http2 else max(1, concurrency)
        self.client = httpx.Client(verify=ssl_context(cfg), http1=not self.http2, http2=self.http2,
                                   timeout=httpx.Timeout(60, connect=10), trust_env=False,
                                   limits=httpx.Limits(max_connections=connections,
                                                       max_keepalive_connections=connections))
        self.version = None

    def request(self, method, url, body, content_type):
        resp = self.client.request(method, self.host + url, content=body, headers=self.headers(content_type))
        self.version = resp.http_version
        return self.check(method, url, resp.status_code, resp.content)

    def protocol(self):
        return self.version

    def close(self):
        self.client.close()


class HttpxH2(Httpx):
    name = "httpx-h2"
    label = "httpx Client HTTP/2, one connection multiplexed, json"
    needs = ("httpx", "h2")
    imports = "import json, ssl, httpx, h2.connection, httpcore._sync.http2"
    http2 = True


class Pycurl(Bench):
    name = "pycurl"
    label = "pycurl reused Curl handle HTTP/1.1, json"
    needs = ("pycurl",)
    imports = "import json, pycurl"
    http2 = False

    def __init__(self, cfg, namespace, concurrency):
        super().__init__(cfg, namespace, concurrency)
        import pycurl
        if self.http2 and not pycurl.version_info()[4] & pycurl.VERSION_HTTP2:
            raise RuntimeError("this libcurl has no HTTP/2 (%s)" % pycurl.version)
        self.pycurl = pycurl
        self.local = threading.local()
        self.handles = []
        self.lock = threading.Lock()

    def handle(self):
        curl = getattr(self.local, "curl", None)
        if curl is None:
            pycurl, cfg = self.pycurl, self.cfg
            curl = pycurl.Curl()
            curl.setopt(pycurl.NOSIGNAL, 1)
            curl.setopt(pycurl.CONNECTTIMEOUT, 10)
            curl.setopt(pycurl.TIMEOUT, 60)
            curl.setopt(pycurl.HTTP_VERSION, pycurl.CURL_HTTP_VERSION_2TLS if self.http2
                        else pycurl.CURL_HTTP_VERSION_1_1)
            if cfg.verify_ssl:
                if cfg.ssl_ca_cert:
                    curl.setopt(pycurl.CAINFO, cfg.ssl_ca_cert)
            else:
                curl.setopt(pycurl.SSL_VERIFYPEER, 0)
                curl.setopt(pycurl.SSL_VERIFYHOST, 0)
            if cfg.cert_file:
                curl.setopt(pycurl.SSLCERT, cfg.cert_file)
                curl.setopt(pycurl.SSLKEY, cfg.key_file)
            self.local.curl = curl
            with self.lock:
                self.handles.append(curl)
        return curl

    def request(self, method, url, body, content_type):
        pycurl = self.pycurl
        curl = self.handle()
        out = io.BytesIO()
        header_lines = []  # kept, as a client needs Warning and Retry-After
        headers = ["%s: %s" % item for item in self.headers(content_type).items()]
        headers.append("Expect:")  # no 100-continue round trip for bodies over 1 KB
        curl.setopt(pycurl.URL, self.host + url)
        curl.setopt(pycurl.HTTPHEADER, headers)
        curl.setopt(pycurl.WRITEDATA, out)
        curl.setopt(pycurl.HEADERFUNCTION, header_lines.append)
        if body is None:
            curl.setopt(pycurl.HTTPGET, 1)
        else:
            curl.setopt(pycurl.POSTFIELDS, body)
        curl.setopt(pycurl.CUSTOMREQUEST, method)
        curl.perform()
        return self.check(method, url, curl.getinfo(pycurl.RESPONSE_CODE), out.getvalue())

    def protocol(self):
        if not self.handles:
            return None
        version = self.handles[0].getinfo(self.pycurl.INFO_HTTP_VERSION)
        return {self.pycurl.CURL_HTTP_VERSION_1_1: "HTTP/1.1", self.pycurl.CURL_HTTP_VERSION_2_0: "HTTP/2"}.get(
            version, str(version))

    def close(self):
        for curl in self.handles:
            curl.close()
        self.handles = []


class PycurlH2(Pycurl):
    name = "pycurl-h2"
    label = "pycurl reused Curl handle HTTP/2, json"
    http2 = True


class PycurlOrjson(OrjsonCodec, Pycurl):
    name = "pycurl-orjson"
    label = "pycurl reused Curl handle HTTP/1.1, orjson"
    needs = ("pycurl", "orjson")
    imports = "import pycurl, orjson"


class Stdlib(Bench):
    name = "stdlib"
    label = "http.client HTTPSConnection (standard library), json"
    needs = ("http.client",)
    imports = "import json, ssl, http.client"

    def __init__(self, cfg, namespace, concurrency):
        super().__init__(cfg, namespace, concurrency)
        self.ctx = ssl_context(cfg)
        self.address = host_port(self.host)
        self.local = threading.local()
        self.connections = []
        self.lock = threading.Lock()

    def request(self, method, url, body, content_type):
        import http.client
        conn = getattr(self.local, "conn", None)
        if conn is None:
            conn = self.local.conn = http.client.HTTPSConnection(*self.address, context=self.ctx, timeout=60)
            with self.lock:
                self.connections.append(conn)
        conn.request(method, url, body=body, headers=self.headers(content_type))
        resp = conn.getresponse()
        return self.check(method, url, resp.status, resp.read())

    def close(self):
        for conn in self.connections:
            conn.close()


CLIENTS = {cls.name: cls for cls in (Project, Urllib3PoolManager, Urllib3Pool, Urllib3Orjson, Urllib3Spaced,
                                     Urllib3Minimal, Httpx, HttpxH2, Pycurl, PycurlH2, PycurlOrjson, Stdlib)}
# The libraries whose versions the report names.
LIBRARIES = ("kubernetes", "urllib3", "orjson", "httpx", "httpcore", "h2", "pycurl")


def missing(cls):
    """The import error of a client's library, or None when it is there."""
    for module in cls.needs:
        try:
            importlib.import_module(module)
        except ImportError as err:
            return "%s: %s" % (type(err).__name__, err)
    return None


# ---------------------------------------------------------------- the API server, for setup

class Admin:
    """Namespace and clean-up calls, outside of what is measured."""

    def __init__(self, cfg):
        import urllib3
        host, port = host_port(cfg.host)
        self.cfg = cfg
        self.port = port
        self.pool = urllib3.HTTPSConnectionPool(host, port, maxsize=1, ssl_context=ssl_context(cfg),
                                                timeout=urllib3.Timeout(connect=10, read=300), retries=False)

    def request(self, method, url, body=None):
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        token = bearer(self.cfg)
        if token:
            headers["Authorization"] = token
        resp = self.pool.urlopen(method, url, body=None if body is None else json.dumps(body), headers=headers)
        return resp.status, (json.loads(resp.data) if resp.data else {})

    def ensure_namespace(self, name):
        status, body = self.request("POST", "/api/v1/namespaces",
                                    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        if status not in (201, 409):
            raise RequestError("creating namespace %s: %d %s" % (name, status, body.get("message")))

    def count(self, namespace, tag):
        status, body = self.request("GET", "/api/v1/namespaces/%s/configmaps?labelSelector=%s%%3D%s"
                                    % (namespace, LABEL, tag))
        return len(body.get("items") or [])

    def remove(self, namespace, tag):
        status, body = self.request("DELETE", "/api/v1/namespaces/%s/configmaps?labelSelector=%s%%3D%s"
                                    % (namespace, LABEL, tag))
        if status >= 300:
            raise RequestError("deleting the ConfigMaps of %s: %d %s" % (tag, status, body.get("message")))

    def close(self):
        self.pool.close()


# ---------------------------------------------------------------- measuring

class Workers:
    """`threads` threads kept for the whole run of a client, so that what a client keeps per
    thread (a Curl handle, a connection) serves every phase, as it would in a long-running process."""

    def __init__(self, threads):
        self.jobs = [queue.Queue() for _unused in range(threads)]
        self.done = queue.Queue()
        self.threads = [threading.Thread(target=self._work, args=(jobs,), daemon=True) for jobs in self.jobs]
        for thread in self.threads:
            thread.start()

    def _work(self, jobs):
        while True:
            job = jobs.get()
            if job is None:
                return
            op, items = job
            last = error = None
            try:
                for item in items:
                    last = op(item)
            except Exception as err:  # pylint: disable=broad-except
                error = err
            self.done.put((last, error))

    def run(self, op, items):
        """Every item through `op`, split over the threads; the last answer of one of them."""
        count = len(self.jobs)
        for index, jobs in enumerate(self.jobs):
            jobs.put((op, items[index::count]))
        try:
            results = [self.done.get(timeout=PHASE_TIMEOUT) for _unused in range(count)]
        except queue.Empty:
            raise RequestError("the threads did not finish in %d s" % PHASE_TIMEOUT) from None
        errors = sorted(set("%s: %s" % (type(e).__name__, e) for _result, e in results if e is not None))
        if errors:
            raise RequestError("%d of %d threads failed: %s" % (
                sum(1 for _result, e in results if e is not None), count, " | ".join(errors)))
        return results[-1][0]

    def close(self):
        for jobs in self.jobs:
            jobs.put(None)
        for thread in self.threads:
            thread.join()


def cpu_times():
    """(user, system) CPU seconds of this process, every thread."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


def run_phase(op, items, workers=None):
    """Run `op` on every item, in this thread or on `workers`; return (CPU seconds, of which
    system, wall seconds, the last answer)."""
    gc.collect()
    (user, system), wall = cpu_times(), time.perf_counter()
    last = None
    if workers is None:
        for item in items:
            last = op(item)
    else:
        last = workers.run(op, items)
    wall = time.perf_counter() - wall
    user_after, system_after = cpu_times()
    return user_after - user + system_after - system, system_after - system, wall, last


def run_client(cls, kubeconfig, admin, namespace, n, threads, tag):
    """One client's three phases: {phase: {cpu_ms, wall_ms, sent, received}} per request, and notes."""
    client = cls(load_configuration(kubeconfig), namespace, threads)
    workers = Workers(threads) if threads > 1 else None
    notes = []
    warm = [configmap(namespace, "%s-w%d" % (tag, i), tag) for i in range(WARM * max(1, threads))]
    try:
        run_phase(client.apply, warm, workers)
        run_phase(client.get, [o["metadata"]["name"] for o in warm], workers)
        objs = [configmap(namespace, "%s-%d" % (tag, i), tag) for i in range(n)]
        names = [o["metadata"]["name"] for o in objs]
        result, answers = {}, {}
        for phase, op, items in (("apply", client.apply, objs), ("get", client.get, names),
                                 ("noop", client.apply, objs)):
            before = tcp_bytes(admin.port)
            cpu, system, wall, answers[phase] = run_phase(op, items, workers)
            after = tcp_bytes(admin.port)
            result[phase] = {"cpu_ms": cpu * 1000 / n, "sys_ms": system * 1000 / n, "wall_ms": wall * 1000 / n,
                             "sent": (after[0] - before[0]) / n, "received": (after[1] - before[1]) / n}
        protocol = client.protocol()
    finally:
        if workers is not None:
            workers.close()
        client.close()
    found = admin.count(namespace, tag)
    if found != n + len(warm):
        notes.append("%d ConfigMaps found, %d applied" % (found, n + len(warm)))
    if threads <= 1:
        first, again = (answers[p]["metadata"]["resourceVersion"] for p in ("apply", "noop"))
        if first != again:
            notes.append("the second apply changed the object (resourceVersion %s -> %s)" % (first, again))
    admin.remove(namespace, tag)
    return result, protocol, notes, answers


IMPORT_PROBE = r"""
import resource, sys, time
sys.path.append(%r)
%s
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
c0, w0 = cpu(), time.perf_counter()
%s
print(cpu() - c0, time.perf_counter() - w0)
"""
KUBERNETES_IMPORT = "import kubernetes.config"


def import_cost(statement, runs, before="", python=None):
    """(CPU ms, wall ms) of `statement` in a fresh interpreter that has run `before` (not timed),
    the median of `runs`; or the error."""
    cpus, walls = [], []
    for _unused in range(runs):
        probe = IMPORT_PROBE % (str(COLLECTIONS), before, statement)
        proc = subprocess.run([python or sys.executable, "-c", probe],
                              capture_output=True, text=True, check=False, cwd=str(ROOT))
        if proc.returncode:
            return proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "exit %d" % proc.returncode
        cpu, wall = proc.stdout.split()
        cpus.append(float(cpu) * 1000)
        walls.append(float(wall) * 1000)
    return statistics.median(cpus), statistics.median(walls)


# ---------------------------------------------------------------- summarising

def summarise(runs):
    """Mean of the rounds per (client, threads): {key: {phase: {metric: value}, "spread": %}}."""
    grouped = {}
    for run in runs:
        grouped.setdefault((run["client"], run["threads"]), []).append(run)
    summary = {}
    for key, group in grouped.items():
        phases = {}
        for phase in PHASES:
            phases[phase] = {metric: statistics.mean(r["result"][phase][metric] for r in group)
                             for metric in ("cpu_ms", "sys_ms", "wall_ms", "sent", "received")}
        means = [statistics.mean(r["result"][p]["cpu_ms"] for p in PHASES) for r in group]
        phases["spread"] = (max(means) - min(means)) / statistics.mean(means) * 100 if len(means) > 1 else 0.0
        phases["protocol"] = group[-1].get("protocol")
        phases["notes"] = sorted(set(note for r in group for note in r.get("notes", ())))
        summary[key] = phases
    return summary


def mean_of(row, metric, phases=PHASES):
    return statistics.mean(row[p][metric] for p in phases)


def ratio(value, base):
    return "%.2f" % (value / base) if base else "-"


TABLE_HEAD = "%-15s %3s %-8s | %6s %6s %6s %6s %6s %5s | %6s %6s %6s %6s | %6s %6s %6s | %6s"
TABLE_ROW = "%-15s %3d %-8s | %6.3f %6.3f %6.3f %6.3f %6s %4.0f%% | %6.2f %6.2f %6.2f %6s | %6.0f %6.0f %6s | %5.1f%%"


def request_table(summary, order):
    """The per-request table: CPU, wall and bytes per phase, and each client against the project's."""
    groups = "%-28s | %-40s | %-27s | %-20s |" % ("", "CPU ms/request (user+sys)", "wall ms/request",
                                                  "bytes sent/request")
    head = TABLE_HEAD % ("client", "thr", "protocol", "apply", "get", "no-op", "mean", "x prj", "sys", "apply",
                         "get", "no-op", "x prj", "apply", "get", "x prj", "spread")
    lines = [groups, head, "-" * len(head)]
    for threads in sorted(set(t for _client, t in summary)):
        base = summary.get(("project", threads))
        for name in order:
            row = summary.get((name, threads))
            if row is None:
                continue
            cpu = mean_of(row, "cpu_ms")
            wall = mean_of(row, "wall_ms")
            sent = mean_of(row, "sent")
            lines.append(TABLE_ROW % (
                name, threads, row["protocol"] or "-", row["apply"]["cpu_ms"], row["get"]["cpu_ms"],
                row["noop"]["cpu_ms"], cpu, ratio(cpu, base and mean_of(base, "cpu_ms")),
                mean_of(row, "sys_ms") / cpu * 100 if cpu else 0,
                row["apply"]["wall_ms"], row["get"]["wall_ms"], row["noop"]["wall_ms"],
                ratio(wall, base and mean_of(base, "wall_ms")),
                row["apply"]["sent"], row["get"]["sent"], ratio(sent, base and mean_of(base, "sent")), row["spread"]))
        lines.append("")
    return lines


def import_table(costs, order):
    """Fresh-interpreter import cost of each client's libraries: alone, and added to an interpreter
    that has imported the `kubernetes` config loaders already."""
    groups = "%-78s | %-22s | %-17s" % ("", "alone", "after " + KUBERNETES_IMPORT)
    head = "%-15s %-62s | %7s %7s %6s | %7s %7s" % ("client", "imports", "CPU ms", "wall ms", "x proj",
                                                    "CPU ms", "wall ms")
    lines = [groups, head, "-" * len(head)]
    base = costs.get("project", {}).get("alone")
    for name in order:
        if name not in costs:
            continue
        alone, after = costs[name]["alone"], costs[name]["after_kubernetes"]
        if isinstance(alone, str):
            lines.append("%-15s %-62s | %s" % (name, CLIENTS[name].imports[:62], alone))
            continue
        lines.append("%-15s %-62s | %7.1f %7.1f %6s | %7s %7s" % (
            name, CLIENTS[name].imports[:62], alone[0], alone[1],
            ratio(alone[0], base[0]) if isinstance(base, tuple) else "-",
            "%.1f" % after[0] if isinstance(after, tuple) else after,
            "%.1f" % after[1] if isinstance(after, tuple) else ""))
    return lines


def codec_costs(body, answers, loops=2000, repeats=5):
    """CPU microseconds of the JSON work of one request, the best of `repeats`: encoding the apply
    body, decoding an apply answer and a GET answer; {codec: (encode, decode apply, decode get)}."""
    apply_answer = json.dumps(answers["apply"], separators=(",", ":")).encode()
    get_answer = json.dumps(answers["get"], separators=(",", ":")).encode()
    codecs = {"json compact (project)": (lambda o: json.dumps(o, separators=(",", ":"), ensure_ascii=False).encode(),
                                         json.loads),
              "json defaults": (lambda o: json.dumps(o).encode(), json.loads)}
    try:
        import orjson
        codecs["orjson"] = (orjson.dumps, orjson.loads)
    except ImportError as err:
        codecs["orjson"] = "%s: %s" % (type(err).__name__, err)
    costs = {}
    for name, codec in codecs.items():
        if isinstance(codec, str):
            costs[name] = codec
            continue
        encode, decode = codec
        found = []
        for func, arg in ((encode, body), (decode, apply_answer), (decode, get_answer)):
            best = None
            for _unused in range(repeats):
                started = time.process_time()
                for _unused in range(loops):
                    func(arg)
                took = (time.process_time() - started) / loops * 1e6
                best = took if best is None else min(best, took)
            found.append(best)
        costs[name] = tuple(found)
    return costs, (len(apply_answer), len(get_answer))


def versions():
    from importlib import metadata
    found = {}
    for name in LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


# ---------------------------------------------------------------- main

def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--requests", type=int, default=2000,
                        help="requests per phase (default 2000; 0: only the import costs)")
    parser.add_argument("--clients", default=",".join(CLIENTS),
                        help="comma-separated, of: %s" % ", ".join(CLIENTS))
    parser.add_argument("--threads", type=int, default=8, help="threads of the concurrent runs (0: none)")
    parser.add_argument("--rounds", type=int, default=2, help="runs of every client, order reversed each round")
    parser.add_argument("--import-runs", type=int, default=5, help="fresh interpreters per import measurement")
    parser.add_argument("--kubeconfig", help="an API server to use instead of a control plane of its own")
    parser.add_argument("--json", help="also write the measurements to this file")
    args = parser.parse_args(argv)
    args.clients = [c.strip() for c in args.clients.split(",") if c.strip()]
    unknown = [c for c in args.clients if c not in CLIENTS]
    if unknown:
        parser.error("unknown client(s) %s; known: %s" % (", ".join(unknown), ", ".join(CLIENTS)))
    return args


def measure(args, chosen, kubeconfig, log):
    """Every chosen client in every round: the runs, and a sample of the answers."""
    admin = Admin(load_configuration(kubeconfig))
    admin.ensure_namespace(NAMESPACE)
    runs, samples = [], {}
    try:
        for round_no in range(args.rounds):
            order = chosen if round_no % 2 == 0 else list(reversed(chosen))
            for name in order:
                cls = CLIENTS[name]
                for threads in ([1, args.threads] if cls.threads and args.threads > 1 else [1]):
                    tag = "%s-r%d-t%d" % (name, round_no, threads)
                    try:
                        result, protocol, notes, answers = run_client(
                            cls, kubeconfig, admin, NAMESPACE, args.requests, threads, tag)
                    except Exception as err:  # pylint: disable=broad-except
                        log("FAILED %s with %d thread(s): %s: %s" % (name, threads, type(err).__name__, err))
                        admin.remove(NAMESPACE, tag)
                        continue
                    if threads == 1 and "get" not in samples:
                        samples.update(answers)
                    runs.append({"client": name, "threads": threads, "round": round_no, "result": result,
                                 "protocol": protocol, "notes": notes})
                    log("round %d %-15s x%d  CPU ms/req apply %.3f get %.3f no-op %.3f  (%s)%s" % (
                        round_no + 1, name, threads, result["apply"]["cpu_ms"], result["get"]["cpu_ms"],
                        result["noop"]["cpu_ms"], protocol, ("  NOTE: " + "; ".join(notes)) if notes else ""))
    finally:
        admin.close()
    return runs, samples


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    # a TERM (or an INT, also where a background job ignores it) stops the control plane on the way out
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)

    def log(text):
        print(text, file=sys.stderr, flush=True)

    plane = None
    chosen, runs, samples = [], [], {}
    for name in args.clients:
        error = missing(CLIENTS[name])
        if error:
            log("skip %s: %s" % (name, error))
        else:
            chosen.append(name)
    with tempfile.TemporaryDirectory(prefix="kfocp-client-cpu-") as workdir:
        try:
            if args.requests <= 0:
                log("--requests 0: import costs only")
            elif args.kubeconfig:
                kubeconfig = args.kubeconfig
            else:
                from cluster import ControlPlane
                log("starting a control plane in %s" % workdir)
                plane = ControlPlane(Path(workdir) / "plane").up(install=False)
                kubeconfig = str(plane.kubeconfig)
            if args.requests > 0:
                runs, samples = measure(args, chosen, kubeconfig, log)
        finally:
            if plane is not None:
                plane.destroy()
    log("import costs (%d fresh interpreters each)" % args.import_runs)
    costs, cache = {}, {}
    for name in chosen:
        statement = CLIENTS[name].imports
        for key, before in (("alone", ""), ("after_kubernetes", KUBERNETES_IMPORT)):
            if (before, statement) not in cache:
                cache[(before, statement)] = import_cost(statement, args.import_runs, before)
            costs.setdefault(name, {})[key] = cache[(before, statement)]
    baseline = import_cost(KUBERNETES_IMPORT, args.import_runs)

    codecs = sizes = None
    if samples:
        codecs, sizes = codec_costs(configmap(NAMESPACE, "urllib3-r0-t1-1000", "urllib3-r0-t1"), samples)
    summary = summarise(runs)
    lib_versions = versions()
    body = len(json.dumps(configmap(NAMESPACE, "urllib3-r0-t1-1000", "urllib3-r0-t1"), separators=(",", ":")))
    print("Python %s, %d CPUs, load average %s; %s" % (
        sys.version.split()[0], os.cpu_count(), " ".join("%.2f" % v for v in os.getloadavg()),
        "%d requests per phase, ConfigMap body %d bytes (compact JSON), %d round(s), mean of rounds"
        % (args.requests, body, args.rounds) if runs else "import costs only"))
    print("libraries: " + ", ".join("%s %s" % (k, v) for k, v in lib_versions.items() if v))
    print()
    for line in request_table(summary, chosen) if runs else ():
        print(line)
    for (name, threads), row in sorted(summary.items()):
        for note in row["notes"]:
            print("NOTE %s x%d: %s" % (name, threads, note))
    print("clients: " + "; ".join("%s = %s" % (n, CLIENTS[n].label) for n in chosen))
    print()
    for line in import_table(costs, chosen):
        print(line)
    if isinstance(baseline, tuple):
        print("%s alone (the config loaders every client above uses): CPU %.1f ms, wall %.1f ms"
              % ((KUBERNETES_IMPORT,) + baseline))
    print()
    if codecs:
        print("JSON work per request, CPU microseconds (best of 5 x 2000): encode apply body, decode apply answer "
              "(%d B), decode GET answer (%d B)" % sizes)
        for name, cost in codecs.items():
            print("  %-24s %s" % (name, cost if isinstance(cost, str) else "%7.1f %7.1f %7.1f   total %.1f"
                                  % (cost + (sum(cost),))))
        print()
    if args.json:
        doc = {"requests": args.requests, "runs": runs, "imports": costs, "kubernetes_import": baseline,
               "codecs": codecs, "versions": lib_versions}
        Path(args.json).write_text(json.dumps(doc, indent=2, default=list))
    return 0


if __name__ == "__main__":
    sys.exit(main())
