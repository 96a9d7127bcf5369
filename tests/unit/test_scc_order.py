"""The order in which SCC derivation tries the SCCs is OpenShift's own order of restrictiveness.

SCC admission sorts the SCCs a pod may use by priority, then by "points", then by name
(openshift/apiserver-library-go pkg/securitycontextconstraints/util/sort/bypriority.go and
byrestrictions.go at commit a8019f39f6708878cbb42101693940ed4817ab82). The fewer points, the more
restrictive the SCC. `points()` (standins.scc_points) is upstream's pointValue, with its constants, applied to the
SCC definitions OpenShift ships (hack/seed/sccs.yaml, copied from
openshift/cluster-kube-apiserver-operator bindata/bootkube/scc-manifests). Registered in
docs/contracts.md ("OpenShift controllers")."""
from pathlib import Path

import pytest
import yaml

import standins
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import manifests as m
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import scc_policies

ROOT = Path(__file__).resolve().parents[2]

# byrestrictions.go pointValue, the stand-in SCC admission sorts by
points = standins.scc_points


def shipped():
    docs = [d for d in yaml.safe_load_all((ROOT / "hack" / "seed" / "sccs.yaml").read_text()) if d]
    return dict((d["metadata"]["name"], d) for doc in docs for d in (doc.get("items") or [doc]))


def test_the_derivation_order_is_scc_admissions_order_of_restrictiveness():
    sccs = shipped()
    upstream = sorted(scc_policies.ORDER, key=lambda name: (points(sccs[name]), name))
    assert list(scc_policies.ORDER) == upstream, [(name, points(sccs[name])) for name in upstream]


@pytest.mark.parametrize("spec,scc,before", [
    # host network only: the SCC just before hostnetwork-v2 is hostmount-anyuid, which refuses it
    ({"hostNetwork": True, "containers": [{"name": "a"}]}, "hostnetwork-v2", "hostmount-anyuid"),
    # a fixed UID outside the range: restricted-v2 refuses only that
    ({"containers": [{"name": "a", "securityContext": {"runAsUser": 1000}}]}, "nonroot-v2", "restricted-v2"),
])
def test_a_grant_names_the_scc_just_before_it_in_that_order(spec, scc, before):
    obj = {"kind": "Deployment", "metadata": {"name": "w", "namespace": "ns"},
           "spec": {"template": {"spec": dict(spec, serviceAccountName="s")}}}
    grants = m.derive_scc([obj], uid_range={"start": 1000660000, "size": 10000})
    assert [g["scc"] for g in grants] == [scc]
    assert grants[0]["reason"].startswith(before + " refuses:"), grants[0]["reason"]


# SCC admission's seccomp strategy (openshift/apiserver-library-go
# pkg/securitycontextconstraints/seccomp/strategy.go at a8019f39f6708878cbb42101693940ed4817ab82)
# still reads the seccomp annotations: the pod's annotation wins over the pod's field, and a
# container's field wins over the container's annotation, which wins over the pod's profile. An
# SCC without seccompProfiles (anyuid, hostmount-anyuid) refuses any profile ("seccomp may not be
# set"); restricted-v2 allows runtime/default (and docker/default) only.
POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
CONTAINER_ANNOTATION = "container.seccomp.security.alpha.kubernetes.io/"


def _workload(ctx=None, pod_ctx=None, annotations=None):
    container = {"name": "main", "securityContext": dict(ctx or {})}
    spec = {"serviceAccountName": "s", "containers": [container], "securityContext": dict(pod_ctx or {})}
    meta = {"annotations": dict(annotations)} if annotations else {}
    return {"kind": "Deployment", "metadata": {"name": "w", "namespace": "ns"},
            "spec": {"template": {"metadata": meta, "spec": spec}}}


@pytest.mark.parametrize("obj,scc,field", [
    # root with a seccomp annotation: anyuid may not have one set, only privileged admits it (the
    # SCC just before privileged, hostnetwork-v2, refuses the UID)
    (_workload(pod_ctx={"runAsUser": 0}, annotations={POD_ANNOTATION: "runtime/default"}), "privileged",
     "spec.securityContext.runAsUser"),
    # an unconfined pod annotation: only privileged (seccompProfiles "*")
    (_workload(annotations={POD_ANNOTATION: "unconfined"}), "privileged", "metadata.annotations[%s]" % POD_ANNOTATION),
    # the pod's annotation wins over its field
    (_workload(pod_ctx={"seccompProfile": {"type": "RuntimeDefault"}}, annotations={POD_ANNOTATION: "unconfined"}),
     "privileged", "metadata.annotations[%s]" % POD_ANNOTATION),
    # a container's annotation counts when it has no field
    (_workload(annotations={CONTAINER_ANNOTATION + "main": "localhost/custom.json"}), "privileged",
     "metadata.annotations[%s]" % (CONTAINER_ANNOTATION + "main")),
    # a container's field wins over its annotation
    (_workload(ctx={"seccompProfile": {"type": "RuntimeDefault"}},
               annotations={CONTAINER_ANNOTATION + "main": "unconfined"}), None, None),
    # docker/default is runtime/default
    (_workload(annotations={POD_ANNOTATION: "docker/default"}), None, None),
])
def test_scc_admission_reads_the_seccomp_annotations(obj, scc, field):
    grants = m.derive_scc([obj], uid_range={"start": 1000660000, "size": 10000})
    if scc is None:
        assert grants == []
        return
    assert [g["scc"] for g in grants] == [scc] and field in grants[0]["reason"], grants


# SCC admission's sysctl strategy (apiserver-library-go pkg/securitycontextconstraints/sysctl/
# mustmatchpatterns.go, Validate, at a8019f39f6708878cbb42101693940ed4817ab82): a safe sysctl is
# allowed by every SCC; any other only where allowedUnsafeSysctls lists it (privileged: "*").
@pytest.mark.parametrize("sysctl,scc", [
    ("net.ipv4.tcp_keepalive_time", None),
    ("net.ipv4.ip_local_reserved_ports", None),
    ("net.core.somaxconn", "privileged"),
    ("kernel.msgmax", "privileged"),
])
def test_scc_admission_allows_only_safe_sysctls_below_privileged(sysctl, scc):
    obj = _workload(pod_ctx={"sysctls": [{"name": sysctl, "value": "1"}]})
    grants = m.derive_scc([obj], uid_range={"start": 1000660000, "size": 10000})
    assert [g["scc"] for g in grants] == ([scc] if scc else [])
