"""Envoy's RBAC HTTP filter, evaluated for one request: the decision a sidecar takes with the filters
istiod gives it (tests/judges.py istio_authz prints them, from Istio's own translation).

Each rule is Envoy's, read from envoyproxy/envoy (docs/readings/envoy-rbac.md records the reading):

- The filters run in the order of the HTTP filter chain, which Istio's builder writes AUDIT, DENY,
  ALLOW (istio.io/istio pilot/pkg/security/authz/builder/builder.go `build`); the first that denies
  answers 403 and stops the request. A filter without `rules` enforces nothing (shadow rules only
  record a verdict).
- A filter's engine: a policy matches when its permissions and its principals both match (and its
  condition, which is CEL: not decided here); `permissions` and `principals` are each a list of
  which one must match. ALLOW admits when a policy matches, DENY when none does, LOG admits always
  (engine_impl.cc `handleAction`; the protobuf default action, omitted from JSON, is ALLOW).
- and_rules/and_ids: every one; or_rules/or_ids: any one; not_rule/not_id: the negation; any: true
  (matchers.cc AndMatcher, OrMatcher, NotMatcher, AlwaysMatcher).
- header: the request header named (case-insensitive names, the pseudo-headers :path, :method and
  :authority included); a missing header matches only `present_match: false` (or an inverted
  present match); a present one is matched by its value: present_match, exact/prefix/suffix/contains
  and string_match, each inverted by invert_match (http/header_utility.cc `matchHeaders`).
- url_path: the :path without its query and fragment, through a string matcher
  (common/matchers.cc `PathMatcher::match`).
- authenticated: false without TLS; no principal_name matches any peer; otherwise the URI SANs of
  the peer certificate, then its DNS SANs, then its subject are tried (matchers.cc
  `AuthenticatedMatcher`). An Istio workload's certificate has one URI SAN,
  spiffe://<trust domain>/ns/<namespace>/sa/<account>.
- destination_port: the port of the downstream local address; source_ip / direct_remote_ip /
  remote_ip: the peer's address, here the request's `ip` (no X-Forwarded-For).
- String matchers: exact, prefix, suffix, contains, safe_regex (RE2, matching the whole value), each
  with ignore_case.

A request is authz.py's: principal ('' without mTLS), headers, path, method, host, port, ip.
Anything else the configuration asks for (metadata, filter_state, a CEL condition, ...) is an
error, not a guess.
"""
import ipaddress
import re

RBAC_TYPE = "type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC"


class Undecided(ValueError):
    """The configuration asks for something this evaluator does not model."""


def _request_headers(request):
    headers = dict((k.lower(), str(v)) for k, v in (request.get("headers") or {}).items())
    if request.get("path") is not None:
        headers[":path"] = request["path"]
    if request.get("method") is not None:
        headers[":method"] = request["method"]
    if request.get("host") is not None:
        headers[":authority"] = request["host"]
    return headers


def string_match(matcher, value):
    """envoy.type.matcher.v3.StringMatcher on `value`."""
    fold = matcher.get("ignore_case", False)
    folded = value.lower() if fold else value
    for kind in ("exact", "prefix", "suffix", "contains"):
        if kind in matcher:
            want = matcher[kind].lower() if fold else matcher[kind]
            return {"exact": folded == want, "prefix": folded.startswith(want), "suffix": folded.endswith(want),
                    "contains": want in folded}[kind]
    if "safe_regex" in matcher:
        return re.fullmatch(matcher["safe_regex"]["regex"], value) is not None
    raise Undecided("string matcher %r" % (matcher,))


def header_match(config, headers):
    """envoy.config.route.v3.HeaderMatcher, as HeaderUtility::matchHeaders applies it."""
    name = config["name"].lower()
    invert = config.get("invert_match", False)
    value = headers.get(name)
    if value is None:
        present = config.get("present_match")
        return present is not None and present == invert
    if "present_match" in config:
        match = bool(config["present_match"])
    elif "exact_match" in config:
        match = config["exact_match"] == "" or value == config["exact_match"]
    elif "prefix_match" in config:
        match = value.startswith(config["prefix_match"])
    elif "suffix_match" in config:
        match = value.endswith(config["suffix_match"])
    elif "contains_match" in config:
        match = config["contains_match"] in value
    elif "safe_regex_match" in config:
        match = re.fullmatch(config["safe_regex_match"]["regex"], value) is not None
    elif "string_match" in config:
        match = string_match(config["string_match"], value)
    else:
        match = True  # no specifier: presence
    return match != invert


def _ip_match(cidr, request):
    if not request.get("ip"):
        raise Undecided("an IP matcher, and the request has no ip")
    full = 128 if ":" in cidr["address_prefix"] else 32
    network = ipaddress.ip_network("%s/%s" % (cidr["address_prefix"], cidr.get("prefix_len", full)),
                                   strict=False)
    return ipaddress.ip_address(request["ip"]) in network


def _path(request):
    path = request.get("path")
    return None if path is None else re.split(r"[?#]", path, maxsplit=1)[0]


def permission_matches(permission, request):
    """envoy.config.rbac.v3.Permission."""
    if "any" in permission:
        return bool(permission["any"])
    if "and_rules" in permission:
        return all(permission_matches(p, request) for p in permission["and_rules"].get("rules") or [])
    if "or_rules" in permission:
        return any(permission_matches(p, request) for p in permission["or_rules"].get("rules") or [])
    if "not_rule" in permission:
        return not permission_matches(permission["not_rule"], request)
    if "header" in permission:
        return header_match(permission["header"], _request_headers(request))
    if "url_path" in permission:
        path = _path(request)
        return path is not None and string_match(permission["url_path"]["path"], path)
    if "destination_port" in permission:
        return request.get("port") is not None and int(request["port"]) == int(permission["destination_port"])
    if "destination_port_range" in permission:
        port, span = request.get("port"), permission["destination_port_range"]
        return port is not None and int(span.get("start", 0)) <= int(port) < int(span.get("end", 0))
    raise Undecided("permission %s" % sorted(permission))


def _sans(request):
    principal = request.get("principal") or ""
    return ["spiffe://" + principal] if principal else []


def principal_matches(principal, request):
    """envoy.config.rbac.v3.Principal."""
    if "any" in principal:
        return bool(principal["any"])
    if "and_ids" in principal:
        return all(principal_matches(p, request) for p in principal["and_ids"].get("ids") or [])
    if "or_ids" in principal:
        return any(principal_matches(p, request) for p in principal["or_ids"].get("ids") or [])
    if "not_id" in principal:
        return not principal_matches(principal["not_id"], request)
    if "authenticated" in principal:
        sans = _sans(request)
        if not sans:  # no TLS: not authenticated
            return False
        matcher = principal["authenticated"].get("principal_name")
        if matcher is None:
            return True
        # the URI SANs, then the DNS SANs (none), then the subject (empty for Istio's certificates)
        return any(string_match(matcher, san) for san in sans) or string_match(matcher, "")
    if "header" in principal:
        return header_match(principal["header"], _request_headers(request))
    if "url_path" in principal:
        path = _path(request)
        return path is not None and string_match(principal["url_path"]["path"], path)
    for kind in ("source_ip", "direct_remote_ip", "remote_ip"):
        if kind in principal:
            return _ip_match(principal[kind], request)
    raise Undecided("principal %s" % sorted(principal))


def policy_matches(policy, request):
    if "condition" in policy or "checked_condition" in policy:
        raise Undecided("a CEL condition")
    return (any(permission_matches(p, request) for p in policy.get("permissions") or []) and
            any(principal_matches(p, request) for p in policy.get("principals") or []))


def engine_allows(rules, request):
    """(allowed, the matching policy's name or None) of one RBAC engine."""
    matched = None
    for name in sorted((rules.get("policies") or {})):
        if policy_matches(rules["policies"][name], request):
            matched = name
            break
    action = rules.get("action", "ALLOW")
    if action == "ALLOW":
        return matched is not None, matched
    if action == "DENY":
        return matched is None, matched
    if action == "LOG":
        return True, matched
    raise Undecided("action %r" % action)


def decide(filters, request):
    """What the sidecar with these HTTP filters decides: (allowed, reason)."""
    for number, http_filter in enumerate(filters):
        config = http_filter.get("typed_config") or {}
        if config.get("@type") != RBAC_TYPE:
            raise Undecided("filter %d: %s is not Envoy's RBAC filter" % (number, config.get("@type")))
        if config.get("matcher"):
            raise Undecided("filter %d: a matcher tree" % number)
        rules = config.get("rules")
        if rules is None:
            continue
        allowed, policy = engine_allows(rules, request)
        if not allowed:
            action = rules.get("action", "ALLOW")
            return False, ("%s filter: %s matches" % (action, policy) if action == "DENY"
                           else "ALLOW filter: no policy matches")
    return True, "no filter denies"
