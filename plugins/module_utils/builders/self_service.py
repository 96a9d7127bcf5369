# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Self-service profiles: the members of one Group may create and delete Profiles owned by
themselves, and only those.

RBAC gives them `create` and `delete` on profiles; a ValidatingAdmissionPolicy (CEL, evaluated by
the API server) checks every CREATE and DELETE by a member:
- spec.owner is the requesting user;
- a new profile asks for a quota no larger than the maximum, with every limited resource named
  and no scopes (a scoped quota would leave the other pods unlimited), and no plugins (the profile
  controller's plugins grant cloud identities);
- a profile kfocp manages (declared in the inventory, or automatic) is not deleted by a member:
  the next run would only create it again.
Members of the admin groups are exempt. No update: a user cannot raise their own quota.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import quantity, require

NAME = "kfocp-profile-creator"
POLICY = "kfocp-profile-owner"
DEFAULTS = {
    "profile_self_service_group": "kubeflow-profile-creators",
    "profile_self_service_admin_groups": ["system:masters", "system:cluster-admins"],
    "profile_self_service_max_quota": {"cpu": "8", "memory": "32Gi", "requests.nvidia.com/gpu": "1",
                                       "persistentvolumeclaims": "10", "requests.storage": "100Gi"},
}
_RESOURCE = re.compile(r"^[a-zA-Z0-9./_-]+$")


def _cel_string(value):
    return "'%s'" % value.replace("\\", "\\\\").replace("'", "\\'")


def _cel_list(values):
    return "[" + ", ".join(_cel_string(v) for v in values) + "]"


def _cel_map(values):
    return "{" + ", ".join("%s: %s" % (_cel_string(k), _cel_string(values[k])) for k in sorted(values)) + "}"


def _setting(settings, key):
    value = settings.get(key)
    return DEFAULTS[key] if value is None else value


def max_quota(value):
    """The largest quota a member may ask for, as {resource: quantity string}; {} for no limit."""
    require(isinstance(value, dict), "profile_self_service_max_quota", "must be a mapping of resource to quantity",
            "For example {cpu: '8', memory: 32Gi}, or {} to let members choose any quota")
    for key, amount in value.items():
        where = "profile_self_service_max_quota.%s" % key
        require(isinstance(key, str) and _RESOURCE.match(key), where, "is not a resource name",
                "Use names like cpu, requests.memory, requests.nvidia.com/gpu")
        require(quantity(amount, where) >= 0, where, "%r is negative: no quota could be within it" % (amount,),
                "Give 0 or more, or leave the resource out for no limit")
    return dict((k, str(v)) for k, v in value.items())


def _validations(group, limits):
    owner = "variables.profile.spec.owner"
    checks = [{
        "expression": "%s.kind == 'User' && %s.name == request.userInfo.username" % (owner, owner),
        "messageExpression": ("'members of %s may only ' + request.operation.lowerAscii() + ' profiles they own: "
                              "spec.owner is ' + %s.kind + ' ' + %s.name + ', you are ' + request.userInfo.username"
                              % (group, owner, owner)),
        "reason": "Forbidden",
    }, {
        "expression": ("request.operation != 'DELETE' || !has(oldObject.metadata.labels) || "
                       "!('%s' in oldObject.metadata.labels) || oldObject.metadata.labels['%s'] != '%s'"
                       % (o.MANAGED_BY, o.MANAGED_BY, o.MANAGER)),
        "message": ("this profile is managed by kfocp (declared in the inventory, or automatic): ask an admin to "
                    "remove it from profiles_list, or to exclude you from automatic profiles"),
        "reason": "Forbidden",
    }, {
        "expression": ("request.operation != 'CREATE' || !has(object.spec.plugins) || size(object.spec.plugins) == 0"),
        "message": "members of %s may not set spec.plugins: the platform admins grant cloud identities" % group,
        "reason": "Forbidden",
    }]
    if limits:
        spec = "object.spec.resourceQuotaSpec"
        hard = spec + ".hard"
        wanted = ", ".join("%s=%s" % (k, limits[k]) for k in sorted(limits))
        checks.append({
            "expression": (
                "request.operation != 'CREATE' || (has(%s) && has(%s) && "
                "(!has(%s.scopes) || size(%s.scopes) == 0) && !has(%s.scopeSelector) && "
                "variables.maxQuota.all(k, k in %s && isQuantity(string(%s[k])) && "
                "quantity(string(%s[k])).compareTo(quantity(variables.maxQuota[k])) <= 0))"
                % (spec, hard, spec, spec, spec, hard, hard, hard)),
            "message": ("members of %s must give their profile a quota, spec.resourceQuotaSpec.hard, with each of "
                        "these at most: %s (and no scopes)" % (group, wanted)),
            "reason": "Forbidden",
        })
    return checks


def objects(settings):
    """ClusterRole, ClusterRoleBinding, ValidatingAdmissionPolicy and its binding."""
    group = _setting(settings, "profile_self_service_group")
    admins = _setting(settings, "profile_self_service_admin_groups")
    require(isinstance(group, str) and group.strip() and "'" not in group, "profile_self_service_group",
            "must be the name of an OpenShift Group", "Set it to the group whose members may create profiles")
    require(isinstance(admins, list) and all(isinstance(a, str) and a for a in admins),
            "profile_self_service_admin_groups", "must be a list of group names", "Give a list of strings")
    limits = max_quota(_setting(settings, "profile_self_service_max_quota"))
    rule = {"apiGroups": ["kubeflow.org"], "resources": ["profiles"]}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": NAME},
            "rules": [dict(rule, verbs=["create", "delete", "get", "list", "watch"])]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": NAME},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]}
    variables = [{"name": "profile", "expression": "request.operation == 'DELETE' ? oldObject : object"}]
    if limits:
        variables.append({"name": "maxQuota", "expression": _cel_map(limits)})
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [dict(rule, apiVersions=["*"], operations=["CREATE", "DELETE"])]},
            "matchConditions": [
                {"name": "member-of-%s" % NAME, "expression": "%s in request.userInfo.groups" % _cel_string(group)},
                {"name": "not-an-admin",
                 "expression": "!request.userInfo.groups.exists(g, g in %s)" % _cel_list(admins)},
            ],
            "variables": variables,
            "validations": _validations(group, limits),
        },
    }
    policy_binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                      "metadata": {"name": POLICY},
                      "spec": {"policyName": POLICY, "validationActions": ["Deny"]}}
    return [role, binding, policy, policy_binding]
