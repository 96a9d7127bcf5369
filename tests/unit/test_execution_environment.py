"""The execution environment installs the collections at the versions of the `ansible` bundle that
requirements.txt pins: the installed bundle's own MANIFEST.json files are the oracle."""
import json
import re
from pathlib import Path

import yaml

import ansible_collections

ROOT = Path(__file__).resolve().parents[2]


def _bundled(name):
    namespace, collection = name.split(".")
    for base in ansible_collections.__path__:
        manifest = Path(base) / namespace / collection / "MANIFEST.json"
        if manifest.exists() and "site-packages" in str(manifest):
            return json.loads(manifest.read_text())["collection_info"]["version"]
    raise AssertionError("%s is not in the installed ansible bundle" % name)


def test_the_execution_environment_pins_the_bundles_collection_versions():
    pinned = re.search(r"^ansible==(\S+)$", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    from importlib.metadata import version  # pylint: disable=import-outside-toplevel
    assert version("ansible") == pinned, "the installed ansible bundle is not the one requirements.txt pins"
    ee = yaml.safe_load((ROOT / "execution-environment.yml").read_text())
    wanted = yaml.safe_load((ROOT / ee["dependencies"]["galaxy"]).read_text())["collections"]
    assert wanted, "no collection pinned"
    for entry in wanted:
        assert entry["version"] == _bundled(entry["name"]), entry


def test_the_ansible_operator_image_installs_the_same_collections():
    """The ansible-operator base image has ansible-core without the bundle: it installs the pinned file."""
    text = (ROOT / "operator" / "Dockerfile.ansible-operator").read_text()
    ee = yaml.safe_load((ROOT / "execution-environment.yml").read_text())
    assert "COPY --chown=1001:0 %s /opt/ansible/requirements.yml" % ee["dependencies"]["galaxy"] in text
