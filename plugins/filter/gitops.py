# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for playbooks/render.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import gitops
from ansible_collections.kfocp.kubeflow.plugins.plugin_utils.filters import as_filter as _wrap


def gitops_applicationset(hosts, hostvars, repo_url, revision="HEAD", namespace="argocd", project="default"):
    """The Argo CD ApplicationSet that syncs each host's render directory to its cluster."""
    return gitops.applicationset(list(hosts), hostvars, repo_url, revision, namespace, project)


class FilterModule(object):
    def filters(self):
        return {"gitops_applicationset": _wrap(gitops_applicationset)}
