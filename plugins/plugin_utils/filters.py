# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller-side glue between the pure builders and Ansible's filter plugins."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools

from ansible.errors import AnsibleFilterError

from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError


def as_filter(func):
    """`func` as a filter: a DefinitionError becomes an AnsibleFilterError with the same message."""
    @functools.wraps(func)
    def run(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except DefinitionError as err:
            raise AnsibleFilterError(str(err))
    return run
