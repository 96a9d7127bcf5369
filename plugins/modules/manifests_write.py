#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: manifests_write
short_description: Write Kubernetes objects to a directory for GitOps, one file per object
version_added: 0.1.0
description:
  - Writes each object of O(objects) to its own YAML file in O(dest), and a
    C(kustomization.yaml) that lists them in apply order, for Argo CD or Flux.
  - Each object carries Argo CD's C(argocd.argoproj.io/sync-wave) annotation by its apply phase
    (CRDs -2, Namespaces -1, the rest 0, admission webhooks and API services 1, admission policy
    bindings 2), and none of kfocp's own C(kfocp.io/*) markers.
  - With O(instance), each object is labelled as that kfocp instance's, as the apply modules
    label what they apply, so that status, verify and uninstall know it.
  - Files that an earlier run wrote and this run does not are removed. A directory that holds
    files kfocp did not write is refused.
  - Reports C(changed) only when a file's content changes; check mode reports without writing,
    diff mode lists the files.
author: kfocp contributors (@kfocp)
options:
  dest:
    description: The directory to write to; created when missing.
    type: path
    required: true
  objects:
    description: The objects to write.
    type: list
    elements: dict
    required: true
  instance:
    description:
      - The kfocp instance the objects are labelled as (C(kfocp.io/instance)). Give the GitOps
        render an instance of its own, since an operator or playbook run with the same instance
        would prune the objects as its own.
    type: str
  set:
    description: The set the objects are labelled as (C(kfocp.io/set)), with O(instance).
    type: str
"""

EXAMPLES = r"""
- name: Write the rendered components for Argo CD
  kfocp.kubeflow.manifests_write:
    dest: /srv/gitops/kubeflow
    objects: "{{ objects }}"
"""

RETURN = r"""
written:
  description: The files written (or that would be, in check mode).
  returned: always
  type: list
  elements: str
  sample: [deployment_apps_kubeflow_ml-pipeline.yaml, kustomization.yaml]
removed:
  description: The files removed because their object is no longer rendered.
  returned: always
  type: list
  elements: str
files:
  description: How many object files the directory holds.
  returned: always
  type: int
  sample: 1200
"""

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.kfocp.kubeflow.plugins.module_utils.kustomize import HAS_YAML, SourceError, write


def main():
    module = AnsibleModule(argument_spec={
        "dest": {"type": "path", "required": True},
        "objects": {"type": "list", "elements": "dict", "required": True},
        "instance": {"type": "str"},
        "set": {"type": "str"},
    }, supports_check_mode=True)
    if not HAS_YAML:
        module.fail_json(msg=missing_required_lib("PyYAML"))
    try:
        written, removed = write(module.params["dest"], module.params["objects"], module.check_mode,
                                 module.params["instance"], module.params["set"])
    except (SourceError, OSError) as err:
        module.fail_json(msg=str(err))
    result = {"changed": bool(written or removed), "written": written, "removed": removed,
              "files": len(module.params["objects"])}
    if module._diff and (written or removed):
        result["diff"] = {"before": "".join("%s\n" % n for n in sorted(removed)),
                          "after": "".join("%s\n" % n for n in sorted(written))}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
