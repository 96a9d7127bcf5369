# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet's Argo CD ApplicationSet (playbooks/render.yml): one Application per cluster, which
syncs the cluster's render directory to it.

Argo CD contracts (argo-cd v3.6.1, cited in docs/contracts.md):
- an explicit `directory` source is read as plain manifests even where a kustomization.yaml is
  (pkg/apis/application/v1alpha1/types.go ExplicitType); `exclude` is a glob over the file's path
  relative to the application's path, `*` crossing `/` (reposerver/repository/repository.go,
  util/glob/glob.go), so '*kustomization.yaml' leaves out the kustomizations kfocp writes for Flux;
- `ServerSideApply=true`: the Kubeflow CRDs of hundreds of KB do not fit the last-applied
  annotation of a client-side apply;
- ApplicationSet `goTemplate` with `missingkey=error`: a missing element key fails the generator.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import dns_label, require

IN_CLUSTER = "https://kubernetes.default.svc"
EXCLUDE = "*kustomization.yaml"


def applicationset(hosts, hostvars, repo_url, revision="HEAD", namespace="argocd", project="default"):
    """The ApplicationSet for the inventory hosts `hosts` (one per cluster), each synced from the
    directory named as the host to the server of its `kfocp_gitops_server` (the cluster's URL as
    Argo CD knows it; default the cluster Argo CD runs in)."""
    require(isinstance(hosts, list) and hosts, "hosts", "must be a non-empty list of inventory hosts",
            "Run playbooks/render.yml with at least one host")
    require(isinstance(repo_url, str) and repo_url, "kfocp_gitops_repo_url", "must be a repository URL",
            "Give the URL Argo CD reads the render's repository from")
    elements = []
    for host in hosts:
        dns_label(host, "inventory host (it names the cluster's directory and Application)")
        server = (hostvars.get(host) or {}).get("kfocp_gitops_server") or IN_CLUSTER
        elements.append({"cluster": host, "server": server})
    return {
        "apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet",
        "metadata": {"name": "kfocp", "namespace": namespace,
                     "labels": {"app.kubernetes.io/part-of": "kfocp"}},
        "spec": {
            "goTemplate": True, "goTemplateOptions": ["missingkey=error"],
            "generators": [{"list": {"elements": elements}}],
            "template": {
                "metadata": {"name": "kfocp-{{.cluster}}"},
                "spec": {
                    "project": project,
                    "source": {"repoURL": repo_url, "targetRevision": revision, "path": "{{.cluster}}",
                               "directory": {"recurse": True, "exclude": EXCLUDE}},
                    "destination": {"server": "{{.server}}"},
                    "syncPolicy": {"automated": {"prune": True, "selfHeal": True},
                                   "syncOptions": ["ServerSideApply=true"]},
                }}}}
