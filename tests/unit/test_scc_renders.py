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
The namespace has the ranges OpenShift's namespace controller gives it (annotations)."""
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
RANGES = {"openshift.io/sa.scc.uid-range": "%d/%d" % (START, SIZE),
          "openshift.io/sa.scc.supplemental-groups": "%d/%d" % (START, SIZE)}
pytestmark = pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/upstream (upstream's renders) is absent")


def shipped():
    docs = [d for d in yaml.safe_load_all((ROOT / "hack" / "seed" / "sccs.yaml").read_text()) if d]
    return [d for doc in docs for d in (doc.get("items") or [doc])]


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


def disagreements(objs, sccs):
    grants = dict(((g["namespace"], g["serviceaccount"]), g["scc"])
                  for g in manifests.derive_scc(objs, {"start": START, "size": SIZE}))
    found = []
    for (namespace, account), account_pods in sorted(pods(objs).items()):
        granted = grants.get((namespace, account))
        usable = {scc_policies.DEFAULT} | ({granted} if granted else set())
        for pod in account_pods:
            chosen = admitted(sccs, pod, usable)
            if chosen not in usable:
                found.append("%s/%s %s: kfocp grants %s, admission refuses it" % (
                    namespace, account, pod["metadata"]["name"], granted or "nothing"))
        if granted:
            below = scc_policies.ORDER[scc_policies.ORDER.index(granted) - 1]
            for less in sorted({scc_policies.DEFAULT, below}):
                usable = {scc_policies.DEFAULT, less}
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
        monkeypatch.setattr(manifests, "derive_scc", lambda _objs, _range, planted=planted: planted)
        found = disagreements(objs, shipped())
        assert any(expected in line for line in found), found
