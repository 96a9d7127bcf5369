"""The Knative operator itself (knative.dev/operator cmd/operator, built from its Go module at the
version OpenShift Serverless vendors for each channel kfocp subscribes to, pinned by
hack/knative/go.mod and hack/knative/serverless-1.38/go.mod, run by hack/knative_operator.py) as the
judge of the KnativeServing the serverless role writes: from what the operator makes of it, on a
control plane of each case's own with the module's own KnativeServing CRD,

- Knative Serving's and Kourier's Deployments exist with their ServiceAccounts (the account each pod
  template runs as, the API server's ServiceAccount admission deciding `default` for one that names
  none);
- every principal kfocp's Knative AuthorizationPolicies name (namespace_policies, with the
  role's default principals, serverless.data_path_principals) is the account of a pod template
  of a Deployment kfocp gives a sidecar (serverless.MESH_DEPLOYMENTS), and each of those
  Deployments' accounts is admitted: without a sidecar a workload has no principal, and an
  account no such Deployment runs as admits nobody;
- the stand-in of what the Serverless operator runs (standins.knative_serving_workloads, which
  other tests use) names the Deployments and accounts the operator makes;
- the workload overrides kfocp writes (the sidecar label and probe annotation, and a user's
  `deployments` entry kfocp moves to `workloads`) land on the operator's Deployments' pod templates,
  and its `high-availability.replicas` on their replicas (or their HPAs' minimum).

The judge's limit: upstream's operator runs Kourier in the KnativeServing's namespace
(knative/operator pkg/reconciler/common/transformers.go InjectNamespace: every manifest's
namespace becomes the KnativeServing's, kourier.yaml's kourier-system too), OpenShift Serverless moves it to <serving
namespace>-ingress (openshift-knative/serverless-operator@c9356eaa6eeaa2eb134b8c633d916104e50f2571
openshift-knative-operator/pkg/serving/kourier.go, `return servingNs + "-ingress"`; the same at
02f6bc2c). So for Kourier's workloads the judge decides the account, and the namespace of kfocp's
principal (knative-serving-ingress) is taken from Serverless's source, not from the operator.
"""
import time

import pytest
import yaml

import knative_operator
import standins
from ansible_collections.kfocp.kubeflow.plugins.module_utils import versions
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh, namespace_policies, serverless
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client
from cluster import ControlPlane
from helpers import ROOT, ensure_namespace, only_roles, play_olm_csv_succeeded, run_playbook, wait_for

# An OpenShift minor of each Serverless channel kfocp subscribes to by default (versions.DEFAULT_CHANNELS),
# with the CSV of that channel's release.
CASES = [("4.14", "stable-1.37", "serverless-operator.v1.37.2"), ("4.20", "stable-1.38", "serverless-operator.v1.38.0")]
SERVING = serverless.SERVING_NAMESPACE
INGRESS = SERVING + serverless.INGRESS_SUFFIX
KNATIVE_SERVING = ("operator.knative.dev/v1beta1", "KnativeServing")
# Knative Serving's workloads (kodata/knative-serving/1.17.1/2-serving-core.yaml, 1.21.1/ in v0.48.1)
# and Kourier's (kodata/ingress/1.17/kourier/kourier.yaml, 1.21/), as the operator makes them.
DEPLOYMENTS = ("activator", "autoscaler", "controller", "webhook", "3scale-kourier-gateway", "net-kourier-controller")
KOURIER = ("3scale-kourier-gateway", "net-kourier-controller")
# A user's override under the deprecated `deployments`, which kfocp moves to `workloads`.
USER_OVERRIDE = {"name": "controller", "labels": {"kfocp.test/override": "deployments"}}


def accounts(kube, deployments):
    """{deployment name: the service account its pods run as}: the pod template as the API server's
    admission makes it a Pod (a dry run), which gives one that names no account `default`."""
    pods, out = kube.resource("v1", "Pod"), {}
    for dep in deployments:
        meta, template = dep["metadata"], dep["spec"]["template"]
        pod = {"apiVersion": "v1", "kind": "Pod", "spec": template["spec"],
               "metadata": {"name": meta["name"] + "-judge", "namespace": meta["namespace"],
                            "labels": (template.get("metadata") or {}).get("labels") or {}}}
        made = kube.request("POST", kube.path(pods, meta["namespace"]), query={"dryRun": "All"}, body=pod)
        out[meta["name"]] = made["spec"]["serviceAccountName"]
    return out


def upstream_namespace(namespace):
    """The namespace upstream's operator runs a workload kfocp places in `namespace` in: Serverless's
    <serving>-ingress is upstream's serving namespace (the module docstring's limit)."""
    return SERVING if namespace == INGRESS else namespace


def principal_problems(principals, made, ran_as):
    """What is wrong with kfocp's Knative principals against the operator's Deployments: `made`
    {name: Deployment}, `ran_as` {name: account}."""
    problems = []
    mesh_accounts = {}
    for name in serverless.MESH_DEPLOYMENTS:
        if name not in made:
            problems.append("the operator made no Deployment %s (kfocp gives it a sidecar)" % name)
            continue
        mesh_accounts.setdefault((made[name]["metadata"]["namespace"], ran_as[name]), []).append(name)
    for principal in principals:
        trust, _ns, namespace, _sa, account = principal.split("/")
        found = mesh_accounts.get((upstream_namespace(namespace), account))
        if trust != "cluster.local" or not found:
            problems.append("%s is the account of no pod template of the Deployments kfocp gives a sidecar (%s)"
                            % (principal, ", ".join("%s runs as %s" % (n, ran_as[n]) for n in serverless.MESH_DEPLOYMENTS
                                                    if n in ran_as)))
    admitted = {(upstream_namespace(p.split("/")[2]), p.split("/")[4]) for p in principals}
    for (namespace, account), names in sorted(mesh_accounts.items()):
        if (namespace, account) not in admitted:
            problems.append("%s run as %s, which kfocp's policies do not admit" % (", ".join(names), account))
    return problems


def override_problems(overrides, made):
    """What of the workload overrides `overrides` ([{name, labels, annotations}]) is not on the pod
    template of the operator's Deployment of that name."""
    problems = []
    for entry in overrides:
        dep = made.get(entry["name"])
        if dep is None:
            problems.append("override %s names no Deployment the operator made" % entry["name"])
            continue
        template = dep["spec"]["template"]["metadata"]
        for key in ("labels", "annotations"):
            for name, value in (entry.get(key) or {}).items():
                if (template.get(key) or {}).get(name) != value:
                    problems.append("%s's pod template has %s %s=%r, not kfocp's %r"
                                    % (entry["name"], key[:-1], name, (template.get(key) or {}).get(name), value))
    return problems


def ha_problems(replicas, made, hpas):
    """What of kfocp's `high-availability.replicas` the operator's workloads do not run with: a
    Deployment an HPA scales must have it as the HPA's minimum at least, any other as its replicas
    (knative/operator pkg/reconciler/common/ha.go HighAvailabilityTransform, hpa.go hpaTransform)."""
    scaled = {h["spec"]["scaleTargetRef"]["name"]: h for h in hpas if h["spec"]["scaleTargetRef"]["kind"] == "Deployment"}
    problems = []
    for name, dep in sorted(made.items()):
        if name in scaled:
            if scaled[name]["spec"].get("minReplicas", 1) < replicas:
                problems.append("%s's HPA has minReplicas %s, under kfocp's %d" % (name, scaled[name]["spec"].get("minReplicas"), replicas))
        elif dep["spec"].get("replicas") != replicas:
            problems.append("%s has %s replicas, not kfocp's %d" % (name, dep["spec"].get("replicas"), replicas))
    return problems


def knative_policy_principals(profile_name):
    """The principals of the Knative AuthorizationPolicies namespace_policies writes in a profile
    namespace, with the role's defaults (their principals are serverless.data_path_principals())."""
    profile = {"metadata": {"name": profile_name, "labels": {"app.kubernetes.io/part-of": "kubeflow-profile"},
                            "annotations": {"owner": "alice"}}, "status": {"phase": "Active"}}
    defaults = yaml.safe_load((ROOT / "roles/namespace_policies/defaults/main.yml").read_text())
    policies = [o for o in namespace_policies.objects_for_namespace(profile, dict(defaults, namespace_policies_serverless=True))
                if o["kind"] == "AuthorizationPolicy" and o["metadata"]["name"].startswith("kfocp-knative-")]
    assert policies
    return sorted({p for o in policies for rule in o["spec"]["rules"] for f in rule["from"]
                   for p in f["source"]["principals"]})


def operator_deployments(kube):
    deployments = kube.resource("apps/v1", "Deployment")
    return {d["metadata"]["name"]: d for d in kube.list(deployments, namespace=SERVING)
            if any(o["kind"] == "KnativeServing" for o in d["metadata"].get("ownerReferences") or [])}


@pytest.fixture
def plane(tmp_path_factory):
    """A control plane of the case's own: the operator makes cluster-wide objects (Knative's CRDs and
    ClusterRoles) and the KnativeServing has a fixed name. Yields (plane, client)."""
    made = ControlPlane(tmp_path_factory.mktemp("knative-plane")).up()
    try:
        yield made, Client.from_params({"kubeconfig": str(made.kubeconfig)})
    finally:
        made.destroy()


@pytest.mark.parametrize("openshift, channel, csv", CASES)
def test_the_knative_operator_runs_kfocps_serving_as_the_accounts_its_policies_admit_with_its_overrides(
        plane, tmp_path, instance, openshift, channel, csv):
    control_plane, kube = plane
    assert versions.DEFAULT_CHANNELS[openshift][versions.SERVERLESS] == channel
    knative_operator.prepare(control_plane, channel)
    ensure_namespace(kube, "openshift-serverless")
    play_olm_csv_succeeded(kube, "openshift-serverless", "serverless-operator", csv)
    spec = {"high-availability": {"replicas": 2}, "deployments": [USER_OVERRIDE]}
    extra = dict(only_roles("serverless"), kfocp_instance=instance, kfocp_serverless_enabled=True, scc_grants=[],
                 kfocp_openshift_version=openshift, serverless_csv_timeout=5, serverless_csv_poll_interval=1,
                 serverless_knative_serving_spec=spec)
    result = run_playbook(control_plane, "site", extra, tmp_path)
    assert result.rc == 0, result.stdout[-3000:]
    sub = kube.get(kube.resource("operators.coreos.com/v1alpha1", "Subscription"), "serverless-operator",
                   "openshift-serverless")
    assert sub["spec"]["channel"] == channel  # the channel whose operator judges
    ks = kube.get(kube.resource(*KNATIVE_SERVING), "knative-serving", SERVING)
    overrides = ks["spec"].get("workloads") or []
    # what kfocp wrote, through the module's CRD (nothing pruned): the mesh workloads' sidecars and
    # the user's entry, under `workloads`
    assert {e["name"] for e in overrides} == set(serverless.MESH_DEPLOYMENTS) | {"controller"}, overrides
    assert "deployments" not in ks["spec"]

    operator = knative_operator.Operator(control_plane, channel)
    with operator:
        try:
            def all_made():
                found = operator_deployments(kube)
                return found if set(DEPLOYMENTS) <= set(found) else None
            made = wait_for(all_made, timeout=120, interval=1, what="the operator's Deployments %s" % (DEPLOYMENTS,))
        except AssertionError as err:
            raise AssertionError("%s\nknative operator log:\n%s" % (err, operator.tail())) from None
        wait_for(lambda: kube.get(kube.resource("v1", "ServiceAccount"), "default", SERVING), timeout=30,
                 what="the service account controller's default account in " + SERVING)
        ran_as = accounts(kube, made.values())
        sas = {sa["metadata"]["name"] for sa in kube.list(kube.resource("v1", "ServiceAccount"), namespace=SERVING)}
        assert set(ran_as.values()) <= sas, (ran_as, sorted(sas))
        assert all(made[n]["metadata"]["namespace"] == SERVING for n in KOURIER)  # the judge's limit

        # the stand-in's Deployments and accounts are the operator's (Kourier's namespace aside)
        for obj in standins.knative_serving_workloads(SERVING):
            if obj["kind"] == "Deployment":
                name = obj["metadata"]["name"]
                assert made[name]["metadata"]["namespace"] == upstream_namespace(obj["metadata"]["namespace"])
                assert ran_as[name] == obj["spec"]["template"]["spec"].get("serviceAccountName", "default"), name

        principals = knative_policy_principals(instance + "-p")
        assert principal_problems(principals, made, ran_as) == []
        # the principals the role's defaults are (role_defaults: serverless.data_path_principals)
        assert principal_problems(serverless.data_path_principals(), made, ran_as) == []
        assert principals == sorted(serverless.data_path_principals())
        assert override_problems(overrides, made) == []
        # the accounts the operator decides, which kfocp's principals and the stand-ins name
        # (Kourier's gateway names none: `default`)
        assert {n: ran_as.get(n) for n in serverless.MESH_DEPLOYMENTS} == {
            "activator": serverless.ACTIVATOR_ACCOUNT, "autoscaler": serverless.AUTOSCALER_ACCOUNT,
            "3scale-kourier-gateway": serverless.KOURIER_GATEWAY_ACCOUNT}, ran_as
        assert all(made[n]["spec"]["template"]["metadata"]["labels"][serverless.INJECT] == "true"
                   for n in serverless.MESH_DEPLOYMENTS)
        hpa_res = kube.resource("autoscaling/v2", "HorizontalPodAutoscaler")

        def hpas_made():
            found = kube.list(hpa_res, namespace=SERVING)
            return found if {h["spec"]["scaleTargetRef"]["name"] for h in found} >= {"activator", "webhook"} else None
        hpas = wait_for(hpas_made, timeout=30, what="the operator's HPAs of the activator and the webhook")
        # the operator reaches each Deployment's replicas in its own reconcile: read again until they
        # settle (or 60 s), then judge what it holds
        deadline = time.monotonic() + 60
        while ha_problems(ks["spec"]["high-availability"]["replicas"], made, hpas) and time.monotonic() < deadline:
            time.sleep(1)
            made, hpas = operator_deployments(kube), kube.list(hpa_res, namespace=SERVING)
        assert ha_problems(ks["spec"]["high-availability"]["replicas"], made, hpas) == []

        # negative controls: the autoscaler admitted by its Deployment's name (it runs as
        # `controller`), three replicas the operator was not given, and the gateway's sidecar
        # override under a name the operator has no Deployment of (it ignores it:
        # workload_override.go matches override.Name)
        planted = [p for p in principals if not p.endswith("/sa/controller")] + [
            mesh.principal(SERVING, "autoscaler")]
        assert principal_problems(planted, made, ran_as) == [
            "cluster.local/ns/knative-serving/sa/autoscaler is the account of no pod template of the Deployments "
            "kfocp gives a sidecar (activator runs as activator, autoscaler runs as controller, "
            "3scale-kourier-gateway runs as default)",
            "autoscaler run as controller, which kfocp's policies do not admit"]
        planted_ha = ha_problems(3, made, hpas)
        assert "controller has 2 replicas, not kfocp's 3" in planted_ha, planted_ha
        assert "activator's HPA has minReplicas 2, under kfocp's 3" in planted_ha, planted_ha
        wrong = [dict(e, name="kourier-gateway") if e["name"] == "3scale-kourier-gateway" else e for e in overrides]
        wrong.append({"name": "activator", "labels": {"kfocp.test/round": "2"}})
        kube.request("PATCH", kube.path(kube.resource(*KNATIVE_SERVING), SERVING, "knative-serving"),
                     body={"spec": {"workloads": wrong}}, content_type="application/merge-patch+json")

        def reconciled():
            found = operator_deployments(kube)
            return found if found["activator"]["spec"]["template"]["metadata"]["labels"].get("kfocp.test/round") == "2" else None
        made = wait_for(reconciled, timeout=60, interval=1, what="the operator's reconcile of the planted overrides")
        assert override_problems(wrong, made) == ["override kourier-gateway names no Deployment the operator made"]
