#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: tenancy
short_description: Build the profiles' or their namespaces' objects from the live cluster and apply them
version_added: 0.1.0
description:
  - Reads what the profiles or namespace_policies builder needs (Users, Groups, Profiles, profile
    Namespaces, ServiceAccounts, the member roll), builds the desired objects and applies them as
    M(kfocp.kubeflow.apply) does, all in the module's own process.
  - It is what the C(profiles) and C(namespace_policies) roles run. The same objects can be built
    in a playbook with the C(kfocp.kubeflow.profiles_objects) and
    C(kfocp.kubeflow.namespace_policies_objects) filters, but thousands of live and desired
    objects passed through Ansible variables cost more than the apply itself.
author: kfocp contributors (@kfocp)
extends_documentation_fragment:
  - kfocp.kubeflow.auth
  - kfocp.kubeflow.engine
  - kfocp.kubeflow.prune_guard
options:
  build:
    description:
      - C(profiles) - the Profiles, declared and one per OpenShift User (from Users, Groups and
        the live Profiles).
      - C(profiles_access) - the contributor RoleBindings and AuthorizationPolicies in the profile
        namespaces that exist.
      - C(namespace_policies) - the policies of every profile namespace and the GPU tolerations
        whitelist of the other namespaces.
      - Required unless O(steps) is given.
    type: str
    choices: [profiles, profiles_access, namespace_policies]
  steps:
    description:
      - Several builds applied in one run, one after the other, instead of O(build), O(set),
        O(prune) and O(wait); each step gives its own. The run stops at the first step that fails.
      - One task for several sets saves a module start and the transfer of O(settings) per set;
        the C(profiles) role applies its Profiles and their contributor access this way.
    type: list
    elements: dict
    suboptions:
      build:
        description: What to build, as O(build).
        type: str
        required: true
        choices: [profiles, profiles_access, namespace_policies]
      set:
        description: The set, as O(set).
        type: str
        required: true
      prune:
        description: As O(prune).
        type: bool
        default: false
      wait:
        description: As O(wait).
        type: int
        default: 0
  settings:
    description: The builder's settings, the role's variables under their own names (the roles' C(vars/main.yml)).
    type: dict
    required: true
  state:
    description: C(present) builds and applies; C(absent) deletes everything this O(instance) owns in O(set).
    type: str
    choices: [present, absent]
    default: present
  prune:
    description:
      - Delete objects of this O(instance) and O(set) that are no longer desired.
      - They are looked for among the kinds the build can make (Profiles; RoleBindings and
        AuthorizationPolicies; the namespace policies' kinds), not in every served kind. O(state=absent)
        looks in every served kind.
    type: bool
    default: false
  wait:
    description:
      - With O(build=profiles_access), seconds to wait for the profile controller to create the
        namespaces of new profiles; the module fails, naming them, when some are still missing.
        C(0) applies the access of the namespaces that exist and reports the others in RV(pending).
    type: int
    default: 0
  report:
    description: Which objects to list in RV(objects) - C(changed) ones, or C(all).
    type: str
    choices: [changed, all]
    default: changed
notes:
  - Check mode sends every change as a server-side dry run; diff mode returns the before and after of every changed object.
"""

EXAMPLES = r"""
- name: Apply the policies of every profile namespace and remove those of namespaces that are gone
  kfocp.kubeflow.tenancy:
    build: namespace_policies
    settings: "{{ __namespace_policies_settings }}"
    set: namespace-policies
    prune: true

- name: Apply the Profiles, then the contributor access in their namespaces
  kfocp.kubeflow.tenancy:
    settings: "{{ __profiles_settings }}"
    steps:
      - build: profiles
        set: profiles
      - build: profiles_access
        set: profiles-access
        prune: true
"""

RETURN = r"""
summary:
  description: How many objects were created, updated, unchanged, deleted, released, skipped, failed, or in conflict.
  returned: always
  type: dict
  sample: {created: 2, updated: 0, unchanged: 40, deleted: 1, released: 0, skipped: 0, failed: 0, conflict: 0}
objects:
  description: One entry per object that was not unchanged (all of them with O(report=all)).
  returned: always
  type: list
  elements: dict
  sample: [{apiVersion: kubeflow.org/v1, kind: Profile, name: team-a, action: created}]
orphans:
  description: With O(build=profiles), the Profiles this instance made that are no longer desired and were kept (O(prune=false)).
  returned: with O(build=profiles) and O(state=present)
  type: list
  elements: str
pending:
  description: With O(build=profiles_access), the desired profiles whose namespace does not exist yet.
  returned: with O(build=profiles_access) and O(state=present)
  type: list
  elements: str
steps:
  description: With O(steps), each step's build, set, whether it changed anything, and its summary.
  returned: with O(steps)
  type: list
  elements: dict
  sample: [{build: profiles, set: profiles, changed: false, summary: {unchanged: 2}}]
timing:
  description: >-
    Seconds spent in each stage of the run, to see where a slow run goes: reading its inputs and
    building the objects (with O(build) or O(steps)), planning (checks and digests), reading the
    live objects, comparing and writing, waiting for CRDs, and pruning.
  returned: with O(state=present)
  type: dict
  sample: {build: 0.41, plan: 0.22, read: 0.35, compare and write: 0.12, prune: 0.3}
pod_security_left_alone:
  description:
    - With O(build=namespace_policies), the profile namespaces whose Pod Security labels another field manager
      set to another level, left as they are, each with those labels and their manager.
  returned: with O(build=namespace_policies), when there are any
  type: list
  elements: str
api_warnings:
  description: Warnings the API server returned (deprecated APIs, unknown fields).
  returned: when there were any
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kfocp.kubeflow.plugins.module_utils.args import (
    AUTH_ARGS, ENGINE_ARGS, SET_ARGS, argspec, auth_params)
from ansible_collections.kfocp.kubeflow.plugins.module_utils.runner import run_engine, run_steps
from ansible_collections.kfocp.kubeflow.plugins.module_utils.tenancy import BUILDS, KINDS


def main():
    spec = argspec(AUTH_ARGS, ENGINE_ARGS, SET_ARGS, {
        "build": {"type": "str", "choices": sorted(BUILDS)},
        "steps": {"type": "list", "elements": "dict", "options": {
            "build": {"type": "str", "required": True, "choices": sorted(BUILDS)},
            "set": {"type": "str", "required": True},
            "prune": {"type": "bool", "default": False},
            "wait": {"type": "int", "default": 0},
        }},
        "settings": {"type": "dict", "required": True},
        "wait": {"type": "int", "default": 0},
    })
    module = AnsibleModule(argument_spec=spec, supports_check_mode=True, required_one_of=[("build", "steps")],
                           mutually_exclusive=[("build", "steps")])
    if module.params["steps"]:
        result, error = run_steps(module.params, auth_params(module.params), module.params["steps"],
                                  module.check_mode, module._diff, builds=BUILDS, no_log_values=module.no_log_values,
                                  kinds=KINDS)
    else:
        result, error = run_engine(module.params, auth_params(module.params), module.check_mode, module._diff,
                                   build=BUILDS[module.params["build"]], no_log_values=module.no_log_values,
                                   prune_kinds=KINDS[module.params["build"]])
    if error:
        module.fail_json(msg=error, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
