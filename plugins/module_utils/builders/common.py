# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small pieces every builder uses: input checks that name the field, and object shapes."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import (
    DNS_LABEL, ENSURE, NAMESPACES_SET, OWNERSHIP, SET_OVERRIDE, DefinitionError)

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def require(condition, field, problem, fix):
    """Raise a DefinitionError that names the field, the problem and the fix."""
    if not condition:
        raise DefinitionError("%s: %s. %s" % (field, problem, fix))


def dns_label(value, field):
    require(isinstance(value, str) and len(value) <= 63 and DNS_LABEL.match(value or ""), field,
            "%r is not a DNS label" % (value,),
            "Use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit")
    return value


def dns_subdomain(value, field):
    require(isinstance(value, str) and len(value) <= 253 and DNS_SUBDOMAIN.match(value or ""), field,
            "%r is not a DNS subdomain" % (value,),
            "Use lower-case letters, digits, '-' and '.', at most 253 characters")
    return value


def named_entries(entries, field, shape, name_fix, check_name=dns_subdomain):
    """Yield (where, entry) for each mapping of the list `entries` (the variable `field`), after
    checking that it is a list of mappings (`shape` says what one looks like), that each has a
    name (`name_fix` says how to give it), valid by `check_name`, and listed once."""
    require(isinstance(entries, list), field, "must be a list", "Give a list of %s" % shape)
    seen = set()
    for index, entry in enumerate(entries):
        where = "%s[%d]" % (field, index)
        require(isinstance(entry, dict), where, "must be a mapping", "Give %s" % shape)
        require(entry.get("name"), where + ".name", "is required", name_fix)
        check_name(entry["name"], where + ".name")
        require(entry["name"] not in seen, where + ".name", "%r is listed twice" % entry["name"], "List it once")
        seen.add(entry["name"])
        yield where, entry


def namespace(name, labels=None):
    """A platform Namespace: created as kfocp's when missing, left alone when it already exists,
    kept in the 'namespaces' set that only uninstall removes."""
    meta = {"name": name, "annotations": {OWNERSHIP: ENSURE, SET_OVERRIDE: NAMESPACES_SET}}
    if labels:
        meta["labels"] = dict(labels)
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def role_binding(name, namespace_name, role_kind, role_name, subjects, labels=None, annotations=None):
    meta = {"name": name, "namespace": namespace_name}
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
            "subjects": subjects}


def plain(value):
    """`value` as plain dicts, lists, strings and numbers. Values that come from Ansible are lazy
    templating containers and tagged strings: reading and copying those object by object is very
    slow at scale. Plain values (JSON from the API) take the short path: a type check each."""
    kind = type(value)
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    if kind is dict:
        return dict((k if k.__class__ is str else str(k), plain(v)) for k, v in value.items())
    if kind is list:
        return [plain(v) for v in value]
    if isinstance(value, dict) or (hasattr(value, "items") and hasattr(value, "keys")):
        return dict((str(k), plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return value


def group_name(value, field, system=False):
    """A name OpenShift accepts for a Group (a path segment: not '.', '..' or '~', no '/', '%' or
    ':'; no surrounding or control whitespace). With `system`, also the API server's own system:*
    groups (system:masters), which are no Group objects."""
    require(isinstance(value, str) and value, field, "must be a non-empty group name", "Give the group's name")
    if system and value.startswith("system:") and len(value) > 7 and not re.search(r"[\s/%]", value):
        return value
    bad = [why for test, why in ((value in (".", "..", "~"), "may not be %r" % value),
                                 (any(c in value for c in "/%"), "may not contain '/' or '%'"),
                                 (":" in value, "may not contain ':'"),
                                 (value.strip() != value or re.search(r"[\x00-\x1f\x7f]", value),
                                  "may not have surrounding whitespace or control characters"),
                                 (len(value) > 253, "is longer than 253 characters")) if test]
    require(not bad, field, "%r is not a valid OpenShift Group name: %s" % (value, "; ".join(bad)),
            "Use the group's name as `oc get groups` shows it")
    return value
