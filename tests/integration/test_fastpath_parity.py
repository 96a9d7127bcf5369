"""The operator's fast path writes what a playbook run writes, object by object, on the real API
server (tests/parity.py), for the defaults and for each of a few options set alone; and the
contributor policies it writes for a spec without principals name the gateway's and the pipelines
UI's. tests/reliability/test_fastpath_parity_fuzz.py runs fuzzed specs the same way."""
import pytest

import clusterdiff
import parity
from helpers import ensure_namespace, isolated_policies, only_roles, wait_for
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


def test_the_scc_grants_the_fast_path_puts_back_are_the_playbooks(control_plane, kube, instance, tmp_path):
    """The scc role's grants, written by site.yml; one deleted and one edited by someone else: the
    fast path puts them back as the playbook wrote them."""
    team = instance + "-scc"
    ensure_namespace(kube, team)
    variables = dict(isolated_policies(instance), kfocp_instance=instance, kfocp_openshift_version="4.20",
                     scc_grants_default=[], scc_grants_extra=[
                         {"namespace": team, "serviceaccount": "trainer", "scc": "nonroot-v2", "reason": "fixed UID"},
                         {"namespace": team, "serviceaccount": "server", "scc": "anyuid", "reason": "runs as root"}])
    result, theirs = parity.run_playbook_after(control_plane, kube, dict(variables, **only_roles("scc")), tmp_path,
                                               name="site")
    assert result.rc == 0, result.stdout[-6000:]
    bindings = kube.resource("rbac.authorization.k8s.io/v1", "RoleBinding")
    assert kube.get(bindings, "kfocp-scc-anyuid-server", team) is not None
    fast = parity.fast_path(control_plane, variables)
    try:
        wait_for(fast.synced, 30, what="the fast path's watches")
        kube.delete(bindings, "kfocp-scc-nonroot-v2-trainer", team)
        edited = kube.get(bindings, "kfocp-scc-anyuid-server", team)
        edited["metadata"]["annotations"]["kfocp.io/scc-reason"] = "edited by hand"
        kube.request("PUT", kube.path(bindings, team, "kfocp-scc-anyuid-server"), body=edited,
                     query={"fieldManager": "someone"})
        wait_for(lambda: kube.get(bindings, "kfocp-scc-nonroot-v2-trainer", team), 30, what="the deleted grant back")
        wait_for(lambda: kube.get(bindings, "kfocp-scc-anyuid-server", team)["metadata"]["annotations"].get(
            "kfocp.io/scc-reason") == "runs as root", 30, what="the edited grant put back")
        ours = parity.still(fast, kube, instance)
    finally:
        parity.stop(fast)
    theirs, ours = (dict((k, o) for k, o in objs.items() if (o["metadata"].get("labels") or {}).get("kfocp.io/set") == "scc")
                    for objs in (theirs, ours))
    assert len(theirs) == 2, "the two grants (the namespace was there before)"
    found = clusterdiff.report(clusterdiff.compare(theirs, ours), names=("playbook", "fast path"))
    assert found == "", "the fast path put back other grants than the playbook wrote:\n" + found
