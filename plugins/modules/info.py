#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: info
short_description: Read Kubernetes objects of one kind
version_added: 0.1.0
description:
  - Reads the object named O(name), or the objects of a kind that O(label_selectors) and
    O(field_selectors) match, in one namespace or in all of them.
  - Takes the options of C(kubernetes.core.k8s_info) that this collection reads with, and returns
    what that module returns for them (RV(resources), RV(api_found)), so a task can use either.
    It uses the collection's own client, without the C(kubernetes) package, and a run takes about half
    the CPU time of C(kubernetes.core.k8s_info)'s, which counts in the waits that read again and again.
author: kfocp contributors (@kfocp)
extends_documentation_fragment:
  - kfocp.kubeflow.auth
  - kfocp.kubeflow.group_defaults
options:
  api_version:
    description: The apiVersion of the kind, for example V(v1) or V(operators.coreos.com/v1alpha1).
    type: str
    default: v1
  kind:
    description: The kind, for example V(Secret).
    type: str
    required: true
  name:
    description: The name of the one object to read. Without it, every object the selectors match.
    type: str
  namespace:
    description: The namespace to read in. Without it, every namespace (for a namespaced kind).
    type: str
  label_selectors:
    description: Label selectors, all of which an object matches (for example V(app=x), V(!olm.copiedFrom)).
    type: list
    elements: str
    default: []
  field_selectors:
    description: Field selectors, all of which an object matches (for example V(status.phase=Running)).
    type: list
    elements: str
    default: []
notes:
  - Reads only; check mode reads as well.
"""

EXAMPLES = r"""
- name: Read the cluster's OpenShift version
  kfocp.kubeflow.info:
    api_version: config.openshift.io/v1
    kind: ClusterVersion
    name: version
  register: cluster_version

- name: Read the operators OLM has installed, not their copies
  kfocp.kubeflow.info:
    api_version: operators.coreos.com/v1alpha1
    kind: ClusterServiceVersion
    label_selectors:
      - "!olm.copiedFrom"
  register: csvs
"""

RETURN = r"""
resources:
  description: The objects found, as the API server returned them; empty when none is.
  returned: success
  type: list
  elements: dict
api_found:
  description: Whether the API server serves the kind. When it does not, RV(resources) is empty.
  returned: success
  type: bool
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kfocp.kubeflow.plugins.module_utils.args import (AUTH_ARGS, GROUP_DEFAULTS_ARGS, argspec,
                                                                          auth_params)
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client, KubeError


def main():
    spec = argspec(AUTH_ARGS, GROUP_DEFAULTS_ARGS, {
        "api_version": {"type": "str", "default": "v1"},
        "kind": {"type": "str", "required": True},
        "name": {"type": "str"},
        "namespace": {"type": "str"},
        "label_selectors": {"type": "list", "elements": "str", "default": []},
        "field_selectors": {"type": "list", "elements": "str", "default": []},
    })
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    params = module.params
    try:
        api_found, resources = Client.from_params(auth_params(params)).find(
            params["api_version"], params["kind"], params["name"], params["namespace"],
            ",".join(params["label_selectors"]) or None, ",".join(params["field_selectors"]) or None)
    except KubeError as err:
        module.fail_json(msg=str(err), changed=False)
    module.exit_json(changed=False, resources=resources, api_found=api_found)


if __name__ == "__main__":
    main()
