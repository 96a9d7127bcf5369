"""The operator's fast path writes what a playbook run writes, object by object, on the real API
server (tests/parity.py), for the defaults and for each of a few options set alone; and the
contributor policies it writes for a spec without principals name the gateway's and the pipelines
UI's. tests/reliability/test_fastpath_parity_fuzz.py runs fuzzed specs the same way."""
import pytest

import parity
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh

UI = "cluster.local/ns/%s/sa/ml-pipeline-ui"
# Each option alone (role variables, as the operator converts the CR's spec): the defaults, the
# mesh that decides the gateway's principal and membership, the pipelines UI's namespace, the
# self-service prefix, the user header's prefix, principals given, and the policies' own settings.
SPECS = {
    "defaults": {},
    "ossm3": {"service_mesh_flavour": "ossm3"},
    "components-namespace": {"components_namespace": "kf"},
    "self-service-prefix": {"profile_self_service_name_prefix": "lab-"},
    "userid-prefix": {"profiles_userid_prefix": "oidc:"},
    "principals-given": {"profiles_authz_principals": ["cluster.local/ns/edge/sa/gateway"]},
    "mesh-none-no-limits": {"namespace_policies_mesh_mode": "none", "namespace_policies_limitrange": {}},
}


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_fast_path_writes_what_the_playbook_writes(control_plane, kube, instance, tmp_path, name):
    variables = parity.spec_variables(instance, SPECS[name])
    ours, _result, found = parity.differences(control_plane, kube, variables, tmp_path)
    kinds = set(key[1] for key in ours)
    assert kinds >= {"Profile", "RoleBinding", "AuthorizationPolicy", "Namespace"}, "the fast path wrote %s" % kinds
    assert len(_contributor_policies(ours)) >= 2, "bob's and carol's contributor policies"
    assert found == "", "the playbook changed what the fast path wrote:\n" + found


def _contributor_policies(objects):
    return dict((key, obj) for key, obj in objects.items()
                if key[1] == "AuthorizationPolicy" and (obj["metadata"].get("annotations") or {}).get("user"))


@pytest.mark.parametrize("spec, gateway, namespace", [
    ({}, mesh.gateway_info({})["principal"], "kubeflow"),
    ({"service_mesh_flavour": "ossm3", "components_namespace": "kf"}, mesh.gateway_info({"flavour": "ossm3"})["principal"],
     "kf"),
])
def test_contributor_policies_without_principals_in_the_spec_name_the_gateway_and_the_ui(
        control_plane, kube, instance, tmp_path, spec, gateway, namespace):
    """The fast path alone, for a spec that sets no principals: every contributor policy it writes
    admits the user's header only from the service_mesh role's gateway and the pipelines UI."""
    variables = parity.spec_variables(instance, spec)
    parity.people(kube, instance)
    ours = parity.run_fast_path(control_plane, kube, variables)
    policies = _contributor_policies(ours)
    assert len(policies) >= 2, "bob's (a user contributor) and carol's (a member of the group contributor)"
    for key, policy in policies.items():
        assert policy["spec"]["rules"][0]["from"] == [{"source": {"principals": [gateway, UI % namespace]}}], key
