"""Day 2 playbooks: status.yml reports drift and changes nothing; upgrade.yml updates in place;
verify.yml refuses an API server that is not OpenShift."""
import json

from helpers import only_roles

RB = ("rbac.authorization.k8s.io/v1", "RoleBinding")
NOISE = ("events", "events.events.k8s.io", "leases.coordination.k8s.io", "endpoints", "endpointslices.discovery.k8s.io")


def api_dump(control_plane):
    """(kind, namespace, name) -> resourceVersion of every object of every listable kind."""
    kinds = control_plane.kubectl("api-resources", "--verbs=list", "-o", "name").stdout.split()
    kinds = [k for k in kinds if k not in NOISE]
    items = json.loads(control_plane.kubectl("get", ",".join(kinds), "-A", "-o", "json").stdout)["items"]
    return dict(((i["kind"], i["metadata"].get("namespace", ""), i["metadata"]["name"]),
                 i["metadata"].get("resourceVersion")) for i in items)


def grants(namespace, *entries):
    return [{"namespace": namespace, "serviceaccount": sa, "scc": "anyuid", "reason": reason} for sa, reason in entries]


def bindings(kube, namespace):
    return {b["metadata"]["name"]: b for b in kube.list(kube.resource(*RB), namespace=namespace)}


def test_status_reports_drift_and_changes_nothing(playbook, kube, control_plane, instance, tmp_path):
    ns = instance
    report_file = tmp_path / "status.json"
    extra = dict(only_roles("scc"), kfocp_instance=instance, kfocp_status_json=str(report_file),
                 scc_grants=grants(ns, ("a", "first"), ("b", "second")))
    assert playbook("site", extra).rc == 0

    before = api_dump(control_plane)
    clean = playbook("status", extra, check=True, diff=True)
    assert clean.rc == 0, clean.stdout
    report = json.loads(report_file.read_text())
    assert report["in_sync"] is True and report["summary"]["in-sync"] == 3, report
    assert {(r["kind"], r["name"], r["state"]) for r in report["objects"]} == {
        ("Namespace", ns, "in-sync"), ("RoleBinding", "kfocp-scc-anyuid-a", "in-sync"),
        ("RoleBinding", "kfocp-scc-anyuid-b", "in-sync")}
    assert "IN SYNC" in clean.stdout
    assert api_dump(control_plane) == before

    # drift by hand: a field kfocp set is removed, and an object is deleted
    control_plane.kubectl("-n", ns, "annotate", "rolebinding", "kfocp-scc-anyuid-a", "kfocp.io/scc-reason-")
    control_plane.kubectl("-n", ns, "delete", "rolebinding", "kfocp-scc-anyuid-b")
    drifted = api_dump(control_plane)
    result = playbook("status", dict(extra, kfocp_status_fail_on_drift=True), check=True, diff=True)
    assert result.rc != 0 and "the cluster drifted from the desired state" in result.stdout, result.stdout
    report = json.loads(report_file.read_text())
    rows = dict((r["name"], r) for r in report["objects"])
    assert rows["kfocp-scc-anyuid-a"]["state"] == "drifted" and rows["kfocp-scc-anyuid-a"]["present"] is True
    assert any(f.startswith("metadata.annotations") for f in rows["kfocp-scc-anyuid-a"]["fields"])
    assert rows["kfocp-scc-anyuid-b"]["state"] == "missing" and rows["kfocp-scc-anyuid-b"]["present"] is False
    assert report["in_sync"] is False
    assert api_dump(control_plane) == drifted

    # outside check mode it refuses to run at all
    refused = playbook("status", extra)
    assert refused.rc != 0 and "must run in check mode" in refused.stdout
    assert api_dump(control_plane) == drifted
    assert playbook("uninstall", {"kfocp_instance": instance}).rc == 0


def test_upgrade_updates_in_place_and_leaves_nothing_orphaned(playbook, kube, instance):
    ns = instance
    previous = dict(only_roles("scc"), kfocp_instance=instance, kfocp_status_json="",
                    scc_grants=grants(ns, ("a", "release 1"), ("old", "dropped in release 2")))
    assert playbook("site", previous).rc == 0
    uid = bindings(kube, ns)["kfocp-scc-anyuid-a"]["metadata"]["uid"]

    # a pre-check that fails stops the upgrade before any change
    new = dict(previous, scc_grants=grants(ns, ("a", "release 2"), ("new", "added in release 2")))
    blocked = playbook("upgrade", dict(new, kfocp_release_apis=[{"apiVersion": "example.com/v9", "kind": "Nope"}]))
    assert blocked.rc != 0 and "does not serve Nope in example.com/v9" in blocked.stdout
    assert set(bindings(kube, ns)) == {"kfocp-scc-anyuid-a", "kfocp-scc-anyuid-old"}

    upgraded = playbook("upgrade", new)
    assert upgraded.rc == 0, upgraded.stdout
    assert "Rollback" in upgraded.stdout
    found = bindings(kube, ns)
    assert set(found) == {"kfocp-scc-anyuid-a", "kfocp-scc-anyuid-new"}
    assert found["kfocp-scc-anyuid-a"]["metadata"]["uid"] == uid
    assert found["kfocp-scc-anyuid-a"]["metadata"]["annotations"]["kfocp.io/scc-reason"] == "release 2"
    # nothing of this instance outside the new desired state
    owned = [b["metadata"]["name"] for b in kube.list(kube.resource(*RB), label_selector="kfocp.io/instance=" + instance)]
    assert sorted(owned) == ["kfocp-scc-anyuid-a", "kfocp-scc-anyuid-new"]
    assert playbook("uninstall", {"kfocp_instance": instance}).rc == 0


def test_verify_stops_at_once_on_an_api_server_that_is_not_openshift(playbook):
    """verify.yml checks what only OpenShift shows; here it must refuse clearly, before reading
    anything else."""
    result = playbook("verify")
    assert result.rc != 0
    assert "this API server is not OpenShift" in result.stdout and "ClusterVersion" in result.stdout
    assert "Read the Kubeflow pods" not in result.stdout
