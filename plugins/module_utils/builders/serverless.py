# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""OpenShift Serverless: the operator (OLM), the Knative Serving system namespaces with their
system-namespace label, KnativeServing with the Kourier ingress, and the objects Knative needs
to work with OpenShift Service Mesh (mesh membership and NetworkPolicies)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.kfocp.kubeflow.plugins.module_utils import versions
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import olm
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import dns_label, namespace, require
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import OWNERSHIP, SHARED, owned_by

SYSTEM_LABEL = "serving.knative.openshift.io/system-namespace"
NAME_LABEL = "kubernetes.io/metadata.name"
# The service accounts of Knative's data path as OpenShift Serverless ships it
# (openshift-knative/serverless-operator): the activator runs as `activator` in the serving
# namespace; Kourier's gateway (3scale-kourier-gateway, in <serving namespace>-ingress) names no
# service account, so it runs as `default` (`net-kourier` is its controller's).
ACTIVATOR_ACCOUNT = "activator"
KOURIER_GATEWAY_ACCOUNT = "default"
# Knative's autoscaler runs as `controller` and scrapes the inference pods' queue-proxy itself
# (knative.dev/serving pkg/autoscaler/metrics/stats_scraper.go, `scrapePods`: http://<pod IP>:9090/metrics;
# a non-2xx answer is an error).
AUTOSCALER_ACCOUNT = "controller"

# The namespaces OpenShift Serverless runs Knative Serving in: its webhook admits a KnativeServing only
# in REQUIRED_SERVING_NAMESPACE, which its CSV sets to knative-serving (serverless-operator
# knative-operator/pkg/webhook/knativeserving/webhook_validating.go `validateNamespace`,
# olm-catalog/serverless-operator/manifests/serverless-operator.clusterserviceversion.yaml); Kourier
# is moved to <serving namespace>-ingress (openshift-knative-operator/pkg/serving/kourier.go).
SERVING_NAMESPACE = "knative-serving"
INGRESS_SUFFIX = "-ingress"


def _mesh_defaults():
    """The serverless role's serverless_mesh default (role_defaults imports this module)."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import role_defaults
    return role_defaults.DEFAULTS["serverless"]["serverless_mesh"]


def data_path_principals(serving_namespace="knative-serving", ingress_namespace="knative-serving-ingress"):
    """The mesh principals of the requests Knative sends to the inference pods: the activator's and
    Kourier gateway's (the data path) and the autoscaler's (its metric scrapes)."""
    return ["cluster.local/ns/%s/sa/%s" % (serving_namespace, ACTIVATOR_ACCOUNT),
            "cluster.local/ns/%s/sa/%s" % (serving_namespace, AUTOSCALER_ACCOUNT),
            "cluster.local/ns/%s/sa/%s" % (ingress_namespace, KOURIER_GATEWAY_ACCOUNT)]


def check_namespaces(serving_ns, ingress_ns=None):
    """Refuse the namespaces OpenShift Serverless does not run Knative Serving in."""
    require(serving_ns == SERVING_NAMESPACE, "serverless_serving_namespace",
            "is %r, but OpenShift Serverless admits a KnativeServing only in %s (its webhook's validateNamespace, "
            "REQUIRED_SERVING_NAMESPACE in the operator's CSV)" % (serving_ns, SERVING_NAMESPACE),
            "Set it to %s or leave it out" % SERVING_NAMESPACE)
    if ingress_ns is not None:
        require(ingress_ns == serving_ns + INGRESS_SUFFIX, "serverless_ingress_namespace",
                "is %r, but OpenShift Serverless always runs Kourier in <serving namespace>-ingress, %s "
                "(openshift-knative-operator pkg/serving/kourier.go)" % (ingress_ns, serving_ns + INGRESS_SUFFIX),
                "Set it to %s or leave it out" % (serving_ns + INGRESS_SUFFIX))


def system_namespace(name, live, instance, labels=None):
    """The Namespace with the system-namespace label. Created as kfocp's when missing; when it
    exists and is not this instance's, the label is added to it as a shared patch (given back on
    uninstall), because an `ensure` Namespace would leave someone else's Namespace unlabelled."""
    wanted = {SYSTEM_LABEL: "true"}
    wanted.update(labels or {})
    if live is None or owned_by(live, instance):
        return namespace(name, wanted)
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": wanted, "annotations": {OWNERSHIP: SHARED}}}


def _selector(entry, field):
    require(isinstance(entry, dict) and entry, field, "must be a label mapping", "Give e.g. {%s: kubeflow-mesh}" % NAME_LABEL)
    return {"namespaceSelector": {"matchLabels": dict((str(k), str(v)) for k, v in entry.items())}}


def mesh_objects(mesh, system_namespaces, field="serverless_mesh"):
    """ServiceMeshMembers joining the system namespaces to the mesh, a NetworkPolicy in each that
    admits the mesh namespace, the other Knative system namespaces, the router, monitoring and the
    API server (a mesh member's own policies admit only mesh members), and a NetworkPolicy in each
    listed mesh member namespace that admits the Knative system namespaces."""
    require(isinstance(mesh, dict), field, "must be a mapping", "Give {enabled, namespace, control_plane}")
    if not mesh.get("enabled"):
        return []
    mesh_ns = dns_label(mesh.get("namespace") or "", field + ".namespace")
    control_plane = dns_label(mesh.get("control_plane") or "", field + ".control_plane")
    out = []
    if mesh.get("members", _mesh_defaults()["members"]):
        for ns in system_namespaces:
            out.append({"apiVersion": "maistra.io/v1", "kind": "ServiceMeshMember",
                        "metadata": {"name": "default", "namespace": ns},
                        "spec": {"controlPlaneRef": {"name": control_plane, "namespace": mesh_ns}}})
    allow = [{NAME_LABEL: mesh_ns}, {SYSTEM_LABEL: "true"}] + list(mesh.get("allow_from") or [])
    peers = [_selector(entry, "%s.allow_from" % field) for entry in allow]
    for ns in system_namespaces:
        out.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                    "metadata": {"name": "kfocp-knative-allow-mesh", "namespace": ns},
                    "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": copy.deepcopy(peers)}]}})
    for index, ns in enumerate(mesh.get("member_namespaces") or []):
        dns_label(ns, "%s.member_namespaces[%d]" % (field, index))
        out.append({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                    "metadata": {"name": "kfocp-allow-from-knative-system", "namespace": ns},
                    "spec": {"podSelector": {}, "policyTypes": ["Ingress"],
                             "ingress": [{"from": [_selector({SYSTEM_LABEL: "true"}, field)]}]}})
    return out


def objects(params):
    """The serverless role's first apply (before the operator runs). `params`: operators,
    serving_namespace, ingress_namespace, live_namespaces {name: the live Namespace, or a list of
    zero or one of them as k8s_info returns it}, instance, mesh, live_operator_groups (the cluster's
    OperatorGroups), openshift (the cluster's OpenShift minor)."""
    serving_ns = dns_label(params.get("serving_namespace") or "", "serverless_serving_namespace")
    ingress_ns = dns_label(params.get("ingress_namespace") or "", "serverless_ingress_namespace")
    check_namespaces(serving_ns, ingress_ns)
    live = params.get("live_namespaces") or {}
    instance = params.get("instance") or "kfocp"
    out = olm.objects(params.get("operators") or [], "serverless_operators", params.get("live_operator_groups"),
                      params.get("openshift") or None)
    names = [serving_ns, ingress_ns]
    for name in names:
        found = live.get(name)
        if isinstance(found, list):  # k8s_info resources: [] when missing
            found = found[0] if found else None
        out.append(system_namespace(name, found, instance))
    out.extend(mesh_objects(params.get("mesh") or {}, names))
    return out


# The Knative workloads that must run with a sidecar in the mesh: the per-namespace
# AuthorizationPolicies admit the activator, the autoscaler and the Kourier gateway by their mTLS
# principals, which exist only when they have a sidecar.
MESH_DEPLOYMENTS = ("activator", "autoscaler", "3scale-kourier-gateway")
INJECT = "sidecar.istio.io/inject"
REWRITE_PROBES = "sidecar.istio.io/rewriteAppHTTPProbers"


def _overrides(spec, key):
    entries = copy.deepcopy(spec.get(key) or [])
    require(isinstance(entries, list) and all(isinstance(d, dict) and d.get("name") for d in entries),
            "serverless_knative_serving_spec." + key, "must be a list of {name, ...}", "Give each override a name")
    return entries


def workload_overrides(spec, workloads=True):
    """The overrides of the Knative workloads under the field the operator reads: `workloads` (the
    user's `deployments`, deprecated for it, moved there; an entry given in both is merged, the
    `workloads` one winning as the operator applies it last), or `deployments` under an operator
    without `workloads`. Returns (field, entries)."""
    if not workloads:
        require("workloads" not in spec, "serverless_knative_serving_spec.workloads",
                "does not exist in the installed Serverless operator (before %s)" % versions.SERVERLESS_WORKLOADS_SINCE,
                "Use deployments, or upgrade the operator")
        return "deployments", _overrides(spec, "deployments")
    merged = []
    by_name = {}
    for entry in _overrides(spec, "deployments") + _overrides(spec, "workloads"):
        found = by_name.get(entry["name"])
        if found is None:
            by_name[entry["name"]] = entry
            merged.append(entry)
            continue
        for key in ("labels", "annotations"):
            if key in entry:
                entry[key] = dict(found.get(key) or {}, **entry[key])
        found.update(entry)
    return "workloads", merged


def mesh_sidecars(entries, names=MESH_DEPLOYMENTS):
    """The overrides with each of `names` labelled for sidecar injection (entries the user gave for
    them keep their other settings)."""
    by_name = dict((d["name"], d) for d in entries)
    for name in names:
        entry = by_name.get(name)
        if entry is None:
            entry = {"name": name}
            entries.append(entry)
        entry["labels"] = dict(entry.get("labels") or {}, **{INJECT: "true"})
        entry["annotations"] = dict(entry.get("annotations") or {}, **{REWRITE_PROBES: "true"})
    return entries


def knative_serving(params):
    """The KnativeServing, with the Kourier ingress, in the serving namespace. With the mesh
    enabled, the activator, autoscaler and Kourier gateway get sidecars (mTLS principals). The
    workload overrides go to `workloads` where the installed operator (params installed) has it."""
    serving_ns = dns_label(params.get("serving_namespace") or "", "serverless_serving_namespace")
    check_namespaces(serving_ns)
    spec = copy.deepcopy(params.get("spec") or {})
    require(isinstance(spec, dict), "serverless_knative_serving_spec", "must be a mapping", "Give the KnativeServing spec")
    field, entries = workload_overrides(spec, versions.knative_workloads(params.get("installed")))
    if (params.get("mesh") or {}).get("enabled"):
        entries = mesh_sidecars(entries)
    spec.pop("deployments", None)
    spec.pop("workloads", None)
    if entries:
        spec[field] = entries
    ingress = spec.setdefault("ingress", {})
    ingress.setdefault("kourier", {})["enabled"] = True
    config = spec.setdefault("config", {})
    config.setdefault("network", {})["ingress-class"] = "kourier.ingress.networking.knative.dev"
    return [{"apiVersion": "operator.knative.dev/v1beta1", "kind": "KnativeServing",
             "metadata": {"name": params.get("name") or "knative-serving", "namespace": serving_ns}, "spec": spec}]
