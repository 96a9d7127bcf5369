# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """Where a manifests tree comes from and how it is rendered (module_utils/args.py RENDER_ARGS)."""
    DOCUMENTATION = r"""
options:
  source:
    description: Where the manifests tree comes from.
    type: str
    choices: [git, dir, tarball]
    default: dir
  git_url:
    description: The repository to clone with O(source=git). C(file://) URLs work too.
    type: str
  git_ref:
    description: The branch, tag or commit to check out with O(source=git).
    type: str
    default: HEAD
  dir:
    description: The tree's directory with O(source=dir).
    type: path
  tarball:
    description:
      - A tar archive (optionally compressed) of the tree with O(source=tarball), for air-gapped
        sites. When it holds one top-level directory, that directory is the tree's root.
    type: path
  subdir:
    description: A directory inside the source that is the tree's root.
    type: str
  kubectl:
    description:
      - The kubectl that renders (C(kubectl kustomize)). Default - kubectl on PATH, else the one the
        local control plane built under C(~/.cache/kfocp/bin/<version>/).
    type: path
  remote_bases:
    description:
      - Local mirrors of remote kustomize bases, for air-gapped sites - each URL prefix (such as
        C(https://github.com/kubeflow/pipelines)) mapped to a local clone of that repository at the
        ref the manifests name. The rest of the URL's path is taken inside the clone.
      - A remote base that no prefix matches fails the task before anything is built, naming each.
    type: dict
    default: {}
  timeout:
    description: Seconds allowed for the clone and for each build.
    type: int
    default: 600
"""
