# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""OpenShift Serverless: the operator (OLM), the Knative Serving system namespaces with their
system-namespace label, KnativeServing with the Kourier ingress, and the objects Knative needs
to work with OpenShift Service Mesh (mesh membership and NetworkPolicies)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

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


def data_path_principals(serving_namespace="knative-serving", ingress_namespace="knative-serving-ingress"):
    """The mesh principals of the requests Knative's activator and Kourier gateway send to the
    inference pods."""
    return ["cluster.local/ns/%s/sa/%s" % (serving_namespace, ACTIVATOR_ACCOUNT),
            "cluster.local/ns/%s/sa/%s" % (ingress_namespace, KOURIER_GATEWAY_ACCOUNT)]


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
    if mesh.get("members", True):
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
    require(serving_ns != ingress_ns, "serverless_ingress_namespace", "is the same as serverless_serving_namespace",
            "Use two namespaces, e.g. knative-serving and knative-serving-ingress")
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
# AuthorizationPolicies admit the activator (and the Kourier gateway) by their mTLS principals,
# which exist only when they have a sidecar.
MESH_DEPLOYMENTS = ("activator", "autoscaler", "3scale-kourier-gateway")
INJECT = "sidecar.istio.io/inject"
REWRITE_PROBES = "sidecar.istio.io/rewriteAppHTTPProbers"


def mesh_sidecars(spec, names=MESH_DEPLOYMENTS):
    """spec.deployments with each of `names` labelled for sidecar injection (entries the user
    gave for them keep their other settings)."""
    deployments = copy.deepcopy(spec.get("deployments") or [])
    require(isinstance(deployments, list) and all(isinstance(d, dict) and d.get("name") for d in deployments),
            "serverless_knative_serving_spec.deployments", "must be a list of {name, ...}",
            "Give each deployment override a name")
    by_name = dict((d["name"], d) for d in deployments)
    for name in names:
        entry = by_name.get(name)
        if entry is None:
            entry = {"name": name}
            deployments.append(entry)
        entry["labels"] = dict(entry.get("labels") or {}, **{INJECT: "true"})
        entry["annotations"] = dict(entry.get("annotations") or {}, **{REWRITE_PROBES: "true"})
    return deployments


def knative_serving(params):
    """The KnativeServing, with the Kourier ingress, in the serving namespace. With the mesh
    enabled, the activator, autoscaler and Kourier gateway get sidecars (mTLS principals)."""
    serving_ns = dns_label(params.get("serving_namespace") or "", "serverless_serving_namespace")
    spec = copy.deepcopy(params.get("spec") or {})
    require(isinstance(spec, dict), "serverless_knative_serving_spec", "must be a mapping", "Give the KnativeServing spec")
    if (params.get("mesh") or {}).get("enabled"):
        spec["deployments"] = mesh_sidecars(spec)
    ingress = spec.setdefault("ingress", {})
    ingress.setdefault("kourier", {})["enabled"] = True
    config = spec.setdefault("config", {})
    config.setdefault("network", {})["ingress-class"] = "kourier.ingress.networking.knative.dev"
    return [{"apiVersion": "operator.knative.dev/v1beta1", "kind": "KnativeServing",
             "metadata": {"name": params.get("name") or "knative-serving", "namespace": serving_ns}, "spec": spec}]
