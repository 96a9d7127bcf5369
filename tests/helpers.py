"""Test helpers: run playbooks through ansible-runner, read the API, and play the part of
external operators (OLM, the mesh operator) by writing the status they would write."""
import contextlib
import os
import socket
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


@contextlib.contextmanager
def port_taken_first(monkeypatch, module):
    """A loopback port held open, which `module.free_port` returns first: a port taken between its
    choice and its bind. Yields the port."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        chosen, real = iter([port]), module.free_port
        monkeypatch.setattr(module, "free_port", lambda: next(chosen, None) or real())
        yield port


def _operator_path():
    """The operator's package and operator/hack importable."""
    for path in (ROOT / "operator", ROOT / "operator" / "hack"):
        if str(path) not in sys.path:
            sys.path.insert(0, str(path))


def _launch():
    """operator/hack/launch.py, the way every test and benchmark runs the operator."""
    _operator_path()
    import launch
    return launch


def operator_account(plane, kube, workdir, alone=False):
    """Install the operator's API and RBAC on `plane` and mint a kubeconfig of its service account
    (with a token bound only to its ClusterRole) in `workdir`; returns its path. With `alone`, fail
    when a Kubeflow exists already: the operator would refuse the test's, as it refuses all but
    the oldest."""
    launch = _launch()
    launch.install_api(plane, manager="kfocp-test")
    kube.forget()
    if alone:
        others = kube.list(kube.resource("kfocp.io/v1alpha1", "Kubeflow"))
        assert not others, "another Kubeflow exists, so the test's would be refused: %s" % [
            (k["metadata"]["namespace"], k["metadata"]["name"]) for k in others]
    return launch.account_kubeconfig(plane, Path(workdir) / "sa.kubeconfig")


@contextlib.contextmanager
def running_operator(plane, kube, workdir, args, env=None, alone=False, tail=6000):
    """The operator in a subprocess as its own service account (operator_account), started and
    ready; yields the launch.Operator. At the end it is stopped, and whether it lived until then,
    how long it ran and its log's last `tail` characters are printed."""
    kubeconfig = operator_account(plane, kube, workdir, alone)
    proc = _launch().Operator(kubeconfig, Path(workdir) / "operator.log", args, env=env)
    started = time.monotonic()
    try:
        proc.start()
        yield proc
    finally:
        alive = proc.alive()
        proc.stop()
        print("---- operator: alive until the end %s, ran %.0fs; log (tail) ----\n%s"
              % (alive, time.monotonic() - started, proc.log_tail(tail)))


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

def play_profile_controller(control_plane, names=None, labels=None, kube=None):
    """One reconcile pass of Kubeflow's profile controller (standins.ProfileController, which
    behaves as the real one: finalizer, refusal of someone else's namespace, labels only added when
    missing, full-replace updates) over every Profile, or those in `names`. `labels` are added to
    its namespace-labels file (a test's isolation label). Returns the names reconciled, less those
    the controller refused."""
    import standins
    if kube is None:
        from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client
        kube = Client.from_params({"kubeconfig": str(control_plane.kubeconfig)})
    return standins.ProfileController(kube, labels).step(names)


def profile_controller(control_plane, labels=None, kube=None, only=None):
    """Kubeflow's profile controller, to run in the background while a `with` block runs (over
    the Profiles named in `only`, or all), or step() by step()."""
    import standins
    if kube is None:
        from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client
        kube = Client.from_params({"kubeconfig": str(control_plane.kubeconfig)})
    return standins.ProfileController(kube, labels, only=only)


def kfam_binding_name(user, role):
    """The name KFAM gives a contributor's RoleBinding and AuthorizationPolicy (standins)."""
    import standins
    return standins.kfam_binding_name(user, role)


def play_kfam_add_contributor(kube, namespace, user, role, rolebinding_client=None):
    """Add a contributor to a profile namespace as the dashboard does through KFAM
    (standins.kfam_add_contributor), with the principals and header of the profile controller's
    Deployment kfocp made. Returns the name."""
    import standins
    return standins.kfam_add_contributor(kube, namespace, user, role, rolebinding_client)


def subject_access_review(kube, user, groups, verb, resource, api_group="", namespace=None, name=None):
    """Ask the API server's authorizer whether `user` (in `groups`, and system:authenticated) may
    do it: (allowed, reason)."""
    attributes = {"verb": verb, "group": api_group, "resource": resource}
    attributes.update((k, v) for k, v in (("namespace", namespace), ("name", name)) if v)
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": list(groups) + ["system:authenticated"], "resourceAttributes": attributes}}
    answer = kube.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body=body)
    return bool(answer["status"].get("allowed")), answer["status"].get("reason", "")


def oauth_proxy_lets_in(kube, openshift_sar, user, groups):
    """Whether oauth-proxy, with `--openshift-sar=<openshift_sar>`, lets `user` (in `groups`, and
    system:authenticated) in: the flag read as OpenShift reads it (tests/judges.py), asked of the API
    server's authorizer. (allowed, reason)."""
    # imported here: it builds OpenShift's judges on first use
    import judges  # pylint: disable=import-outside-toplevel
    review, _dropped = judges.openshift_sar(openshift_sar, user, list(groups) + ["system:authenticated"])
    answer = kube.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body=review)
    return bool(answer["status"].get("allowed")), answer["status"].get("reason", "")


def mesh_vars(flavour, instance):
    """The service_mesh role's variables for one flavour of an instance's own mesh (an existing
    mesh: istio-system's istio-ingressgateway)."""
    if flavour == "ossm2":
        return {"service_mesh_namespace": instance + "-mesh"}
    if flavour == "ossm3":
        return {"service_mesh_namespace": instance + "-mesh",
                "service_mesh_ossm3": {"name": instance, "cni_namespace": instance + "-cni"}}
    return {"service_mesh_external": {"namespace": "istio-system", "gateway": "istio-ingressgateway"}}


def components_only(instance, *managed):
    """Extravars for playbooks/components.yml that manage only the `managed` components (upstream's
    kubeflow-roles, say) and mark every other one removed."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import releases
    states = dict((name, "managed" if name in managed else "removed")
                  for name in releases.RELEASES["v1.10.2"]["catalog"])  # the fixture tree's release
    return {"kfocp_instance": instance, "components_components": states}


# ---------------------------------------------------------------- playing OLM and the mesh operators
# On a real cluster OLM installs an operator's CSV and the mesh operator reports its control plane
# Ready. The local control plane runs neither, so tests write the objects and status they would.


def ensure_namespace(kube, name, labels=None):
    """Create a namespace as someone other than kfocp would (OpenShift's openshift-operators, say)."""
    res = kube.resource("v1", "Namespace")
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": dict(labels or {})}}
    return kube.apply(res, body, "cluster-admin-test", force=True)


def play_olm_csv_succeeded(kube, namespace, package, csv_name=None, phase="Succeeded"):
    """What OLM does for the Subscription to `package` in `namespace` (standins.olm_step): the
    InstallPlan and, once it is approved (Automatic approval, or someone approved a Manual one),
    the ClusterServiceVersion with OLM's label, in `phase`. Without a Subscription (a test that
    only needs the CSV), the CSV of an approved plan. Returns the CSV name, or None while a
    Manual plan waits for approval."""
    import standins
    subs = kube.resource(*standins.SUBSCRIPTIONS)
    found = [s for s in kube.list(subs, namespace=namespace) if s["spec"].get("name") == package]
    if not found:
        return standins.play_csv(kube, namespace, package, csv_name or "%s.v1.0.0" % package, phase)
    return standins.olm_step(kube, found[0], csv_name, phase)


def play_mesh_ready(kube, api_version, kind, name, namespace=None, timeout=120, manager="mesh-operator"):
    """Wait until the mesh object (ServiceMeshControlPlane, Istio, ...) exists, then report it Ready
    as its operator would, for the generation it read (status.observedGeneration): a later change
    of its spec leaves that Ready stale. Returns True when it was marked, False on timeout."""
    import standins
    res = kube.resource(api_version, kind)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        live = kube.get(res, name, namespace)
        if live is not None:
            status = standins.mesh_ready_status(live["metadata"].get("generation", 1))
            standins._status_patch(kube, res, live, status, manager)
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


def site_roles():
    """The short names of the roles site.yml runs, in order, read as the operator reads them."""
    _operator_path()
    from kfocp_operator.playbook import playbook_roles
    return playbook_roles(PLAYBOOKS / "site.yml")


def only_roles(*keep):
    """Extravars that turn off every role of site.yml except `keep` (kfocp_<role>_enabled: false)."""
    return dict(("kfocp_%s_enabled" % role, False) for role in site_roles() if role not in keep)


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


def labelled_objects(kube, instance, patched=True, workers=16):
    """{(group, kind, namespace, name): object} of every kind that can be listed: the objects
    labelled kfocp.io/instance=<instance> and, with `patched`, those carrying its shared-patch
    label patched.kfocp.io/<instance>. One served version per kind; Events are left out. The
    kinds are listed `workers` at a time."""
    from concurrent.futures import ThreadPoolExecutor
    selectors = ["kfocp.io/instance=%s" % instance] + (["patched.kfocp.io/%s" % instance] if patched else [])
    kinds = list(listable_kinds(kube, skip=(("", "Event"), ("", "ComponentStatus"), ("events.k8s.io", "Event"))))
    jobs = [(kind, selector) for kind in kinds for selector in selectors]

    def one(job):
        (_group, _api_version, _kind, res), selector = job
        return list_or_none(kube, res, label_selector=selector) or []

    found = {}
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for ((group, api_version, kind, _res), _selector), items in zip(jobs, pool.map(one, jobs)):
            for item in items:
                meta = item["metadata"]
                item.setdefault("apiVersion", api_version)
                item.setdefault("kind", kind)
                found[(group, kind, meta.get("namespace") or "", meta["name"])] = item
    return found


class PlayOperators:
    """OLM and the mesh operators, played in the background while playbooks or the operator run:
    every Subscription gets its InstallPlan and, once that is approved, a Succeeded CSV (a Manual
    plan waits for approval); every generation of a mesh control plane is reported Ready."""

    MESH = [("maistra.io/v2", "ServiceMeshControlPlane"), ("sailoperator.io/v1", "Istio")]

    def __init__(self, kube):
        import threading
        self.kube = kube
        self.stop = threading.Event()
        self.done = set()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        import standins
        from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError
        subs = self.kube.resource("operators.coreos.com/v1alpha1", "Subscription")
        while not self.stop.is_set():
            try:
                for sub in self.kube.list(subs):
                    key = ("sub", sub["metadata"]["namespace"], sub["spec"]["name"])
                    if key not in self.done and standins.olm_step(self.kube, sub) is not None:
                        self.done.add(key)
                    standins.fail_csvs_of_many_groups(self.kube, sub["metadata"]["namespace"])
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


# ---------------------------------------------------------------- OpenShift's version and older APIs

def play_cluster_version(kube, version):
    """The ClusterVersion `version` of a cluster that runs OpenShift `version`, as the cluster
    version operator writes it: status.desired.version, and status.history with the install's
    entry, Completed (openshift/api config/v1 types_cluster_version.go UpdateHistory; the GPU
    operator reads the OpenShift version from the first Completed entry)."""
    import standins
    res = kube.resource("config.openshift.io/v1", "ClusterVersion")
    channel = "stable-" + ".".join(version.split(".")[:2])
    live = kube.apply(res, standins.cluster_version(channel=channel), "cluster-version-operator", force=True)
    image = "quay.io/openshift-release-dev/ocp-release:%s-x86_64" % version
    now = standins._now()
    standins._status_patch(kube, res, live, {
        "desired": {"version": version, "image": image},
        "history": [{"state": "Completed", "version": version, "image": image, "verified": False,
                     "startedTime": now, "completionTime": now}],
        "availableUpdates": None, "observedGeneration": live["metadata"].get("generation", 1),
        "versionHash": "abc"}, "cluster-version-operator")


def nfd_crd_before_419(control_plane):
    """Put the NodeFeatureDiscovery CRD as the NFD operator of OpenShift 4.18 and earlier has it:
    spec.operand holds image, imagePullPolicy and servicePort only, and no unknown field
    (openshift/cluster-nfd-operator release-4.18, api/v1/nodefeaturediscovery_types.go, OperandSpec;
    workerTolerations came in release-4.19). The CRD of hack/crds is the newer one. Returns a
    function that puts that one back."""
    import yaml
    path = ROOT / "hack" / "crds" / "nodefeaturediscoveries.nfd.openshift.io.yaml"
    newer = path.read_text()
    crd = yaml.safe_load(newer.split("\n---\n", 1)[1])
    operand = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["operand"]
    operand.pop("x-kubernetes-preserve-unknown-fields")
    operand["properties"].pop("workerTolerations")

    def put(text):
        control_plane.kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=cluster-bootstrap",
                              "-f", "-", input=text)
        control_plane.wait_established("nodefeaturediscoveries.nfd.openshift.io")
    put(yaml.safe_dump(crd))
    return lambda: put(newer)
