# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    # The options of the kfocp group's module_defaults that a module which applies nothing accepts
    # and does not use.
    DOCUMENTATION = r"""
options:
  instance:
    description: The install name. Accepted, and not used, so that the module shares C(module_defaults) with the C(kfocp) group.
    type: str
    default: kfocp
  report:
    description: Accepted, and not used, so that the module shares C(module_defaults) with the C(kfocp) group.
    type: str
    choices: [changed, all]
    default: changed
"""
