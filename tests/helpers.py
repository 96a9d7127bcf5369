"""Test helpers: run playbooks through ansible-runner, read the API, and play the part of
external operators (OLM, the mesh operator) by writing the status they would write."""
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLLECTIONS = ROOT / ".cache" / "collections"
PLAYBOOKS = ROOT / "playbooks"


class PlaybookResult:
    def __init__(self, rc, stats, events, stdout):
        self.rc = rc
        self.stats = stats or {}
        self.events = events
        self.stdout = stdout

    def count(self, what, host="local"):
        return (self.stats.get(what) or {}).get(host, 0)

    @property
    def changed(self):
        return sum((self.stats.get("changed") or {}).values())

    @property
    def changed_tasks(self):
        """The names of the tasks that reported a change."""
        return [(event.get("event_data") or {}).get("task") for event in self.events
                if event.get("event") == "runner_on_ok" and ((event.get("event_data") or {}).get("res") or {}).get("changed")]

    @property
    def failed(self):
        return self.rc != 0

    def task_results(self, module_suffix=("apply", "tenancy")):
        """The results of every task whose action ends with `module_suffix` (a name or a tuple of
        names; by default the modules that apply objects)."""
        found = []
        for event in self.events:
            data = event.get("event_data") or {}
            if event.get("event") in ("runner_on_ok", "runner_on_failed") and \
                    str(data.get("task_action", "")).endswith(module_suffix):
                found.append(data.get("res") or {})
        return found


def ansible_env(control_plane=None, extra=None):
    env = dict(os.environ)
    env.update({
        "ANSIBLE_COLLECTIONS_PATH": str(COLLECTIONS),
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_DEPRECATION_WARNINGS": "0",
        "PATH": os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", ""),
    })
    if control_plane is not None:
        env["KFOCP_KUBECONFIG"] = str(control_plane.kubeconfig)
    env.update(extra or {})
    return env


def run_playbook(control_plane, name, extravars, workdir, check=False, diff=False, inventory=None,
                 env=None, verbosity=0, limit=None):
    """Run playbooks/<name>.yml with ansible-runner against the local inventory."""
    import ansible_runner

    playbook = name if os.path.isabs(name) else str(PLAYBOOKS / (name if name.endswith(".yml") else name + ".yml"))
    cmdline = []
    if check:
        cmdline.append("--check")
    if diff:
        cmdline.append("--diff")
    if limit:
        cmdline += ["--limit", limit]
    private = Path(workdir) / ("runner-%d" % int(time.monotonic() * 1000))
    private.mkdir(parents=True, exist_ok=True)
    runner = ansible_runner.run(
        private_data_dir=str(private), playbook=playbook,
        inventory=str(inventory or ROOT / "inventories" / "local" / "hosts.yml"),
        extravars=extravars, envvars=ansible_env(control_plane, env), cmdline=" ".join(cmdline) or None,
        quiet=True, verbosity=verbosity, project_dir=str(ROOT))
    stdout = runner.stdout.read() if runner.stdout else ""
    return PlaybookResult(runner.rc, runner.stats, list(runner.events), stdout)


def wait_for(predicate, timeout=30, interval=0.2, what="condition", error=None):
    """The first true value of `predicate`, polled every `interval` seconds; after `timeout`
    seconds `error(message)` (an AssertionError by default) is raised."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise (error or AssertionError)("timed out after %ss waiting for %s" % (timeout, what))


def python():
    return sys.executable


def kubectl(control_plane, *args, check=True):
    return control_plane.kubectl(*args, check=check)


# ---------------------------------------------------------------- the Kubeflow profile controller's part

PROFILE_NAMESPACE_LABELS = {"app.kubernetes.io/part-of": "kubeflow-profile", "istio-injection": "enabled"}


def profile_controller_objects(profile, labels=None):
    """What Kubeflow's profile controller creates for one Profile: the namespace (labelled, with
    the owner annotation, owned by the Profile), the default-editor and default-viewer service
    accounts, the owner's admin RoleBinding, the owner's AuthorizationPolicy and, when the
    Profile has spec.resourceQuotaSpec.hard, the ResourceQuota kf-resource-quota."""
    meta, spec = profile["metadata"], profile.get("spec") or {}
    name, owner = meta["name"], spec.get("owner") or {}
    ref = {"apiVersion": "kubeflow.org/v1", "kind": "Profile", "name": name, "uid": meta["uid"],
           "controller": True, "blockOwnerDeletion": True}
    objs = [{"apiVersion": "v1", "kind": "Namespace",
             "metadata": {"name": name, "labels": dict(PROFILE_NAMESPACE_LABELS, **(labels or {})),
                          "annotations": {"owner": owner.get("name", "")}, "ownerReferences": [ref]}}]
    for account, role in (("default-editor", "kubeflow-edit"), ("default-viewer", "kubeflow-view")):
        objs.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": name}})
        objs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                     "metadata": {"name": account, "namespace": name},
                     "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                     "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": name}]})
    objs.append({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                 "metadata": {"name": "namespaceAdmin", "namespace": name,
                              "annotations": {"user": owner.get("name", ""), "role": "admin"}},
                 "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kubeflow-admin"},
                 "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": owner.get("kind", "User"),
                               "name": owner.get("name", "")}]})
    objs.append({"apiVersion": "security.istio.io/v1beta1", "kind": "AuthorizationPolicy",
                 "metadata": {"name": "ns-owner-access-istio", "namespace": name},
                 "spec": {"rules": [{"when": [{"key": "request.headers[kubeflow-userid]",
                                               "values": [owner.get("name", "")]}]}]}})
    hard = (spec.get("resourceQuotaSpec") or {}).get("hard")
    if hard:
        objs.append({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "kf-resource-quota", "namespace": name},
                     "spec": {"hard": dict(hard)}})
    return objs


def play_profile_controller(control_plane, names=None, labels=None):
    """Do what Kubeflow's profile controller does for every Profile (or those in `names`): the
    controller itself cannot be built here, so this writes the objects it would write, with its
    field manager. `labels` are the extra namespace labels of its namespace-labels file. Returns
    the names of the profiles handled."""
    import json as _json
    out = control_plane.kubectl("get", "profiles.kubeflow.org", "-o", "json")
    profiles = [p for p in _json.loads(out.stdout)["items"]
                if (names is None or p["metadata"]["name"] in names) and not p["metadata"].get("deletionTimestamp")]
    objs = [obj for p in profiles for obj in profile_controller_objects(p, labels)]
    from concurrent.futures import ThreadPoolExecutor

    def apply(items):
        body = {"apiVersion": "v1", "kind": "List", "items": items}
        control_plane.kubectl("apply", "--server-side", "--field-manager=profile-controller", "-f", "-",
                              input=_json.dumps(body))

    # the namespaces first, then what goes in them; kubectl applies one object after the other, so
    # large numbers go through four of them at a time
    for group in ([o for o in objs if o["kind"] == "Namespace"], [o for o in objs if o["kind"] != "Namespace"]):
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(apply, [group[start:start + 500] for start in range(0, len(group), 500)]))
    return [p["metadata"]["name"] for p in profiles]


def kfam_binding_name(user, role):
    """The name Kubeflow's access management (KFAM, behind the dashboard's "Manage contributors")
    gives a contributor's RoleBinding and AuthorizationPolicy: User-<user>-ClusterRole-<role>,
    lower case, every run of other characters than letters and digits made '-'."""
    import re
    raw = "-".join(["User", re.sub(r"[^a-zA-Z0-9]+", "-", user), "ClusterRole", role]).lower()
    return re.sub(r"[^a-zA-Z0-9]+", "-", raw)


def play_kfam_add_contributor(kube, namespace, user, role, rolebinding_client=None, userid_header="kubeflow-userid",
                              principals=("cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account",
                                          "cluster.local/ns/kubeflow/sa/ml-pipeline-ui")):
    """Add a contributor to a profile namespace as the dashboard does through KFAM: a RoleBinding to
    kubeflow-<role> and an Istio AuthorizationPolicy for the user's identity header, both named
    kfam_binding_name() and annotated user and role, created (not applied) with field manager kfam.
    The RoleBinding is created with `rolebinding_client` when given (the owner's own credentials),
    else as KFAM. Returns the name."""
    name = kfam_binding_name(user, role)
    annotations = {"user": user, "role": role}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kubeflow-" + role},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}
    policy = {"apiVersion": "security.istio.io/v1", "kind": "AuthorizationPolicy",
              "metadata": {"name": name, "namespace": namespace, "annotations": annotations},
              "spec": {"rules": [{"when": [{"key": "request.headers[%s]" % userid_header, "values": [user]}],
                                  "from": [{"source": {"principals": list(principals)}}]}]}}
    for client, body in ((rolebinding_client or kube, binding), (kube, policy)):
        res = client.resource(body["apiVersion"], body["kind"])
        client.request("POST", client.path(res, namespace), query={"fieldManager": "kfam"}, body=body)
    return name


def subject_access_review(kube, user, groups, verb, resource, api_group="", namespace=None, name=None):
    """Ask the API server's authorizer whether `user` (in `groups`, and system:authenticated) may
    do it: (allowed, reason)."""
    attributes = {"verb": verb, "group": api_group, "resource": resource}
    attributes.update((k, v) for k, v in (("namespace", namespace), ("name", name)) if v)
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": list(groups) + ["system:authenticated"], "resourceAttributes": attributes}}
    answer = kube.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body=body)
    return bool(answer["status"].get("allowed")), answer["status"].get("reason", "")


def components_only(instance, *managed):
    """Extravars for playbooks/components.yml that manage only the `managed` components (upstream's
    kubeflow-roles, say) and mark every other one removed."""
    import yaml
    defaults = yaml.safe_load((ROOT / "roles" / "components" / "defaults" / "main.yml").read_text())
    states = dict((name, "managed" if name in managed else "removed") for name in defaults["components_catalog"])
    return {"kfocp_instance": instance, "components_components": states}


# ---------------------------------------------------------------- playing OLM and the mesh operators
# On a real cluster OLM installs an operator's CSV and the mesh operator reports its control plane
# Ready. The local control plane runs neither, so tests write the objects and status they would.

def _status_path(kube, res, name, namespace=None):
    return kube.path(res, namespace, name) + "/status"


def ensure_namespace(kube, name, labels=None):
    """Create a namespace as someone other than kfocp would (OpenShift's openshift-operators, say)."""
    res = kube.resource("v1", "Namespace")
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels or {})}}
    return kube.apply(res, body, "cluster-admin-test", force=True)


def play_olm_csv_succeeded(kube, namespace, package, csv_name=None, phase="Succeeded"):
    """Write the ClusterServiceVersion OLM installs for `package` in `namespace`, with OLM's
    operators.coreos.com/<package>.<namespace> label, and mark it `phase` as OLM would."""
    res = kube.resource("operators.coreos.com/v1alpha1", "ClusterServiceVersion")
    csv_name = csv_name or "%s.v1.0.0" % package
    body = {"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
            "metadata": {"name": csv_name, "namespace": namespace,
                         "labels": {"operators.coreos.com/%s.%s" % (package, namespace): ""}},
            "spec": {"displayName": package, "install": {"strategy": "deployment"}}}
    kube.apply(res, body, "olm", force=True)
    status = {"apiVersion": body["apiVersion"], "kind": body["kind"],
              "metadata": {"name": csv_name, "namespace": namespace},
              "status": {"phase": phase, "reason": "InstallSucceeded" if phase == "Succeeded" else "Installing",
                         "message": "install strategy completed with no errors"}}
    kube.request("PATCH", _status_path(kube, res, csv_name, namespace), query={"fieldManager": "olm", "force": "true"},
                 body=status, content_type="application/apply-patch+yaml")
    return csv_name


def play_mesh_ready(kube, api_version, kind, name, namespace=None, timeout=120, manager="mesh-operator"):
    """Wait until the mesh object (ServiceMeshControlPlane, Istio, ...) exists, then report it Ready
    as its operator would. Returns True when it was marked, False on timeout."""
    res = kube.resource(api_version, kind)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if kube.get(res, name, namespace) is not None:
            meta = {"name": name}
            if namespace:
                meta["namespace"] = namespace
            status = {"apiVersion": api_version, "kind": kind, "metadata": meta,
                      "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "ComponentsReady",
                                                 "message": "All component deployments are Available",
                                                 "lastTransitionTime": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                                     time.gmtime())}]}}
            kube.request("PATCH", _status_path(kube, res, name, namespace),
                         query={"fieldManager": manager, "force": "true"}, body=status,
                         content_type="application/apply-patch+yaml")
            return True
        time.sleep(0.3)
    return False


def in_background(func, *args, **kwargs):
    """Run func(*args, **kwargs) in a daemon thread (an operator acting while a playbook runs)."""
    import threading
    thread = threading.Thread(target=func, args=args, kwargs=kwargs, daemon=True)
    thread.start()
    return thread


def _main(argv=None):
    """Command line for molecule scenarios: play OLM or a mesh operator against a kubeconfig."""
    import argparse
    sys.path.insert(0, str(COLLECTIONS))
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client
    parser = argparse.ArgumentParser(description=_main.__doc__)
    parser.add_argument("--kubeconfig", required=True)
    sub = parser.add_subparsers(dest="command", required=True)
    csv = sub.add_parser("play-olm-csv-succeeded")
    csv.add_argument("--namespace", required=True)
    csv.add_argument("--package", required=True)
    ready = sub.add_parser("play-mesh-ready")
    ready.add_argument("--api-version", required=True)
    ready.add_argument("--kind", required=True)
    ready.add_argument("--name", required=True)
    ready.add_argument("--namespace")
    ready.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args(argv)
    kube = Client.from_params({"kubeconfig": args.kubeconfig})
    if args.command == "play-olm-csv-succeeded":
        ensure_namespace(kube, args.namespace)
        print(play_olm_csv_succeeded(kube, args.namespace, args.package))
        return 0
    return 0 if play_mesh_ready(kube, args.api_version, args.kind, args.name, args.namespace, args.timeout) else 1


if __name__ == "__main__":
    sys.exit(_main())


def only_roles(*keep):
    """Extravars that turn off every role of site.yml except `keep` (kfocp_<role>_enabled: false)."""
    import yaml
    roles = []
    for play in yaml.safe_load((PLAYBOOKS / "site.yml").read_text()):
        for entry in play.get("roles") or []:
            name = entry["role"] if isinstance(entry, dict) else entry
            roles.append(name.split(".")[-1])
    return dict(("kfocp_%s_enabled" % role, False) for role in roles if role not in keep)


# ---------------------------------------------------------------- playing the installer's machine API
_PROVIDERS = {"aws": ("AWSMachineProviderConfig", "instanceType", "m6i.xlarge"),
              "azure": ("AzureMachineProviderSpec", "vmSize", "Standard_D4s_v3"),
              "gcp": ("GCPMachineProviderSpec", "machineType", "n2-standard-4")}


def play_installer_worker_machineset(kube, name="ci-x1-worker-a", cloud="aws", infra="ci-x1", replicas=2):
    """Write a worker MachineSet in openshift-machine-api as an installer-provisioned cluster has
    one per zone (the namespace too, when missing). Returns the MachineSet."""
    ensure_namespace(kube, "openshift-machine-api")
    kind, field, value = _PROVIDERS[cloud]
    labels = {"machine.openshift.io/cluster-api-cluster": infra}
    template_labels = dict(labels, **{"machine.openshift.io/cluster-api-machine-role": "worker",
                                      "machine.openshift.io/cluster-api-machine-type": "worker",
                                      "machine.openshift.io/cluster-api-machineset": name})
    body = {"apiVersion": "machine.openshift.io/v1beta1", "kind": "MachineSet",
            "metadata": {"name": name, "namespace": "openshift-machine-api", "labels": labels},
            "spec": {"replicas": replicas,
                     "selector": {"matchLabels": dict(labels, **{"machine.openshift.io/cluster-api-machineset": name})},
                     "template": {"metadata": {"labels": template_labels},
                                  "spec": {"metadata": {"labels": {"node-role.kubernetes.io/worker": ""}},
                                           "providerSpec": {"value": {"kind": kind, "apiVersion": "machine.openshift.io/v1beta1",
                                                                      field: value, "zone": "zone-a"}}}}}}
    return kube.apply(kube.resource("machine.openshift.io/v1beta1", "MachineSet"), body, "openshift-installer", force=True)


def play_autoscaler_scale(kube, name, replicas, namespace="openshift-machine-api"):
    """Change a MachineSet's replicas through its scale subresource, as the cluster autoscaler does."""
    res = kube.resource("machine.openshift.io/v1beta1", "MachineSet")
    body = {"spec": {"replicas": replicas}}
    return kube.request("PATCH", kube.path(res, namespace, name) + "/scale", query={"fieldManager": "cluster-autoscaler"},
                        body=body, content_type="application/merge-patch+json")


# ---------------------------------------------------------------- what an install left on the cluster

def listable_kinds(kube, skip=()):
    """(group, apiVersion, kind, resource) of every kind the API server can list, one served
    version each, less the (group, kind) pairs in `skip`."""
    seen = set()
    for (api_version, kind), res in sorted(kube.resources(refresh=True).items()):
        group = api_version.split("/")[0] if "/" in api_version else ""
        if "list" not in res.verbs or (group, kind) in skip or (group, res.plural) in seen:
            continue
        seen.add((group, res.plural))
        yield group, api_version, kind, res


def list_or_none(kube, res, **kwargs):
    """kube.list, or None for a kind that is discovered but not served (404, 405, 503)."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError
    try:
        return kube.list(res, **kwargs)
    except KubeError as err:
        if err.status in (404, 405, 503):
            return None
        raise


def labelled_objects(kube, instance, patched=True):
    """{(group, kind, namespace, name): object} of every kind that can be listed: the objects
    labelled kfocp.io/instance=<instance> and, with `patched`, those carrying its shared-patch
    label patched.kfocp.io/<instance>. One served version per kind; Events are left out."""
    selectors = ["kfocp.io/instance=%s" % instance] + (["patched.kfocp.io/%s" % instance] if patched else [])
    found = {}
    for group, api_version, kind, res in listable_kinds(kube, skip=(("", "Event"), ("", "ComponentStatus"),
                                                                    ("events.k8s.io", "Event"))):
        for selector in selectors:
            for item in list_or_none(kube, res, label_selector=selector) or []:
                meta = item["metadata"]
                item.setdefault("apiVersion", api_version)
                item.setdefault("kind", kind)
                found[(group, kind, meta.get("namespace") or "", meta["name"])] = item
    return found


class PlayOperators:
    """OLM and the mesh operators, played in the background while playbooks or the operator run:
    every Subscription gets a Succeeded CSV, every mesh control plane is reported Ready."""

    MESH = [("maistra.io/v2", "ServiceMeshControlPlane"), ("sailoperator.io/v1", "Istio")]

    def __init__(self, kube):
        import threading
        self.kube = kube
        self.stop = threading.Event()
        self.done = set()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError
        subs = self.kube.resource("operators.coreos.com/v1alpha1", "Subscription")
        while not self.stop.is_set():
            try:
                for sub in self.kube.list(subs):
                    key = ("sub", sub["metadata"]["namespace"], sub["spec"]["name"])
                    if key not in self.done:
                        play_olm_csv_succeeded(self.kube, key[1], key[2])
                        self.done.add(key)
                for api_version, kind in self.MESH:
                    try:
                        res = self.kube.resource(api_version, kind)
                    except Exception:  # pylint: disable=broad-except  # the kind is not served
                        continue
                    for obj in self.kube.list(res):
                        meta = obj["metadata"]
                        key = (kind, meta.get("namespace"), meta["name"], meta.get("generation"))
                        if key not in self.done:
                            play_mesh_ready(self.kube, api_version, kind, meta["name"], meta.get("namespace"), 5)
                            self.done.add(key)
            except KubeError:
                pass
            self.stop.wait(0.5)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(10)


def roles_off_except(*keep):
    """Spec fields of a Kubeflow CR that switch off every role but `keep`, as a user would:
    <role>State: absent."""
    import measure
    return measure.roles_off_except(ROOT / "operator" / "config" / "crd" / "bases" / "kfocp.io_kubeflows.yaml", keep)


def isolated_policies(instance):
    """Role variables that keep namespace_policies to the profile namespaces labelled
    kfocp-test=<instance> and the namespaces named <instance>-*: the control plane is shared."""
    return {"namespace_policies_selector": {"app.kubernetes.io/part-of": "kubeflow-profile", "kfocp-test": instance},
            "namespace_policies_whitelist_namespaces": [instance + "-*"]}


def play_pvc_protection(kube, stop, interval=0.5):
    """What kube-controller-manager's pvc-protection controller does, which the local control plane
    does not run: remove the kubernetes.io/pvc-protection finalizer from PersistentVolumeClaims
    being deleted (no pod uses them here). Loops until the threading.Event `stop` is set."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError
    res = kube.resource("v1", "PersistentVolumeClaim")
    while not stop.is_set():
        try:
            for claim in kube.list(res):
                meta = claim["metadata"]
                if meta.get("deletionTimestamp") and "kubernetes.io/pvc-protection" in (meta.get("finalizers") or []):
                    kept = [f for f in meta["finalizers"] if f != "kubernetes.io/pvc-protection"]
                    kube.request("PATCH", kube.path(res, meta["namespace"], meta["name"]),
                                 body={"metadata": {"finalizers": kept, "resourceVersion": meta["resourceVersion"]}},
                                 content_type="application/merge-patch+json")
        except KubeError:
            pass
        stop.wait(interval)
