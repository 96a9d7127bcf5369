# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Operator Lifecycle Manager objects: an operator's Namespace, OperatorGroup and Subscription.

OLM installs the operator and labels its ClusterServiceVersion `operators.coreos.com/<package>.<namespace>`;
`csv_selector()` gives that label, so that a role can wait until the CSV is Succeeded.

A channel left out is the support matrix's for the cluster's OpenShift version (module_utils/versions);
a channel given is checked against it. OLM fails every CSV of a namespace that holds more than one
OperatorGroup (TooManyOperatorGroups), so kfocp adds none where someone else made one (an install
from the console does): it leaves that group as it is and says so (`operator_groups()`)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kfocp.kubeflow.plugins.module_utils import versions
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import (
    dns_label, dns_subdomain, namespace, require)
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import MANAGED_BY, MANAGER

APPROVALS = ("Automatic", "Manual")


def normalise(operator, field, openshift=None):
    """Check one operator entry: {namespace, package, channel, source, source_namespace, approval,
    starting_csv, operator_group, target_namespaces}. `openshift`: the cluster's OpenShift minor,
    which chooses the channel left out and checks the one given."""
    require(isinstance(operator, dict), field, "must be a mapping", "Give {namespace, package, source}")
    for key in ("namespace", "package", "source"):
        require(isinstance(operator.get(key), str) and operator.get(key), "%s.%s" % (field, key), "is required",
                "Set it to a non-empty string")
    dns_label(operator["namespace"], field + ".namespace")
    dns_subdomain(operator["package"], field + ".package")
    out = dict(operator)
    openshift = versions.supported(openshift)
    if not out.get("channel"):
        out["channel"] = versions.default_channel(out["package"], openshift, field)
        require(out["channel"], field + ".channel", "is required: kfocp has no channel of %s" % out["package"],
                "Give the update channel")
    require(isinstance(out["channel"], str), field + ".channel", "must be a string", "Give the update channel")
    versions.check_channel(out["package"], out["channel"], openshift, field + ".channel")
    out.setdefault("source_namespace", "openshift-marketplace")
    out["approval"] = out.get("approval") or "Automatic"
    require(out["approval"] in APPROVALS, field + ".approval", "%r is not an install plan approval" % out["approval"],
            "Use Automatic or Manual")
    approve = out.get("approve_install_plan", False)
    require(isinstance(approve, bool), field + ".approve_install_plan", "must be true or false",
            "true lets kfocp approve the Manual InstallPlan OLM makes for this operator")
    out["approve_install_plan"] = approve
    out["operator_group"] = out.get("operator_group", True) is not False
    targets = out.get("target_namespaces")
    require(targets is None or isinstance(targets, list), field + ".target_namespaces", "must be a list",
            "Give a list of namespaces, [] for all namespaces, or leave it out for the operator's own namespace")
    return out


def csv_selector(operator):
    """The label selector of the operator's ClusterServiceVersion, as OLM labels it."""
    return "operators.coreos.com/%s.%s" % (operator["package"], operator["namespace"])


def others_groups(live_groups, namespace_name):
    """The OperatorGroups of `namespace_name` that kfocp did not make, by name."""
    return sorted(g["metadata"]["name"] for g in live_groups or []
                  if g["metadata"].get("namespace") == namespace_name
                  and (g["metadata"].get("labels") or {}).get(MANAGED_BY) != MANAGER)


def operator_groups(operators, field, live_groups, openshift=None):
    """What kfocp does about the OperatorGroup of each operator's namespace, for the run's output:
    [{namespace, group, action, message}], action `create` (kfocp's own) or `leave` (someone else's,
    kept as it is, and kfocp adds none)."""
    out = []
    for i, op in enumerate(operators or []):
        op = normalise(op, "%s[%d]" % (field, i), openshift)
        if not op["operator_group"] or op["namespace"] in [o["namespace"] for o in out]:
            continue
        ns = op["namespace"]
        theirs = others_groups(live_groups, ns)
        if theirs:
            out += [{"namespace": ns, "group": name, "action": "leave",
                     "message": "OperatorGroup %s/%s was made by someone else: left as it is, and kfocp adds "
                                "none to %s (OLM fails every CSV of a namespace with two)" % (ns, name, ns)}
                    for name in theirs]
        else:
            out.append({"namespace": ns, "group": ns, "action": "create",
                        "message": "OperatorGroup %s/%s: kfocp's" % (ns, ns)})
    return out


def channel_moves(operators, field, live_subscriptions, openshift=None):
    """The Subscriptions this run moves to another channel, for the run's output: one message per
    live Subscription of an operator whose channel is not the one the run sets, with the reason
    when the old channel is not published for the cluster's OpenShift version (after an upgrade
    of OpenShift)."""
    version = versions.supported(openshift)
    live = dict(((s["metadata"].get("namespace"), s["metadata"]["name"]), s) for s in live_subscriptions or [])
    out = []
    for i, op in enumerate(operators or []):
        where = "%s[%d]" % (field, i)
        op = normalise(op, where, openshift)
        old = ((live.get((op["namespace"], op["package"])) or {}).get("spec") or {}).get("channel")
        if not old or old == op["channel"]:
            continue
        known = version and old in versions.CHANNELS.get(op["package"], {})
        why = " (not published for OpenShift %s)" % version if known and not versions.published(
            op["package"], old, version) else ""
        out.append("%s: Subscription %s/%s moves from channel %s%s to %s" % (
            where, op["namespace"], op["package"], old, why, op["channel"]))
    return out


def objects(operators, field, live_groups=None, openshift=None):
    """Namespace (created when missing), OperatorGroup and Subscription for each operator.
    `live_groups`: the cluster's OperatorGroups; none is added to a namespace that holds one
    kfocp did not make. `openshift`: the cluster's OpenShift minor (channels)."""
    require(isinstance(operators, list), field, "must be a list", "Give a list of operators")
    entries = [normalise(op, "%s[%d]" % (field, i), openshift) for i, op in enumerate(operators)]
    namespaces, groups, subscriptions = [], [], []
    for op in entries:
        if op["namespace"] not in [n["metadata"]["name"] for n in namespaces]:
            namespaces.append(namespace(op["namespace"]))
        if op["operator_group"] and op["namespace"] not in [g["metadata"]["namespace"] for g in groups] \
                and not others_groups(live_groups, op["namespace"]):
            targets = op.get("target_namespaces")
            spec = {} if targets == [] else {"targetNamespaces": list(targets or [op["namespace"]])}
            groups.append({"apiVersion": "operators.coreos.com/v1", "kind": "OperatorGroup",
                           "metadata": {"name": op["namespace"], "namespace": op["namespace"]}, "spec": spec})
        spec = {"channel": op["channel"], "name": op["package"], "source": op["source"],
                "sourceNamespace": op["source_namespace"], "installPlanApproval": op["approval"]}
        if op.get("starting_csv"):
            spec["startingCSV"] = op["starting_csv"]
        subscriptions.append({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
                              "metadata": {"name": op["package"], "namespace": op["namespace"]}, "spec": spec})
    return namespaces + groups + subscriptions


def waits(operators, field, openshift=None):
    """What to wait for: [{namespace, package, selector, manual, approve, field}] of each operator's
    CSV; `manual` when its InstallPlans wait for an approval, `approve` when the inventory lets
    kfocp give it (approve_install_plan: true)."""
    return [{"namespace": op["namespace"], "package": op["package"], "selector": csv_selector(op),
             "manual": op["approval"] == "Manual", "approve": op["approve_install_plan"],
             "field": "%s[%d]" % (field, i)}
            for i, op in enumerate(normalise(o, "%s[%d]" % (field, i), openshift) for i, o in enumerate(operators or []))]
