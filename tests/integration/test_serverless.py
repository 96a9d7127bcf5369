"""The serverless role through site.yml against the real API server: the system namespace label on
a namespace kfocp made and on one someone else made, the mesh objects, KnativeServing."""
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh, namespace_policies, serverless
import standins
from helpers import ROOT, ensure_namespace, only_roles, play_olm_csv_succeeded, wait_for

LABEL = "serving.knative.openshift.io/system-namespace"


def get(kube, api_version, kind, name, namespace=None):
    return kube.get(kube.resource(api_version, kind), name, namespace)


def test_serverless_labels_both_namespaces_converges_and_gives_the_label_back(playbook, kube, instance):
    # knative-serving-ingress already exists and is someone else's; knative-serving does not exist
    ensure_namespace(kube, "knative-serving-ingress", {"owner": "platform-team"})
    ensure_namespace(kube, "openshift-serverless")
    play_olm_csv_succeeded(kube, "openshift-serverless", "serverless-operator")
    extra = dict(only_roles("serverless"), kfocp_instance=instance, kfocp_serverless_enabled=True, scc_grants=[],
                 serverless_csv_timeout=5, serverless_csv_poll_interval=1,
                 serverless_mesh={"enabled": True, "namespace": "kubeflow-mesh", "control_plane": "kubeflow",
                                  "member_namespaces": []})
    try:
        first = playbook("site", extra)
        assert first.rc == 0, first.stdout[-3000:]
        serving = get(kube, "v1", "Namespace", "knative-serving")
        assert serving["metadata"]["labels"][LABEL] == "true"
        assert serving["metadata"]["labels"]["kfocp.io/instance"] == instance
        ingress = get(kube, "v1", "Namespace", "knative-serving-ingress")
        assert ingress["metadata"]["labels"][LABEL] == "true" and ingress["metadata"]["labels"]["owner"] == "platform-team"
        assert "app.kubernetes.io/managed-by" not in ingress["metadata"]["labels"]
        ks = get(kube, "operator.knative.dev/v1beta1", "KnativeServing", "knative-serving", "knative-serving")
        assert ks["spec"]["ingress"]["kourier"]["enabled"] is True
        for ns in ("knative-serving", "knative-serving-ingress"):
            smm = get(kube, "maistra.io/v1", "ServiceMeshMember", "default", ns)
            assert smm["spec"]["controlPlaneRef"] == {"name": "kubeflow", "namespace": "kubeflow-mesh"}
            policy = get(kube, "networking.k8s.io/v1", "NetworkPolicy", "kfocp-knative-allow-mesh", ns)
            assert {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kubeflow-mesh"}}} in \
                policy["spec"]["ingress"][0]["from"]
        sub = get(kube, "operators.coreos.com/v1alpha1", "Subscription", "serverless-operator", "openshift-serverless")
        # the local inventory's OpenShift 4.20: Serverless 1.38 is published for it (project.yaml)
        assert sub["spec"]["channel"] == "stable-1.38"

        second = playbook("site", extra)
        assert second.rc == 0 and second.count("changed") == 0, second.stdout[-3000:]
        check = playbook("site", extra, check=True, diff=True)
        assert check.rc == 0 and check.count("changed") == 0, check.stdout[-3000:]

        absent = playbook("site", dict(extra, serverless_state="absent"))
        assert absent.rc == 0, absent.stdout[-3000:]
        assert get(kube, "operator.knative.dev/v1beta1", "KnativeServing", "knative-serving", "knative-serving") is None
        assert get(kube, "maistra.io/v1", "ServiceMeshMember", "default", "knative-serving-ingress") is None
        ingress = get(kube, "v1", "Namespace", "knative-serving-ingress")
        assert LABEL not in ingress["metadata"]["labels"] and ingress["metadata"]["labels"]["owner"] == "platform-team"
        assert get(kube, "v1", "Namespace", "knative-serving") is not None  # kfocp's namespace: until uninstall
        assert playbook("uninstall", {"kfocp_instance": instance}).rc == 0
        assert get(kube, "v1", "Namespace", "knative-serving") is None
        assert get(kube, "v1", "Namespace", "knative-serving-ingress") is not None
    finally:
        kube.delete(kube.resource("v1", "Namespace"), "knative-serving-ingress")


def test_the_serverless_policies_admit_the_accounts_knatives_data_path_runs_as(kube, instance):
    """The principals the profile namespaces' Knative AuthorizationPolicies admit are those of the
    pods the Serverless operator's activator, autoscaler (it scrapes the pods' queue-proxy) and
    Kourier gateway Deployments make: the API server's ServiceAccount admission gives a pod that
    names no account its namespace's `default`."""
    serving, ingress = instance + "-serving", instance + "-serving-ingress"
    ns_res, pods = kube.resource("v1", "Namespace"), kube.resource("v1", "Pod")
    try:
        for name in (serving, ingress):
            ensure_namespace(kube, name)
            wait_for(lambda n=name: kube.get(kube.resource("v1", "ServiceAccount"), "default", n), timeout=30,
                     what="the service account controller's default account in " + name)
        running = set()
        for obj in standins.knative_serving_workloads(serving):
            if obj["kind"] == "ServiceAccount":
                kube.apply(kube.resource("v1", "ServiceAccount"), obj, "serverless-operator", force=True)
            elif obj["metadata"]["labels"].get("kfocp.test/data-path") or obj["metadata"]["name"] == "autoscaler":
                meta = obj["metadata"]
                pod = {"apiVersion": "v1", "kind": "Pod", "spec": obj["spec"]["template"]["spec"],
                       "metadata": {"name": meta["name"] + "-abcde", "namespace": meta["namespace"],
                                    "labels": obj["spec"]["template"]["metadata"]["labels"]}}
                made = kube.request("POST", kube.path(pods, meta["namespace"]), query={"dryRun": "All"}, body=pod)
                running.add(mesh.principal(meta["namespace"], made["spec"]["serviceAccountName"]))
        assert running == set(serverless.data_path_principals(serving, ingress))
        profile = {"metadata": {"name": instance + "-p", "labels": {"app.kubernetes.io/part-of": "kubeflow-profile"},
                                "annotations": {"owner": "alice"}}, "status": {"phase": "Active"}}
        defaults = yaml.safe_load((ROOT / "roles/namespace_policies/defaults/main.yml").read_text())
        settings = dict(defaults, namespace_policies_serverless=True,
                        namespace_policies_serverless_principals=serverless.data_path_principals(serving, ingress))
        admitted = [set(p for rule in o["spec"]["rules"] for f in rule["from"] for p in f["source"]["principals"])
                    for o in namespace_policies.objects_for_namespace(profile, settings)
                    if o["kind"] == "AuthorizationPolicy" and o["metadata"]["name"].startswith("kfocp-knative-")]
        assert admitted and all(found == running for found in admitted), admitted
    finally:
        for name in (serving, ingress):
            kube.delete(ns_res, name)
