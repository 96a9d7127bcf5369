"""What site.yml and uninstall.yml meet when operator-sdk's ansible-operator runs them (watches.yaml,
operator/Dockerfile.ansible-operator), read in the source of the ansible-operator the project builds
(github.com/operator-framework/ansible-operator-plugins at the version
operator/hack/ansible-operator/go.mod pins, from the Go module cache; skipped without it)."""
import re
from pathlib import Path

import yaml
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader

from ansible_collections.kfocp.kubeflow.plugins.module_utils import client
from helpers import ROOT
# the module's directory, a fixture
from test_ansible_operator_source import source  # noqa: F401  # pylint: disable=unused-import

WATCHES = yaml.safe_load((ROOT / "operator" / "watches.yaml").read_text())
DOCKERFILE = (ROOT / "operator" / "Dockerfile.ansible-operator").read_text()


def _go(source, path):  # noqa: F811
    return (source / path).read_text()


def _copies(dockerfile):
    """{destination folder in the image: source folder of the repository} of the COPY lines."""
    return dict((dest.rstrip("/"), src.rstrip("/")) for src, dest in
                re.findall(r"^COPY (?:--\S+ )*(\S+) (\S+)$", dockerfile, re.M))


def test_a_relative_playbook_path_is_taken_from_the_images_working_directory(source):  # noqa: F811
    """watches.go resolves a relative playbook against os.Getwd(); the base image's working
    directory is $HOME = /opt/ansible and kfocp's image keeps it, so each playbook watches.yaml
    names is /opt/ansible/<path>, where the image copies the collection's playbooks."""
    watches_go = _go(source, "internal/ansible/watches/watches.go")
    assert "wd, err := os.Getwd()" in watches_go and "w.addRolePlaybookPaths(wd)" in watches_go
    assert re.search(r"if len\(path\) > 0 && !filepath.IsAbs\(path\) \{\s+return filepath.Join\(rootDir, path\)",
                     watches_go)
    base = _go(source, "images/ansible-operator/Dockerfile")
    assert re.search(r"^ENV HOME=/opt/ansible\b", base, re.M) and re.search(r"^WORKDIR \$\{HOME\}$", base, re.M)
    assert "--watches-file=./watches.yaml" in base
    assert not re.search(r"^WORKDIR", DOCKERFILE, re.M)
    copies = _copies(DOCKERFILE)
    assert copies["/opt/ansible/watches.yaml"] == "operator/watches.yaml"
    (watch,) = WATCHES
    for playbook in (watch["playbook"], watch["finalizer"]["playbook"]):
        assert not Path(playbook).is_absolute()
        in_image = Path("/opt/ansible") / playbook
        folder = copies[str(in_image.parent)]
        assert (ROOT / folder / in_image.name).is_file(), in_image


def test_the_finalizer_playbook_runs_on_deletion_with_the_finalizer_vars(source):  # noqa: F811
    """reconcile.go adds the finalizer on a reconcile of a live resource, and removes it only after
    a deletion run with no failed event; runner.go gives a finalizer run the watch's vars, then the
    finalizer's. kfocp's finalizer run is named after the resource as the converging run is."""
    reconcile = _go(source, "internal/ansible/controller/reconcile.go")
    assert re.search(r"\} else if finalizerExists \{.*?controllerutil.AddFinalizer\(u, finalizer\)", reconcile, re.S)
    assert re.search(r"if deleted && finalizerExists && runSuccessful \{\s+controllerutil.RemoveFinalizer", reconcile)
    assert "runSuccessful := len(failureMessages) == 0" in reconcile
    runner = _go(source, "internal/ansible/runner/runner.go")
    assert re.search(r"for k, v := range r.Vars \{\s+parameters\[k\] = v\s+\}\s+if r.isFinalizerRun\(u\) \{\s+"
                     r"for k, v := range r.Finalizer.Vars", runner)
    (watch,) = WATCHES
    finalizer = watch["finalizer"]
    assert finalizer["name"] and "/" in finalizer["name"]
    assert dict(watch["vars"], **finalizer["vars"])["kfocp_instance"] == watch["vars"]["kfocp_instance"]


def test_kfocps_client_reads_the_kubeconfig_ansible_operator_hands_the_run(source):  # noqa: F811
    """runner.go puts its proxy's kubeconfig in K8S_AUTH_KUBECONFIG and KUBECONFIG of the run;
    kfocp's client takes K8S_AUTH_KUBECONFIG as the kubeconfig option."""
    runner = _go(source, "internal/ansible/runner/runner.go")
    assert re.search(r'EnvVars: map\[string\]string\{\s+"K8S_AUTH_KUBECONFIG": kubeconfig,\s+"KUBECONFIG":\s+kubeconfig,',
                     runner)
    assert client.auth_from({}, {"K8S_AUTH_KUBECONFIG": "/tmp/proxy-kubeconfig"}) == {
        "kubeconfig": "/tmp/proxy-kubeconfig"}


def test_the_playbooks_hosts_match_the_inventory_ansible_operator_writes(source, tmp_path):  # noqa: F811
    """inputdir.go writes inventory/hosts as one explicit `localhost ansible_connection=local ...`
    line (without ANSIBLE_INVENTORY); the playbooks' default pattern `all` matches that host, as
    ansible-core's inventory reads it."""
    inputdir = _go(source, "internal/ansible/runner/internal/inputdir/inputdir.go")
    line = re.search(r'hosts := "([^"]+)"', inputdir).group(1)
    assert line == "localhost ansible_connection=local"
    assert 'hosts = fmt.Sprintf("%s ansible_python_interpreter=%s", hosts, "{{ansible_playbook_python}}")' in inputdir
    hosts = tmp_path / "hosts"
    hosts.write_text(line + " ansible_python_interpreter={{ansible_playbook_python}}\n")
    inventory = InventoryManager(loader=DataLoader(), sources=[str(hosts)])
    for playbook in ("site.yml", "uninstall.yml"):
        (play,) = [p for p in yaml.safe_load((ROOT / "playbooks" / playbook).read_text()) if "hosts" in p][:1]
        assert play["hosts"] == "{{ kfocp_hosts | default('all') }}"
    assert [h.name for h in inventory.get_hosts("all")] == ["localhost"]


def test_the_proxy_injects_owners_only_into_creates_and_kfocp_applies(source):  # noqa: F811
    """proxy/inject_owner.go injects owner references (or the owner annotations) into POST requests
    only; kfocp's client writes with server-side apply (PATCH), and the roles call kubernetes.core.k8s
    only to patch or delete, so nothing kfocp writes under ansible-operator gets an owner."""
    inject = _go(source, "internal/ansible/proxy/inject_owner.go")
    cases = re.findall(r"^\tcase (http\.\w+):", inject.split("func (i *injectOwnerReferenceHandler) ServeHTTP")[1], re.M)
    assert cases == ["http.MethodPost"]
    calls = []

    class Recorder(client.Client):
        def __init__(self):  # pylint: disable=super-init-not-called
            pass

        def request(self, method, path, **kwargs):
            calls.append((method, path, kwargs.get("content_type")))

    res = client.Resource("v1", "ConfigMap", "configmaps", True, ["patch"])
    Recorder().apply(res, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"}}, "kfocp")
    assert calls == [("PATCH", "/api/v1/namespaces/n/configmaps/c", "application/apply-patch+yaml")]
    states = []
    playbooks = [ROOT / "playbooks" / "site.yml", ROOT / "playbooks" / "uninstall.yml"]
    for path in list((ROOT / "roles").glob("*/tasks/*.yml")) + playbooks:
        text = yaml.safe_load(path.read_text()) or []
        stack = list(text)
        while stack:
            task = stack.pop()
            if not isinstance(task, dict):
                continue
            for key in ("block", "rescue", "always", "tasks", "pre_tasks", "post_tasks"):
                stack.extend(task.get(key) or [])
            if "kubernetes.core.k8s" in task:
                states.append(task["kubernetes.core.k8s"].get("state", "present"))
    assert set(states) <= {"patched", "absent"}, states
