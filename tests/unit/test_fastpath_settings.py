"""The operator's fast path gives the tenancy builders the settings the playbook's roles give them.

The settings are taken from a FastPath after configure(), as the controller calls it with a run's
variables; the oracles are upstream's: KFAM's contributor policy for the same principals
(standins.kfam_contributor_objects, kubeflow/dashboard components/access-management/kfam/bindings.go)
with the principals the components role gives KFAM, and the self-service prefix the
profile_self_service role's admission policy holds members to."""
import sys
import threading
import types
from pathlib import Path

import pytest

import standins

from ansible_collections.kfocp.kubeflow.plugins.module_utils import settings as role_settings
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh, profiles, self_service
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "operator"))

from kfocp_operator import fastpath  # noqa: E402


def configured(variables, instance="kf"):
    """(policies, profiles, scc) settings of a FastPath configured with `variables`, its watches
    and worker left out."""
    fast = fastpath.FastPath(None, ROOT, stop=threading.Event())
    fast._start_watches = lambda _instance: None  # pylint: disable=protected-access
    fast.namespaces = types.SimpleNamespace(synced=threading.Event())
    fast.worker = threading.current_thread()
    fast.configure(instance, variables)
    assert fast.instance == instance, "the fast path is serving"
    return fast.policies, fast.profiles, fast.scc


def kfam_env(variables):
    """The principals the components role gives KFAM in a site.yml run with these variables (its
    components_settings filter), with the gateway the service_mesh role tells the play about."""
    mesh_input = dict((key[len("service_mesh_"):], value) for key, value in variables.items()
                      if key.startswith("service_mesh_"))
    play = dict(variables, service_mesh_gateway_info=mesh.gateway_info(mesh_input))
    return role_settings.components_settings(play)["components_profile_principals"]


def access_policy(settings, user="bob"):
    plan = [{"name": "team-a", "owner": ("User", "alice"), "contributors": [("User", user, "edit")], "hard": {},
             "source": "declared", "group_owner_role": None, "members": {}}]
    return [o for o in profiles.objects_of(plan, settings) if o["kind"] == "AuthorizationPolicy"]


@pytest.mark.parametrize("variables", [
    {},
    {"service_mesh_flavour": "ossm3"},
    {"components_namespace": "kf"},
    {"service_mesh_flavour": "external", "service_mesh_external": {"namespace": "edge", "gateway": "gw"}},
], ids=["defaults", "ossm3", "components-namespace", "external"])
def test_a_cr_without_principals_gets_kfams_contributor_policy(variables):
    """A CR that does not set profilesAuthzPrincipals: the contributor policy the fast path
    writes admits the user's requests from the gateway and the pipelines UI only, as KFAM's does."""
    _policies, settings, _scc = configured(variables)
    ours = access_policy(settings)
    kfam = [o for o in standins.kfam_contributor_objects("team-a", "bob", "edit", kfam_env(variables))
            if o["kind"] == "AuthorizationPolicy"]
    assert [o["metadata"]["name"] for o in ours] == [o["metadata"]["name"] for o in kfam]
    assert ours[0]["spec"]["rules"] == kfam[0]["spec"]["rules"]
    assert ours[0]["spec"]["rules"][0].get("from"), "a contributor policy without `from` admits any workload"


def test_principals_the_cr_sets_are_kept():
    _policies, settings, _scc = configured({"profiles_authz_principals": ["cluster.local/ns/a/sa/b"]})
    assert access_policy(settings)[0]["spec"]["rules"][0]["from"] == [{"source": {"principals": ["cluster.local/ns/a/sa/b"]}}]


def user(name):
    return {"metadata": {"name": name}, "identities": ["htpasswd:" + name]}


@pytest.mark.parametrize("variables, prefix", [
    ({}, self_service.DEFAULTS["profile_self_service_name_prefix"]),
    ({"profile_self_service_name_prefix": "self-"}, "self-"),
])
def test_automatic_profiles_never_take_a_self_service_name(variables, prefix):
    """A member of the self-service group may create <prefix><anything> (the admission policy's
    namePrefix): the fast path gives no automatic profile such a name, as the playbook does not."""
    _policies, settings, _scc = configured(dict(variables, profiles_auto_from_users=True))
    assert self_service.params(dict(variables))["data"]["namePrefix"] == prefix
    planned = profiles.plan(settings, [user(prefix + "lab"), user("carol")])
    names = dict((p["owner"][1], p["name"]) for p in planned)
    assert names["carol"] == "carol"
    assert not names[prefix + "lab"].startswith(prefix), names


def test_without_self_service_the_names_are_free():
    _policies, settings, _scc = configured({"profiles_auto_from_users": True,
                                            "kfocp_profile_self_service_enabled": False})
    assert [p["name"] for p in profiles.plan(settings, [user("my-lab")])] == ["my-lab"]


def test_a_wrong_self_service_prefix_is_named_as_the_variable_it_comes_from():
    _policies, settings, _scc = configured({"profile_self_service_name_prefix": "My_"})
    with pytest.raises(DefinitionError, match=r"^profile_self_service_name_prefix: 'My_' is not a name prefix"):
        profiles.plan(settings)
