"""The Knative operator (knative.dev/operator cmd/operator), built from its Go module at the versions
hack/knative/go.mod and hack/knative/serverless-1.38/go.mod pin, run against a local control plane (hack/cluster.py) as the judge of the
KnativeServing kfocp writes: it turns the KnativeServing into Knative Serving's and Kourier's
Deployments and ServiceAccounts, whose pod templates give the mesh principals kfocp's
AuthorizationPolicies name and carry the workload overrides kfocp sets.

The versions, one per Serverless channel kfocp subscribes to (versions.DEFAULT_CHANNELS), each
pinned by a go.mod of its own (GOMODS). OpenShift Serverless 1.37 (channel stable-1.37, which kfocp subscribes to on 4.14 and
4.15 and which is published for every OpenShift minor kfocp supports) vendors knative.dev/operator
v0.44.9-0.20251030190238-fb0238a50768 (openshift-knative/serverless-operator release-1.37
c9356eaa6eeaa2eb134b8c633d916104e50f2571, go.mod; Knative 1.17). The Go module proxy does not serve
that pseudo-version ("403 Forbidden: This module version is not available"), so the judge is
v0.44.8 (tag knative-v1.17.8, aaf737c4), the release of the same branch it is one commit after
(knative/operator fb0238a50 "Propagate manifests paths earlier to operator status", which adds the
Serving 1.17.2 manifests, whose 2-serving-core.yaml differs from 1.17.1's only in images and
versions, and status bookkeeping). Serverless 1.38 (channel stable-1.38, kfocp's from 4.16 on)
vendors v0.48.1 (main 02f6bc2c4dc6dc7509fd93379c8a6e90f4b5425f, project.yaml `version: 1.38.0`,
`serving: knative-v1.21`), which the proxy serves: hack/knative/serverless-1.38/go.mod.

What the operator needs, from its source, and what the plane gets for it:

- the KnativeServing and KnativeEventing CRDs (cmd/operator/main.go runs both reconcilers), from the
  module's config/crd/bases as they are. Their conversion webhook (operator-webhook in
  knative-operator, cmd/webhook: a conversion controller and its certificates, nothing else) is
  never called: v1beta1 is the one version served and stored. So the operator's webhook is not run;
- its manifests under KO_DATA_PATH: the module's cmd/operator/kodata (ko copies it into the image;
  the module zip holds it); the serving version is the newest there unless spec.version names one;
- SYSTEM_NAMESPACE (knative.dev/pkg system.Namespace: the process exits without it), the
  namespace the operator's Deployment runs in (config/manager/operator.yaml: its own
  metadata.namespace, `knative-operator`, config/000-namespace.yaml), with that Deployment's
  METRICS_DOMAIN, CONFIG_LOGGING_NAME, CONFIG_OBSERVABILITY_NAME and KUBERNETES_MIN_VERSION;
- no leader election: `--disable-ha` (knative.dev/pkg injection/sharedmain MainWithContext);
- its listeners: the Prometheus exporter of 1.17's knative.dev/pkg on
  METRICS_PROMETHEUS_HOST:METRICS_PROMETHEUS_PORT (metrics/config.go; 0.0.0.0:9090 by default) is
  put on 127.0.0.1 and a free port (1.21's knative.dev/pkg, observability/metrics/config.go, exports
  no metrics unless config-observability names a protocol: DefaultConfig is ProtocolNone); the
  profiling server listens on ":" + PROFILING_PORT (knative.dev/pkg profiling/server.go;
  no host setting), given a free port: in the tests' network namespace (hack/netns.py) loopback is
  the only interface it can listen on.

The build: `go build` of cmd/operator in the module's own directory, with its go.mod and go.sum
(-mod=readonly: every module it needs must be in that go.sum, whose hashes the go command checks).
`go install knative.dev/operator/cmd/operator@v0.44.8` fails here: with no main module it checks
each module against the checksum database, which the proxy answers for knative.dev/eventing v0.44.5
with "404 Not Found" ("verifying module: knative.dev/eventing@v0.44.5: reading
.../sumdb/sum.golang.org/lookup/knative.dev/eventing@v0.44.5"), though the operator's go.sum pins
it. The operator module's own content is pinned by hack/knative/go.sum.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from cluster import HACK, ClusterError, _module_dir, cache_root, free_port, go_build, module_version
from judge import Judge, serve_crds

# OpenShift Serverless channel -> the go.mod that pins the knative.dev/operator it vendors.
GOMODS = {"stable-1.37": HACK / "knative" / "go.mod", "stable-1.38": HACK / "knative" / "serverless-1.38" / "go.mod"}
DEFAULT = "stable-1.37"
OPERATOR = "knative.dev/operator"
# The namespace the operator runs in (config/000-namespace.yaml, config/manager/operator.yaml).
NAMESPACE = "knative-operator"
CRDS = ("config/crd/bases/operator.knative.dev_knativeservings.yaml",
        "config/crd/bases/operator.knative.dev_knativeeventings.yaml")


def version(channel: str = DEFAULT) -> str:
    return module_version(GOMODS[channel], OPERATOR)


def module_dir(channel: str = DEFAULT) -> Path:
    """The operator module's directory in the Go module cache (downloaded when the cache lacks it)."""
    ver = version(channel)
    gopath = os.environ.get("GOPATH") or str(Path.home() / "go")
    cache = Path(os.environ.get("GOMODCACHE") or Path(gopath.split(os.pathsep)[0]) / "pkg" / "mod")
    found = cache / re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), f"{OPERATOR}@{ver}")
    return found if found.is_dir() else _module_dir(OPERATOR, ver)


def kodata(channel: str = DEFAULT) -> Path:
    path = module_dir(channel) / "cmd" / "operator" / "kodata"
    if not (path / "knative-serving").is_dir():
        raise ClusterError(f"{OPERATOR}@{version(channel)} has no cmd/operator/kodata/knative-serving at {path}")
    return path


def build(channel: str = DEFAULT) -> Path:
    """The operator binary, built in the module's directory with its go.mod and go.sum (see the
    module docstring), into the cache keyed by version."""
    dest = cache_root() / ("knative-operator-" + version(channel))
    if not (dest / "operator").exists():
        go_build(module_dir(channel), {"operator": "./cmd/operator"}, dest)
    return dest / "operator"


def crd_documents(channel: str = DEFAULT) -> list[str]:
    return [(module_dir(channel) / path).read_text() for path in CRDS]


def prepare(plane, channel: str = DEFAULT) -> None:
    """Serve the operator's CRDs (the module's, replacing the plane's trimmed KnativeServing CRD) and
    make its namespace."""
    serve_crds(plane, crd_documents(channel), NAMESPACE)


class Operator(Judge):
    """The Knative operator of Serverless channel `channel` running against `plane` (its admin
    kubeconfig), with its log in the plane's directory. A context manager: stopped on exit."""

    what = "the Knative operator"

    def __init__(self, plane, channel: str = DEFAULT, namespace: str = NAMESPACE):
        super().__init__(plane)
        self.channel, self.namespace = channel, namespace

    def env(self) -> dict[str, str]:
        return {"KUBECONFIG": str(self.plane.kubeconfig), "KO_DATA_PATH": str(kodata(self.channel)),
                "SYSTEM_NAMESPACE": self.namespace, "POD_NAME": "knative-operator-local",
                "METRICS_DOMAIN": "knative.dev/operator", "CONFIG_LOGGING_NAME": "config-logging",
                "CONFIG_OBSERVABILITY_NAME": "config-observability", "KUBERNETES_MIN_VERSION": "",
                "METRICS_PROMETHEUS_HOST": "127.0.0.1", "METRICS_PROMETHEUS_PORT": str(free_port()),
                "PROFILING_PORT": str(free_port()), "HOME": str(self.plane.dir),
                "PATH": os.environ.get("PATH", "/usr/bin:/bin")}

    def commands(self):
        return {"knative-operator": ([str(build(self.channel)), "--kubeconfig", str(self.plane.kubeconfig),
                                      "--disable-ha"], self.env())}


if __name__ == "__main__":
    # make build: the binaries the Knative judge's test runs, built before it (it runs with no route off the machine)
    if sys.argv[1:] != ["build"]:
        raise SystemExit("usage: python hack/knative_operator.py build")
    for name in GOMODS:
        print(build(name))
