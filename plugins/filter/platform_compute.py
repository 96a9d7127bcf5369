# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters over the builders of the gpu, autoscaler and serverless roles."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import autoscaler, gpu, olm, serverless
from ansible_collections.kfocp.kubeflow.plugins.plugin_utils.filters import as_filter as _wrap


class FilterModule(object):
    def filters(self):
        return {
            "gpu_objects": _wrap(gpu.objects),
            "gpu_operands": _wrap(gpu.operands),
            "autoscaler_objects": _wrap(autoscaler.objects),
            "autoscaler_targets": _wrap(autoscaler.targets),
            "serverless_objects": _wrap(serverless.objects),
            "serverless_knative_serving": _wrap(serverless.knative_serving),
            "olm_csv_waits": _wrap(olm.waits),
            "olm_operator_groups": _wrap(olm.operator_groups),
            "olm_channel_moves": _wrap(olm.channel_moves),
        }
