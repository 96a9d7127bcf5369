"""site.yml then uninstall.yml leaves the API server as it was.

The test dumps every object of every listable kind before the install and after the uninstall,
and requires: no object labelled as kfocp's (any instance) or patched by this instance remains,
and every object that existed before is unchanged. Look-alike objects that kfocp did not create
(a namespace named like a profile, a ClusterRole named like kfocp's, a system namespace someone
else made) are seeded first and must survive untouched.

site.yml runs as it is, every role switched on, twice (the second run must change nothing),
with what the installer and the operators would provide: a worker MachineSet to clone, and OLM
and the mesh operator played in the background for every Subscription and mesh control plane
the roles create.
"""
import copy
import time

from helpers import (PlayOperators, ensure_namespace, list_or_none, listable_kinds, only_roles,
                     play_installer_worker_machineset, run_playbook)

# Kinds left out of the dump, because controllers rewrite them all the time and kfocp never writes
# them: Events, Leases (leader election and node heartbeats, renewTime), Endpoints and
# EndpointSlices (mirrored from Services by the endpoint controllers), ComponentStatus (computed).
SKIP = {("", "Event"), ("events.k8s.io", "Event"), ("coordination.k8s.io", "Lease"), ("", "Endpoints"),
        ("discovery.k8s.io", "EndpointSlice"), ("", "ComponentStatus")}
# Played by the tests in the role of OLM during the run: the ClusterServiceVersions OLM would
# install. They belong to OLM, not to kfocp, so new ones may remain where their namespace remains.
PLAYED_NEW = {("operators.coreos.com", "ClusterServiceVersion")}


def normal(obj):
    """The object without what the API server and controllers maintain: resourceVersion and
    managedFields (bookkeeping of every write, including kfocp's give-back of a shared field,
    which leaves an empty entry), and status (written by controllers; kfocp never writes status).
    uid, creationTimestamp, labels, annotations and spec are kept: a deleted and recreated object,
    or a label left behind, shows as a change."""
    obj = copy.deepcopy(obj)
    meta = obj.get("metadata") or {}
    for field in ("resourceVersion", "managedFields"):
        meta.pop(field, None)
    obj.pop("status", None)
    return obj


def dump(kube):
    out = {}
    for group, _version, kind, res in listable_kinds(kube, SKIP):
        for item in list_or_none(kube, res) or []:
            meta = item["metadata"]
            out[(group, kind, meta.get("namespace") or "", meta["name"])] = normal(item)
    return out


def kfocp_marked(obj, instance):
    labels = obj["metadata"].get("labels") or {}
    return labels.get("app.kubernetes.io/managed-by") == "kfocp" or "patched.kfocp.io/%s" % instance in labels


def seed(kube):
    """Objects kfocp did not create, some named like kfocp's, and the installer's MachineSet."""
    ensure_namespace(kube, "team-lookalike", {"app.kubernetes.io/part-of": "kubeflow-profile"})
    ensure_namespace(kube, "knative-serving-ingress", {"owner": "platform-team"})
    ensure_namespace(kube, "openshift-operators")
    crole = kube.resource("rbac.authorization.k8s.io/v1", "ClusterRole")
    kube.apply(crole, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                       "metadata": {"name": "kfocp-scc-anyuid-mysql", "labels": {"app.kubernetes.io/part-of": "kfocp"}},
                       "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]},
               "cluster-admin-test", force=True)
    play_installer_worker_machineset(kube)


def every_role_on(instance):
    enabled = dict((key, True) for key in only_roles())
    # inputs without a default that some roles require
    return dict(enabled, kfocp_instance=instance, auth_host="kubeflow.apps.local.example",
                gpu_csv_timeout=120, gpu_csv_poll_interval=2, serverless_csv_timeout=120, serverless_csv_poll_interval=2,
                gpu_machinesets=[{"name": "%s-gpu" % instance, "accelerator": "nvidia-a10g",
                                  "instance_type": {"aws": "g5.2xlarge"}, "max_replicas": 2}],
                autoscaler_watermark={"enabled": True, "namespace": "%s-pns" % instance, "percentage": 20})


def test_site_then_uninstall_leaves_the_api_as_it_was(own_plane, instance, tmp_path):
    plane, kube = own_plane  # every role on, cluster-wide: the shared plane holds other tests' objects

    def playbook(name, extravars):
        return run_playbook(plane, name, extravars, tmp_path)

    seed(kube)
    time.sleep(2)  # let the controllers settle (service accounts, root CA ConfigMaps of the seeded namespaces)
    before = dump(kube)
    with PlayOperators(kube) as operators:
        installed = playbook("site", every_role_on(instance))
        assert installed.rc == 0, installed.stdout[-5000:]
        again = playbook("site", every_role_on(instance))
    assert again.rc == 0, again.stdout[-5000:]
    assert again.changed == 0, "a second run of site.yml changed: %s" % again.changed_tasks
    during = dump(kube)
    made = [key for key, obj in during.items() if kfocp_marked(obj, instance)]
    assert len(made) >= 10, made  # the install did real work
    assert operators.done, "no Subscription was created: the OLM path was not exercised"
    # the system namespace someone else made was patched, not taken over
    ingress = during[("", "Namespace", "", "knative-serving-ingress")]["metadata"]["labels"]
    assert "patched.kfocp.io/%s" % instance in ingress and "app.kubernetes.io/managed-by" not in ingress

    removed = playbook("uninstall", {"kfocp_instance": instance, "kfocp_uninstall_timeout": 180})
    assert removed.rc == 0, removed.stdout[-5000:]

    deadline = time.monotonic() + 60
    while True:  # controllers finish their reactions (namespace finalizers, ClusterRole aggregation)
        after = dump(kube)
        left = sorted(key for key, obj in after.items() if kfocp_marked(obj, instance))
        changed = sorted(key for key in before if key in after and after[key] != before[key])
        missing = sorted(key for key in before if key not in after)
        added = sorted(key for key in after if key not in before and key[:2] not in PLAYED_NEW)
        if not (left or changed or missing or added) or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert not left, "kfocp objects left after uninstall: %s" % left
    assert not missing, "objects that existed before and are gone: %s" % missing
    assert not added, "objects that did not exist before and remain: %s" % added
    diffs = dict((key, (before[key], after[key])) for key in changed[:5])
    assert not changed, "objects changed by install + uninstall: %s\n%s" % (changed, diffs)
    for key in [("", "Namespace", "", "team-lookalike"), ("", "Namespace", "", "knative-serving-ingress"),
                ("rbac.authorization.k8s.io", "ClusterRole", "", "kfocp-scc-anyuid-mysql"),
                ("machine.openshift.io", "MachineSet", "openshift-machine-api", "ci-x1-worker-a")]:
        assert after[key] == before[key]
