"""kfocp's operator and operator/watches.yaml against the source of the ansible-operator that the
project builds (github.com/operator-framework/ansible-operator-plugins at the version
operator/hack/ansible-operator/go.mod pins), read from the Go module cache. The ansible-operator
build (operator/hack/build.py) puts the module there; without it these tests are skipped."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "operator"))

from kfocp_operator import RECONCILE_PERIOD_ANNOTATION  # noqa: E402
from kfocp_operator.playbook import CR_VARIABLE, extravars  # noqa: E402

GO_MOD = ROOT / "operator" / "hack" / "ansible-operator" / "go.mod"
MODULE = "github.com/operator-framework/ansible-operator-plugins"


@pytest.fixture(scope="module")
def source():
    version = re.search(r"^\s*(?:require\s+)?%s\s+(\S+)" % re.escape(MODULE), GO_MOD.read_text(), re.M).group(1)
    env = dict(os.environ, GOPROXY="off", GOFLAGS="-mod=mod")
    try:
        proc = subprocess.run(["go", "mod", "download", "-json", "%s@%s" % (MODULE, version)], cwd=GO_MOD.parent,
                              env=env, capture_output=True, text=True, timeout=120, check=False)
    except FileNotFoundError:
        pytest.skip("go is not installed")
    if proc.returncode:
        pytest.skip("%s@%s is not in the Go module cache (the ansible-operator build puts it there)" % (MODULE, version))
    return Path(json.loads(proc.stdout)["Dir"])


def test_the_reconcile_period_annotation_is_the_one_ansible_operator_reads(source):
    text = (source / "internal" / "ansible" / "controller" / "reconcile.go").read_text()
    assert re.search(r'ReconcilePeriodAnnotation = "([^"]+)"', text).group(1) == RECONCILE_PERIOD_ANNOTATION


def _yaml_tags(text, struct):
    body = re.search(r"type %s struct \{(.*?)\n\}" % struct, text, re.S).group(1)
    return set(tag for tag in re.findall(r'yaml:"([^",]+)', body) if tag != "-")


def test_watches_yaml_uses_only_keys_ansible_operator_reads(source):
    """ansible-operator unmarshals watches.yaml into its `alias` struct: an unknown key is dropped
    without a word, so a misspelt key would silently keep its default."""
    text = (source / "internal" / "ansible" / "watches" / "watches.go").read_text()
    watch_keys, finalizer_keys = _yaml_tags(text, "alias"), _yaml_tags(text, "Finalizer")
    for watch in yaml.safe_load((ROOT / "operator" / "watches.yaml").read_text()):
        assert set(watch) <= watch_keys, set(watch) - watch_keys
        assert set(watch.get("finalizer") or {}) <= finalizer_keys


def test_extravars_carry_the_keys_ansible_operator_passes(source):
    text = (source / "internal" / "ansible" / "runner" / "runner.go").read_text()
    assert 'parameters["ansible_operator_meta"] = map[string]string{"namespace": u.GetNamespace(), "name": u.GetName()}' \
        in text
    assert 'fmt.Sprintf("_%v_%v", r.GVK.Group, strings.ToLower(r.GVK.Kind))' in text
    cr = {"apiVersion": "kfocp.io/v1alpha1", "kind": "Kubeflow", "metadata": {"name": "kf", "namespace": "ns"}}
    out = extravars(cr, {})
    assert out["ansible_operator_meta"] == {"name": "kf", "namespace": "ns"}
    # escapeAnsibleKey turns the group's dots into underscores
    assert CR_VARIABLE == "_kfocp_io_kubeflow" and out[CR_VARIABLE] == cr


def test_watches_yaml_marks_the_spec_unsafe_and_keeps_its_keys(source):
    """watches.go: markUnsafe defaults to false and snakeCaseParameters to true; runner.go marks
    every string of the spec unsafe only with markUnsafe, renames every key (MapToSnake) with
    snakeCaseParameters, and always passes the spec as written in _<group>_<kind>_spec, which
    site.yml renames by the CRD's key map."""
    watches_go = (source / "internal" / "ansible" / "watches" / "watches.go").read_text()
    runner_go = (source / "internal" / "ansible" / "runner" / "runner.go").read_text()
    assert "markUnsafeDefault                  = false" in watches_go
    assert "snakeCaseParametersDefault         = true" in watches_go
    assert "parameters = paramconv.MapToSnake(spec)" in runner_go
    assert "parameters[specKey] = markUnsafe(spec)" in runner_go
    assert 'specKey := fmt.Sprintf("%s_spec", objKey)' in runner_go
    (watch,) = yaml.safe_load((ROOT / "operator" / "watches.yaml").read_text())
    assert watch["markUnsafe"] is True
    assert watch["snakeCaseParameters"] is False
    site = (ROOT / "playbooks" / "site.yml").read_text()
    assert "%s_spec | kfocp.kubeflow.spec_variables(__kfocp_spec_keys)" % CR_VARIABLE in site


def test_the_second_stack_is_the_images(source):
    """operator/hack/ansible-operator/requirements.txt pins the ansible-operator image's own versions
    (images/ansible-operator/Pipfile.lock of the pinned module, Python 3.12)."""
    lock = json.loads((source / "images" / "ansible-operator" / "Pipfile.lock").read_text())
    assert lock["_meta"]["requires"]["python_version"] == "3.12"
    pins = dict(line.split("==") for line in (GO_MOD.parent / "requirements.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    for package in ("ansible-core", "ansible-runner", "kubernetes"):
        assert "==" + pins[package] == lock["default"][package]["version"], package


def test_the_base_image_installs_no_collection_and_kfocps_installs_the_pinned_ones(source):
    """The base image's Dockerfile installs the Pipfile.lock's packages and no collection (no
    ansible-galaxy): the collections under ansible-operator are those kfocp's
    Dockerfile.ansible-operator installs, awx/ee-collections.yml, which hack/operator_stack.py unpacks
    into the second stack."""
    base = (source / "images" / "ansible-operator" / "Dockerfile").read_text()
    assert "pipenv install --deploy" in base and "ansible-galaxy" not in base
    ours = (ROOT / "operator" / "Dockerfile.ansible-operator").read_text()
    assert "COPY --chown=1001:0 awx/ee-collections.yml /opt/ansible/requirements.yml" in ours
    assert "ansible-galaxy collection install -r /opt/ansible/requirements.yml" in ours


def test_the_second_stack_runs_the_images_versions(source):
    """Run on the second stack (.venv-operator, `make test-operator-stack`): its Python and every
    package of the image's Pipfile.lock are at the lock's versions, and its collections at
    awx/ee-collections.yml's."""
    from importlib.metadata import version  # pylint: disable=import-outside-toplevel
    if Path(sys.prefix).name != ".venv-operator":
        pytest.skip("not run on the second stack (.venv-operator)")
    lock = json.loads((source / "images" / "ansible-operator" / "Pipfile.lock").read_text())
    assert "%d.%d" % sys.version_info[:2] == lock["_meta"]["requires"]["python_version"]
    for package, pin in lock["default"].items():
        assert "==" + version(package) == pin["version"], package
    import ansible_collections  # pylint: disable=import-outside-toplevel
    for entry in yaml.safe_load((ROOT / "awx" / "ee-collections.yml").read_text())["collections"]:
        manifests = [Path(base, *entry["name"].split("."), "MANIFEST.json") for base in ansible_collections.__path__]
        found = [json.loads(m.read_text())["collection_info"]["version"] for m in manifests if m.exists()]
        assert found == [entry["version"]], entry
