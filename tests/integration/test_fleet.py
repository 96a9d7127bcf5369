"""The README's fleet recipe against a real Argo CD (hack/argocd.py, built from its Go module): the
render of playbooks/render.yml, committed to a local git repository, synced by the ApplicationSet
it writes, with the kfocp operator running beside Argo CD on the same cluster.

One cluster at a small size here; several in `make bench` (benchmarks/fleet_bench.py)."""
import datetime
import json
import os
import time
import uuid

import pytest
import yaml

from helpers import list_or_none, listable_kinds, roles_off_except, running_operator, wait_for

import argocd
import fleet
import measure
from cluster import ClusterError, ControlPlane
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client

CLUSTER = "east"
OPERATOR_INSTANCE = "kubeflow"
# Who wrote what, from the API server's audit log: every write of every user (reads are not logged)
AUDIT_POLICY = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
                "rules": [{"level": "None", "verbs": ["get", "list", "watch"]},
                          {"level": "None", "resources": [{"group": "coordination.k8s.io", "resources": ["leases"]}]},
                          {"level": "None", "resources": [{"group": "", "resources": ["events"]}]},
                          {"level": "Metadata"}]}
WRITES = ("create", "update", "patch", "delete")
CHURN_SECONDS = float(os.environ.get("KFOCP_FLEET_CHURN_SECONDS", "20"))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A plane that runs Pods (two kwok workers), with an audit log, and Argo CD on it."""
    workdir = tmp_path_factory.mktemp("fleet")
    plane = ControlPlane(workdir / "plane").up(workloads=True, audit_policy=AUDIT_POLICY)
    argo = None
    try:
        plane.add_workers(2)
        argo = argocd.ArgoCD(plane, workdir / "argocd")
        argo.up()
        yield {"plane": plane, "argo": argo, "kube": Client.from_params({"kubeconfig": str(plane.kubeconfig)}),
               "workdir": workdir}
    finally:
        if argo is not None:
            argo.down()
        plane.destroy()


def render(world, extra=None):
    """playbooks/render.yml into the work tree; the changed count of the cluster's host."""
    hosts = fleet.inventory(world["workdir"] / "fleet.yml", world["plane"].state()["bins"]["kubectl"], {CLUSTER: None})
    return fleet.render(hosts, world["tree"], world["url"], extra)[CLUSTER]


def labelled(kube, selector):
    """{(group, kind, namespace, name): resourceVersion} of the objects with `selector`, in every
    kind the API serves that can be listed (Events left out)."""
    out = {}
    skip = (("", "Event"), ("", "ComponentStatus"), ("events.k8s.io", "Event"))
    for group, _api_version, kind, res in listable_kinds(kube, skip=skip):
        for item in list_or_none(kube, res, label_selector=selector) or []:
            meta = item["metadata"]
            out[(group, kind, meta.get("namespace") or "", meta["name"])] = meta["resourceVersion"]
    return out


def key(kube, obj):
    """The (group, kind, namespace, name) of an object as `labelled` keys it: a namespace given to a
    cluster-scoped kind (the API server says which) is not kept."""
    api_version, meta = obj["apiVersion"], obj["metadata"]
    namespace = meta.get("namespace") or "" if kube.resource(api_version, obj["kind"]).namespaced else ""
    return (api_version.split("/")[0] if "/" in api_version else "", obj["kind"], namespace, meta["name"])


def writes(log, since=0.0):
    """[(writer, verb, (resource, namespace, name))] of the audit log's write events after `since`
    (epoch seconds). The writer is Argo CD's application controller (by its user agent), the
    operator (by its service account) or someone else."""
    out = []
    for line in log.read_text().splitlines():
        event = json.loads(line)
        if event.get("verb") not in WRITES or event.get("stage") != "ResponseComplete":
            continue
        if datetime.datetime.fromisoformat(event["requestReceivedTimestamp"].replace("Z", "+00:00")).timestamp() < since:
            continue
        agent = event.get("userAgent") or ""
        user = (event.get("user") or {}).get("username") or ""
        writer = ("argocd" if agent.startswith("argocd-application-controller") else
                  "operator" if user.startswith("system:serviceaccount:kfocp-system:") else "other")
        ref = event.get("objectRef") or {}
        resource = "%s/%s" % (ref.get("apiGroup", ""), ref.get("resource"))
        out.append((writer, event["verb"], (resource, ref.get("namespace"), ref.get("name"))))
    return out


def test_the_fleet_recipe_syncs_prunes_heals_and_does_not_fight_the_operator(world, tmp_path):
    plane, argo, kube = world["plane"], world["argo"], world["kube"]
    world["tree"] = tmp_path / "tree"
    world["tree"].mkdir()
    repo = argo.git_repo(tmp_path / "fleet.git")
    world["url"] = repo.url

    # the render: one directory per cluster and the ApplicationSet; a second render changes nothing
    assert render(world) >= 3
    assert render(world) == 0
    revision = repo.push(world["tree"], "kfocp render")
    appset = yaml.safe_load((world["tree"] / "applicationset.yaml").read_text())
    plane.kubectl("apply", "-f", "-", input=json.dumps(appset))
    app = "kfocp-" + CLUSTER
    started = time.monotonic()
    wait_for(lambda: argo.application(app), 120, what="the ApplicationSet's Application %s" % app)
    argo.wait_synced(app, 600, revision=revision)
    print("fleet: %s Synced and Healthy %.0f s after the ApplicationSet" % (app, time.monotonic() - started))

    # every object of the render is on the cluster, with kfocp's labels and Argo CD's tracking
    instance = CLUSTER + "-gitops"
    synced = labelled(kube, "kfocp.io/instance=" + instance)
    files = [p for p in world["tree"].rglob("*.yaml") if p.name not in ("kustomization.yaml", "applicationset.yaml")]
    expected = set(key(kube, yaml.safe_load(p.read_text())) for p in files)
    assert expected <= set(synced), sorted(expected - set(synced))[:10]
    # besides, only what the endpoint controllers copy the Services' labels to
    assert set(k[1] for k in set(synced) - expected) <= {"Endpoints", "EndpointSlice"}, sorted(set(synced) - expected)
    sample = kube.get(kube.resource("rbac.authorization.k8s.io/v1", "RoleBinding"), "kfocp-scc-anyuid-mysql", "kubeflow")
    assert sample["metadata"]["labels"]["kfocp.io/set"] == "scc"
    assert sample["metadata"]["annotations"]["argocd.argoproj.io/tracking-id"].startswith(app + ":")

    # a second sync changes nothing
    sync(argo, app, revision)
    assert labelled(kube, "kfocp.io/instance=" + instance) == synced

    # an object edited by hand is reported and put back
    cm_res = kube.resource("v1", "ConfigMap")
    edited = next(p for p in files if p.name.startswith("configmap_") and yaml.safe_load(p.read_text()).get("data"))
    wanted = yaml.safe_load(edited.read_text())
    name, namespace = wanted["metadata"]["name"], wanted["metadata"]["namespace"]
    field = sorted(wanted["data"])[0]

    def edit(value):
        kube.apply(cm_res, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
                            "data": {field: value}}, "someone", force=True)
    edit("edited by hand")
    wait_for(lambda: (kube.get(cm_res, name, namespace).get("data") or {}).get(field) == wanted["data"][field], 120,
             what="Argo CD putting back %s of %s/%s" % (field, namespace, name))
    assert kube.get(cm_res, name, namespace).get("data") == wanted["data"]

    # the self-heal sync writes its result when the operation ends, which may be after the object
    # is put back
    state = argo.wait_synced(app, 60)["status"]["operationState"]
    history = state["syncResult"]["resources"]
    assert any(r["kind"] == "ConfigMap" and r["name"] == name for r in history), history

    # a component switched to removed is pruned by Argo CD, and only it
    before = labelled(kube, "kfocp.io/instance=" + instance)
    gone = "tensorboards"
    of_gone = labelled(kube, "kfocp.io/component=%s,kfocp.io/instance=%s" % (gone, instance))
    assert of_gone
    components = dict(fleet.LOCAL_COMPONENTS, **{gone: "removed"})
    assert render(world, {"components_components": components}) >= 1
    revision = repo.push(world["tree"], "remove %s" % gone)
    argo.refresh(app)
    argo.wait_synced(app, 300, revision=revision)
    after = labelled(kube, "kfocp.io/instance=" + instance)
    pruned = set(before) - set(after)
    assert pruned == set(of_gone), (sorted(pruned), sorted(of_gone))
    assert all(after[key] == before[key] for key in after), "objects of other components were changed"

    # the operator on the same cluster, for what grows with users; a minute of churn: new profile
    # namespaces and hand edits; neither writer writes the other's objects
    spec = dict(roles_off_except("namespace_policies"), namespacePoliciesMeshMode="member")
    (tmp_path / "operator").mkdir()
    with running_operator(plane, kube, tmp_path / "operator", ["--default-reconcile-period", "24h"]) as _operator:
        plane.kubectl("create", "-f", "-", input=json.dumps({
            "apiVersion": "kfocp.io/v1alpha1", "kind": "Kubeflow",
            "metadata": {"name": OPERATOR_INSTANCE, "namespace": "kfocp-system"}, "spec": spec}))
        wait_for(lambda: measure_ready(kube), 600, interval=1, what="the Kubeflow resource Ready")
        churn_started = time.time()
        kinds = measure.policy_kinds({"namespace_policies_mesh_mode": "member"})
        teams, round_ = [], 0
        while time.time() - churn_started < CHURN_SECONDS:
            names = ["fleet-%s-%d" % (uuid.uuid4().hex[:4], i) for i in range(3)]
            latencies = measure.burst(kube, names, OPERATOR_INSTANCE, kinds, timeout=60)
            assert set(latencies) == set(names)
            teams += names
            edit("edited by hand, round %d" % round_)
            round_ += 1
            time.sleep(2)
        time.sleep(10)  # the last heal
        argo.wait_synced(app, 300, revision=revision)
    events = writes(plane.audit_log, churn_started)
    # (its own Applications' status aside)
    by_argo = set(ref for writer, _verb, ref in events if writer == "argocd" and not ref[0].startswith("argoproj.io/"))
    by_operator = set(ref for writer, _verb, ref in events if writer == "operator")
    counts = dict((w, sum(1 for e in events if e[0] == w)) for w in ("argocd", "operator", "other"))
    print("fleet churn: %.0f s, %d namespaces, %d hand edits; writes: %s; Argo CD wrote %s"
          % (CHURN_SECONDS, len(teams), round_, counts, sorted(by_argo)[:10]))
    assert by_operator, "the operator wrote nothing during the churn"
    assert not by_argo & by_operator, "both writers wrote %s" % sorted(by_argo & by_operator)
    # Argo CD wrote only the object edited by hand (to put it back), nothing of the operator's
    assert by_argo <= {("/configmaps", namespace, name)}, sorted(by_argo)
    assert labelled(kube, "kfocp.io/instance=" + instance).keys() == after.keys()
    argo.wait_synced(app, 60, revision=revision)


def sync(argo, app, revision, timeout=300):
    """A sync operation of the Application, set as `argocd app sync` has argocd-server set it
    (argo-cd v3.6.1 server/application/application.go Sync, util/argo/argo.go SetAppOperation):
    once no other operation is pending, the Application read, its `operation` set (with its sync
    options), its last operation's state cleared, and written back at the resourceVersion read,
    again on a conflict. Waited for until the controller has started this operation (the state
    names its initiator, unique to this call: a start time has whole seconds, and another
    operation may start in the same one), then until it has finished and the Application is
    Synced and Healthy."""
    initiator = "kfocp-test-" + uuid.uuid4().hex[:8]

    def requested():
        current = argo.application(app)
        if current.get("operation"):
            return False  # argocd-server refuses: another operation is already in progress
        options = (current["spec"].get("syncPolicy") or {}).get("syncOptions") or []
        current["operation"] = {"initiatedBy": {"username": initiator},
                                "sync": {"revision": revision, "syncOptions": options}}
        current.setdefault("status", {}).pop("operationState", None)
        try:
            argo.plane.request("PUT", argo.application_url(app), current)
        except ClusterError as err:
            if ": 409 " in str(err):
                return False
            raise
        return True

    def started():
        state = (argo.application(app).get("status") or {}).get("operationState") or {}
        return ((state.get("operation") or {}).get("initiatedBy") or {}).get("username") == initiator

    wait_for(requested, timeout, what="no other operation of %s, to request a sync" % app)
    wait_for(started, timeout, what="the sync operation of %s to start" % app)
    return argo.wait_synced(app, timeout, revision=revision)


def measure_ready(kube):
    cr = kube.get(kube.resource("kfocp.io/v1alpha1", "Kubeflow"), OPERATOR_INSTANCE, "kfocp-system") or {}
    status = cr.get("status") or {}
    return any(c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions") or []) \
        and status.get("observedGeneration") == 1
