"""Self-service profiles: who may create and delete profiles, enforced by the API server."""
import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client, KubeError
from ansible_collections.kfocp.kubeflow.plugins.module_utils.engine import Engine
from helpers import ROOT

PLAYBOOK = str(ROOT / "tests" / "integration" / "playbooks" / "self_service.yml")


def profile(name, owner):
    return {"apiVersion": "kubeflow.org/v1", "kind": "Profile", "metadata": {"name": name},
            "spec": {"owner": {"kind": "User", "name": owner, "apiGroup": "rbac.authorization.k8s.io"}}}


@pytest.fixture
def access(control_plane, playbook, instance, tmp_path, kube):
    group = instance + "-creators"
    result = playbook(PLAYBOOK, {"kfocp_instance": instance, "profile_self_service_group": group})
    assert result.rc == 0, result.stdout
    again = playbook(PLAYBOOK, {"kfocp_instance": instance, "profile_self_service_group": group})
    assert again.rc == 0 and again.count("changed") == 0, again.stdout

    def client(user, *groups):
        path = control_plane.write_kubeconfig(tmp_path / (user + ".kubeconfig"), user, list(groups))
        return Client.from_params({"kubeconfig": str(path)})

    yield group, client
    Engine(kube, instance=instance).delete_all(wait=True)


def create(client, obj):
    res = client.resource("kubeflow.org/v1", "Profile")
    return client.request("POST", client.path(res), body=obj)


def delete(client, name):
    res = client.resource("kubeflow.org/v1", "Profile")
    return client.request("DELETE", client.path(res, name=name))


def test_creator_stranger_and_admin(access, instance, kube):
    group, client = access
    alice = client("alice-" + instance, group)
    bob = client("bob-" + instance)
    admin = client("admin-" + instance, "system:masters")
    mine, theirs, admins = instance + "-alice", instance + "-for-bob", instance + "-carol"
    try:
        create(alice, profile(mine, "alice-" + instance))

        with pytest.raises(KubeError) as err:
            create(alice, profile(theirs, "bob-" + instance))
        assert err.value.status == 403
        assert "may only create profiles they own" in str(err.value)
        assert "spec.owner is User bob-%s, you are alice-%s" % (instance, instance) in str(err.value)

        with pytest.raises(KubeError) as err:
            create(bob, profile(instance + "-bob", "bob-" + instance))
        assert err.value.status == 403 and "cannot create resource" in str(err.value)

        create(admin, profile(admins, "carol-" + instance))

        with pytest.raises(KubeError) as err:
            delete(alice, admins)
        assert err.value.status == 403 and "may only delete profiles they own" in str(err.value)
        delete(alice, mine)

        with pytest.raises(KubeError) as err:  # no update: a member cannot raise a quota
            res = alice.resource("kubeflow.org/v1", "Profile")
            alice.request("PATCH", alice.path(res, name=admins), body={"spec": {"resourceQuotaSpec": {}}},
                          content_type="application/merge-patch+json")
        assert err.value.status == 403
    finally:
        res = kube.resource("kubeflow.org/v1", "Profile")
        for name in (mine, theirs, admins):
            kube.request("DELETE", kube.path(res, name=name), allow=(404,))
