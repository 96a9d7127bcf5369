# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The service mesh Kubeflow runs in, in one of three flavours.

- ``ossm2``: OpenShift Service Mesh 2.6 (Maistra): the operator Subscription, a dedicated
  ServiceMeshControlPlane with an additional ingress gateway for Kubeflow, and the
  ServiceMeshMemberRoll ``default``. Namespaces join with a ServiceMeshMember, or with the mesh
  label that the member roll selects.
- ``ossm3``: OpenShift Service Mesh 3 (the Sail operator): the operator Subscription, an ``Istio``
  and an ``IstioCNI`` resource, and the Kubeflow ingress gateway as an injected gateway Deployment
  with its Service. Namespaces join by labels (the discovery label and the injection label).
- ``external``: an Istio someone else runs, given by its namespace, gateway and revision. Nothing
  mesh-wide is created; namespaces join by labels.

Every Istio object kfocp writes takes its apiVersion from istio_api_versions(), the one place
that knows which versions each flavour serves.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

from ansible_collections.kfocp.kubeflow.plugins.module_utils import role_defaults, versions
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import (
    dns_label, labels, namespace, require)

FLAVOURS = ("ossm2", "ossm3", "external")
OLM = "operators.coreos.com/v1alpha1"
MAISTRA_V2 = "maistra.io/v2"
MAISTRA_V1 = "maistra.io/v1"
SAIL = "sailoperator.io/v1"
# Istio API versions per flavour. OSSM 2.6 (Istio 1.20) serves no networking.istio.io/v1;
# EnvoyFilter is v1alpha3 everywhere; security v1beta1 is the OSSM 2.6 storage version.
_ISTIO_APIS = {
    "ossm2": {"networking": "networking.istio.io/v1beta1", "security": "security.istio.io/v1beta1"},
    "upstream": {"networking": "networking.istio.io/v1", "security": "security.istio.io/v1"},
}
_NETWORKING_KINDS = ("Gateway", "VirtualService", "DestinationRule", "ServiceEntry", "Sidecar", "WorkloadEntry",
                     "WorkloadGroup")
_SECURITY_KINDS = ("AuthorizationPolicy", "PeerAuthentication", "RequestAuthentication")
_VERSION_2 = re.compile(r"^v2\.[0-9]+$")
# The Service Mesh 2 operator installs the Istio CRDs of the control plane's version (and never
# replaces newer ones): those of v2.3 and v2.4 serve no security.istio.io/v1, in which the profiles,
# namespace_policies and components roles write AuthorizationPolicies; v2.5 and v2.6 serve it.
OSSM2_VERSIONS = ("v2.5", "v2.6")
_VERSION_3 = re.compile(r"^v1\.[0-9]+(\.[0-9]+|-latest)$")

# The nested settings of the role's dict variables (service_mesh_gateway, _ossm2, _ossm3, _external):
# only the keys given change.
NESTED = {
    "gateway": {"name": "kubeflow-ingressgateway", "namespace": "", "http_port": 8080, "https_port": 8443,
                "service_type": "ClusterIP", "route": False, "route_host": "", "replicas": 1},
    "ossm2": {"name": "kubeflow", "namespace": "", "version": "v2.6", "member_selector": True,
              "manage_network_policy": False,
              "subscription": {"name": "servicemeshoperator", "channel": "", "source": "redhat-operators",
                               "source_namespace": "openshift-marketplace", "namespace": "openshift-operators"}},
    # The Istio version and the channel come from the support matrix (module_utils/versions): a
    # channel pinned to one minor of the Sail operator, and a version that operator installs.
    "ossm3": {"name": "default", "version": versions.DEFAULT_ISTIO, "update_strategy": "InPlace", "revision": "",
              "cni_namespace": "istio-cni",
              "subscription": {"name": "servicemeshoperator3", "channel": "", "source": "redhat-operators",
                               "source_namespace": "openshift-marketplace", "namespace": "openshift-operators"}},
    "external": {"namespace": "", "gateway": "", "revision": "", "gateway_labels": {}, "api": "upstream",
                 "member_label": {}, "service_account": ""},
}
# The role's settings as the builder names them (service_mesh_<key>): the role's defaults
# (role_defaults) with NESTED, and from the pre-flight, not inputs of the role, the cluster's OpenShift
# minor and the installed operators' versions ({package: version}).
DEFAULTS = dict(role_defaults.unprefixed("service_mesh", ("flavour", "namespace", "member_label", "olm", "keep_ossm2")),
                openshift="", installed={}, **NESTED)
# Upstream Kubeflow's `kubeflow-gateway` Gateway selects `istio: ingressgateway`: kfocp's gateway
# pods carry that label, and their own name in GATEWAY_LABEL so that kfocp's EnvoyFilters select
# only them.
UPSTREAM_GATEWAY_SELECTOR = {"istio": "ingressgateway"}
GATEWAY_LABEL = "kfocp.io/gateway"
# The settings that decide how a namespace joins the mesh.
MEMBERSHIP_KEYS = ("flavour", "namespace", "member_label", "ossm2", "ossm3", "external", "keep_ossm2")


def _merge(defaults, given, field, top=False):
    if given is None:
        return copy.deepcopy(defaults)
    require(isinstance(given, dict), field, "must be a mapping", "Give the keys you want to change, the rest default")
    out = copy.deepcopy(defaults)
    for key, value in given.items():
        if value is None:  # not given (argument specs fill unset options with None)
            continue
        where = ("%s_%s" if top else "%s.%s") % (field, key)
        require(key in defaults, where, "is not a known setting", "Use one of %s" % ", ".join(sorted(defaults)))
        if isinstance(defaults[key], dict) and key not in ("member_label", "gateway_labels", "installed"):
            out[key] = _merge(defaults[key], value, where)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _labels(value, field):
    return labels(value, field)


def normalise(settings, field="service_mesh"):
    """The settings with every default filled in, checked; raises DefinitionError naming the field."""
    s = _merge(DEFAULTS, settings or {}, field, top=True)
    require(s["flavour"] in FLAVOURS, field + "_flavour", "%r is not a mesh flavour" % (s["flavour"],),
            "Use one of %s" % ", ".join(FLAVOURS))
    dns_label(s["namespace"], field + "_namespace")
    _labels(s["member_label"], field + "_member_label")
    require(len(s["member_label"]) == 1, field + "_member_label", "must hold exactly one label",
            "Give one {key: value}; it marks the namespaces that are in the mesh")
    gw = s["gateway"]
    dns_label(gw["name"], field + "_gateway.name")
    for port in ("http_port", "https_port"):
        require(isinstance(gw[port], int) and 0 < gw[port] < 65536, "%s_gateway.%s" % (field, port),
                "%r is not a port" % (gw[port],), "Use a number from 1 to 65535")
    o2 = s["ossm2"]
    o2["namespace"] = o2["namespace"] or s["namespace"]
    dns_label(o2["name"], field + "_ossm2.name")
    dns_label(o2["namespace"], field + "_ossm2.namespace")
    # Service Mesh 2 deploys its gateways in the control plane's namespace; gateway.namespace is
    # for Service Mesh 3, whose gateway kfocp deploys itself.
    gw["namespace"] = o2["namespace"] if s["flavour"] == "ossm2" else (gw["namespace"] or s["namespace"])
    dns_label(gw["namespace"], field + "_gateway.namespace")
    require(isinstance(o2["manage_network_policy"], bool), field + "_ossm2.manage_network_policy",
            "must be true or false", "Leave it false (the default) unless you guard the gateway your own way")
    require(isinstance(o2["version"], str) and _VERSION_2.match(o2["version"]), field + "_ossm2.version",
            "%r is not a Service Mesh 2 control plane version" % (o2["version"],), "Use v2.<minor>, e.g. v2.6")
    require(o2["version"] in OSSM2_VERSIONS, field + "_ossm2.version",
            "%s: its Istio CRDs serve no security.istio.io/v1, the version of kfocp's AuthorizationPolicies"
            % o2["version"], "Use %s" % " or ".join(OSSM2_VERSIONS))
    o3 = s["ossm3"]
    require(isinstance(o3["version"], str) and _VERSION_3.match(o3["version"]), field + "_ossm3.version",
            "%r is not an Istio version" % (o3["version"],), "Use v1.<minor>.<patch> or v1.<minor>-latest")
    require(o3["update_strategy"] in ("InPlace", "RevisionBased"), field + "_ossm3.update_strategy",
            "%r is not an update strategy" % (o3["update_strategy"],), "Use InPlace or RevisionBased")
    dns_label(o3["name"], field + "_ossm3.name")
    dns_label(o3["cni_namespace"], field + "_ossm3.cni_namespace")
    sub3 = o3["subscription"]
    s["openshift"] = versions.minor(s["openshift"]) if s["openshift"] else ""
    sub3["channel"] = sub3["channel"] or versions.DEFAULT_CHANNELS.get(
        s["openshift"], versions.DEFAULT_CHANNELS[versions.SUPPORTED[-1]])[versions.MESH3]
    sub2 = o2["subscription"]
    # Service Mesh 2's channel is known up to OpenShift 4.18 (versions.KNOWN_THROUGH): later, the user
    # names it. A role run without the pre-flight (no version) takes the known one.
    sub2["channel"] = sub2["channel"] or versions.DEFAULT_CHANNELS.get(
        s["openshift"] or versions.KNOWN_THROUGH[versions.MESH2], {}).get(versions.MESH2, "")
    if s["flavour"] == "ossm3":
        if s["olm"]:
            versions.check_channel(versions.MESH3, sub3["channel"], s["openshift"] or None,
                                   field + "_ossm3.subscription.channel")
        versions.check_istio(o3["version"], sub3["channel"] if s["olm"] else "",
                             (s["installed"] or {}).get(versions.MESH3), field + "_ossm3.version")
    if s["flavour"] == "ossm3" and o3["update_strategy"] == "RevisionBased" and not o3["revision"]:
        require(not o3["version"].endswith("-latest"), field + "_ossm3.revision",
                "cannot be derived from version %s with the RevisionBased strategy" % o3["version"],
                "Give a concrete version (v1.26.3), or set the revision (the IstioRevision name) yourself")
    ext = s["external"]
    if s["flavour"] == "external":
        for key in ("namespace", "gateway"):
            require(ext[key], "%s_external.%s" % (field, key), "is required with the external flavour",
                    "Give the %s of the mesh you use" % ("namespace of its ingress gateway" if key == "namespace"
                                                         else "name of its ingress gateway Service"))
        dns_label(ext["namespace"], field + "_external.namespace")
        dns_label(ext["gateway"], field + "_external.gateway")
        require(ext["api"] in ("upstream", "ossm2"), field + "_external.api", "%r is not known" % (ext["api"],),
                "Use upstream (Istio 1.22 or newer) or ossm2 (a Service Mesh 2 control plane)")
        _labels(ext["member_label"], field + "_external.member_label")
        _labels(ext["gateway_labels"], field + "_external.gateway_labels")
    require(not (s["keep_ossm2"] and s["flavour"] != "ossm3"), field + "_keep_ossm2",
            "only applies to the ossm3 flavour", "Set it only while moving from ossm2 to ossm3")
    if s["keep_ossm2"]:
        require(o2["namespace"] != s["namespace"], field + "_namespace",
                "is %s, the namespace of the Service Mesh 2 control plane that is kept" % s["namespace"],
                "Give Service Mesh 3 a namespace of its own, e.g. kubeflow-mesh3")
    return s


# ---------------------------------------------------------------- the one place for Istio API versions

def istio_api_versions(flavour, external_api="upstream"):
    """{kind: apiVersion} for every Istio kind kfocp writes, as the flavour's mesh serves them."""
    require(flavour in FLAVOURS, "flavour", "%r is not a mesh flavour" % (flavour,), "Use one of %s" % ", ".join(FLAVOURS))
    family = "ossm2" if flavour == "ossm2" or (flavour == "external" and external_api == "ossm2") else "upstream"
    apis = _ISTIO_APIS[family]
    versions = dict((kind, apis["networking"]) for kind in _NETWORKING_KINDS)
    versions.update((kind, apis["security"]) for kind in _SECURITY_KINDS)
    versions["EnvoyFilter"] = "networking.istio.io/v1alpha3"
    return versions


# ---------------------------------------------------------------- names derived from the settings

def revision(s):
    """The Istio revision that member namespaces and the gateway point at ('' = the default one)."""
    if s["flavour"] == "external":
        return s["external"]["revision"]
    if s["flavour"] == "ossm2":
        return s["ossm2"]["name"]
    o3 = s["ossm3"]
    if o3["revision"]:
        return o3["revision"]
    if o3["update_strategy"] == "InPlace":
        return "" if o3["name"] == "default" else o3["name"]
    return "%s-%s" % (o3["name"], o3["version"].replace(".", "-"))


def gateway_info(settings):
    """Where the Kubeflow ingress gateway is: what auth and the per-namespace policies need."""
    s = normalise(settings)
    if s["flavour"] == "external":
        ext = s["external"]
        # Istio's gateway chart labels istio-ingressgateway's pods istio: ingressgateway
        selector = dict(ext["gateway_labels"]) or {"istio": re.sub(r"^istio-", "", ext["gateway"])}
        name, gw_namespace = ext["gateway"], ext["namespace"]
        account = ext["service_account"] or name + "-service-account"
    else:
        name, gw_namespace = s["gateway"]["name"], s["gateway"]["namespace"]
        selector = gateway_pod_labels(name)
        # Service Mesh 2 runs its gateways as <name>-service-account; on 3 kfocp deploys it as <name>
        account = name + "-service-account" if s["flavour"] == "ossm2" else name
    return {"flavour": s["flavour"], "name": name, "namespace": gw_namespace, "service": name,
            "http_port": 80, "selector": selector, "mesh_namespace": s["namespace"],
            "service_account": account, "principal": principal(gw_namespace, account),
            # whether the mesh operator writes NetworkPolicies that admit every pod to the gateway
            "mesh_network_policies": s["flavour"] == "ossm2" and s["ossm2"]["manage_network_policy"],
            "api_versions": istio_api_versions(s["flavour"], s["external"]["api"])}


def gateway_pod_labels(name):
    """The labels of kfocp's gateway pods: what upstream's Gateway selects, and their own name."""
    return dict(UPSTREAM_GATEWAY_SELECTOR, **{GATEWAY_LABEL: name})


def principal(namespace_name, service_account, trust_domain="cluster.local"):
    """The mTLS identity (SPIFFE path) of a workload running as `service_account`."""
    return "%s/ns/%s/sa/%s" % (trust_domain, namespace_name, service_account)


def operator_package(settings):
    """The OLM Subscription whose CSV must be Succeeded before the mesh objects can be applied, or None."""
    s = normalise(settings)
    if s["flavour"] == "external" or not s["olm"]:
        return None
    sub = s[s["flavour"]]["subscription"]
    return {"name": sub["name"], "namespace": sub["namespace"],
            "csv_label": "operators.coreos.com/%s.%s" % (sub["name"], sub["namespace"])}


def control_plane_ref(settings):
    """The object whose Ready condition says the control plane runs, or None."""
    s = normalise(settings)
    if s["flavour"] == "ossm2":
        return {"api_version": MAISTRA_V2, "kind": "ServiceMeshControlPlane", "name": s["ossm2"]["name"],
                "namespace": s["ossm2"]["namespace"]}
    if s["flavour"] == "ossm3":
        return {"api_version": SAIL, "kind": "Istio", "name": s["ossm3"]["name"], "namespace": ""}
    return None


# ---------------------------------------------------------------- membership

def mesh_membership(namespace_name, settings):
    """What namespace `namespace_name` needs to be in the mesh, per flavour.

    Returns {"labels": {...}, "annotations": {...}, "objects": [...]}: labels and annotations to
    put on the Namespace (a shared patch: profile namespaces are the profile controller's), and
    objects to create in it (a ServiceMeshMember for ossm2; nothing for ossm3 and external).
    """
    return membership(namespace_name, normalise(settings))


def membership(namespace_name, s):
    """mesh_membership() for settings `s` that normalise() returned (callers with many namespaces
    normalise once)."""
    dns_label(namespace_name, "namespace")
    labels = {}
    extra = []
    if s["flavour"] in ("ossm2", "ossm3"):
        labels.update(s["member_label"])
    if s["flavour"] == "ossm2" or s["keep_ossm2"]:
        # while Service Mesh 2 is kept beside 3, its members stay members of it too
        extra.append({"apiVersion": MAISTRA_V1, "kind": "ServiceMeshMember",
                      "metadata": {"name": "default", "namespace": namespace_name},
                      "spec": {"controlPlaneRef": {"name": s["ossm2"]["name"],
                                                   "namespace": s["ossm2"]["namespace"]}}})
    if s["flavour"] == "external":
        labels.update(s["external"]["member_label"])
    if s["flavour"] != "ossm2":
        rev = revision(s)
        if rev:
            labels["istio.io/rev"] = rev
        else:
            labels["istio-injection"] = "enabled"
    return {"labels": labels, "annotations": {}, "objects": extra}


def service_mesh_settings(variables):
    """The settings mesh_membership() needs, from the service_mesh role's variables
    (service_mesh_<key>); keys that are not set are left to the defaults."""
    return dict((key, variables["service_mesh_" + key]) for key in MEMBERSHIP_KEYS
                if variables.get("service_mesh_" + key) is not None)


def member_patch(namespace_name, settings, set_name=None):
    """The shared Namespace patch that joins an existing namespace by labels."""
    membership = mesh_membership(namespace_name, settings)
    annotations = {"kfocp.io/ownership": "shared"}
    if set_name:
        annotations["kfocp.io/set"] = set_name
    annotations.update(membership["annotations"])
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": namespace_name, "labels": membership["labels"], "annotations": annotations}}


# ---------------------------------------------------------------- objects per flavour

def _subscription(sub):
    return {"apiVersion": OLM, "kind": "Subscription",
            "metadata": {"name": sub["name"], "namespace": sub["namespace"]},
            "spec": {"name": sub["name"], "channel": sub["channel"], "source": sub["source"],
                     "sourceNamespace": sub["source_namespace"], "installPlanApproval": "Automatic"}}


def _ossm2_objects(s):
    o2 = s["ossm2"]
    gw = s["gateway"]
    ports = [{"name": "http2", "port": 80, "targetPort": gw["http_port"], "protocol": "TCP"},
             {"name": "https", "port": 443, "targetPort": gw["https_port"], "protocol": "TCP"}]
    smcp = {"apiVersion": MAISTRA_V2, "kind": "ServiceMeshControlPlane",
            "metadata": {"name": o2["name"], "namespace": o2["namespace"]},
            "spec": {"version": o2["version"], "mode": "MultiTenant",
                     "tracing": {"type": "None"},
                     # The operator's default is autoInject false (smcp-templates/v2.6/base): its
                     # injector then adds a proxy only to pods labelled or annotated
                     # sidecar.istio.io/inject "true", and a user's notebook, like every pod upstream
                     # Kubeflow runs in a profile namespace, carries neither, so no sidecar would
                     # enforce the profile's AuthorizationPolicies. On, every pod of a member
                     # namespace gets one unless it says "false", as with upstream Istio's
                     # istio-injection=enabled namespaces.
                     "proxy": {"injection": {"autoInject": True}},
                     # Off: the operator's own NetworkPolicies would admit every pod to the
                     # gateways (one allows all ingress to each gateway's pods), and NetworkPolicies
                     # add up, so the auth role's policy could not keep pods other than
                     # oauth-proxy off the gateway. kfocp writes the policies it needs itself, as
                     # on Service Mesh 3.
                     "security": {"manageNetworkPolicy": bool(o2["manage_network_policy"])},
                     "addons": {"grafana": {"enabled": False}, "kiali": {"enabled": False},
                                "prometheus": {"enabled": False}},
                     "gateways": {
                         "enabled": True,
                         "openshiftRoute": {"enabled": False},
                         "ingress": {"enabled": False},
                         "egress": {"enabled": False},
                         "additionalIngress": {gw["name"]: {
                             "enabled": True, "namespace": o2["namespace"],
                             "routeConfig": {"enabled": False},
                             "service": {"type": gw["service_type"], "ports": ports,
                                         "metadata": {"labels": gateway_pod_labels(gw["name"])}},
                             "runtime": {"deployment": {"replicas": gw["replicas"]},
                                         "pod": {"metadata": {"labels": gateway_pod_labels(gw["name"])}}}}}}}}
    # spec.members is left out on purpose: ServiceMeshMembers, the mesh operator and the
    # per-namespace policies add members there, and kfocp must not take them back.
    roll_spec = {}
    if o2["member_selector"]:
        roll_spec["memberSelectors"] = [{"matchLabels": dict(s["member_label"])}]
    smmr = {"apiVersion": MAISTRA_V1, "kind": "ServiceMeshMemberRoll",
            "metadata": {"name": "default", "namespace": o2["namespace"]}, "spec": roll_spec}
    objs = [namespace(o2["namespace"], s["member_label"])]
    if s["olm"]:
        require(o2["subscription"]["channel"], "service_mesh_ossm2.subscription.channel",
                "is required on OpenShift %s: the Service Mesh 2 operator's channel (stable) is known for OpenShift "
                "%s to %s only" % (s["openshift"], versions.SUPPORTED[0], versions.KNOWN_THROUGH[versions.MESH2]),
                "Use service_mesh_flavour ossm3 on this cluster, or give the channel your catalog publishes "
                "servicemeshoperator in")
        objs.append(_subscription(o2["subscription"]))
    return objs + [smcp, smmr]


def _gateway_workload(s, rev):
    """The Kubeflow ingress gateway by gateway injection: the injector fills in the proxy image."""
    gw = s["gateway"]
    name, gw_ns = gw["name"], gw["namespace"]
    selector = dict(gateway_pod_labels(name), app=name)
    pod_labels = dict(selector, **{"sidecar.istio.io/inject": "true"})
    if rev:
        pod_labels["istio.io/rev"] = rev
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": gw_ns}}
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": gw_ns},
        "spec": {"replicas": gw["replicas"], "selector": {"matchLabels": selector},
                 "template": {"metadata": {"labels": pod_labels,
                                           "annotations": {"inject.istio.io/templates": "gateway"}},
                              "spec": {"serviceAccountName": name,
                                       "containers": [{"name": "istio-proxy", "image": "auto",
                                                       "securityContext": {"allowPrivilegeEscalation": False,
                                                                           "runAsNonRoot": True,
                                                                           "capabilities": {"drop": ["ALL"]}}}]}}}}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": gw_ns,
                                                                   "labels": dict(selector)},
               "spec": {"type": gw["service_type"], "selector": dict(selector),
                        "ports": [{"name": "http2", "port": 80, "targetPort": gw["http_port"], "protocol": "TCP"},
                                  {"name": "https", "port": 443, "targetPort": gw["https_port"], "protocol": "TCP"}]}}
    # Gateways need to read the secrets of their TLS certificates (Istio's gateway chart does the same).
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name + "-sds", "namespace": gw_ns},
            "rules": [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "watch", "list"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": name + "-sds", "namespace": gw_ns},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name + "-sds"},
               "subjects": [{"kind": "ServiceAccount", "name": name}]}
    return [sa, role, binding, deployment, service]


def _route(s):
    gw = s["gateway"]
    route = {"apiVersion": "route.openshift.io/v1", "kind": "Route",
             "metadata": {"name": gw["name"], "namespace": gw["namespace"]},
             "spec": {"to": {"kind": "Service", "name": gw["name"], "weight": 100},
                      "port": {"targetPort": "http2"},
                      "tls": {"termination": "edge", "insecureEdgeTerminationPolicy": "Redirect"}}}
    if gw["route_host"]:
        route["spec"]["host"] = gw["route_host"]
    return route


def _ossm3_objects(s):
    o3 = s["ossm3"]
    rev = revision(s)
    istio = {"apiVersion": SAIL, "kind": "Istio", "metadata": {"name": o3["name"]},
             "spec": {"namespace": s["namespace"], "version": o3["version"],
                      "updateStrategy": {"type": o3["update_strategy"]},
                      "values": {"meshConfig": {"discoverySelectors": [{"matchLabels": dict(s["member_label"])}]}}}}
    cni = {"apiVersion": SAIL, "kind": "IstioCNI", "metadata": {"name": "default"},
           "spec": {"namespace": o3["cni_namespace"], "version": o3["version"]}}
    gw_labels = dict(s["member_label"])
    if not rev:
        gw_labels["istio-injection"] = "enabled"
    else:
        gw_labels["istio.io/rev"] = rev
    objs = [namespace(s["namespace"], s["member_label"]), namespace(o3["cni_namespace"])]
    if s["gateway"]["namespace"] != s["namespace"]:
        objs.append(namespace(s["gateway"]["namespace"], gw_labels))
    else:
        objs[0] = namespace(s["namespace"], gw_labels)
    if s["olm"]:
        objs.append(_subscription(o3["subscription"]))
    objs += [istio, cni] + _gateway_workload(s, rev)
    if s["keep_ossm2"]:
        kept = _ossm2_objects(s)
        names = set((o["kind"], o["metadata"]["name"]) for o in objs)
        objs += [o for o in kept if (o["kind"], o["metadata"]["name"]) not in names]
    return objs


def objects(settings):
    """The role's whole desired state for the chosen flavour."""
    s = normalise(settings)
    if s["flavour"] == "ossm2":
        objs = _ossm2_objects(s)
    elif s["flavour"] == "ossm3":
        objs = _ossm3_objects(s)
    else:
        objs = []
    if s["gateway"]["route"] and s["flavour"] != "external":
        objs.append(_route(s))
    return objs


# ---------------------------------------------------------------- moving from ossm2 to ossm3

def _ready(obj):
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == "Ready":
            return cond.get("status") == "True"
    return False


def _owned(obj, instance):
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return labels.get("app.kubernetes.io/managed-by") == "kfocp" and labels.get("kfocp.io/instance") == instance


def migration_plan(settings, live, instance):
    """Check that a move from Service Mesh 2.6 to 3 can start, and return what it relabels.

    `live` is what the cluster holds: {"smcp": the ServiceMeshControlPlane or None, "smmr": the
    ServiceMeshMemberRoll or None, "istio": the Istio resource or None, "members": [namespaces
    holding a ServiceMeshMember of this control plane], "namespaces": [the profile namespaces]}.
    Every unmet precondition is named in one DefinitionError, before any change. Returns
    {"members": [...], "member_patches": [...], "moved": bool}: one shared label patch per
    member namespace (set "mesh_members"), and whether the 2.6 control plane is already gone
    after an earlier move.
    """
    s = normalise(dict(settings or {}, flavour="ossm3"))
    o2 = s["ossm2"]
    smcp = live.get("smcp")
    where = "ServiceMeshControlPlane %s/%s" % (o2["namespace"], o2["name"])
    moved = not smcp and _owned(live.get("istio"), instance)
    problems = []
    if o2["namespace"] == s["namespace"]:
        problems.append("service_mesh_namespace is %s, the Service Mesh 2 control plane's namespace: give "
                        "Service Mesh 3 its own namespace (mesh_migrate_namespace, e.g. kubeflow-mesh3)" % s["namespace"])
    if not smcp and not moved:
        problems.append("%s does not exist: this moves a kfocp-managed Service Mesh 2.6 install and there is none; "
                        "set service_mesh_ossm2 name and namespace to the control plane kfocp made" % where)
    elif smcp:
        if not _owned(smcp, instance):
            problems.append("%s was not made by kfocp instance %r: only a kfocp-managed control plane is moved; "
                            "set kfocp_instance to the install that made it" % (where, instance))
        version = (smcp.get("spec") or {}).get("version")
        if version != "v2.6":
            problems.append("%s is on version %s, not v2.6: upgrade it to v2.6 first (service_mesh_ossm2.version: "
                            "v2.6, run site.yml), then move" % (where, version))
    if problems:
        raise_problems(problems)
    members = set(live.get("namespaces") or []) | set(live.get("members") or [])
    smmr = live.get("smmr") or {}
    members |= set((smmr.get("spec") or {}).get("members") or [])
    members |= set((smmr.get("status") or {}).get("members") or [])
    members -= {o2["namespace"], s["namespace"], s["gateway"]["namespace"], ""}
    members = sorted(members)
    return {"members": members, "member_patches": [member_patch(name, s, "mesh_members") for name in members],
            "moved": moved}


def raise_problems(problems):
    require(False, "preconditions", "%d not met: %s" % (len(problems), "; ".join(problems)),
            "Nothing was changed")
