# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""SCC grants as RBAC: a RoleBinding in the service account's namespace to the ClusterRole
system:openshift:scc:<name>, which allows `use` of exactly that SCC. The SCC itself, and its
`users` list, are never edited."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import (
    dns_label, dns_subdomain, namespace, require, role_binding)

# hostmount-anyuid-v2 (OpenShift 4.17 on), restricted-v3 and nested-container (4.20 on) are the
# newer default SCCs, which SCC derivation grants on the versions that ship them.
KNOWN_SCCS = ("restricted-v2", "restricted", "nonroot-v2", "nonroot", "anyuid", "hostnetwork-v2",
              "hostnetwork", "hostmount-anyuid", "hostaccess", "privileged", "hostmount-anyuid-v2",
              "restricted-v3", "nested-container")
REASON = "kfocp.io/scc-reason"


def cluster_role(scc):
    return "system:openshift:scc:%s" % scc


def binding_name(scc, serviceaccount):
    return "kfocp-scc-%s-%s" % (scc, serviceaccount)


def normalise(grants, allowed=KNOWN_SCCS, field="scc_grants"):
    """Check every grant and drop duplicates. Each grant is {namespace, serviceaccount, scc, reason?}."""
    require(isinstance(grants, list), field, "must be a list", "Give a list of {namespace, serviceaccount, scc}")
    seen = {}
    for index, grant in enumerate(grants):
        where = "%s[%d]" % (field, index)
        require(isinstance(grant, dict), where, "must be a mapping", "Give {namespace, serviceaccount, scc}")
        for key in ("namespace", "serviceaccount", "scc"):
            require(grant.get(key), "%s.%s" % (where, key), "is required", "Set it")
        dns_label(grant["namespace"], where + ".namespace")
        dns_subdomain(grant["serviceaccount"], where + ".serviceaccount")
        if allowed is not None:
            require(grant["scc"] in allowed, where + ".scc", "%r is not an allowed SCC" % grant["scc"],
                    "Use one of %s, or add it to scc_allowed" % ", ".join(allowed))
        key = (grant["namespace"], grant["serviceaccount"], grant["scc"])
        if key not in seen:
            seen[key] = dict(grant)
    return [seen[key] for key in sorted(seen)]


def rolebindings(grants, allowed=KNOWN_SCCS, field="scc_grants"):
    """One RoleBinding per (namespace, service account, SCC)."""
    objs = []
    for grant in normalise(grants, allowed, field):
        annotations = {REASON: grant["reason"]} if grant.get("reason") else None
        subject = {"kind": "ServiceAccount", "name": grant["serviceaccount"], "namespace": grant["namespace"]}
        objs.append(role_binding(binding_name(grant["scc"], grant["serviceaccount"]), grant["namespace"],
                                 "ClusterRole", cluster_role(grant["scc"]), [subject], annotations=annotations))
    return objs


def objects(grants, allowed=KNOWN_SCCS, create_namespaces=True, field="scc_grants"):
    """The role's whole desired state: the grants' namespaces (created when missing) and RoleBindings."""
    bindings = rolebindings(grants, allowed, field)
    namespaces = sorted(set(b["metadata"]["namespace"] for b in bindings)) if create_namespaces else []
    return [namespace(name) for name in namespaces] + bindings


def audit_table(grants):
    """Rows of (service account, namespace, SCC, reason), for people to read."""
    return [{"serviceaccount": g["serviceaccount"], "namespace": g["namespace"], "scc": g["scc"],
             "reason": g.get("reason", "")} for g in normalise(grants, allowed=None)]
