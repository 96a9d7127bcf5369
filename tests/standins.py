"""Test code only: stand-ins for the external controllers kfocp relies on but that the local control
plane does not run (Kubeflow's profile controller, OLM, the mesh operators).

Each behaves as the real one does, as /work/shared/facts/profile-controller.md and the upstream
sources describe; tests/unit/test_standins.py holds them to it. A stand-in that is kinder than the
controller it plays lets the roles pass here and fail on a cluster, so none of them may be loosened.
"""
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from ipaddress import ip_address
from urllib.parse import unquote, urlencode, urlsplit, urlunsplit

import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import scc_policies
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


# ---------------------------------------------------------------- KFAM (the dashboard's "Manage contributors")
# kubeflow/dashboard, components/access-management/kfam/bindings.go (commit 0e812cda): KFAM runs in
# profiles-deployment and reads the same two principals from its environment.
KFAM_ROLES = {"admin": "kubeflow-admin", "edit": "kubeflow-edit", "view": "kubeflow-view"}


def kfam_binding_name(user, role):
    """getBindingName: User-<user>-ClusterRole-<role>, lower case, every run of characters other
    than letters and digits made '-'."""
    raw = "-".join(["User", re.sub(r"[^a-zA-Z0-9]+", "-", user), "ClusterRole", role]).lower()
    return re.sub(r"[^a-zA-Z0-9]+", "-", raw)


def kfam_contributor_objects(namespace, user, role, env=None, userid=DEFAULT_USERID):
    """What KFAM's BindingClient.Create writes for a contributor: a RoleBinding to kubeflow-<role>
    and an AuthorizationPolicy (no action: ALLOW) with one rule, the user header from the gateway
    and pipelines UI principals of its environment (upstream's defaults when unset), both named
    kfam_binding_name() and annotated user and role."""
    env = dict(DEFAULT_ENV, **{k: v for k, v in (env or {}).items() if k in DEFAULT_ENV and v})
    header, prefix = userid
    name = kfam_binding_name(user, role)
    meta = {"name": name, "namespace": namespace, "annotations": {"user": user, "role": role}}
    return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": dict(meta),
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": KFAM_ROLES[role]},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]},
            {"apiVersion": "security.istio.io/v1beta1", "kind": "AuthorizationPolicy", "metadata": dict(meta),
             "spec": {"rules": [{"when": [{"key": "request.headers[%s]" % header, "values": [prefix + user]}],
                                 "from": [{"source": {"principals": [env["ISTIO_INGRESS_GATEWAY_PRINCIPAL"],
                                                                     env["KFP_UI_PRINCIPAL"]]}}]}]}}]


def kfam_add_contributor(kube, namespace, user, role, rolebinding_client=None):
    """KFAM adding a contributor, configured as the profile controller's Deployment kfocp made
    configures it: both objects created (POST, field manager kfam); the RoleBinding with
    `rolebinding_client` when given. Returns the name."""
    env, userid, _labels = ProfileController(kube).configuration()
    objs = kfam_contributor_objects(namespace, user, role, env, userid)
    for client, body in zip((rolebinding_client or kube, kube), objs):
        res = client.resource(body["apiVersion"], body["kind"])
        client.request("POST", client.path(res, namespace), query={"fieldManager": "kfam"}, body=body)
    return objs[0]["metadata"]["name"]


def owner_access_policy(profile_name, owner, env=None, userid=DEFAULT_USERID):
    """The ns-owner-access-istio AuthorizationPolicy the controller writes in the profile's
    namespace (without the ownerReference, which names the live Profile)."""
    return {"apiVersion": "security.istio.io/v1beta1", "kind": "AuthorizationPolicy",
            "metadata": {"name": AUTHZ_NAME, "namespace": profile_name, "annotations": {"user": owner, "role": "admin"}},
            "spec": authorization_policy_spec(profile_name, owner, env, userid)}


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
        # one pass in upstream's order, for a live Profile and for one being deleted alike: the
        # namespace, the owned objects, and only then the finalizer block (facts: "Order inside
        # one reconcile"); a refused Profile returns before it, so a deleted one stays Terminating
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
        fresh = self.kube.get(self.profiles, name)
        if fresh is None:
            return True
        finalizers = list(fresh["metadata"].get("finalizers") or [])
        if fresh["metadata"].get("deletionTimestamp"):
            if FINALIZER in finalizers:
                # the plugins' revocation (IAM trust, annotations) has nothing to undo here
                fresh["metadata"]["finalizers"] = [f for f in finalizers if f != FINALIZER]
                self._update(self.profiles, fresh)
            return False
        if FINALIZER not in finalizers:
            fresh["metadata"]["finalizers"] = finalizers + [FINALIZER]
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


# ---------------------------------------------------------------- oauth-proxy's identity headers

def oauth_proxy_headers(name, bearer=False):
    """The identity headers oauth-proxy (openshift/oauth-proxy at 2b9ee007, pass-user-headers on)
    sets for the OpenShift user `name`. A browser session: providers/openshift GetEmailAddress
    makes the e-mail the name, with "@cluster.local" appended when it holds no "@"; the cookie keeps
    that e-mail, and providers/session_state.go DecodeSessionState makes User the part before its
    first "@" and Email the whole. A bearer token (CheckRequestAuth, ValidateRequest): User is the
    name, Email the name + "@cluster.local". oauthproxy.go then sets X-Forwarded-User = User and
    X-Forwarded-Email = Email (the e-mail only when it is not empty)."""
    if bearer:
        user, email = name, name + "@cluster.local"
    else:
        email = name if "@" in name else name + "@cluster.local"
        user = email.split("@")[0]
    return {"X-Forwarded-User": user, "X-Forwarded-Email": email}


def _go_header_key(name):
    """net/textproto.CanonicalMIMEHeaderKey: how Go's server files a header the client sent."""
    return "-".join(part[:1].upper() + part[1:].lower() for part in name.split("-"))


def oauth_proxy_upstream_headers(client_headers, name, bearer=False):
    """The headers of the request oauth-proxy passes upstream for a client that sent
    `client_headers` and is logged in as `name`: the client's headers (Go files them under
    canonical keys), with X-Forwarded-User and X-Forwarded-Email replaced by the proxy's
    (`req.Header[key] = []string{value}`). Everything else the client sent passes through."""
    out = {}
    for key, value in client_headers.items():
        out[_go_header_key(key)] = value
    out.update(oauth_proxy_headers(name, bearer))
    return out


# ---------------------------------------------------------------- OpenShift Serverless (Knative Serving)

def knative_serving_workloads(serving_namespace="knative-serving", ingress_namespace=None):
    """The ServiceAccounts and Deployments the Serverless operator runs for a KnativeServing with
    Kourier (openshift-knative/serverless-operator at 02f6bc2c: kodata/knative-serving/latest/
    2-serving-core.yaml, kodata/ingress/latest/kourier/1-net-kourier.yaml, and
    pkg/serving/kourier.go, which moves Kourier to <serving namespace>-ingress). The activator
    runs as `activator`, the autoscaler and controller as `controller`; Kourier's gateway names
    no service account; its controller runs as `net-kourier`. The data path to the inference
    pods is the activator and the gateway (labelled kfocp.test/data-path here)."""
    ingress_namespace = ingress_namespace or serving_namespace + "-ingress"
    workloads = [(serving_namespace, "activator", "activator", True), (serving_namespace, "autoscaler", "controller", False),
                 (serving_namespace, "controller", "controller", False),
                 (ingress_namespace, "3scale-kourier-gateway", None, True),
                 (ingress_namespace, "net-kourier-controller", "net-kourier", False)]
    out = []
    for namespace, name, account, data_path in workloads:
        labels = {"app": name}
        pod = {"containers": [{"name": name, "image": "registry.example/knative/%s:latest" % name}]}
        if account:
            pod["serviceAccountName"] = account
            sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": namespace}}
            if sa not in out:
                out.append(sa)
        meta = {"name": name, "namespace": namespace, "labels": dict(labels)}
        if data_path:
            meta["labels"]["kfocp.test/data-path"] = "true"
        out.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                    "spec": {"selector": {"matchLabels": labels},
                             "template": {"metadata": {"labels": dict(labels)}, "spec": pod}}})
    return out


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


# What OLM writes, as operator-framework/operator-lifecycle-manager does it (@ 992bb097749e5994eedc5e4882583df952d8a70e,
# pkg/controller/operators/catalog/operator.go), in the fields operator-framework/api declares
# (@ 3048ccdc52d1858783800c6d40305357aff66c8c, pkg/operators/v1alpha1/subscription_types.go and
# installplan_types.go).

def olm_install_plan(subscription, plan_name, csv_name):
    """The InstallPlan OLM makes for a Subscription (createInstallPlan): spec.approval the
    Subscription's installPlanApproval (Automatic when unset), approved only when Automatic, the
    CSVs it installs, generation 1; status.phase Installing, or RequiresApproval when Manual. OLM
    names it from generateName "install-"; this stand-in names it install-<package> so that tests
    can find it."""
    meta, spec = subscription["metadata"], subscription["spec"]
    approval = "Manual" if spec.get("installPlanApproval") == "Manual" else "Automatic"
    return ({"apiVersion": "operators.coreos.com/v1alpha1", "kind": "InstallPlan",
             "metadata": {"name": plan_name, "namespace": meta["namespace"],
                          "ownerReferences": [{"apiVersion": "operators.coreos.com/v1alpha1", "kind": "Subscription",
                                               "name": meta["name"], "uid": meta["uid"]}]},
             "spec": {"approval": approval, "approved": approval == "Automatic",
                      "clusterServiceVersionNames": [csv_name], "generation": 1}},
            {"phase": "RequiresApproval" if approval == "Manual" else "Installing"})


def olm_subscription_status(plan, csv_name, csv_installed):
    """The Subscription's status once OLM made `plan` for it (setIPReference and
    ensureSubscriptionInstallPlanState: installPlanRef, the plan's ObjectReference; installplan,
    its InstallPlanReference; state UpgradePending; installPlanGeneration; currentCSV) and, once the
    CSV exists (ensureSubscriptionCSVState), state AtLatestKnown and installedCSV = currentCSV."""
    meta = plan["metadata"]
    ref = {"apiVersion": plan["apiVersion"], "kind": "InstallPlan", "namespace": meta["namespace"],
           "name": meta["name"], "uid": meta["uid"], "resourceVersion": meta["resourceVersion"]}
    status = {"installPlanRef": ref, "installplan": {"apiVersion": plan["apiVersion"], "kind": "InstallPlan",
                                                     "name": meta["name"], "uuid": meta["uid"]},
              "installPlanGeneration": plan["spec"].get("generation", 1), "currentCSV": csv_name,
              "state": "UpgradePending", "lastUpdated": _now()}
    if csv_installed:
        status.update(state="AtLatestKnown", installedCSV=csv_name)
    return status


def olm_step(kube, subscription, csv_name=None, phase="Succeeded"):
    """What OLM does for one Subscription: resolve it to an InstallPlan (olm_install_plan) and
    point the Subscription at it (olm_subscription_status); once the plan is approved, complete it,
    install the CSV (play_csv) in `phase` and mark the Subscription AtLatestKnown with its
    installedCSV. Returns the CSV name, or None while the plan waits for approval."""
    meta, spec = subscription["metadata"], subscription["spec"]
    namespace, package = meta["namespace"], spec["name"]
    csv_name = csv_name or spec.get("startingCSV") or "%s.v1.0.0" % package
    plans, subs = kube.resource(*INSTALL_PLANS), kube.resource(*SUBSCRIPTIONS)
    plan_name = "install-%s" % package.replace(".", "-")[:40]
    plan = kube.get(plans, plan_name, namespace)
    if plan is None:
        body, status = olm_install_plan(subscription, plan_name, csv_name)
        plan = kube.request("POST", kube.path(plans, namespace), query={"fieldManager": "olm"}, body=body)
        plan = _status_patch(kube, plans, plan, status, "olm")
        _status_patch(kube, subs, subscription, olm_subscription_status(plan, csv_name, False), "olm")
    if not plan["spec"].get("approved"):
        _status_patch(kube, plans, plan, {"phase": "RequiresApproval"}, "olm")
        return None
    plan = _status_patch(kube, plans, plan, {"phase": "Complete"}, "olm")
    play_csv(kube, namespace, package, csv_name, phase)
    _status_patch(kube, subs, subscription, olm_subscription_status(plan, csv_name, True), "olm")
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

def mesh_ready_status(generation, ready=True, kind="ServiceMeshControlPlane"):
    """The status a mesh operator writes once it has acted on `generation` of its object: the
    generation it observed and its Ready condition.
    - Service Mesh 2 (maistra/istio-operator, branch maistra-2.5 @ 8143614c5f13ef9b894d107d47353507b70f45ea):
      controlplane/reconciler.go sets status.observedGeneration to the generation; readiness.go
      sets Ready True, reason ComponentsReady, "All component deployments are Available", or False,
      ComponentsNotReady, naming the components (pkg/apis/maistra/status/status.go).
    - Sail (istio-ecosystem/sail-operator @ 328df99dc9fc973a7dd0c6442145dc86459a1481), kind Istio:
      controllers/istio/istio_controller.go sets observedGeneration and copies the IstioRevision's
      Ready condition, which istiorevision_controller.go determineReadyCondition sets True with
      reason Ready, or False with reason IstiodNotReady, "not all istiod pods are ready"."""
    if kind == "Istio":
        condition = {"type": "Ready", "status": "True", "reason": "Ready"} if ready else \
            {"type": "Ready", "status": "False", "reason": "IstiodNotReady", "message": "not all istiod pods are ready"}
    else:
        condition = {"type": "Ready", "status": "True" if ready else "False",
                     "reason": "ComponentsReady" if ready else "ComponentsNotReady",
                     "message": "All component deployments are Available" if ready else
                     "The following components are not fully available: [istiod]"}
    condition["lastTransitionTime"] = _now()
    return {"observedGeneration": generation, "conditions": [condition]}


# The chart's labels of a gateway given none (gateways/istio-ingress values.yaml).
MAISTRA_DEFAULT_GATEWAY_LABELS = {"app": "istio-ingressgateway", "istio": "ingressgateway"}


def _maistra_gateway_labels(gateway):
    """The labels the Service Mesh 2 operator gives an additional ingress gateway (maistra/
    istio-operator, conversion/gateways.go gatewayConfigToValues: from service.metadata.labels;
    runtime.pod.metadata.labels becomes podLabels, which the gateway chart never reads)."""
    labels = (((gateway.get("service") or {}).get("metadata") or {}).get("labels"))
    return dict(labels or MAISTRA_DEFAULT_GATEWAY_LABELS)


def maistra_network_policies(smcp, members):
    """The NetworkPolicies the Service Mesh 2 operator writes for a ServiceMeshControlPlane whose
    spec.security.manageNetworkPolicy is not false (its default is true), after its charts
    (mesh-config, istio-discovery and gateways/istio-ingress networkpolicy.yaml): in the control
    plane's namespace istio-mesh-<rev> (every pod, from the member namespaces),
    istio-expose-route-<rev> (pods labelled maistra.io/expose-route, from the router's namespaces),
    istio-istiod-<rev> (istiod's pods) and one per ingress gateway, named after it, admitting
    everything to its pods. The memberroll controller copies the policies not annotated
    maistra.io/internal (istio-mesh and istio-expose-route) into each member namespace.
    `members` are the member namespaces' names."""
    spec = smcp.get("spec") or {}
    if ((spec.get("security") or {}).get("manageNetworkPolicy")) is False:
        return []
    cp_ns, rev = smcp["metadata"]["namespace"], smcp["metadata"]["name"]

    def policy(name, namespace, pod_selector, ingress, internal=False):
        meta = {"name": name, "namespace": namespace,
                "labels": {"maistra-version": spec.get("version", "v2.6").lstrip("v") + ".0", "maistra.io/owner": cp_ns}}
        if internal:
            meta["annotations"] = {"maistra.io/internal": "true"}
        return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta,
                "spec": {"podSelector": pod_selector, "policyTypes": ["Ingress"], "ingress": ingress}}
    shared = [policy("istio-mesh-" + rev, cp_ns, {},
                     [{"from": [{"namespaceSelector": {"matchLabels": {"maistra.io/member-of": cp_ns}}}]}]),
              policy("istio-expose-route-" + rev, cp_ns, {"matchLabels": {"maistra.io/expose-route": "true"}},
                     [{"from": [{"namespaceSelector": {"matchLabels": {"network.openshift.io/policy-group": "ingress"}}}]}])]
    # the chart's ingress item ("- ports:" then "port: webhook" at the item's indent) holds no
    # field that narrows it, so it admits everything to istiod's pods
    out = shared + [policy("istio-istiod-" + rev, cp_ns, {"matchLabels": {"app": "istiod", "istio.io/rev": rev}},
                           [{}], internal=True)]
    gateways = spec.get("gateways") or {}
    for name, gateway in sorted((gateways.get("additionalIngress") or {}).items()):
        if gateway.get("enabled", True):
            # the chart selects with the labels it gives the gateway's pods, so it always selects them
            out.append(policy(name, gateway.get("namespace") or cp_ns,
                              {"matchLabels": _maistra_gateway_labels(gateway)}, [{}], internal=True))
    for member in members:
        for source in shared:
            out.append(dict(source, metadata=dict(source["metadata"], namespace=member)))
    return out


def istiod_injector_webhook(revision, namespace):
    """The MutatingWebhookConfiguration istiod's chart (istio-discovery, mutatingwebhook.yaml)
    installs for a revision; Service Mesh 3's operator installs that chart for each IstioRevision.
    `revision` "" or "default" is the default revision. No istiod answers it here: the API server
    calls it through the plane's egress proxy, which refuses it at once, and its failurePolicy is
    Fail, as the chart's, so the pods it matches are refused, as on a cluster whose istiod is down.
    Create it only once the pods exist."""
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
    ServiceMeshControlPlane, in the gateway's namespace (the control plane's by default): the
    chart's Deployment selects, and labels its pods with, the gateway's labels (_maistra_gateway_labels),
    and adds maistra.io/gateway: <name>.<namespace> and maistra-control-plane: <cp namespace>."""
    out = []
    cp_ns = smcp["metadata"]["namespace"]
    gateways = ((smcp.get("spec") or {}).get("gateways") or {}).get("additionalIngress") or {}
    for name, gateway in sorted(gateways.items()):
        if not gateway.get("enabled", True):
            continue
        namespace = gateway.get("namespace") or cp_ns
        labels = _maistra_gateway_labels(gateway)
        ports = [dict(p) for p in (gateway.get("service") or {}).get("ports") or []]
        objs = ingress_gateway_objects(name, namespace, labels, ports,
                                       "registry.redhat.io/openshift-service-mesh/proxyv2-rhel9:2.6")
        pod_labels = objs[1]["spec"]["template"]["metadata"]["labels"]
        pod_labels.update({"maistra.io/gateway": "%s.%s" % (name, namespace), "maistra-control-plane": cp_ns})
        out += objs
    return out


# ---------------------------------------------------------------- OpenShift: what verify.yml reads
# The status and annotations that OpenShift's own controllers and admission write, which verify.yml
# checks. Each follows the upstream source named (see docs/contracts.md).

def cluster_version(cluster_id="00000000-0000-4000-8000-000000000001", channel="stable-4.18"):
    """The ClusterVersion `version` the cluster-version operator keeps on every OpenShift cluster
    (openshift/api config/v1 types_cluster_version.go: spec.clusterID is required)."""
    return {"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion", "metadata": {"name": "version"},
            "spec": {"clusterID": cluster_id, "channel": channel}}


ROUTER_NAME = "default"


def route_ingress(route, admitted=True, reason="", message="", router=ROUTER_NAME, canonical="router-default.apps.local"):
    """status.ingress as the OpenShift router's StatusAdmitter writes it for one router
    (openshift/router pkg/router/controller/status.go, recordIngressCondition): an entry per router
    with host, wildcardPolicy, routerCanonicalHostname and the condition Admitted, True when it
    admits the Route, False with the rejection's reason and message (RecordRouteRejection).
    Entries of other routers are kept."""
    spec = route.get("spec") or {}
    condition = {"type": "Admitted", "status": "True" if admitted else "False", "lastTransitionTime": _now()}
    if not admitted:
        condition.update(reason=reason, message=message)
    entry = {"routerName": router, "host": spec.get("host", ""), "wildcardPolicy": spec.get("wildcardPolicy", "None"),
             "routerCanonicalHostname": canonical, "conditions": [condition]}
    others = [i for i in (route.get("status") or {}).get("ingress") or [] if i.get("routerName") != router]
    return others + [entry]


def play_router(kube, namespace, name, admitted=True, reason="HostAlreadyClaimed",
                message="route already exposes this host"):
    """The router admitting (or rejecting) a Route: its status.ingress written through the status
    subresource. Returns the Route."""
    res = kube.resource("route.openshift.io/v1", "Route")
    route = kube.get(res, name, namespace)
    if route is None:
        raise AssertionError("no Route %s/%s for the router to admit" % (namespace, name))
    return _status_patch(kube, res, route, {"ingress": route_ingress(route, admitted, reason, message)}, "openshift-router")


def _selector_matches(selector, labels):
    """maistra's selectorMatches: matchLabels all equal; matchExpressions In, NotIn, Exists, DoesNotExist."""
    labels = labels or {}
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for req in selector.get("matchExpressions") or []:
        key, op, values = req["key"], req["operator"], req.get("values") or []
        if (op == "In" and labels.get(key) not in values) or (op == "NotIn" and key in labels and labels[key] in values) \
                or (op == "Exists" and key not in labels) or (op == "DoesNotExist" and key in labels):
            return False
    return True


def _roll_includes(roll, namespace):
    """ServiceMeshMemberRoll.IsMember (maistra/istio-operator pkg/apis/maistra/v1
    servicemeshmemberroll_types.go): spec.members ["*"], a name in spec.members, or labels matching
    a spec.memberSelectors entry; never the roll's own namespace, kube, openshift, kube-*,
    openshift-* or ibm-*."""
    name, spec = namespace["metadata"]["name"], roll.get("spec") or {}
    members = spec.get("members") or []
    if name == roll["metadata"]["namespace"] or name in ("kube", "openshift") or \
            name.startswith(("kube-", "openshift-", "ibm-")):
        return False
    return members == ["*"] or name in members or any(
        _selector_matches(s, namespace["metadata"].get("labels")) for s in spec.get("memberSelectors") or [])


def member_roll_status(roll, control_planes, namespaces, members, not_configured=(), old=None):
    """The status the Service Mesh 2 operator's member roll controller writes (maistra/istio-operator
    pkg/controller/servicemesh/memberroll/controller.go, branch maistra-2.5): status.members is every
    name in spec.members (but "*"), every namespace the roll includes, and every namespace holding
    a ServiceMeshMember (`members`: their namespaces), less the roll's own; pendingMembers those not
    yet configured and up to date (here: those in `not_configured`, which the operator has not
    reached); configuredMembers the others; Ready False with reason ErrSMCPMissing when no control
    plane is in the namespace, False with ReconcileError "The following namespaces are not yet
    configured: [a b]" while members are pending, else True with reason Configured."""
    own = roll["metadata"]["namespace"]
    known = set(m for m in (roll.get("spec") or {}).get("members") or [] if m != "*")
    known |= set(n["metadata"]["name"] for n in namespaces if _roll_includes(roll, n))
    known |= set(members)
    known.discard(own)
    pending = sorted(known & set(not_configured))
    configured = sorted(known - set(pending))
    if not control_planes:
        ready = ("False", "ErrSMCPMissing", "No ServiceMeshControlPlane exists in the namespace")
    elif pending:
        ready = ("False", "ReconcileError", "The following namespaces are not yet configured: [%s]" % " ".join(pending))
    else:
        ready = ("True", "Configured", "All namespaces have been configured successfully")
    before = dict((c.get("type"), c) for c in ((old or {}).get("conditions") or []))
    condition = {"type": "Ready", "status": ready[0], "reason": ready[1], "message": ready[2],
                 "lastTransitionTime": before["Ready"]["lastTransitionTime"]
                 if before.get("Ready", {}).get("status") == ready[0] else _now()}
    return {"members": sorted(known), "pendingMembers": pending, "configuredMembers": configured,
            "terminatingMembers": [], "conditions": [condition]}


def play_member_roll(kube, namespace, not_configured=()):
    """One reconcile of the member roll `default` in `namespace` by the Service Mesh 2 operator: its
    status from the live namespaces, ServiceMeshMembers and control planes (member_roll_status).
    Returns the status written."""
    rolls = kube.resource(MAISTRA_MEMBER_ROLL[0], MAISTRA_MEMBER_ROLL[1])
    roll = kube.get(rolls, "default", namespace)
    if roll is None:
        raise AssertionError("no ServiceMeshMemberRoll %s/default to reconcile" % namespace)
    smcps = kube.list(kube.resource("maistra.io/v2", "ServiceMeshControlPlane"), namespace=namespace)
    namespaces = kube.list(kube.resource("v1", "Namespace"))
    members = [m["metadata"]["namespace"] for m in kube.list(kube.resource("maistra.io/v1", "ServiceMeshMember"))
               if ((m.get("spec") or {}).get("controlPlaneRef") or {}).get("namespace") == namespace]
    status = member_roll_status(roll, smcps, namespaces, members, not_configured, roll.get("status"))
    _status_patch(kube, rolls, roll, status, "istio-operator")
    return status


MAISTRA_MEMBER_ROLL = ("maistra.io/v1", "ServiceMeshMemberRoll")
MAISTRA_MEMBER_OF = "maistra.io/member-of"


def play_members(kube, control_plane_namespace):
    """One reconcile by the Service Mesh 2 operator's member controller: each namespace holding a
    ServiceMeshMember of the control plane in `control_plane_namespace` gets the label
    maistra.io/member-of=<that namespace> (maistra/istio-operator
    pkg/controller/servicemesh/member/namespace_reconciler.go, reconcileNamespaceInMesh, branch
    maistra-2.5). Returns the namespaces labelled."""
    done = []
    for member in kube.list(kube.resource("maistra.io/v1", "ServiceMeshMember")):
        ref = (member.get("spec") or {}).get("controlPlaneRef") or {}
        if ref.get("namespace") == control_plane_namespace:
            name = member["metadata"]["namespace"]
            kube.request("PATCH", kube.path(kube.resource("v1", "Namespace"), None, name),
                         body={"metadata": {"labels": {MAISTRA_MEMBER_OF: control_plane_namespace}}},
                         content_type="application/merge-patch+json")
            done.append(name)
    return sorted(done)


def maistra_injector_webhook(smcp):
    """The MutatingWebhookConfiguration the Service Mesh 2 operator installs for a control plane
    (maistra/istio-operator resources/helm/v2.6/istio-control/istio-discovery/templates/
    mutatingwebhook.yaml, 08c043ff): pods created in namespaces labelled member-of the control
    plane's namespace, unless labelled maistra.io/ignore-namespace, istio-env or
    istio-injection=disabled; istiod's own pods never. Its object selector on
    sidecar.istio.io/inject is a tech preview, off by default (smcp-templates/v2.6/base), so the
    webhook is called for every pod there and decides by its policy (maistra_inject_required).
    Nobody answers it here (see istiod_injector_webhook): a pod it matches is refused."""
    ns = smcp["metadata"]["namespace"]
    rev = smcp["metadata"]["name"]
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "istiod-%s-%s" % (rev, ns)},
            "webhooks": [{
                "name": "sidecar-injector.istio.io",
                "clientConfig": {"service": {"name": "istiod-" + rev, "namespace": ns, "path": "/inject",
                                             "port": 443}},
                "sideEffects": "None", "failurePolicy": "Fail", "admissionReviewVersions": ["v1beta1", "v1"],
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
                "namespaceSelector": {"matchExpressions": [
                    {"key": MAISTRA_MEMBER_OF, "operator": "In", "values": [ns]},
                    {"key": "maistra.io/ignore-namespace", "operator": "DoesNotExist"},
                    {"key": "istio-injection", "operator": "NotIn", "values": ["disabled"]},
                    {"key": "istio-env", "operator": "DoesNotExist"}]},
                "objectSelector": {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["istiod"]}]}}]}


def maistra_inject_required(smcp, pod_metadata):
    """Whether the Service Mesh 2 injector, once called, adds a proxy to a pod: its policy is the
    SMCP's spec.proxy.injection.autoInject (enabled when true; the operator's default is false,
    smcp-templates/v2.6/base, and pkg/apis/maistra/conversion/proxy.go maps it to
    global.proxy.autoInject). The pod's sidecar.istio.io/inject label, else annotation, decides when
    given ("true", "y", "yes", "on" inject; any other value does not), else the policy
    (istio/istio pkg/kube/inject/inject.go injectRequired; maistra/istio, same function)."""
    auto = ((((smcp.get("spec") or {}).get("proxy") or {}).get("injection") or {}).get("autoInject")) is True
    labels = pod_metadata.get("labels") or {}
    said = labels.get("sidecar.istio.io/inject", (pod_metadata.get("annotations") or {}).get("sidecar.istio.io/inject"))
    if said in (None, ""):
        return auto
    return said.lower() in ("y", "yes", "true", "on")


SCC_ANNOTATION = "openshift.io/scc"


def _may_use(kube, scc, namespace, user, groups):
    """sccmatching.ConstraintAppliesTo: the SCC's users or groups name the user (or a group of it),
    or the API server's authorizer allows it `use` of the SCC in the namespace."""
    if user in (scc.get("users") or []) or set(groups) & set(scc.get("groups") or []):
        return True
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "groups": list(groups),
                     "resourceAttributes": {"namespace": namespace, "verb": "use", "group": "security.openshift.io",
                                            "resource": "securitycontextconstraints", "name": scc["metadata"]["name"]}}}
    answer = kube.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body=body)
    return bool((answer.get("status") or {}).get("allowed"))


# byrestrictions.go's weights (openshift/apiserver-library-go pkg/securitycontextconstraints/util/sort,
# the same from release-4.14, 6bfafa97, to release-4.21, a8019f39)
_PRIVILEGED, _HOST_PORTS, _HOST_NETWORK, _HOST_VOLUME, _NON_TRIVIAL_VOLUME = 1600000, 800000, 400000, 200000, 100000
_STRATEGY_POINTS = {"RunAsAny": 40000, "MustRunAsNonRoot": 30000, "MustRunAsRange": 20000, "MustRunAs": 10000}
_TRIVIAL_VOLUMES = {"secret", "configMap", "emptyDir", "downwardAPI", "projected", "none"}


def _capability_points(scc):
    allowed = [c.upper() for c in scc.get("allowedCapabilities") or []]
    dropped = [c.upper() for c in scc.get("requiredDropCapabilities") or []]
    total = 5000 + 300 * len(scc.get("defaultAddCapabilities") or [])
    total += 4000 if ("*" in allowed or "ALL" in allowed) else 10 * len(allowed)
    total += -3000 if "ALL" in dropped else -50 * len(dropped)
    return max(0, min(9999, total))


def scc_points(scc):
    """byrestrictions.go pointValue of an SCC object: the fewer, the more restrictive."""
    volumes = scc.get("volumes") or []
    total = _PRIVILEGED if scc.get("allowPrivilegedContainer") else 0
    if any(v in ("hostPath", "*") for v in volumes):
        total += _HOST_VOLUME
    elif any(v not in _TRIVIAL_VOLUMES for v in volumes):
        total += _NON_TRIVIAL_VOLUME
    total += _HOST_NETWORK if scc.get("allowHostNetwork") else 0
    total += _HOST_PORTS if scc.get("allowHostPorts") else 0
    total += _capability_points(scc)
    for key in ("seLinuxContext", "runAsUser"):
        total += _STRATEGY_POINTS.get((scc.get(key) or {}).get("type"), 0)
    return total


def scc_admission_order(sccs):
    """sccsort.ByPriority: highest priority first (nil is 0), then fewest points, then by name."""
    return sorted(sccs, key=lambda scc: (-(scc.get("priority") or 0), scc_points(scc), scc["metadata"]["name"]))


# The namespace annotations SCC admission reads its ranges from (openshift/api security/v1 consts.go).
UID_RANGE_ANNOTATION = "openshift.io/sa.scc.uid-range"
GROUPS_ANNOTATION = "openshift.io/sa.scc.supplemental-groups"


def _block(value):
    """The first block of a range annotation, "<start>/<size>" (blocks separated by commas)."""
    start, _slash, size = (value or "").split(",")[0].partition("/")
    return {"start": int(start), "size": int(size)} if start.isdigit() and size.isdigit() else None


def namespace_ranges(namespace):
    """(UID range, group blocks) of a Namespace object, from its annotations: the UID range is the
    first block of the uid-range annotation, the groups every block of the supplemental-groups
    annotation, else of the uid-range one (sccmatching/matcher.go getSupplementalGroupsAnnotation,
    parseSupplementalGroupAnnotation); None where unset."""
    annotations = ((namespace or {}).get("metadata") or {}).get("annotations") or {}
    uids = _block(annotations.get(UID_RANGE_ANNOTATION))
    groups = annotations.get(GROUPS_ANNOTATION, annotations.get(UID_RANGE_ANNOTATION))
    blocks = [_block(segment) for segment in groups.split(",")] if groups else []
    return uids, (blocks if blocks and all(blocks) else None)


def namespace_level(namespace):
    """The SELinux level of a Namespace object, its annotation openshift.io/sa.scc.mcs
    (sccmatching/matcher.go getPreallocatedLevel), or None where it is unset or empty."""
    annotations = ((namespace or {}).get("metadata") or {}).get("annotations") or {}
    return annotations.get(scc_policies.MCS_ANNOTATION) or None


def scc_admit(sccs, pod, usable, namespace=None):
    """The SCC SCC admission admits `pod` under, as openshift/apiserver-library-go does it (the same
    from release-4.14, 6bfafa97, to release-4.21, a8019f39): sccadmission/admission.go listSortedSCCs
    lists the SCC the pod pins with openshift.io/required-scc alone, else every SCC, sorted by
    sccsort.ByPriority; computeSecurityContext skips those `usable(name)` is false for and takes the
    first whose strategies admit the pod, field by field (scc_policies.refusals on the SCC's own
    fields, with the namespace's ranges and SELinux level). `sccs` are SCC objects, `namespace` the
    pod's Namespace; where it has no range or openshift.io/sa.scc.mcs annotations (OpenShift's
    namespace controller always sets them, and admission fails without them) a fixed UID or group is
    taken to be outside, and a SELinux level the pod sets to differ, as SCC derivation takes them.
    Raises AssertionError with every SCC's reason when none admits it."""
    meta = pod["metadata"]
    required = (meta.get("annotations") or {}).get(scc_policies.REQUIRED_SCC_ANNOTATION)
    if required:
        sccs = [scc for scc in sccs if scc["metadata"]["name"] == required]
        if not sccs:
            raise AssertionError("SCC admission refuses %s/%s: failed to retrieve the required SCC %r" % (
                meta.get("namespace"), meta.get("name"), required))
    uid_range, group_range = namespace_ranges(namespace)
    level = namespace_level(namespace)
    reasons = []
    for scc in scc_admission_order(sccs):
        name = scc["metadata"]["name"]
        if not usable(name):
            reasons.append("%s: not usable by user or serviceaccount" % name)
            continue
        refused = scc_policies.refusals(scc_policies.strategies(scc), pod.get("spec") or {}, uid_range, group_range,
                                        meta.get("annotations"), selinux_level=level)
        if not refused:
            return name
        reasons.append("%s: %s" % (name, "; ".join("%s %s" % item for item in refused)))
    raise AssertionError("SCC admission refuses %s/%s: %s" % (meta.get("namespace"), meta.get("name"),
                                                              " | ".join(reasons)))


def scc_admission_choice(kube, pod, creator, creator_groups):
    """scc_admit() on the live SCCs and the pod's Namespace: an SCC is usable when the pod's service
    account (user system:serviceaccount:<ns>:<sa>, groups system:serviceaccounts and
    system:serviceaccounts:<ns>) or the user who created the pod may use it
    (sccadmission/scc_authz_check.go, sccmatching/matcher.go ConstraintAppliesTo)."""
    namespace = pod["metadata"]["namespace"]
    account = (pod.get("spec") or {}).get("serviceAccountName") or "default"
    sa_user = "system:serviceaccount:%s:%s" % (namespace, account)
    sa_groups = ["system:serviceaccounts", "system:serviceaccounts:" + namespace]
    sccs = kube.list(kube.resource("security.openshift.io/v1", "SecurityContextConstraints"))
    by_name = dict((scc["metadata"]["name"], scc) for scc in sccs)

    def usable(name):
        return (_may_use(kube, by_name[name], namespace, creator, creator_groups)
                or _may_use(kube, by_name[name], namespace, sa_user, sa_groups))

    return scc_admit(sccs, pod, usable, kube.get(kube.resource("v1", "Namespace"), namespace))


# A workload controller creates the pods of Deployments and StatefulSets: its own service account,
# which is authenticated (restricted-v2 is granted to system:authenticated).
CONTROLLER_USER = ("system:serviceaccount:kube-system:replicaset-controller",
                   ("system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"))


def play_scc_admission(kube, namespace, creator=CONTROLLER_USER, names=None):
    """SCC admission's annotation on the pods of `namespace` (or those in `names`) that lack it:
    openshift.io/scc = scc_admission_choice() (openshift/api security/v1 ValidatedSCCAnnotation).
    Returns {pod name: SCC}."""
    res = kube.resource("v1", "Pod")
    chosen = {}
    for pod in kube.list(res, namespace=namespace):
        meta = pod["metadata"]
        if (names is not None and meta["name"] not in names) or SCC_ANNOTATION in (meta.get("annotations") or {}):
            continue
        scc = scc_admission_choice(kube, pod, creator[0], creator[1])
        kube.request("PATCH", kube.path(res, namespace, meta["name"]), query={"fieldManager": "scc-admission"},
                     body={"metadata": {"annotations": {SCC_ANNOTATION: scc}}},
                     content_type="application/merge-patch+json")
        chosen[meta["name"]] = scc
    return chosen


# oauth-proxy's boolean flags (openshift/oauth-proxy main.go @ 2b9ee007): Go's flag package takes
# the next argument as the value of any other flag given without "=".
OAUTH_PROXY_BOOLS = frozenset((
    "version", "set-xauthrequest", "pass-basic-auth", "pass-user-headers", "pass-access-token",
    "pass-user-bearer-token", "pass-host-header", "skip-provider-button", "skip-auth-preflight",
    "ssl-insecure-skip-verify", "display-htpasswd-form", "proxy-websockets", "cookie-secure", "cookie-httponly",
    "request-logging"))


def go_flags(args, bools=OAUTH_PROXY_BOOLS):
    """{flag: value} of `args` as Go's flag.FlagSet.Parse reads them (flag.go parseOne): one or two
    dashes; "name=value", or for a flag that is not boolean the next argument; a boolean alone is
    "true"; the last of a repeated flag wins; parsing stops at "--" or the first argument that is
    not a flag."""
    out, index = {}, 0
    while index < len(args):
        arg = args[index]
        if len(arg) < 2 or arg[0] != "-" or arg == "--":
            break
        name = arg[2:] if arg.startswith("--") else arg[1:]
        if not name or name[0] in "-=":
            raise AssertionError("oauth-proxy refuses its arguments: bad flag syntax: %s" % arg)
        index += 1
        name, equals, value = name.partition("=")
        if not equals:
            if name in bools:
                value = "true"
            elif index < len(args):
                value, index = args[index], index + 1
            else:
                raise AssertionError("oauth-proxy refuses its arguments: flag needs an argument: -%s" % name)
        out[name] = value
    return out


def oauth_proxy_options(container, namespace):
    """The options of the oauth-proxy `container` that its authorize request carries, as oauth-proxy
    resolves them (openshift/oauth-proxy @ 2b9ee007: main.go flags, options.go Resolve: a flag, else
    the environment (OAUTH2_PROXY_CLIENT_ID), else the default; Validate: with
    --openshift-service-account the client is that service account, an empty --redirect-url is
    https:/// ; providers/openshift LoadDefaults: scope "user:info user:check-access")."""
    flags = go_flags(container.get("args") or [])
    if flags.get("config"):
        raise AssertionError("oauth-proxy's --config file is not read by this stand-in")
    env = dict((e.get("name"), e.get("value")) for e in container.get("env") or [] if "value" in e)
    client_id = flags.get("client-id") or env.get("OAUTH2_PROXY_CLIENT_ID") or ""
    if not client_id and flags.get("openshift-service-account"):
        client_id = "system:serviceaccount:%s:%s" % (namespace, flags["openshift-service-account"])
    return {"client_id": client_id, "redirect_url": flags.get("redirect-url") or "https:///",
            "proxy_prefix": flags.get("proxy-prefix", "/oauth"), "scope": flags.get("scope") or "user:info user:check-access",
            "approval_prompt": flags.get("approval-prompt", "force"),
            "cookie_secure": flags.get("cookie-secure", "true").lower() in ("1", "t", "true")}


def oauth_redirect_uri(options, host):
    """The redirect_uri oauth-proxy sends: --redirect-url with its path set to <proxy-prefix>/callback
    (oauthproxy.go NewOAuthProxy), and, when it names no host, the request's Host, and the scheme
    https when the cookie is secure (GetRedirectURI)."""
    parts = urlsplit(options["redirect_url"])
    scheme = parts.scheme or ("https" if options["cookie_secure"] else "http")
    return urlunsplit((scheme, parts.netloc or host, options["proxy_prefix"] + "/callback", parts.query, ""))


def _remove_dot_segments(path):
    out = []
    for segment in path.split("/"):
        if segment == "..":
            if len(out) > 1:
                out.pop()
        elif segment != ".":
            out.append(segment)
    if path.endswith(("/.", "/..")):
        out.append("")
    return "/".join(out)


def _go_url(url):
    """(scheme, host, decoded path, fragment) of a URL as Go's url.Parse reads it, or a ValueError
    for a port that is not digits."""
    parts = urlsplit(url)
    port = parts.netloc.rpartition("]")[2].rpartition(":")[2] if ":" in parts.netloc.rpartition("]")[2] else ""
    if port and not port.isdigit():
        raise ValueError('parse "%s": invalid port ":%s" after host' % (url, port))
    return parts.scheme, parts.netloc, unquote(parts.path), parts.fragment


def _loopback(host):
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


def osin_validate_uri(base, redirect):
    """osin ValidateUri (github.com/openshift/osin urivalidate.go, v1.0.2-0.20220317075346-0f4d38c6e53f,
    vendored by openshift/oauth-server @ f892602b): None when `redirect` is allowed by the client's
    redirect URI `base`, else osin's error. Scheme and host must be equal (or, over http, both
    loopback IPs); the path, its dot segments resolved, equal to the base's or under it (the base's
    path without its trailing "/", then "/")."""
    if not base or not redirect:
        return "urls cannot be blank."
    try:
        b, r = _go_url(base), _go_url(redirect)
    except ValueError as error:
        return str(error)
    if b[3] or r[3]:
        return "url must not include fragment.: %s / %s" % (base, redirect)
    if r[0] != b[0]:
        return "scheme mismatch: %s / %s" % (base, redirect)
    if r[1] != b[1] and not (b[0] == "http" and _loopback(b[1]) and _loopback(urlsplit(redirect).hostname or "")):
        return "host mismatch: %s / %s" % (base, redirect)
    base_path, redirect_path = _remove_dot_segments(b[2] or "/"), _remove_dot_segments(r[2] or "/")
    if base_path == redirect_path or redirect_path.startswith(base_path.rstrip("/") + "/"):
        return None
    return "path prefix doesn't match: %s / %s" % (base, redirect)


def oauth_server_refusal(client, client_id, redirect_uri):
    """Why OpenShift's OAuth server refuses an authorize request with this client_id and
    redirect_uri (osin authorize.go HandleAuthorizeRequest, with oauth-server's storage: the
    OAuthClient named client_id, its redirectURIs joined by "," and split again, pkg/osinserver
    registrystorage/storage.go GetRedirectUri and defaults.go RedirectUriSeparator, @ f892602b), or
    None. `client` is the OAuthClient object (None when there is none)."""
    if client is None:
        return "unauthorized_client: there is no OAuthClient %s" % client_id
    uris = ",".join(client.get("redirectURIs") or [])
    if not uris:
        return "unauthorized_client: OAuthClient %s has no redirectURIs" % client_id
    errors = []
    for base in uris.split(","):
        error = osin_validate_uri(base, redirect_uri)
        if error is None:
            return None
        errors.append(error)
    return "invalid_request: redirect_uri %s: %s" % (redirect_uri, "; ".join(errors))


class OAuthProxy:
    """oauth-proxy (provider openshift, --skip-provider-button) answering on loopback as the pods of
    the Deployment `name` in `namespace` would: a request without a session gets a 302 to the OAuth
    server's authorization endpoint (found by discovery; `authorize_url` here) with redirect_uri,
    approval_prompt, scope, client_id, response_type=code and state <nonce>:<request URI>
    (openshift/oauth-proxy oauthproxy.go OAuthStart and GetRedirect, providers/provider_default.go
    GetLoginRedirectURL, at 2b9ee007), from its own container's flags (oauth_proxy_options).

    Before it answers, it checks that the login would come back: OpenShift's OAuth server must
    accept the client and redirect_uri (oauth_server_refusal, against the live OAuthClient), and
    the redirect_uri's host must be the host of the Route `name`, through which the browser comes
    back to the proxy. Otherwise it raises AssertionError naming the disagreement.
    Use as a context manager; `url` is where it listens."""

    def __init__(self, kube, namespace, name, authorize_url):
        deployment = kube.get(kube.resource("apps/v1", "Deployment"), name, namespace)
        if deployment is None:
            raise AssertionError("no oauth-proxy Deployment %s/%s" % (namespace, name))
        containers = deployment["spec"]["template"]["spec"]["containers"]
        container = next((c for c in containers if c.get("name") == "oauth-proxy"), containers[0])
        self.options = oauth_proxy_options(container, namespace)
        route = kube.get(kube.resource("route.openshift.io/v1", "Route"), name, namespace)
        host = ((route or {}).get("spec") or {}).get("host", "")
        self.redirect_uri = oauth_redirect_uri(self.options, host)
        problems = []
        if not route:
            problems.append("there is no Route %s/%s" % (namespace, name))
        elif urlsplit(self.redirect_uri).netloc != host:
            problems.append("redirect_uri %s does not come back through the Route's host %s" % (self.redirect_uri, host))
        client = kube.get(kube.resource("oauth.openshift.io/v1", "OAuthClient"), self.options["client_id"]) \
            if self.options["client_id"] else None
        refusal = oauth_server_refusal(client, self.options["client_id"], self.redirect_uri)
        if refusal:
            problems.append("OpenShift's OAuth server refuses the authorize request: " + refusal)
        if problems:
            raise AssertionError("oauth-proxy %s/%s: %s" % (namespace, name, "; ".join(problems)))
        self.authorize_url = authorize_url
        self.server = None
        self.url = None

    def location(self, request_uri):
        params = {"redirect_uri": self.redirect_uri, "approval_prompt": self.options["approval_prompt"],
                  "scope": self.options["scope"], "client_id": self.options["client_id"], "response_type": "code",
                  "state": "0123456789abcdef:%s" % request_uri}
        # Go's url.Values.Encode sorts by key
        return "%s?%s" % (self.authorize_url, urlencode(sorted(params.items())))

    def __enter__(self):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802  # the http.server name
                self.send_response(302)
                self.send_header("Location", proxy.location(self.path))
                self.end_headers()

            def log_message(self, *args):  # quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d/" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


# ---------------------------------------------------------------- an admission webhook's server

class AdmissionWebhook:
    """The server behind a webhook's `clientConfig.service`, as its pod would serve it, on loopback.

    The API server reaches it through the plane's egress proxy (start() registers it with
    ControlPlane.serve_service; stop() takes it away, and the webhook is then refused as when its
    pod is down). It serves TLS with a certificate for `<service>.<namespace>.svc`, the name the
    API server checks (k8s.io/apiserver pkg/util/webhook/client.go), signed by a CA of its own:
    `ca_bundle` is the webhook's clientConfig.caBundle. It answers each AdmissionReview in the
    request's own apiVersion with the request's uid and `allowed` (a refusal with `message` as
    status.message), as VerifyAdmissionResponse in k8s.io/apiserver
    pkg/admission/plugin/webhook/request/admissionreview.go requires. `reviews` holds every
    request it got. With `host` instead of a Service it is the server of a webhook's
    clientConfig.url (`url`, on `host`, e.g. localhost), which is not registered."""

    def __init__(self, plane, namespace=None, service=None, port=443, allowed=True, message="refused by the webhook",
                 host=None):
        self.plane, self.namespace, self.service, self.port, self.host = plane, namespace, service, port, host
        self.allowed, self.message = allowed, message
        self.reviews = []
        self.server = None
        self._dir = None
        from cluster import serving_certificate
        self._ca, self._cert, self._key = serving_certificate(host or "%s.%s.svc" % (service, namespace))

    @property
    def url(self):
        return "https://%s:%d/validate" % (self.host, self.server.server_address[1])

    @property
    def ca_bundle(self):
        import base64
        return base64.b64encode(self._ca).decode()

    def start(self):
        import http.server
        import json
        import ssl
        import tempfile
        from pathlib import Path

        self._dir = tempfile.TemporaryDirectory(prefix="webhook-")  # pylint: disable=consider-using-with
        (Path(self._dir.name) / "tls.crt").write_bytes(self._cert)
        (Path(self._dir.name) / "tls.key").write_bytes(self._key)
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(str(Path(self._dir.name) / "tls.crt"), str(Path(self._dir.name) / "tls.key"))
        webhook = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # pylint: disable=invalid-name
                review = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                request = review.get("request") or {}
                webhook.reviews.append(dict(request, path=self.path))
                response = {"uid": request.get("uid"), "allowed": webhook.allowed}
                if not webhook.allowed:
                    response["status"] = {"code": 403, "message": webhook.message}
                body = json.dumps({"apiVersion": review.get("apiVersion"), "kind": "AdmissionReview",
                                   "response": response}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):  # pylint: disable=arguments-differ
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        if self.service:
            self.plane.serve_service(self.namespace, self.service, self.port, self.server.server_address[1])
        return self

    def stop(self):
        """The webhook's pod is gone: the egress proxy refuses its calls from now on."""
        if self.service:
            self.plane.stop_serving(self.namespace, self.service, self.port)
        if self.server:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
        if self._dir:
            self._dir.cleanup()
            self._dir = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
