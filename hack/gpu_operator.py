"""NVIDIA's GPU operator, built from its Go module at the version tests/upstream/go.mod pins, run
against a local control plane (hack/cluster.py) as the judge of the ClusterPolicy kfocp writes: it
turns the ClusterPolicy into its operand DaemonSets, which the DaemonSet controller and
kube-scheduler place (or not) on kwok's simulated nodes.

What the operator needs of the cluster, from its source (controllers/, cmd/gpu-operator/main.go)
and what the plane gets for it:

- its assets under /opt/gpu-operator (controllers/state_manager.go, init: addState with fixed
  paths; internal/state/manager.go: /opt/gpu-operator/manifests/state-driver), laid out as its
  image lays them out (docker/Dockerfile: `COPY assets /opt/gpu-operator/`, `COPY manifests
  /opt/gpu-operator/manifests`). The path is not configurable: the operator runs chrooted in a
  root of its own that holds a copy of the module's assets there;
- the host's /etc/os-release at /host-etc/os-release (object_controls.go parseOSRelease; the CSV
  mounts the node's file there): an RHCOS node's, for the dressed OpenShift minor;
- OPERATOR_NAMESPACE (state_manager.go init: the operator exits without it), and the operands'
  images OLM passes it in its environment (olm_env);
- ClusterVersion `version` with a Completed status.history entry (state_manager.go
  OpenshiftVersion: the OpenShift minor; the operator then reads the OpenShift-only assets,
  resource_manager.go getAssetsFrom). The tests dress it with helpers.play_cluster_version;
- the PrometheusRule kind (the OpenShift-only assets state-operator-metrics/0400_prometheus_rule_
  openshift.yaml and state-node-status-exporter/0800_prometheus_rule_openshift.yaml;
  object_controls.go PrometheusRule creates it with no check that the kind is served) and the
  ServiceMonitor kind (object_controls.go ServiceMonitor checks for its CRD): the CRDs of the
  prometheus-operator module, at the version tests/upstream/go.mod pins (the one whose API the
  operator's go.mod requires, v0.81.0), example/prometheus-operator-crd;
- the ImageStream kind (object_controls.go ocpHasDriverToolkitImageStream gets imagestream
  driver-toolkit in namespace openshift; not found is "no driver toolkit", a kind not served is an
  error that stops the reconcile). openshift-apiserver serves it, not a CRD, so the plane gets a
  CRD of that group, version, kind and plural (openshift/api image/v1/register.go), fields kept;
- the Proxy `cluster` (object_controls.go applyOCPProxySpec, for the driver DaemonSet on
  OpenShift: an error when it cannot be read): the Proxy CRD of openshift/api (the version
  hack/openshift/go.mod pins) and the object every OpenShift cluster holds, with an empty spec;
- the ClusterPolicy and NVIDIADriver CRDs of the operator's own module (config/crd/bases): its
  NVIDIADriver controller watches that kind (cmd/gpu-operator/main.go).
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from cluster import HACK, OPENSHIFT, _module_dir, cache_root, go_install, module_version
from judge import Judge

UPSTREAM = HACK.parent / "tests" / "upstream" / "go.mod"
GPU_OPERATOR = "github.com/NVIDIA/gpu-operator"
PROMETHEUS_OPERATOR = "github.com/prometheus-operator/prometheus-operator"
OPENSHIFT_API = "github.com/openshift/api"
# The namespace the operator's OLM bundle suggests (state_manager.go ocpSuggestedNamespace), the
# one kfocp's gpu role installs it in.
NAMESPACE = "nvidia-gpu-operator"
CRDS = (
    (GPU_OPERATOR, UPSTREAM, "config/crd/bases/nvidia.com_clusterpolicies.yaml"),
    (GPU_OPERATOR, UPSTREAM, "config/crd/bases/nvidia.com_nvidiadrivers.yaml"),
    (PROMETHEUS_OPERATOR, UPSTREAM, "example/prometheus-operator-crd/monitoring.coreos.com_prometheusrules.yaml"),
    (PROMETHEUS_OPERATOR, UPSTREAM, "example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml"),
    (OPENSHIFT_API, OPENSHIFT / "go.mod", "config/v1/zz_generated.crd-manifests/0000_03_config-operator_01_proxies.crd.yaml"),
)
# openshift/api image/v1/register.go: GroupName image.openshift.io, version v1, ImageStream
# (namespaced, resource imagestreams; types.go ImageStream has no +genclient:nonNamespaced).
IMAGESTREAM_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "imagestreams.image.openshift.io"},
    "spec": {"group": "image.openshift.io", "scope": "Namespaced",
             "names": {"kind": "ImageStream", "listKind": "ImageStreamList", "plural": "imagestreams",
                       "singular": "imagestream", "shortNames": ["is"]},
             "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}


def version(module: str = GPU_OPERATOR, gomod: Path = UPSTREAM) -> str:
    return module_version(gomod, module)


def module_dir(module: str = GPU_OPERATOR, gomod: Path = UPSTREAM) -> Path:
    """The module's directory in the Go module cache (downloaded when the cache lacks it)."""
    ver = version(module, gomod)
    gopath = os.environ.get("GOPATH") or str(Path.home() / "go")
    cache = Path(os.environ.get("GOMODCACHE") or Path(gopath.split(os.pathsep)[0]) / "pkg" / "mod")
    found = cache / re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), f"{module}@{ver}")
    return found if found.is_dir() else _module_dir(module, ver)


def build() -> Path:
    """The gpu-operator binary (`go install` of its cmd at the pinned version; cached)."""
    ver = version()
    return go_install(GPU_OPERATOR + "/cmd/gpu-operator", ver, cache_root() / ("gpu-operator-" + ver.rsplit("-", 1)[-1]))


def crd_documents() -> list[str]:
    """The CRDs the operator reads or writes (see the module docstring), as YAML or JSON text."""
    return [(module_dir(module, gomod) / path).read_text() for module, gomod, path in CRDS] + [json.dumps(IMAGESTREAM_CRD)]


def prepare(plane) -> None:
    """Serve what the operator needs (the CRDs, the Proxy `cluster`, the namespace openshift) and
    its own namespace."""
    for text in crd_documents():
        plane.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=cluster-bootstrap",
                      "-f", "-", input=text)
    plane.wait_established()
    items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}} for name in ("openshift", NAMESPACE)]
    items.append({"apiVersion": "config.openshift.io/v1", "kind": "Proxy", "metadata": {"name": "cluster"},
                  "spec": {}})
    plane.kubectl("apply", "--server-side", "--field-manager=cluster-bootstrap", "-f", "-",
                  input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))


def olm_env() -> dict[str, str]:
    """The environment OLM gives the operator: its container's env in the module's bundle
    (bundle/manifests/gpu-operator-certified.clusterserviceversion.yaml), the operands' images
    (api/nvidia/v1/clusterpolicy_types.go ImagePath: the ClusterPolicy's image, else these)."""
    import yaml
    csv = yaml.safe_load((module_dir() / "bundle" / "manifests" / "gpu-operator-certified.clusterserviceversion.yaml")
                         .read_text())
    deployment = csv["spec"]["install"]["spec"]["deployments"][0]
    container = [c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "gpu-operator"][0]
    return {e["name"]: e["value"] for e in container.get("env") or [] if "value" in e}


def os_release(openshift: str) -> str:
    """/etc/os-release of an RHCOS node of OpenShift `openshift` (x.y), in the fields the operator
    reads (object_controls.go parseOSRelease: ID picks the repository, certificate and
    subscription paths; OPENSHIFT_VERSION marks OpenShift), shaped as RHCOS writes it (ID "rhcos",
    VERSION_ID and OPENSHIFT_VERSION the OpenShift minor)."""
    return "\n".join(['NAME="Red Hat Enterprise Linux CoreOS"', 'ID="rhcos"', 'ID_LIKE="rhel fedora"',
                      'VERSION_ID="%s"' % openshift, 'VARIANT="CoreOS"', 'OPENSHIFT_VERSION="%s"' % openshift, ""])


def _root(dest: Path, openshift: str) -> Path:
    """The operator's root: its binary, its kubeconfig, /opt/gpu-operator as its image holds it
    (the module's assets, and its manifests in manifests/: docker/Dockerfile) and the host's
    os-release at /host-etc/os-release, where its Deployment mounts it (the CSV's host-os-release
    volume). The binary is static (CGO_ENABLED=0), so nothing else is needed."""
    source = module_dir()
    if not (dest / "opt" / "gpu-operator").exists():
        (dest / "opt").mkdir(parents=True, exist_ok=True)
        shutil.copytree(source / "assets", dest / "opt" / "gpu-operator")
        shutil.copytree(source / "manifests", dest / "opt" / "gpu-operator" / "manifests")
        shutil.copy2(build(), dest / "gpu-operator")
        (dest / "proc").mkdir(exist_ok=True)
    (dest / "host-etc").mkdir(exist_ok=True)
    (dest / "host-etc" / "os-release").write_text(os_release(openshift))
    return dest


class Operator(Judge):
    """The GPU operator running against `plane` (its admin kubeconfig) in NAMESPACE, on a node of
    OpenShift `openshift` (x.y), with its log in the plane's directory. A context manager: stopped
    on exit. It runs chrooted in its own root (_root), in a mount namespace of its own."""

    what = "gpu-operator"

    def __init__(self, plane, openshift: str, namespace: str = NAMESPACE):
        super().__init__(plane)
        self.openshift, self.namespace = openshift, namespace

    def commands(self):
        root = _root(self.plane.dir / "gpu-operator-root", self.openshift)
        shutil.copy2(self.plane.kubeconfig, root / "kubeconfig")
        script = 'mount -t proc proc "$0/proc" 2>/dev/null; exec chroot "$0" "$@"'
        cmd = ["unshare", "--mount", "--propagation", "private"]
        if os.getuid() != 0:
            cmd += ["--user", "--map-root-user"]
        cmd += ["--", "sh", "-c", script, str(root), "/gpu-operator",
                "--metrics-bind-address=0", "--health-probe-bind-address=0"]
        env = dict(olm_env(), KUBECONFIG="/kubeconfig", OPERATOR_NAMESPACE=self.namespace, HOME="/", USER="root",
                   PATH=os.environ.get("PATH", "/usr/bin:/bin"))
        return {"gpu-operator": (cmd, env)}


if __name__ == "__main__":
    # make build: the binary the GPU tests run, built before them (they run with no route off the machine)
    import sys

    if sys.argv[1:] != ["build"]:
        raise SystemExit("usage: python hack/gpu_operator.py build")
    print(build())
