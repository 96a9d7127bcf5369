#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: manifests_apply
short_description: Render kustomize components, adapt them for OpenShift and apply them in one run
version_added: 0.1.0
description:
  - Does in one module run what P(kfocp.kubeflow.manifests_build#module) with O(adapt) and
    P(kfocp.kubeflow.apply#module) do in two - renders the components of a manifests tree with
    C(kubectl kustomize), adapts the objects for OpenShift, and applies them (CRDs first,
    concurrently, in phases), pruning with O(prune) what the O(set) no longer renders.
  - An upstream-sized render (hundreds of objects, megabytes of JSON) then goes through none of
    Ansible's variables, and the reads prune needs are made while kustomize renders.
  - The render options are those of P(kfocp.kubeflow.manifests_build#module); the apply options,
    ownership rules and results those of P(kfocp.kubeflow.apply#module). A render that fails (a
    missing path, a kustomize error, an adapt option that is wrong) fails the task before any
    change.
  - With O(state=absent), nothing is rendered - everything this O(instance) owns in O(set) is
    deleted, as P(kfocp.kubeflow.apply#module) does with no definitions.
author: kfocp contributors (@kfocp)
extends_documentation_fragment:
  - kfocp.kubeflow.render
  - kfocp.kubeflow.auth
  - kfocp.kubeflow.engine
  - kfocp.kubeflow.prune_guard
options:
  components:
    description:
      - The components to render, each name mapped to its list of kustomize paths relative to
        the tree's root. With none, nothing is applied (and O(prune) removes what the set has).
    type: dict
    default: {}
  adapt:
    description:
      - How to adapt the rendered objects for OpenShift, the options of the
        P(kfocp.kubeflow.components_assemble#filter) filter.
    type: dict
    default: {}
  state:
    description: C(present) renders and applies, C(absent) deletes what the set owns.
    type: str
    choices: [present, absent]
    default: present
  prune:
    description: Delete objects of this O(instance) and O(set) that the render no longer holds.
    type: bool
    default: false
  release:
    description:
      - The Kubeflow release the components are of (a supported kubeflow/manifests tag). It is recorded in the
        ConfigMap C(kfocp-kubeflow-release) of the components' namespace, and before any change the release
        recorded there is read - going back to an older release, or past the next one, fails the task.
      - Without it, nothing is recorded or checked.
    type: str
    version_added: 0.1.0
  report:
    description: Which objects to list in RV(objects) - C(changed) ones, or C(all).
    type: str
    choices: [changed, all]
    default: changed
notes:
  - Check mode renders as usual and sends every change as a server-side dry run.
  - Diff mode returns the before and after of every changed object.
"""

EXAMPLES = r"""
- name: Render Katib from kubeflow/manifests, adapt it for OpenShift and apply it
  kfocp.kubeflow.manifests_apply:
    source: git
    git_url: https://github.com/kubeflow/manifests.git
    git_ref: v1.10.2
    components:
      katib: [applications/katib/upstream/installs/katib-with-kubeflow]
    adapt:
      namespace: kubeflow
      scc: {}
    set: components
    prune: true
"""

RETURN = r"""
summary:
  description:
    - How many objects were created, updated, unchanged, deleted, released, skipped, failed, or (in
      check mode) in conflict, as P(kfocp.kubeflow.apply#module) returns it.
  returned: always
  type: dict
  sample: {created: 2, updated: 0, unchanged: 40, deleted: 1, released: 0, skipped: 0, failed: 0, conflict: 0}
objects:
  description: One entry per object that was not unchanged (all of them with O(report=all)).
  returned: always
  type: list
  elements: dict
assembled:
  description:
    - What the P(kfocp.kubeflow.components_assemble#filter) filter returns but the objects - the SCC
      grants and their audit table (C(grants), C(audit)) and the images to mirror (C(mirror),
      C(mirror_lines), C(unmatched_images), C(mirror_warnings)).
  returned: when the components were rendered
  type: dict
timing:
  description: >-
    Seconds spent in each stage of the run, to see where a slow run goes: the render (kustomize and
    its output's parsing, while the API client starts and prune's first reads run), the OpenShift
    transforms (adapt), planning, reading the live objects, comparing and writing, waiting for CRDs,
    and pruning.
  returned: with O(state=present)
  type: dict
  sample: {render: 1.3, adapt: 0.2, plan: 0.1, read: 0.4, compare and write: 1.9, wait: 1.2, prune: 0.1}
counts:
  description: How many objects each component rendered.
  returned: when the components were rendered
  type: dict
  sample: {katib: 42}
upgrade:
  description: The upgrade this run made, as C(<installed release> -> <release>), when the release changed.
  returned: when the recorded release was an older one
  type: str
  sample: v1.10.2 -> v1.11.0
source:
  description: The source that was rendered, as P(kfocp.kubeflow.manifests_build#module) returns it.
  returned: when the components were rendered
  type: dict
api_warnings:
  description: Warnings the API server returned (deprecated APIs, unknown fields).
  returned: when there were any
  type: list
  elements: str
failures:
  description: Every object that failed, with why.
  returned: when there were any
  type: list
  elements: str
left_alone:
  description: The objects someone else created that were left as they are (skipped), with why.
  returned: when there were any
  type: list
  elements: str
adopted:
  description: The objects someone else created that this run took over.
  returned: when there were any
  type: list
  elements: str
"""


from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.kfocp.kubeflow.plugins.module_utils.args import (
    AUTH_ARGS, ENGINE_ARGS, RENDER_ARGS, SET_ARGS, argspec, auth_params)
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.manifests import unmatched_warning
from ansible_collections.kfocp.kubeflow.plugins.module_utils.components import Render
from ansible_collections.kfocp.kubeflow.plugins.module_utils.kustomize import HAS_YAML


def main():
    spec = argspec(AUTH_ARGS, ENGINE_ARGS, SET_ARGS, RENDER_ARGS, {
        "components": {"type": "dict", "default": {}},
        "adapt": {"type": "dict", "default": {}},
        "release": {"type": "str"},
    })
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    if not HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML"))
    rendering = Render(module.params) if module.params["state"] == "present" else None
    # imported now: the API client's import (the kubernetes package) and its connection are made
    # while kustomize renders
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.runner import run_engine  # pylint: disable=import-outside-toplevel
    result, error = run_engine(module.params, auth_params(module.params), module.check_mode, module._diff,
                               build=rendering.build if rendering else None, no_log_values=module.no_log_values,
                               prescan=True)
    assembled = result.get("assembled") or {}
    if assembled.get("unmatched_images"):
        module.warn(unmatched_warning(assembled))
    if error:
        module.fail_json(msg=error, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
