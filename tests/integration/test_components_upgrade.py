"""Kubeflow upgraded in place by the components role, one release at a time, on one control plane:
v1.10.2, then v1.11.0, then 26.03, each from upstream's own tree (kubeflow/manifests as tagged,
../shared/upstream) through the tarball source and the remote bases map, with the role's defaults.

The oracle for what each step prunes is upstream's: the objects the release's `example` render has
and the next release's does not (../shared/upstream/example-render-<release>.yaml.gz). A tenant's
objects, made as a user and the profile controller make them (a Profile, its namespace, a
contributor's RoleBinding, a notebook's volume claim), are compared before and after each step.
What an in-place upgrade cannot do (a downgrade, a skipped release) is refused before any change.

In a cluster the old release's webhook pods run while the new release is applied, and cert-manager's
CA injector has put their CA in the webhook configurations; the local control plane runs no pod, so
the test plays both: a loopback server behind each Service a webhook names (standins.AdmissionWebhook,
which admits every request), and its CA written into the webhook's caBundle by another field manager,
as the injector writes it. The pvc-protection controller's part (a claim being deleted loses its
finalizer once no pod uses it) is played too."""
import threading
import time

import pytest

import standins
from helpers import in_background, labelled_objects, play_kfam_add_contributor, play_profile_controller, \
    play_pvc_protection
from test_components_releases import UPSTREAM, install_prerequisite_crds, remote_bases, render

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh

pytestmark = pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/upstream (upstream's trees) is absent")
# the tree makes cluster-wide objects with fixed names, and an upgrade compares the whole install
OWN_PLANE = True
TENANT = "alice"
OWNER = "alice@example.com"
CONTRIBUTOR = "bob@example.com"


def extra(instance, release, bases):
    gateway = mesh.gateway_info({"flavour": "ossm3"})
    return {"kfocp_instance": instance, "components_source": "tarball",
            "components_tarball": str(UPSTREAM / ("kubeflow-manifests-%s.tar.gz" % release)),
            "components_release": release, "components_remote_bases": bases, "components_no_log": False,
            # the role's default: every component of the release's catalog (the local inventory
            # lists the fixture tree's)
            "components_components": {},
            "service_mesh_gateway_info": {"principal": gateway["principal"]}}


def identities(objs):
    """(kind, namespace, name) of each object."""
    return set((o["kind"], o["metadata"].get("namespace") or "", o["metadata"]["name"]) for o in objs)


def installed(kube, instance):
    """{(kind, namespace, name): (resourceVersion, component)} of the instance's objects."""
    return dict(((kind, namespace, name), (obj["metadata"]["resourceVersion"],
                                           (obj["metadata"].get("labels") or {}).get("kfocp.io/component")))
                for (_group, kind, namespace, name), obj in labelled_objects(kube, instance, patched=False).items())


def tenant(kube):
    """The tenant's objects as the API server holds them: {(kind, name): (uid, resourceVersion, labels,
    annotations, spec or subjects)}."""
    reads = [("kubeflow.org/v1", "Profile", None, TENANT), ("v1", "Namespace", None, TENANT),
             ("rbac.authorization.k8s.io/v1", "RoleBinding", TENANT, "user-bob-example-com-clusterrole-edit"),
             ("rbac.authorization.k8s.io/v1", "RoleBinding", TENANT, "namespaceAdmin"),
             ("v1", "PersistentVolumeClaim", TENANT, "workspace-notebook")]
    out = {}
    for api_version, kind, namespace, name in reads:
        obj = kube.get(kube.resource(api_version, kind), name, namespace)
        assert obj is not None, "%s %s is missing" % (kind, name)
        meta = obj["metadata"]
        out[(kind, name)] = (meta["uid"], meta["resourceVersion"], meta.get("labels"), meta.get("annotations"),
                             obj.get("spec") or obj.get("subjects"))
    return out


def make_tenant(control_plane, kube):
    """A profile as its owner creates it (oc create), its namespace and owner binding as the profile
    controller makes them, a contributor as the dashboard adds one (KFAM), and a notebook's volume
    claim as the Jupyter web app creates it."""
    profile = {"apiVersion": "kubeflow.org/v1", "kind": "Profile", "metadata": {"name": TENANT},
               "spec": {"owner": {"kind": "User", "name": OWNER, "apiGroup": "rbac.authorization.k8s.io"}}}
    kube.apply(kube.resource("kubeflow.org/v1", "Profile"), profile, "kubectl-create")
    assert play_profile_controller(control_plane, [TENANT], kube=kube) == [TENANT]
    play_kfam_add_contributor(kube, TENANT, CONTRIBUTOR, "edit")
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "workspace-notebook", "namespace": TENANT, "labels": {"app": "notebook"}},
             "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}}}
    kube.apply(kube.resource("v1", "PersistentVolumeClaim"), claim, "jupyter-web-app")


WEBHOOKS = (("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"),
            ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"))


def play_webhook_pods(control_plane, kube, servers):
    """A server behind every Service a webhook configuration names (once per Service), and its CA
    in each such webhook's caBundle, applied as cert-manager's CA injector does."""
    for api_version, kind in WEBHOOKS:
        res = kube.resource(api_version, kind)
        for config in kube.list(res):
            hooks = []
            for hook in config.get("webhooks") or []:
                service = (hook.get("clientConfig") or {}).get("service")
                if not service:
                    continue
                key = (service["namespace"], service["name"], service.get("port") or 443)
                if key not in servers:
                    servers[key] = standins.AdmissionWebhook(control_plane, *key).start()
                hooks.append({"name": hook["name"], "clientConfig": {"caBundle": servers[key].ca_bundle}})
            if hooks:
                kube.apply(res, {"apiVersion": api_version, "kind": kind,
                                 "metadata": {"name": config["metadata"]["name"]}, "webhooks": hooks},
                           "cert-manager-cainjector", force=True)


def converge(playbook, instance, release, bases, again=True):
    """Install `release` and run it again: the second run changes nothing. Returns the first run."""
    first = playbook("components", extra(instance, release, bases))
    assert first.rc == 0, first.stdout[-4000:]
    if not again:  # a first install's re-run: tests/integration/test_components_releases.py
        return first
    again = playbook("components", extra(instance, release, bases))
    assert again.rc == 0, again.stdout[-4000:]
    changed = [o for result in again.task_results("manifests_apply") for o in result.get("objects") or []
               if o["action"] not in ("unchanged", "skipped")]
    assert again.count("changed") == 0 and changed == [], changed
    return first


def refused(playbook, kube, instance, release, bases, message):
    """A run of `release` that the upgrade check refuses, changing nothing."""
    before = installed(kube, instance)
    run = playbook("components", extra(instance, release, bases))
    text = " ".join(run.stdout.split())
    assert run.rc != 0 and message in text, run.stdout[-3000:]
    assert installed(kube, instance) == before


def test_kubeflow_upgrades_in_place_a_release_at_a_time_and_keeps_the_tenants_objects(
        playbook, control_plane, kube, instance, tmp_path):
    bases = remote_bases(tmp_path)
    servers = {}
    stop = threading.Event()
    in_background(play_pvc_protection, kube, stop)
    try:
        steps(playbook, control_plane, kube, instance, bases, servers)
    finally:
        stop.set()
        for server in servers.values():
            server.stop()


def steps(playbook, control_plane, kube, instance, bases, servers):
    durations = {}
    started = time.monotonic()
    install_prerequisite_crds(kube, "v1.10.2")
    converge(playbook, instance, "v1.10.2", bases, again=False)
    durations["v1.10.2"] = round(time.monotonic() - started)
    play_webhook_pods(control_plane, kube, servers)
    make_tenant(control_plane, kube)
    kept = tenant(kube)

    refused(playbook, kube, instance, "26.03", bases,
            "components_release: the cluster has Kubeflow v1.10.2 installed; 26.03 skips v1.11.0, and kfocp "
            "upgrades one release at a time. Install v1.11.0 first")

    pruned = {}
    for old, new in (("v1.10.2", "v1.11.0"), ("v1.11.0", "26.03")):
        started = time.monotonic()
        install_prerequisite_crds(kube, new)
        play_webhook_pods(control_plane, kube, servers)
        before = installed(kube, instance)
        first = converge(playbook, instance, new, bases)
        after = installed(kube, instance)
        durations[new] = round(time.monotonic() - started)
        assert "%s -> %s" % (old, new) in first.stdout
        gone = set(before) - set(after)
        pruned[new] = sorted(gone)
        print("pruned by %s -> %s (%d): %s" % (old, new, len(gone), pruned[new]))
        # upstream's own account of what the release dropped: in the old example render, not in
        # the new one (the Training Operator v1, which the example of v1.11.0 leaves out for the
        # Trainer, stays in kfocp's catalog)
        upstream_old, upstream_new = identities(render(old)), identities(render(new))
        expected = set(key for key, (_version, component) in before.items()
                       if key in upstream_old - upstream_new and component != "training-operator")
        assert expected <= gone, sorted(expected - gone)
        # nothing that both releases render is pruned; what else went is kfocp's own (an SCC grant
        # of an account that went), never upstream's
        assert not gone & upstream_new, sorted(gone & upstream_new)
        assert not (gone - expected) & upstream_old, sorted((gone - expected) & upstream_old)
        print("pruned beside upstream's objects (kfocp's own): %s" % sorted(gone - expected))
        assert tenant(kube) == kept

    assert pruned["v1.11.0"], "v1.11.0 drops objects of v1.10.2 (minio)"
    refused(playbook, kube, instance, "v1.11.0", bases,
            "components_release: the cluster has Kubeflow 26.03 installed; going back to v1.11.0 is a downgrade")
    assert tenant(kube) == kept
    print("durations (s): %s" % durations)
