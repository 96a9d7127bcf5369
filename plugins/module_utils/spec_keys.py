# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Kubeflow resource's spec as role variables, by the CRD's own key map (playbooks/vars/spec_keys.yml,
generated with the CRD by operator/hack/gen_crd.py).

Under operator-sdk's ansible-operator (snakeCaseParameters: false) a run gets the spec's keys as
written. Only the keys the CRD defines are renamed: a field to its variable, a sub-option to its
option. Every other key (a component name, a label key, a LimitRange's defaultRequest) stays as it
is, and every value is passed on untouched (a value marked unsafe stays unsafe).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type


def _convert(value, keys):
    if isinstance(value, list):
        return [_convert(item, keys) for item in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        entry = keys.get(key)
        if entry is None:
            out[key] = item
        elif isinstance(entry, dict):
            out[entry["name"]] = _convert(item, entry.get("keys") or {})
        else:
            out[entry] = item
    return out


def variables(spec, key_map):
    """{variable: value} for every field of `spec` that `key_map` names; fields it does not name
    (the API server prunes them; a field only the operator's own configuration may set) are left out."""
    out = {}
    for field, value in (spec or {}).items():
        entry = key_map.get(field)
        if entry is None:
            continue
        if isinstance(entry, dict):
            out[entry["name"]] = _convert(value, entry.get("keys") or {})
        else:
            out[entry] = value
    return out
