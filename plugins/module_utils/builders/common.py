# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small pieces every builder uses: input checks that name the field, and object shapes."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import (
    DNS_LABEL, ENSURE, LABEL_VALUE, NAMESPACES_SET, OWNERSHIP, SET_OVERRIDE, DefinitionError, parse_quantity)

DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# The name part of a label or annotation key (Kubernetes' IsQualifiedName).
QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


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


def qualified_name(value, field):
    """A label or annotation key as the API server checks it: an optional DNS subdomain prefix
    and '/', then a name of at most 63 letters, digits, '-', '_' and '.'."""
    ok = isinstance(value, str)
    if ok:
        prefix, _slash, name = value.rpartition("/")
        ok = (QUALIFIED_NAME.match(name) is not None and len(name) <= 63
              and (not _slash or (0 < len(prefix) <= 253 and DNS_SUBDOMAIN.match(prefix) is not None)))
    require(ok, field, "%r is not a valid label or annotation key" % (value,),
            "Use an optional DNS-name prefix and '/', then at most 63 letters, digits, '-', '_' and '.', "
            "starting and ending with a letter or digit (for example app.kubernetes.io/part-of)")
    return value


def label_value(value, field):
    require(isinstance(value, str) and len(value) <= 63 and LABEL_VALUE.match(value) is not None, field,
            "%r is not a valid label value" % (value,),
            "Use at most 63 letters, digits, '-', '_' and '.', starting and ending with a letter or digit, or ''")
    return value


def labels(value, field):
    """A label mapping {key: value}, every key and value valid for the API server."""
    require(isinstance(value, dict), field, "must be a mapping of label key to value",
            "For example {app.kubernetes.io/part-of: kubeflow-profile}")
    for key, item in value.items():
        qualified_name(key, "%s key %r" % (field, key))
        label_value(item, "%s.%s" % (field, key))
    return value


def label_selector(value, field):
    """An equality label selector as {key: value}, from a mapping or from the API's text form
    ('k=v,k2==v2'), checked with the API server's rules, so that it can never select other
    objects than it says (a malformed one would select none, and prune would then remove all)."""
    if isinstance(value, str):
        pairs = {}
        for part in value.split(","):
            key, eq, val = part.partition("==") if "==" in part else part.partition("=")
            require(eq and "!" not in key, field, "%r is not key=value" % part,
                    "Write key=value pairs separated by commas, for example app.kubernetes.io/part-of=kubeflow-profile")
            key, val = key.strip(), val.strip()
            require(key not in pairs, field, "%r is given twice" % key, "Give each key once")
            pairs[key] = val
        value = pairs
    require(isinstance(value, dict) and value, field, "must be a non-empty mapping of label key to value",
            "For example {app.kubernetes.io/part-of: kubeflow-profile}")
    return labels(value, field)


def quantity(value, field):
    """A Kubernetes quantity as the API server parses it: no spaces, a number and a suffix."""
    ok = not isinstance(value, bool) and isinstance(value, (int, float, str)) and parse_quantity(value) is not None
    ok = ok and (not isinstance(value, str) or value == value.strip())
    require(ok, field, "%r is not a valid quantity" % (value,),
            "Use a Kubernetes quantity such as 4, 500m or 16Gi, without spaces")
    return parse_quantity(value)


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
    slow at scale. Plain values (JSON from the API) take the short path: a type check each.

    The filter glue (plugin_utils/filters.py) gives every builder its arguments through it. The
    tenancy builders do not call it again on the live objects they are given, which at thousands
    of namespaces is most of their time: they read their inputs, never change them, and give
    objects that share nothing with them (tests/unit/test_builders_read_only.py)."""
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
