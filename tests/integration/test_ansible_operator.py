"""operator-sdk's ansible-operator, built from its Go module, runs the collection through the
shipped operator/watches.yaml against the real local API server: the sample Kubeflow resource
(operator/config/samples), with every role of site.yml on, converges to the same objects as with
kfocp's own operator, object by object (the nested keys of components and namespace_policies
arrive as written); a spec value holding a Jinja expression arrives as text; a failed role shows
in Degraded; the status comes from kfocp.kubeflow.cr_status, and the deletion runs the uninstall
finalizer.

What the roles wait for is played as on a cluster (tests/helpers.py): OLM installs each
Subscription's CSV and the mesh operator reports its control plane Ready (PlayOperators), the
installer's worker MachineSet is there to clone (play_installer_worker_machineset), and the
cluster's Authentication and CloudCredential are those of an STS cluster with Kubeflow's PodDefault
served (the data lake test's dress and install_poddefault_crd). Every role on makes cluster-wide
singletons with fixed names (ClusterAutoscaler default, IstioCNI default, the GPU ClusterPolicy), so
the module has a control plane of its own.

ansible-operator listens on fixed ports (its Ansible proxy on 8888, its event API on 5050), so a
file lock keeps runs on one machine one at a time.
"""
import base64
import contextlib
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid

import pytest
import yaml

from clusterdiff import compare, report, snapshot
from helpers import (COLLECTIONS, ROOT, PlayOperators, ensure_namespace, isolated_policies, labelled_objects,
                     play_installer_worker_machineset, wait_for)
from test_data_lake import ACCOUNT, RENDER, dress, install_poddefault_crd

sys.path.insert(0, str(ROOT / "operator"))
sys.path.insert(0, str(ROOT / "operator" / "hack"))

import build  # noqa: E402
from cluster import ClusterError, cache_root, free_port  # noqa: E402
from kfocp_operator.playbook import playbook_roles  # noqa: E402
from kfocp_operator.spec import SpecModel  # noqa: E402

# Every role on makes cluster-wide singletons with fixed names: a control plane of the module's own.
OWN_PLANE = True
CRD = ROOT / "operator" / "config" / "crd" / "bases" / "kfocp.io_kubeflows.yaml"
WATCHES = ROOT / "operator" / "watches.yaml"
SAMPLE = ROOT / "operator" / "config" / "samples" / "kfocp_v1alpha1_kubeflow.yaml"
FIXED_PORTS = (8888, 5050)
# What the image copies of the collection (operator/Dockerfile.ansible-operator: COPY <path> <its path there>).
IMAGE_COLLECTION_DIR = "/opt/ansible/collections/ansible_collections/kfocp/kubeflow/"
IMAGE_COLLECTION = [line.split()[-2] for line in (ROOT / "operator" / "Dockerfile.ansible-operator").read_text().splitlines()
                    if line.startswith("COPY ") and line.split()[-1].startswith(IMAGE_COLLECTION_DIR)]
# Every role of site.yml, in order: the sample resource runs them all.
ROLES = tuple(playbook_roles(ROOT / "playbooks" / "site.yml"))
# A spec value that Ansible would run if it took it as a template.
JINJA = "{{ lookup('pipe', 'id') }}"
COMPONENTS = yaml.safe_load((ROOT / "inventories" / "local" / "group_vars" / "all" / "components.yml").read_text())


@pytest.fixture(scope="module")
def ansible_operator():
    try:
        return build.ansible_operator()
    except ClusterError as err:
        pytest.skip("ansible-operator did not build from its Go module: %s" % err)


@pytest.fixture(scope="module")
def kubeflow_crd(control_plane, kube):
    control_plane.kubectl("apply", "--server-side", "--field-manager=kfocp-test", "--force-conflicts", "-f", str(CRD))
    control_plane.wait_established("kubeflows.kfocp.io")
    kube.forget()


@contextlib.contextmanager
def _fixed_ports_lock():
    path = cache_root().parent / "ansible-operator.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            for port in FIXED_PORTS:
                with socket.socket() as sock:
                    if sock.connect_ex(("127.0.0.1", port)) == 0:
                        pytest.fail("port %d is in use: ansible-operator needs it (its proxy and event API "
                                    "ports are fixed); stop what listens there" % port)
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _spec(name, team, on=ROLES):
    """The sample resource's spec, with what the local control plane needs, and every role but
    those in `on` switched off (<role>State: absent)."""
    model = SpecModel.from_collection(ROOT)
    crd = yaml.safe_load(CRD.read_text())
    fields = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    spec = dict(yaml.safe_load(SAMPLE.read_text())["spec"])
    for role in playbook_roles(ROOT / "playbooks" / "site.yml"):
        field = model.camel("%s_state" % role)
        if role not in on and field in fields:
            spec[field] = "absent"
    # the local control plane has no ClusterVersion: the resource names the OpenShift version
    spec.update(kfocpOpenshiftVersion="4.20", sccGrantsExtra=list(spec.get("sccGrantsExtra") or []) + [
        {"namespace": team, "serviceaccount": "trainer", "scc": "nonroot-v2", "reason": JINJA}])
    if "components" in on:
        # the fixture tree of the local inventory, in a namespace of this test's own
        spec.update(componentsSource="dir", componentsDir=str(ROOT / "tests" / "fixtures" / "manifests"),
                    componentsRelease="v1.10.2",
                    componentsComponents=COMPONENTS["components_components"], componentsNamespace=name + "-kubeflow")
    if "namespace_policies" in on:
        # only this test's namespaces (its selector has the label key app.kubernetes.io/part-of,
        # which ansible-operator's snake_case conversion renamed)
        policies = isolated_policies(name)
        spec.update(namespacePoliciesMeshMode="member",
                    namespacePoliciesSelector=policies["namespace_policies_selector"],
                    namespacePoliciesWhitelistNamespaces=policies["namespace_policies_whitelist_namespaces"])
    if "profiles" in on:
        spec.update(profilesList=[{"name": name + "-team", "owner": {"user": "alice@example.com"}}])
    if "gpu" in on:
        # one GPU MachineSet, cloned from the installer's worker MachineSet; the autoscaler scales it
        spec.update(gpuMachinesets=[{"name": name + "-a10g", "accelerator": "nvidia-a10g",
                                     "instanceType": {"aws": "g5.2xlarge"}, "maxReplicas": 2}])
    if "data_lake" in on:
        # the role's switch (off by default), and each profile's IAM role
        spec.update(dataLakeEnabled=True,
                    dataLakeAwsRoleTemplate="arn:aws:iam::%s:role/kubeflow-{namespace}" % ACCOUNT)
    return spec


def _kubeflow(kube, name, namespace):
    return kube.get(kube.resource("kfocp.io/v1alpha1", "Kubeflow"), name, namespace)


def _condition(cr, kind):
    for cond in ((cr or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == kind:
            return cond
    return {}


def _ready(kube, name, namespace):
    cr = _kubeflow(kube, name, namespace)
    return cr if _condition(cr, "Ready").get("status") == "True" else None


def _refused(kube, name, namespace):
    """True when the resource's spec was refused before any change (Degraded, InvalidSpec)."""
    return _condition(_kubeflow(kube, name, namespace), "Degraded").get("reason") == "InvalidSpec"


def owned_objects(kube, instance):
    """{(apiVersion, kind, namespace, name): set label} of everything labelled as `instance`'s,
    and of others' objects that carry its patch label."""
    found = {}
    for (api_version, kind), res in kube.resources(refresh=True).items():
        if "list" not in res.verbs or kind in ("Event", "ComponentStatus"):
            continue
        for selector, label in (("kfocp.io/instance=%s" % instance, "kfocp.io/set"),
                                ("patched.kfocp.io/%s" % instance, "patched.kfocp.io/%s" % instance)):
            try:
                items = kube.list(res, label_selector=selector)
            except Exception:  # pylint: disable=broad-except  # kinds that cannot be listed
                continue
            for item in items:
                meta = item["metadata"]
                if not meta.get("deletionTimestamp"):
                    key = (api_version, kind, meta.get("namespace", ""), meta["name"])
                    found[key] = (meta.get("labels") or {}).get(label)
    return found


def _stop(proc, log_path):
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)
    print("---- %s (tail) ----\n%s" % (log_path.name, log_path.read_text(errors="replace")[-6000:]))


def _health(port, path):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d%s" % (port, path), timeout=5) as resp:
            return resp.status
    except OSError:
        return 0


def _converge_and_delete(control_plane, kube, cr, start, inspect=None):
    """Start an operator, create `cr`, wait for Ready, read what it owns (every object labelled or
    patched as its instance's, as clusterdiff compares them), delete `cr`, and wait until the
    finalizer has removed it. `inspect(kube)` runs while the objects are there. Returns (the Ready
    resource, the objects)."""
    name, namespace = cr["metadata"]["name"], cr["metadata"]["namespace"]
    proc, log_path, ready = start()
    try:
        wait_for(lambda: proc.poll() is not None or ready(), 120, interval=0.5, what="the operator to be ready")
        assert proc.poll() is None, log_path.read_text(errors="replace")[-4000:]
        control_plane.kubectl("create", "-f", "-", input=json.dumps(cr))
        try:
            # a spec the pre-flight refuses is not retried into Ready: stop at once
            done = wait_for(lambda: proc.poll() is not None or _ready(kube, name, namespace)
                            or _refused(kube, name, namespace), 600, interval=1,
                            what="Ready=True on Kubeflow %s/%s" % (namespace, name))
            assert not (done is True and proc.poll() is None), "the spec was refused"
        except AssertionError:
            raise AssertionError("not Ready: %s\n%s" % (json.dumps((_kubeflow(kube, name, namespace) or {}).get(
                "status"), indent=1), log_path.read_text(errors="replace")[-6000:])) from None
        assert proc.poll() is None, log_path.read_text(errors="replace")[-4000:]
        objects = snapshot(labelled_objects(kube, name))
        if inspect:
            inspect(kube)
        control_plane.kubectl("delete", "kubeflow", name, "-n", namespace, "--wait=false")
        wait_for(lambda: _kubeflow(kube, name, namespace) is None, 300, interval=1,
                 what="Kubeflow %s/%s gone after its uninstall finalizer" % (namespace, name))
        return done, objects
    finally:
        _stop(proc, log_path)


@pytest.fixture
def sdk_workdir(tmp_path):
    """ansible-operator's working directory, laid out like its image (operator/Dockerfile.ansible-operator):
    the shipped watches.yaml, as it is, and a copy of the collection under collections/. The runs
    write there what they write beside the playbooks (the data lake's trust documents)."""
    workdir = tmp_path / "ansible-operator"
    workdir.mkdir()
    shutil.copy(WATCHES, workdir / "watches.yaml")
    collection = workdir / "collections" / "ansible_collections" / "kfocp" / "kubeflow"
    collection.mkdir(parents=True)
    assert {"galaxy.yml", "plugins/", "roles/", "playbooks/"} <= set(IMAGE_COLLECTION), IMAGE_COLLECTION
    for part in IMAGE_COLLECTION:
        if part.endswith("/"):
            shutil.copytree(ROOT / part, collection / part, ignore=shutil.ignore_patterns("__pycache__", "kfocp-data-lake"))
        else:
            shutil.copy(ROOT / part, collection / part)
    return workdir


def _ansible_operator_starter(ansible_operator, control_plane, workdir, namespace, log_path):
    probe = free_port()
    venv_bin = os.path.dirname(sys.executable)

    def start():
        env = dict(os.environ, KUBECONFIG=str(control_plane.kubeconfig), WATCH_NAMESPACE=namespace,
                   ANSIBLE_COLLECTIONS_PATH=str(workdir / "collections"), ANSIBLE_NOCOLOR="1",
                   PATH=venv_bin + os.pathsep + os.environ.get("PATH", ""))
        for variable in ("ANSIBLE_CONFIG", "K8S_AUTH_KUBECONFIG", "VIRTUAL_ENV", "ANSIBLE_INVENTORY"):
            env.pop(variable, None)
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [str(ansible_operator), "run", "--watches-file", str(workdir / "watches.yaml"),
                 "--health-probe-bind-address", "127.0.0.1:%d" % probe, "--metrics-bind-address", "0",
                 "--max-concurrent-reconciles", "1", "--ansible-verbosity", "1"],
                cwd=str(workdir), env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        return proc, log_path, lambda: _health(probe, "/readyz") == 200

    return start


GENERATED = "<generated>"


def _generated_secrets_replaced(objects):
    """The objects with the OAuth secrets that the auth role generates once per install (the
    values of its Secret, as stored and decoded) replaced by GENERATED, in every object that holds
    one, and the applied-hash of such an object (a digest of them) too: the one input that two
    installs do not share. Returns (objects, the number of values replaced)."""
    values = set()
    for (_group, kind, _namespace, _name), obj in objects.items():
        if kind == "Secret" and (obj["metadata"].get("labels") or {}).get("kfocp.io/set") == "auth":
            for value in (obj.get("data") or {}).values():
                values.update((value, base64.b64decode(value).decode()))
    found = [0]

    def replaced(value):
        if isinstance(value, dict):
            return dict((key, replaced(item)) for key, item in value.items())
        if isinstance(value, list):
            return [replaced(item) for item in value]
        if isinstance(value, str) and value in values:
            found[0] += 1
            return GENERATED
        return value

    out = {}
    for key, obj in objects.items():
        before = found[0]
        out[key] = replaced(obj)
        if found[0] > before:
            out[key]["metadata"]["annotations"]["kfocp.io/applied-hash"] = GENERATED
    return out, found[0]


def _reason_annotation(team, found):
    def inspect(kube):
        binding = kube.get(kube.resource("rbac.authorization.k8s.io/v1", "RoleBinding"), "kfocp-scc-nonroot-v2-trainer",
                           team)
        found.append(((binding or {}).get("metadata") or {}).get("annotations", {}).get("kfocp.io/scc-reason"))
    return inspect


def test_ansible_operator_converges_to_the_same_objects_as_the_python_operator(
        ansible_operator, kubeflow_crd, control_plane, kube, tmp_path, sdk_workdir):
    import ansible_runner_http  # noqa: F401  # pylint: disable=unused-import,import-outside-toplevel
    if not RENDER.exists():
        pytest.skip("needs ../shared/upstream (Kubeflow's PodDefault CRD, for the data lake)")
    namespace = "kfocp-sdk-" + uuid.uuid4().hex[:6]
    team = "team-" + uuid.uuid4().hex[:6]
    name = "kf-" + uuid.uuid4().hex[:6]
    control_plane.kubectl("create", "namespace", namespace)
    # a profile namespace of this test, as Kubeflow's profile controller labels it: namespace_policies
    # finds it by the selector's app.kubernetes.io/part-of key
    profile = name + "-profile"
    labels = dict(isolated_policies(name)["namespace_policies_selector"])
    control_plane.kubectl("create", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": profile, "labels": labels}}))
    # what a cluster has before kfocp: OLM's global operators namespace, the installer's worker
    # MachineSet, and (for the data lake) an STS cluster's issuer and credentials mode, with
    # Kubeflow's PodDefault served
    ensure_namespace(kube, "openshift-operators")
    play_installer_worker_machineset(kube)
    dress(control_plane, control_plane.server)
    install_poddefault_crd(control_plane)
    cr = {"apiVersion": "kfocp.io/v1alpha1", "kind": "Kubeflow", "metadata": {"name": name, "namespace": namespace},
          "spec": _spec(name, team)}

    started = time.monotonic()
    sdk_reason = []
    # OLM and the mesh operator, played for each run (a fresh player: the uninstall between the runs
    # removed the Subscriptions and the mesh)
    with _fixed_ports_lock(), PlayOperators(kube):
        sdk_cr, sdk_objects = _converge_and_delete(
            control_plane, kube, cr, _ansible_operator_starter(ansible_operator, control_plane, sdk_workdir, namespace,
                                                               tmp_path / "ansible-operator.log"),
            inspect=_reason_annotation(team, sdk_reason))
    sdk_seconds = time.monotonic() - started

    # the status came from kfocp.kubeflow.cr_status at the end of site.yml (manageStatus: false)
    assert _condition(sdk_cr, "Ready")["reason"] == "Converged"
    assert _condition(sdk_cr, "Degraded")["status"] == "False"
    assert sdk_cr["status"]["observedGeneration"] == 1
    assert sdk_cr["status"]["components"] == dict((role, {"state": "Ready"}) for role in ROLES)
    assert sdk_cr["status"]["openshift"] == {"version": "4.20", "operators": {}}
    assert "kfocp.io/uninstall" in sdk_cr["metadata"]["finalizers"]
    # markUnsafe: the Jinja expression of the spec is the grant's reason, as text (without it,
    # Ansible would have run `id` in the operator and written its output)
    assert sdk_reason == [JINJA]
    binding = ("rbac.authorization.k8s.io", "RoleBinding", team, "kfocp-scc-nonroot-v2-trainer")
    assert sdk_objects[binding]["metadata"]["labels"]["kfocp.io/set"] == "scc", sorted(sdk_objects)
    # each role made its objects (the nested keys arrived as written)
    sets = set((obj["metadata"].get("labels") or {}).get("kfocp.io/set") for obj in sdk_objects.values())
    assert {"scc", "service_mesh", "auth", "serverless", "serverless-serving", "gpu", "gpu-operands", "autoscaler",
            "components", "profiles", "profile-self-service", "namespace-policies", "data-lake"} <= sets, sets
    assert ("", "LimitRange", profile, "kfocp-limits") in sdk_objects, sorted(k for k in sdk_objects if k[2] == profile)
    assert ("sailoperator.io", "Istio", "", "default") in sdk_objects, sorted(k for k in sdk_objects if k[1] == "Istio")
    assert ("machine.openshift.io", "MachineSet", "openshift-machine-api", name + "-a10g") in sdk_objects
    assert ("kubeflow.org", "PodDefault", profile, "data-lake") in sdk_objects, \
        sorted(k for k in sdk_objects if k[2] == profile)
    # the finalizer ran playbooks/uninstall.yml
    assert owned_objects(kube, name) == {}

    # kfocp's operator, with the same resource
    port = free_port()
    py_documents = tmp_path / "kfocp-operator-data-lake"

    def start_python_operator():
        log_path = tmp_path / "kfocp-operator.log"
        # the data lake's trust documents in a directory of the test's (the operator's configuration)
        env = dict(os.environ, KFOCP_COLLECTIONS_PATH=str(COLLECTIONS), PYTHONUNBUFFERED="1",
                   KFOCP_DATA_LAKE_DOCUMENTS_DIR=str(py_documents))
        env.pop("KUBECONFIG", None)
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "kfocp_operator", "--kubeconfig", str(control_plane.kubeconfig),
                 "--port", str(port), "--operator-namespace", namespace, "--watch-namespace", namespace,
                 "--no-fast-path", "--default-reconcile-period", "30m"],
                cwd=str(ROOT / "operator"), env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        return proc, log_path, lambda: _health(port, "/readyz") == 200

    started = time.monotonic()
    py_reason = []
    with PlayOperators(kube):
        py_cr, py_objects = _converge_and_delete(control_plane, kube, cr, start_python_operator,
                                                 inspect=_reason_annotation(team, py_reason))
    print("ansible-operator: %.0f s, kfocp's operator: %.0f s, %d objects (converge, read, uninstall)"
          % (sdk_seconds, time.monotonic() - started, len(sdk_objects)))
    assert _condition(py_cr, "Ready")["status"] == "True"
    assert py_reason == [JINJA]
    # the OAuth client's secret and the cookie secret are generated anew by each install: in the
    # Secret (as stored) and the OAuthClient (decoded), the same places on both sides
    (sdk_objects, sdk_generated), (py_objects, py_generated) = map(_generated_secrets_replaced, (sdk_objects, py_objects))
    assert sdk_generated == py_generated == 3, (sdk_generated, py_generated)
    differences = compare(sdk_objects, py_objects)
    assert not differences, report(differences, names=("ansible-operator", "kfocp's operator"))
    # the same trust document for the cloud team (ansible-operator's run writes it beside the
    # playbooks, in its working directory; the uninstall leaves it, it is the cloud team's)
    sdk_documents = list(sdk_workdir.glob("collections/**/kfocp-data-lake/aws/%s.json" % profile))
    assert len(sdk_documents) == 1, sorted(sdk_workdir.glob("collections/**/kfocp-data-lake/**"))
    assert json.loads(sdk_documents[0].read_text()) == json.loads((py_documents / "aws" / (profile + ".json")).read_text())
    assert owned_objects(kube, name) == {}
    control_plane.kubectl("delete", "namespace", namespace, team, profile, name + "-kubeflow", "--wait=false",
                          check=False)


def _deny_rolebindings(control_plane, team, name):
    """An admission policy of the API server that refuses every RoleBinding in `team`: the scc
    role's apply of its grant there fails after the pre-flight has passed."""
    policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": name}, "spec": {
                  "failurePolicy": "Fail",
                  "matchConstraints": {
                      "resourceRules": [{"apiGroups": ["rbac.authorization.k8s.io"], "apiVersions": ["v1"],
                                         "operations": ["CREATE", "UPDATE"], "resources": ["rolebindings"]}],
                      "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": team}}},
                  "validations": [{"expression": "false", "message": "refused by the policy " + name}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": name}, "spec": {"policyName": name, "validationActions": ["Deny"]}}
    control_plane.kubectl("apply", "--server-side", "--field-manager=kfocp-test", "-f", "-",
                          input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [policy, binding]}))


def test_a_failed_role_under_ansible_operator_shows_in_degraded(
        ansible_operator, kubeflow_crd, control_plane, kube, tmp_path, sdk_workdir):
    """manageStatus: false, so ansible-operator writes no status: site.yml reports the failed task
    and its message as kfocp's operator does (Degraded True, Ready False, reason PlaybookFailed,
    "<role> : <task>: <message>"), and Ready again once the cause is gone."""
    import ansible_runner_http  # noqa: F401  # pylint: disable=unused-import,import-outside-toplevel
    namespace = "kfocp-sdk-" + uuid.uuid4().hex[:6]
    team = "team-" + uuid.uuid4().hex[:6]
    name = "kf-" + uuid.uuid4().hex[:6]
    policy = "kfocp-test-deny-" + name
    control_plane.kubectl("create", "namespace", namespace)
    control_plane.kubectl("create", "namespace", team)
    _deny_rolebindings(control_plane, team, policy)
    # the policy is in force once it refuses a RoleBinding of the test's own
    probe = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
             "metadata": {"name": "probe", "namespace": team},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
             "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": team}]}
    wait_for(lambda: control_plane.kubectl("create", "--dry-run=server", "-f", "-", input=json.dumps(probe),
                                           check=False).returncode != 0, 30, interval=0.5, what="the policy in force")
    cr = {"apiVersion": "kfocp.io/v1alpha1", "kind": "Kubeflow", "metadata": {"name": name, "namespace": namespace},
          "spec": _spec(name, team, on=("scc",))}
    start = _ansible_operator_starter(ansible_operator, control_plane, sdk_workdir, namespace,
                                      tmp_path / "ansible-operator.log")

    def degraded():
        found = _kubeflow(kube, name, namespace)
        return found if _condition(found, "Degraded").get("status") == "True" else None

    with _fixed_ports_lock():
        proc, log_path, ready = start()
        try:
            wait_for(lambda: proc.poll() is not None or ready(), 120, interval=0.5, what="the operator to be ready")
            control_plane.kubectl("create", "-f", "-", input=json.dumps(cr))
            try:
                failed = wait_for(degraded, 300, interval=1, what="Degraded=True on Kubeflow %s/%s" % (namespace, name))
            except AssertionError:
                raise AssertionError("not Degraded: %s\n%s" % (json.dumps((_kubeflow(kube, name, namespace) or {}).get(
                    "status"), indent=1), log_path.read_text(errors="replace")[-6000:])) from None
            message = _condition(failed, "Degraded")["message"]
            assert _condition(failed, "Degraded")["reason"] == "PlaybookFailed"
            assert message.startswith("scc : "), message
            assert "refused by the policy " + policy in message, message
            assert _condition(failed, "Ready") == dict(_condition(failed, "Ready"), status="False",
                                                       reason="PlaybookFailed", message=message)
            assert failed["status"]["components"]["scc"] == {"state": "Failed", "message": message}
            assert failed["status"]["observedGeneration"] == 1
            # the cause gone, ansible-operator's retry of the failed run converges
            control_plane.kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", policy)
            wait_for(lambda: _ready(kube, name, namespace), 600, interval=1, what="Ready=True after the policy is gone")
            assert _condition(_kubeflow(kube, name, namespace), "Degraded")["status"] == "False"
            control_plane.kubectl("delete", "kubeflow", name, "-n", namespace, "--wait=false")
            wait_for(lambda: _kubeflow(kube, name, namespace) is None, 300, interval=1,
                     what="Kubeflow %s/%s gone after its uninstall finalizer" % (namespace, name))
        finally:
            _stop(proc, log_path)
            control_plane.kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", policy,
                                  "--ignore-not-found", check=False)
    control_plane.kubectl("delete", "namespace", namespace, team, "--wait=false", check=False)
