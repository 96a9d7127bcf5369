"""The operator's fast path and a playbook run, one after the other on the real API server, for
the same variables: what the fast path writes must be what the playbook writes, object by object.

One scenario per spec: OpenShift Users (of an identity provider named after the instance) and a
Group, a declared profile with a user and a group contributor, automatic profiles (one for a user
whose name is a self-service name), the profile controller's namespaces. The fast path (in this
process, with its own client) applies everything; once it is still, its objects are read; then
playbooks/profiles.yml runs with the same variables as extra variables (an inventory of one local
host and the kubeconfig, as the operator's), and the objects are read again. Any object the
playbook creates, changes or deletes is a difference."""
import json
import sys
import time
from pathlib import Path

import yaml

import clusterdiff
from helpers import ROOT, isolated_policies, labelled_objects, play_profile_controller, run_playbook, wait_for

sys.path[:0] = [str(ROOT / "operator")]

from kfocp_operator import fastpath, playbook  # noqa: E402

USERS = ("user.openshift.io/v1", "User")
GROUPS = ("user.openshift.io/v1", "Group")
# Every name here starts with the instance, so that the whitelist of isolated_policies covers them.
SELF_SERVICE_PREFIXES = ("my-", "lab-")


def spec_variables(instance, spec):
    """The run's variables for a spec (role variables, as the operator converts a CR's spec): the
    scenario's, isolated to this instance's namespaces and users, then the spec's own."""
    out = dict(isolated_policies(instance), kfocp_instance=instance, kfocp_openshift_version="4.20",
               profile_self_service_state="absent", profiles_auto_from_users=True, profiles_auto_provider=instance,
               profiles_list=[{"name": instance + "-team", "owner": {"user": instance + "-alice"},
                               "contributors": [{"user": instance + "-bob", "role": "edit"},
                                                {"group": instance + "-readers", "role": "view"}]}])
    out.update(spec)
    return out


def people(kube, instance):
    """The scenario's Users and Group."""
    names = [instance + "-alice", instance + "-bob", instance + "-carol"] + [p + instance for p in SELF_SERVICE_PREFIXES]
    users = kube.resource(*USERS)
    for name in names:
        kube.apply(users, {"apiVersion": USERS[0], "kind": USERS[1], "metadata": {"name": name},
                           "identities": ["%s:%s" % (instance, name)]}, "parity-test", force=True)
    kube.apply(kube.resource(*GROUPS), {"apiVersion": GROUPS[0], "kind": GROUPS[1],
                                        "metadata": {"name": instance + "-readers"}, "users": [instance + "-carol"]},
               "parity-test", force=True)


def _profiles(kube, instance):
    res = kube.resource("kubeflow.org/v1", "Profile")
    return sorted(p["metadata"]["name"] for p in kube.list(res, label_selector="kfocp.io/instance=" + instance))


def snapshot(kube, instance):
    return clusterdiff.snapshot(labelled_objects(kube, instance))


def still(fast, kube, instance, settle=1.5, timeout=120):
    """The fast path's objects once it has nothing queued and they stay the same for `settle` seconds."""
    deadline = time.monotonic() + timeout
    before = snapshot(kube, instance)
    while time.monotonic() < deadline:
        time.sleep(settle)
        now = snapshot(kube, instance)
        if now == before and fast.depth() == 0:
            return now
        before = now
    raise AssertionError("the fast path did not settle within %ss" % timeout)


def run_fast_path(control_plane, kube, variables):
    """The fast path serving the instance until its objects are still; returns them."""
    instance = variables["kfocp_instance"]
    fast = fast_path(control_plane, variables)
    try:
        # the declared profile and the automatic ones of bob, carol and the self-service names
        def settled_profiles():
            found = _profiles(kube, instance)
            return found if len(found) >= 2 + len(SELF_SERVICE_PREFIXES) + 1 else None

        names = wait_for(settled_profiles, timeout=60, what="the fast path's Profiles")
        play_profile_controller(control_plane, names, {"kfocp-test": instance}, kube=kube)
        limits = kube.resource("v1", "LimitRange")

        def policies_everywhere():
            if variables.get("namespace_policies_limitrange") == {}:
                return True
            found = set(o["metadata"]["namespace"] for o in kube.list(limits, label_selector="kfocp.io/instance=" + instance))
            return found >= set(names)
        wait_for(policies_everywhere, timeout=60, what="the fast path's policies in every profile namespace")
        return still(fast, kube, instance)
    finally:
        stop(fast)


def run_playbook_after(control_plane, kube, variables, workdir, name="profiles"):
    """playbooks/<name>.yml with the variables, as the operator runs it (an inventory of one local
    host, the variables as extra variables); returns (result, objects)."""
    inventory = Path(workdir) / "inventory.yml"
    inventory.write_text(yaml.safe_dump(playbook.inventory(sys.executable)))
    extravars = dict(json.loads(json.dumps(variables)), kfocp_kubeconfig=str(control_plane.kubeconfig))
    result = run_playbook(control_plane, name, extravars, workdir, inventory=inventory)
    return result, snapshot(kube, variables["kfocp_instance"])


def fast_path(control_plane, variables):
    """A fast path serving the instance of `variables`, in this process; stop() it."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client
    fast = fastpath.FastPath(Client.from_params({"kubeconfig": str(control_plane.kubeconfig)}), ROOT)
    fast.configure(variables["kfocp_instance"], variables)
    assert fast.instance == variables["kfocp_instance"], "the fast path paused on these settings"
    return fast


def stop(fast):
    fast.stop.set()
    for informer in fast.owned:
        informer.stop.set()


def differences(control_plane, kube, variables, workdir):
    """(the fast path's objects, the playbook's result, the differences as lines)."""
    people(kube, variables["kfocp_instance"])
    ours = run_fast_path(control_plane, kube, variables)
    result, theirs = run_playbook_after(control_plane, kube, variables, workdir)
    assert result.rc == 0, result.stdout[-6000:]
    rows = clusterdiff.compare(ours, theirs)
    return ours, result, clusterdiff.report(rows, names=("fast path", "playbook"))
