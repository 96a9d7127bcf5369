"""The collection as users get it: the galaxy tarball, its docs, its changelog, its runtime metadata."""
import importlib.util
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import yaml

from helpers import ROOT, ansible_env, only_roles

BIN = Path(sys.executable).parent
# Paths (or path prefixes) of development files that must never be in the tarball.
DEV_FILES = (".venv", ".cache", ".cluster", ".git/", ".gitignore", ".pytest_cache", ".hypothesis", "hack/", "tests/",
             "molecule/", "benchmarks/", "operator/", "artifacts/", "Makefile", "requirements-dev.txt", "ansible.cfg",
             "changelogs/.plugin-cache.yaml", "dist/")
# What a user of the tarball needs.
SHIPPED = ("MANIFEST.json", "FILES.json", "README.md", "meta/runtime.yml", "plugins/modules/apply.py",
           "plugins/filter/builders.py", "plugins/filter/scc_objects.yml", "roles/scc/meta/argument_specs.yml",
           "playbooks/site.yml", "playbooks/uninstall.yml", "playbooks/status.yml", "playbooks/upgrade.yml",
           "playbooks/verify.yml", "CHANGELOG.rst", "changelogs/changelog.yaml", "execution-environment.yml",
           "bindep.txt", "requirements.txt", "collections/requirements.yml", "awx/configure.yml",
           "inventories/awx/hosts.yml")


def run(cmd, env=None, cwd=None, timeout=120):
    proc = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True, check=False,
                          timeout=timeout)
    output = (proc.stdout[-4000:], proc.stderr[-4000:])
    assert proc.returncode == 0, "%s failed (rc %d):\n%s\n%s" % ((cmd, proc.returncode) + output)
    return proc


def build_tarball(dest):
    run([BIN / "ansible-galaxy", "collection", "build", "--force", "--output-path", dest, ROOT],
        env=ansible_env(), cwd=ROOT)
    found = sorted(Path(dest).glob("kfocp-kubeflow-*.tar.gz"))
    assert len(found) == 1, found
    return found[0]


def clean_env(collections):
    """An environment that knows only `collections`: no project ansible.cfg, no .cache link."""
    config = Path(collections).parent / "ansible.cfg"
    config.write_text("[defaults]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "K8S_AUTH_", "KFOCP_"))}
    env.update({"ANSIBLE_COLLECTIONS_PATH": str(collections), "ANSIBLE_NOCOLOR": "1",
                "ANSIBLE_CONFIG": str(config), "ANSIBLE_DEPRECATION_WARNINGS": "0",
                "PATH": str(BIN) + os.pathsep + os.environ.get("PATH", "")})
    return env


def test_tarball_has_no_dev_files_and_installed_site_runs_by_fqcn(control_plane, kube, instance, tmp_path):
    tarball = build_tarball(tmp_path / "dist")
    with tarfile.open(tarball) as tar:
        names = [n[2:] if n.startswith("./") else n for n in tar.getnames()]
    dev = [n for n in names for bad in DEV_FILES
           if n == bad.rstrip("/") or n.startswith(bad if bad.endswith("/") else bad + "/") or n == bad]
    dev += [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert not dev, "development files in the tarball: %s" % sorted(set(dev))
    missing = [n for n in SHIPPED if n not in names]
    assert not missing, "missing from the tarball: %s" % missing

    collections = tmp_path / "collections"
    collections.mkdir()
    env = clean_env(collections)
    run([BIN / "ansible-galaxy", "collection", "install", "--no-deps", "-p", collections, tarball], env=env,
        cwd=tmp_path)
    listed = run([BIN / "ansible-galaxy", "collection", "list", "kfocp.kubeflow", "--format", "json"],
                 env=env, cwd=tmp_path).stdout
    assert list(json.loads(listed)) == [str(collections / "ansible_collections")], listed

    namespace = instance + "-dist"
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"hosts": {"cluster": dict(only_roles("scc"), **{
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable,
        "kfocp_kubeconfig": str(control_plane.kubeconfig), "kfocp_instance": instance,
        "kfocp_openshift_version": "4.20",  # the local plane has no ClusterVersion to read it from
        "scc_grants": [{"namespace": namespace, "serviceaccount": "mysql", "scc": "anyuid", "reason": "test"}],
    })}}}))
    first = run([BIN / "ansible-playbook", "-i", inventory, "kfocp.kubeflow.site"], env=env, cwd=tmp_path)
    assert str(collections) in run([BIN / "ansible-doc", "kfocp.kubeflow.apply"], env=env, cwd=tmp_path).stdout
    binding = kube.get(kube.resource("rbac.authorization.k8s.io/v1", "RoleBinding"), "kfocp-scc-anyuid-mysql",
                       namespace=namespace)
    assert binding is not None, first.stdout
    assert binding["metadata"]["labels"]["kfocp.io/instance"] == instance
    again = run([BIN / "ansible-playbook", "-i", inventory, "kfocp.kubeflow.site"], env=env, cwd=tmp_path)
    assert "changed=0" in again.stdout and "failed=0" in again.stdout, again.stdout

    run([BIN / "ansible-playbook", "-i", inventory, "kfocp.kubeflow.uninstall"], env=env, cwd=tmp_path)
    assert kube.get(kube.resource("v1", "Namespace"), namespace) is None or \
        kube.get(kube.resource("v1", "Namespace"), namespace)["status"].get("phase") == "Terminating"


def filter_names():
    """Every filter that any plugins/filter/*.py exports, loaded the way Ansible loads them."""
    sys.path.insert(0, str(ROOT / ".cache" / "collections"))
    names = []
    for path in sorted((ROOT / "plugins" / "filter").glob("*.py")):
        spec = importlib.util.spec_from_file_location(
            "ansible_collections.kfocp.kubeflow.plugins.filter." + path.stem, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        names += sorted(module.FilterModule().filters())
    return names


def ansible_doc(kind, names):
    proc = run([BIN / "ansible-doc", "-j", "-t", kind] + ["kfocp.kubeflow." + n for n in names],
               env=ansible_env(), cwd=ROOT)
    return json.loads(proc.stdout)


def test_ansible_doc_documents_every_module_filter_and_role():
    modules = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py") if p.stem != "__init__")
    filters = filter_names()
    roles = sorted(p.name for p in (ROOT / "roles").iterdir() if (p / "tasks").is_dir())
    assert modules and filters and roles
    undocumented = []
    for kind, names in (("module", modules), ("filter", filters)):
        docs = ansible_doc(kind, names)
        for name in names:
            doc = (docs.get("kfocp.kubeflow." + name) or {}).get("doc") or {}
            if not doc.get("short_description") or not doc.get("description"):
                where = "DOCUMENTATION" if kind == "module" else "plugins/filter/%s.yml" % name
                undocumented.append("%s %s (add %s)" % (kind, name, where))
            elif kind == "filter" and "_input" not in (doc.get("options") or {}):
                undocumented.append("filter %s: document its _input" % name)
    docs = ansible_doc("role", roles)
    for name in roles:
        entry = ((docs.get("kfocp.kubeflow." + name) or {}).get("entry_points") or {}).get("main") or {}
        if not entry.get("short_description") or not entry.get("options"):
            undocumented.append("role %s (add roles/%s/meta/argument_specs.yml)" % (name, name))
    assert not undocumented, "undocumented: %s" % undocumented


def test_runtime_action_group_holds_every_module_that_connects():
    """module_defaults for group/kfocp.kubeflow.kfocp set the connection once (site.yml does): the
    group holds exactly the modules that take the connection options, and every option the
    playbooks default for the group is one each of them takes."""
    runtime = yaml.safe_load((ROOT / "meta" / "runtime.yml").read_text())
    assert runtime["requires_ansible"].startswith(">=")
    modules = sorted(p.stem for p in (ROOT / "plugins" / "modules").glob("*.py") if p.stem != "__init__")
    options = dict((name.split(".")[-1], set((doc["doc"].get("options") or {})))
                   for name, doc in ansible_doc("module", modules).items())
    connecting = sorted(name for name, opts in options.items() if "kubeconfig" in opts)
    assert connecting and sorted(runtime["action_groups"]["kfocp"]) == connecting
    site = yaml.safe_load((ROOT / "playbooks" / "site.yml").read_text())[0]
    defaults = set(site["module_defaults"]["group/kfocp.kubeflow.kfocp"])
    for name in connecting:
        assert defaults <= options[name], "%s does not take %s" % (name, sorted(defaults - options[name]))


def test_changelog_fragments_lint_and_generated_changelog_is_current(tmp_path):
    run([BIN / "antsibull-changelog", "lint"], env=ansible_env(), cwd=ROOT)
    changes = yaml.safe_load((ROOT / "changelogs" / "changelog.yaml").read_text())
    version = yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"]
    assert version in changes["releases"], "changelogs/changelog.yaml has no release %s" % version
    released = set()
    for release in changes["releases"].values():
        released.update(release.get("fragments") or [])
    fragments = set(p.name for p in (ROOT / "changelogs" / "fragments").iterdir() if p.suffix in (".yml", ".yaml"))
    pending = sorted(fragments - released)
    assert not pending, ("fragments not in changelogs/changelog.yaml: %s. Run: antsibull-changelog release "
                         "--version %s --update-existing" % (pending, version))
    out = tmp_path / "CHANGELOG.rst"
    env = ansible_env()
    run([BIN / "antsibull-changelog", "generate", "--output", out, "--output-format", "rst"], env=env, cwd=ROOT)
    assert out.read_text() == (ROOT / "CHANGELOG.rst").read_text(), \
        "CHANGELOG.rst is not current. Run: antsibull-changelog generate"
