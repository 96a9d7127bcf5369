# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reference check of a converged cluster: pure functions over lists of objects.

`check(objects, ...)` finds every reference one Kubeflow object makes to another that does not
hold, and returns one finding per broken reference, with both objects and the field:

- principals: every principal of an ALLOW or DENY AuthorizationPolicy (`from.source.principals`,
  `notPrincipals`, and the `values`/`notValues` of a `when` condition on `source.principal`) is
  Istio's `<trust domain>/ns/<namespace>/sa/<service account>` of a ServiceAccount that exists, or
  a principal of the gateway kfocp runs (`gateway_principals`);
- hosts: every host that names an in-cluster Service (`<name>.<namespace>`,
  `<name>.<namespace>.svc`, `<name>.<namespace>.svc.cluster.local`, in a URL too) in a
  VirtualService, DestinationRule, ServiceEntry, Route, container `env` value or ConfigMap value
  names a Service that exists;
- backends: every Service a VirtualService or Route sends to exists and selects the pods of a
  Deployment, StatefulSet, DaemonSet, Job or CronJob that exists in its namespace;
- paths: each path the VirtualServices publish on the kubeflow Gateway is admitted, by the
  AuthorizationPolicies on the way to the workload behind it (`authz.decide`), for a logged-in
  user's request from the gateway kfocp runs (header `kubeflow-userid`), and refused for the same
  request from another workload.

What is not a reference to an object of the cluster, or not a broken one, is not reported
(EXCEPTIONS says the same, one line each, for the module's documentation). Each rule is there for
something upstream's renders hold (tests/unit/test_references.py reads them):

- a principal or host with a wildcard (`*`, `*.svc.cluster.local`): it names no one account or
  Service;
- a two-label host `<a>.<b>` is a Service's name only when `<b>` is a namespace of the cluster or
  one of upstream's (UPSTREAM_NAMESPACES); otherwise it is a domain (`kubeflow.org`, `docker.io`);
- a host in a namespace that does not exist, when that namespace is one of an optional component
  (OTHER_COMPONENTS: KServe's `inferenceservice-config` names KEDA's scaler in keda, and, as kfocp
  writes it, OpenShift Serverless's Kourier in knative-serving-ingress), is listed in `skipped`; in
  any other namespace that does not exist (`kubeflow`, after a move to another
  `components_namespace`; `istio-system`, where upstream's configuration names a Service of an
  Istio kfocp does not run) it is a finding;
- a VirtualService's `hosts`, a ServiceEntry's `hosts` and a Route's `spec.host` are the names
  those objects answer to or declare, not Services; a VirtualService's destinations, a
  DestinationRule's host and a Route's backends are;
- a ConfigMap's `_example` key is Knative's documentation of its settings, "not actually
  functional configuration" (Knative Serving's config-tracing names zipkin in istio-system there);
- a path to a workload whose pods say `sidecar.istio.io/inject: "false"` (KFP's metadata-envoy,
  an Envoy itself) has no proxy, so no AuthorizationPolicy is on its way: it is listed in
  `no_proxy`; a path to a workload that gets no proxy without saying so is a finding;
- a path whose workload's own ALLOW policies admit only service accounts of its namespace (KFAM's
  `/kfam/`, admitted from the central dashboard's account only) is not published for users at
  the gateway: it is listed in `internal`.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.kfocp.kubeflow.plugins.module_utils import authz

WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob")
# Istio's principal (SPIFFE identity without spiffe://): <trust domain>/ns/<namespace>/sa/<account>
PRINCIPAL = re.compile(r"^([^/]+)/ns/([^/]+)/sa/([^/]+)$")
_LABEL = r"[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?"
# a Service's DNS name in text: <name>.<namespace>[.svc[.cluster.local]], not inside a longer name
HOST = re.compile(r"(?<![A-Za-z0-9_.*-])(%s)\.(%s)(\.svc(?:\.cluster\.local)?)?(?![A-Za-z0-9_*-]|\.[A-Za-z0-9*])"
                  % (_LABEL, _LABEL))
USERID_HEADER = "kubeflow-userid"
INJECT = "sidecar.istio.io/inject"
OTHER_PRINCIPAL = "cluster.local/ns/kfocp-reference-check/sa/default"
# The namespaces of optional components, whose Services are absent until they are installed: a
# host there, when the namespace does not exist, is listed in `skipped`, not reported. Only those
# a reference of kfocp's install names (upstream's renders through the components role).
OTHER_COMPONENTS = {
    "keda": "KEDA, KServe's optional autoscaler (inferenceservice-config's opentelemetryCollector)",
    "knative-serving-ingress": "OpenShift Serverless's Kourier (the serverless role), whose kourier-internal kfocp "
                               "gives KServe's inferenceservice-config as its local gateway",
}
# The namespaces upstream's objects live in (its example's render) and those above: a two-label
# host <name>.<namespace> naming one of them is a Service's name even where the namespace does not
# exist.
UPSTREAM_NAMESPACES = ("auth", "cert-manager", "istio-system", "keda", "knative-serving", "knative-serving-ingress",
                       "kube-system", "kubeflow", "kubeflow-system", "oauth2-proxy")

EXCEPTIONS = (
    "A principal or host with a wildcard (*) names no one account or Service, and is not checked.",
    "A two-label host <a>.<b> is a Service's name only when <b> is a namespace of the cluster or one of "
    "upstream's; otherwise it is a domain (kubeflow.org, docker.io).",
    "A host in a namespace that does not exist, when the namespace is one of an optional component "
    "(OTHER_COMPONENTS: keda, KServe's optional autoscaler; knative-serving-ingress, OpenShift Serverless's "
    "Kourier), is listed in skipped, not reported; in any other missing namespace (kubeflow after a move to "
    "another components_namespace, istio-system where kfocp's mesh runs elsewhere) it is a finding.",
    "A VirtualService's hosts, a ServiceEntry's hosts and a Route's spec.host are names those objects answer "
    "to or declare, not Services; VirtualService destinations, DestinationRule hosts and Route backends are.",
    "A ConfigMap's _example key is Knative's documentation of its settings, not configuration anyone reads.",
    "A path to a workload whose pods say sidecar.istio.io/inject false (KFP's metadata-envoy, an Envoy itself) "
    "has no proxy and so no AuthorizationPolicy on its way: it is listed in no_proxy. A workload that gets no "
    "proxy without saying so is a finding.",
    "A path whose workload's own ALLOW policies admit only accounts of its namespace (KFAM's /kfam/, from the "
    "central dashboard) is not for users at the gateway: it is listed in internal.",
)


def _meta(obj):
    return obj.get("metadata") or {}


def _ref(obj):
    meta = _meta(obj)
    return {"kind": obj.get("kind"), "namespace": meta.get("namespace") or "", "name": meta.get("name") or ""}


def describe(ref):
    return "%s %s" % (ref["kind"], "%s/%s" % (ref["namespace"], ref["name"]) if ref.get("namespace") else ref["name"])


def finding(check, source, field, value, target, problem):
    """One broken reference: the object that refers, its field and value, the object referred to."""
    return {"check": check, "source": source, "field": field, "value": value, "target": target, "problem": problem,
            "msg": "%s %s = %r: %s %s" % (describe(source), field, value, describe(target), problem)}


class Index:
    """The objects by kind and name, and the namespaces they show to exist."""

    def __init__(self, objects):
        self.objects = [o for o in objects if isinstance(o, dict)]
        self.by_kind = {}
        for obj in self.objects:
            meta = _meta(obj)
            self.by_kind.setdefault(obj.get("kind"), {})[(meta.get("namespace") or "", meta.get("name"))] = obj
        self.namespaces = set(ns for kind, found in self.by_kind.items() for ns, _name in found if ns)
        self.namespaces |= set(name for _ns, name in self.by_kind.get("Namespace", {}))
        self.known = self.namespaces | set(UPSTREAM_NAMESPACES)

    def get(self, kind, namespace, name):
        return self.by_kind.get(kind, {}).get((namespace, name))

    def of(self, *kinds):
        return [obj for kind in kinds for obj in self.by_kind.get(kind, {}).values()]

    def workloads(self, namespace, selector):
        """The workloads in `namespace` whose pod template has every label of `selector`."""
        if not selector:
            return []
        found = []
        for obj in self.of(*WORKLOADS):
            if _meta(obj).get("namespace") != namespace:
                continue
            labels = pod_labels(obj)
            if all(labels.get(k) == v for k, v in selector.items()):
                found.append(obj)
        return found


def pod_template(obj):
    spec = obj.get("spec") or {}
    if obj.get("kind") == "CronJob":
        spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    return spec.get("template") or {}


def pod_labels(obj):
    return (pod_template(obj).get("metadata") or {}).get("labels") or {}


# ---------------------------------------------------------------- principals

def policy_principals(policy):
    """(field, principal) of every principal an AuthorizationPolicy names."""
    spec = policy.get("spec") or {}
    for r, rule in enumerate(spec.get("rules") or []):
        rule = rule or {}
        for f, entry in enumerate(rule.get("from") or []):
            source = (entry or {}).get("source") or {}
            for key in ("principals", "notPrincipals"):
                for i, value in enumerate(source.get(key) or []):
                    yield "spec.rules[%d].from[%d].source.%s[%d]" % (r, f, key, i), value
        for w, condition in enumerate(rule.get("when") or []):
            if (condition or {}).get("key") == "source.principal":
                for key in ("values", "notValues"):
                    for i, value in enumerate(condition.get(key) or []):
                        yield "spec.rules[%d].when[%d].%s[%d]" % (r, w, key, i), value


def check_principals(index, scope, gateway_principals, counts):
    out = []
    for policy in index.of("AuthorizationPolicy"):
        if not scope(policy) or ((policy.get("spec") or {}).get("action") or "ALLOW") not in ("ALLOW", "DENY"):
            continue
        for field, value in policy_principals(policy):
            if not isinstance(value, str) or "*" in value:
                continue
            counts["principals"] = counts.get("principals", 0) + 1
            if value in gateway_principals:
                continue
            found = PRINCIPAL.match(value)
            if not found:
                out.append(finding("principal", _ref(policy), field, value,
                                   {"kind": "ServiceAccount", "namespace": "", "name": value},
                                   "is not a principal <trust domain>/ns/<namespace>/sa/<service account>"))
                continue
            target = {"kind": "ServiceAccount", "namespace": found.group(2), "name": found.group(3)}
            if index.get("ServiceAccount", target["namespace"], target["name"]) is None:
                out.append(finding("principal", _ref(policy), field, value, target, "does not exist"))
    return out


# ---------------------------------------------------------------- hosts

def hosts_in(text, namespaces):
    """(name, namespace, text matched) of every Service host in `text`: a name with .svc, or a
    two-label name whose second label is one of `namespaces`."""
    for found in HOST.finditer(text):
        name, namespace, svc = found.group(1), found.group(2), found.group(3)
        if svc or namespace in namespaces:
            yield name, namespace, found.group(0)


def destinations(vs):
    """(field, host) of every destination of a VirtualService (http, tcp, tls routes and mirrors)."""
    spec = vs.get("spec") or {}
    for kind in ("http", "tcp", "tls"):
        for r, route in enumerate(spec.get(kind) or []):
            route = route or {}
            for d, dest in enumerate(route.get("route") or []):
                host = ((dest or {}).get("destination") or {}).get("host")
                if host:
                    yield "spec.%s[%d].route[%d].destination.host" % (kind, r, d), host
            if (route.get("mirror") or {}).get("host"):
                yield "spec.%s[%d].mirror.host" % (kind, r), route["mirror"]["host"]
            for m, mirror in enumerate(route.get("mirrors") or []):
                host = ((mirror or {}).get("destination") or {}).get("host")
                if host:
                    yield "spec.%s[%d].mirrors[%d].destination.host" % (kind, r, m), host


def host_fields(obj):
    """(field, text) of every place of `obj` a Service host is looked for."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "VirtualService":
        for field, host in destinations(obj):
            yield field, host
    elif kind == "DestinationRule":
        if spec.get("host"):
            yield "spec.host", spec["host"]
    elif kind == "ServiceEntry":
        for i, endpoint in enumerate(spec.get("endpoints") or []):
            if (endpoint or {}).get("address"):
                yield "spec.endpoints[%d].address" % i, endpoint["address"]
    elif kind == "ConfigMap":
        for key, value in sorted((obj.get("data") or {}).items()):
            if key != "_example" and isinstance(value, str):
                yield "data.%s" % key, value
    elif kind in WORKLOADS:
        base = "spec.jobTemplate.spec.template.spec" if kind == "CronJob" else "spec.template.spec"
        pod = pod_template(obj).get("spec") or {}
        for group in ("initContainers", "containers"):
            for c, container in enumerate(pod.get(group) or []):
                for e, env in enumerate(container.get("env") or []):
                    if isinstance(env.get("value"), str):
                        yield "%s.%s[%d].env[%d].value (%s)" % (base, group, c, e, env.get("name")), env["value"]


def short_host(obj, host):
    """A VirtualService's destination or a DestinationRule's host without a dot is a Service of
    the object's own namespace (Istio's short name); (name, namespace) or None."""
    if obj.get("kind") in ("VirtualService", "DestinationRule") and "." not in host and "*" not in host:
        return host, _meta(obj).get("namespace") or ""
    return None


def check_hosts(index, scope, absent_ok, skipped, counts):
    out = []
    services = []  # (source, field, value, namespace, name) of the Services VirtualServices send to
    for obj in index.objects:
        if not scope(obj) or obj.get("kind") not in ("VirtualService", "DestinationRule", "ServiceEntry", "ConfigMap") + WORKLOADS:
            continue
        for field, text in host_fields(obj):
            short = short_host(obj, text)
            found = [(short[0], short[1], text)] if short else list(hosts_in(text, index.known))
            for name, namespace, matched in found:
                target = {"kind": "Service", "namespace": namespace, "name": name}
                counts["hosts"] = counts.get("hosts", 0) + 1
                if obj.get("kind") == "VirtualService":
                    services.append((obj, field, matched, target))
                if index.get("Service", namespace, name) is not None:
                    continue
                if namespace not in index.namespaces and namespace in absent_ok:
                    skipped.setdefault(namespace, []).append("%s %s" % (describe(_ref(obj)), field))
                    continue
                out.append(finding("host", _ref(obj), field, matched, target, "does not exist"))
    for route in index.of("Route"):
        if not scope(route):
            continue
        spec = route.get("spec") or {}
        backends = [("spec.to.name", spec.get("to") or {})]
        backends += [("spec.alternateBackends[%d].name" % i, b or {}) for i, b in enumerate(spec.get("alternateBackends") or [])]
        for field, backend in backends:
            if (backend.get("kind") or "Service") != "Service" or not backend.get("name"):
                continue
            target = {"kind": "Service", "namespace": _meta(route).get("namespace") or "", "name": backend["name"]}
            services.append((route, field, backend["name"], target))
            counts["hosts"] = counts.get("hosts", 0) + 1
            if index.get("Service", target["namespace"], target["name"]) is None:
                out.append(finding("host", _ref(route), field, backend["name"], target, "does not exist"))
    return out, services


def check_backends(index, services, counts):
    """Every Service a VirtualService or Route sends to selects the pods of a workload."""
    out = []
    seen = set()
    for obj, field, value, target in services:
        service = index.get("Service", target["namespace"], target["name"])
        if service is None or (target["namespace"], target["name"]) in seen:
            continue
        seen.add((target["namespace"], target["name"]))
        counts["backends"] = counts.get("backends", 0) + 1
        spec = service.get("spec") or {}
        if spec.get("type") == "ExternalName":
            continue
        if not index.workloads(target["namespace"], spec.get("selector") or {}):
            out.append(finding("backend", _ref(obj), field, value, target,
                               "selects the pods of no workload (selector %s)" % (spec.get("selector") or {})))
    return out


# ---------------------------------------------------------------- paths from the gateway

def gateway_routes(index, gateway):
    """(VirtualService, field, path, Service ref) of every path the VirtualServices publish on
    `gateway` (<namespace>/<name>; a reference without namespace is the VirtualService's own)."""
    want_ns, _sep, want_name = gateway.rpartition("/")
    for vs in index.of("VirtualService"):
        own = _meta(vs).get("namespace") or ""
        spec = vs.get("spec") or {}
        names = []
        for ref in spec.get("gateways") or []:
            ns, _sep, name = ref.rpartition("/")
            names.append(((ns or own), name))
        if (want_ns or own, want_name) not in names:
            continue
        for r, http in enumerate(spec.get("http") or []):
            dests = [d for d in (http or {}).get("route") or [] if (d or {}).get("destination")]
            if not dests:
                continue
            host = dests[0]["destination"].get("host") or ""
            found = list(hosts_in(host, index.known)) or ([(host, own, host)] if "." not in host else [])
            if not found:
                continue
            target = {"kind": "Service", "namespace": found[0][1], "name": found[0][0]}
            for m, match in enumerate(http.get("match") or [{}]):
                uri = (match or {}).get("uri") or {}
                path = uri.get("prefix") or uri.get("exact") or ("/" if not uri else None)
                if path is None:
                    continue
                yield vs, "spec.http[%d].match[%d].uri" % (r, m), path, target


def _said(workload):
    """What the workload's pod template says of injection: the values of its sidecar.istio.io/inject
    label and annotation, lower-cased."""
    meta = pod_template(workload).get("metadata") or {}
    values = ((meta.get("labels") or {}).get(INJECT), (meta.get("annotations") or {}).get(INJECT))
    return [str(v).lower() for v in values if v is not None]


def has_proxy(index, workload):
    """Whether the workload's pods get Istio's proxy: their `sidecar.istio.io/inject` label or
    annotation says so ("true"/"false"), else their namespace is labelled for injection
    (`istio-injection: enabled`, or `istio.io/rev` without `istio-injection: disabled`)."""
    said = _said(workload)
    if "false" in said:
        return False
    if "true" in said:
        return True
    labels = _meta(index.get("Namespace", "", _meta(workload).get("namespace")) or {}).get("labels") or {}
    injection = labels.get("istio-injection")
    return injection == "enabled" or (bool(labels.get("istio.io/rev")) and injection != "disabled")


def opted_out(workload):
    """Whether the workload itself says its pods get no proxy (sidecar.istio.io/inject: "false")."""
    return "false" in _said(workload)


def internal(policies, namespace, labels, root_namespace):
    """Whether the ALLOW policies of the workload's own namespace that apply to it admit only
    service accounts of that namespace (at least one such policy, every rule with principals):
    a path upstream keeps for its neighbours (KFAM's /kfam/, admitted from the central dashboard
    only), not for users at the gateway."""
    own = [p for p in policies if _meta(p).get("namespace") == namespace
           and ((p.get("spec") or {}).get("action") or "ALLOW") == "ALLOW"
           and authz.applies(p, namespace, labels, root_namespace)]
    if not own:
        return False
    for policy in own:
        for rule in (policy.get("spec") or {}).get("rules") or [{}]:
            principals = [v for entry in (rule or {}).get("from") or []
                          for v in ((entry or {}).get("source") or {}).get("principals") or []]
            if not principals or any(authz.source_namespace(v) != namespace for v in principals):
                return False
    return True


def check_paths(index, gateway, principal, root_namespace, other_principal=OTHER_PRINCIPAL, notes=None, counts=None):
    out = []
    notes = notes if notes is not None else {}
    counts = counts if counts is not None else {}
    policies = index.of("AuthorizationPolicy")
    for vs, field, path, target in gateway_routes(index, gateway):
        service = index.get("Service", target["namespace"], target["name"])
        workloads = index.workloads(target["namespace"], ((service or {}).get("spec") or {}).get("selector") or {})
        if not workloads:
            continue  # the backend check reports it
        workload = workloads[0]
        counts["paths"] = counts.get("paths", 0) + 1
        labels = pod_labels(workload)
        ref = _ref(workload)
        where = "%s %s %s" % (describe(_ref(vs)), path, describe(ref))
        if not has_proxy(index, workload):
            if opted_out(workload):
                notes.setdefault("no_proxy", []).append(where)
                continue
            out.append(finding("path", _ref(vs), field, path, ref, "has no proxy: no AuthorizationPolicy guards it "
                               "(neither its pods nor its namespace ask for injection)"))
            continue
        if internal(policies, target["namespace"], labels, root_namespace):
            notes.setdefault("internal", []).append(where)
            continue
        user = {"principal": principal, "headers": {USERID_HEADER: "user@example.com"},
                "path": path + "x", "method": "GET"}
        other = dict(user, principal=other_principal)
        try:
            allowed, reason = authz.decide(policies, user, target["namespace"], labels, root_namespace=root_namespace)
            if not allowed:
                out.append(finding("path", _ref(vs), field, path, ref,
                                   "refuses a logged-in user's request from the gateway (%s)" % reason))
            allowed, reason = authz.decide(policies, other, target["namespace"], labels, root_namespace=root_namespace)
            if allowed:
                out.append(finding("path", _ref(vs), field, path, ref,
                                   "admits the request of another workload, %s (%s)" % (other_principal, reason)))
        except authz.PolicyError as err:
            out.append(finding("path", _ref(vs), field, path, ref, "cannot be decided: %s" % err))
    return out


def check(objects, gateway_principals=(), gateway="", root_namespace=authz.ROOT_NAMESPACE, namespaces=None,
          absent_namespaces=None, other_principal=OTHER_PRINCIPAL):
    """Every broken reference among `objects` (everything the cluster holds that the checks read:
    ServiceAccounts, Services, workloads, Namespaces, AuthorizationPolicies, VirtualServices,
    DestinationRules, ServiceEntries, Routes, ConfigMaps).

    gateway_principals: the principals of the gateway kfocp runs (the first is the one the
    requests of the path check come from); gateway: the kubeflow Gateway as <namespace>/<name>
    ("" skips the path check); root_namespace: the mesh's root namespace; namespaces: the
    namespaces whose objects' references are checked (None: all); absent_namespaces: the
    namespaces whose hosts are skipped when the namespace does not exist (None: OTHER_COMPONENTS).

    Returns {findings: [...], skipped: {namespace: [where]}, checked: {check: count}}."""
    index = Index(objects)
    wanted = None if namespaces is None else set(namespaces)

    def scope(obj):
        return wanted is None or (_meta(obj).get("namespace") or "") in wanted

    gateway_principals = [p for p in gateway_principals or [] if p]
    skipped, notes, counts = {}, {}, {"principals": 0, "hosts": 0, "backends": 0, "paths": 0}
    findings = check_principals(index, scope, set(gateway_principals), counts)
    absent_ok = set(OTHER_COMPONENTS if absent_namespaces is None else absent_namespaces)
    hosts, services = check_hosts(index, scope, absent_ok, skipped, counts)
    findings += hosts
    findings += check_backends(index, services, counts)
    if gateway and gateway_principals:
        findings += [f for f in check_paths(index, gateway, gateway_principals[0], root_namespace, other_principal,
                                            notes, counts)
                     if scope({"metadata": {"namespace": f["source"]["namespace"]}})]
    return {"findings": findings, "skipped": dict((k, sorted(set(v))) for k, v in skipped.items()),
            "no_proxy": sorted(notes.get("no_proxy", [])), "internal": sorted(notes.get("internal", [])),
            "checked": counts}


# ---------------------------------------------------------------- what the check reads

# (group, kind, versions in the order tried): the kinds the check reads, everywhere (what is
# referred to, and the root namespace's policies) or only in the checked namespaces (ConfigMaps)
EVERYWHERE = (("", "Namespace", ("v1",)), ("", "ServiceAccount", ("v1",)), ("", "Service", ("v1",)),
              ("apps", "Deployment", ("v1",)), ("apps", "StatefulSet", ("v1",)), ("apps", "DaemonSet", ("v1",)),
              ("batch", "Job", ("v1",)), ("batch", "CronJob", ("v1",)),
              ("security.istio.io", "AuthorizationPolicy", ("v1", "v1beta1")),
              ("networking.istio.io", "VirtualService", ("v1", "v1beta1", "v1alpha3")),
              ("networking.istio.io", "DestinationRule", ("v1", "v1beta1", "v1alpha3")),
              ("networking.istio.io", "ServiceEntry", ("v1", "v1beta1", "v1alpha3")),
              ("route.openshift.io", "Route", ("v1",)))
IN_NAMESPACES = (("", "ConfigMap", ("v1",)),)


def read(client, namespaces=None):
    """Everything `check` reads, from the API server: the kinds of EVERYWHERE in every namespace,
    those of IN_NAMESPACES in `namespaces` (every namespace when None). A kind the server does not
    serve (Route off OpenShift, Istio's without a mesh) is left out, and named in the second value."""
    served = client.resources()
    objects, missing = [], []
    for group, kind, versions in EVERYWHERE + IN_NAMESPACES:
        api_version = next(("%s/%s" % (group, v) if group else v for v in versions
                            if (("%s/%s" % (group, v) if group else v), kind) in served), None)
        if api_version is None:
            missing.append("%s.%s" % (kind, group) if group else kind)
            continue
        res = client.resource(api_version, kind)
        where = [None] if namespaces is None or (group, kind, versions) in EVERYWHERE else list(namespaces)
        for namespace in where:
            for item in client.list(res, namespace=namespace):
                item.setdefault("apiVersion", api_version)
                item.setdefault("kind", kind)
                objects.append(item)
    return objects, missing
