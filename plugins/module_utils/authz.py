# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Istio AuthorizationPolicy evaluation, by the rules Istio documents.

No Envoy runs where kfocp is tested, so this says what a workload's sidecar would decide for one
request, from the AuthorizationPolicies the cluster holds:

- Which policies apply: those in the workload's namespace whose selector matches its labels (no
  selector: every workload there), and those in the mesh's root namespace whose selector matches
  (no selector: every workload in the mesh).
- Order: CUSTOM first (a match hands the request to the external authorizer, whose verdict is
  final when it denies), then DENY (any match denies), then ALLOW: with no ALLOW policy the
  request is allowed; with any, it must match one of them. An ALLOW policy without rules matches
  nothing; a rule without from, to and when matches every request.
- A rule matches when its from, to and when all match; `from` and `to` match when one of their
  entries does; an entry matches when every field in it does; `when` needs every condition.
  A field with values matches when one value does, a not-field when none does.
- Paths are matched without the request's query string and fragment (`/metrics?x=1` is `/metrics`).
- Values: exact, prefix (`abc*`), suffix (`*abc`), or `*` (any non-empty value; on a header, a
  `request.headers[...]` condition, hosts or methods: any value, empty too). Hosts ignore case.
  Principals and the source namespace come from the peer's mTLS certificate: without mTLS they are
  empty and no principals or namespaces field matches (their not-fields do).
- Where these rules are Istio's translation and Envoy's matching rather than Istio's
  documentation (paths, `*` on headers, hosts), tests/unit/test_istio_authz_judge.py holds them to
  Istio's own code and Envoy's rules.

A request is a dict: principal (`cluster.local/ns/<ns>/sa/<sa>`, '' without mTLS), headers
(names in any case), path, method, host, port, ip.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

ROOT_NAMESPACE = "istio-system"
_PRINCIPAL = re.compile(r"^[^/]+/ns/([^/]+)/sa/[^/]+$")


class PolicyError(ValueError):
    """A policy or request this evaluator cannot decide on; the message says which and why."""


def source_namespace(principal):
    """The namespace a SPIFFE principal names ('' without one)."""
    found = _PRINCIPAL.match(principal or "")
    return found.group(1) if found else ""


def match_value(pattern, value, header=False, fold=False):
    """Istio string matching: exact, prefix `abc*`, suffix `*abc`, or `*` for any non-empty value.
    On a header (`header`: a `request.headers[...]` condition, hosts, methods), `*` is a presence
    match: any value, the empty one too (Istio's matcher.HeaderMatcher and HostMatcher translate it
    to Envoy's present_match). `fold`: case-insensitive (hosts: HostMatcher sets ignore_case)."""
    if value is None:
        return False
    value = str(value)
    if pattern == "*":
        return header or value != ""
    if fold:
        pattern, value = pattern.lower(), value.lower()
    if pattern.endswith("*"):
        return value.startswith(pattern[:-1])
    if pattern.startswith("*"):
        return value.endswith(pattern[1:])
    return value == pattern


def _any(patterns, value, header=False, fold=False):
    return any(match_value(p, value, header, fold) for p in patterns)


def _field(spec, name, value, header=False, fold=False):
    """A field and its not-field: the field (when given) must match, the not-field must not."""
    if name in spec and not _any(spec[name] or [], value, header, fold):
        return False
    negative = "not" + name[0].upper() + name[1:]
    if negative in spec and _any(spec[negative] or [], value, header, fold):
        return False
    return True


def _header(request, name):
    wanted = name.lower()
    for key, value in (request.get("headers") or {}).items():
        if key.lower() == wanted:
            return value
    return None


def _field_names(names):
    """The fields and their not-fields: principals, notPrincipals, ..."""
    names = list(names)
    return set(names) | set("not" + n[0].upper() + n[1:] for n in names)


def _source_matches(source, request):
    principal = request.get("principal") or ""
    checks = (("principals", principal or None), ("namespaces", source_namespace(principal) or None),
              ("ipBlocks", request.get("ip")), ("remoteIpBlocks", request.get("ip")),
              ("requestPrincipals", request.get("request_principal")))
    known = _field_names(name for name, unused in checks)
    unknown = sorted(set(source) - known)
    if unknown:
        raise PolicyError("from.source.%s: not supported by this evaluator" % unknown[0])
    return all(_field(source, name, value) for name, value in checks)


def request_path(path):
    """The path `paths` match: the request's without its query and fragment. Istio translates paths to
    Envoy's url_path (pilot/pkg/security/authz/model/generator.go pathGenerator), and Envoy's
    PathMatcher drops them before matching (source/common/common/matchers.cc PathMatcher::match)."""
    return None if path is None else re.split(r"[?#]", str(path), maxsplit=1)[0]


def _operation_matches(operation, request):
    checks = (("hosts", request.get("host")), ("ports", request.get("port")), ("methods", request.get("method")),
              ("paths", request_path(request.get("path"))))
    known = _field_names(name for name, unused in checks)
    unknown = sorted(set(operation) - known)
    if unknown:
        raise PolicyError("to.operation.%s: not supported by this evaluator" % unknown[0])
    return all(_field(operation, name, None if value is None else str(value), header=name in ("hosts", "methods"),
                      fold=name == "hosts") for name, value in checks)


def condition_value(key, request):
    """The value of a `when` key for the request."""
    header = re.match(r"^request\.headers\[(.+)\]$", key)
    if header:
        return _header(request, header.group(1))
    principal = request.get("principal") or ""
    values = {"source.principal": principal or None, "source.namespace": source_namespace(principal) or None,
              "source.ip": request.get("ip"), "remote.ip": request.get("ip"),
              "destination.port": None if request.get("port") is None else str(request["port"]),
              "request.auth.principal": request.get("request_principal")}
    if key not in values:
        raise PolicyError("when.key %s: not supported by this evaluator" % key)
    return values[key]


def _condition_matches(condition, request):
    key = condition.get("key", "")
    value, header = condition_value(key, request), key.startswith("request.headers[")
    if "values" in condition and not _any(condition["values"] or [], value, header):
        return False
    if "notValues" in condition and _any(condition["notValues"] or [], value, header):
        return False
    return True


def rule_matches(rule, request):
    """Whether one rule matches: from, to and when all match (a missing part matches)."""
    rule = rule or {}
    if "from" in rule and not any(_source_matches((entry or {}).get("source") or {}, request)
                                  for entry in rule["from"] or []):
        return False
    if "to" in rule and not any(_operation_matches((entry or {}).get("operation") or {}, request)
                                for entry in rule["to"] or []):
        return False
    return all(_condition_matches(condition, request) for condition in rule.get("when") or [])


def policy_matches(policy, request):
    """Whether one of the policy's rules matches (a policy without rules matches nothing)."""
    return any(rule_matches(rule, request) for rule in (policy.get("spec") or {}).get("rules") or [])


def applies(policy, namespace, labels, root_namespace=ROOT_NAMESPACE):
    """Whether the policy applies to a workload in `namespace` with pod `labels`."""
    meta, spec = policy.get("metadata") or {}, policy.get("spec") or {}
    where = meta.get("namespace")
    if where not in (namespace, root_namespace):
        return False
    selector = spec.get("selector")
    if spec.get("targetRef") or spec.get("targetRefs"):
        raise PolicyError("%s/%s: targetRef policies are not supported by this evaluator" % (where, meta.get("name")))
    if not selector:
        return True
    wanted = selector.get("matchLabels") or {}
    return all((labels or {}).get(key) == value for key, value in wanted.items())


def decide(policies, request, namespace, labels=None, root_namespace=ROOT_NAMESPACE, custom=None):
    """What the workload's proxy decides: (allowed, reason). `custom(policy, request)` answers
    for a matching CUSTOM policy's external authorizer (True: it allows)."""
    found = [p for p in policies if applies(p, namespace, labels, root_namespace)]

    def name(policy):
        return "%s/%s" % (policy["metadata"].get("namespace"), policy["metadata"].get("name"))

    by_action = {}
    for policy in found:
        action = (policy.get("spec") or {}).get("action") or "ALLOW"
        if action not in ("ALLOW", "DENY", "CUSTOM", "AUDIT"):
            raise PolicyError("%s: action %r is not an Istio action" % (name(policy), action))
        by_action.setdefault(action, []).append(policy)
    for policy in by_action.get("CUSTOM", []):
        if policy_matches(policy, request):
            if custom is None:
                raise PolicyError("%s: a CUSTOM policy matches and no external authorizer was given" % name(policy))
            if not custom(policy, request):
                return False, "denied by the external authorizer of %s" % name(policy)
    for policy in by_action.get("DENY", []):
        if policy_matches(policy, request):
            return False, "denied by %s" % name(policy)
    allows = by_action.get("ALLOW", [])
    if not allows:
        return True, "no ALLOW policy applies"
    for policy in allows:
        if policy_matches(policy, request):
            return True, "allowed by %s" % name(policy)
    return False, "no ALLOW policy matches (%s)" % ", ".join(name(p) for p in allows)
