"""The OLM bundle (operator/bundle) against what reads it: the bundle format of operator-registry
and operator-framework/api (Go modules, at the versions the repository's go.sum files pin) and
OpenShift certification (openshift-preflight and operator-pipelines, ported below from the commits
docs/readings/operator-bundle-awx-admission-readings.md records)."""
import re

import pytest
import yaml

from gomod import require_module
from helpers import ROOT

BUNDLE = ROOT / "operator" / "bundle"
CSV = yaml.safe_load((BUNDLE / "manifests" / "kfocp-operator.clusterserviceversion.yaml").read_text())
ANNOTATIONS = yaml.safe_load((BUNDLE / "metadata" / "annotations.yaml").read_text())["annotations"]
DOCKERFILE = (BUNDLE / "bundle.Dockerfile").read_text()
REGISTRY = ("github.com/operator-framework/operator-registry", "v1.59.0")  # operator/hack/ansible-operator/go.sum
API = ("github.com/operator-framework/api", "v0.45.0")  # operator/hack/validate-bundle/go.sum


def _go_consts(text):
    return dict(re.findall(r'^\s*(\w+)\s*=\s*"([^"]*)"', text, re.M))


def test_the_bundle_metadata_is_the_registry_v1_format():
    """operator-registry pkg/lib/bundle/generate.go names the bundle's labels and their values;
    operator-framework/api pkg/manifests/bundlemeta.go reads the package and channels from them.
    annotations.yaml and the bundle image's LABELs carry exactly those, and OpenShift's range."""
    consts = _go_consts((require_module(pytest, *REGISTRY) / "pkg" / "lib" / "bundle" / "generate.go").read_text())
    expected = {consts["MediatypeLabel"]: consts["RegistryV1Type"], consts["ManifestsLabel"]: consts["ManifestsDir"],
                consts["MetadataLabel"]: consts["MetadataDir"]}
    for key, value in expected.items():
        assert ANNOTATIONS[key] == value, key
    meta = (require_module(pytest, *API) / "pkg" / "manifests" / "bundlemeta.go").read_text()
    read = set(re.findall(r'yaml:"(operators\.operatorframework\.io\.bundle\.[^"]+)"', meta))
    assert read == {consts["PackageLabel"], consts["ChannelsLabel"], consts["ChannelDefaultLabel"]}
    assert ANNOTATIONS[consts["PackageLabel"]] == CSV["metadata"]["name"].split(".v")[0]
    assert ANNOTATIONS[consts["ChannelDefaultLabel"]] in ANNOTATIONS[consts["ChannelsLabel"]].split(",")
    assert set(ANNOTATIONS) == set(expected) | read | {"com.redhat.openshift.versions"}
    for key, value in ANNOTATIONS.items():
        assert "LABEL %s=%s\n" % (key, value) in DOCKERFILE


def test_capabilities_and_categories_are_the_standard_ones():
    """api pkg/validation/internal/standardcapabilities.go and standardcategories.go (the optional
    validators of the operatorframework suite and of preflight)."""
    internal = require_module(pytest, *API) / "pkg" / "validation" / "internal"
    capabilities = re.findall(r'^\t"([^"]+)":\s+\{\},', (internal / "standardcapabilities.go").read_text(), re.M)
    categories = re.findall(r'^\t"([^"]+)":\s+\{\},', (internal / "standardcategories.go").read_text(), re.M)
    assert "Full Lifecycle" in capabilities and "AI/Machine Learning" in categories
    annotations = CSV["metadata"]["annotations"]
    assert annotations["capabilities"] in capabilities
    assert all(c.strip() in categories for c in annotations["categories"].split(","))


def test_owned_crds_related_images_and_replaces_are_what_the_validators_read():
    """api bundle.go: every owned CRD is a CRD of the bundle (name, version, kind) and each
    relatedImages[].image a pullspec reference.ParseNormalizedNamed takes; csv.go: `replaces`
    (when set) is a CSV name. operator-pipelines isv/bundle.py check_pruned_graph applies only to
    a bundle with olm.skipRange and no replaces: kfocp's bundle sets no skip range."""
    internal = require_module(pytest, *API) / "pkg" / "validation" / "internal"
    bundle_go = (internal / "bundle.go").read_text()
    assert "reference.ParseNormalizedNamed(relatedImage.Image)" in bundle_go
    crds = [yaml.safe_load(p.read_text()) for p in (BUNDLE / "manifests").glob("*.yaml")]
    crds = [c for c in crds if c.get("kind") == "CustomResourceDefinition"]
    served = set((c["metadata"]["name"], v["name"], c["spec"]["names"]["kind"]) for c in crds for v in c["spec"]["versions"])
    for owned in CSV["spec"]["customresourcedefinitions"]["owned"]:
        assert (owned["name"], owned["version"], owned["kind"]) in served
        assert owned.get("description") and owned.get("displayName")
    # docker/distribution reference grammar: [host[:port]/]path[:tag][@digest], lower-case path
    pullspec = re.compile(r"^(?:[a-z0-9.-]+(?::\d+)?/)?[a-z0-9]+(?:[._-][a-z0-9]+)*(?:/[a-z0-9]+(?:[._-][a-z0-9]+)*)*"
                          r"(?::[\w][\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$")
    images = [i["image"] for i in CSV["spec"]["relatedImages"]]
    assert images and all(pullspec.match(i) for i in images), images
    container = CSV["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] in images and CSV["metadata"]["annotations"]["containerImage"] == container["image"]
    assert "olm.skipRange" not in CSV["metadata"]["annotations"] and "skips" not in CSV["spec"]
    if CSV["spec"].get("replaces"):
        assert re.match(r"^kfocp-operator\.v\d+\.\d+\.\d+$", CSV["spec"]["replaces"])


# openshift-preflight 1.21.0 (703ac27f) internal/policy/operator/required_annotations.go
# infraAnnotations and internal/csv/csv.go.
PREFLIGHT_FEATURES = {"disconnected": "required", "fips-compliant": "required", "proxy-aware": "required",
                      "tls-profiles": "required", "token-auth-aws": "required", "token-auth-azure": "required",
                      "token-auth-gcp": "required", "cnf": "optional", "cni": "optional", "csi": "optional"}


def preflight_required_annotations(annotations):
    """(missing, incorrect) as RequiredAnnotations.validate finds them; it passes when both are empty."""
    missing, incorrect = [], {}
    for name, status in PREFLIGHT_FEATURES.items():
        key = "features.operators.openshift.io/" + name
        if key not in annotations:
            if status == "required":
                missing.append(key)
            continue
        if annotations[key] not in ("true", "false"):
            incorrect[key] = annotations[key]
    return missing, incorrect


def test_the_feature_annotations_pass_preflights_required_annotations_check():
    assert preflight_required_annotations(CSV["metadata"]["annotations"]) == ([], {})
    # the port fails where preflight fails
    assert len(preflight_required_annotations({})[0]) == 7
    bad = dict(CSV["metadata"]["annotations"], **{"features.operators.openshift.io/proxy-aware": "True"})
    assert preflight_required_annotations(bad)[1] == {"features.operators.openshift.io/proxy-aware": "True"}


# openshift-preflight 1.21.0 internal/bundle/bundle.go: ocpToKubeVersion and targetVersion.
PREFLIGHT_OCP_TO_KUBE = {"4.%d" % n: "1.%d" % (n + 13) for n in range(9, 24)}
PREFLIGHT_LATEST_RELEASED = "4.22"


def preflight_k8s_version(openshift_versions):
    """The k8s-version preflight's bundle validation runs the deprecated-API checks for."""
    label = openshift_versions.strip().lstrip("=").replace("v", "")
    if "-" in label:
        low, high = label.split("-", 1)
        target = high or PREFLIGHT_LATEST_RELEASED
    else:
        target = label if tuple(map(int, label.split("."))) > (4, 22) else PREFLIGHT_LATEST_RELEASED
    return PREFLIGHT_OCP_TO_KUBE.get(".".join(target.split(".")[:2]))


def test_preflight_validates_the_bundle_for_the_newest_openshift_it_names():
    """Preflight's ValidateOperatorBundle runs the validators tests/integration/test_bundle.py runs,
    with the k8s-version of the upper end of com.redhat.openshift.versions: the one that test uses.
    SecurityContextConstraintsInCSV passes when the CSV requests no SCC (scc_info.go)."""
    import sys
    sys.path.insert(0, str(ROOT / "operator" / "hack"))
    import gen_bundle  # noqa: E402
    assert preflight_k8s_version(ANNOTATIONS["com.redhat.openshift.versions"]) == \
        gen_bundle.kubernetes_minor(gen_bundle.SUPPORTED[-1])
    rules = [r for p in CSV["spec"]["install"]["spec"].get("clusterPermissions", []) +
             CSV["spec"]["install"]["spec"].get("permissions", []) for r in p["rules"]]
    assert not [r for r in rules if "securitycontextconstraints" in r.get("resources", []) and r.get("resourceNames")]


# operator-pipelines (422dfd6e) community/bundle.py check_required_fields: the fatal fields and
# their patterns (the icon, maintainers and links checks are functions; the validators of
# tests/integration/test_bundle.py check those).
PIPELINE_FATAL = {("spec", "displayName"): r".{3,50}", ("spec", "description"): r".{20,}",
                  ("spec", "provider", "name"): r".{3,}"}
PIPELINE_WARN = {"capabilities": None, "categories": None, "containerImage": r"([^/]+/){1,}[^/:]+:.+",
                 "createdAt": None, "repository": r"https?://.+", "support": r".{3,}", "description": r".{10,}"}


def _lookup(csv, path):
    for key in path:
        csv = (csv or {}).get(key)
    return csv


def test_the_csv_has_the_fields_the_community_pipeline_requires():
    for path, pattern in PIPELINE_FATAL.items():
        value = _lookup(CSV, path)
        assert value is not None and re.match(pattern, str(value), re.S), path
    assert re.match(r"^\d+\.\d+\.\d+", CSV["spec"]["version"])
    assert CSV["spec"]["icon"] and CSV["spec"]["maintainers"] and CSV["spec"]["links"]
    annotations = CSV["metadata"]["annotations"]
    warned = [k for k, pattern in PIPELINE_WARN.items()
              if k not in annotations or pattern and not re.match(pattern, str(annotations[k]), re.S)]
    # createdAt is left out on purpose: the bundle is generated reproducibly (gen_bundle.py --check);
    # the pipeline only warns about it
    assert warned == ["createdAt"]
