#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: manifests_build
short_description: Render kustomize components of a manifests tree into object lists
version_added: 0.1.0
description:
  - Fetches a kustomize manifests tree (such as kubeflow/manifests) from a git repository at a
    ref, from a local directory, or from a tarball, and renders each component's paths with
    C(kubectl kustomize) (kustomize v5, built into kubectl).
  - Returns the rendered objects per component in one result, so that manifests of thousands
    of objects never go through one task per object.
  - Reads only; it never reports C(changed) and runs the same in check mode.
author: kfocp contributors (@kfocp)
extends_documentation_fragment:
  - kfocp.kubeflow.render
options:
  components:
    description:
      - The components to render, each name mapped to its list of kustomize paths relative to
        the tree's root (see EXAMPLES).
    type: dict
    required: true
  adapt:
    description:
      - Adapt the rendered objects for OpenShift in the same run, with these options (those of the
        P(kfocp.kubeflow.components_assemble#filter) filter - namespace, api_versions, scc, pod_security,
        sidecar, mirror, virtualservice, metadata_envoy, argo, principals, mesh_membership, take_over, render),
        and return what that filter returns as RV(assembled) instead of RV(components).
      - An upstream-sized render (hundreds of objects, megabytes of JSON) then goes through Ansible's
        variables once instead of twice.
    type: dict
notes:
  - A component whose path has no kustomization, a kustomize build error (with kustomize's own
    message) and malformed YAML (with the file's path in the tree) fail the task, naming the
    component.
"""

EXAMPLES = r"""
- name: Render Kubeflow Pipelines and Katib from kubeflow/manifests v1.10.2
  kfocp.kubeflow.manifests_build:
    source: git
    git_url: https://github.com/kubeflow/manifests.git
    git_ref: v1.10.2
    components:
      pipelines: [applications/pipeline/upstream/env/cert-manager/platform-agnostic-multi-user]
      katib: [applications/katib/upstream/installs/katib-with-kubeflow]
  register: rendered
"""

RETURN = r"""
components:
  description: The rendered objects of each component.
  returned: success, without O(adapt)
  type: dict
  sample: {katib: [{apiVersion: v1, kind: ServiceAccount, metadata: {name: katib-controller, namespace: kubeflow}}]}
assembled:
  description:
    - With O(adapt), the adapted objects to apply or write (C(objects)), the SCC grants and their audit
      table (C(grants), C(audit)), each namespace's Pod Security Standards level and its table
      (C(pod_security), C(pod_security_table)), and the images to mirror (C(mirror), C(mirror_lines), C(unmatched_images),
      C(mirror_warnings)), as the P(kfocp.kubeflow.components_assemble#filter) filter returns them.
  returned: success, with O(adapt)
  type: dict
counts:
  description: How many objects each component rendered.
  returned: success
  type: dict
  sample: {katib: 42, pipelines: 180}
source:
  description: The source that was rendered (type, url, ref and commit, or path) and the kubectl used.
  returned: success
  type: dict
  sample: {type: git, url: https://github.com/kubeflow/manifests.git, ref: v1.10.2, commit: 0123abcd}
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.kfocp.kubeflow.plugins.module_utils.args import RENDER_ARGS, argspec
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import manifests
from ansible_collections.kfocp.kubeflow.plugins.module_utils.kustomize import HAS_YAML, SourceError, build
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError


def main():
    module = AnsibleModule(argument_spec=argspec(RENDER_ARGS, {
        "components": {"type": "dict", "required": True},
        "adapt": {"type": "dict"},
    }), supports_check_mode=True)
    if not HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML"))
    try:
        rendered, info = build(module.params)
    except SourceError as err:
        module.fail_json(msg=str(err))
    counts = dict((name, len(objs)) for name, objs in rendered.items())
    if module.params["adapt"] is None:
        module.exit_json(changed=False, components=rendered, source=info, counts=counts)
    try:
        assembled = manifests.assemble(rendered, module.params["adapt"])
    except DefinitionError as err:
        module.fail_json(msg=str(err), source=info, counts=counts)
    if assembled["unmatched_images"]:
        module.warn(manifests.unmatched_warning(assembled))
    module.exit_json(changed=False, assembled=assembled, source=info, counts=counts)


if __name__ == "__main__":
    main()
