"""The self-service profile objects."""
from pathlib import Path

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import profiles, self_service
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError


def test_objects_bind_the_group_and_check_the_owner():
    role, binding, namespace, param, policy, policy_binding = self_service.objects({"profile_self_service_group": "ds"})
    assert role["rules"][0]["verbs"] == ["create", "delete", "get", "list", "watch"]  # no update, no patch
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "ds"}]
    spec = policy["spec"]
    assert spec["matchConstraints"]["resourceRules"][0]["operations"] == ["CREATE", "DELETE"]
    conditions = {c["name"]: c["expression"] for c in spec["matchConditions"]}
    assert conditions["member-of-kfocp-profile-creator"] == "params.data.group in request.userInfo.groups"
    assert "params.data.adminGroups.split('\\n')" in conditions["not-an-admin"]
    assert param["data"]["group"] == "ds" and param["data"]["adminGroups"] == "system:masters\nsystem:cluster-admins"
    assert spec["paramKind"] == {"apiVersion": "v1", "kind": "ConfigMap"}
    assert "request.userInfo.username" in spec["validations"][0]["expression"]
    assert policy_binding["spec"] == {"policyName": "kfocp-profile-owner", "validationActions": ["Deny"],
                                      "paramRef": {"name": "kfocp-profile-owner", "namespace": "kfocp-self-service",
                                                   "parameterNotFoundAction": "Allow"}}
    assert namespace == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kfocp-self-service"}}


@pytest.mark.parametrize("settings, field", [
    ({"profile_self_service_group": ""}, "profile_self_service_group"),
    ({"profile_self_service_group": "a/b"}, "profile_self_service_group"),
    ({"profile_self_service_group": "corp:ds"}, "profile_self_service_group"),
    ({"profile_self_service_group": ".."}, "profile_self_service_group"),
    ({"profile_self_service_group": " ds"}, "profile_self_service_group"),
    ({"profile_self_service_admin_groups": ["ok", "50%"]}, r"profile_self_service_admin_groups\[1\]"),
    ({"profile_self_service_name_prefix": "My_"}, "profile_self_service_name_prefix"),
    ({"profile_self_service_name_prefix": ""}, "profile_self_service_name_prefix"),
    ({"profile_self_service_params_namespace": "Bad"}, "profile_self_service_params_namespace"),
    ({"profile_self_service_admin_groups": "system:masters"}, "profile_self_service_admin_groups"),
])
def test_bad_settings_name_the_field(settings, field):
    with pytest.raises(DefinitionError, match=field):
        self_service.objects(settings)


def _validations(policy):
    return policy["spec"]["validations"]


def test_the_policy_caps_the_quota_of_a_new_profile_and_refuses_plugins_and_kfocp_deletions():
    policy = self_service.objects({"profile_self_service_group": "ds",
                                   "profile_self_service_max_quota": {"cpu": 8, "memory": "32Gi"}})[4]
    variables = dict((v["name"], v["expression"]) for v in policy["spec"]["variables"])
    assert variables["maxQuota"] == "{'cpu': '8', 'memory': '32Gi'}"
    owner, managed, plugins, prefix, reserved, labels, quota = _validations(policy)
    assert "variables.profile.spec.owner.name == request.userInfo.username" in owner["expression"]
    assert "oldObject.metadata.labels['app.kubernetes.io/managed-by'] != 'kfocp'" in managed["expression"]
    assert managed["expression"].startswith("request.operation != 'DELETE' || ")
    assert plugins["expression"].startswith("request.operation != 'CREATE' || ")
    assert "object.spec.plugins" in plugins["expression"]
    assert quota["expression"].startswith("request.operation != 'CREATE' || ")
    assert "compareTo(quantity(variables.maxQuota[k])) <= 0" in quota["expression"]
    assert "!has(object.spec.resourceQuotaSpec.scopeSelector)" in quota["expression"]
    assert "cpu=8, memory=32Gi" in quota["messageExpression"]
    assert "startsWith(params.data.namePrefix)" in prefix["expression"]
    assert "params.data.reservedNames.split('\\n')" in reserved["expression"]
    assert "k.startsWith('kfocp.io/')" in labels["expression"] and "annotations" in labels["expression"]


def test_the_default_cap_is_the_default_quota_of_the_profiles_role():
    roles = Path(__file__).resolve().parents[2] / "roles"
    default = yaml.safe_load((roles / "profiles" / "defaults" / "main.yml").read_text())["profiles_quota_default"]
    own = yaml.safe_load((roles / "profile_self_service" / "defaults" / "main.yml").read_text())
    assert own["profile_self_service_max_quota"] == default == self_service.DEFAULTS["profile_self_service_max_quota"]
    assert profiles.quota(default, None, "x") == default


def test_an_empty_cap_lets_members_choose():
    policy = self_service.objects({"profile_self_service_max_quota": {}})[4]
    assert len(_validations(policy)) == 6
    assert [v["name"] for v in policy["spec"]["variables"]] == ["profile"]


@pytest.mark.parametrize("value, message", [
    ({"cpu": "lots"}, "profile_self_service_max_quota.cpu: 'lots' is not a valid quantity"),
    ({"bad key": "1"}, "profile_self_service_max_quota.bad key: is not a resource name"),
    (["cpu"], "profile_self_service_max_quota: must be a mapping"),
    # -1 passed before and left no profile possible; ' 1' passed and failed at apply
    ({"cpu": "-1"}, "profile_self_service_max_quota.cpu: '-1' is negative"),
    ({"cpu": -1}, "profile_self_service_max_quota.cpu: -1 is negative"),
    ({"cpu": " 1"}, "profile_self_service_max_quota.cpu: ' 1' is not a valid quantity"),
    ({"memory": "1Gi "}, "profile_self_service_max_quota.memory: '1Gi ' is not a valid quantity"),
])
def test_a_bad_cap_names_the_field(value, message):
    with pytest.raises(DefinitionError) as err:
        self_service.objects({"profile_self_service_max_quota": value})
    assert message in str(err.value)


@pytest.mark.parametrize("group", ["back\\slash", "ålice-team", "it's", "quote\"d", "emoji😀"])
def test_group_names_reach_the_policy_as_data_never_as_cel_text(group):
    objs = self_service.objects({"profile_self_service_group": group})
    param, policy = objs[3], objs[4]
    assert param["data"]["group"] == group
    assert group not in str(policy)  # nothing a person names is pasted into an expression


@pytest.mark.parametrize("pattern, name, matches", [
    ("kube-*", "kube-system", True), ("kube-*", "kubeflow", False), ("openshift*", "openshift", True),
    ("openshift*", "openshift-config", True), ("default", "default", True), ("default", "defaults", False),
    ("a.b?", "a.bc", True), ("a.b?", "axbc", False),
])
def test_reserved_patterns_become_anchored_regular_expressions(pattern, name, matches):
    import re
    assert bool(re.match(self_service.pattern_regex(pattern), name)) is matches


def test_the_reserved_names_are_the_profiles_roles():
    param = self_service.objects({})[3]
    assert param["data"]["reservedNames"].split("\n") == [self_service.pattern_regex(p) for p in profiles.RESERVED]
    mine = self_service.objects({"profiles_reserved_names": ["corp-*"]})[3]
    assert mine["data"]["reservedNames"] == "^corp\\-.*$"
