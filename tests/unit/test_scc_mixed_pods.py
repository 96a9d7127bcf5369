"""One service account whose pods need different SCCs: the grant SCC derivation
(manifests.derive_scc) gives it is the least that admission needs, judged by the admission stand-in
(standins.scc_admit) on the SCCs OpenShift ships (hack/seed/sccs.yaml, upstream's files).

Admission (openshift/apiserver-library-go, release-4.14 to release-4.21; the reading is
docs/readings/scc-selinux-and-mixed-pods.md) lists every SCC, sorts them by util/sort/bypriority.go
(priority, highest first, then byrestrictions.go's points, fewest first, then name) and admits a pod
under the first that its user or service account may use and that admits it
(sccadmission/admission.go computeSecurityContext). So a pod is admitted when ANY SCC the account may
use admits it: a grant must admit the pods that restricted-v2 (every authenticated user's) refuses,
and need not admit those restricted-v2 admits. kfocp gives an account one grant: the first SCC, in
the points order, with which (and restricted-v2) admission admits every pod of the account; where
that is privileged and less privileged SCCs admit each pod, those SCCs (scc_policies.grants).
Registered in docs/contracts.md."""
from pathlib import Path

import pytest
import yaml

import standins
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import manifests, scc_policies

ROOT = Path(__file__).resolve().parents[2]
RANGE = {"start": 1000660000, "size": 10000}
NAMESPACE = {"metadata": {"name": "kubeflow", "annotations": {
    "openshift.io/sa.scc.uid-range": "1000660000/10000", "openshift.io/sa.scc.supplemental-groups": "1000660000/10000",
    "openshift.io/sa.scc.mcs": "s0:c26,c5"}}}
SECCOMP = {"seccompProfile": {"type": "RuntimeDefault"}}


def shipped():
    docs = [d for d in yaml.safe_load_all((ROOT / "hack" / "seed" / "sccs.yaml").read_text()) if d]
    return [d for doc in docs for d in (doc.get("items") or [doc])]


def workload(name, account, ctx=None, pod_ctx=None, **spec):
    container = {"name": "main", "image": "x"}
    if ctx:
        container["securityContext"] = ctx
    spec = dict(spec, serviceAccountName=account, containers=[container], securityContext=dict(pod_ctx or {}))
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "kubeflow"},
            "spec": {"template": {"metadata": {}, "spec": spec}}}


def as_pod(obj):
    return {"metadata": {"name": obj["metadata"]["name"], "namespace": "kubeflow", "annotations": {}},
            "spec": obj["spec"]["template"]["spec"]}


def chosen(obj, usable):
    """The SCC admission admits the workload's pod under, None where it refuses it."""
    try:
        return standins.scc_admit(shipped(), as_pod(obj), lambda name: name in usable, NAMESPACE)
    except AssertionError:
        return None


# (case, the account's workloads, the SCC admission needs granted, {workload: the SCC admission then
# chooses}). restricted-v2 admits the first workload of each case; the second needs more.
CASES = [
    # anyuid (priority 10: first) refuses any seccomp profile, so the first pod stays under
    # restricted-v2; kfocp granted privileged, the first SCC that admitted both pods itself
    ("seccomp-and-root", [workload("a", "s", pod_ctx=SECCOMP), workload("b", "s", pod_ctx={"runAsUser": 0})],
     "anyuid", {"a": "restricted-v2", "b": "anyuid"}),
    # anyuid allows no added capability, restricted-v2 NET_BIND_SERVICE
    ("bind-and-root", [workload("a", "s", ctx={"capabilities": {"add": ["NET_BIND_SERVICE"]}}),
                       workload("b", "s", pod_ctx={"runAsUser": 0})], "anyuid", {"a": "restricted-v2", "b": "anyuid"}),
    # hostmount-anyuid refuses the seccomp profile too; hostnetwork-v2 the host path
    ("seccomp-and-hostpath", [workload("a", "s", pod_ctx=SECCOMP),
                              workload("b", "s", volumes=[{"name": "h", "hostPath": {"path": "/x"}}])],
     "hostmount-anyuid", {"a": "restricted-v2", "b": "hostmount-anyuid"}),
    # restricted-v2 admits the first; nonroot-v2 is enough for the second
    ("seccomp-and-uid", [workload("a", "s", pod_ctx=SECCOMP), workload("b", "s", ctx=dict(SECCOMP, runAsUser=1000))],
     "nonroot-v2", {"a": "restricted-v2", "b": "nonroot-v2"}),
]


@pytest.mark.parametrize("objs, granted, expected", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_the_grant_is_the_least_with_which_admission_admits_every_pod_of_the_account(objs, granted, expected):
    grants = manifests.derive_scc(objs, RANGE)
    assert [(g["serviceaccount"], g["scc"]) for g in grants] == [("s", granted)]
    # with restricted-v2 and the grant admission admits each pod, under the SCC expected
    assert dict((o["metadata"]["name"], chosen(o, ("restricted-v2", granted))) for o in objs) == expected
    # with any SCC before the grant in admission's order of restrictiveness, it refuses a pod
    for less in scc_policies.ORDER[:scc_policies.ORDER.index(granted)]:
        assert any(chosen(o, ("restricted-v2", less)) is None for o in objs), less


@pytest.mark.parametrize("objs, granted", [case[1:3] for case in CASES], ids=[case[0] for case in CASES])
def test_the_reason_names_only_the_pods_the_grant_is_for(objs, granted):
    """The first workload needs nothing: the reason is what the SCC before the grant refuses of the
    second."""
    reason = manifests.derive_scc(objs, RANGE)[0]["reason"]
    before = scc_policies.ORDER[scc_policies.ORDER.index(granted) - 1]
    assert reason.startswith(before + " refuses: Deployment b:") and "Deployment a:" not in reason, reason


def test_an_account_whose_pods_need_two_different_sccs_gets_both_not_privileged():
    """A pod that needs nonroot-v2 (a fixed UID with a seccomp profile, which anyuid refuses) and one
    that needs anyuid (root): of the single SCCs only privileged admits both, but admission admits
    each pod under any SCC the account may use, so the two grants admit each under its own."""
    objs = [workload("a", "s", pod_ctx=dict(SECCOMP, runAsUser=1000)), workload("b", "s", pod_ctx={"runAsUser": 0})]
    grants = manifests.derive_scc(objs, RANGE)
    assert [(g["serviceaccount"], g["scc"]) for g in grants] == [("s", "nonroot-v2"), ("s", "anyuid")]
    assert grants[0]["reason"].startswith("restricted-v2 refuses: Deployment a:"), grants[0]["reason"]
    assert grants[1]["reason"].startswith("nonroot-v2 refuses: Deployment b:"), grants[1]["reason"]
    assert [chosen(o, ("restricted-v2", "nonroot-v2", "anyuid")) for o in objs] == ["nonroot-v2", "anyuid"]
    # no single SCC less than privileged admits both, and neither grant alone does
    for less in scc_policies.ORDER[:scc_policies.ORDER.index("privileged")]:
        assert any(chosen(o, ("restricted-v2", less)) is None for o in objs), less
    # the RoleBindings: one per grant
    names = [b["metadata"]["name"] for b in manifests.scc_objects(grants)]
    assert len(set(names)) == 2, names


def test_a_grant_another_grant_makes_needless_is_dropped():
    """A third pod that needs hostmount-anyuid (root and a host path): hostmount-anyuid admits the
    root pod too, so anyuid is not granted beside it."""
    objs = [workload("a", "s", pod_ctx=dict(SECCOMP, runAsUser=1000)), workload("b", "s", pod_ctx={"runAsUser": 0}),
            workload("c", "s", pod_ctx={"runAsUser": 0}, volumes=[{"name": "h", "hostPath": {"path": "/x"}}])]
    grants = manifests.derive_scc(objs, RANGE)
    assert [g["scc"] for g in grants] == ["nonroot-v2", "hostmount-anyuid"]
    # what forced it is c's host path: anyuid, before it, admits b
    assert grants[1]["reason"].startswith("anyuid refuses: Deployment c:") and "Deployment b" not in grants[1]["reason"]
    usable = ("restricted-v2", "nonroot-v2", "hostmount-anyuid")
    assert [chosen(o, usable) for o in objs] == ["nonroot-v2", "hostmount-anyuid", "hostmount-anyuid"]


def test_a_pod_only_privileged_admits_gets_the_account_privileged_alone():
    objs = [workload("a", "s", pod_ctx=dict(SECCOMP, runAsUser=1000)),
            workload("b", "s", ctx={"privileged": True})]
    assert [g["scc"] for g in manifests.derive_scc(objs, RANGE)] == ["privileged"]
    assert [chosen(o, ("restricted-v2", "privileged")) for o in objs] == ["privileged", "privileged"]
