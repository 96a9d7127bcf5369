"""The OLM bundle (operator/bundle) is in sync with operator/config, and the operator-framework
validation library (github.com/operator-framework/api, built from its Go module) accepts it."""
import json
import shutil
import subprocess
import sys

import pytest
import yaml

from helpers import ROOT

sys.path.insert(0, str(ROOT / "operator" / "hack"))

import build  # noqa: E402
import gen_bundle  # noqa: E402

BUNDLE = ROOT / "operator" / "bundle"
CSV = BUNDLE / "manifests" / "kfocp-operator.clusterserviceversion.yaml"
NEWEST_KUBERNETES = gen_bundle.kubernetes_minor(gen_bundle.SUPPORTED[-1])


@pytest.fixture(scope="module")
def validator():
    return build.validate_bundle()


@pytest.fixture(scope="module")
def kubectl(control_plane):
    return control_plane.state()["bins"]["kubectl"]


def validate(validator, directory, suite=True):
    """The validator's report; with `suite`, with the optional validators of operator-sdk's
    `--select-optional suite=operatorframework`, for the newest supported OpenShift's Kubernetes
    (as operator-pipelines runs it: the k8s-version of the newest OpenShift the bundle names)."""
    options = ["-suite", "operatorframework", "-k8s-version", NEWEST_KUBERNETES] if suite else []
    proc = subprocess.run([str(validator)] + options + [str(directory)], capture_output=True, text=True, check=False,
                          timeout=120)
    report = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, report, proc.stderr


def test_bundle_is_generated_from_operator_config(kubectl):
    proc = subprocess.run([sys.executable, str(ROOT / "operator" / "hack" / "gen_bundle.py"), "--check",
                           "--kubectl", kubectl], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_csv_carries_the_config_permissions_deployment_crd_and_samples(kubectl):
    csv = yaml.safe_load(CSV.read_text())
    rendered = gen_bundle.render(kubectl, ROOT / "operator" / "config" / "default")
    role = [d for d in rendered if d["kind"] == "ClusterRole"][0]
    deployment = [d for d in rendered if d["kind"] == "Deployment"][0]
    strategy = csv["spec"]["install"]["spec"]
    assert strategy["clusterPermissions"] == [{"serviceAccountName": "kfocp-operator", "rules": role["rules"]}]
    (dep,) = strategy["deployments"]
    assert dep["name"] == deployment["metadata"]["name"]
    container = dep["spec"]["template"]["spec"]["containers"][0]
    env = dict((e["name"], e) for e in container["env"])
    assert env["WATCH_NAMESPACE"] == {"name": "WATCH_NAMESPACE", "value": ""}
    assert container["securityContext"]["capabilities"]["drop"] == ["ALL"]
    assert [c["name"] for c in csv["spec"]["customresourcedefinitions"]["owned"]] == ["kubeflows.kfocp.io"]
    modes = dict((m["type"], m["supported"]) for m in csv["spec"]["installModes"])
    assert modes == {"OwnNamespace": True, "SingleNamespace": False, "MultiNamespace": False, "AllNamespaces": False}
    examples = json.loads(csv["metadata"]["annotations"]["alm-examples"])
    assert examples and examples[0]["kind"] == "Kubeflow"
    assert csv["spec"]["version"] == yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    annotations = yaml.safe_load((BUNDLE / "metadata" / "annotations.yaml").read_text())["annotations"]
    dockerfile = (BUNDLE / "bundle.Dockerfile").read_text()
    for key, value in annotations.items():
        assert "LABEL %s=%s" % (key, value) in dockerfile


def test_alm_examples_are_valid_kubeflow_resources(control_plane, kubectl):
    csv = yaml.safe_load(CSV.read_text())
    control_plane.kubectl("apply", "--server-side", "--field-manager=kfocp-test", "--force-conflicts",
                          "-f", str(BUNDLE / "manifests" / "kubeflows.kfocp.io.yaml"))
    control_plane.wait_established("kubeflows.kfocp.io")
    for example in json.loads(csv["metadata"]["annotations"]["alm-examples"]):
        example["metadata"]["namespace"] = "default"
        out = control_plane.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-", input=json.dumps(example))
        assert "(server dry run)" in out.stdout


def test_the_operator_framework_validators_accept_the_bundle(validator):
    rc, report, stderr = validate(validator, BUNDLE)
    assert rc == 0, json.dumps(report, indent=1) + stderr
    assert report["suite"] == "operatorframework"
    assert report["errors"] == []
    # The one warning kept on purpose: the roles install the CRDs of the Kubeflow components they
    # deploy, so the operator may create CRDs (good-practices validator).
    others = [w for w in report["warnings"] if "permissions to create CRD" not in w["detail"]]
    assert others == [], others
    assert report["csv"] == "kfocp-operator.v0.1.0" or report["csv"].startswith("kfocp-operator.v")
    assert report["crds"] == ["kubeflows.kfocp.io"]
    assert report["package"] == "kfocp-operator" and report["channels"] == ["candidate"]


def test_the_validators_refuse_a_bundle_whose_owned_crd_is_missing(validator, tmp_path):
    broken = tmp_path / "bundle"
    shutil.copytree(BUNDLE, broken)
    (broken / "manifests" / "kubeflows.kfocp.io.yaml").unlink()
    rc, report, stderr = validate(validator, broken)
    assert rc == 1, stderr
    assert any("owned CRD" in e["detail"] and "Kind=Kubeflow" in e["detail"] and "not found" in e["detail"]
               for e in report["errors"]), report


def test_the_validators_refuse_a_csv_without_install_modes(validator, tmp_path):
    broken = tmp_path / "bundle"
    shutil.copytree(BUNDLE, broken)
    path = broken / "manifests" / CSV.name
    csv = yaml.safe_load(path.read_text())
    csv["spec"]["installModes"] = []
    path.write_text(yaml.safe_dump(csv))
    rc, report, stderr = validate(validator, broken)
    assert rc == 1, stderr
    assert any("installModes" in e["detail"] or "install mode" in e["detail"].lower()
               for e in report["errors"]), report


def test_the_operatorframework_suite_refuses_an_unknown_category(validator, tmp_path):
    """The optional suite runs: its categories validator refuses what the default ones let through."""
    broken = tmp_path / "bundle"
    shutil.copytree(BUNDLE, broken)
    path = broken / "manifests" / CSV.name
    csv = yaml.safe_load(path.read_text())
    csv["metadata"]["annotations"]["categories"] = "Not A Category"
    path.write_text(yaml.safe_dump(csv))
    assert validate(validator, broken, suite=False)[0] == 0
    rc, report, stderr = validate(validator, broken)
    assert rc == 1, stderr
    assert any("Not A Category" in e["detail"] for e in report["errors"]), report
