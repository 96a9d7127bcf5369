# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side glue between the pure builders and Ansible's filter plugins."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools

from ansible.errors import AnsibleFilterError

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import plain
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError


def _plain(value):
    # Ansible hands a filter its variables as lazy templating containers (dict and list
    # subclasses). A builder that copies one (copy.deepcopy) copies its templar and every variable
    # of the play with it: seconds at thousands of profiles. The builders get plain data instead.
    # Other mappings (hostvars) are left as they are: rendering them would render every host's
    # variables.
    return plain(value) if isinstance(value, (dict, list)) else value


def as_filter(func):
    """`func` as a filter: its dict and list arguments as plain data, and a DefinitionError
    becomes an AnsibleFilterError with the same message."""
    @functools.wraps(func)
    def run(*args, **kwargs):
        try:
            return func(*[_plain(arg) for arg in args], **dict((k, _plain(v)) for k, v in kwargs.items()))
        except DefinitionError as err:
            raise AnsibleFilterError(str(err))
    return run
