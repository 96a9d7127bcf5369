"""The go.mod files kfocp writes for its own builds hold the Kubernetes client libraries at
hack/kube's versions (README, "The local control plane"): the Go build cache keys a package by the
versions of everything below it, so one version of k8s.io/api, apimachinery and client-go is
compiled once for the control plane and these builds, where each version apart costs minutes of CPU
on a cold cache."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KUBE = ROOT / "hack" / "kube" / "go.mod"
ALIGNED = ("hack/kwok/go.mod", "hack/cyclonus/go.mod", "hack/cert-manager/go.mod",
           "operator/hack/validate-bundle/go.mod")
LIBRARIES = ("k8s.io/api", "k8s.io/apimachinery", "k8s.io/client-go")


def versions(text: str) -> dict:
    """{module: version} of a go.mod's require lines, with a replace's version in its place."""
    found = dict(re.findall(r"^\s*(?:require\s+)?(\S+)\s+(v\S+)(?:\s+//.*)?$", text, re.M))
    found.update((m, v) for m, v in re.findall(r"^\s*(?:replace\s+)?(\S+)\s+=>\s+\S+\s+(v\S+)\s*$", text, re.M))
    return found


def test_versions_reads_requires_and_replaces():
    text = ("require (\n\tk8s.io/api v0.36.1 // indirect\n\tk8s.io/client-go v0.36.1\n)\n"
            "replace k8s.io/api => k8s.io/api v0.36.4\n")
    assert versions(text) == {"k8s.io/api": "v0.36.4", "k8s.io/client-go": "v0.36.1"}


@pytest.mark.parametrize("gomod", ALIGNED)
def test_the_client_libraries_are_at_the_control_planes_versions(gomod):
    kube = versions(KUBE.read_text())
    mine = versions((ROOT / gomod).read_text())
    assert "k8s.io/apimachinery" in mine, f"{gomod} requires no k8s.io/apimachinery: is it still a Kubernetes client?"
    wrong = dict((lib, mine[lib]) for lib in LIBRARIES if lib in mine and mine[lib] != kube[lib])
    assert not wrong, (f"{gomod}: {wrong}, where hack/kube/go.mod has "
                       f"{dict((lib, kube[lib]) for lib in wrong)}; set them with `go mod edit -require` and `go mod tidy`")
