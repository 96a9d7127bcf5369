#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: apply
short_description: Apply, prune or delete a list of Kubernetes objects with server-side apply
version_added: 0.1.0
description:
  - Applies every object of O(definitions) in one task with server-side apply (field manager
    C(kfocp)), concurrently, in phases - CustomResourceDefinitions first, Namespaces, everything
    else, and admission webhook configurations last. The custom resources of the CRDs the run
    created or changed, and the webhooks, wait until those CRDs are Established (one watch).
  - One failed object does not stop the rest - every phase is applied as far as it can be, then
    the task fails with every failure and its object (RV(failures)). Prune runs only after an
    apply without failure.
  - Labels every object it creates with C(app.kubernetes.io/managed-by=kfocp),
    C(app.kubernetes.io/part-of=kfocp), C(kfocp.io/instance=<instance>) and C(kfocp.io/set=<set>).
  - Reports C(changed) exactly. An object whose desired state is unchanged since it was last
    applied, and whose fields still hold their values, costs no API request.
  - Never deletes or overwrites what it did not create. An object that exists without this
    instance's labels is an error unless O(adopt=true), or the desired object has the annotation
    C(kfocp.io/adopt=true) (never sent). An object an operator controls (a controller
    ownerReference, OLM's labels) is never taken over - it is skipped and reported. A field owned
    by another field manager is an error unless O(force=true).
  - An object with the annotation C(kfocp.io/ownership=shared) belongs to someone else. The
    module only adds its fields to it, never creates or deletes it, and gives its fields back
    when the object leaves the desired state or on O(state=absent).
author: kfocp contributors (@kfocp)
extends_documentation_fragment:
  - kfocp.kubeflow.auth
  - kfocp.kubeflow.engine
  - kfocp.kubeflow.prune_guard
options:
  definitions:
    description:
      - The desired objects. Each needs C(apiVersion), C(kind) and C(metadata.name), and
        C(metadata.namespace) when its kind is namespaced.
      - With O(state=absent), the objects to delete. When empty, everything this O(instance)
        owns in O(set) (or in every set, when O(set) is not given) is deleted.
    type: list
    elements: dict
    default: []
  state:
    description: C(present) applies, C(absent) deletes.
    type: str
    choices: [present, absent]
    default: present
  prune:
    description: Delete objects of this O(instance) and O(set) that are no longer in O(definitions).
    type: bool
    default: false
  prune_kinds:
    description:
      - Every kind this O(set) can hold, as C(Kind.group), or C(Kind) for the core group (for example
        C(RoleBinding.rbac.authorization.k8s.io), C(Namespace)).
      - With O(prune), the objects no longer desired are looked for in these kinds only, instead of in
        every kind the cluster serves (two LISTs of each; a few hundred kinds on OpenShift).
      - A definition of this O(set) of another kind fails the run before any change, so that no object
        is made where a later prune would not look for it.
      - O(state=absent) looks in every served kind whatever this option holds.
    type: list
    elements: str
  wait:
    description: With O(state=absent), wait until the deleted objects are gone.
    type: bool
    default: false
  report:
    description: Which objects to list in RV(objects) - C(changed) ones, or C(all).
    type: str
    choices: [changed, all]
    default: changed
  redact:
    description:
      - Secret values that O(definitions) carry (an OAuth client secret, a password). They, and
        their base64 forms as a Secret's C(data) holds them, are replaced by C(********) in
        everything the module returns - messages, RV(objects), diffs - so that the task needs no
        C(no_log) and a failure still says what failed.
      - Whatever this option holds, diffs never show a Secret's C(data) or C(stringData), nor an
        OAuthClient's C(secret), in the old state or the new; a field whose new value holds one of
        these values has its old value masked too. A changed secret shows as C(******** (changed)).
    type: list
    elements: str
    default: []
notes:
  - Check mode sends every change as a server-side dry run, so the API server still validates it.
  - Diff mode returns the before and after of every changed object.
"""

EXAMPLES = r"""
- name: Grant the anyuid SCC to a service account
  kfocp.kubeflow.apply:
    set: scc
    prune: true
    definitions:
      - apiVersion: rbac.authorization.k8s.io/v1
        kind: RoleBinding
        metadata:
          name: kfocp-scc-anyuid-istio-ingressgateway
          namespace: kubeflow-mesh
        roleRef:
          apiGroup: rbac.authorization.k8s.io
          kind: ClusterRole
          name: system:openshift:scc:anyuid
        subjects:
          - kind: ServiceAccount
            name: istio-ingressgateway
            namespace: kubeflow-mesh

- name: Remove everything the scc set created
  kfocp.kubeflow.apply:
    state: absent
    set: scc
"""

RETURN = r"""
summary:
  description: How many objects were created, updated, unchanged, deleted, released, skipped, failed, or (in check mode) in conflict with another field manager.
  returned: always
  type: dict
  sample: {created: 2, updated: 0, unchanged: 40, deleted: 1, released: 0, skipped: 0, failed: 0, conflict: 0}
objects:
  description: One entry per object that was not unchanged (all of them with O(report=all)).
  returned: always
  type: list
  elements: dict
  sample: [{apiVersion: v1, kind: Namespace, name: team-a, action: created}]
timing:
  description: >-
    Seconds spent in each stage of the run, to see where a slow run goes: planning (checks and
    digests), reading the live objects, comparing and writing, waiting for CRDs, and pruning.
  returned: with O(state=present)
  type: dict
  sample: {plan: 0.22, read: 0.35, compare and write: 0.12, prune: 0.3}
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
  sample: ["ConfigMap kubeflow/app-config: already exists and was created by someone else, ..."]
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

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.kfocp.kubeflow.plugins.module_utils.args import (
    AUTH_ARGS, ENGINE_ARGS, SET_ARGS, argspec, auth_params)
from ansible_collections.kfocp.kubeflow.plugins.module_utils.runner import redacted_forms, run_engine


def main():
    spec = argspec(AUTH_ARGS, ENGINE_ARGS, SET_ARGS, {
        "definitions": {"type": "list", "elements": "dict", "default": []},
        "wait": {"type": "bool", "default": False},
        "redact": {"type": "list", "elements": "str", "default": [], "no_log": True},
        "prune_kinds": {"type": "list", "elements": "str"},
    })
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True)
    # the values are masked as no_log options are; a Secret's data holds them base64-encoded
    module.no_log_values.update(redacted_forms(module.params["redact"]))
    result, error = run_engine(module.params, auth_params(module.params), module.check_mode, module._diff,
                               no_log_values=module.no_log_values)
    if error:
        module.fail_json(msg=error, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
