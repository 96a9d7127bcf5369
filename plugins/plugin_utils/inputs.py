# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers of the role_inputs action that need no Ansible."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

# What starts a Jinja expression, statement or comment in Ansible's default syntax.
_MARKERS = ("{{", "{%", "{#")


def has_template(value):
    """Whether a plain value (dicts, lists, strings, numbers) holds a string that Ansible would
    render as a template."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if "{" in item and any(marker in item for marker in _MARKERS):
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False
