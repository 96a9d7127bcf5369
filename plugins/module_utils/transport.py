# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""HTTP/1.1 keep-alive connections to one API server, shared by threads, on the standard
library's http.client.

A request takes an idle connection (or opens one) and gives it back once its answer is read, so
a run of requests costs one TLS handshake per thread, not one per request. It is the transport of
the collection's Client: measured against urllib3's pool on a real kube-apiserver
(benchmarks/client_cpu.py), it takes about 0.66 times the CPU a request, with no dependency.

Its TLS settings are the ones the `kubernetes` config loaders put in a Configuration: verify_ssl,
ssl_ca_cert, cert_file and key_file, tls_server_name and assert_hostname. A proxy (proxy, not
bypassed by no_proxy) is left to urllib3's pool, as the `kubernetes` client makes it
(ProxyManager, SOCKS): `pool(cfg, size)` chooses.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import http.client
import select
import socket
import ssl
import threading
from urllib.parse import urlsplit

# The errors of a connection that the server closed while it was idle in the pool. A request
# that is safe to repeat is then sent again on a new connection; any other is not (the server may
# have read it before closing), and fails as sent.
STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)
# What http.client raises when a connection fails.
NO_ANSWER = (OSError, http.client.HTTPException)


class TransportError(Exception):
    """No answer. `sent`: the request may have reached the server (it was written, or writing it
    failed part way); False when no connection could be made."""

    def __init__(self, message, sent):
        super(TransportError, self).__init__(message)
        self.sent = sent


class Answer:
    """A whole answer: status, headers (case-insensitive get) and body."""

    def __init__(self, status, headers, data):
        self.status = status
        self.headers = headers
        self.data = data


class Stream:
    """An answer read as it arrives (a watch). Close it when done: its connection is not reused."""

    def __init__(self, conn, resp):
        self._conn = conn
        self._resp = resp
        self.status = resp.status
        self.headers = resp.headers

    def read(self):
        return _sent(NO_ANSWER, self._resp.read)

    def chunks(self, size=65536):
        """The body, in pieces of at most `size` bytes as they arrive."""
        while True:
            chunk = _sent(NO_ANSWER, self._resp.read1, size)
            if not chunk:
                return
            yield chunk

    def close(self):
        self._conn.close()


def ssl_context(cfg):
    """The TLS settings of a kubernetes.client.Configuration, as its RESTClientObject applies them."""
    ctx = ssl.create_default_context(cafile=cfg.ssl_ca_cert) if cfg.verify_ssl else ssl.create_default_context()
    if cfg.verify_ssl and getattr(cfg, "ca_cert_data", None):
        ctx.load_verify_locations(cadata=cfg.ca_cert_data)
    if not cfg.verify_ssl or cfg.assert_hostname is False:
        ctx.check_hostname = False
    if not cfg.verify_ssl:
        ctx.verify_mode = ssl.CERT_NONE
    if cfg.cert_file:
        ctx.load_cert_chain(cfg.cert_file, cfg.key_file)
    return ctx


class _TLSConnection(http.client.HTTPConnection):
    """HTTPS with the name the certificate is checked against (and sent as SNI) set apart from the
    address: kubeconfig's tls-server-name."""

    default_port = 443

    def __init__(self, host, port, context, server_hostname, timeout):
        super(_TLSConnection, self).__init__(host, port, timeout=timeout)
        self._context = context
        self._server_hostname = server_hostname

    def connect(self):
        super(_TLSConnection, self).connect()
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self._server_hostname)


class Pool:
    """Keep-alive connections to the server of `host` (a URL, whose path, if any, prefixes every
    request's: an API server behind a path), at most `size` of them kept idle."""

    def __init__(self, host, context=None, server_hostname=None, size=32):
        parts = urlsplit(host)
        self.prefix = parts.path.rstrip("/")
        self.tls = parts.scheme == "https"
        self.address = (parts.hostname, parts.port or (443 if self.tls else 80))
        self.context = context if context is not None else (ssl.create_default_context() if self.tls else None)
        self.server_hostname = server_hostname or parts.hostname
        self.size = size
        self._idle = []
        self._lock = threading.Lock()

    def _open(self, connect_timeout):
        if self.tls:
            conn = _TLSConnection(self.address[0], self.address[1], self.context, self.server_hostname, connect_timeout)
        else:
            conn = http.client.HTTPConnection(self.address[0], self.address[1], timeout=connect_timeout)
        try:
            conn.connect()
        except NO_ANSWER as err:
            conn.close()
            raise TransportError(_why(err), sent=False)
        return conn

    def _take(self, connect_timeout):
        """(connection, whether it was used before). An idle connection the server has closed
        since (readable while no request is out: the end of the stream) is dropped."""
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                return self._open(connect_timeout), False
            if not _closed_by_peer(conn.sock):
                return conn, True
            conn.close()

    def _give_back(self, conn):
        with self._lock:
            if len(self._idle) < self.size:
                self._idle.append(conn)
                return
        conn.close()

    def _send(self, method, path, body, headers, timeouts, resend):
        """(connection, response) of one request. With `resend`, one that failed on a connection
        used before (STALE) is sent again on another."""
        connect_timeout, read_timeout = timeouts
        while True:
            conn, reused = self._take(connect_timeout)
            try:
                return conn, self._exchange(conn, method, path, body, headers, read_timeout)
            except TransportError as err:
                if not (resend and reused and isinstance(err.__cause__, STALE)):
                    raise

    def _exchange(self, conn, method, path, body, headers, read_timeout):
        """Send one request on `conn` and read its status and headers; on failure, close it."""
        try:
            conn.sock.settimeout(read_timeout)
            conn.request(method, self.prefix + path, body=body, headers=headers)
            return conn.getresponse()
        except NO_ANSWER as err:
            conn.close()
            raise TransportError(_why(err), sent=True) from err

    def request(self, method, path, body=None, headers=None, timeouts=(10, 60), resend=False):
        """Send one request (`path` with its query) and read the whole answer. `resend`: the
        request is safe to repeat."""
        conn, resp = self._send(method, path, body, headers or {}, timeouts, resend)
        try:
            data = resp.read()
        except NO_ANSWER as err:
            conn.close()
            raise TransportError(_why(err), sent=True)
        if resp.will_close:
            conn.close()
        else:
            self._give_back(conn)
        return Answer(resp.status, resp.headers, data)

    def stream(self, method, path, headers=None, timeouts=(10, 60)):
        """Send one request on a new connection and return its answer as a Stream, read as it
        arrives (a watch: a failure is the caller's to handle, by watching again)."""
        conn = self._open(timeouts[0])
        return Stream(conn, self._exchange(conn, method, path, None, headers or {}, timeouts[1]))

    def clear(self):
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()


class ProxiedPool:
    """The same calls through urllib3's pool manager that the `kubernetes` client builds for a
    proxy (kubernetes.client.rest.RESTClientObject)."""

    def __init__(self, manager, host):
        self.manager = manager
        self.host = host.rstrip("/")

    def request(self, method, path, body=None, headers=None, timeouts=(10, 60), resend=False):
        import urllib3
        try:
            resp = self.manager.request(method, self.host + path, body=body, headers=headers, retries=False,
                                        timeout=urllib3.Timeout(connect=timeouts[0], read=timeouts[1]))
        except urllib3.exceptions.HTTPError as err:
            raise _proxied_error(err)
        return Answer(resp.status, resp.headers, resp.data)

    def stream(self, method, path, headers=None, timeouts=(10, 60)):
        import urllib3
        try:
            resp = self.manager.request(method, self.host + path, headers=headers, retries=False,
                                        preload_content=False,
                                        timeout=urllib3.Timeout(connect=timeouts[0], read=timeouts[1]))
        except urllib3.exceptions.HTTPError as err:
            raise _proxied_error(err)
        return _ProxiedStream(resp)

    def clear(self):
        self.manager.clear()


def _proxied_error(err):
    """urllib3's failure as a TransportError: not sent when no connection could be made."""
    import urllib3
    unsent = (urllib3.exceptions.NewConnectionError, urllib3.exceptions.ConnectTimeoutError)
    # an unreachable proxy is a ProxyError around the connection's error (urllib3 2.x)
    cause = getattr(err, "original_error", None) if isinstance(err, urllib3.exceptions.ProxyError) else None
    return TransportError(_why(err), sent=not isinstance(cause or err, unsent))


class _ProxiedStream:
    def __init__(self, resp):
        self._resp = resp
        self.status = resp.status
        self.headers = resp.headers

    def read(self):
        import urllib3
        return _sent(urllib3.exceptions.HTTPError, self._resp.read)

    def chunks(self, size=65536):
        import urllib3
        iterator = self._resp.stream(size)
        while True:
            chunk = _sent(urllib3.exceptions.HTTPError, next, iterator, b"")
            if not chunk:
                return
            yield chunk

    def close(self):
        self._resp.release_conn()


def pool(cfg, size=32):
    """The transport for a kubernetes.client.Configuration: Pool, or ProxiedPool when a proxy applies."""
    if cfg.proxy:
        from kubernetes.client.rest import RESTClientObject, should_bypass_proxies
        if not should_bypass_proxies(cfg.host, cfg.no_proxy or ""):
            proxied = _as_kubernetes_configuration(cfg)
            proxied.connection_pool_maxsize = size
            return ProxiedPool(RESTClientObject(proxied).pool_manager, cfg.host)
    tls = urlsplit(cfg.host).scheme == "https"
    name = getattr(cfg, "tls_server_name", None) or (cfg.assert_hostname if isinstance(cfg.assert_hostname, str) else None)
    return Pool(cfg.host, ssl_context(cfg) if tls else None, server_hostname=name, size=size)


# What RESTClientObject reads of a Configuration to connect (kubernetes/client/rest.py).
CONNECTION = ("host", "verify_ssl", "ssl_ca_cert", "ca_cert_data", "cert_file", "key_file", "assert_hostname",
              "tls_server_name", "proxy", "no_proxy")


def _as_kubernetes_configuration(cfg):
    """cfg as a kubernetes.client.Configuration (kfocp's own loader makes a lighter object)."""
    from kubernetes.client import Configuration
    if isinstance(cfg, Configuration):
        return cfg
    copy = Configuration()
    for name in CONNECTION:
        setattr(copy, name, getattr(cfg, name, None))
    return copy


def _sent(errors, func, *args):
    """func(*args), its `errors` raised as a TransportError of a request that was sent."""
    try:
        return func(*args)
    except errors as err:
        raise TransportError(_why(err), sent=True)


def _closed_by_peer(sock):
    """Whether an idle socket has something to read: with no request out, only its end."""
    if sock is None:
        return True
    if getattr(sock, "pending", None) and sock.pending():
        return True
    try:
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):
        return True


def _why(err):
    if isinstance(err, socket.timeout):
        return "timed out"
    if getattr(err, "verify_message", None):
        return "certificate verify failed: %s" % err.verify_message
    reason = getattr(err, "reason", None)
    return str(reason or err) or type(err).__name__
