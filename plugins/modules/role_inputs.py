#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
module: role_inputs
short_description: Check a role's variables against its argument specs
version_added: 0.1.0
description:
  - Checks the variables of one of this collection's roles against an entry point of the role's
    C(meta/argument_specs.yml), with the checks and the messages of M(ansible.builtin.validate_argument_spec),
    the check a role makes when it starts.
  - Values are checked as plain data, and only those holding a template are rendered first. At
    thousands of declared profiles this takes a fraction of the time of the check a role makes
    when it starts, which copies every value as Ansible hands it over.
  - Each role's C(tasks/validate.yml) runs it first; the pre-flight of C(playbooks/site.yml) and
    C(playbooks/profiles.yml) includes those files with C(rolespec_validate=false).
  - It runs on the controller and sends nothing to the host, in check mode as in any other run.
author: kfocp contributors (@kfocp)
options:
  role:
    description: The role of this collection whose variables are checked, for example V(profiles).
    type: str
    required: true
  entry_point:
    description: The entry point of the role's argument specs to check against.
    type: str
    default: validate
"""

EXAMPLES = r"""
- name: Check the profiles role's variables before the first change
  kfocp.kubeflow.role_inputs:
    role: profiles
"""

RETURN = r"""
argument_errors:
  description: Each variable that does not pass, with what is wrong with it.
  returned: when a variable does not pass
  type: list
  elements: str
"""
