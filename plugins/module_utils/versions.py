# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The OpenShift versions kfocp supports and, per version, the operator channels, the Istio
versions and the API fields it uses: the support matrix, in one place.

The roles take their default channels from here, the pre-flight checks a user's choice against it,
and README's "Supported versions" table is rendered from it (`table()`). Each value was read from
upstream; docs/contracts.md names the source of each.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import require

# The OpenShift minors kfocp supports.
SUPPORTED = ("4.14", "4.15", "4.16", "4.17", "4.18", "4.19", "4.20")


def _key(version):
    return tuple(int(p) for p in version.split("."))


GPU = "gpu-operator-certified"
NFD = "nfd"
MESH2 = "servicemeshoperator"
MESH3 = "servicemeshoperator3"
SERVERLESS = "serverless-operator"

# package -> channel -> (first, last) OpenShift minor its bundles are published for; last None: no
# upper bound. Read from each bundle's com.redhat.openshift.versions (GPU operator), the NFD
# operator's release branches, the Sail operator bundle's README (4.13 or later) and Serverless'
# project.yaml (requirements.ocpVersion). `stable` holds every bundle of the package. Service Mesh
# 2: OpenShift's own ingress operator subscribes to its `stable` channel in redhat-operators up to
# 4.18 and to Service Mesh 3 from 4.19; the operator's bundle names no OpenShift version, and no
# source shows the channel on 4.19 or later (KNOWN_THROUGH).
CHANNELS = {
    GPU: {"v24.9": ("4.12", "4.17"), "v25.3": ("4.12", "4.19"), "v25.10": ("4.14", "4.20"),
          "v26.3": ("4.14", "4.22"), "v26.7": ("4.18", "4.22"), "stable": ("4.12", "4.22")},
    NFD: {"stable": ("4.14", "4.20")},
    MESH2: {"stable": ("4.14", "4.18")},
    MESH3: {"stable-3.0": ("4.13", None), "stable-3.1": ("4.13", None), "stable-3.2": ("4.13", None),
            "stable-3.3": ("4.13", None), "stable-3.4": ("4.13", None), "stable": ("4.13", None)},
    SERVERLESS: {"stable-1.35": ("4.14", "4.18"), "stable-1.36": ("4.14", "4.20"), "stable-1.37": ("4.14", "4.23"),
                 "stable-1.38": ("4.16", "4.22"), "stable": ("4.12", "4.23")},
}


# package -> the last OpenShift minor whose catalog the matrix knows the channels of: on a later one
# kfocp has no default channel of the package and takes the one the user gives as it is.
KNOWN_THROUGH = {MESH2: "4.18"}


def _known(package, version):
    last = KNOWN_THROUGH.get(package)
    return last is None or _key(version) <= _key(last)


def _serverless_channel(version):
    # Serverless 1.38 is published from 4.16 on; 1.37 is the newest one for 4.14 and 4.15.
    return "stable-1.38" if _key(version) >= _key("4.16") else "stable-1.37"


# The channel kfocp subscribes to by default, per OpenShift minor: a pinned channel, never a
# floating one, so that an install does not move to a new minor of the operator by itself.
# GPU: v25.10, the newest channel published for every supported minor.
DEFAULT_CHANNELS = dict(
    (v, dict({GPU: "v25.10", NFD: "stable", MESH3: "stable-3.2", SERVERLESS: _serverless_channel(v)},
             **({MESH2: "stable"} if _known(MESH2, v) else {}))) for v in SUPPORTED)

# Sail operator (Service Mesh 3) minor -> the Istio versions it installs and the ones it refuses as
# end-of-life (pkg/istioversion/versions.ossm.yaml at the newest patch of each minor).
_V124 = ["v1.24.6", "v1.24.5", "v1.24.4", "v1.24.3"]
_V126 = ["v1.26.8", "v1.26.6", "v1.26.4", "v1.26.3", "v1.26.2"]
_V127 = ["v1.27.9", "v1.27.8", "v1.27.5", "v1.27.3"]
_V128 = ["v1.28.10", "v1.28.8", "v1.28.6", "v1.28.5", "v1.28.4"]
SAIL = {
    "3.0": {"istio": _V124, "eol": []},
    "3.1": {"istio": _V126 + _V124, "eol": []},
    "3.2": {"istio": _V127 + _V126 + _V124, "eol": []},
    "3.3": {"istio": _V128 + _V127 + _V126, "eol": []},
    "3.4": {"istio": ["v1.30.3", "v1.30.1"] + _V128 + _V127, "eol": _V126},
}
# The Istio version kfocp installs on Service Mesh 3: one every Sail operator from 3.2 to 3.4 installs.
DEFAULT_ISTIO = "v1.27.3"

# Fields and APIs kfocp writes that exist only from some version on.
FEATURES = [
    {"what": "NodeFeatureDiscovery spec.operand.workerTolerations", "package": NFD, "since": "4.19",
     "before": "left out: the NFD operator's workers tolerate every NoSchedule taint"},
    {"what": "ValidatingAdmissionPolicy admissionregistration.k8s.io/v1 (profile_self_service)", "since": "4.17",
     "before": "the profile_self_service role cannot run"},
]

# The NFD operand image of the NFD operators that take it only from NodeFeatureDiscovery
# spec.operand.image (release-4.14 to 4.16: `OperandSpec.ImagePath()` returns that field, and no
# code reads NODE_FEATURE_DISCOVERY_IMAGE; from 4.17 an empty field falls back to that variable):
# the image of the release's CSV (its NODE_FEATURE_DISCOVERY_IMAGE and alm-examples) and
# manifests/image-references (openshift/cluster-nfd-operator
# manifests/stable/manifests/nfd.clusterserviceversion.yaml at release-4.14 a62d778a, release-4.15
# 1e57eb5f, release-4.16 1536f9ef). A mirrored or product image is given in gpu_nfd_spec.operand.image.
NFD_OPERAND_IMAGES = {"4.14": "quay.io/openshift/origin-node-feature-discovery:4.14",
                      "4.15": "quay.io/openshift/origin-node-feature-discovery:4.15",
                      "4.16": "quay.io/openshift/origin-node-feature-discovery:4.16"}


def nfd_operand_image(version, installed=None):
    """The image kfocp must give NodeFeatureDiscovery spec.operand.image for the NFD operator of
    OpenShift `version` (or the installed one, {package: version}); None where the operator picks
    its own."""
    have = (installed or {}).get(NFD)
    at = minor(have, NFD) if have else supported(version)
    return NFD_OPERAND_IMAGES.get(at)


# redhat-cop proactive-node-scaling-operator (community catalog, channel alpha, 0.1.0 to 0.4.2):
# NodeScalingWatermark spec.priorityClassName exists from v0.3.0 (69f0ea6e) on; v0.1.0 (35a2ca58)
# and v0.2.0 (1e3d0e4e) have an integer spec.priority instead (api/v1alpha1/nodescalingwatermark_types.go).
WATERMARK = "proactive-node-scaling-operator"
WATERMARK_PRIORITY_CLASS_SINCE = "0.3"


def watermark_priority_class(installed):
    """Whether the installed watermark operator ({package: version}) takes spec.priorityClassName;
    True when it is not installed (yet): every release from 0.3.0 does."""
    have = (installed or {}).get(WATERMARK)
    return not have or _key(minor(have, WATERMARK)) >= _key(WATERMARK_PRIORITY_CLASS_SINCE)


# KnativeServing spec.workloads (knative/operator pkg/apis/operator/base/common.go: `deployments` is
# "DEPRECATED. Use workloads"; both are applied, deployments first). Every Serverless release read
# has it: its vendored knative.dev/operator at release-1.33 629e0378, release-1.35 1f3f1f12 (module
# v0.42.2, Knative 1.15), release-1.37 c9356eaa and main 02f6bc2c (1.38).
SERVERLESS_WORKLOADS_SINCE = "1.33"


def knative_workloads(installed):
    """Whether the installed Serverless operator ({package: version}) takes KnativeServing
    spec.workloads; True when it is not installed (yet): every channel of the matrix has it."""
    have = (installed or {}).get(SERVERLESS)
    return not have or _key(minor(have, SERVERLESS)) >= _key(SERVERLESS_WORKLOADS_SINCE)


_VERSION = re.compile(r"^v?([0-9]+)\.([0-9]+)(\.[0-9]+.*)?$")
_SAIL_CHANNEL = re.compile(r"^stable-([0-9]+\.[0-9]+)$")


def minor(version, field="kfocp_openshift_version"):
    """'4.18' of '4.18.3', 'v4.18' or '4.18'; raises naming `field` when it is no version."""
    match = _VERSION.match(str(version or ""))
    require(match is not None, field, "%r is not an OpenShift version" % (version,),
            "Give the cluster's version, e.g. 4.18 or 4.18.3 (oc get clusterversion version)")
    return "%s.%s" % (match.group(1), match.group(2))


def published(package, channel, version):
    """Whether `channel` of `package` is published for OpenShift `version` (a minor)."""
    first, last = CHANNELS[package][channel]
    return _key(first) <= _key(version) and (last is None or _key(version) <= _key(last))


def openshift(detected, given, field="kfocp_openshift_version"):
    """The OpenShift minor kfocp works with: the cluster's (`detected`, ClusterVersion's
    status.desired.version, or None on a cluster without one), which `given` (the inventory's) must
    match when set; `given` alone on a cluster without ClusterVersion. Refused when unsupported."""
    found = minor(detected, "ClusterVersion version") if detected else None
    chosen = minor(given, field) if given else None
    require(found or chosen, field, "is required: the cluster has no ClusterVersion to read OpenShift's version from",
            "Set it to the OpenShift version the roles should be chosen for, one of %s" % ", ".join(SUPPORTED))
    require(not (found and chosen) or found == chosen, field,
            "is %s, but the cluster runs OpenShift %s (ClusterVersion version)" % (given, detected),
            "Set it to %s or leave it out" % found)
    version = found or chosen
    require(version in SUPPORTED, field if not found else "ClusterVersion version",
            "OpenShift %s is not supported" % (detected or given),
            "kfocp supports OpenShift %s" % ", ".join(SUPPORTED))
    return version


def supported(version, field="kfocp_openshift_version"):
    """The minor of `version`, refused when kfocp does not support it; None when not known."""
    if not version:
        return None
    found = minor(version, field)
    require(found in SUPPORTED, field, "OpenShift %s is not supported" % version,
            "kfocp supports OpenShift %s" % ", ".join(SUPPORTED))
    return found


def default_channel(package, version, field):
    """The matrix's channel of `package` for OpenShift `version`; None for a package it has none of."""
    require(version, "kfocp_openshift_version",
            "is not known, so %s has no default channel" % field,
            "Run playbooks/site.yml (its pre-flight reads the cluster's version), set kfocp_openshift_version, "
            "or give %s.channel" % field)
    return DEFAULT_CHANNELS[supported(version)].get(package)


def check_channel(package, channel, version, field):
    """Refuse a channel of a package in the matrix that is not published for `version`."""
    version = supported(version)
    if package not in CHANNELS or not version or not _known(package, version):
        return channel
    channels = CHANNELS[package]
    good = sorted((c for c in channels if published(package, c, version)), key=_channel_key)
    require(channel in channels and published(package, channel, version), field,
            "channel %r of %s is not published for OpenShift %s" % (channel, package, version),
            "Use one of %s" % ", ".join(good))
    return channel


def _channel_key(channel):
    return [int(p) if p.isdigit() else p for p in re.split(r"[^0-9a-z]+|(?<=[a-z])(?=[0-9])", channel) if p]


def sail_minor(channel, installed=None):
    """The Sail operator minor an Istio version is checked against: the installed operator's
    (its CSV's version), else the pinned channel's, else (a floating channel) the newest known."""
    if installed:
        found = minor(installed, "servicemeshoperator3 ClusterServiceVersion")
        if found in SAIL:
            return found
    match = _SAIL_CHANNEL.match(channel or "")
    if match and match.group(1) in SAIL:
        return match.group(1)
    return max(SAIL, key=_key)


def check_istio(istio, channel, installed, field):
    """Refuse an Istio version the Sail operator of `channel` (or the installed one) does not
    install: an end-of-life one, or one it does not know."""
    if istio.endswith("-latest"):
        return istio
    sail = sail_minor(channel, installed)
    where = "Service Mesh %s (%s)" % (sail, ("installed " + installed) if installed else "channel %s" % channel)
    require(istio not in SAIL[sail]["eol"], field, "%s is end-of-life on %s, which refuses to install it" % (istio, where),
            "Use one of %s" % ", ".join(SAIL[sail]["istio"]))
    require(istio in SAIL[sail]["istio"], field, "%s is not an Istio version %s installs" % (istio, where),
            "Use one of %s" % ", ".join(SAIL[sail]["istio"]))
    return istio


def feature(what, version, installed=None):
    """Whether the field or API `what` (a FEATURES entry's prefix) exists for OpenShift `version`,
    or for the installed operator's version when the entry names a package that is installed."""
    entry = [f for f in FEATURES if f["what"].startswith(what)][0]
    have = installed and entry.get("package") and (installed.get(entry["package"]) or "")
    at = minor(have, entry["package"]) if have else supported(version)
    return bool(at) and _key(at) >= _key(entry["since"])


def installed_operators(csvs):
    """{package: version} of the operators OLM installed, from their ClusterServiceVersions (OLM
    labels each operators.coreos.com/<package>.<namespace>); copies (olm.copiedFrom) are skipped."""
    out = {}
    for csv in csvs or []:
        meta = csv.get("metadata") or {}
        labels = meta.get("labels") or {}
        if "olm.copiedFrom" in labels:
            continue
        version = (csv.get("spec") or {}).get("version") or ""
        for key in labels:
            if key.startswith("operators.coreos.com/") and version:
                out[key.split("/", 1)[1].rsplit(".", 1)[0]] = version
    return out


def choose(params):
    """The pre-flight's reading of the cluster: `params` {clusterversion: the ClusterVersion's
    status.desired.version or None, given: kfocp_openshift_version, csvs: the CSVs, roles: the
    enabled roles, openshift_api: whether the cluster serves config.openshift.io/v1 ClusterVersion
    (None: not read)}. Returns {openshift, operators}; raises naming the field when the cluster is
    not OpenShift, or the version is not supported, or too old for an enabled role."""
    require(params.get("openshift_api") is not False, "cluster",
            "serves no config.openshift.io/v1 ClusterVersion, so it is not OpenShift (kfocp_openshift_version "
            "names a version only for a cluster that serves OpenShift's APIs without that object)",
            "Run kfocp against OpenShift %s to %s, or against the local control plane (make up), which serves "
            "OpenShift's APIs" % (SUPPORTED[0], SUPPORTED[-1]))
    version = openshift(params.get("clusterversion"), params.get("given"))
    if "profile_self_service" in (params.get("roles") or []):
        require(feature("ValidatingAdmissionPolicy", version), "kfocp_profile_self_service_enabled",
                "the profile_self_service role needs OpenShift 4.17 or later (ValidatingAdmissionPolicy "
                "admissionregistration.k8s.io/v1); the cluster runs OpenShift %s" % version,
                "Set it to false on this cluster, or upgrade OpenShift to 4.17 or later")
    return {"openshift": version, "operators": installed_operators(params.get("csvs"))}


def table():
    """README's table: one row per supported minor."""
    head = ["OpenShift", "GPU operator", "NFD", "Service Mesh 2", "Service Mesh 3 (Istio)", "Serverless",
            "NFD workerTolerations", "NFD spec.operand.image", "profile self-service (ValidatingAdmissionPolicy v1)"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for v in SUPPORTED:
        c = DEFAULT_CHANNELS[v]
        rows.append("| %s | %s | %s | %s | %s (%s) | %s | %s | %s | %s |" % (
            v, c[GPU], c[NFD], c.get(MESH2, "not known: give the channel"), c[MESH3], DEFAULT_ISTIO, c[SERVERLESS], "yes" if feature("NodeFeatureDiscovery", v)
            else "no", "`%s`" % NFD_OPERAND_IMAGES[v] if v in NFD_OPERAND_IMAGES else "the operator's own",
            "yes" if feature("ValidatingAdmissionPolicy", v) else "no"))
    return "\n".join(rows)
