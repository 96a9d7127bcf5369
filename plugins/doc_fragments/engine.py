# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """The apply engine's options (module_utils/args.py ENGINE_ARGS)."""
    DOCUMENTATION = r"""
options:
  instance:
    description:
      - The install these objects belong to, kept in the C(kfocp.io/instance) label, so that two
        installs never prune each other.
    type: str
    default: kfocp
  set:
    description:
      - A name for this group of objects, kept in the C(kfocp.io/set) label. Prune works within a
        set. Roles use their own name.
    type: str
  force:
    description: Take over fields that another field manager owns, instead of failing.
    type: bool
    default: false
  adopt:
    description: Manage an existing object that this instance did not create, instead of failing.
    type: bool
    default: false
  wait_timeout:
    description: Seconds to wait for CRDs to be Established, and for deleted objects to be gone when asked to.
    type: int
    default: 120
  concurrency:
    description: How many API requests are in flight at once.
    type: int
    default: 32
  field_manager:
    description: The server-side apply field manager.
    type: str
    default: kfocp
"""
