#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: cr_status
short_description: Set conditions, observedGeneration and status fields of a custom resource
version_added: 0.1.0
description:
  - Writes the status subresource of a custom resource, such as the C(Kubeflow) resource that
    drives a run of this collection under an operator.
  - Sets O(conditions) by type (C(Ready), C(Progressing), C(Degraded), ...), keeping a
    condition's C(lastTransitionTime) while its status does not change, and keeping conditions
    of other types. Sets C(observedGeneration) and the top-level status fields of O(status).
  - Sends only what changes, as a JSON merge patch guarded by the resourceVersion it read, and
    reports C(changed) only when the status changed. On a conflict it reads again and retries.
author: kfocp contributors (@kfocp)
extends_documentation_fragment:
  - kfocp.kubeflow.auth
  - kfocp.kubeflow.group_defaults
options:
  api_version:
    description: The apiVersion of the resource.
    type: str
    default: kfocp.io/v1alpha1
  kind:
    description: The kind of the resource.
    type: str
    default: Kubeflow
  name:
    description: The name of the resource.
    type: str
    required: true
  namespace:
    description: The namespace of the resource, when its kind is namespaced.
    type: str
  conditions:
    description:
      - The conditions to set, each with C(type) (for example C(Ready)), C(status) (V(True),
        V(False) or V(Unknown)), a CamelCase C(reason) (for example C(Converged)) and an optional
        C(message).
      - Conditions of other types are left as they are.
    type: list
    elements: dict
    default: []
  observed_generation:
    description:
      - The generation of the resource this status describes, kept in C(status.observedGeneration)
        and in each condition set by this call.
    type: int
  status:
    description:
      - Other status fields, by top-level key (for example C(components)). Each key given replaces
        that key; keys not given are left as they are.
    type: dict
    default: {}
  field_manager:
    description: The field manager recorded for the status update.
    type: str
    default: kfocp
notes:
  - Check mode sends the update as a server-side dry run.
  - Diff mode returns the status before and after.
"""

EXAMPLES = r"""
- name: Report the converged state on the Kubeflow resource that drives this run
  kfocp.kubeflow.cr_status:
    name: "{{ ansible_operator_meta.name }}"
    namespace: "{{ ansible_operator_meta.namespace | default(omit, true) }}"
    observed_generation: "{{ _kfocp_io_kubeflow.metadata.generation }}"
    conditions:
      - type: Ready
        status: 'True'
        reason: Converged
        message: Every component is applied
      - type: Degraded
        status: 'False'
        reason: Converged
    status:
      components:
        scc: {state: Ready}
"""

RETURN = r"""
status:
  description: The status after the update (as the API server returned it).
  returned: success
  type: dict
  sample: {observedGeneration: 2, conditions: [{type: Ready, status: 'True', reason: Converged}]}
patch:
  description: The merge patch sent to the status subresource; empty when nothing changed.
  returned: success
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kfocp.kubeflow.plugins.module_utils.args import (AUTH_ARGS, GROUP_DEFAULTS_ARGS, argspec,
                                                                          auth_params)
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client, KubeError
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError
from ansible_collections.kfocp.kubeflow.plugins.module_utils.status import StatusError, StatusWriter


def main():
    spec = argspec(AUTH_ARGS, GROUP_DEFAULTS_ARGS, {
        "api_version": {"type": "str", "default": "kfocp.io/v1alpha1"},
        "kind": {"type": "str", "default": "Kubeflow"},
        "name": {"type": "str", "required": True},
        "namespace": {"type": "str"},
        "conditions": {"type": "list", "elements": "dict", "default": []},
        "observed_generation": {"type": "int"},
        "status": {"type": "dict", "default": {}},
        "field_manager": {"type": "str", "default": "kfocp"},
    })
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    params = module.params
    try:
        writer = StatusWriter(Client.from_params(auth_params(params)), params["api_version"], params["kind"],
                              params["name"], params["namespace"], params["field_manager"])
        out = writer.update(params["conditions"], params["status"], params["observed_generation"],
                            check_mode=module.check_mode)
    except (DefinitionError, StatusError, KubeError) as err:
        module.fail_json(msg=str(err), changed=False)
    result = {"changed": out["changed"], "status": out["status"], "patch": out["patch"]}
    if module._diff and out["changed"]:
        result["diff"] = {"before": {"status": out["before"]}, "after": {"status": out["status"]}}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
