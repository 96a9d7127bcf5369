"""The self-service profile objects."""
import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import self_service
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError


def test_objects_bind_the_group_and_check_the_owner():
    role, binding, policy, policy_binding = self_service.objects({"profile_self_service_group": "ds"})
    assert role["rules"][0]["verbs"] == ["create", "delete", "get", "list", "watch"]  # no update, no patch
    assert binding["subjects"] == [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "ds"}]
    spec = policy["spec"]
    assert spec["matchConstraints"]["resourceRules"][0]["operations"] == ["CREATE", "DELETE"]
    conditions = {c["name"]: c["expression"] for c in spec["matchConditions"]}
    assert conditions["member-of-kfocp-profile-creator"] == "'ds' in request.userInfo.groups"
    assert "['system:masters', 'system:cluster-admins']" in conditions["not-an-admin"]
    assert "request.userInfo.username" in spec["validations"][0]["expression"]
    assert policy_binding["spec"] == {"policyName": "kfocp-profile-owner", "validationActions": ["Deny"]}


@pytest.mark.parametrize("settings, field", [
    ({"profile_self_service_group": ""}, "profile_self_service_group"),
    ({"profile_self_service_group": "it's"}, "profile_self_service_group"),
    ({"profile_self_service_admin_groups": "system:masters"}, "profile_self_service_admin_groups"),
])
def test_bad_settings_name_the_field(settings, field):
    with pytest.raises(DefinitionError, match=field):
        self_service.objects(settings)
