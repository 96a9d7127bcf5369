"""The components role against the real API server: the fixture tree (tests/fixtures/manifests)
rendered with kubectl kustomize, adapted, applied, pruned per component, and written for GitOps."""
import shutil
import subprocess
import tarfile

import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import UnknownKind
from helpers import ROOT

FIXTURE = ROOT / "tests" / "fixtures" / "manifests"
# Every component of the local inventory, managed; a test switches one to removed.
ALL = yaml.safe_load((ROOT / "inventories" / "local" / "group_vars" / "all" / "components.yml").read_text())[
    "components_components"]
COMPONENT = "kfocp.io/component"


def owned(kube, instance, api_version, kind, namespace=None):
    res = kube.resource(api_version, kind)
    return kube.list(res, namespace=namespace, label_selector="kfocp.io/instance=%s" % instance)


def inventory(kube, instance):
    """Every object of the fixture's kinds that this instance owns: {(kind, ns, name): resourceVersion}."""
    kinds = [("v1", "ServiceAccount"), ("v1", "Service"), ("v1", "ConfigMap"), ("apps/v1", "Deployment"),
             ("apps/v1", "DaemonSet"), ("apps/v1", "StatefulSet"), ("rbac.authorization.k8s.io/v1", "ClusterRole"),
             ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"), ("rbac.authorization.k8s.io/v1", "RoleBinding"),
             ("apiextensions.k8s.io/v1", "CustomResourceDefinition"), ("networking.istio.io/v1beta1", "VirtualService"),
             ("networking.istio.io/v1beta1", "Gateway"), ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration")]
    found = {}
    kube.resources(refresh=True)  # the fixture's CRD comes and goes
    for api_version, kind in kinds:
        for obj in owned(kube, instance, api_version, kind):
            meta = obj["metadata"]
            found[(kind, meta.get("namespace", ""), meta["name"])] = (meta["resourceVersion"],
                                                                      (meta.get("labels") or {}).get(COMPONENT))
    try:
        for obj in owned(kube, instance, "serving.kserve.io/v1alpha1", "ClusterServingRuntime"):
            found[("ClusterServingRuntime", "", obj["metadata"]["name"])] = (obj["metadata"]["resourceVersion"],
                                                                             obj["metadata"]["labels"].get(COMPONENT))
    except UnknownKind:  # the kind is gone with its CRD
        pass
    return found


def test_apply_idempotence_prune_one_component_and_absent(playbook, kube, instance):
    ns = instance
    extra = {"kfocp_instance": instance, "components_namespace": ns, "components_no_log": False}
    try:
        dry = playbook("components", extra, check=True)
        assert dry.rc == 0, dry.stdout
        assert inventory(kube, instance) == {}

        first = playbook("components", extra)
        assert first.rc == 0, first.stdout
        assert first.count("changed") == 1
        live = inventory(kube, instance)
        assert ("CustomResourceDefinition", "", "clusterservingruntimes.serving.kserve.io") in live
        assert ("ClusterServingRuntime", "", "kserve-sklearnserver") in live
        assert ("DaemonSet", ns, "kserve-localmodelnode-agent") in live
        namespace = kube.get(kube.resource("v1", "Namespace"), ns)
        assert namespace["metadata"]["labels"]["istio-injection"] == "enabled"
        envoy = kube.get(kube.resource("apps/v1", "Deployment"), "metadata-envoy-deployment", ns)
        assert envoy["spec"]["template"]["spec"]["containers"][0]["args"] == ["/etc/envoy.yaml", "--base-id", "1"]
        # upstream's own "false" stays
        assert envoy["spec"]["template"]["metadata"]["annotations"]["sidecar.istio.io/inject"] == "false"
        vs = kube.get(kube.resource("networking.istio.io/v1beta1", "VirtualService"), "ml-pipeline-ui", ns)
        assert vs["spec"]["http"][0]["route"][0]["destination"]["host"] == "ml-pipeline-ui.%s.svc.cluster.local" % ns
        binding = kube.get(kube.resource("rbac.authorization.k8s.io/v1", "RoleBinding"),
                           "kfocp-components-scc-privileged-kserve-localmodelnode-agent", ns)
        assert binding["roleRef"]["name"] == "system:openshift:scc:privileged"
        assert "securityContext.privileged" in binding["metadata"]["annotations"]["kfocp.io/scc-reason"]
        assert "SERVICE ACCOUNT" in first.stdout and "kserve-localmodelnode-agent" in first.stdout

        second = playbook("components", extra)
        assert second.rc == 0 and second.count("changed") == 0, second.stdout
        assert inventory(kube, instance) == live
        check = playbook("components", extra, check=True, diff=True)
        assert check.rc == 0 and check.count("changed") == 0, check.stdout

        removed = dict(extra, components_components=dict(ALL, kserve="removed"))
        third = playbook("components", removed)
        assert third.rc == 0 and third.count("changed") == 1, third.stdout
        after = inventory(kube, instance)
        kserve = set(k for k, (rv, component) in live.items() if component == "kserve")
        kserve.add(("RoleBinding", ns, "kfocp-components-scc-privileged-kserve-localmodelnode-agent"))
        assert len(kserve) >= 7
        assert after == dict((k, v) for k, v in live.items() if k not in kserve)

        absent = playbook("components", dict(extra, components_state="absent"))
        assert absent.rc == 0, absent.stdout
        assert inventory(kube, instance) == {}
        assert kube.get(kube.resource("v1", "Namespace"), ns) is not None  # platform namespaces stay
    finally:
        playbook("uninstall", {"kfocp_instance": instance})
    assert kube.get(kube.resource("v1", "Namespace"), ns) is None


def rendered_files(directory):
    return sorted(p.name for p in directory.iterdir() if p.name != "kustomization.yaml")


def test_render_mode_writes_files_applies_nothing_and_mirrors(playbook, kube, instance, tmp_path, control_plane):
    out = tmp_path / "gitops"
    mirror = tmp_path / "mirror.txt"
    extra = {"kfocp_instance": instance, "components_render_dir": str(out), "components_namespace": instance,
             "components_mirror_enabled": True, "components_mirror_file": str(mirror),
             "components_image_prefixes": {"docker.io/kubeflownotebookswg": "registry.example.com/kf",
                                           "ghcr.io/kubeflow": "registry.example.com/kfp"},
             "components_argo_external": True,
             "components_argo_s3": {"endpoint": "s3.example.com", "bucket": "kfp", "secret": "kfp-s3"}}
    first = playbook("components", extra)
    assert first.rc == 0, first.stdout
    assert first.count("changed") >= 1
    assert inventory(kube, instance) == {}
    assert kube.get(kube.resource("v1", "Namespace"), instance) is None
    files = rendered_files(out)
    index = yaml.safe_load((out / "kustomization.yaml").read_text())
    assert sorted(index["resources"]) == files and len(files) > 50
    assert index["resources"][0].startswith("customresourcedefinition_")  # apply order: CRDs first
    assert "deployment_apps_%s_workflow-controller.yaml" % instance not in files
    cm = yaml.safe_load((out / ("configmap_core_%s_workflow-controller-configmap.yaml" % instance)).read_text())
    s3 = yaml.safe_load(cm["data"]["artifactRepository"])["s3"]
    assert s3["accessKeySecret"] == {"name": "kfp-s3", "key": "accesskey"} and s3["endpoint"] == "s3.example.com"
    api = yaml.safe_load((out / ("deployment_apps_%s_ml-pipeline.yaml" % instance)).read_text())
    container = api["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.example.com/kfp/kfp-api-server:2.5.0"
    assert container["env"][0]["value"] == "registry.example.com/kfp/kfp-launcher:2.5.0"
    assert "kfocp.io/ownership" not in (out / ("namespace_core_cluster_%s.yaml" % instance)).read_text()
    lines = mirror.read_text().splitlines()
    assert "ghcr.io/kubeflow/kfp-api-server:2.5.0=registry.example.com/kfp/kfp-api-server:2.5.0" in lines
    assert "docker.io/kubeflownotebookswg/jupyter-scipy:v1.10.0=registry.example.com/kf/jupyter-scipy:v1.10.0" in lines
    # the images no prefix matches are listed in one warning
    assert "[WARNING]" in first.stdout and "matches none of these" in first.stdout and "mysql:8.4" in first.stdout
    # the directory is a valid kustomization
    built = control_plane.kubectl("kustomize", str(out))
    assert built.stdout.count("\nkind: ") + built.stdout.startswith("kind: ") >= 1
    assert len([d for d in yaml.safe_load_all(built.stdout) if d]) == len(files)

    second = playbook("components", extra)
    assert second.rc == 0 and second.count("changed") == 0, second.stdout
    fewer = playbook("components", dict(extra, components_components=dict(ALL, katib="removed")))
    assert fewer.rc == 0 and fewer.count("changed") == 1
    assert "deployment_apps_%s_katib-controller.yaml" % instance not in rendered_files(out)
    assert len(rendered_files(out)) < len(files)


def test_git_source_from_a_file_url_and_a_tarball(playbook, kube, instance, tmp_path):
    repo = tmp_path / "manifests"
    shutil.copytree(FIXTURE, repo)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    for cmd in (["git", "init", "-q", "-b", "main"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "v"],
                ["git", "tag", "v9.9.9"]):
        subprocess.run(cmd, cwd=repo, env=env, check=True)
    # a later commit on main that the tag does not have
    katib = repo / "applications" / "katib" / "upstream" / "installs" / "katib-with-kubeflow"
    (katib / "extra.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: only-on-main\n")
    (katib / "kustomization.yaml").write_text((katib / "kustomization.yaml").read_text() + "- extra.yaml\n")
    for cmd in (["git", "add", "-A"], ["git", "commit", "-q", "-m", "later"]):
        subprocess.run(cmd, cwd=repo, env=env, check=True)

    out = tmp_path / "from-git"
    extra = {"kfocp_instance": instance, "components_render_dir": str(out), "components_source": "git",
             "components_git_url": "file://%s" % repo, "components_git_ref": "v9.9.9"}
    result = playbook("components", extra)
    assert result.rc == 0, result.stdout
    assert "deployment_apps_kubeflow_katib-controller.yaml" in rendered_files(out)
    assert not any("only-on-main" in name for name in rendered_files(out))
    main = playbook("components", dict(extra, components_git_ref="main", components_render_dir=str(tmp_path / "main")))
    assert main.rc == 0, main.stdout
    assert "configmap_core_kubeflow_only-on-main.yaml" in rendered_files(tmp_path / "main")

    bad = playbook("components", dict(extra, components_git_ref="v0.0.0-missing", components_render_dir=str(
        tmp_path / "bad")))
    assert bad.rc != 0 and "components_git_ref: 'v0.0.0-missing' is not a branch, tag or commit" in bad.stdout

    tarball = tmp_path / "manifests-v9.9.9.tar.gz"
    with tarfile.open(tarball, "w:gz") as archive:
        archive.add(FIXTURE, arcname="manifests-9.9.9")
    out2 = tmp_path / "from-tarball"
    result = playbook("components", {"kfocp_instance": instance, "components_render_dir": str(out2),
                                     "components_source": "tarball", "components_tarball": str(tarball)})
    assert result.rc == 0, result.stdout
    assert rendered_files(out2) == sorted(p for p in rendered_files(out) if p)
    assert inventory(kube, instance) == {}


def test_bad_input_fails_before_any_change_and_names_the_problem(playbook, kube, instance, tmp_path):
    base = {"kfocp_instance": instance, "components_namespace": instance}

    unknown = playbook("components", dict(base, components_components={"pipeline": "managed"}))
    assert unknown.rc != 0 and "pipeline" in unknown.stdout and "components_components" in unknown.stdout

    no_kustomization = playbook("components", dict(base, components_components={"katib": "managed"},
                                                   components_catalog={"katib": ["common"]}))
    assert no_kustomization.rc != 0
    assert "component katib: common has no kustomization" in no_kustomization.stdout

    tree = tmp_path / "tree"
    shutil.copytree(FIXTURE, tree)
    kustomization = tree / "applications" / "katib" / "upstream" / "installs" / "katib-with-kubeflow" / \
        "kustomization.yaml"
    kustomization.write_text(kustomization.read_text() + "- missing-file.yaml\n")
    broken = playbook("components", dict(base, components_dir=str(tree)))
    assert broken.rc != 0
    assert "component katib: kustomize build of applications/katib/upstream/installs/katib-with-kubeflow failed" \
        in broken.stdout
    assert "missing-file.yaml" in broken.stdout

    kustomization.write_text(kustomization.read_text().replace("- missing-file.yaml\n", ""))
    (kustomization.parent / "katib-config.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n data: [\n")
    malformed = playbook("components", dict(base, components_dir=str(tree)))
    assert malformed.rc != 0
    assert "malformed YAML in applications/katib/upstream/installs/katib-with-kubeflow/katib-config.yaml" \
        in malformed.stdout

    # a Pod Security level below what a workload needs (kserve's node agent is privileged)
    too_strict = playbook("components", dict(base, components_pod_security="baseline"))
    assert too_strict.rc != 0
    assert "components_pod_security: DaemonSet kserve-localmodelnode-agent in namespace %s needs the privileged " \
           "level" % instance in too_strict.stdout

    assert inventory(kube, instance) == {}
    assert kube.get(kube.resource("v1", "Namespace"), instance) is None
