"""Test code only: stand-ins for the external controllers kfocp relies on but that the local control
plane does not run (Kubeflow's profile controller, OLM, the mesh operators).

Each behaves as the real one does, as /work/shared/facts/profile-controller.md and the upstream
sources describe; tests/unit/test_standins.py holds them to it. A stand-in that is kinder than the
controller it plays lets the roles pass here and fail on a cluster, so none of them may be loosened.
"""
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError

# ---------------------------------------------------------------- Kubeflow's profile controller

FINALIZER = "profile-finalizer"
MANAGER = "profile-controller"
AUTHZ_NAME = "ns-owner-access-istio"
QUOTA_NAME = "kf-resource-quota"
# upstream main.go's defaults for the principals the owner rule admits
DEFAULT_ENV = {
    "ISTIO_INGRESS_GATEWAY_PRINCIPAL": "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account",
    "KFP_UI_PRINCIPAL": "cluster.local/ns/kubeflow/sa/ml-pipeline-ui",
    "NOTEBOOK_CONTROLLER_PRINCIPAL": "cluster.local/ns/kubeflow/sa/notebook-controller-service-account",
}
# the upstream manifests set the header and prefix through the kubeflow-userid ConfigMap
DEFAULT_USERID = ("kubeflow-userid", "")
# upstream applications/profiles/upstream/base/namespace-labels.yaml
DEFAULT_NAMESPACE_LABELS = {
    "katib.kubeflow.org/metrics-collector-injection": "enabled",
    "serving.kubeflow.org/inferenceservice": "enabled",
    "pipelines.kubeflow.org/enabled": "true",
    "app.kubernetes.io/part-of": "kubeflow-profile",
}
LABELS_FILE = "namespace-labels.yaml"
DEPLOYMENT = "profiles-deployment"


def set_namespace_labels(labels, wanted):
    """upstream setNamespaceLabels: a key missing from `labels` is added, a key already there keeps
    its value, a key given the empty value is removed. Returns the new labels."""
    out = dict(labels or {})
    for key, value in (wanted or {}).items():
        if value == "":
            out.pop(key, None)
        elif key not in out:
            out[key] = value
    return out


def authorization_policy_spec(profile_name, owner, env=None, userid=DEFAULT_USERID):
    """upstream getAuthorizationPolicy: ALLOW, no selector, four rules."""
    env = dict(DEFAULT_ENV, **{k: v for k, v in (env or {}).items() if k in DEFAULT_ENV and v})
    header, prefix = userid
    return {"action": "ALLOW", "rules": [
        {"when": [{"key": "request.headers[%s]" % header, "values": [prefix + owner]}],
         "from": [{"source": {"principals": [env["ISTIO_INGRESS_GATEWAY_PRINCIPAL"], env["KFP_UI_PRINCIPAL"]]}}]},
        {"when": [{"key": "source.namespace", "values": [profile_name]}]},
        {"to": [{"operation": {"paths": ["/healthz", "/metrics", "/wait-for-drain"]}}]},
        {"from": [{"source": {"principals": [env["NOTEBOOK_CONTROLLER_PRINCIPAL"]]}}],
         "to": [{"operation": {"methods": ["GET"], "paths": ["*/api/kernels"]}}]},
    ]}


def refusal(namespace, owner):
    """The Failed condition when the namespace exists without `owner: <spec.owner>`, or None."""
    if namespace is None or ((namespace["metadata"].get("annotations") or {}).get("owner")) == owner:
        return None
    return {"type": "Failed", "status": "True",
            "message": "namespace already exist, but not owned by profile creator %s" % owner}


class ProfileController:
    """Kubeflow's profile controller, one reconcile pass per step() (or in a loop, as a context
    manager). Its configuration is what the Deployment kfocp made would give it: the principals
    from the container's environment, the userid header and prefix, and the namespace-labels file
    from its ConfigMap; upstream's defaults where kfocp deployed no controller. `extra_labels` are
    added to that labels file (a test's isolation label)."""

    def __init__(self, kube, extra_labels=None, interval=0.3, only=None):
        self.kube = kube
        self.only = only  # the names the loop reconciles (None: every Profile, as the real one)
        self.extra_labels = dict(extra_labels or {})
        self.interval = interval
        self.refused = {}
        self.errors = []  # what the loop met (the real controller logs and requeues)
        self._stop = threading.Event()
        self._thread = None
        self.profiles = kube.resource("kubeflow.org/v1", "Profile")

    # -------------------------------------------------- configuration
    def configuration(self):
        """(env, (header, prefix), namespace labels) of the deployed controller, or the defaults."""
        deployment = self._deployment()
        env, userid, labels = {}, DEFAULT_USERID, dict(DEFAULT_NAMESPACE_LABELS)
        if deployment is not None:
            namespace = deployment["metadata"]["namespace"]
            pod = deployment["spec"]["template"]["spec"]
            container = (pod.get("containers") or [{}])[0]
            for ref in container.get("envFrom") or []:
                name = (ref.get("configMapRef") or {}).get("name")
                if name:
                    env.update(self._configmap(namespace, name) or {})
            env.update((e["name"], e.get("value", "")) for e in container.get("env") or [] if "value" in e)
            userid = (env.get("USERID_HEADER") or DEFAULT_USERID[0], env.get("USERID_PREFIX", DEFAULT_USERID[1]))
            for volume in pod.get("volumes") or []:
                name = (volume.get("configMap") or {}).get("name")
                data = self._configmap(namespace, name) if name else None
                if data and LABELS_FILE in data:
                    labels = dict((str(k), "" if v is None else str(v))
                                  for k, v in (yaml.safe_load(data[LABELS_FILE]) or {}).items())
        labels.update(self.extra_labels)
        return env, userid, labels

    def _deployment(self):
        res = self.kube.resource("apps/v1", "Deployment")
        found = [d for d in self.kube.list(res, field_selector="metadata.name=%s" % DEPLOYMENT)
                 if (d["metadata"].get("labels") or {}).get("app.kubernetes.io/managed-by") == "kfocp"]
        return found[0] if found else None

    def _configmap(self, namespace, name):
        found = self.kube.get(self.kube.resource("v1", "ConfigMap"), name, namespace)
        return (found or {}).get("data")

    # -------------------------------------------------- reconcile
    def step(self, names=None):
        """Reconcile every Profile (or those in `names`); a Profile being deleted is finalized.
        Returns the names reconciled, less those refused."""
        config = self.configuration()
        profiles = [p for p in self.kube.list(self.profiles) if names is None or p["metadata"]["name"] in names]
        with ThreadPoolExecutor(4) as pool:
            done = list(pool.map(lambda p: self.reconcile(p, config), profiles))
        return [p["metadata"]["name"] for p, ok in zip(profiles, done) if ok]

    def reconcile(self, profile, config=None):
        env, userid, labels = config or self.configuration()
        meta = profile["metadata"]
        name = meta["name"]
        if meta.get("deletionTimestamp"):
            if FINALIZER in (meta.get("finalizers") or []):
                # the plugins' revocation (IAM trust, annotations) has nothing to undo here
                meta["finalizers"] = [f for f in meta["finalizers"] if f != FINALIZER]
                self._update(self.profiles, profile)
            return False
        owner = ((profile.get("spec") or {}).get("owner") or {})
        owner_name = owner.get("name", "")
        ref = {"apiVersion": "kubeflow.org/v1", "kind": "Profile", "name": name, "uid": meta["uid"],
               "controller": True, "blockOwnerDeletion": True}
        ns_res = self.kube.resource("v1", "Namespace")
        namespace = self.kube.get(ns_res, name)
        failed = refusal(namespace, owner_name)
        if failed:
            self.refused[name] = failed["message"]
            # written with Update on the main resource: lost where status is a subresource
            status = dict(profile.get("status") or {})
            status["conditions"] = list(status.get("conditions") or []) + [failed]
            profile["status"] = status
            self._update(self.profiles, profile)
            return False
        self.refused.pop(name, None)
        if namespace is None:
            body = {"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": name, "annotations": {"owner": owner_name},
                                 "labels": set_namespace_labels({"istio-injection": "enabled"}, labels),
                                 "ownerReferences": [ref]}}
            self._create(ns_res, body)
        else:
            new = set_namespace_labels(namespace["metadata"].get("labels"), labels)
            if new != (namespace["metadata"].get("labels") or {}):
                namespace["metadata"]["labels"] = new
                self._update(ns_res, namespace)
        self._owned("security.istio.io/v1beta1", "AuthorizationPolicy", name, AUTHZ_NAME, ref,
                    {"annotations": {"user": owner_name, "role": "admin"}},
                    {"spec": authorization_policy_spec(name, owner_name, env, userid)})
        for account, role in (("default-editor", "kubeflow-edit"), ("default-viewer", "kubeflow-view")):
            self._owned("v1", "ServiceAccount", name, account, ref, {}, {})
            self._owned("rbac.authorization.k8s.io/v1", "RoleBinding", name, account, ref, {},
                        {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                         "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": name}]})
        subject = {"kind": owner.get("kind", "User"), "name": owner_name}
        subject.update((k, owner[k]) for k in ("apiGroup", "namespace") if owner.get(k))
        self._owned("rbac.authorization.k8s.io/v1", "RoleBinding", name, "namespaceAdmin", ref,
                    {"annotations": {"user": owner_name, "role": "admin"}},
                    {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                 "name": "kubeflow-admin"}, "subjects": [subject]})
        quota = (profile.get("spec") or {}).get("resourceQuotaSpec") or {}
        quota_res = self.kube.resource("v1", "ResourceQuota")
        if quota.get("hard"):
            self._owned("v1", "ResourceQuota", name, QUOTA_NAME, ref, {}, {"spec": quota})
        elif self.kube.get(quota_res, QUOTA_NAME, name) is not None:
            self.kube.delete(quota_res, QUOTA_NAME, name)
        if FINALIZER not in (meta.get("finalizers") or []):
            fresh = self.kube.get(self.profiles, name)
            if fresh is not None and not fresh["metadata"].get("deletionTimestamp"):
                fresh["metadata"]["finalizers"] = list(fresh["metadata"].get("finalizers") or []) + [FINALIZER]
                self._update(self.profiles, fresh)
        return True

    def _owned(self, api_version, kind, namespace, name, ref, meta, fields):
        """Create the object, or Update the compared fields back to the controller's (full replace
        of each); metadata others added is kept."""
        res = self.kube.resource(api_version, kind)
        live = self.kube.get(res, name, namespace)
        if live is None:
            body = {"apiVersion": api_version, "kind": kind,
                    "metadata": dict(meta, name=name, namespace=namespace, ownerReferences=[ref])}
            body.update(fields)
            self._create(res, body)
            return
        if all(live.get(key) == value for key, value in fields.items()):
            return
        live.update(fields)
        self._update(res, live)

    def _create(self, res, body):
        meta = body["metadata"]
        try:
            self.kube.request("POST", self.kube.path(res, meta.get("namespace")), query={"fieldManager": MANAGER},
                              body=body)
        except KubeError as err:
            if err.status != 409:  # made meanwhile: the next reconcile compares it
                raise

    def _update(self, res, obj):
        meta = obj["metadata"]
        meta.pop("managedFields", None)
        try:
            self.kube.request("PUT", self.kube.path(res, meta.get("namespace"), meta["name"]),
                              query={"fieldManager": MANAGER}, body=obj)
        except KubeError as err:
            if err.status not in (404, 409):  # gone, or changed meanwhile: the next reconcile sees it
                raise

    # -------------------------------------------------- running
    def run(self):
        while not self._stop.is_set():
            try:
                self.step(self.only)
            except Exception as err:  # pylint: disable=broad-except  # a controller keeps reconciling
                self.errors.append(str(err))
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread = threading.Thread(target=self.run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(10)


# ---------------------------------------------------------------- OLM

SUBSCRIPTIONS = ("operators.coreos.com/v1alpha1", "Subscription")
INSTALL_PLANS = ("operators.coreos.com/v1alpha1", "InstallPlan")
CSVS = ("operators.coreos.com/v1alpha1", "ClusterServiceVersion")


def _status_patch(kube, res, obj, status, manager):
    meta = obj["metadata"]
    body = {"apiVersion": res.api_version, "kind": res.kind, "metadata": {"name": meta["name"]}, "status": status}
    if meta.get("namespace"):
        body["metadata"]["namespace"] = meta["namespace"]
    return kube.request("PATCH", kube.path(res, meta.get("namespace"), meta["name"]) + "/status",
                        query={"fieldManager": manager, "force": "true"}, body=body,
                        content_type="application/apply-patch+yaml")


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def olm_step(kube, subscription, csv_name=None, phase="Succeeded"):
    """What OLM does for one Subscription: resolve it to an InstallPlan (install-<package>,
    spec.approval from the Subscription's installPlanApproval, approved only when Automatic) and,
    once the plan is approved, install the CSV and mark it `phase`. Returns the CSV name, or None
    while the plan waits for approval."""
    meta, spec = subscription["metadata"], subscription["spec"]
    namespace, package = meta["namespace"], spec["name"]
    csv_name = csv_name or spec.get("startingCSV") or "%s.v1.0.0" % package
    plans = kube.resource(*INSTALL_PLANS)
    plan_name = "install-%s" % package.replace(".", "-")[:40]
    manual = spec.get("installPlanApproval") == "Manual"
    plan = kube.get(plans, plan_name, namespace)
    if plan is None:
        body = {"apiVersion": plans.api_version, "kind": "InstallPlan",
                "metadata": {"name": plan_name, "namespace": namespace,
                             "ownerReferences": [{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
                                                  "name": meta["name"], "uid": meta["uid"]}]},
                "spec": {"approval": "Manual" if manual else "Automatic", "approved": not manual,
                         "clusterServiceVersionNames": [csv_name], "generation": 1}}
        plan = kube.request("POST", kube.path(plans, namespace), query={"fieldManager": "olm"}, body=body)
        subs = kube.resource(*SUBSCRIPTIONS)
        _status_patch(kube, subs, subscription, {
            "currentCSV": csv_name, "state": "UpgradePending", "lastUpdated": _now(),
            "installPlanRef": {"apiVersion": plans.api_version, "kind": "InstallPlan", "name": plan_name,
                               "namespace": namespace},
            "installplan": {"apiVersion": plans.api_version, "kind": "InstallPlan", "name": plan_name,
                            "uuid": plan["metadata"]["uid"]}}, "olm")
    if not plan["spec"].get("approved"):
        _status_patch(kube, plans, plan, {"phase": "RequiresApproval"}, "olm")
        return None
    _status_patch(kube, plans, plan, {"phase": "Complete"}, "olm")
    play_csv(kube, namespace, package, csv_name, phase)
    return csv_name


def play_csv(kube, namespace, package, csv_name, phase="Succeeded"):
    """The ClusterServiceVersion OLM installs for an approved plan, labelled
    operators.coreos.com/<package>.<namespace> and in `phase`; Failed (TooManyOperatorGroups) in a
    namespace that holds more than one OperatorGroup, as OLM fails it."""
    res = kube.resource(*CSVS)
    body = {"apiVersion": res.api_version, "kind": "ClusterServiceVersion",
            "metadata": {"name": csv_name, "namespace": namespace,
                         "labels": {"operators.coreos.com/%s.%s" % (package, namespace): ""}},
            "spec": {"displayName": package, "install": {"strategy": "deployment"}}}
    live = kube.apply(res, body, "olm", force=True)
    if not fail_csvs_of_many_groups(kube, namespace):
        _status_patch(kube, res, live, {"phase": phase,
                                        "reason": "InstallSucceeded" if phase == "Succeeded" else "Installing",
                                        "message": "install strategy completed with no errors"}, "olm")
    return csv_name


# operator-framework/operator-lifecycle-manager, pkg/controller/operators/olm/operator.go,
# operatorGroupForCSV: with more than one OperatorGroup in its namespace, a CSV (Succeeded or not)
# goes to phase Failed, reason TooManyOperatorGroups, with this message.
TOO_MANY_GROUPS = "csv created in namespace with multiple operatorgroups, can't pick one automatically"


def fail_csvs_of_many_groups(kube, namespace):
    """What OLM does to the CSVs of a namespace with more than one OperatorGroup: it fails them
    (TooManyOperatorGroups). Returns whether it did."""
    groups = kube.list(kube.resource("operators.coreos.com/v1", "OperatorGroup"), namespace=namespace)
    if len(groups) < 2:
        return False
    res = kube.resource(*CSVS)
    for csv in kube.list(res, namespace=namespace):
        if (csv.get("status") or {}).get("reason") != "TooManyOperatorGroups":
            _status_patch(kube, res, csv, {"phase": "Failed", "reason": "TooManyOperatorGroups",
                                           "message": TOO_MANY_GROUPS}, "olm")
    return True


# ---------------------------------------------------------------- the mesh operators

def mesh_ready_status(generation, ready=True):
    """The status a mesh operator writes once it has acted on `generation` of its object: the
    generation it observed, and Ready."""
    return {"observedGeneration": generation,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                            "reason": "ComponentsReady" if ready else "ComponentsNotReady",
                            "message": "All component deployments are Available",
                            "lastTransitionTime": _now()}]}


def _maistra_gateway_labels(name, gateway):
    """The labels an additional ingress gateway of an SMCP gives its pods."""
    labels = ((gateway.get("runtime") or {}).get("pod") or {}).get("metadata", {}).get("labels")
    return dict(labels or {"istio": name})


def maistra_network_policies(smcp, members):
    """The NetworkPolicies the Service Mesh 2 operator writes for a ServiceMeshControlPlane whose
    spec.security.manageNetworkPolicy is not false (its default is true), after its 2.x charts:
    in the control plane's namespace, one admitting the member namespaces, one admitting the
    OpenShift router, and one per ingress gateway admitting everything to its pods; in each
    member namespace, one admitting the other members and one admitting the router to the pods
    labelled maistra.io/expose-route. `members` are the member namespaces' names."""
    spec = smcp.get("spec") or {}
    if ((spec.get("security") or {}).get("manageNetworkPolicy")) is False:
        return []
    cp_ns, rev = smcp["metadata"]["namespace"], smcp["metadata"]["name"]
    internal = {"maistra.io/internal": "true"}

    def policy(name, namespace, pod_selector, ingress):
        return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": {"name": name, "namespace": namespace, "annotations": dict(internal),
                             "labels": {"maistra-version": spec.get("version", "v2.6").lstrip("v") + ".0",
                                        "maistra.io/owner": cp_ns}},
                "spec": {"podSelector": pod_selector, "policyTypes": ["Ingress"], "ingress": ingress}}
    from_members = [{"from": [{"namespaceSelector": {"matchLabels": {"maistra.io/member-of": cp_ns}}}]}]
    from_router = [{"from": [{"namespaceSelector": {"matchLabels": {"network.openshift.io/policy-group": "ingress"}}}]}]
    out = [policy("istio-mesh-" + rev, cp_ns, {}, from_members),
           policy("istio-ingress-router-" + rev, cp_ns, {}, from_router)]
    gateways = spec.get("gateways") or {}
    for name, gateway in sorted((gateways.get("additionalIngress") or {}).items()):
        if gateway.get("enabled", True):
            # the chart selects with the labels it gives the gateway's pods, so it always selects them
            out.append(policy(name, gateway.get("namespace") or cp_ns,
                              {"matchLabels": _maistra_gateway_labels(name, gateway)}, [{}]))
    for member in members:
        out.append(policy("istio-mesh-" + rev, member, {}, from_members))
        out.append(policy("istio-expose-route-" + rev, member,
                          {"matchLabels": {"maistra.io/expose-route": "true"}}, from_router))
    return out


def istiod_injector_webhook(revision, namespace):
    """The MutatingWebhookConfiguration istiod's chart (istio-discovery, mutatingwebhook.yaml)
    installs for a revision; Service Mesh 3's operator installs that chart for each IstioRevision.
    `revision` "" or "default" is the default revision. No istiod answers it here, so create it
    only once the pods exist: its failurePolicy is Fail, as the chart's."""
    rev = "" if revision in ("", "default") else revision
    name = "istio-sidecar-injector" + ("-" + rev if rev else "") + ("" if namespace == "istio-system" else "-" + namespace)

    def hook(prefix, namespace_selector, object_selector):
        return {"name": prefix + "sidecar-injector.istio.io",
                "clientConfig": {"service": {"name": "istiod" + ("-" + rev if rev else ""), "namespace": namespace,
                                             "path": "/inject", "port": 443}},
                "sideEffects": "None", "failurePolicy": "Fail", "reinvocationPolicy": "Never",
                "admissionReviewVersions": ["v1"],
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
                "namespaceSelector": {"matchExpressions": namespace_selector},
                "objectSelector": {"matchExpressions": object_selector}}
    not_disabled = {"key": "sidecar.istio.io/inject", "operator": "NotIn", "values": ["false"]}
    this_rev = rev or "default"
    hooks = [hook("rev.namespace.", [{"key": "istio.io/rev", "operator": "In", "values": [this_rev]},
                                     {"key": "istio-injection", "operator": "DoesNotExist"}], [not_disabled]),
             hook("rev.object.", [{"key": "istio.io/rev", "operator": "DoesNotExist"},
                                  {"key": "istio-injection", "operator": "DoesNotExist"}],
                  [not_disabled, {"key": "istio.io/rev", "operator": "In", "values": [this_rev]}])]
    if not rev:
        hooks += [hook("namespace.", [{"key": "istio-injection", "operator": "In", "values": ["enabled"]}],
                       [not_disabled]),
                  hook("object.", [{"key": "istio-injection", "operator": "DoesNotExist"},
                                   {"key": "istio.io/rev", "operator": "DoesNotExist"}],
                       [{"key": "sidecar.istio.io/inject", "operator": "In", "values": ["true"]},
                        {"key": "istio.io/rev", "operator": "DoesNotExist"}])]
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": name, "labels": {"istio.io/rev": this_rev, "app": "sidecar-injector",
                                                  "app.kubernetes.io/name": "istiod"}},
            "webhooks": hooks}


def istiod_service(revision, namespace):
    """istiod's Service for a revision (istio-discovery's service.yaml), which its webhook calls."""
    rev = "" if revision in ("", "default") else revision
    ports = [("grpc-xds", 15010, 15010), ("https-dns", 15012, 15012), ("https-webhook", 443, 15017),
             ("http-monitoring", 15014, 15014)]
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "istiod" + ("-" + rev if rev else ""), "namespace": namespace,
                         "labels": {"app": "istiod", "istio": "pilot", "istio.io/rev": rev or "default"}},
            "spec": {"selector": {"app": "istiod", "istio.io/rev": rev or "default"},
                     "ports": [{"name": n, "port": p, "targetPort": t, "protocol": "TCP"} for n, p, t in ports]}}


def ingress_gateway_objects(name, namespace, labels, ports, image):
    """An ingress gateway as a mesh operator runs it: ServiceAccount <name>-service-account,
    a Deployment of Envoy (a concrete proxy image, not injected) and its Service."""
    account = name + "-service-account"
    pod = {"serviceAccountName": account, "containers": [{
        "name": "istio-proxy", "image": image, "args": ["proxy", "router"],
        "ports": [{"containerPort": p["targetPort"], "protocol": "TCP"} for p in ports]}]}
    return [{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": namespace}},
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace,
                                                                         "labels": dict(labels)},
             "spec": {"replicas": 1, "selector": {"matchLabels": dict(labels)},
                      "template": {"metadata": {"labels": dict(labels), "annotations": {"sidecar.istio.io/inject": "false"}},
                                   "spec": pod}}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
             "spec": {"selector": dict(labels), "ports": [dict(p) for p in ports]}}]


def maistra_gateway_objects(smcp):
    """What the Service Mesh 2 operator runs for each additional ingress gateway of a
    ServiceMeshControlPlane: the gateway's pods carry the labels of runtime.pod.metadata.labels,
    in the gateway's namespace (the control plane's by default)."""
    out = []
    gateways = ((smcp.get("spec") or {}).get("gateways") or {}).get("additionalIngress") or {}
    for name, gateway in sorted(gateways.items()):
        if not gateway.get("enabled", True):
            continue
        labels = dict(_maistra_gateway_labels(name, gateway), app=name)
        ports = [dict(p) for p in (gateway.get("service") or {}).get("ports") or []]
        out += ingress_gateway_objects(name, gateway.get("namespace") or smcp["metadata"]["namespace"], labels, ports,
                                       "registry.redhat.io/openshift-service-mesh/proxyv2-rhel9:2.6")
    return out
