"""No secret value is written where it should not be.

The secrets: the OAuthClient secret and cookie secret the auth role generates, the S3 keys of the
components role's external Argo (in a Secret the role only names), the token of the operator's
service account (what its playbook runs use) and the client key of a kubeconfig. The places:
every file ansible-runner writes under a run's private data directory (env/, artifacts/: job
events, stdout, the command with its environment), the operator's log, Kubernetes Events, the
Kubeflow CR's status, and the output of ansible-playbook -vvv. The test greps for the values.
"""
import base64
import json
import os
import threading
import uuid
from pathlib import Path

from helpers import ROOT, roles_off_except

FIXTURE = str(ROOT / "tests" / "fixtures" / "manifests")


class Harvest:
    """Reads every file of every ansible-runner private data directory the operator makes under
    `root` (kfocp-run-*), every few tens of milliseconds while it runs, and keeps what it saw: the
    operator removes a run's directory only when the run has ended."""

    def __init__(self, root):
        self.root = Path(root)
        self.seen = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            self.sweep()
            self.stop.wait(0.03)

    def sweep(self):
        for run in self.root.glob("kfocp-run-*"):
            for folder, _dirs, names in os.walk(run):  # a directory removed meanwhile is skipped
                for name in names:
                    path = Path(folder) / name
                    try:
                        text = path.read_text(errors="replace")
                    except OSError:
                        continue  # removed between the listing and the read
                    self.seen.setdefault(str(path.relative_to(self.root)), set()).add(text)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(10)
        self.sweep()

    def files(self, suffix):
        return [key for key in self.seen if key.endswith(suffix)]

    def texts(self):
        return [(key, text) for key, texts in self.seen.items() for text in texts]


def leaks(secrets, places):
    """[(secret name, place)] for every secret value found in a place's text."""
    found = []
    for place, text in places:
        for name, value in secrets.items():
            if value and value in text:
                found.append((name, place))
    return found


def kubeconfig_secrets(path):
    """The credentials in a kubeconfig: its token, or its client key (as stored and as PEM)."""
    user = json.loads(Path(path).read_text())["users"][0]["user"]
    out = {}
    if user.get("token"):
        out["service account token"] = user["token"]
    if user.get("client-key-data"):
        out["kubeconfig client key (base64)"] = user["client-key-data"]
        pem = base64.b64decode(user["client-key-data"]).decode().splitlines()
        out["kubeconfig client key (PEM)"] = pem[1]
    return out


def s3_secret(kube, namespace, name):
    """The S3 keys of an external artifact repository, in a Secret as its owner makes it."""
    keys = {"accesskey": "AKIA" + uuid.uuid4().hex[:16].upper(), "secretkey": uuid.uuid4().hex + uuid.uuid4().hex[:8]}
    mesh_namespace(kube, namespace, "storage-admin")
    kube.apply(kube.resource("v1", "Secret"), {"apiVersion": "v1", "kind": "Secret",
                                               "metadata": {"name": name, "namespace": namespace},
                                               "stringData": keys}, "storage-admin", force=True)
    return {"S3 access key": keys["accesskey"], "S3 secret key": keys["secretkey"]}


def oauth_secrets(kube, namespace):
    secret = kube.get(kube.resource("v1", "Secret"), "kubeflow-oauth", namespace)
    assert secret is not None, "the auth role made no Secret kubeflow-oauth in %s" % namespace
    return dict(("OAuth %s" % key, base64.b64decode(value).decode()) for key, value in secret["data"].items())


def mesh_namespace(kube, name, manager="mesh-owner"):
    """The namespace of the existing Istio (flavour external) that the auth role protects."""
    kube.apply(kube.resource("v1", "Namespace"), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
               manager, force=True)


def test_operator_runs_leave_no_secret_in_artifacts_log_events_or_status(kfocp_operator, kube):
    name = "kf-secrets-" + uuid.uuid4().hex[:6]
    mesh, components = name + "-mesh", name + "-kf"
    mesh_namespace(kube, mesh)
    secrets = s3_secret(kube, components, "artifact-store")
    spec = dict(roles_off_except("service_mesh", "auth", "components"),
                serviceMeshFlavour="external",
                serviceMeshExternal={"namespace": mesh, "gateway": "istio-ingressgateway", "api": "ossm2"},
                authHost="kubeflow.apps.secrets.example.com", authClientId=name,
                componentsSource="dir", componentsDir=FIXTURE, componentsRelease="v1.10.2", componentsNamespace=components,
                componentsComponents={"pipelines": "managed"}, componentsArgoExternal=True,
                componentsArgoS3={"endpoint": "s3.example.com", "bucket": "pipelines", "secret": "artifact-store"})
    try:
        with Harvest(kfocp_operator.runs) as harvest:
            kfocp_operator.create(name, spec)
            cr = kfocp_operator.settled(name, 1)
        assert [c for c in cr["status"]["conditions"] if c["type"] == "Ready"][0]["status"] == "True", cr["status"]
        secrets.update(oauth_secrets(kube, mesh))
        secrets.update(kubeconfig_secrets(kfocp_operator.kubeconfig))
        assert len(secrets) == 5, sorted(secrets)

        # the harvest saw the runs' files: the env/ files, the command with its environment, events, stdout
        for suffix in ("env/extravars", "env/envvars", "/command", "/stdout", ".json"):
            assert harvest.files(suffix), "no %s seen among %s" % (suffix, sorted(harvest.seen)[:20])
        assert any("K8S_AUTH_KUBECONFIG" in text for key, text in harvest.texts() if key.endswith("env/envvars")), \
            "the runs' environment was not seen"
        events = kube.list(kube.resource("v1", "Event"))
        places = harvest.texts() + [
            ("operator log", kfocp_operator.proc.log_path.read_text(errors="replace")),
            ("Events", json.dumps(events)),
            ("Kubeflow CR", json.dumps(kfocp_operator.get(name)))]
        found = leaks(secrets, places)
        print("operator run: %d secrets looked for in %d runner files (%d versions), the operator log, %d Events and "
              "the CR; found %d" % (len(secrets), len(harvest.seen), len(harvest.texts()), len(events), len(found)))
        assert not found, found
    finally:
        kfocp_operator.delete(name)


def test_vvv_output_and_runner_artifacts_hold_no_secret(playbook, kube, control_plane, instance, tmp_path):
    mesh, components = instance + "-mesh", instance + "-kf"
    mesh_namespace(kube, mesh)
    secrets = s3_secret(kube, components, "artifact-store")
    extra = {"kfocp_instance": instance, "kfocp_roles": ["kfocp.kubeflow.service_mesh", "kfocp.kubeflow.auth",
                                                         "kfocp.kubeflow.components"],
             "service_mesh_flavour": "external",
             "service_mesh_external": {"namespace": mesh, "gateway": "istio-ingressgateway", "api": "ossm2"},
             "auth_host": "kubeflow.apps.secrets.example.com", "auth_client_id": instance,
             "components_namespace": components, "components_components": {"pipelines": "managed"},
             "components_argo_external": True,
             "components_argo_s3": {"endpoint": "s3.example.com", "bucket": "pipelines", "secret": "artifact-store"}}
    roles = str(ROOT / "tests" / "fixtures" / "playbooks" / "roles.yml")
    try:
        first = playbook(roles, extra, verbosity=3)
        assert first.rc == 0, first.stdout[-3000:]
        secrets.update(oauth_secrets(kube, mesh))
        secrets.update(kubeconfig_secrets(control_plane.kubeconfig))
        # the secrets exist now: read back, kept, and re-applied by a second run
        second = playbook(roles, extra, verbosity=3)
        assert second.rc == 0 and second.changed == 0, second.stdout[-3000:]
        files = [path for path in Path(tmp_path).rglob("*") if path.is_file()]
        places = [(str(path.relative_to(tmp_path)), path.read_text(errors="replace")) for path in files]
        places += [("-vvv output", first.stdout + second.stdout)]
        # -vvv's own lines: kfocp's modules say how they ran (plugins/plugin_utils/direct.py)
        assert "in a process forked from the worker" in first.stdout, "not the output of -vvv"
        found = leaks(secrets, places)
        print("-vvv runs: %d secrets looked for in %d runner files and %d lines of output; found %d"
              % (len(secrets), len(files), (first.stdout + second.stdout).count("\n"), len(found)))
        assert not found, found
    finally:
        removed = playbook("uninstall", {"kfocp_instance": instance})
        assert removed.rc == 0, removed.stdout[-3000:]


def test_a_changed_secret_shows_neither_its_old_nor_its_new_value_in_a_vvv_diff(playbook, kube, instance, tmp_path):
    """The OAuth client secret is changed in its Secret (a rotation by an administrator): the next
    run carries it to the OAuthClient, and its -vvv --diff output and runner artifacts show that
    the field changed, but neither the old value nor the new, in clear or base64."""
    mesh = instance + "-mesh"
    mesh_namespace(kube, mesh)
    extra = {"kfocp_instance": instance, "kfocp_roles": ["kfocp.kubeflow.service_mesh", "kfocp.kubeflow.auth"],
             "service_mesh_flavour": "external",
             "service_mesh_external": {"namespace": mesh, "gateway": "istio-ingressgateway", "api": "ossm2"},
             "auth_host": "kubeflow.apps.rotate.example.com", "auth_client_id": instance}
    roles = str(ROOT / "tests" / "fixtures" / "playbooks" / "roles.yml")
    try:
        first = playbook(roles, extra)
        assert first.rc == 0, first.stdout[-3000:]
        old = oauth_secrets(kube, mesh)["OAuth client_secret"]
        new = "rotated" + uuid.uuid4().hex
        kube.apply(kube.resource("v1", "Secret"), {
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kubeflow-oauth", "namespace": mesh},
            "stringData": {"client_secret": new}}, "rotation-admin", force=True)
        start = len(list(Path(tmp_path).rglob("*")))
        second = playbook(roles, extra, verbosity=3, diff=True)
        assert second.rc == 0, second.stdout[-3000:]
        client = kube.get(kube.resource("oauth.openshift.io/v1", "OAuthClient"), instance)
        assert client["secret"] == new, "the rotated secret did not reach the OAuthClient"
        files = [path for path in Path(tmp_path).rglob("*") if path.is_file()]
        places = [(str(path.relative_to(tmp_path)), path.read_text(errors="replace")) for path in files]
        places += [("-vvv --diff output", second.stdout)]
        secrets = {"old client secret": old, "old client secret (base64)": base64.b64encode(old.encode()).decode(),
                   "new client secret": new, "new client secret (base64)": base64.b64encode(new.encode()).decode()}
        found = leaks(secrets, places)
        print("rotation: %d secret forms looked for in %d files (%d before the run) and %d lines of -vvv --diff "
              "output; found %d" % (len(secrets), len(files), start, second.stdout.count("\n"), len(found)))
        assert not found, found
        assert "secret: '******** (changed)'" in second.stdout, "the diff does not show that the secret changed"
    finally:
        removed = playbook("uninstall", {"kfocp_instance": instance})
        assert removed.rc == 0, removed.stdout[-3000:]
