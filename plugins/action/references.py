# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action of kfocp.kubeflow.references: the module runs forked from the task's worker when it would
run on this machine with this Python, else as ansible-core runs any module (plugin_utils/direct.py)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kfocp.kubeflow.plugins.plugin_utils.direct import DirectAction


class ActionModule(DirectAction):
    pass
