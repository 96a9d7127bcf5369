"""uninstall.yml under the profile controller's real finalizer behaviour: the Profiles go first and
the run waits for the controller to release them; if it never does, the run stops, names them and
says how to release them, before anything else is removed. A CRD is never deleted while objects of
its kind that kfocp did not make remain."""
import standins
from helpers import isolated_policies, labelled_objects, profile_controller, wait_for

from ansible_collections.kfocp.kubeflow.plugins.module_utils.engine import Engine

PROFILE = ("kubeflow.org/v1", "Profile")


def test_uninstall_waits_for_the_controller_to_release_the_profiles(playbook, kube, control_plane, instance):
    name = instance + "-team"
    extra = dict(isolated_policies(instance), kfocp_instance=instance,
                 profiles_list=[{"name": name, "owner": {"user": "o@example.com"},
                                 "contributors": [{"user": "c@example.com", "role": "edit"}]}])
    controller = profile_controller(control_plane, {"kfocp-test": instance}, kube=kube)
    assert playbook("profiles", extra).rc == 0
    assert controller.step([name]) == [name]
    assert playbook("profiles", extra).rc == 0
    assert kube.get(kube.resource(*PROFILE), name)["metadata"]["finalizers"] == [standins.FINALIZER]

    # the controller is down: the Profile stays Terminating, the run stops and names it
    stuck = playbook("uninstall", {"kfocp_instance": instance, "kfocp_uninstall_profiles_timeout": 3})
    assert stuck.rc != 0
    text = " ".join(stuck.stdout.split())
    assert "Nothing else was removed. 1 Profile(s) are still there 3s after deletion: %s" % name in text, text[-3000:]
    assert "oc patch profile <name> --type=merge -p" in text
    left = labelled_objects(kube, instance, patched=False)
    assert any(kind == "RoleBinding" for _group, kind, _ns, _name in left), left  # the rest is still there

    with controller:  # it runs again: the uninstall goes through
        removed = playbook("uninstall", {"kfocp_instance": instance, "kfocp_uninstall_timeout": 60})
    assert removed.rc == 0, removed.stdout[-3000:]
    assert kube.get(kube.resource(*PROFILE), name) is None
    wait_for(lambda: not labelled_objects(kube, instance), 60, what="no object of the instance left")


def test_uninstall_names_a_profile_the_controller_refuses_before_removing_anything(playbook, kube, control_plane,
                                                                                   instance):
    """The controller refuses a Profile whose namespace's owner annotation is not its spec.owner,
    and never reaches its finalizer block: even while it runs, that Profile would stay Terminating.
    The run says so, names it and how to release it, and deletes nothing."""
    name = instance + "-moved"
    extra = dict(isolated_policies(instance), kfocp_instance=instance,
                 profiles_list=[{"name": name, "owner": {"user": "o@example.com"}}])
    controller = profile_controller(control_plane, {"kfocp-test": instance}, kube=kube, only=[name])
    assert playbook("profiles", extra).rc == 0
    assert controller.step([name]) == [name]
    namespaces = kube.resource("v1", "Namespace")
    ns = kube.get(namespaces, name)
    ns["metadata"]["annotations"]["owner"] = "someone-else@example.com"
    kube.request("PUT", kube.path(namespaces, None, name), body=ns)
    assert controller.step([name]) == []  # refused from now on
    with controller:
        refused = playbook("uninstall", {"kfocp_instance": instance, "kfocp_uninstall_profiles_timeout": 30})
        assert refused.rc != 0
        text = " ".join(refused.stdout.split())
        assert "Nothing was removed. The profile controller would never release 1 Profile(s)" in text, text[-3000:]
        assert ("Profile %s: spec.owner o@example.com, namespace %s owner annotation someone-else@example.com"
                % (name, name)) in text, text[-3000:]
        assert "oc annotate namespace <name> owner=<spec.owner> --overwrite" in text
        live = kube.get(kube.resource(*PROFILE), name)
        assert live is not None and not live["metadata"].get("deletionTimestamp")
        assert labelled_objects(kube, instance, patched=False)

        # the namespace given back to the Profile's owner: the controller releases it, and the run goes through
        ns = kube.get(namespaces, name)
        ns["metadata"]["annotations"]["owner"] = "o@example.com"
        kube.request("PUT", kube.path(namespaces, None, name), body=ns)
        removed = playbook("uninstall", {"kfocp_instance": instance, "kfocp_uninstall_timeout": 60})
    assert removed.rc == 0, removed.stdout[-3000:]
    assert kube.get(kube.resource(*PROFILE), name) is None


def test_a_crd_is_kept_while_objects_kfocp_did_not_make_remain(kube, instance):
    group = "%s.example.com" % instance
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets." + group},
           "spec": {"group": group, "scope": "Cluster",
                    "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object",
                                                                 "x-kubernetes-preserve-unknown-fields": True}}}]}}
    Engine(kube, instance).apply([crd])
    widget = {"apiVersion": group + "/v1", "kind": "Widget", "metadata": {"name": "someone-elses"}}
    kube.apply(kube.resource(group + "/v1", "Widget"), widget, "someone")
    result = Engine(kube, instance).delete_all(wait=True)
    kept = [line for line in result.as_dict("all")["objects"] if "widgets." + group in str(line)]
    assert kept and "kept: deleting it would delete 1" in str(kept), result.as_dict("all")
    assert kube.get(kube.resource("apiextensions.k8s.io/v1", "CustomResourceDefinition"), "widgets." + group)
    # once the other object is gone, the CRD goes too
    kube.delete(kube.resource(group + "/v1", "Widget"), "someone-elses")
    wait_for(lambda: not kube.list(kube.resource(group + "/v1", "Widget")), 20, what="the Widget gone")
    Engine(kube, instance).delete_all(wait=True)
    assert kube.get(kube.resource("apiextensions.k8s.io/v1", "CustomResourceDefinition"), "widgets." + group) is None
