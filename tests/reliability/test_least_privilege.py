"""Least privilege: the operator, with a token bound only to its ClusterRole
(operator/config/rbac/role.yaml), passes the full lifecycle on an RBAC-enabled API server, and
every rule of that ClusterRole is needed.

The lifecycle: a Kubeflow CR with every role of site.yml on (OLM, the mesh operator, the
installer's worker MachineSet and Kubeflow's profile controller played by the test), Ready; a User
logs in and gets a Profile, whose namespace gets its policies (the fast path); the CR is deleted,
the uninstall runs, the CR is gone and nothing labelled with the instance is left.

Every rule is shown to be needed twice over:
- the API server's audit log of the one full lifecycle: each rule authorised at least one request
  of the operator's account that no other rule covers (a server-side apply that creates an object
  needs `create` as well as `patch`);
- the sweep: with the rule removed, the same lifecycle fails (the operator does not start, the
  reconcile is Degraded, its Events are missing, the fast path does not apply, the uninstall fails,
  or something is left).
  KFOCP_RBAC_SWEEP=all removes each rule in turn (make soak); a number N removes N rules spread
  evenly over the role, always the same ones (make test: 1).

Each test prints its figures (-s shows them)."""
import copy
import json
import os
import sys
import threading
import time
import uuid

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client, KubeError
from cluster import ControlPlane
from helpers import (ROOT, PlayOperators, ensure_namespace, in_background, labelled_objects, operator_account,
                     play_installer_worker_machineset, play_profile_controller, play_pvc_protection, profile_controller,
                     run_playbook,
                     wait_for)

sys.path[:0] = [str(ROOT / "operator"), str(ROOT / "operator" / "hack")]

import launch  # noqa: E402

NS = launch.NAMESPACE
ROLE = yaml.safe_load((launch.RBAC / "role.yaml").read_text())
SWEEP = os.environ.get("KFOCP_RBAC_SWEEP", "1")
# Only the operator's own requests are recorded.
AUDIT_POLICY = {"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "omitStages": ["RequestReceived"],
                "rules": [{"level": "Metadata", "users": [launch.USER]}, {"level": "None"}]}
FIXTURE = ROOT / "tests" / "fixtures" / "manifests"
LOCAL_COMPONENTS = yaml.safe_load((ROOT / "inventories" / "local" / "group_vars" / "all" / "components.yml")
                                  .read_text())["components_components"]
# Upstream objects that need a prerequisite of Kubeflow (cert-manager, Istio's CRDs, a storage
# provisioner): in the fixture, in paths of their own that only this test builds (see its README).
EXTRA_PATHS = {"pipelines": ["applications/pipeline/upstream/env/cert-manager/base-webhook-certs",
                             "applications/pipeline/upstream/base/installs/multi-user"],
               "katib": ["applications/katib/upstream/components/mysql"]}
PREREQUISITES = ["common/cert-manager/cert-manager/base", "common/istio/istio-crds/base"]
# Rules that no request on the local control plane can show, and why.
EXEMPT = {("route.openshift.io", "routes/custom-host"):
          "checked by OpenShift's route API when a Route sets spec.host; the local control plane serves Routes "
          "from a CRD",
          ("operators.coreos.com", "installplans"):
          "read, and approved, only for a Subscription with installPlanApproval Manual that the inventory "
          "approves (approve_install_plan); the lifecycle's Subscriptions are Automatic, and "
          "tests/integration/test_olm_manual.py covers the approval"}
# The variables of the CR that decide a profile namespace's policies.
POLICY_SETTINGS = {"namespace_policies_tolerations_mode": "gatekeeper", "namespace_policies_serverless": True,
                   "namespace_policies_scc": "nonroot-v2", "service_mesh_flavour": "ossm3",
                   "service_mesh_keep_ossm2": True, "service_mesh_namespace": "kubeflow-mesh3",
                   # on OpenShift 4.20 the Service Mesh 2 channel is the user's to name
                   "service_mesh_ossm2": {"namespace": "kubeflow-mesh", "subscription": {"channel": "stable"}}}


def catalog():
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import releases
    paths = releases.catalog("v1.10.2")  # the fixture tree's release
    return dict((name, list(paths[name]) + EXTRA_PATHS.get(name, [])) for name in paths)


def spec(name):
    """Every role of site.yml on, each with what it needs on the local control plane. The mesh is
    Service Mesh 3 with Service Mesh 2 kept beside it (a move under way), so that profile
    namespaces join both and both meshes' APIs are used."""
    return {"authHost": "kubeflow.apps.local.example", "serviceMeshFlavour": POLICY_SETTINGS["service_mesh_flavour"],
            "serviceMeshKeepOssm2": POLICY_SETTINGS["service_mesh_keep_ossm2"],
            "serviceMeshNamespace": POLICY_SETTINGS["service_mesh_namespace"],
            "serviceMeshOssm2": POLICY_SETTINGS["service_mesh_ossm2"],
            "serviceMeshCsvTimeout": 120, "serviceMeshReadyTimeout": 120, "serviceMeshWaitDelay": 1,
            "serverlessCsvTimeout": 120, "serverlessCsvPollInterval": 1,
            "gpuCsvTimeout": 120, "gpuCsvPollInterval": 1,
            "gpuMachinesets": [{"name": "%s-gpu" % name, "accelerator": "nvidia-a10g",
                                "instanceType": {"aws": "g5.2xlarge"}}],
            "autoscalerWatermark": {"enabled": True, "namespace": "%s-pns" % name, "percentage": 20},
            "componentsSource": "dir", "componentsDir": str(ROOT / "tests" / "fixtures" / "manifests"),
            "componentsComponents": LOCAL_COMPONENTS, "componentsCatalog": catalog(),
            "profilesAutoFromUsers": True,
            "namespacePoliciesTolerationsMode": POLICY_SETTINGS["namespace_policies_tolerations_mode"],
            "namespacePoliciesServerless": POLICY_SETTINGS["namespace_policies_serverless"],
            "namespacePoliciesScc": POLICY_SETTINGS["namespace_policies_scc"]}


# ---------------------------------------------------------------- rules and requests (pure)

def describe_rule(rule):
    return "%s %s: %s" % (",".join(g or '""' for g in rule.get("apiGroups") or []),
                          ",".join(rule.get("resources") or []), ",".join(rule.get("verbs") or []))


def covers(rule, group, resource, verb):
    return group in (rule.get("apiGroups") or []) and resource in (rule.get("resources") or []) and \
        verb in (rule.get("verbs") or [])


def scan(event):
    """True for a LIST of kfocp's own objects by their labels: the prune and uninstall scans list
    every kind, so such a request says nothing about whether the kind is needed."""
    return event["verb"] == "list" and ("kfocp.io%2Finstance" in event.get("requestURI", "")
                                        or "patched.kfocp.io" in event.get("requestURI", ""))


def needs(event):
    """The (group, resource, verb) permissions one audited request needed: its own, and `create`
    for a server-side apply that created the object. Scans of kfocp's own labels need nothing."""
    ref = event.get("objectRef") or {}
    if not ref.get("resource") or scan(event):
        return []
    resource = ref["resource"] + ("/" + ref["subresource"] if ref.get("subresource") else "")
    out = [(ref.get("apiGroup") or "", resource, event["verb"])]
    if event["verb"] == "patch" and (event.get("responseStatus") or {}).get("code") == 201:
        out.append((ref.get("apiGroup") or "", resource, "create"))
    return out


def audited(path, user=launch.USER, role="kfocp-operator"):
    """The requests of `user` in the audit log, one per request: (allowed by the ClusterRole
    `role`, denied)."""
    seen, allowed, denied = set(), [], []
    with open(path) as handle:
        for line in handle:
            event = json.loads(line)
            if event["auditID"] in seen or (event.get("user") or {}).get("username") != user:
                continue
            seen.add(event["auditID"])
            notes = event.get("annotations") or {}
            if notes.get("authorization.k8s.io/decision") == "forbid":
                denied.append(event)
            elif 'ClusterRole "%s"' % role in notes.get("authorization.k8s.io/reason", ""):
                allowed.append(event)
    return allowed, denied


def coverage(rules, events):
    """Per rule: how many needed permissions of `events` it alone grants, and examples."""
    unique = [[] for _rule in rules]
    for event in events:
        for need in needs(event):
            matching = [i for i, rule in enumerate(rules) if covers(rule, *need)]
            if len(matching) == 1:
                unique[matching[0]].append(need)
    return unique


def exempt(rule):
    """Why a rule is kept without a request to show for it, or None."""
    reasons = [EXEMPT.get((group, resource)) for group in rule.get("apiGroups") or []
               for resource in rule.get("resources") or []]
    return reasons[0] if reasons and all(reasons) else None


def sweep_indices(count, setting):
    """Which rules the sweep removes: every one for "all", else N spread evenly (the same N each run)."""
    if setting.strip().lower() == "all":
        return list(range(count))
    wanted = max(0, min(count, int(setting)))
    return sorted(set(int((k + 0.5) * count / wanted) for k in range(wanted)))


def test_sweep_indices_are_spread_and_deterministic():
    assert sweep_indices(30, "all") == list(range(30))
    assert sweep_indices(30, "1") == [15]
    assert sweep_indices(30, "3") == [5, 15, 25]
    assert sweep_indices(4, "9") == [0, 1, 2, 3]
    assert sweep_indices(30, "0") == []


def test_needs_adds_create_for_an_apply_that_created():
    event = {"verb": "patch", "objectRef": {"apiGroup": "apps", "resource": "deployments"},
             "responseStatus": {"code": 201}}
    assert needs(event) == [("apps", "deployments", "patch"), ("apps", "deployments", "create")]
    event["responseStatus"]["code"] = 200
    assert needs(event) == [("apps", "deployments", "patch")]
    status = {"verb": "patch", "objectRef": {"apiGroup": "kfocp.io", "resource": "kubeflows", "subresource": "status"}}
    assert needs(status) == [("kfocp.io", "kubeflows/status", "patch")]
    assert needs({"verb": "get", "requestURI": "/apis"}) == []
    listing = {"verb": "list", "objectRef": {"apiGroup": "batch", "resource": "jobs"},
               "requestURI": "/apis/batch/v1/jobs?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dkfocp%2C"
                             "kfocp.io%2Finstance%3Dkf-1"}
    assert needs(listing) == []


# ---------------------------------------------------------------- the lifecycle

@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A control plane of its own with the audit log on, what the installer made, and the
    operator's API, account and kubeconfig."""
    workdir = tmp_path_factory.mktemp("least-privilege")
    plane = ControlPlane(workdir / "plane").up(audit_policy=AUDIT_POLICY)
    try:
        kube = Client.from_params({"kubeconfig": str(plane.kubeconfig)})
        play_installer_worker_machineset(kube)
        ensure_namespace(kube, "openshift-operators")
        for path in PREREQUISITES:
            plane.kubectl("apply", "--server-side", "--field-manager=cluster-admin", "-k", str(FIXTURE / path))
        plane.wait_established()
        kubeconfig = operator_account(plane, kube, workdir)
        yield {"plane": plane, "kube": kube, "kubeconfig": kubeconfig, "workdir": workdir}
    finally:
        plane.destroy()


class Failed(Exception):
    """The lifecycle failed at a stage; the message says where and why."""


def _condition(cr, kind):
    for cond in ((cr or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == kind:
            return cond
    return {}


def _metric(operator, name, labels):
    code, body = operator.get("/metrics")
    for line in body.splitlines() if code == 200 else []:
        if line.startswith(name + "{") and all('%s="%s"' % kv in line for kv in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def _wait(predicate, timeout, stage, interval=0.5):
    return wait_for(predicate, timeout, interval, what=stage, error=Failed)


def _policies_applied(kube, namespace, instance):
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies
    from kfocp_operator.fastpath import tenancy_settings
    live = kube.get(kube.resource("v1", "Namespace"), namespace)
    if live is None:
        return False
    settings = tenancy_settings(POLICY_SETTINGS, instance)["namespace_policies"]
    for want in namespace_policies.objects_for_namespace(live, settings):
        meta = want["metadata"]
        found = kube.get(kube.resource(want["apiVersion"], want["kind"]), meta["name"], meta.get("namespace"))
        if found is None or not (o.owned_by(found, instance) or o.patched_by(found, instance)):
            return False
    return True


def lifecycle(world, role_rules, label):
    """Run the whole lifecycle with a ClusterRole of `role_rules`; return figures, or raise Failed.
    Cleans up as the cluster admin whatever happened, so that the next run starts afresh."""
    plane, kube = world["plane"], world["kube"]
    name = "kf-" + uuid.uuid4().hex[:6]
    user = "%s-user" % name
    role_file = world["workdir"] / ("role-%s.yaml" % label)
    role_file.write_text(yaml.safe_dump(dict(copy.deepcopy(ROLE), rules=role_rules), sort_keys=False))
    launch.install_api(plane, manager="kfocp-test", role_file=role_file)
    operator = launch.Operator(world["kubeconfig"], world["workdir"] / ("operator-%s.log" % label),
                               ["--default-reconcile-period", "0"])
    kubeflows = kube.resource("kfocp.io/v1alpha1", "Kubeflow")
    figures = {"instance": name}
    started = time.monotonic()
    stop = threading.Event()
    in_background(play_pvc_protection, kube, stop)
    try:
        # the profile controller runs too, as on a cluster: the uninstall waits for it to release the Profiles
        with PlayOperators(kube), profile_controller(plane, kube=kube):
            try:
                operator.start(timeout=60, detach=True)
            except RuntimeError as err:
                raise Failed("start: %s" % str(err).splitlines()[0])
            cr = {"apiVersion": "kfocp.io/v1alpha1", "kind": "Kubeflow", "metadata": {"name": name, "namespace": NS},
                  "spec": spec(name)}
            plane.kubectl("create", "-f", "-", input=json.dumps(cr))

            def reconciled():
                live = kube.get(kubeflows, name, NS)
                if _condition(live, "Ready").get("status") == "True" and \
                        (live.get("status") or {}).get("observedGeneration") == 1:
                    return live
                degraded = _condition(live, "Degraded")
                if degraded.get("status") == "True":
                    raise Failed("reconcile: %s: %s" % (degraded.get("reason"), degraded.get("message", "")[:300]))
                runs = sum(_metric(operator, "kfocp_operator_reconcile_total", {"kind": "kubeflow", "result": r})
                           for r in ("success", "failed"))
                if runs and time.monotonic() - reconciled.first > 30:
                    raise Failed("status: a run ended but the status does not say so: %s" % (live or {}).get("status"))
                if not runs:
                    reconciled.first = time.monotonic()
                return None

            reconciled.first = time.monotonic()
            _wait(reconciled, 900, "reconcile", interval=1)
            figures["reconcile_s"] = round(time.monotonic() - started, 1)

            def events():  # what `kubectl describe` shows of the reconcile
                reasons = set(e.get("reason") for e in kube.list(kube.resource("v1", "Event"), namespace=NS)
                              if e["involvedObject"].get("name") == name)
                return {"Reconciling", "Reconciled"} <= reasons

            _wait(events, 20, "events: the Reconciling and Reconciled Events on the CR")

            from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.profiles import profile_name
            kube.request("POST", kube.path(kube.resource("user.openshift.io/v1", "User")),
                         body={"apiVersion": "user.openshift.io/v1", "kind": "User", "metadata": {"name": user},
                               "identities": ["htpasswd:%s" % user]})
            profile = profile_name(user)
            _wait(lambda: kube.get(kube.resource("kubeflow.org/v1", "Profile"), profile), 60, "fast path: Profile")
            play_profile_controller(plane, [profile])
            _wait(lambda: _policies_applied(kube, profile, name), 60, "fast path: namespace policies")

            deleting = time.monotonic()
            plane.kubectl("delete", "kubeflow", name, "-n", NS, "--wait=false")

            def uninstalled():
                live = kube.get(kubeflows, name, NS)
                if live is None:
                    return True
                if _condition(live, "Ready").get("reason") == "UninstallFailed":
                    raise Failed("uninstall: %s" % _condition(live, "Degraded").get("message", "")[:300])
                return False

            _wait(uninstalled, 600, "uninstall: finalizer", interval=1)
            figures["uninstall_s"] = round(time.monotonic() - deleting, 1)
            left = labelled_objects(kube, name)
            if left:
                raise Failed("uninstall: %d object(s) left: %s" % (len(left), sorted(left)[:5]))
        figures["total_s"] = round(time.monotonic() - started, 1)
        return figures
    finally:
        operator.stop()
        _clean(world, name, user)
        stop.set()


def _clean(world, name, user):
    """As the cluster admin: the CR without its finalizer, uninstall.yml for the instance, the User."""
    plane, kube = world["plane"], world["kube"]
    plane.kubectl("patch", "kubeflow", name, "-n", NS, "--type=merge", "-p", '{"metadata":{"finalizers":null}}',
                  check=False)
    plane.kubectl("delete", "kubeflow", name, "-n", NS, "--ignore-not-found", "--wait=false")
    plane.kubectl("delete", "user", user, "--ignore-not-found", "--wait=false")
    result = run_playbook(plane, "uninstall", {"kfocp_instance": name, "kfocp_uninstall_timeout": 300},
                          world["workdir"])
    assert result.rc == 0, "the admin's uninstall of %s failed: %s" % (name, result.stdout[-3000:])
    try:
        wait_for(lambda: not [n for n in kube.list(kube.resource("v1", "Namespace"))
                              if n["status"].get("phase") == "Terminating"], 300, interval=1,
                 what="every namespace deleted by the clean-up gone")
    except KubeError:
        pass


def test_the_operator_passes_the_lifecycle_with_its_role_and_every_rule_is_used(world):
    log = world["plane"].audit_log
    log.write_text("")  # only this lifecycle's requests
    figures = lifecycle(world, ROLE["rules"], "full")
    allowed, denied = audited(log)
    unique = coverage(ROLE["rules"], allowed)
    print("least privilege: full lifecycle as %s in %.0fs (reconcile %.0fs, uninstall %.0fs); %d requests "
          "allowed by the role, %d denied"
          % (launch.USER, figures["total_s"], figures["reconcile_s"], figures["uninstall_s"], len(allowed),
             len(denied)))
    for index, (rule, used) in enumerate(zip(ROLE["rules"], unique)):
        print("  rule %2d %-90s needed by %4d request(s) no other rule covers, e.g. %s"
              % (index, describe_rule(rule), len(used), exempt(rule) or sorted(set(used))[:3]))
    granted = set((g, r, v) for rule in ROLE["rules"] for g in rule["apiGroups"] for r in rule["resources"]
                  for v in rule["verbs"])
    used = set(need for event in allowed for need in needs(event))
    print("  granted but not seen in the audit log (bind and escalate are checked inside the API server and "
          "never audited): %s" % sorted(granted - used))
    scans = [event for event in denied if scan(event)]
    print("  denied: %d request(s), %d of them scans of kfocp's labels in kinds the role does not grant; the others: %s"
          % (len(denied), len(scans), [(e["verb"], e.get("requestURI")) for e in denied if not scan(e)][:10]))
    assert len(scans) == len(denied), "requests of the operator that its role refused"
    unused = [describe_rule(rule) for rule, found in zip(ROLE["rules"], unique) if not found and not exempt(rule)]
    assert not unused, "rules that authorised no request of the lifecycle on their own: %s" % unused


SWEPT = [i for i, rule in enumerate(ROLE["rules"]) if not exempt(rule)]


@pytest.mark.parametrize("index", [SWEPT[i] for i in sweep_indices(len(SWEPT), SWEEP)])
def test_the_lifecycle_fails_without_the_rule(world, index):
    rules = [rule for i, rule in enumerate(ROLE["rules"]) if i != index]
    started = time.monotonic()
    with pytest.raises(Failed) as failed:
        lifecycle(world, rules, "without-%d" % index)
    print("least privilege: without rule %d (%s) the lifecycle fails after %.0fs at %s"
          % (index, describe_rule(ROLE["rules"][index]), time.monotonic() - started, str(failed.value)[:300]))
