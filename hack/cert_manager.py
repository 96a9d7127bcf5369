"""cert-manager's controller and CA injector, built from upstream's source at the version the
Kubeflow 26.03 render deploys (v1.19.4: the images quay.io/jetstack/cert-manager-controller and
-cainjector, labels app.kubernetes.io/version, in ../shared/upstream/example-render-26.03.yaml.gz),
run against a local control plane (hack/cluster.py) as the judge of what the components role
applies: the controller issues the render's Certificates from their Issuers, and the CA injector
writes the issued CA into the webhook configurations annotated cert-manager.io/inject-ca-from.

    python hack/cert_manager.py build        # build (or reuse) both binaries and print their paths

The module proxy serves cert-manager's root module (github.com/cert-manager/cert-manager: the
controllers, the issuers, the injector) but not the modules of its binaries (cmd/controller and
cmd/cainjector are modules of their own, tagged cmd/controller/v1.19.4; the proxy answers 404 for
github.com/cert-manager/cert-manager/cmd/controller@v1.19.4 and its list). So the binaries are
kfocp's own: hack/cert-manager is one module (kfocp.local/hack/cert-manager, its go.sum pinning
every module) with two short commands, controller/ and cainjector/, that do what upstream's
cmd/controller/app/controller.go and cmd/cainjector/app/controller.go do, through the root module's
exported packages only: pkg/controller (NewContextFactory, the Known registry of controllers each
package registers in its init) and pkg/controller/cainjector (RegisterAllInjectors on a
controller-runtime manager whose user agent, hence field manager, is cert-manager-cainjector).
Nothing of cert-manager comes from anywhere but the proxy.

How they run here (the commands' flags): `-kubeconfig` the plane's admin kubeconfig (no in-cluster
config), no leader election (no Lease), no metrics, health or profiling servers (nothing listens),
and the controller with only the controllers that issue from an Issuer of kind SelfSigned or CA
and approve the requests: no ACME (orders, challenges), no ingress or gateway shim, no Vault or
Venafi issuers (their packages are not even imported). Every address either dials is the plane's,
on loopback.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

from cluster import HACK, cache_root, go_build, module_version
from judge import Judge, serve_crds

MODULE = "github.com/cert-manager/cert-manager"
SOURCE = HACK / "cert-manager"
# The namespace upstream installs it in (common/cert-manager/cert-manager/base of kubeflow/manifests;
# the render's cert-manager Deployments), used as the cluster resource namespace as upstream's
# chart passes it (--cluster-resource-namespace=$(POD_NAMESPACE)).
NAMESPACE = "cert-manager"
# The controllers the render's Issuers need (the names their packages of pkg/controller register,
# as upstream's --controllers takes them; controller/main.go imports those packages): the Issuer's
# readiness, a CertificateRequest's approval and its signing by a SelfSigned or CA issuer, and the
# Certificate's life cycle (trigger, key, request, issuing, readiness, revisions).
CONTROLLERS = ("issuers", "certificaterequests-approver", "certificaterequests-issuer-selfsigned",
               "certificaterequests-issuer-ca", "certificates-trigger", "certificates-key-manager",
               "certificates-request-manager", "certificates-issuing", "certificates-readiness",
               "certificates-revision-manager")
CRDS = ("cert-manager.io_certificaterequests.yaml", "cert-manager.io_certificates.yaml",
        "cert-manager.io_clusterissuers.yaml", "cert-manager.io_issuers.yaml",
        "acme.cert-manager.io_challenges.yaml", "acme.cert-manager.io_orders.yaml")

# The commands of hack/cert-manager, built as cert-manager-<name>.
COMMANDS = ("controller", "cainjector")


def version() -> str:
    return module_version(SOURCE / "go.mod", MODULE)


def source_hash() -> str:
    """A digest of the commands' source (go.mod, go.sum, each main.go): a change rebuilds them."""
    digest = hashlib.sha256()
    for path in sorted(p for p in SOURCE.rglob("*") if p.is_file() and (p.suffix == ".go" or p.name in ("go.mod", "go.sum"))):
        digest.update(str(path.relative_to(SOURCE)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def _ldflags(ver: str) -> str:
    # make/00_mod.mk GOLDFLAGS: the version the binaries report (pkg/util/version.go)
    return f"-s -w -X {MODULE}/pkg/util.AppVersion={ver}"


def build() -> dict[str, Path]:
    """{name: path} of the controller and the CA injector (built with the module proxy; cached)."""
    ver = version()
    binaries = {"cert-manager-" + name: "./" + name for name in COMMANDS}
    dest = go_build(SOURCE, binaries, cache_root() / f"cert-manager-{ver}-{source_hash()}", _ldflags(ver))
    return {name: dest / ("cert-manager-" + name) for name in COMMANDS}


def module_dir() -> Path:
    """The root module's directory in the Go module cache (downloaded when missing)."""
    from gpu_operator import module_dir as cached_module_dir
    return cached_module_dir(MODULE, SOURCE / "go.mod")


def crd_documents() -> list[str]:
    """cert-manager's CRDs at the pinned version (deploy/crds of its module), as YAML text."""
    return [(module_dir() / "deploy" / "crds" / name).read_text() for name in CRDS]


def prepare(plane) -> None:
    """Serve cert-manager's kinds (its CRDs, applied as the cluster's own) and its namespace."""
    serve_crds(plane, crd_documents(), NAMESPACE)


class CertManager(Judge):
    """cert-manager's controller and CA injector running against `plane` (its admin kubeconfig),
    each a child process with its log in the plane's directory. A context manager: stopped on exit."""

    what = "cert-manager"
    prefix = "cert-manager-"

    def commands(self):
        binaries = build()
        env = dict(os.environ, KUBECONFIG=str(self.plane.kubeconfig), POD_NAMESPACE=NAMESPACE)
        kubeconfig = "-kubeconfig=%s" % self.plane.kubeconfig
        return {
            "controller": ([str(binaries["controller"]), kubeconfig, "-cluster-resource-namespace=%s" % NAMESPACE,
                            "-controllers=%s" % ",".join(CONTROLLERS), "-v=2"], env),
            # every injectable kind (webhook configurations, APIServices, CRDs), as upstream's defaults
            "cainjector": ([str(binaries["cainjector"]), kubeconfig, "-v=2"], env),
        }


if __name__ == "__main__":
    # make build: the binaries the tests run, built before them (they run with no route off the machine)
    import sys

    if sys.argv[1:] != ["build"]:
        raise SystemExit("usage: python hack/cert_manager.py build")
    for path in build().values():
        print(path)
