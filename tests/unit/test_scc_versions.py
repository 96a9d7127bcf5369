"""The default SCCs of each supported OpenShift version, as kfocp models them (scc_policies.model),
are those the version ships.

The oracle is upstream's files: hack/seed/sccs-<version>.yaml holds every SCC manifest (and every
ClusterRoleBinding that makes an SCC system:authenticated's) of
openshift/cluster-kube-apiserver-operator bindata/bootkube/scc-manifests/ on the version's release
branch, verbatim, one document each, headed by its file name and git blob. The reading
docs/readings/scc-defaults-by-version.md records the branch, commit and blob of each file; the
blobs are recomputed here from the documents, so a copy that is not upstream's file fails. Points
are apiserver-library-go's pointValue (standins.scc_points, release-4.14 to release-4.21).
Registered in docs/contracts.md (gap:106)."""
import hashlib
import re
from pathlib import Path

import pytest
import yaml

import standins
from ansible_collections.kfocp.kubeflow.plugins.module_utils import versions
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import scc_policies
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError

ROOT = Path(__file__).resolve().parents[2]
READING = ROOT / "docs" / "readings" / "scc-defaults-by-version.md"
_DOCUMENT = re.compile(r"^--- # (\S+) blob ([0-9a-f]{40})\n", re.M)
_PREFIX = "0000_20_kube-apiserver-operator_00_"
# The SCCs OpenShift keeps for old workloads, which the -v2 ones replace (each admits less or the
# same and drops no capability): kfocp grants the -v2 ones.
LEGACY = {"restricted", "nonroot", "hostnetwork", "hostaccess"}


def seed_text(version):
    return (ROOT / "hack" / "seed" / ("sccs-%s.yaml" % version)).read_text()


def seed(version):
    """{kind: {name: object}} of the version's seed file."""
    out = {}
    for doc in yaml.safe_load_all(seed_text(version)):
        if doc:
            out.setdefault(doc["kind"], {})[doc["metadata"]["name"]] = doc
    return out


def reading():
    """{version: (branch, commit, {file: blob})} as docs/readings/scc-defaults-by-version.md records them."""
    out, current = {}, None
    for line in READING.read_text().splitlines():
        head = re.match(r"^- OpenShift (4\.\d+): (release-4\.\d+) @ ([0-9a-f]{40})$", line)
        item = re.match(r"^  - `([^`]+)` ([0-9a-f]{40})$", line)
        if head:
            current = out[head.group(1)] = (head.group(2), head.group(3), {})
        elif item and current:
            current[2][item.group(1)] = item.group(2)
    return out


def _normal(fields):
    return dict((key, sorted(value, key=str) if isinstance(value, list) else value) for key, value in fields.items())


def test_the_reading_covers_every_supported_version():
    assert sorted(reading(), key=lambda v: tuple(map(int, v.split(".")))) == list(versions.SUPPORTED)


@pytest.mark.parametrize("version", versions.SUPPORTED)
def test_each_seed_document_is_upstreams_file_as_the_reading_records_it(version):
    branch, commit, files = reading()[version]
    text = seed_text(version)
    assert "%s @ %s" % (branch, commit) in text.split("\n---", 1)[0]
    parts = _DOCUMENT.split(text)
    found = {}
    for index in range(1, len(parts), 3):
        name, blob, body = parts[index], parts[index + 1], parts[index + 2].encode()
        assert hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest() == blob, name
        found[name[len(_PREFIX):]] = blob
    assert found == files


@pytest.mark.parametrize("version", versions.SUPPORTED)
def test_the_model_of_each_version_is_its_seed_files_strategies(version):
    model, shipped = scc_policies.model(version), seed(version)
    sccs = shipped["SecurityContextConstraints"]
    # every SCC the version ships is modelled, but the legacy ones
    assert set(model.sccs) == set(sccs) - LEGACY
    assert set(model.order) == set(model.sccs)
    for name, fields in model.sccs.items():
        assert _normal(scc_policies.strategies(sccs[name])) == _normal(fields), name
    # the defaults: the SCCs system:authenticated may use, in the order's order
    everyone = set(crb["roleRef"]["name"].rsplit(":", 1)[1] for crb in shipped["ClusterRoleBinding"].values()
                   if {"kind": "Group", "name": "system:authenticated", "apiGroup": "rbac.authorization.k8s.io"}
                   in crb["subjects"])
    assert set(model.defaults) == everyone
    assert list(model.defaults) == [name for name in model.order if name in everyone]
    assert model.order[0] == scc_policies.DEFAULT


@pytest.mark.parametrize("version", versions.SUPPORTED)
def test_the_order_of_each_version_is_scc_admissions_order_of_restrictiveness(version):
    sccs = seed(version)["SecurityContextConstraints"]
    order = scc_policies.model(version).order
    assert list(order) == sorted(order, key=lambda name: (standins.scc_points(sccs[name]), name)), \
        [(name, standins.scc_points(sccs[name])) for name in order]


def test_the_newer_sccs_come_with_their_versions():
    assert "hostmount-anyuid-v2" not in scc_policies.model("4.16").sccs
    assert "hostmount-anyuid-v2" in scc_policies.model("4.17").sccs
    assert "restricted-v3" not in scc_policies.model("4.19").sccs
    assert scc_policies.model("4.20").defaults == ("restricted-v2", "restricted-v3")
    assert scc_policies.model("4.18.7") is scc_policies.model("4.17")


def test_a_version_not_known_gets_the_sccs_every_supported_version_ships():
    common = scc_policies.model(None)
    assert common.sccs == scc_policies.SCCS and common.order == scc_policies.ORDER
    for version in versions.SUPPORTED:
        assert set(common.order) <= set(scc_policies.model(version).order)


def test_an_unsupported_version_is_refused_naming_the_variable():
    with pytest.raises(DefinitionError, match="kfocp_openshift_version"):
        scc_policies.model("4.13")
