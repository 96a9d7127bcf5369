"""AWX: the configuration playbook's data, the execution environment, and the playbooks run the way
AWX runs them - ansible-runner, an API token in K8S_AUTH_* variables, no kubeconfig anywhere."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from helpers import ROOT, only_roles

BIN = Path(sys.executable).parent
AWX = yaml.safe_load((ROOT / "awx" / "vars" / "main.yml").read_text())


def run(cmd, env=None, cwd=ROOT, timeout=120):
    proc = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, capture_output=True, text=True, check=False,
                          timeout=timeout)
    assert proc.returncode == 0, "%s failed:\n%s\n%s" % (cmd, proc.stdout[-4000:], proc.stderr[-4000:])
    return proc


def test_job_templates_workflow_and_survey_point_at_what_exists():
    templates = AWX["kfocp_awx_job_templates"]
    assert {t["name"].split()[-1] for t in templates} >= {"site", "profiles", "components", "uninstall", "status"}
    missing = [t["playbook"] for t in templates if not (ROOT / t["playbook"]).is_file()]
    assert not missing, "job templates point at playbooks that do not exist: %s" % missing
    status = [t for t in templates if t["playbook"].endswith("status.yml")][0]
    assert status["job_type"] == "check", "status.yml must run as a check job"
    names = {t["name"] for t in templates}
    nodes = AWX["kfocp_awx_workflow_nodes"]
    identifiers = {n["identifier"] for n in nodes}
    for node in nodes:
        assert node["unified_job_template"]["name"] in names, node
        for nxt in (node.get("related") or {}).get("success_nodes") or []:
            assert nxt["identifier"] in identifiers, nxt
    assert (ROOT / AWX["kfocp_awx_inventory_source_path"]).is_file()
    for question in AWX["kfocp_awx_survey"]["spec"]:
        assert question["variable"].startswith("kfocp_"), question
        assert question["type"] in ("text", "multiplechoice", "integer", "password", "multiselect"), question
        if question["type"] == "multiplechoice":
            assert question["default"] in question["choices"], question


def test_credential_type_injects_k8s_auth_variables_and_a_ca_file():
    tasks = yaml.safe_load((ROOT / "awx" / "configure.yml").read_text())[0]["tasks"]
    ctype = [t for t in tasks if "awx.awx.credential_type" in t][0]["awx.awx.credential_type"]
    env = ctype["injectors"]["env"]
    assert {"K8S_AUTH_HOST", "K8S_AUTH_API_KEY", "K8S_AUTH_SSL_CA_CERT"} <= set(env)
    assert "tower.filename.ca_cert" in env["K8S_AUTH_SSL_CA_CERT"]
    assert "template.ca_cert" in ctype["injectors"]["file"]
    fields = {f["id"]: f for f in ctype["inputs"]["fields"]}
    assert fields["api_key"]["secret"] is True
    credential = [t for t in tasks if "awx.awx.credential" in t][0]
    assert credential["no_log"] is True


def awx_inject(ctype, inputs, private_dir):
    """The environment AWX gives a job for a credential of this type, as AWX builds it
    (ansible/awx awx/main/models/credential/__init__.py CredentialType.inject_credential, commit
    000dbedaebf1f93be00de342380a08ccb3da99b8): inputs left empty are not in the template namespace,
    a boolean left unset is False, each file injector is written and named by tower.filename.<name>,
    and every template renders in Jinja's immutable sandbox."""
    from types import SimpleNamespace

    from jinja2.sandbox import ImmutableSandboxedEnvironment

    tower = SimpleNamespace()
    namespace = {"tower": tower}
    namespace.update((k, v) for k, v in inputs.items() if isinstance(v, bool) or len(v))
    for field in ctype["inputs"]["fields"]:
        if field["type"] == "boolean" and field["id"] not in inputs:
            namespace[field["id"]] = False
    sandbox = ImmutableSandboxedEnvironment()
    tower.filename = SimpleNamespace()
    for label, template in ctype["injectors"].get("file", {}).items():
        path = private_dir / label
        path.write_text(sandbox.from_string(template).render(**namespace))
        setattr(tower.filename, label.split(".")[1], str(path))
    return dict((name, sandbox.from_string(template).render(**namespace))
                for name, template in ctype["injectors"]["env"].items())


def credential_type():
    """The credential type as configure.yml gives it to AWX (Ansible's own templating removes the raw tags)."""
    from jinja2 import Environment

    tasks = yaml.safe_load((ROOT / "awx" / "configure.yml").read_text())[0]["tasks"]
    ctype = [t for t in tasks if "awx.awx.credential_type" in t][0]["awx.awx.credential_type"]
    untag = Environment()
    for section in ("file", "env"):
        ctype["injectors"][section] = dict((k, untag.from_string(v).render())
                                           for k, v in ctype["injectors"][section].items())
    return ctype


@pytest.mark.parametrize("inputs,verify,ca", [
    ({"host": "https://api.example:6443", "api_key": "t"}, True, None),
    ({"host": "https://api.example:6443", "api_key": "t", "ca_cert": "PEM"}, True, "PEM"),
    ({"host": "https://api.example:6443", "api_key": "t", "insecure_skip_tls_verify": True}, False, None),
    ({"host": "https://api.example:6443", "api_key": "t", "insecure_skip_tls_verify": False, "ca_cert": ""}, True, None),
])
def test_a_credential_verifies_the_api_server_unless_told_not_to(inputs, verify, ca, tmp_path):
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import auth_from

    auth = auth_from({}, awx_inject(credential_type(), inputs, tmp_path))
    assert auth["host"] == inputs["host"] and auth["api_key"] == "t"
    assert auth["validate_certs"] is verify
    if ca is None:
        assert "ca_cert" not in auth  # no empty CA file, which would fail every TLS handshake
    else:
        assert Path(auth["ca_cert"]).read_text() == ca


def test_awx_inventory_sets_no_kubeconfig_and_configure_playbook_parses():
    inventory = json.loads(run([BIN / "ansible-inventory", "-i", ROOT / "inventories" / "awx" / "hosts.yml",
                                "--list"]).stdout)
    hostvars = inventory["_meta"]["hostvars"]
    assert hostvars and all("kfocp_kubeconfig" not in v for v in hostvars.values()), hostvars
    run([BIN / "ansible-playbook", "--syntax-check", ROOT / "awx" / "configure.yml"])


def test_ansible_builder_creates_the_build_context(tmp_path):
    for name in ("execution-environment.yml", "requirements.txt", "bindep.txt"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "awx").mkdir()
    shutil.copy(ROOT / "awx" / "ee-collections.yml", tmp_path / "awx" / "ee-collections.yml")
    run([BIN / "ansible-galaxy", "collection", "build", "--force", "--output-path", tmp_path / "dist", ROOT])
    context = tmp_path / "context"
    run([BIN / "ansible-builder", "create", "-f", tmp_path / "execution-environment.yml", "-c", context,
         "--output-filename", "Containerfile"], cwd=tmp_path)
    containerfile = (context / "Containerfile").read_text()
    assert (context / "_build" / "requirements.txt").read_text() == (ROOT / "requirements.txt").read_text()
    assert (context / "_build" / "bindep.txt").read_text() == (ROOT / "bindep.txt").read_text()
    assert yaml.safe_load((context / "_build" / "requirements.yml").read_text()) == \
        yaml.safe_load((ROOT / "awx" / "ee-collections.yml").read_text())
    assert list((context / "_build" / "kfocp").glob("kfocp-kubeflow-*.tar.gz"))
    assert "ansible-galaxy collection install --no-deps" in containerfile
    assert "python3.11" in containerfile


def serviceaccount_token(control_plane, name):
    """A service account bound to cluster-admin, and a token for it (what an AWX credential holds)."""
    control_plane.kubectl("create", "namespace", name)
    control_plane.kubectl("-n", name, "create", "serviceaccount", "awx")
    control_plane.kubectl("create", "clusterrolebinding", name, "--clusterrole=cluster-admin",
                          "--serviceaccount=%s:awx" % name)
    return control_plane.serviceaccount_token(name, "awx")


def runner(tmp_path, playbook, env_vars, extravars, check=False):
    """`ansible-runner run` the way AWX does: a private data dir, env/envvars, env/extravars, and a
    process environment that holds no kubeconfig and no HOME with ~/.kube."""
    private = tmp_path / ("pdd-" + Path(playbook).stem + ("-check" if check else ""))
    (private / "env").mkdir(parents=True)
    (private / "env" / "envvars").write_text(yaml.safe_dump(env_vars))
    (private / "env" / "extravars").write_text(yaml.safe_dump(extravars))
    if check:
        (private / "env" / "cmdline").write_text("--check --diff")
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    process_env = {"PATH": str(BIN) + os.pathsep + "/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    proc = subprocess.run([str(BIN / "ansible-runner"), "run", str(private), "-p", playbook, "--project-dir",
                           str(ROOT), "--inventory", str(ROOT / "inventories" / "awx" / "hosts.yml"),
                           "--ident", "job"], env=process_env, capture_output=True, text=True, check=False,
                          timeout=300)
    artifacts = private / "artifacts" / "job"
    events = [json.loads(p.read_text()) for p in sorted((artifacts / "job_events").glob("*.json"),
                                                        key=lambda p: int(p.name.split("-")[0]))]
    return proc, events, artifacts


def test_playbooks_run_with_only_k8s_auth_variables(control_plane, kube, instance, tmp_path):
    token = serviceaccount_token(control_plane, instance + "-awx")
    ca = tmp_path / "ca.crt"
    shutil.copy(control_plane.dir / "ca.crt", ca)
    env_vars = {"K8S_AUTH_HOST": control_plane.server, "K8S_AUTH_API_KEY": token, "K8S_AUTH_SSL_CA_CERT": str(ca)}
    namespace = instance + "-team"
    extravars = dict(only_roles("scc"), kfocp_instance=instance, kfocp_status_json="",
                     scc_grants=[{"namespace": namespace, "serviceaccount": "mysql", "scc": "anyuid",
                                  "reason": "MySQL runs as UID 999"}])

    proc, events, artifacts = runner(tmp_path, "playbooks/site.yml", env_vars, extravars)
    assert proc.returncode == 0, proc.stdout[-6000:]
    assert not (tmp_path / "home" / ".kube").exists()
    binding = kube.get(kube.resource("rbac.authorization.k8s.io/v1", "RoleBinding"), "kfocp-scc-anyuid-mysql",
                       namespace=namespace)
    assert binding["metadata"]["labels"]["kfocp.io/instance"] == instance

    # the event stream, as the AWX UI shows it: task names, and per-object results of the apply task
    ok = [e for e in events if e["event"] == "runner_on_ok"]
    names = [e["event_data"]["task"] for e in ok]
    assert "Apply the SCC grants and revoke the ones no longer listed" in names, names
    applied = [e["event_data"]["res"] for e in ok if e["event_data"]["task_action"] == "kfocp.kubeflow.apply"]
    assert applied and applied[0]["summary"]["created"] == 2
    assert {(o["kind"], o.get("namespace"), o["name"], o["action"]) for o in applied[0]["objects"]} == {
        ("Namespace", None, namespace, "created"),
        ("RoleBinding", namespace, "kfocp-scc-anyuid-mysql", "created")}
    # the token is never written to the job's output or events
    logged = (artifacts / "stdout").read_text() + "".join(json.dumps(e) for e in events)
    assert token not in logged

    proc, events, unused_out = runner(tmp_path, "playbooks/status.yml", env_vars, extravars, check=True)
    assert proc.returncode == 0, proc.stdout[-6000:]
    report = [e["event_data"]["res"] for e in events if e["event"] == "runner_on_ok"
              and e["event_data"]["task"] == "Build the drift report"][0]["ansible_facts"]["kfocp_status"]
    assert report["in_sync"] is True and report["summary"]["in-sync"] == 2, report

    # a token that is not valid is refused: the credentials really come from K8S_AUTH_*
    bad_env = dict(env_vars, K8S_AUTH_API_KEY="x")
    proc, events, unused_out = runner(tmp_path / "bad", "playbooks/uninstall.yml", bad_env, {"kfocp_instance": instance})
    assert proc.returncode != 0 and "401" in proc.stdout + json.dumps(events)[-20000:]
    assert kube.get(kube.resource("v1", "Namespace"), namespace) is not None

    proc, unused_events, unused_out = runner(tmp_path, "playbooks/uninstall.yml", env_vars, {"kfocp_instance": instance})
    assert proc.returncode == 0, proc.stdout[-6000:]
    gone = kube.get(kube.resource("v1", "Namespace"), namespace)
    assert gone is None or gone["metadata"].get("deletionTimestamp")
