# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action of kfocp.kubeflow.role_inputs: a role's variables checked against one entry point of
its argument specs, with the checks and messages of ansible.builtin.validate_argument_spec (the
check a role makes when it starts), on plain copies of the values.

ansible-core's action templates every value and deep-copies it as Ansible hands it over, each
string carrying its origin: at 2000 declared profiles that is a second of the pre-flight, where
the checks themselves take a tenth of it. Here a value with no template in it is copied as plain
data and only values with a template are rendered."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import plain
from ansible_collections.kfocp.kubeflow.plugins.plugin_utils.inputs import has_template

ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "roles")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        task_vars = task_vars or {}
        role, entry_point = self._task.args.get("role"), self._task.args.get("entry_point") or "validate"
        path = os.path.join(ROLES, str(role), "meta", "argument_specs.yml")
        if not os.path.isfile(path):
            raise AnsibleActionFail("role: kfocp.kubeflow has no role %r with argument specs (%s)" % (role, path))
        specs = plain(self._loader.load_from_file(path).get("argument_specs") or {})
        if entry_point not in specs:
            raise AnsibleActionFail("entry_point: the argument specs of role %s have no entry point %r (they have %s)"
                                    % (role, entry_point, ", ".join(sorted(specs))))
        options = specs[entry_point].get("options") or {}
        values = {}
        for name in options:
            if name in task_vars:
                value = plain(task_vars[name])
                values[name] = plain(self._templar.template(task_vars[name])) if has_template(value) else value
        checked = ArgumentSpecValidator(options).validate(values, validate_role_argument_spec=True)
        result["changed"] = False
        if checked.error_messages:
            result.update(failed=True, argument_errors=checked.error_messages,
                          msg="Validation of arguments failed:\n%s" % "\n".join(checked.error_messages))
        else:
            result["msg"] = "The variables of role %s pass its argument specs (entry point %s)" % (role, entry_point)
        return result
