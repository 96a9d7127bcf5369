"""The fleet's GitOps render against Argo CD v3.6.1 (github.com/argoproj/argo-cd/v3 and its
gitops-engine, from the Go module cache at the versions tests/upstream/argocd/go.sum pins): what
Argo CD leaves out of its watch by default, and how an automated sync prunes. The live behaviour is
tests/integration/test_fleet.py's."""
import gzip
import re

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import gitops
from gomod import require_module
from helpers import ROOT

ARGO_CD = ("github.com/argoproj/argo-cd/v3", "v3.6.1")
GITOPS_ENGINE = ("github.com/argoproj/argo-cd/gitops-engine/v3", "v3.6.1")
RENDERS = sorted((ROOT.parent / "shared" / "upstream").glob("example-render-*.yaml.gz"))


def _excluded(argo):
    """[(api groups, kinds)] Argo CD excludes by default: resources_filter.go's core list and the
    base argocd-cm's resource.exclusions ([] kinds: every kind of the groups)."""
    filters = (argo / "util" / "settings" / "resources_filter.go").read_text()
    core = re.search(r"var coreExcludedResources = \[\]FilteredResource\{(.*?)\n\}", filters, re.S).group(1)
    out = []
    for entry in re.findall(r"\{(APIGroups:.*?)\},?\n", core):
        groups = re.findall(r'"([^"]*)"', re.search(r"APIGroups: \[\]string\{([^}]*)\}", entry).group(1))
        kinds = re.search(r"Kinds: \[\]string\{([^}]*)\}", entry)
        out.append((groups, re.findall(r'"([^"]*)"', kinds.group(1)) if kinds else []))
    config = yaml.safe_load((argo / "manifests" / "base" / "config" / "argocd-cm.yaml").read_text())
    for entry in yaml.safe_load(config["data"]["resource.exclusions"]):
        out.append((entry.get("apiGroups") or [], entry.get("kinds") or []))
    return out


def _kinds_kfocp_writes():
    """(group, kind) of every object the render may write: the kinds kfocp's builders make, and
    those of upstream's Kubeflow renders, which the components role applies."""
    found = set()
    for path in (ROOT / "plugins" / "module_utils").rglob("*.py"):
        text = path.read_text()
        for api_version, kind in re.findall(r'"apiVersion": "([^"]+)", "kind": "(\w+)"', text):
            found.add((api_version.rpartition("/")[0], kind))
    for render in RENDERS:
        for doc in re.split(r"^---", gzip.open(render, "rt").read(), flags=re.M):
            api_version, kind = re.search(r"^apiVersion: (\S+)", doc, re.M), re.search(r"^kind: (\w+)", doc, re.M)
            if api_version and kind:
                found.add((api_version.group(1).strip("'\"").rpartition("/")[0], kind.group(1)))
    # verify.yml asks SubjectAccessReviews of the API server; they are never written for GitOps
    found.discard(("authorization.k8s.io", "SubjectAccessReview"))
    return found


def test_argo_cds_default_exclusions_cover_no_kind_kfocp_writes():
    argo = require_module(pytest, *ARGO_CD)
    excluded = _excluded(argo)
    assert (["coordination.k8s.io"], ["Lease"]) in excluded and (["", "discovery.k8s.io"], ["Endpoints", "EndpointSlice"]) \
        in excluded
    kinds = _kinds_kfocp_writes()
    assert ("apiextensions.k8s.io", "CustomResourceDefinition") in kinds and len(kinds) > 40
    hidden = sorted((group, kind) for group, kind in kinds for groups, names in excluded
                    if group in groups and (not names or kind in names))
    assert hidden == []


def test_the_applicationset_syncs_automatically_prunes_and_heals_in_reverse_wave_order():
    """types.go SyncPolicyAutomated: `prune`, `selfHeal`; gitops-engine sync_context.go prunes in the
    reverse of the sync waves (so kfocp's CRDs, wave -2, and Namespaces, -1, go last)."""
    types = (require_module(pytest, *ARGO_CD) / "pkg" / "apis" / "application" / "v1alpha1" / "types.go").read_text()
    body = re.search(r"^type SyncPolicyAutomated struct \{(.*?)^\}", types, re.M | re.S).group(1)
    fields = set(re.findall(r'json:"(\w+)', body))
    sync = (require_module(pytest, *GITOPS_ENGINE) / "pkg" / "sync" / "sync_context.go").read_text()
    assert "for prune tasks, modify the waves for proper cleanup i.e reverse of sync wave" in sync
    assert re.search(r"startWave := uniquePruneWaves\[i\]\s+endWave := uniquePruneWaves\[n-1-i\]", sync)
    appset = gitops.applicationset(["east"], {"east": {}}, "https://git.example.com/fleet.git", "main")
    automated = appset["spec"]["template"]["spec"]["syncPolicy"]["automated"]
    assert automated == {"prune": True, "selfHeal": True} and set(automated) <= fields
