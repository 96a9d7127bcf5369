"""The operator, for a Kubeflow CR that sets no principals (no profilesAuthzPrincipals), writes
contributor AuthorizationPolicies that admit a contributor's header only from the service_mesh
role's gateway and the pipelines UI, as KFAM's do (kubeflow/dashboard
components/access-management/kfam/bindings.go, standins.kfam_contributor_objects): the policies of
a profile namespace that appears after the playbook run, and of a Group member added later, are
the fast path's."""
import json
import sys
import uuid

import pytest

import standins
from helpers import ROOT, isolated_policies, play_profile_controller, running_operator, wait_for

sys.path[:0] = [str(ROOT / "operator"), str(ROOT / "operator" / "hack")]

import launch  # noqa: E402
import measure  # noqa: E402

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh  # noqa: E402

# The operator serves one Kubeflow, the oldest: this module's CR must be the only one.
OWN_PLANE = True
NS = launch.NAMESPACE


@pytest.fixture(scope="module")
def operator(control_plane, kube, tmp_path_factory):
    with running_operator(control_plane, kube, tmp_path_factory.mktemp("operator"),
                          ["--default-reconcile-period", "10m"], alone=True) as proc:
        yield proc


def _ready(kube, name):
    cr = kube.get(kube.resource("kfocp.io/v1alpha1", "Kubeflow"), name, NS) or {}
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (cr.get("status") or {}).get("conditions") or [])


def test_contributor_policies_name_the_gateway_and_the_pipelines_ui(operator, control_plane, kube):
    name = "kf-" + uuid.uuid4().hex[:6]
    team, group = name + "-team", name + "-readers"
    policies = isolated_policies(name)
    spec = dict(measure.roles_off_except(launch.CRD, ("scc", "namespace_policies", "profiles")), sccGrantsDefault=[],
                namespacePoliciesSelector=policies["namespace_policies_selector"],
                namespacePoliciesWhitelistNamespaces=policies["namespace_policies_whitelist_namespaces"],
                profilesList=[{"name": team, "owner": {"user": "alice"},
                               "contributors": [{"user": "bob", "role": "edit"}, {"group": group, "role": "view"}]}])
    assert not any(key.lower().endswith("principals") for key in spec), "the CR sets no principals"
    cr = {"apiVersion": "kfocp.io/v1alpha1", "kind": "Kubeflow", "metadata": {"name": name, "namespace": NS}, "spec": spec}
    control_plane.kubectl("create", "-f", "-", input=json.dumps(cr))
    wait_for(lambda: _ready(kube, name), 600, interval=1, what="Ready=True")

    # the profile controller makes the namespace after the run: its access is the fast path's
    play_profile_controller(control_plane, [team], {"kfocp-test": name}, kube=kube)
    # a Group member added later: the fast path again
    kube.apply(kube.resource("user.openshift.io/v1", "Group"), {
        "apiVersion": "user.openshift.io/v1", "kind": "Group", "metadata": {"name": group}, "users": ["carol"]},
        "group-admin", force=True)
    authz = kube.resource("security.istio.io/v1", "AuthorizationPolicy")
    principals = [mesh.gateway_info({})["principal"], "cluster.local/ns/kubeflow/sa/ml-pipeline-ui"]
    for user, role in (("bob", "edit"), ("carol", "view")):
        kfam = [o for o in standins.kfam_contributor_objects(team, user, role, {
            "ISTIO_INGRESS_GATEWAY_PRINCIPAL": principals[0], "KFP_UI_PRINCIPAL": principals[1]})
            if o["kind"] == "AuthorizationPolicy"][0]
        policy = wait_for(lambda: kube.get(authz, kfam["metadata"]["name"], team), 30, interval=0.2,
                          what="%s's contributor policy" % user)
        assert policy["metadata"]["labels"]["kfocp.io/instance"] == name
        assert policy["spec"]["rules"] == kfam["spec"]["rules"]
        assert policy["spec"]["rules"][0]["from"] == [{"source": {"principals": principals}}]
