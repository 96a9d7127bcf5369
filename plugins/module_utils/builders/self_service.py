# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Self-service profiles: the members of one Group may create and delete Profiles owned by
themselves, and only those.

RBAC gives them `create` and `delete` on profiles; a ValidatingAdmissionPolicy (CEL, evaluated by
the API server) checks on every CREATE and DELETE by a member that spec.owner is the requesting
user. Members of the admin groups are exempt. No update: a user cannot raise their own quota.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import require

NAME = "kfocp-profile-creator"
POLICY = "kfocp-profile-owner"
DEFAULTS = {
    "profile_self_service_group": "kubeflow-profile-creators",
    "profile_self_service_admin_groups": ["system:masters", "system:cluster-admins"],
}


def _cel_list(values):
    return "[" + ", ".join("'%s'" % v.replace("\\", "\\\\").replace("'", "\\'") for v in values) + "]"


def objects(settings):
    """ClusterRole, ClusterRoleBinding, ValidatingAdmissionPolicy and its binding."""
    group = settings.get("profile_self_service_group")
    group = DEFAULTS["profile_self_service_group"] if group is None else group
    admins = settings.get("profile_self_service_admin_groups")
    admins = DEFAULTS["profile_self_service_admin_groups"] if admins is None else admins
    require(isinstance(group, str) and group.strip() and "'" not in group, "profile_self_service_group",
            "must be the name of an OpenShift Group", "Set it to the group whose members may create profiles")
    require(isinstance(admins, list) and all(isinstance(a, str) and a for a in admins),
            "profile_self_service_admin_groups", "must be a list of group names", "Give a list of strings")
    rule = {"apiGroups": ["kubeflow.org"], "resources": ["profiles"]}
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": NAME},
            "rules": [dict(rule, verbs=["create", "delete", "get", "list", "watch"])]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": NAME},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": NAME},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}]}
    owner = "(request.operation == 'DELETE' ? oldObject : object).spec.owner"
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": POLICY},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [dict(rule, apiVersions=["*"], operations=["CREATE", "DELETE"])]},
            "matchConditions": [
                {"name": "member-of-%s" % NAME, "expression": "'%s' in request.userInfo.groups" % group},
                {"name": "not-an-admin",
                 "expression": "!request.userInfo.groups.exists(g, g in %s)" % _cel_list(admins)},
            ],
            "validations": [{
                "expression": "%s.kind == 'User' && %s.name == request.userInfo.username" % (owner, owner),
                "messageExpression": ("'members of %s may only ' + request.operation.lowerAscii() + ' profiles they "
                                      "own: spec.owner is ' + %s.kind + ' ' + %s.name + ', you are ' + "
                                      "request.userInfo.username" % (group, owner, owner)),
                "reason": "Forbidden",
            }],
        },
    }
    policy_binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                      "metadata": {"name": POLICY},
                      "spec": {"policyName": POLICY, "validationActions": ["Deny"]}}
    return [role, binding, policy, policy_binding]
