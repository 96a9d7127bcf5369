"""KServe's controller (github.com/kserve/kserve cmd/manager), built from its Go module at the version
the Kubeflow 26.03 render deploys (kserve/kserve-controller:v0.16.0 in
../shared/upstream/example-render-26.03.yaml.gz), run against a local control plane (hack/cluster.py)
as the judge of the KServe kfocp installs: from an InferenceService it writes the Knative Service of
each component, and, once that Service is ready, the VirtualService and the ExternalName Service
that send the InferenceService's hosts to the `localGatewayService` of the inferenceservice-config
the components role applies.

    python hack/kserve.py build        # build (or reuse) the manager and print its path

The versions are pinned by hack/kserve/go.mod and go.sum: KServe v0.16.0, and knative.dev/serving
v0.48.1 (Knative Serving 1.21, OpenShift Serverless 1.38's), whose CRDs (config/core/300-resources)
the judge serves so that KServe finds the Knative Service kind (cmd/manager/main.go:
utils.IsCrdAvailable on serving.knative.dev/v1 Service) and can create one.

The build: KServe's go.mod has a replace directive (sigs.k8s.io/controller-runtime), so `go install
...@v0.16.0` refuses it; cmd/manager is built with `go build` in the module's own directory, with its
go.mod and go.sum (-mod=readonly: the go command checks every module against that go.sum). Before
that, the module directory's hash (the module cache's .ziphash) is checked against hack/kserve/go.sum.

What the manager needs, from cmd/manager/main.go at v0.16.0, and what it gets here:

- the kubeconfig (controller-runtime's config.GetConfig reads $KUBECONFIG): the plane's admin one;
- POD_NAMESPACE (pkg/constants: KServeNamespace, "kserve" when unset), where it reads the
  inferenceservice-config ConfigMap at start (and exits without it): the components' namespace;
- its listeners: metrics (-metrics-addr) and health probes (-health-probe-addr) off ("0"); the
  webhook server on -webhook-port, a free port, with the certificate controller-runtime reads from
  $TMPDIR/k8s-webhook-server/serving-certs (tls.crt, tls.key: webhook.Options' default CertDir is
  under os.TempDir()). The certificate is one of the plane's own CA for the Service upstream's webhook
  configurations name (kserve-webhook-server-service.<namespace>.svc), and the plane routes the API
  server's calls to that Service to the port (ControlPlane.serve_service), so the API server calls
  KServe's own defaulter and validators when an InferenceService is created;
- no leader election (its default).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml

from cluster import HACK, ClusterError, cache_root, free_port, go_build, module_version, serving_certificate
from judge import Judge, serve_crds

KSERVE = "github.com/kserve/kserve"
SERVING = "knative.dev/serving"
GOMOD = HACK / "kserve" / "go.mod"
# The Service upstream's webhook configurations call (applications/kserve/kserve, the render's
# MutatingWebhookConfiguration and ValidatingWebhookConfigurations inferenceservice.serving.kserve.io
# and the others), its port, and the paths cmd/manager/main.go registers.
WEBHOOK_SERVICE = "kserve-webhook-server-service"
# Knative Serving's CRDs: the Service KServe writes, and the kinds Knative's controller makes of it.
SERVING_CRDS = ("config/core/300-resources/service.yaml", "config/core/300-resources/configuration.yaml",
                "config/core/300-resources/revision.yaml", "config/core/300-resources/route.yaml")


def version(module: str = KSERVE) -> str:
    return module_version(GOMOD, module)


def module_dir(module: str = KSERVE) -> Path:
    """The module's directory in the Go module cache (downloaded when the cache lacks it), checked
    against the hash hack/kserve/go.sum pins."""
    from gpu_operator import module_dir as cached_module_dir
    ver = version(module)
    found = cached_module_dir(module, GOMOD)
    pinned = pinned_hash(module, ver)
    gomodcache = found.parents[len(Path(module).parts) - 1]
    ziphash = gomodcache / "cache" / "download" / _escaped(module) / "@v" / (ver + ".ziphash")
    actual = ziphash.read_text().strip() if ziphash.exists() else None
    if actual != pinned:
        raise ClusterError(f"{module}@{ver} in {found} has hash {actual}, not {pinned} as {GOMOD.parent / 'go.sum'} pins")
    return found


def _escaped(module: str) -> str:
    return "".join("!" + c.lower() if c.isupper() else c for c in module)


def pinned_hash(module: str, ver: str) -> str:
    for line in (GOMOD.parent / "go.sum").read_text().splitlines():
        parts = line.split()
        if parts[:2] == [module, ver]:
            return parts[2]
    raise ClusterError(f"{GOMOD.parent / 'go.sum'} pins no {module} {ver}")


def build() -> Path:
    """The manager binary, built in KServe's module directory with its go.mod and go.sum (see the
    module docstring), into the cache keyed by version."""
    dest = cache_root() / ("kserve-manager-" + version())
    if not (dest / "manager").exists():
        go_build(module_dir(), {"manager": "./cmd/manager"}, dest)
    return dest / "manager"


def serving_crd_documents() -> list[str]:
    """Knative Serving's CRDs at the pinned version (its module's config/core/300-resources)."""
    base = module_dir(SERVING)
    return [(base / path).read_text() for path in SERVING_CRDS]


def prepare(plane, namespace: str) -> None:
    """Serve Knative Serving's kinds (its CRDs, as the cluster's own: OpenShift Serverless installs
    them) before KServe starts: it adds the Knative scheme only when the kind is served."""
    serve_crds(plane, serving_crd_documents(), namespace)


def webhook_configurations(objects, namespace: str):
    """(kind, name, [index of each webhook that calls KServe's webhook Service]) of `objects`."""
    out = []
    for obj in objects:
        if obj.get("kind") not in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"):
            continue
        hooks = [i for i, hook in enumerate(obj.get("webhooks") or [])
                 if ((hook.get("clientConfig") or {}).get("service") or {}).get("name") == WEBHOOK_SERVICE
                 and hook["clientConfig"]["service"].get("namespace") == namespace]
        if hooks:
            out.append((obj["kind"], obj["metadata"]["name"], hooks))
    return out


class KServe(Judge):
    """KServe's manager running against `plane` (its admin kubeconfig) with the inferenceservice-config
    of `namespace`, its webhooks served to the API server. A context manager: stopped on exit."""

    what = "KServe's controller"
    prefix = "kserve-"

    def __init__(self, plane, namespace: str = "kubeflow", webhook_port: int = 443):
        super().__init__(plane)
        self.namespace, self.webhook_port = namespace, webhook_port
        self.port = free_port()
        self.tmpdir = plane.dir / "kserve-tmp"
        self.ca = None

    def commands(self):
        binary = build()
        certs = self.tmpdir / "k8s-webhook-server" / "serving-certs"
        certs.mkdir(parents=True, exist_ok=True)
        self.ca, cert, key = serving_certificate("%s.%s.svc" % (WEBHOOK_SERVICE, self.namespace))
        (certs / "tls.crt").write_bytes(cert)
        (certs / "tls.key").write_bytes(key)
        (certs / "tls.key").chmod(0o600)
        env = {"KUBECONFIG": str(self.plane.kubeconfig), "POD_NAMESPACE": self.namespace, "TMPDIR": str(self.tmpdir),
               "HOME": str(self.plane.dir), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        return {"manager": ([str(binary), "-metrics-addr=0", "-health-probe-addr=0",
                             "-webhook-port=%d" % self.port], env)}

    def start(self):
        super().start()
        self.plane.serve_service(self.namespace, WEBHOOK_SERVICE, self.webhook_port, self.port)
        return self

    def stop(self) -> None:
        self.plane.stop_serving(self.namespace, WEBHOOK_SERVICE, self.webhook_port)
        super().stop()


def kourier_objects(kourier_yaml: str, ingress_namespace: str) -> list[dict]:
    """Kourier's gateway Deployment and its cluster-local Service from a Knative operator's
    kourier.yaml, in the namespace OpenShift Serverless runs Kourier in (upstream's puts them in
    kourier-system, which the operator makes the KnativeServing's; Serverless moves them to
    <serving namespace>-ingress)."""
    out = []
    for obj in yaml.safe_load_all(kourier_yaml):
        wanted = (("Deployment", "3scale-kourier-gateway"), ("Service", "kourier-internal"))
        if obj and (obj["kind"], obj["metadata"]["name"]) in wanted:
            obj["metadata"]["namespace"] = ingress_namespace
            out.append(obj)
    return out


if __name__ == "__main__":
    # make build: the binary the KServe judge's test runs, built before it (it runs with no route off
    # the machine), and Knative Serving's module, whose CRDs the test serves
    if sys.argv[1:] != ["build"]:
        raise SystemExit("usage: python hack/kserve.py build")
    print(build())
    print(module_dir(SERVING))
