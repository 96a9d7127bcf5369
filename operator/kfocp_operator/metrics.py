"""Prometheus metrics and the /healthz, /readyz and /metrics endpoints, on one port."""
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

LOG = logging.getLogger("kfocp.operator")


class Metrics:
    def __init__(self, registry=None):
        self.registry = registry or CollectorRegistry()
        self.reconciles = Counter("kfocp_operator_reconcile_total", "Reconciles, by kind of work and result",
                                  ["kind", "result"], registry=self.registry)
        self.duration = Histogram("kfocp_operator_reconcile_duration_seconds", "Time a reconcile took, by kind",
                                  ["kind"], registry=self.registry,
                                  buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600))
        self.errors = Counter("kfocp_operator_reconcile_errors_total", "Reconciles that failed, by kind",
                              ["kind"], registry=self.registry)
        self.queue_depth = Gauge("kfocp_operator_queue_depth", "Work waiting, by queue", ["queue"],
                                 registry=self.registry)
        self.retries = Counter("kfocp_operator_retries_total",
                               "Work scheduled again after a failure, by kind", ["kind"], registry=self.registry)
        self.backoff = Gauge("kfocp_operator_retry_backoff_seconds",
                             "The delay of the last retry scheduled, by kind (0 after a success)", ["kind"],
                             registry=self.registry)
        self.objects = Counter("kfocp_operator_fastpath_objects_total",
                               "Objects the fast path applied, by action", ["action"], registry=self.registry)


class HealthServer(threading.Thread):
    """Serves /healthz (the process and its watches live), /readyz (the caches are synced) and /metrics."""

    def __init__(self, metrics, healthy, ready, port=8080, host="0.0.0.0"):
        super().__init__(name="health", daemon=True)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (the name http.server calls)
                if self.path.startswith("/metrics"):
                    self._send(200, generate_latest(owner.metrics.registry), CONTENT_TYPE_LATEST)
                elif self.path.startswith("/healthz"):
                    ok, why = owner.healthy()
                    self._send(200 if ok else 503, (why or "ok").encode() + b"\n")
                elif self.path.startswith("/readyz"):
                    ok, why = owner.ready()
                    self._send(200 if ok else 503, (why or "ok").encode() + b"\n")
                else:
                    self._send(404, b"not found\n")

            def _send(self, code, body, content_type="text/plain; charset=utf-8"):
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):  # pylint: disable=arguments-differ
                return

        self.metrics = metrics
        self.healthy = healthy
        self.ready = ready
        self.server = ThreadingHTTPServer((host, port), Handler)
        self.port = self.server.server_address[1]

    def run(self):
        LOG.info("serving /healthz, /readyz and /metrics on port %d", self.port)
        self.server.serve_forever(poll_interval=0.5)

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
