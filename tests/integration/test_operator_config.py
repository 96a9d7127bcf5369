"""operator/config as kustomize: `kubectl kustomize operator/config/default` renders the CRD, the
RBAC and the manager, the Deployment is locked down, and the API server accepts all of it
(server-side apply; a dry run for the Deployment and the rest of the namespaced objects)."""
import json

import pytest
import yaml

from helpers import ROOT

CONFIG = ROOT / "operator" / "config"
NS = "kfocp-system"


def kustomize(control_plane, target):
    proc = control_plane.kubectl("kustomize", str(target))
    return [doc for doc in yaml.safe_load_all(proc.stdout) if doc]


@pytest.fixture(scope="module")
def rendered(control_plane):
    return kustomize(control_plane, CONFIG / "default")


def of(docs, kind):
    return [d for d in docs if d["kind"] == kind]


def test_default_renders_crd_rbac_and_manager_in_the_operator_namespace(rendered):
    kinds = set(d["kind"] for d in rendered)
    assert {"CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding",
            "Deployment", "Service"} <= kinds
    assert [c["metadata"]["name"] for c in of(rendered, "CustomResourceDefinition")] == ["kubeflows.kfocp.io"]
    for doc in rendered:
        if doc["kind"] in ("ServiceAccount", "Deployment", "Service", "Role", "RoleBinding"):
            assert doc["metadata"]["namespace"] == NS, doc["metadata"]
        assert doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "kfocp"
    sa = of(rendered, "ServiceAccount")[0]["metadata"]["name"]
    binding = of(rendered, "ClusterRoleBinding")[0]
    assert {"kind": "ServiceAccount", "name": sa, "namespace": NS} in binding["subjects"]
    assert binding["roleRef"]["name"] in [r["metadata"]["name"] for r in of(rendered, "ClusterRole")]
    assert of(rendered, "Deployment")[0]["spec"]["template"]["spec"]["serviceAccountName"] == sa


def test_manager_is_locked_down_with_probes_and_limits(rendered):
    deployment = of(rendered, "Deployment")[0]
    pod = deployment["spec"]["template"]["spec"]
    assert deployment["spec"]["replicas"] == 1 and deployment["spec"]["strategy"]["type"] == "Recreate"
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
    (container,) = pod["containers"]
    sc = container["securityContext"]
    assert sc["capabilities"]["drop"] == ["ALL"] and "add" not in sc["capabilities"]
    assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True
    assert sc["runAsNonRoot"] is True
    # the probes hit the port the operator is told to serve on
    port = int(container["args"][container["args"].index("--port") + 1])
    named = dict((p["name"], p["containerPort"]) for p in container["ports"])
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container[probe]["httpGet"]
        assert get["path"] == path and named.get(get["port"], get["port"]) == port
    assert set(container["resources"]["limits"]) == {"cpu", "memory"}
    assert set(container["resources"]["requests"]) == {"cpu", "memory"}
    # a read-only root: Ansible writes under a writable /tmp
    mounts = dict((m["mountPath"], m["name"]) for m in container["volumeMounts"])
    assert "/tmp" in mounts
    image = container["image"]
    assert ":" in image.rsplit("/", 1)[-1] and not image.endswith(":latest")


def test_the_api_server_accepts_config_default_and_the_samples(control_plane, kube, rendered, tmp_path):
    def apply(docs, dry_run):
        path = tmp_path / ("docs-%d.json" % len(list(tmp_path.iterdir())))
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": docs}))
        args = ["apply", "--server-side", "--field-manager=kfocp-test", "--force-conflicts", "-f", str(path)]
        if dry_run:
            args.append("--dry-run=server")
        return control_plane.kubectl(*args)

    # the CRD and the namespace for real (other objects need them), everything else as a dry run
    first = [d for d in rendered if d["kind"] in ("CustomResourceDefinition", "Namespace")]
    apply(first, dry_run=False)
    control_plane.wait_established("kubeflows.kfocp.io")
    rest = [d for d in rendered if d not in first]
    out = apply(rest, dry_run=True).stdout
    for doc in rest:
        assert doc["metadata"]["name"] in out
    assert "deployment.apps/kfocp-operator serverside-applied (server dry run)" in out

    samples = kustomize(control_plane, CONFIG / "samples")
    assert samples and all(s["kind"] == "Kubeflow" for s in samples)
    out = apply(samples, dry_run=True).stdout
    assert "(server dry run)" in out
