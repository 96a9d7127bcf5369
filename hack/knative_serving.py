"""Knative Serving's controller and webhook (knative.dev/serving cmd/controller and cmd/webhook) at
v0.48.1, Knative Serving 1.21, the release OpenShift Serverless 1.38 ships (channel stable-1.38;
the Knative operator it vendors, v0.48.1, carries its manifests as kodata/knative-serving/1.21.1),
built from the module hack/kserve/go.mod pins and run against a local control plane (hack/cluster.py)
as the judge of what Knative makes of the Knative Service KServe writes: its Configuration, Route
and Revision, the Revision's Deployment (whose pod template labels kfocp's policies select), and,
once the Revision is ready, the KIngress of the Route, with the ingress class and the hosts Kourier
is asked to serve.

    python hack/knative_serving.py build        # build (or reuse) both binaries and print their paths

The build: `go build` of cmd/controller and cmd/webhook in the module's own directory with its
go.mod and go.sum (-mod=readonly), after the directory's content is checked against the hash
hack/kserve/go.sum pins (kserve.module_dir).

What they need, from their source at v0.48.1 (knative.dev/pkg injection/sharedmain, webhook), and
what they get here:

- the kubeconfig (`--kubeconfig`: the plane's admin one). They have no flag to turn leader election
  off (cmd/controller is not the operator's main): each takes its Leases on the plane, alone;
- SYSTEM_NAMESPACE (knative.dev/pkg system.Namespace; the process exits without it): the serving
  namespace, `knative-serving`, where their ConfigMaps are (config-network, config-domain,
  config-deployment, ... as the Knative operator writes them from the KnativeServing);
- the webhook: its name (WEBHOOK_NAME, which its Deployment sets to `webhook`: the process panics
  without it), its port (WEBHOOK_PORT, 8443 by default), a free one, and the Service the webhook
  configurations of 2-serving-core.yaml name (`webhook` in the serving namespace, port 443), which
  the plane routes to that port (ControlPlane.serve_service). The webhook makes its own certificate
  in the Secret `webhook-certs` and writes its CA and rules into those configurations;
- listeners: the profiling server on ":" + PROFILING_PORT, given a free port; 1.21's knative.dev/pkg
  exports no metrics unless config-observability names a protocol.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml

import kserve
from cluster import ClusterError, cache_root, free_port, go_build
from judge import Judge

SERVING = kserve.SERVING
NET_KOURIER = "knative.dev/net-kourier"
NAMESPACE = "knative-serving"
COMMANDS = ("controller", "webhook")
# the Service the webhook configurations of 2-serving-core.yaml call
WEBHOOK_SERVICE, WEBHOOK_SERVICE_PORT = "webhook", 443


def version() -> str:
    return kserve.version(SERVING)


def build() -> dict[str, Path]:
    """{name: path} of the controller and the webhook, built in the module's directory (cached)."""
    dest = cache_root() / ("knative-serving-" + version())
    if not all((dest / name).exists() for name in COMMANDS):
        go_build(kserve.module_dir(SERVING), dict((name, "./cmd/" + name) for name in COMMANDS), dest)
    return dict((name, dest / name) for name in COMMANDS)


def kourier_ingress_class() -> str:
    """The ingress class net-kourier's controller serves (pkg/reconciler/ingress/config/config.go
    KourierIngressClassName), read from its module at the version hack/kserve/go.mod pins."""
    import re
    text = (kserve.module_dir(NET_KOURIER) / "pkg" / "reconciler" / "ingress" / "config" / "config.go").read_text()
    found = re.search(r'KourierIngressClassName\s*=\s*"([^"]+)"', text)
    if not found:
        raise ClusterError(f"{NET_KOURIER}: no KourierIngressClassName in pkg/reconciler/ingress/config/config.go")
    return found.group(1)


def operator_config(objects: list[dict], config: dict) -> list[dict]:
    """The ConfigMaps config-<name> with the KnativeServing's spec.config.<name> entries added to their
    data, as the Knative operator writes them (its ConfigMapTransform)."""
    out = []
    for obj in objects:
        if obj.get("kind") == "ConfigMap" and obj["metadata"]["name"].startswith("config-"):
            extra = config.get(obj["metadata"]["name"][len("config-"):]) or {}
            if extra:
                obj = dict(obj, data=dict(obj.get("data") or {}, **{k: str(v) for k, v in extra.items()}))
        out.append(obj)
    return out


def manifests(kodata: Path, serving_version: str) -> tuple[list[dict], list[dict]]:
    """(CRDs, the serving namespace's objects the processes need: ServiceAccounts, ConfigMaps, the
    webhook configurations, the webhook's Secret and its Service) of the Knative operator's manifests of
    `serving_version`."""
    base = kodata / "knative-serving" / serving_version
    crds = [o for o in yaml.safe_load_all((base / "1-serving-crds.yaml").read_text()) if o]
    core = [o for o in yaml.safe_load_all((base / "2-serving-core.yaml").read_text()) if o]
    wanted = ("ServiceAccount", "ConfigMap", "Secret", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
    return crds, [o for o in core if o["kind"] in wanted
                  or (o["kind"], o["metadata"]["name"]) == ("Service", WEBHOOK_SERVICE)]


class KnativeServing(Judge):
    """Knative Serving's controller and webhook running against `plane`. A context manager."""

    what = "Knative Serving"
    prefix = "knative-serving-"

    def __init__(self, plane, namespace: str = NAMESPACE):
        super().__init__(plane)
        self.namespace = namespace
        self.webhook_port = free_port()

    def env(self) -> dict[str, str]:
        return {"KUBECONFIG": str(self.plane.kubeconfig), "SYSTEM_NAMESPACE": self.namespace,
                "POD_NAME": "knative-serving-local", "METRICS_DOMAIN": "knative.dev/serving",
                "CONFIG_LOGGING_NAME": "config-logging", "CONFIG_OBSERVABILITY_NAME": "config-observability",
                "HOME": str(self.plane.dir), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}

    def commands(self):
        binaries = build()
        args = ["--kubeconfig", str(self.plane.kubeconfig)]
        return {"controller": ([str(binaries["controller"])] + args,
                               dict(self.env(), PROFILING_PORT=str(free_port()))),
                "webhook": ([str(binaries["webhook"])] + args,
                            dict(self.env(), PROFILING_PORT=str(free_port()), WEBHOOK_NAME=WEBHOOK_SERVICE,
                                 WEBHOOK_PORT=str(self.webhook_port)))}

    def start(self):
        self.plane.serve_service(self.namespace, WEBHOOK_SERVICE, WEBHOOK_SERVICE_PORT, self.webhook_port)
        return super().start()

    def stop(self) -> None:
        self.plane.stop_serving(self.namespace, WEBHOOK_SERVICE, WEBHOOK_SERVICE_PORT)
        super().stop()


if __name__ == "__main__":
    # make build: the binaries the Knative Serving judge's test runs, built before it
    if sys.argv[1:] != ["build"]:
        raise SystemExit("usage: python hack/knative_serving.py build")
    for path in build().values():
        print(path)
    print(kserve.module_dir(NET_KOURIER))
