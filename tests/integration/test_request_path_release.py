"""Who reaches each Kubeflow UI of a real release through kfocp's front door, judged by upstream's
own objects. kubeflow/manifests 26.03 as tagged (../shared/upstream) is installed through the
components role the way an air-gapped site does (the tarball source and the map of remote bases),
with the service_mesh role of each mesh flavour kfocp supports (Service Mesh 2, Service Mesh 3, an
existing Istio with an ingress gateway for Kubeflow), the auth and profiles roles; a Profile owned by the owner, with
a contributor kfocp declares and one added through the dashboard (KFAM), and a stranger with a
Profile of their own.

For each path the gateway's VirtualServices publish (read back) and each of the owner, the two
contributors, the stranger and a request without a session, the request goes the way the
notebook test (test_request_path.py) sends it: oauth-proxy (its access review asked of the real
API server; without a session it answers with the redirect to the login, the stand-in of
openshift/oauth-proxy's OAuthStart), the gateway's Lua filter, the VirtualService that publishes
the path to its Service and the workload that Service selects, whether that workload's pods get a
proxy (asked of the API server's webhook matching), and then the AuthorizationPolicies as installed
(upstream's, with kfocp's gateway principal) decided by plugins/module_utils/authz.py and, for every
verdict, by Istio's own translation decided by Envoy's rules (tests/judges.py, tests/envoy_rbac.py),
with the principal of the gateway pod kfocp runs (the mesh's root namespace and, on Service Mesh 2,
the operator's injector and member labels as the notebook test has them); for the pipelines UI also its own request on to
ml-pipeline, from its service account. Past the mesh, each web app authorizes the user itself: it
asks the API server a SubjectAccessReview for the user in its userid header, with no groups, and
the dashboard lists the namespaces in which KFAM finds a binding of the user
(docs/readings/kubeflow-web-apps-authz.md records what each app does, read at the commits of the
26.03 images); the same reviews are asked of the real API server here, for the owner's profile
namespace. "reached" in the table means the UI serves that namespace's objects to the user.

Each flavour's case has a control plane of its own that runs pods (the gateway's): the release
makes cluster-wide objects with fixed names, so the plane is destroyed with the case rather than
the release uninstalled."""
import time
import urllib.error
import urllib.request

import pytest
import yaml

import envoy_rbac
import judges
import standins
from ansible_collections.kfocp.kubeflow.plugins.module_utils import authz
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh
from cluster import ClusterError, build_istio_judge
from helpers import ROOT, isolated_policies, mesh_vars, oauth_proxy_lets_in, play_kfam_add_contributor
from test_components_releases import UI_PATHS, UPSTREAM, UPSTREAM_PRINCIPAL, install_prerequisite_crds, remote_bases
from test_request_path import (CONTRIBUTOR, EXTERNAL_GATEWAY_POD, KFOCP_CONTRIBUTOR, OWNER, STRANGER, USERS_GROUP,
                               bound_virtualservices, get, has_proxy, items, run_gateway, run_gateway_lua, selects)

pytestmark = pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/upstream (upstream's trees) is absent")

ROLES = str(ROOT / "tests" / "fixtures" / "playbooks" / "roles.yml")
RELEASE = "26.03"
# every mesh flavour kfocp supports; each case on a control plane of its own that runs pods
FLAVOURS = ("ossm2", "ossm3", "external")
WORKLOADS = True
WORKERS = 1
AUTHORIZE = "https://oauth-openshift.apps.example.com/oauth/authorize"

# What each web app asks the API server before it answers the namespaced call its UI makes first,
# as read in docs/readings/kubeflow-web-apps-authz.md: the call, the Deployment that asks (the
# destination of the path, or the API server behind the pipelines UI), the environment variables
# of its userid header and prefix with the app's defaults when they are unset, how it takes the
# prefix off ("all": Python's str.replace; "first": Go's strings.Replace(s, p, "", 1); "trim":
# Go's strings.TrimPrefix, refusing a value without it), the variables that would switch its
# reviews off, and the reviews (verb, group, version, resource) it asks in the namespace.
CRUD_BACKEND = {"header": ("USERID_HEADER", "kubeflow-userid"), "prefix": ("USERID_PREFIX", ":"), "strip": "all",
                "off": {"APP_DISABLE_AUTH": "true"}}
WEB_APPS = {
    "/jupyter/": dict(CRUD_BACKEND, call="GET /jupyter/api/namespaces/<ns>/notebooks", asks=None,
                      reviews=[("list", "kubeflow.org", "v1beta1", "notebooks")]),
    "/volumes/": dict(CRUD_BACKEND, call="GET /volumes/api/namespaces/<ns>/pvcs", asks=None,
                      reviews=[("list", "", "v1", "persistentvolumeclaims"),
                               ("list", "kubeflow.org", "v1beta1", "notebooks")]),
    "/tensorboards/": dict(CRUD_BACKEND, call="GET /tensorboards/api/namespaces/<ns>/tensorboards", asks=None,
                           reviews=[("list", "tensorboard.kubeflow.org", "v1alpha1", "tensorboards")]),
    # KServe's models web app, on crud_backend too (kserve/models-web-app v0.16.1 with
    # kubeflow/notebooks' backend): its InferenceServices' version is APP_VERSION's, v1beta1
    "/kserve-endpoints/": dict(CRUD_BACKEND, call="GET /kserve-endpoints/api/namespaces/<ns>/inferenceservices",
                               asks=None, needs={"APP_VERSION": ("v1beta1", None)},
                               reviews=[("list", "serving.kserve.io", "v1beta1", "inferenceservices")]),
    # katib-ui skips every review unless APP_DISABLE_AUTH is set to something other than "true"
    "/katib/": {"call": "GET /katib/fetch_experiments/?namespace=<ns>", "asks": None,
                "header": ("USERID_HEADER", "kubeflow-userid"), "prefix": ("USERID_PREFIX", ":"), "strip": "first",
                "off": {"APP_DISABLE_AUTH": "true"}, "on_by_default": False,
                "reviews": [("list", "kubeflow.org", "v1beta1", "experiments")]},
    # the pipelines UI passes the call and the header to ml-pipeline, which reviews in multi-user mode
    "/pipeline": {"call": "GET /pipeline/apis/v2beta1/experiments?namespace=<ns> (ml-pipeline's ListExperiments)",
                  "asks": "ml-pipeline",
                  "header": ("KUBEFLOW_USERID_HEADER", "x-goog-authenticated-user-email"),
                  "prefix": ("KUBEFLOW_USERID_PREFIX", "accounts.google.com:"), "strip": "trim",
                  "off": {"MULTIUSER_SHARED_READ": "true"}, "needs": {"MULTIUSER": "true"},
                  "reviews": [("list", "pipelines.kubeflow.org", "v1beta1", "experiments"),
                              ("list", "pipelines.kubeflow.org", "v1beta1", "runs")]},
}
# The dashboard asks no review: the namespaces it offers a user (getWorkgroupInfo) are those in
# which KFAM's ReadBinding finds a RoleBinding annotated with the user's name and a role (and one
# subject); the header's prefix is sliced off (attachUser).
WEB_APPS["/"] = {"call": "GET /api/workgroup/env-info (KFAM GET /kfam/v1/bindings?user=<user>)", "asks": None,
                 "header": ("USERID_HEADER", "X-Goog-Authenticated-User-Email"),
                 "prefix": ("USERID_PREFIX", "accounts.google.com:"), "strip": "slice", "off": {}, "kfam": True,
                 "reviews": []}


def kfam_lists(kube, user, namespace):
    """Whether KFAM's BindingClient.List, for `user`, finds a binding in `namespace`."""
    found = False
    for binding in items(kube, "rbac.authorization.k8s.io/v1", "RoleBinding", namespace):
        notes = binding["metadata"].get("annotations") or {}
        if notes.get("user") != user or "role" not in notes:
            continue
        assert len(binding.get("subjects") or []) == 1, "KFAM fails the whole list on %s" % binding["metadata"]["name"]
        found = True
    return found


def container_env(kube, deployment):
    """The first container's environment as the pod sees it: envFrom ConfigMaps, then env values
    and configMapKeyRefs (the web apps read their userid header from a ConfigMap); fieldRefs and
    secrets are left out."""
    namespace = deployment["metadata"]["namespace"]
    container = deployment["spec"]["template"]["spec"]["containers"][0]

    def configmap(name):
        return (get(kube, "v1", "ConfigMap", name, namespace) or {}).get("data") or {}
    env = {}
    for ref in container.get("envFrom") or []:
        if ref.get("configMapRef"):
            env.update(configmap(ref["configMapRef"]["name"]))
    for var in container.get("env") or []:
        if (var.get("valueFrom") or {}).get("configMapKeyRef"):
            ref = var["valueFrom"]["configMapKeyRef"]
            env[var["name"]] = configmap(ref["name"]).get(ref["key"])
        elif not var.get("valueFrom"):
            # the API server drops an empty value (omitempty): the variable is set, to ""
            env[var["name"]] = var.get("value", "")
    return env


def published_paths(kube, gateway_pod):
    """(path, destination host, VirtualService) of each route of the VirtualServices bound to a
    Gateway that selects the gateway's pods: the VirtualService that publishes the path, read back."""
    out = []
    for vs in bound_virtualservices(kube, gateway_pod):
        for http in vs["spec"].get("http") or []:
            host = http["route"][0]["destination"]["host"]
            out += [(m["uri"]["prefix"], host, vs) for m in http.get("match") or [] if "prefix" in m.get("uri", {})]
    return out


def workload_behind(kube, host, vs_namespace):
    """The Deployment (or StatefulSet) whose pods the Service `host` selects."""
    name, _dot, rest = host.partition(".")
    namespace = rest.split(".")[0] if rest else vs_namespace
    service = get(kube, "v1", "Service", name, namespace)
    assert service, "the VirtualService sends to %s, and there is no Service %s/%s" % (host, namespace, name)
    selector = service["spec"]["selector"]
    workloads = items(kube, "apps/v1", "Deployment", namespace) + items(kube, "apps/v1", "StatefulSet", namespace)
    found = [w for w in workloads if selects(selector, w["spec"]["template"]["metadata"].get("labels") or {})]
    assert found, "the Service %s/%s selects no workload's pods" % (namespace, name)
    return found[0]


def web_app_review(kube, user, attributes, namespace):
    """The SubjectAccessReview the web apps send (only `user`, no groups: crud_backend's
    create_subject_access_review, katib's CreateSAR, ml-pipeline's IsAuthorized), asked of the
    API server: (allowed, reason)."""
    verb, group, version, resource = attributes
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": user, "resourceAttributes": {"verb": verb, "group": group, "version": version,
                                                          "resource": resource, "namespace": namespace}}}
    answer = kube.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", body=body)
    return bool(answer["status"].get("allowed")), answer["status"].get("reason", "")


# each flavour's case on a plane of its own that runs pods (conftest's case_plane): the release
# makes cluster-wide objects with fixed names, so the plane is destroyed with the case rather than
# the release uninstalled
@pytest.fixture
def control_plane(case_plane):
    return case_plane[0]


@pytest.fixture
def kube(case_plane):
    return case_plane[1]


def release_mesh_vars(flavour, instance):
    """The service_mesh role's variables for the flavour (helpers.mesh_vars), with the default
    revision on Service Mesh 3 (the namespaces join by istio-injection, as in the notebook test),
    and for an existing mesh a second ingress gateway of its own in istio-system, as a site gives
    Kubeflow one: its account is not upstream's istio-ingressgateway-service-account, so upstream's
    principal is rewritten on every flavour."""
    mesh_variables = mesh_vars(flavour, instance)
    if flavour == "ossm3":
        mesh_variables["service_mesh_ossm3"] = dict(mesh_variables["service_mesh_ossm3"], name="default")
    if flavour == "external":
        mesh_variables["service_mesh_external"] = dict(
            mesh_variables["service_mesh_external"], gateway="kubeflow-ingressgateway",
            gateway_labels={"istio": EXTERNAL_GATEWAY_POD["istio"]})
    return mesh_variables


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_who_reaches_each_ui_of_a_real_release(playbook, kube, control_plane, instance, flavour):
    try:
        build_istio_judge()
    except ClusterError as err:
        pytest.skip("the istio-authz judge (hack/istio) cannot be built: %s" % str(err)[:500])
    started = time.monotonic()
    kf_ns, profile, other = "kubeflow", instance + "-alice", instance + "-carol"
    mesh_variables = release_mesh_vars(flavour, instance)
    settings = {"flavour": flavour, **dict((k[len("service_mesh_"):], v) for k, v in mesh_variables.items())}
    info = mesh.gateway_info(settings)
    install_prerequisite_crds(kube, RELEASE)
    tmp = control_plane.dir / ("remote-bases-" + instance)
    tmp.mkdir()
    extra = dict(kfocp_instance=instance,
                 kfocp_roles=["kfocp.kubeflow.service_mesh", "kfocp.kubeflow.auth", "kfocp.kubeflow.components",
                              "kfocp.kubeflow.profiles"],
                 components_source="tarball", components_release=RELEASE,
                 components_tarball=str(UPSTREAM / ("kubeflow-manifests-%s.tar.gz" % RELEASE)),
                 components_remote_bases=remote_bases(tmp), components_namespace=kf_ns, components_no_log=False,
                 # every component of the release's catalog, the role's default (the local
                 # inventory lists the fixture tree's)
                 components_components={},
                 service_mesh_flavour=flavour, service_mesh_olm=False, service_mesh_wait=False,
                 auth_host="kubeflow.apps.example.com", auth_client_id=instance,
                 profiles_list=[
                     {"name": profile, "owner": {"user": OWNER}, "contributors": [{"user": KFOCP_CONTRIBUTOR, "role": "edit"}]},
                     {"name": other, "owner": {"user": STRANGER}}],
                 **isolated_policies(instance), **mesh_variables)
    webhooks = kube.resource("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration")
    injector = standins.istiod_injector_webhook(mesh.revision(mesh.normalise(settings)), info["mesh_namespace"])
    result = playbook(ROLES, extra)
    assert result.rc == 0, result.stdout[-4000:]
    installed = time.monotonic()
    # the profile controller, configured by the Deployment kfocp made from upstream's, makes the
    # namespaces, the owner's RoleBinding and ns-owner-access-istio; then kfocp gives the namespaces
    # their contributors, and the dashboard adds one through KFAM
    controller = standins.ProfileController(kube, {"kfocp-test": instance}, only=[profile, other])
    assert sorted(controller.step()) == sorted([profile, other]), controller.refused
    result = playbook("profiles", dict(extra, kfocp_profile_self_service_enabled=False))
    assert result.rc == 0, result.stdout[-4000:]
    play_kfam_add_contributor(kube, profile, CONTRIBUTOR, "edit")

    gateway_pod = run_gateway(kube, flavour, info, instance)
    assert gateway_pod["principal"] == info["principal"], "kfocp names another gateway principal than its pods run as"
    assert gateway_pod["principal"] != UPSTREAM_PRINCIPAL
    if flavour == "ossm2":
        # the operator's member controller labels the namespaces of its ServiceMeshMembers, and its
        # injector is called there
        assert {kf_ns, profile} <= set(standins.play_members(kube, info["namespace"]))
        injector = standins.maistra_injector_webhook(
            items(kube, "maistra.io/v2", "ServiceMeshControlPlane", info["namespace"])[0])
    kube.apply(webhooks, injector, "istiod", force=True)
    try:
        route = get(kube, "route.openshift.io/v1", "Route", "kubeflow-oauth-proxy", info["namespace"])
        proxy = get(kube, "apps/v1", "Deployment", route["spec"]["to"]["name"], info["namespace"])
        args = dict(a.split("=", 1) for a in proxy["spec"]["template"]["spec"]["containers"][0]["args"] if "=" in a)
        assert args["--upstream"] == "http://%s.%s.svc.cluster.local:80" % (info["service"], info["namespace"])
        lua = get(kube, "networking.istio.io/v1alpha3", "EnvoyFilter", "kfocp-kubeflow-userid",
                  info["namespace"])["spec"]["configPatches"][0]["patch"]["value"]["typed_config"]["inlineCode"]
        # every AuthorizationPolicy as installed: upstream's, with kfocp's gateway principal
        policies = items(kube, "security.istio.io/v1", "AuthorizationPolicy")
        # the mesh's root namespace: Service Mesh 2's control plane namespace, else istio-system
        root = info["mesh_namespace"] if flavour == "ossm2" else "istio-system"

        uis = {}
        for path, host, vs in published_paths(kube, gateway_pod["labels"]):
            if path in UI_PATHS:
                workload = workload_behind(kube, host, vs["metadata"]["namespace"])
                labels = workload["spec"]["template"]["metadata"]["labels"]
                uis[path] = {"host": host, "workload": workload, "labels": labels,
                             "proxy": has_proxy(kube, flavour, mesh.normalise(settings),
                                                workload["metadata"]["namespace"], labels)}
        assert UI_PATHS == set(uis), "the VirtualServices publish %s" % sorted(uis)
        assert set(uis) <= set(WEB_APPS), "a UI whose app's authorization this test does not know: %s" % (
            sorted(set(uis) - set(WEB_APPS)))
        # the hops of each path: the gateway to the UI's pods, and for the pipelines UI its own
        # request (with the user's header) on to the API server that reviews
        hops = {}
        for path, ui in uis.items():
            hops[path] = [(gateway_pod["principal"], ui["workload"], ui["labels"], ui["proxy"])]
            if WEB_APPS[path]["asks"]:
                asks = get(kube, "apps/v1", "Deployment", WEB_APPS[path]["asks"], kf_ns)
                labels = asks["spec"]["template"]["metadata"]["labels"]
                source = ui["workload"]
                hops[path].append((mesh.principal(source["metadata"]["namespace"],
                                                  source["spec"]["template"]["spec"].get("serviceAccountName") or "default"),
                                   asks, labels, has_proxy(kube, flavour, mesh.normalise(settings), kf_ns, labels)))
        # Istio's translation of the policies for each workload's pods, in one run of the judge
        targets = sorted(set((w["metadata"]["namespace"], w["metadata"]["name"]) for hop in hops.values()
                             for _p, w, _l, _x in hop))
        labels_of = dict(((w["metadata"]["namespace"], w["metadata"]["name"]), labels)
                         for hop in hops.values() for _p, w, labels, _x in hop)
        translated, invalid = judges.istio_authz_workloads(policies, [(ns, labels_of[(ns, name)]) for ns, name in targets],
                                                           root)
        assert invalid == {}, invalid
        sidecars = dict(zip(targets, translated))

        def at_the_ui(path, headers):
            """The request through each hop of the path: (user the app sees, where it stopped)."""
            call = WEB_APPS[path]["call"].split()[1].replace("<ns>", profile)
            for principal, workload, labels, proxy in hops[path]:
                if not proxy:
                    continue
                key = (workload["metadata"]["namespace"], workload["metadata"]["name"])
                request = {"principal": principal, "headers": headers, "path": call, "method": "GET"}
                allowed, reason = authz.decide(policies, request, key[0], labels, root_namespace=root)
                assert sidecars[key]["custom"] == [], sidecars[key]
                envoy = envoy_rbac.decide(sidecars[key]["filters"], request)
                assert envoy[0] is allowed, (path, request, (allowed, reason), envoy)
                if not allowed:
                    return None, "mesh (%s): %s" % (key[1], reason)
            return headers.get("kubeflow-userid"), "in the app"

        def in_the_app(path, user):
            """The app's own reviews for the profile's namespace, asked of the API server."""
            app = WEB_APPS[path]
            asks = get(kube, "apps/v1", "Deployment", app["asks"], kf_ns) if app["asks"] else uis[path]["workload"]
            env = container_env(kube, asks)
            switched_off = [k for k, v in app["off"].items() if k and env.get(k) == v]
            if app.get("on_by_default") is False:
                switched_off += [] if "APP_DISABLE_AUTH" in env else ["APP_DISABLE_AUTH unset"]
            # a variable the app needs set so (a tuple: any of its values, None for unset)
            switched_off += [k for k, v in (app.get("needs") or {}).items()
                             if env.get(k) not in (v if isinstance(v, tuple) else (v,))]
            assert not switched_off, "%s: the app skips its reviews (%s)" % (path, switched_off)
            header = env.get(app["header"][0], app["header"][1])
            prefix = env.get(app["prefix"][0], app["prefix"][1]) or ""
            assert header.lower() == "kubeflow-userid", "%s: the app reads the user from %s" % (path, header)
            if app["strip"] == "trim":
                if not user.startswith(prefix):
                    return False, "the userid header lacks the prefix %r" % prefix
                name = user[len(prefix):]
            elif app["strip"] == "slice":
                name = user[len(prefix):]
            elif prefix:
                name = user.replace(prefix, "", -1 if app["strip"] == "all" else 1)
            else:
                name = user
            who_asks = asks["metadata"]["name"]
            if app.get("kfam"):
                return (True, "%s: KFAM lists the namespace" % who_asks) if kfam_lists(kube, name, profile) else (
                    False, "%s: KFAM lists no binding of %s in %s" % (who_asks, name, profile))
            for attributes in app["reviews"]:
                allowed, reason = web_app_review(kube, name, attributes, profile)
                if not allowed:
                    return False, "%s: %s %s: %s" % (who_asks, attributes[0], "/".join(a for a in attributes[1:] if a),
                                                     reason or "refused")
            return True, "%s: allowed" % who_asks

        def through_the_route(path, user):
            """A browser's request for `path` through the Route: (got, where it stopped)."""
            if user is None:
                # no session: oauth-proxy answers with its redirect to the login, never upstream
                with standins.OAuthProxy(kube, info["namespace"], route["metadata"]["name"], AUTHORIZE) as door:
                    request = urllib.request.Request(door.url.rstrip("/") + path)
                    opener = urllib.request.build_opener(NoRedirect)
                    try:
                        answer = opener.open(request, timeout=10)
                        status, location = answer.status, answer.headers.get("Location", "")
                    except urllib.error.HTTPError as err:
                        status, location = err.code, err.headers.get("Location", "")
                assert status == 302 and location.startswith(AUTHORIZE), (status, location)
                return "refused", "oauth-proxy: 302 to the login"
            allowed, _reason = oauth_proxy_lets_in(kube, args["--openshift-sar"], user, [USERS_GROUP])
            if not allowed:
                return "refused", "oauth-proxy: 403"
            headers = run_gateway_lua(lua, standins.oauth_proxy_upstream_headers({}, user))
            seen, stop = at_the_ui(path, headers)
            if seen is None:
                return "refused", stop
            assert seen == user, (path, user, seen)
            allowed, why = in_the_app(path, seen)
            return ("reached" if allowed else "refused"), why

        who = [("owner", OWNER, "reached"), ("contributor added through the dashboard", CONTRIBUTOR, "reached"),
               ("contributor added by kfocp", KFOCP_CONTRIBUTOR, "reached"), ("stranger", STRANGER, "refused"),
               ("no session", None, "refused")]
        table = [(name, path, want) + through_the_route(path, user) for path in sorted(uis) for name, user, want in who]
        report = "\n".join("%-40s %-16s expected %-8s got %-8s (%s)" % row for row in table)
        print("\n" + "\n".join("%s: %s" % (path, " -> ".join(["gateway"] + ["%s%s" % (
            hop[1]["metadata"]["name"], "" if hop[3] else " (no proxy)") for hop in hops[path]])) for path in sorted(hops)))
        print(report)
        assert [row for row in table if row[2] != row[3]] == [], report
        # none names upstream's gateway, which kfocp does not run
        assert [p["metadata"]["name"] for p in policies if UPSTREAM_PRINCIPAL in yaml.safe_dump(p["spec"])] == []
        stops = dict(((name, path), stop) for name, path, _want, _got, stop in table)
        # the stranger passes oauth-proxy and the mesh (the UIs' policies admit the gateway, whoever
        # the user) and is refused by the app itself
        for path in uis:
            assert not stops[("stranger", path)].startswith(("mesh", "oauth-proxy")), stops[("stranger", path)]
        assert [hop[1]["metadata"]["name"] for path in hops for hop in hops[path] if not hop[3]] == [], \
            "a workload without a proxy: nothing enforces its policies"
        print("%s: installed in %.0fs, judged in %.0fs" % (flavour, installed - started, time.monotonic() - installed))
    finally:
        kube.delete(webhooks, injector["metadata"]["name"])


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None
