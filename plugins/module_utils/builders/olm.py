# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Operator Lifecycle Manager objects: an operator's Namespace, OperatorGroup and Subscription.

OLM installs the operator and labels its ClusterServiceVersion `operators.coreos.com/<package>.<namespace>`;
`csv_selector()` gives that label, so that a role can wait until the CSV is Succeeded."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import (
    dns_label, dns_subdomain, namespace, require)

APPROVALS = ("Automatic", "Manual")


def normalise(operator, field):
    """Check one operator entry: {namespace, package, channel, source, source_namespace, approval,
    starting_csv, operator_group, target_namespaces}."""
    require(isinstance(operator, dict), field, "must be a mapping", "Give {namespace, package, channel, source}")
    for key in ("namespace", "package", "channel", "source"):
        require(isinstance(operator.get(key), str) and operator.get(key), "%s.%s" % (field, key), "is required",
                "Set it to a non-empty string")
    dns_label(operator["namespace"], field + ".namespace")
    dns_subdomain(operator["package"], field + ".package")
    out = dict(operator)
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


def objects(operators, field):
    """Namespace (created when missing), OperatorGroup and Subscription for each operator."""
    require(isinstance(operators, list), field, "must be a list", "Give a list of operators")
    entries = [normalise(op, "%s[%d]" % (field, i)) for i, op in enumerate(operators)]
    namespaces, groups, subscriptions = [], [], []
    for op in entries:
        if op["namespace"] not in [n["metadata"]["name"] for n in namespaces]:
            namespaces.append(namespace(op["namespace"]))
        if op["operator_group"] and op["namespace"] not in [g["metadata"]["namespace"] for g in groups]:
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


def waits(operators, field):
    """What to wait for: [{namespace, package, selector, manual, approve, field}] of each operator's
    CSV; `manual` when its InstallPlans wait for an approval, `approve` when the inventory lets
    kfocp give it (approve_install_plan: true)."""
    return [{"namespace": op["namespace"], "package": op["package"], "selector": csv_selector(op),
             "manual": op["approval"] == "Manual", "approve": op["approve_install_plan"],
             "field": "%s[%d]" % (field, i)}
            for i, op in enumerate(normalise(o, "%s[%d]" % (field, i)) for i, o in enumerate(operators or []))]
