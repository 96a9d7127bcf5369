"""The Kubeflow releases kfocp supports (plugins/module_utils/releases.py), held to upstream's own
trees: every catalog path of every release opened in that release's tarball (kubeflow/manifests at
the tag, ../shared/upstream), the remote bases each catalog names found by following its
kustomizations there, and the role's choice of release, catalog and upgrade step."""
import functools
import re
import tarfile

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils import kustomize
from ansible_collections.kfocp.kubeflow.plugins.module_utils import releases
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError

from helpers import ROOT

UPSTREAM = ROOT.parent / "shared" / "upstream"
needs_upstream = pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/upstream (upstream's trees) is absent")
DEFAULTS = yaml.safe_load((ROOT / "roles" / "components" / "defaults" / "main.yml").read_text())
SPECS = yaml.safe_load((ROOT / "roles" / "components" / "meta" / "argument_specs.yml").read_text())
CRD = yaml.safe_load((ROOT / "operator" / "config" / "crd" / "bases" / "kfocp.io_kubeflows.yaml").read_text())


def tarball(release):
    return UPSTREAM / ("kubeflow-manifests-%s.tar.gz" % release)


@functools.lru_cache(maxsize=None)
def files(release):
    """The files of upstream's tree at the release, as its tarball holds them (paths from its root)."""
    with tarfile.open(str(tarball(release))) as archive:
        return frozenset(re.sub(r"^\./", "", name) for name in archive.getnames())


@needs_upstream
@pytest.mark.parametrize("release", releases.SUPPORTED)
def test_every_catalog_path_of_the_release_is_a_kustomization_in_its_tree(release):
    have = files(release)
    missing = ["%s: %s" % (name, path) for name, paths in sorted(releases.catalog(release).items()) for path in paths
               if not any("%s/%s" % (path, k) in have for k in kustomize.KUSTOMIZATION_FILES)]
    assert missing == [], "not in %s: %s" % (tarball(release).name, missing)


@needs_upstream
@pytest.mark.parametrize("release", releases.SUPPORTED)
def test_the_remote_bases_of_each_release_are_those_its_catalog_names(release, tmp_path):
    with tarfile.open(str(tarball(release))) as archive:
        archive.extractall(str(tmp_path))
    found = set("https://" + kustomize._remote_key(entry).split("/manifests/")[0]
                for paths in releases.catalog(release).values() for path in paths
                for _file, entry in kustomize.remote_bases(str(tmp_path), path))
    assert found == set(releases.RELEASES[release]["remote_bases"])


@needs_upstream
def test_the_releases_and_commits_are_those_of_the_upstream_readme():
    text = (UPSTREAM / "README.md").read_text()
    for release in releases.SUPPORTED:
        pattern = r"^\| `kubeflow-manifests-%s\.tar\.gz` \| %s \| ([0-9a-f]{40}) \|" % (re.escape(release), re.escape(release))
        row = re.search(pattern, text, re.M)
        assert row and row.group(1) == releases.RELEASES[release]["commit"], release
        assert releases.RELEASES[release]["date"] in text


def test_the_defaults_specs_and_crd_follow_the_table():
    options = SPECS["argument_specs"]["main"]["options"]
    crd = CRD["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    assert DEFAULTS["components_git_ref"] == options["components_git_ref"]["default"] == releases.DEFAULT
    assert crd["componentsGitRef"]["default"] == releases.DEFAULT
    assert DEFAULTS["components_release"] == options["components_release"]["default"] == ""
    assert DEFAULTS["components_catalog"] == DEFAULTS["components_components"] == {}
    for text in (options["components_release"]["description"][0], options["components_git_ref"]["description"][0]):
        assert ", ".join(releases.SUPPORTED[:-1]) + ", " in text.replace(" and ", ", ")
    assert releases.SUPPORTED[-1] in options["components_release"]["description"][0]


def test_the_readme_renders_the_kubeflow_table():
    assert releases.table() in (ROOT / "README.md").read_text()


def test_the_release_comes_from_the_ref_or_the_setting_and_the_catalog_follows_it():
    assert releases.plan({"source": "git", "git_ref": "v1.10.2"})["release"] == "v1.10.2"
    chosen = releases.plan({"source": "tarball", "release": "26.03"})
    assert chosen["catalog"]["pipelines"] == ["applications/pipeline/overlays"]
    assert chosen["components"] == dict((name, "managed") for name in chosen["catalog"])
    # a catalog of the user's wins, and then a tree of unknown release is accepted
    own = {"example": ["example"]}
    expected = {"release": None, "catalog": own, "components": {"example": "managed"}}
    assert releases.plan({"source": "dir", "catalog": own}) == expected
    assert releases.plan({"source": "git", "git_ref": "main", "release": "v1.11.0"})["release"] == "v1.11.0"


@pytest.mark.parametrize("params, message", [
    ({"source": "git", "git_ref": "v1.9.1"}, "components_git_ref: 'v1.9.1' is not a Kubeflow release kfocp supports"),
    ({"source": "tarball", "release": "v1.9.1"}, "components_release: 'v1.9.1' is not a Kubeflow release kfocp "
                                                 "supports. Use one of v1.10.2, v1.11.0, 26.03"),
    ({"source": "tarball"}, "components_release: is required with components_source: tarball"),
    ({"source": "git", "git_ref": "v1.11.0", "release": "26.03"},
     "components_release: is 26.03, but components_git_ref checks out v1.11.0"),
])
def test_an_unsupported_or_missing_release_is_refused_naming_the_field(params, message):
    with pytest.raises(DefinitionError) as err:
        releases.plan(params)
    assert message in str(err.value)


def test_an_upgrade_goes_one_release_at_a_time_and_never_back():
    assert releases.check_upgrade(None, "v1.10.2") is None
    assert releases.check_upgrade("v1.10.2", "v1.10.2") is None
    assert releases.check_upgrade("v1.10.2", "v1.11.0") == "v1.10.2 -> v1.11.0"
    assert releases.check_upgrade("v1.11.0", "26.03") == "v1.11.0 -> 26.03"
    with pytest.raises(DefinitionError, match="going back to v1.11.0 is a downgrade"):
        releases.check_upgrade("26.03", "v1.11.0")
    with pytest.raises(DefinitionError, match="26.03 skips v1.11.0.*Install v1.11.0 first"):
        releases.check_upgrade("v1.10.2", "26.03")
    with pytest.raises(DefinitionError, match="Kubeflow v1.9.1 installed"):
        releases.check_upgrade("v1.9.1", "v1.10.2")
