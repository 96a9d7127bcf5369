"""The SCC admission stand-in (standins.scc_admit) against OpenShift's rules, on the SCCs OpenShift
ships (hack/seed/sccs.yaml, upstream's files) and pods built for each rule.

The rules are openshift/apiserver-library-go pkg/securitycontextconstraints, the same from
release-4.14 (6bfafa975bfb7dc5b1a2e59aee365c2f1dd9cdb6) to release-4.21
(a8019f39f6708878cbb42101693940ed4817ab82): sccadmission/admission.go (listSortedSCCs: the pinned
SCC alone, else every SCC sorted by util/sort/bypriority.go; computeSecurityContext: the first
usable SCC that admits the pod), sccmatching/matcher.go (getPreallocatedFSGroup: Min = Max = the
first block's start) and user/nonroot.go (runAsNonRoot false is refused). Registered in
docs/contracts.md."""
import re
from pathlib import Path

import pytest
import yaml

import standins

ROOT = Path(__file__).resolve().parents[2]
NAMESPACE = {"metadata": {"name": "kubeflow", "annotations": {"openshift.io/sa.scc.uid-range": "1000660000/10000",
                                                              "openshift.io/sa.scc.supplemental-groups": "1000660000/10000"}}}
EVERY = ("restricted-v2", "nonroot-v2", "nonroot", "anyuid", "hostmount-anyuid", "hostnetwork-v2", "privileged")


def shipped():
    docs = [d for d in yaml.safe_load_all((ROOT / "hack" / "seed" / "sccs.yaml").read_text()) if d]
    return [d for doc in docs for d in (doc.get("items") or [doc])]


def pod(ctx=None, pod_ctx=None, annotations=None, **spec):
    container = {"name": "main", "image": "x"}
    if ctx:
        container["securityContext"] = ctx
    spec = dict(spec, containers=[container], securityContext=dict(pod_ctx or {}))
    meta = {"name": "p", "namespace": "kubeflow", "annotations": dict(annotations or {})}
    return {"metadata": meta, "spec": spec}


def admit(obj, usable=EVERY):
    return standins.scc_admit(shipped(), obj, lambda name: name in usable, NAMESPACE)


def test_the_order_is_by_priority_then_points_then_name():
    names = [scc["metadata"]["name"] for scc in standins.scc_admission_order(shipped())]
    # anyuid has priority 10 (and 154950 points); the rest none (0), by pointValue: restricted-v2
    # 132010, nonroot-v2 142010, nonroot 144800 (no dropped capabilities), hostmount-anyuid 254950,
    # hostnetwork-v2 1332010, privileged 3089000
    assert names == ["anyuid", "restricted-v2", "nonroot-v2", "nonroot", "hostmount-anyuid", "hostnetwork-v2",
                     "privileged"]
    # with equal priority and points, by name
    twins = [dict(shipped()[0], metadata={"name": name}) for name in ("b", "a")]
    assert [scc["metadata"]["name"] for scc in standins.scc_admission_order(twins)] == ["a", "b"]


@pytest.mark.parametrize("obj, usable, chosen", [
    # a plain pod: anyuid first when usable (priority 10), else the most restrictive
    (pod(), EVERY, "anyuid"),
    (pod(), ("restricted-v2", "nonroot-v2", "hostnetwork-v2"), "restricted-v2"),
    # field by field: restricted-v2 refuses host network, so the next usable that admits it
    (pod(hostNetwork=True), ("restricted-v2", "hostnetwork-v2"), "hostnetwork-v2"),
    # anyuid, first by priority, refuses a seccomp profile: the next one that admits the pod
    (pod(pod_ctx={"seccompProfile": {"type": "RuntimeDefault"}}), EVERY, "restricted-v2"),
    # fsGroup under MustRunAs: the first group of the block only
    (pod(pod_ctx={"fsGroup": 1000660000}), ("restricted-v2", "nonroot-v2"), "restricted-v2"),
    (pod(pod_ctx={"fsGroup": 1000660001}), ("restricted-v2", "nonroot-v2"), "nonroot-v2"),
    (pod(hostNetwork=True, pod_ctx={"fsGroup": 1000660001}), ("restricted-v2", "hostnetwork-v2", "privileged"),
     "privileged"),
    # MustRunAsNonRoot refuses runAsNonRoot false even with a non-root UID
    (pod(ctx={"runAsUser": 1000, "runAsNonRoot": True}), ("restricted-v2", "nonroot-v2", "privileged"), "nonroot-v2"),
    (pod(ctx={"runAsUser": 1000, "runAsNonRoot": False}), ("restricted-v2", "nonroot-v2", "privileged"),
     "privileged"),
    # openshift.io/required-scc: that SCC alone, even where a more restrictive one would admit the pod
    (pod(annotations={"openshift.io/required-scc": "hostnetwork-v2"}), EVERY, "hostnetwork-v2"),
])
def test_admission_takes_the_first_usable_scc_that_admits_the_pod(obj, usable, chosen):
    assert admit(obj, usable) == chosen


@pytest.mark.parametrize("obj, usable, message", [
    (pod(ctx={"privileged": True}), ("restricted-v2", "anyuid"),
     "anyuid: spec.containers[0].securityContext.privileged privileged containers are not allowed"),
    (pod(pod_ctx={"fsGroup": 1000660001}), ("restricted-v2",),
     "restricted-v2: spec.securityContext.fsGroup 1000660001 is not 1000660000"),
    (pod(annotations={"openshift.io/required-scc": "restricted-v2"}, hostNetwork=True), EVERY,
     "restricted-v2: spec.hostNetwork host namespace not allowed"),
    (pod(annotations={"openshift.io/required-scc": "privileged"}), ("restricted-v2", "anyuid"),
     "privileged: not usable by user or serviceaccount"),
    (pod(annotations={"openshift.io/required-scc": "missing"}), EVERY, "failed to retrieve the required SCC 'missing'"),
])
def test_a_pod_no_usable_scc_admits_is_refused_with_each_reason(obj, usable, message):
    with pytest.raises(AssertionError, match="SCC admission refuses kubeflow/p: .*" + re.escape(message)):
        admit(obj, usable)


def test_the_namespaces_group_block_falls_back_to_the_uid_range():
    namespace = {"metadata": {"annotations": {"openshift.io/sa.scc.uid-range": "1000700000/10000"}}}
    assert standins.namespace_ranges(namespace) == ({"start": 1000700000, "size": 10000},
                                                    [{"start": 1000700000, "size": 10000}])
    assert standins.scc_admit(shipped(), pod(pod_ctx={"fsGroup": 1000700000}), lambda n: n == "restricted-v2",
                              namespace) == "restricted-v2"


def test_supplemental_groups_may_be_in_any_block_and_fs_group_only_the_first_blocks_start():
    """sccmatching/matcher.go: getPreallocatedSupplementalGroups makes one range of each
    comma-separated block of openshift.io/sa.scc.supplemental-groups (group/mustrunas.go allows a
    group in any of them); getPreallocatedFSGroup allows only the first block's start."""
    namespace = {"metadata": {"annotations": {"openshift.io/sa.scc.uid-range": "1000660000/10000",
                                              "openshift.io/sa.scc.supplemental-groups": "5000/10,7000/10"}}}
    assert standins.namespace_ranges(namespace)[1] == [{"start": 5000, "size": 10}, {"start": 7000, "size": 10}]
    hostnet = ("hostnetwork-v2",)  # the one shipped SCC whose supplementalGroups is MustRunAs
    assert standins.scc_admit(shipped(), pod(pod_ctx={"supplementalGroups": [5009, 7003]}, hostNetwork=True),
                              lambda n: n in hostnet, namespace) == "hostnetwork-v2"
    with pytest.raises(AssertionError, match=r"supplementalGroups 7010 is outside the namespace's group blocks "
                                             r"5000-5009, 7000-7009"):
        standins.scc_admit(shipped(), pod(pod_ctx={"supplementalGroups": [7010]}, hostNetwork=True),
                           lambda n: n in hostnet, namespace)
    assert standins.scc_admit(shipped(), pod(pod_ctx={"fsGroup": 5000}, hostNetwork=True),
                              lambda n: n in hostnet, namespace) == "hostnetwork-v2"
    with pytest.raises(AssertionError, match="fsGroup 7000 is not 5000"):
        standins.scc_admit(shipped(), pod(pod_ctx={"fsGroup": 7000}, hostNetwork=True), lambda n: n in hostnet,
                           namespace)


# Each version's own default SCCs (hack/seed/sccs-<version>.yaml, upstream's files verbatim; see
# tests/unit/test_scc_versions.py and docs/readings/scc-defaults-by-version.md). From release-4.20
# (apiserver-library-go f0d44ef6, sccmatching/provider.go ValidatePodSecurityContext) an SCC with
# userNamespaceLevel RequirePodLevel refuses a pod unless spec.hostUsers is false, and the ranges an
# SCC fixes are used in place of the namespace's (sccmatching/matcher.go requiresPreAllocated*).
def shipped_by(version):
    return [d for d in yaml.safe_load_all((ROOT / "hack" / "seed" / ("sccs-%s.yaml" % version)).read_text())
            if d and d["kind"] == "SecurityContextConstraints"]


def admit_on(version, obj, usable):
    return standins.scc_admit(shipped_by(version), obj, lambda name: name in usable, NAMESPACE)


IMAGE = [{"name": "model", "image": {"reference": "quay.io/x/model:1", "pullPolicy": "IfNotPresent"}}]
HOST = [{"name": "h", "hostPath": {"path": "/var/data"}}]
SELINUX = {"seLinuxOptions": {"type": "spc_t"}}
AUTHENTICATED = {"4.14": ("restricted-v2",), "4.17": ("restricted-v2",), "4.19": ("restricted-v2",),
                 "4.20": ("restricted-v2", "restricted-v3")}


@pytest.mark.parametrize("version, obj, usable, chosen", [
    # 4.20: restricted-v3, every authenticated user's, admits a pod in a user namespace with a UID in
    # its own range 1000-65534, which is outside the namespace's
    ("4.20", pod(ctx={"runAsUser": 1000}, hostUsers=False), AUTHENTICATED["4.20"], "restricted-v3"),
    # the same pod in the namespace's range: restricted-v2 first (equal points, by name)
    ("4.20", pod(ctx={"runAsUser": 1000660001}, hostUsers=False), AUTHENTICATED["4.20"], "restricted-v2"),
    # 4.20: an image volume is allowed by every SCC
    ("4.20", pod(volumes=IMAGE), AUTHENTICATED["4.20"], "restricted-v2"),
    ("4.19", pod(volumes=IMAGE), AUTHENTICATED["4.19"] + ("anyuid", "hostmount-anyuid-v2", "privileged"), "privileged"),
    # 4.20: nested-container admits root in a user namespace with SETUID
    ("4.20", pod(ctx={"runAsUser": 0, "capabilities": {"add": ["SETUID"]}}, hostUsers=False),
     AUTHENTICATED["4.20"] + ("nested-container", "privileged"), "nested-container"),
    # 4.17 on: hostmount-anyuid-v2 admits a host path with SELinux options (hostmount-anyuid does not)
    ("4.17", pod(ctx=SELINUX, volumes=HOST), ("restricted-v2", "hostmount-anyuid", "hostmount-anyuid-v2", "privileged"),
     "hostmount-anyuid-v2"),
    ("4.14", pod(ctx=SELINUX, volumes=HOST), ("restricted-v2", "hostmount-anyuid", "privileged"), "privileged"),
])
def test_each_version_admits_under_its_own_default_sccs(version, obj, usable, chosen):
    assert admit_on(version, obj, usable) == chosen


@pytest.mark.parametrize("version, obj, usable, message", [
    # before 4.20 nothing but restricted-v2 is everyone's, and it refuses the UID
    ("4.19", pod(ctx={"runAsUser": 1000}, hostUsers=False), AUTHENTICATED["4.19"],
     "restricted-v2: spec.containers[0].securityContext.runAsUser 1000 is outside the namespace's range"),
    # restricted-v3 refuses a pod without a user namespace, and a UID outside its own range
    ("4.20", pod(ctx={"runAsUser": 1000}), ("restricted-v3",), "restricted-v3: spec.hostUsers must be false"),
    ("4.20", pod(ctx={"runAsUser": 999}, hostUsers=False), ("restricted-v3",),
     "runAsUser 999 is outside the SCC's range 1000-65534"),
    ("4.20", pod(pod_ctx={"fsGroup": 100}, hostUsers=False), ("restricted-v3",),
     "fsGroup 100 is outside the SCC's ranges 1000-65534"),
    ("4.19", pod(volumes=IMAGE), AUTHENTICATED["4.19"], "restricted-v2: spec.volumes[0].image image volumes are not allowed"),
])
def test_each_version_refuses_with_its_own_default_sccs(version, obj, usable, message):
    with pytest.raises(AssertionError, match="SCC admission refuses kubeflow/p: .*" + re.escape(message)):
        admit_on(version, obj, usable)
