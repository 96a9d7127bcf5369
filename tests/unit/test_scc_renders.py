"""SCC derivation (manifests.derive_scc) and the SCC admission stand-in (standins.scc_admit) give
the same answer on every pod of upstream's real renders (../shared/upstream, kubeflow/manifests
v1.10.2, v1.11.0 and 26.03 as `kubectl kustomize example` renders them).

Admission is held to openshift/apiserver-library-go (release-4.14 to release-4.21, see
tests/unit/test_scc_admission.py): a pod is admitted under the first SCC, by priority, points and
name, that its service account may use and whose strategies admit it. On OpenShift every
authenticated user and service account may use restricted-v2; kfocp's grants add one SCC to an
account. So for every pod of every account:
- with restricted-v2 and the SCC kfocp grants the account (none: restricted-v2 alone), admission
  admits it (the grant is enough);
- an account with a grant has a pod that admission refuses with restricted-v2 alone, and with
  restricted-v2 and the SCC just below the granted one (the grant is the least that works).
The namespace has the ranges and the SELinux level OpenShift's namespace controller gives it
(annotations), and derivation is given the same (components_scc_uid_range,
components_scc_selinux_level).

On a given OpenShift version (derive_scc's `openshift`) the SCCs are that version's own
(hack/seed/sccs-<version>.yaml, upstream's files verbatim), and the SCCs every authenticated user
may use are that version's (restricted-v2; on 4.20 also restricted-v3)."""
import gzip
from pathlib import Path

import pytest
import yaml

import standins
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import manifests, scc_policies

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM = ROOT.parent / "shared" / "upstream"
RELEASES = ("v1.10.2", "v1.11.0", "26.03")
START, SIZE = 1000660000, 10000
LEVEL = "s0:c26,c5"
RANGES = {"openshift.io/sa.scc.uid-range": "%d/%d" % (START, SIZE),
          "openshift.io/sa.scc.supplemental-groups": "%d/%d" % (START, SIZE), "openshift.io/sa.scc.mcs": LEVEL}
pytestmark = pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/upstream (upstream's renders) is absent")


def shipped():
    docs = [d for d in yaml.safe_load_all((ROOT / "hack" / "seed" / "sccs.yaml").read_text()) if d]
    return [d for doc in docs for d in (doc.get("items") or [doc])]


def shipped_by(version):
    return [d for d in yaml.safe_load_all((ROOT / "hack" / "seed" / ("sccs-%s.yaml" % version)).read_text())
            if d and d["kind"] == "SecurityContextConstraints"]


def authenticated(version):
    """The SCCs the version's ClusterRoleBindings give system:authenticated (its seed file)."""
    docs = yaml.safe_load_all((ROOT / "hack" / "seed" / ("sccs-%s.yaml" % version)).read_text())
    return set(d["roleRef"]["name"].rsplit(":", 1)[1] for d in docs if d and d["kind"] == "ClusterRoleBinding"
               and any(s["name"] == "system:authenticated" for s in d["subjects"]))


def render(release):
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    with gzip.open(str(UPSTREAM / ("example-render-%s.yaml.gz" % release)), "rt") as stream:
        return [o for o in yaml.load_all(stream, Loader=loader) if o]


def pods(objs):
    """{(namespace, account): [pod]} of every workload's pod template, as a Pod object."""
    out = {}
    for obj in objs:
        spec = manifests.pod_spec(obj)
        if spec is None:
            continue
        namespace = obj["metadata"].get("namespace") or "default"
        account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        meta = {"name": "%s-%s" % (obj["kind"].lower(), obj["metadata"]["name"]), "namespace": namespace,
                "annotations": dict(manifests.pod_meta(obj).get("annotations") or {})}
        out.setdefault((namespace, account), []).append({"metadata": meta, "spec": spec})
    return out


def admitted(sccs, pod, usable):
    try:
        return standins.scc_admit(sccs, pod, lambda name: name in usable,
                                  {"metadata": {"name": pod["metadata"]["namespace"], "annotations": RANGES}})
    except AssertionError:
        return None


def disagreements(objs, sccs, version=None):
    """What derivation and admission disagree on; `version`: the OpenShift version both take (its
    seed's SCCs in `sccs`), None: derivation's for a version not known, admission's on `sccs`."""
    rng = {"start": START, "size": SIZE}
    derived = manifests.derive_scc(objs, rng, version, LEVEL)
    grants = dict(((g["namespace"], g["serviceaccount"]), g["scc"]) for g in derived)
    everyone = authenticated(version) if version else {scc_policies.DEFAULT}
    order = [scc["metadata"]["name"] for scc in standins.scc_admission_order(sccs)]
    order = sorted((n for n in order if n in scc_policies.model(version).sccs),
                   key=lambda n: (standins.scc_points(next(s for s in sccs if s["metadata"]["name"] == n)), n))
    found = []
    for (namespace, account), account_pods in sorted(pods(objs).items()):
        granted = grants.get((namespace, account))
        usable = everyone | ({granted} if granted else set())
        for pod in account_pods:
            chosen = admitted(sccs, pod, usable)
            if chosen not in usable:
                found.append("%s/%s %s: kfocp grants %s, admission refuses it" % (
                    namespace, account, pod["metadata"]["name"], granted or "nothing"))
        if granted:
            below = order[order.index(granted) - 1]
            for less in sorted({scc_policies.DEFAULT, below}):
                usable = everyone | {less}
                if all(admitted(sccs, pod, usable) for pod in account_pods):
                    found.append("%s/%s: kfocp grants %s, but admission admits every pod with %s" % (
                        namespace, account, granted, " and ".join(sorted(usable))))
    return found


@pytest.mark.parametrize("release", RELEASES)
def test_derivation_and_admission_agree_on_every_pod_of_the_real_render(release):
    objs = render(release)
    assert len(pods(objs)) > 30
    assert disagreements(objs, shipped()) == []


def test_a_grant_too_small_or_too_large_is_a_disagreement(monkeypatch):
    """The control: planted in the derivation, an account granted less than it needs, and one
    granted more, each show."""
    objs = render(RELEASES[-1])
    real = manifests.derive_scc(objs, {"start": START, "size": SIZE})
    assert real, "the render has accounts that need more than restricted-v2"
    first = real[0]
    smaller = [dict(g, scc=scc_policies.DEFAULT) if g is first else g for g in real]
    granted = set((g["namespace"], g["serviceaccount"]) for g in real)
    account = next(key for key in sorted(pods(objs)) if key not in granted)
    bigger = real + [{"namespace": account[0], "serviceaccount": account[1], "scc": "privileged"}]
    for planted, expected in ((smaller, "admission refuses it"), (bigger, "admission admits every pod")):
        monkeypatch.setattr(manifests, "derive_scc", lambda _objs, _range, _version=None, _level=None, planted=planted:
                            planted)
        found = disagreements(objs, shipped())
        assert any(expected in line for line in found), found


@pytest.mark.parametrize("release, version", [(release, "4.20") for release in RELEASES] +
                         [(RELEASES[-1], version) for version in ("4.14", "4.17")])
def test_derivation_and_admission_agree_on_every_pod_of_the_real_render_on_each_version(release, version):
    """Each version's own SCCs and defaults, on the real renders; from 4.14 to 4.19 the grants are
    also those for a version not known (the six SCCs every version ships: none of the renders' pods
    needs hostmount-anyuid-v2). 4.14 stands for 4.15 and 4.16, 4.17 for 4.18 and 4.19: their SCC
    files are the same blobs (docs/readings/scc-defaults-by-version.md)."""
    objs = render(release)
    assert disagreements(objs, shipped_by(version), version) == []
    if version != "4.20":
        assert manifests.derive_scc(objs, {"start": START, "size": SIZE}, version) == \
            manifests.derive_scc(objs, {"start": START, "size": SIZE})


def workload(name, ctx=None, pod_ctx=None, **spec):
    container = {"name": "main", "image": "x"}
    if ctx:
        container["securityContext"] = ctx
    spec = dict(spec, serviceAccountName=name, containers=[container], securityContext=dict(pod_ctx or {}))
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "kubeflow"},
            "spec": {"template": {"metadata": {}, "spec": spec}}}


IMAGE = [{"name": "model", "image": {"reference": "quay.io/x/model:1"}}]
HOST = [{"name": "h", "hostPath": {"path": "/var/data"}}]
BUILT = [
    workload("image-volume", volumes=IMAGE),
    workload("user-namespace", ctx={"runAsUser": 1000}, hostUsers=False),
    workload("nested", ctx={"runAsUser": 0, "capabilities": {"add": ["SETUID", "SETGID"]}}, hostUsers=False),
    workload("hostpath-selinux", ctx={"seLinuxOptions": {"type": "spc_t"}}, volumes=HOST),
    workload("host-user-namespace", ctx={"runAsUser": 1000}),
    # the namespace's SELinux level: restricted-v2's own; another level needs an SCC with SELinux RunAsAny
    workload("selinux-level", ctx={"seLinuxOptions": {"level": LEVEL}}),
    workload("selinux-other-level", ctx={"seLinuxOptions": {"level": "s0:c1,c2"}}, volumes=HOST),
    # nested-container's own type with the namespace's level
    workload("nested-selinux", ctx={"runAsUser": 0, "capabilities": {"add": ["SETUID"]},
                                    "seLinuxOptions": {"type": "container_engine_t", "level": LEVEL}}, hostUsers=False),
]
# The SCC admission gives each built pod with the SCCs each version ships (the expected grant:
# None where an SCC every authenticated user may use admits it).
EXPECTED = {
    "4.16": {"image-volume": "privileged", "user-namespace": "nonroot-v2", "nested": "privileged",
             "hostpath-selinux": "privileged", "host-user-namespace": "nonroot-v2", "selinux-level": None,
             "selinux-other-level": "privileged", "nested-selinux": "privileged"},
    "4.17": {"image-volume": "privileged", "user-namespace": "nonroot-v2", "nested": "privileged",
             "hostpath-selinux": "hostmount-anyuid-v2", "host-user-namespace": "nonroot-v2", "selinux-level": None,
             "selinux-other-level": "hostmount-anyuid-v2", "nested-selinux": "privileged"},
    "4.20": {"image-volume": None, "user-namespace": None, "nested": "nested-container",
             "hostpath-selinux": "hostmount-anyuid-v2", "host-user-namespace": "nonroot-v2", "selinux-level": None,
             "selinux-other-level": "hostmount-anyuid-v2", "nested-selinux": "nested-container"},
}


@pytest.mark.parametrize("version", sorted(EXPECTED))
def test_derivation_and_admission_agree_on_pods_built_for_each_version(version):
    """Pods built for what 4.17 (hostmount-anyuid-v2) and 4.20 (image volumes, restricted-v3,
    nested-container) change: the grants are each version's, and admission on that version's SCCs
    admits each pod with them and refuses it with less."""
    assert disagreements(BUILT, shipped_by(version), version) == []
    grants = dict((g["serviceaccount"], g["scc"]) for g in manifests.derive_scc(BUILT, {"start": START, "size": SIZE},
                                                                                version, LEVEL))
    assert dict((obj["metadata"]["name"], grants.get(obj["metadata"]["name"])) for obj in BUILT) == EXPECTED[version]
