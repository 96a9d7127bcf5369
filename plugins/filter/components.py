# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filters for the components role: choose the release and components, and adapt their rendered manifests."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.utils.display import Display

from ansible_collections.kfocp.kubeflow.plugins.module_utils import releases, settings
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import manifests
from ansible_collections.kfocp.kubeflow.plugins.plugin_utils.filters import as_filter as _wrap

display = Display()


def components_assemble(rendered, options):
    """The objects to apply or write, the SCC grants and audit table, and the mirror list.

    Images that no prefix of the mirror map matches are reported as a warning that lists them."""
    result = manifests.assemble(rendered, options or {})
    if result["unmatched_images"]:
        display.warning(manifests.unmatched_warning(result))
    return result


class FilterModule(object):
    def filters(self):
        return {
            "components_plan": _wrap(releases.plan),
            "components_select": _wrap(manifests.select),
            "components_assemble": _wrap(components_assemble),
            "components_settings": _wrap(settings.components_settings),
        }
