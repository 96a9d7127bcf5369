"""Command line: `python -m kfocp_operator [--kubeconfig FILE] [--port 8080] ...`.

In a pod it connects with its service account; elsewhere with a kubeconfig (--kubeconfig,
K8S_AUTH_KUBECONFIG or KUBECONFIG), which it also hands to the playbooks.
"""
import argparse
import logging
import os
import signal
import sys
import threading
from pathlib import Path

from kfocp_operator import collection, memory

SA_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
# Seconds a stop signal leaves a running playbook to be cancelled (ansible-runner checks every 5 s)
# before the process exits; the Deployment's terminationGracePeriodSeconds must be longer.
STOP_GRACE = 20


def parse(argv=None):
    env = os.environ
    parser = argparse.ArgumentParser(prog="kfocp-operator", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kubeconfig", default=env.get("K8S_AUTH_KUBECONFIG") or env.get("KUBECONFIG"),
                        help="kubeconfig file (default: K8S_AUTH_KUBECONFIG, KUBECONFIG, else the pod's service account)")
    parser.add_argument("--port", type=int, default=int(env.get("KFOCP_OPERATOR_PORT", "8080")),
                        help="port of /healthz, /readyz and /metrics (default %(default)s, KFOCP_OPERATOR_PORT)")
    parser.add_argument("--watch-namespace", default=env.get("WATCH_NAMESPACE", ""),
                        help="only Kubeflow CRs of this namespace (default: all, WATCH_NAMESPACE)")
    parser.add_argument("--operator-namespace", default=env.get("KFOCP_OPERATOR_NAMESPACE") or (
        SA_NAMESPACE.read_text().strip() if SA_NAMESPACE.exists() else None),
        help="namespace of the settings ConfigMap (default: the pod's namespace, KFOCP_OPERATOR_NAMESPACE)")
    parser.add_argument("--configmap", default=env.get("KFOCP_OPERATOR_CONFIGMAP", "kfocp-operator-config"),
                        help="name of the settings ConfigMap (default %(default)s)")
    parser.add_argument("--workers", type=int, default=2, help="CRs handled at once (each CR one at a time)")
    parser.add_argument("--default-reconcile-period", default=env.get("KFOCP_OPERATOR_RECONCILE_PERIOD", "30m"),
                        help="resync period when neither the CR nor its settings give one (default %(default)s)")
    parser.add_argument("--playbook", default=env.get("KFOCP_OPERATOR_PLAYBOOK", "site.yml"),
                        help="the collection's playbook a reconcile runs (default %(default)s)")
    parser.add_argument("--no-fast-path", action="store_true", help="do not watch namespaces and Users")
    parser.add_argument("--log-level", default=env.get("KFOCP_OPERATOR_LOG_LEVEL", "INFO"))
    return parser.parse_args(argv)


def main(argv=None):
    args = parse(argv)
    memory.limit_arenas()
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stdout,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")
    logging.getLogger("ansible-runner").setLevel(logging.WARNING)
    log = logging.getLogger("kfocp.operator")
    collections_path = collection.importable()
    root = collection.root()

    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client, KubeError
    from kfocp_operator.auth import share_bearer_token
    from kfocp_operator.config import parse_duration
    from kfocp_operator.controller import Controller, Settings
    from kfocp_operator.fastpath import FastPath
    from kfocp_operator.kube import api_reachable
    from kfocp_operator.metrics import HealthServer, Metrics
    from kfocp_operator.spec import SpecModel

    kubeconfig = str(Path(args.kubeconfig).resolve()) if args.kubeconfig else None
    try:
        client = Client.from_params({"kubeconfig": kubeconfig} if kubeconfig else {})
        share_bearer_token(client.cfg)
        client.resources()
    except KubeError as err:
        log.error("cannot reach the API server: %s", err)
        return 2
    stop = threading.Event()
    metrics = Metrics()
    settings = Settings(collections_path, root, kubeconfig=kubeconfig, namespace=args.watch_namespace,
                        operator_namespace=args.operator_namespace, configmap=args.configmap, workers=args.workers,
                        default_period=parse_duration(args.default_reconcile_period), playbook=args.playbook)
    fastpath = None if args.no_fast_path else FastPath(client, root, metrics, stop)
    controller = Controller(client, settings, SpecModel.from_collection(
        root, on_error=lambda err: log.error("%s: its variables are not part of the spec", err)), metrics, fastpath, stop)

    if fastpath is not None:
        fastpath.on_drift = controller.drift

    def healthy():
        """Liveness: every thread alive and turning (a wedged loop fails it, and the pod restarts)."""
        if not controller.alive():
            return False, "a watch or worker thread stopped"
        if fastpath is not None and not fastpath.alive():
            return False, "a fast-path watch stopped"
        why = controller.wedged() or (fastpath.wedged() if fastpath is not None else None)
        return (False, why) if why else (True, None)

    def ready():
        """Readiness: the API server answers now, and every watch is synced and working."""
        ok, why = api_reachable(client)
        if not ok:
            return False, why
        if not controller.informer.healthy():
            return False, "Kubeflow watch not synced or failing"
        if fastpath is not None:
            return fastpath.healthy()
        return True, None

    server = HealthServer(metrics, healthy, ready, port=args.port)
    server.start()
    controller.start()
    log.info("kfocp operator started: collection %s, watching %s", root, args.watch_namespace or "all namespaces")

    def on_signal(signum, _frame):
        log.info("signal %d: stopping", signum)
        controller.shutdown()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    while not stop.wait(1.0):
        if fastpath is not None:
            metrics.queue_depth.labels("fastpath").set(fastpath.depth())
    if not controller.join(STOP_GRACE):
        log.warning("a playbook run did not end within %ds of the stop signal", STOP_GRACE)
    server.stop()
    return 0
