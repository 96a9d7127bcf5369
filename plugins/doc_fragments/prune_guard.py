# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """The prune guard of the modules that apply a set (module_utils/args.py SET_ARGS)."""
    DOCUMENTATION = r"""
options:
  prune_max_share:
    description:
      - With O(prune), the largest share (0 to 1) of the namespaces this O(set) has objects in
        that one run may take every one of its objects out of (two namespaces are always allowed
        less than that). A run that would empty more fails before removing anything and names
        what it would have removed, so that a wrong input that empties the desired state (a
        selector that selects nothing) cannot empty the cluster. Unset, or C(1), allows any share.
    type: float
"""
