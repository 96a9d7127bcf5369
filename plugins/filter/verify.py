# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters that decide the checks of playbooks/verify.yml."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import verify
from ansible_collections.kfocp.kubeflow.plugins.plugin_utils.filters import as_filter as _wrap


class FilterModule(object):
    def filters(self):
        return {
            "verify_targets": _wrap(verify.targets),
            "verify_reviews": _wrap(verify.reviews),
            "verify_answers": _wrap(verify.answers),
            "verify_rows": _wrap(verify.rows),
        }
