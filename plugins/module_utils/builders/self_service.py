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
  the next run would only create it again;
- a new profile's name starts with the creators' prefix (automatic names never do, so a creator
  cannot take the name the next run would give another user), is not a reserved namespace, and the
  profile carries none of kfocp's labels or annotations.
Members of the admin groups are exempt. No update: a user cannot raise their own quota.

The group names, the prefix and the reserved names reach the policy as data, in a ConfigMap that
is its parameter (paramKind), never pasted into CEL text; every group name is checked against
OpenShift's rules for Group names first.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o
from ansible_collections.kfocp.kubeflow.plugins.module_utils import settings as role_settings
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import dns_label, group_name, quantity, require

# The role's defaults are its contract's (module_utils/settings.py): this is that mapping, not a copy.
DEFAULTS = role_settings.DEFAULTS["profile_self_service"]

NAME = "kfocp-profile-creator"
POLICY = "kfocp-profile-owner"
# The labels and annotations that mark kfocp's objects: a member's profile carries none of them.
_KFOCP_KEYS = ("k.startsWith('kfocp.io/') || k.contains('.kfocp.io/') || "
               "k == 'app.kubernetes.io/managed-by' || k == 'app.kubernetes.io/part-of'")
_RESOURCE = re.compile(r"^[a-zA-Z0-9./_-]+$")


def _cel_string(value):
    """A CEL string literal, for values checked to hold only safe characters (resource names,
    quantities); anything a person names (groups, prefixes) goes in the parameter instead."""
    return "'%s'" % value.replace("\\", "\\\\").replace("'", "\\'")


def pattern_regex(pattern):
    """An RE2 expression, anchored, for a shell-style name pattern (* and ?) of profiles_reserved_names."""
    return "^" + "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern) + "$"


def _cel_map(values):
    return "{" + ", ".join("%s: %s" % (_cel_string(k), _cel_string(values[k])) for k in sorted(values)) + "}"


def _setting(settings, key):
    """A setting, or when it is not given, what the role's contract gives (module_utils/settings.py)."""
    value = settings.get(key)
    return role_settings.setting("profile_self_service", settings, key) if value is None else value


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


def _validations(limits):
    owner = "variables.profile.spec.owner"
    name = "variables.profile.metadata.name"
    checks = [{
        "expression": "%s.kind == 'User' && %s.name == request.userInfo.username" % (owner, owner),
        "messageExpression": ("'members of ' + params.data.group + ' may only ' + request.operation.lowerAscii() + "
                              "' profiles they own: spec.owner is ' + %s.kind + ' ' + %s.name + ', you are ' + "
                              "request.userInfo.username" % (owner, owner)),
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
        "messageExpression": "'members of ' + params.data.group + ' may not set spec.plugins: the platform admins "
                             "grant cloud identities'",
        "reason": "Forbidden",
    }, {
        "expression": "request.operation != 'CREATE' || %s.startsWith(params.data.namePrefix)" % name,
        "messageExpression": ("'members of ' + params.data.group + ' may only create profiles whose name starts with \"'"
                              " + params.data.namePrefix + '\" (the other names are the automatic profiles\\' "
                              "and the platform\\'s)'"),
        "reason": "Forbidden",
    }, {
        "expression": ("request.operation != 'CREATE' || !params.data.reservedNames.split('\\n')"
                       ".exists(p, p != '' && %s.matches(p))" % name),
        "messageExpression": "'the name ' + %s + ' is a reserved namespace (system and platform namespaces never "
                             "hold a profile): choose another'" % name,
        "reason": "Forbidden",
    }, {
        "expression": ("request.operation != 'CREATE' || "
                       "((!has(object.metadata.labels) || !object.metadata.labels.exists(k, %s)) && "
                       "(!has(object.metadata.annotations) || !object.metadata.annotations.exists(k, %s)))"
                       % (_KFOCP_KEYS, _KFOCP_KEYS)),
        "message": ("a member's profile may not carry kfocp's labels or annotations (kfocp.io/*, "
                    "app.kubernetes.io/managed-by, app.kubernetes.io/part-of): they mark what kfocp manages"),
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
            "messageExpression": ("'members of ' + params.data.group + ' must give their profile a quota, "
                                  "spec.resourceQuotaSpec.hard, with each of these at most: %s (and no scopes)'"
                                  % wanted),
            "reason": "Forbidden",
        })
    return checks


def params(settings):
    """The policy's parameter: what people name, as data. Checked before any change."""
    group = group_name(_setting(settings, "profile_self_service_group"), "profile_self_service_group")
    admins = _setting(settings, "profile_self_service_admin_groups")
    require(isinstance(admins, list), "profile_self_service_admin_groups", "must be a list of group names",
            "Give a list of strings")
    for index, admin in enumerate(admins):
        group_name(admin, "profile_self_service_admin_groups[%d]" % index, system=True)
    prefix = _setting(settings, "profile_self_service_name_prefix")
    require(isinstance(prefix, str) and re.match(r"^[a-z0-9][-a-z0-9]{0,29}$", prefix), "profile_self_service_name_prefix",
            "%r is not a name prefix" % (prefix,),
            "Use 1 to 30 lower-case letters, digits and '-', starting with a letter or digit (e.g. 'my-')")
    reserved = _setting(settings, "profiles_reserved_names")
    require(isinstance(reserved, list) and all(isinstance(p, str) and p for p in reserved), "profiles_reserved_names",
            "must be a list of names or patterns", "For example [default, kube-*, openshift*, kubeflow]")
    namespace = dns_label(_setting(settings, "profile_self_service_params_namespace"),
                          "profile_self_service_params_namespace")
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": POLICY, "namespace": namespace},
            "data": {"group": group, "adminGroups": "\n".join(admins), "namePrefix": prefix,
                     "reservedNames": "\n".join(pattern_regex(p) for p in reserved)}}


def objects(settings):
    """ClusterRole, ClusterRoleBinding, the policy's parameter (a ConfigMap in its own namespace),
    the ValidatingAdmissionPolicy and its binding."""
    param = params(settings)
    group = param["data"]["group"]
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
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [dict(rule, apiVersions=["*"], operations=["CREATE", "DELETE"])]},
            "matchConditions": [
                {"name": "member-of-%s" % NAME, "expression": "params.data.group in request.userInfo.groups"},
                {"name": "not-an-admin",
                 "expression": "!request.userInfo.groups.exists(g, g in params.data.adminGroups.split('\\n'))"},
            ],
            "variables": variables,
            "validations": _validations(limits),
        },
    }
    meta = param["metadata"]
    # Without its parameter (kfocp's own ConfigMap, gone only in a partly finished uninstall) the
    # policy cannot tell members from anyone else: "Deny" would then refuse every Profile CREATE
    # and DELETE in the cluster, the uninstall's and the profile controller's included, so it
    # stands aside instead.
    policy_binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
                      "metadata": {"name": POLICY},
                      "spec": {"policyName": POLICY, "validationActions": ["Deny"],
                               "paramRef": {"name": meta["name"], "namespace": meta["namespace"],
                                            "parameterNotFoundAction": "Allow"}}}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": meta["namespace"]}}
    return [role, binding, namespace, param, policy, policy_binding]
