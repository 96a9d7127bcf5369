"""OpenShift's own code as the judge of kfocp's objects: small programs of hack/openshift, built from
the openshift/api, cluster-autoscaler-operator and machine-api-operator modules (hack/cluster.py
build_judges), each reading JSON on stdin and answering JSON.

- openshift_sar: oauth-proxy's --openshift-sar value, read as openshift-apiserver reads it, as the
  Kubernetes SubjectAccessReview it asks (and the keys it drops);
- cluster_autoscaler_operator: CAO's ClusterAutoscaler and MachineAutoscaler validation, and the
  cluster-autoscaler arguments its controller renders;
- machine_api_operator: MAO's MachineSet defaulting and validation webhooks, for one platform;

and Istio's own code (hack/istio, cluster.build_istio_judge):

- istio_authz: the Envoy RBAC HTTP filters istiod gives a sidecar for the AuthorizationPolicies
  the cluster holds (tests/envoy_rbac.py decides a request with them).
"""
import json
import subprocess

from cluster import build_istio_judge, build_judges

_BINS = {}


def _run(name, stdin, *args):
    if name == "istio-authz" and name not in _BINS:
        _BINS[name] = build_istio_judge()
    elif name not in _BINS:
        _BINS.update(build_judges())
    proc = subprocess.run([str(_BINS[name]), *args], input=json.dumps(stdin) if not isinstance(stdin, str) else stdin,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, "%s failed: %s" % (name, proc.stderr[-2000:])
    return json.loads(proc.stdout)


def openshift_sar(flag_value, user="", groups=()):
    """(the authorization.k8s.io/v1 SubjectAccessReview OpenShift asks for `user` in `groups`, the
    keys of the flag it drops)."""
    args = ["--user", user] + [arg for group in groups for arg in ("--group", group)]
    out = _run("openshift-sar", flag_value, *args)
    review = out["review"]
    review.pop("status", None)
    review.pop("metadata", None)
    return review, out["dropped"]


def cluster_autoscaler_operator(cluster_autoscaler=None, machine_autoscalers=()):
    """{clusterAutoscaler: {errors, warnings, args}, machineAutoscalers: [{name, errors, warnings}]}."""
    return _run("cao-judge", {"clusterAutoscaler": cluster_autoscaler, "machineAutoscalers": list(machine_autoscalers)})


def machine_api_operator(platform, machinesets, region, infrastructure_name="ci-x1"):
    """[{name, defaulted, errors, warnings}] per MachineSet, on `platform` (AWS, Azure, GCP)."""
    return _run("mao-judge", {"platform": platform, "region": region, "infrastructureName": infrastructure_name,
                              "machineSets": list(machinesets)})


def istio_authz(policies, namespace, labels=None, root_namespace="istio-system", trust_domain="cluster.local"):
    """{filters: [the HTTP RBAC filters, in the chain's order], custom: [CUSTOM's], invalid: {ns/name:
    why Istio's validation refuses it}} for a sidecar of a pod with `labels` in `namespace`."""
    return _run("istio-authz", {"namespace": namespace, "labels": dict(labels or {}), "rootNamespace": root_namespace,
                                "trustDomain": trust_domain, "policies": list(policies)})


def istio_authz_workloads(policies, workloads, root_namespace="istio-system", trust_domain="cluster.local"):
    """istio_authz for each (namespace, labels) of `workloads`, in one run: ([{filters, custom}], invalid)."""
    out = _run("istio-authz", {"workloads": [{"namespace": ns, "labels": dict(labels or {})}
                                             for ns, labels in workloads],
                               "rootNamespace": root_namespace, "trustDomain": trust_domain,
                               "policies": list(policies)})
    return out["workloads"], out["invalid"]
