"""The benchmark's workload: N profile namespaces, each with the objects the multi-tenancy roles
put there, as one list that every method applies."""
import json

PER_PROFILE = 12


def _profile(i):
    ns = "bench-%05d" % i
    user = "user%05d@example.com" % i

    def meta(name, **extra):
        return dict({"name": name, "namespace": ns}, **extra)
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {
            "name": ns, "labels": {"app.kubernetes.io/part-of": "kubeflow-profile", "istio-injection": "enabled"},
            "annotations": {"owner": user, "scheduler.alpha.kubernetes.io/defaultTolerations":
                            '[{"key":"workload","operator":"Equal","value":"ai-ml","effect":"NoSchedule"}]'}}},
        {"apiVersion": "maistra.io/v1", "kind": "ServiceMeshMember", "metadata": meta("default"),
         "spec": {"controlPlaneRef": {"name": "kubeflow", "namespace": "kubeflow-mesh"}}},
        {"apiVersion": "v1", "kind": "LimitRange", "metadata": meta("kfocp-limits"),
         "spec": {"limits": [{"type": "Container", "default": {"cpu": "1", "memory": "2Gi"},
                              "defaultRequest": {"cpu": "100m", "memory": "256Mi"}}]}},
        {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta("kf-resource-quota"),
         "spec": {"hard": {"cpu": "16", "memory": "64Gi", "requests.nvidia.com/gpu": "2",
                           "persistentvolumeclaims": "10", "requests.storage": "200Gi"}}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(
            "default-editor", annotations={"eks.amazonaws.com/role-arn": "arn:aws:iam::123456789012:role/kf-%s" % ns})},
        _binding(ns, "kfocp-scc-nonroot-default-editor", "ClusterRole", "system:openshift:scc:nonroot",
                 {"kind": "ServiceAccount", "name": "default-editor", "namespace": ns}),
        _binding(ns, "namespaceAdmin", "ClusterRole", "kubeflow-admin",
                 {"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}),
        _binding(ns, "user-team-lead-clusterrole-edit", "ClusterRole", "kubeflow-edit",
                 {"kind": "User", "name": "lead@example.com", "apiGroup": "rbac.authorization.k8s.io"}),
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta("kfocp-allow-knative"),
         "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [{"namespaceSelector": {
             "matchLabels": {"serving.knative.openshift.io/system-namespace": "true"}}}]}]}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta("kfocp-allow-mesh"),
         "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"from": [{"namespaceSelector": {
             "matchLabels": {"kubernetes.io/metadata.name": "kubeflow-mesh"}}}]}]}},
        {"apiVersion": "security.istio.io/v1beta1", "kind": "AuthorizationPolicy", "metadata": meta("kfocp-knative"),
         "spec": {"selector": {"matchLabels": {"serving.kserve.io/inferenceservice": "*"}}, "action": "ALLOW",
                  "rules": [{"from": [{"source": {"principals": [
                      "cluster.local/ns/knative-serving/sa/activator",
                      "cluster.local/ns/knative-serving-ingress/sa/default"]}}]}]}},
        {"apiVersion": "security.istio.io/v1beta1", "kind": "AuthorizationPolicy",
         "metadata": meta("ns-owner-access-istio"),
         "spec": {"action": "ALLOW",
                  "rules": [{"when": [{"key": "request.headers[kubeflow-userid]", "values": [user]}]}]}},
    ]


def _binding(ns, name, kind, role, subject):
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role}, "subjects": [subject]}


def objects(n):
    out = []
    for i in range(n):
        out.extend(_profile(i))
    return out


def warm(plane):
    """List every served kind once. The API server sets up a custom resource's storage on the first
    request for it (about a second each here, side by side); a cluster in use did that long ago, so
    no method should pay it inside its timing."""
    from concurrent.futures import ThreadPoolExecutor
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client
    client = Client.from_params({"kubeconfig": str(plane.kubeconfig)})
    kinds = [res for res in client.resources().values() if "list" in res.verbs]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda res: client.list(res, label_selector="kfocp.io/warm", metadata_only=True), kinds))


def count_present(plane, objs):
    """How many of `objs` the API server holds (one LIST per kind)."""
    kinds = sorted(set((o["apiVersion"], o["kind"]) for o in objs))
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client
    client = Client.from_params({"kubeconfig": str(plane.kubeconfig)})
    present = set()
    for api_version, kind in kinds:
        res = client.resource(api_version, kind)
        for item in client.list(res, metadata_only=True):
            present.add((api_version, kind, item["metadata"].get("namespace") or "", item["metadata"]["name"]))
    return sum(1 for o in objs if (o["apiVersion"], o["kind"], o["metadata"].get("namespace") or "",
                                   o["metadata"]["name"]) in present)


if __name__ == "__main__":
    print(json.dumps({"objects": objects(2)}, indent=2))
