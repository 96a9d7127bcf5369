"""kfocp's auth, mesh and profile objects held to what upstream does with them: oauth-proxy, the
OpenShift router and service CA, the OAuth API, the Sail and Service Mesh 2 operators, istiod's
EnvoyFilter patching, Envoy's Lua filter, and Kubeflow's profile controller, KFAM and manifests.

The oracles are upstream's own files where they are on the machine (the Go modules go.sum pins,
the kubeflow/manifests tarballs and renders of ../shared/upstream), and otherwise the readings
recorded with repository and commit in docs/readings/auth-mesh-kubeflow-readings.md, quoted beside
each constant below."""
import gzip
import re
import tarfile

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils import profiles_report, versions
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import auth, mesh, profiles
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import manifests as m
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError
from gomod import require_module
from helpers import ROOT
import standins

UPSTREAM = ROOT.parent / "shared" / "upstream"
RELEASES = ("v1.10.2", "v1.11.0", "26.03")
README = (ROOT / "roles" / "auth" / "README.md").read_text()
SECRETS = {"client_secret": "c" * 48, "cookie_secret": "k" * 32}
LUA = (ROOT / "roles" / "auth" / "files" / "userid.lua").read_text()

# The Go modules read (pinned by hack/openshift/go.sum and hack/istio/go.sum)
K8S_API = ("k8s.io/api", "v0.35.2")
OPENSHIFT_API = ("github.com/openshift/api", "v0.0.0-20260318185450-1f2fa3f09f4e")
ISTIO = ("istio.io/istio", "v0.0.0-20260827124520-eed52ebb66ad")
ISTIO_API = ("istio.io/api", "v1.31.0-rc.0.0.20260824154656-b943409680a7")
ENVOY_API = ("github.com/envoyproxy/go-control-plane/envoy", "v1.37.1-0.20260713214202-ca8ce173c36f")


def module_file(module, path):
    return (require_module(pytest, *module) / path).read_text()


def build(flavour="ossm3", **settings):
    settings.setdefault("host", "kubeflow.apps.example.com")
    return dict((o["kind"], o) for o in auth.objects(settings, mesh.gateway_info({"flavour": flavour}), SECRETS, LUA))


def go_flags(args):
    """oauth-proxy's flags as Go's flag package leaves them (--name=value, the last one wins)."""
    return dict(arg[2:].split("=", 1) if "=" in arg else (arg[2:], "true") for arg in args)


def container(objs):
    return objs["Deployment"]["spec"]["template"]["spec"]["containers"][0]


# ---------------------------------------------------------------- oauth-proxy (gaps 49-56)

# openshift/oauth-proxy @ 2b9ee007 (readings): main.go l.39 `http-address` default "127.0.0.1:4180",
# http.go l.31 `if s.Opts.HttpAddress != "" { go s.ServeHTTP() }`; main.go l.71 `proxy-prefix` default
# "/oauth"; oauthproxy.go l.275 `PingPath: fmt.Sprintf("%s/healthz", opts.ProxyPrefix)`
OAUTH_PROXY_DEFAULTS = {"http-address": "127.0.0.1:4180", "proxy-prefix": "/oauth", "cookie-expire": "168h",
                        "upstream-timeout": "30s", "cookie-name": "_oauth_proxy", "logout-url": ""}


def test_oauth_proxy_listens_on_https_only_and_its_probes_ask_its_ping_path():
    objs = build()
    flags = go_flags(container(objs)["args"])
    assert flags["http-address"] == "" and flags["https-address"] == ":%d" % auth.HTTPS_PORT
    ping = "%s/healthz" % flags.get("proxy-prefix", OAUTH_PROXY_DEFAULTS["proxy-prefix"])
    for probe in ("readinessProbe", "livenessProbe"):
        assert container(objs)[probe]["httpGet"] == {"path": ping, "port": auth.HTTPS_PORT, "scheme": "HTTPS"}
    # the callback oauth-proxy sends (oauthproxy.go l.235: <prefix>/callback) is the redirect URL kfocp gives
    assert flags["redirect-url"] == "https://kubeflow.apps.example.com%s/callback" % OAUTH_PROXY_DEFAULTS["proxy-prefix"]


def test_a_proxy_prefix_that_would_move_the_probes_and_the_logout_path_is_refused():
    with pytest.raises(DefinitionError, match=r"auth_extra_args: --proxy-prefix would move oauth-proxy's own paths "
                                              r"away from /oauth: its probes \(/oauth/healthz\)"):
        build(extra_args=["--proxy-prefix=/auth"])


# options.go l.184-185 (`Validate`, openshift provider): `if len(o.EmailDomains) == 0 { o.EmailDomains =
# []string{"*"} }`: without --email-domain every user the access review admits gets in
def test_no_email_domain_narrows_who_the_access_review_admits():
    assert "email-domain" not in go_flags(container(build())["args"])


# oauthproxy.go l.349: ReviewUser (the --openshift-sar check) only in redeemCode, at login; main.go l.86
# cookie-expire 168h; l.608-615 SignOut clears only its own cookie and redirects to / or --logout-url;
# options.go l.25 DefaultUpstreamTimeout = 30s (oauthproxy.go l.123 ResponseHeaderTimeout).
# openshift/router @ 4b401a86 haproxy-config.template l.167 `timeout server ... "30s"`, overridden by the
# Route annotation haproxy.router.openshift.io/timeout (l.688).
def test_the_session_sign_out_and_timeouts_kfocp_leaves_to_upstreams_defaults_are_documented():
    objs = build()
    flags = go_flags(container(objs)["args"])
    for flag in ("cookie-expire", "upstream-timeout", "logout-url", "cookie-name", "cookie-refresh"):
        assert flag not in flags
    assert "haproxy.router.openshift.io/timeout" not in (objs["Route"]["metadata"].get("annotations") or {})
    sessions = README.split("## Sessions", 1)[1].split("\n## ", 1)[0]
    for said in ("once, when a user logs in", "**%s**" % OAUTH_PROXY_DEFAULTS["cookie-expire"], "`_oauth_proxy`",
                 "`%s/sign_out`" % OAUTH_PROXY_DEFAULTS["proxy-prefix"], "clears only oauth-proxy's cookie",
                 "`--upstream-timeout`", "`ROUTER_DEFAULT_SERVER_TIMEOUT`", "haproxy.router.openshift.io/timeout"):
        assert said in sessions
    assert sessions.count("**30 s**") == 2


# ---------------------------------------------------------------- router, service CA, OAuth API (gaps 57-60)

def test_the_reencrypt_route_trusts_the_service_ca_and_the_proxy_serves_its_certificate():
    objs = build()
    # openshift/router @ 4b401a86 haproxy-config.template l.816-818: without destinationCACertificate the
    # router verifies the backend with the default destination CA, which cluster-ingress-operator @
    # acca9642 (assets/router/deployment.yaml l.92-93) points at the service CA bundle
    tls = objs["Route"]["spec"]["tls"]
    assert tls["termination"] == "reencrypt" and "destinationCACertificate" not in tls
    # openshift/service-ca-operator @ 6391e070 api.go l.47 and serving_cert_issuer.go l.105-106: the
    # annotation's Secret holds corev1.TLSCertKey and corev1.TLSPrivateKeyKey
    assert auth.SERVING_CERT == "service.beta.openshift.io/serving-cert-secret-name"
    types = module_file(K8S_API, "core/v1/types.go")
    cert_key = re.search(r'\bTLSCertKey = "([^"]+)"', types).group(1)
    key_key = re.search(r'\bTLSPrivateKeyKey = "([^"]+)"', types).group(1)
    secret = objs["Service"]["metadata"]["annotations"][auth.SERVING_CERT]
    pod = objs["Deployment"]["spec"]["template"]["spec"]
    mount = next(v["mountPath"] for v in container(objs)["volumeMounts"]
                 if next(x for x in pod["volumes"] if x["name"] == v["name"]).get("secret", {}).get("secretName") == secret)
    flags = go_flags(container(objs)["args"])
    assert (flags["tls-cert"], flags["tls-key"]) == ("%s/%s" % (mount, cert_key), "%s/%s" % (mount, key_key))


def test_the_oauth_client_grants_automatically_as_openshift_names_it():
    types = module_file(OPENSHIFT_API, "oauth/v1/types.go")
    auto = re.search(r'GrantHandlerAuto GrantHandlerType = "([^"]+)"', types).group(1)
    assert re.search(r'GrantMethod GrantHandlerType `json:"grantMethod', types)
    assert build()["OAuthClient"]["grantMethod"] == auto


# ---------------------------------------------------------------- Sail (gaps 62-65)

# openshift-service-mesh/sail-operator v3.2.8 = fcb72db1 (readings): api/v1/istio_types.go and
# chart/crds/sailoperator.io_istios.yaml, istiocni_types.go l.176
SAIL_3_2_VERSIONS = ("v1.27-latest", "v1.27.9", "v1.27.8", "v1.27.5", "v1.27.3", "v1.26-latest", "v1.26.8", "v1.26.6",
                     "v1.26.4", "v1.26.3", "v1.26.2", "v1.24-latest", "v1.24.6", "v1.24.5", "v1.24.4", "v1.24.3")
SAIL_UPDATE_STRATEGIES = ("InPlace", "RevisionBased")
SAIL_ISTIO_SPEC = {"version", "updateStrategy", "profile", "namespace", "values"}


def by_kind(objs):
    out = {}
    for obj in objs:
        out.setdefault(obj["kind"], []).append(obj)
    return out


@pytest.mark.parametrize("strategy", SAIL_UPDATE_STRATEGIES)
def test_the_istio_and_cni_resources_are_what_the_sail_operator_of_the_pinned_channel_accepts(strategy):
    objs = by_kind(mesh.objects({"flavour": "ossm3", "ossm3": {"update_strategy": strategy}}))
    istio, cni = objs["Istio"][0], objs["IstioCNI"][0]
    assert set(istio["spec"]) <= SAIL_ISTIO_SPEC
    assert istio["spec"]["version"] == versions.DEFAULT_ISTIO and versions.DEFAULT_ISTIO in SAIL_3_2_VERSIONS
    assert istio["spec"]["updateStrategy"]["type"] in SAIL_UPDATE_STRATEGIES
    assert list(istio["spec"]["values"]["meshConfig"]) == ["discoverySelectors"]
    assert cni["metadata"]["name"] == "default"  # `self.metadata.name == 'default'`
    assert set(cni["spec"]) == {"namespace", "version"} and cni["spec"]["version"] in SAIL_3_2_VERSIONS


def sail_active_revision(name, strategy, version):
    """istio_controller.go l.176-190 getActiveRevisionName, then pkg/istiovalues/overrides.go l.24-26:
    the revision `default` is written to the charts (and so to the namespace selectors) as ""."""
    revision = name + "-" + version.replace(".", "-") if strategy == "RevisionBased" else name
    return "" if revision == "default" else revision


@pytest.mark.parametrize("name, strategy, version", [
    ("default", "InPlace", "v1.27.3"), ("kubeflow", "InPlace", "v1.27.3"), ("default", "RevisionBased", "v1.27.3"),
    ("kubeflow", "RevisionBased", "v1.26.8")])
def test_members_and_the_gateway_point_at_the_revision_the_sail_operator_names(name, strategy, version):
    settings = {"flavour": "ossm3", "ossm3": {"name": name, "update_strategy": strategy, "version": version}}
    assert mesh.revision(mesh.normalise(settings)) == sail_active_revision(name, strategy, version)


def test_the_gateway_is_injected_as_istios_gateway_chart_deploys_one():
    """istio/istio's gateway chart (the module hack/istio/go.sum pins; the same on these points as
    resources/v1.27.3/charts/gateway in sail-operator v3.2.8): pod label sidecar.istio.io/inject "true"
    (and istio.io/rev with a revision), annotation inject.istio.io/templates "gateway", container
    istio-proxy with image "auto", which the injector (pkg/kube/inject/webhook.go AutoImage) replaces."""
    helpers = module_file(ISTIO, "manifests/charts/gateway/templates/_helpers.tpl")
    labels = re.search(r'define "gateway.sidecarInjectionLabels" -}}\n(.*?)\n', helpers).group(1)
    values = yaml.safe_load(module_file(ISTIO, "manifests/charts/gateway/values.yaml"))
    annotations = values["_internal_defaults_do_not_set"]["podAnnotations"]
    chart = module_file(ISTIO, "manifests/charts/gateway/templates/deployment.yaml")
    image = re.search(r"- name: istio-proxy\n.*?\n\s+image: (\S+)", chart, re.S).group(1)
    auto = re.search(r'AutoImage = "([^"]+)"', module_file(ISTIO, "pkg/kube/inject/webhook.go")).group(1)
    injector = module_file(ISTIO, "manifests/charts/istio-control/istio-discovery/templates/istiod-injector-configmap.yaml")
    for settings, rev in (({"flavour": "ossm3"}, ""),
                          ({"flavour": "ossm3", "ossm3": {"update_strategy": "RevisionBased"}}, "default-v1-27-3")):
        deploy = by_kind(mesh.objects(settings))["Deployment"][0]
        template = deploy["spec"]["template"]
        key, value = labels.split(": ")
        assert template["metadata"]["labels"][key] == yaml.safe_load(value)
        assert template["metadata"]["labels"].get("istio.io/rev", "") == rev
        template_name = template["metadata"]["annotations"]["inject.istio.io/templates"]
        assert template_name == annotations["inject.istio.io/templates"]
        assert "\n      %s: |\n" % template_name in injector
        proxy = template["spec"]["containers"][0]
        assert (proxy["name"], proxy["image"]) == ("istio-proxy", image) and image == auto


# ---------------------------------------------------------------- Service Mesh 2 CRDs (gaps 43, 66)

# maistra/istio-operator resources/helm/<v>/istio-init/files (readings): the versions each control
# plane's CRDs serve, maistra-2.5 @ 8143614c (v2.3 to v2.5) and 08c043ff (v2.6); the operator installs
# the CRDs of the SMCP's version and never replaces newer ones
OSSM2_SERVED = {
    "v2.3": {"AuthorizationPolicy": {"v1beta1"}, "Gateway": {"v1alpha3", "v1beta1"}, "EnvoyFilter": {"v1alpha3"}},
    "v2.4": {"AuthorizationPolicy": {"v1beta1"}, "Gateway": {"v1alpha3", "v1beta1"}, "EnvoyFilter": {"v1alpha3"}},
    "v2.5": {"AuthorizationPolicy": {"v1", "v1beta1"}, "Gateway": {"v1alpha3", "v1beta1"}, "EnvoyFilter": {"v1alpha3"}},
    "v2.6": {"AuthorizationPolicy": {"v1", "v1beta1"}, "Gateway": {"v1alpha3", "v1beta1"}, "EnvoyFilter": {"v1alpha3"}},
}
DEFAULTS = yaml.safe_load((ROOT / "roles" / "components" / "defaults" / "main.yml").read_text())


def written_versions(flavour):
    """{kind: the versions kfocp writes it in} on a mesh of the flavour: the mesh builder's, the
    profiles and namespace_policies builders' AuthorizationPolicies, the components' rewrite."""
    written = dict((kind, {api.split("/")[1]}) for kind, api in mesh.istio_api_versions(flavour).items())
    written["AuthorizationPolicy"].add(profiles.AUTHZ_API.split("/")[1])
    for kind_key, version in DEFAULTS["components_api_versions"].items():
        written.setdefault(kind_key.split("/")[1], set()).add(version)
    return written


@pytest.mark.parametrize("version", sorted(OSSM2_SERVED))
def test_a_service_mesh_2_control_plane_is_accepted_only_where_its_crds_serve_what_kfocp_writes(version):
    served = OSSM2_SERVED[version]
    written = written_versions("ossm2")
    fits = all(written[kind] <= served[kind] for kind in served)
    settings = {"flavour": "ossm2", "ossm2": {"version": version}}
    if fits:
        assert mesh.objects(settings)
    else:
        with pytest.raises(DefinitionError, match=r"service_mesh_ossm2.version: %s: its Istio CRDs serve no "
                                                  r"security.istio.io/v1" % re.escape(version)):
            mesh.objects(settings)
    assert fits == (version in ("v2.5", "v2.6"))


# ---------------------------------------------------------------- istiod's EnvoyFilter, Envoy's Lua filter (gaps 67-69)

def proto_fields(proto):
    return set(re.findall(r"^\s+(?:repeated\s+|map<[^>]+>\s+)?[\w.]+\s+(\w+)\s*=\s*\d+", proto, re.M))


def camel(name):
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def keys(value):
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            if key != "labels":  # a map: its keys are the workload's labels
                yield from keys(item)
    elif isinstance(value, list):
        for item in value:
            yield from keys(item)


def test_the_userid_filter_is_an_envoy_filter_istiod_patches_before_the_router():
    ef = build()["EnvoyFilter"]
    proto = module_file(ISTIO_API, "networking/v1alpha3/envoy_filter.proto")
    fields = set(camel(f) for f in proto_fields(proto)) | {"labels"}
    spec = dict(ef["spec"])
    patch = spec["configPatches"][0]
    value = patch["patch"].pop("value")
    assert set(keys(spec)) <= fields
    for enum, given in (("ApplyTo", patch["applyTo"]), ("PatchContext", patch["match"]["context"]),
                        ("Operation", patch["patch"]["operation"])):
        body = re.search(r"enum %s \{(.*?)\n  \}" % enum, proto, re.S).group(1)
        assert re.search(r"^\s+%s = \d+;" % given, body, re.M), (enum, given)
    # pilot/pkg/networking/core/envoyfilter/listener_patch.go: INSERT_BEFORE with a subFilter inserts
    # before the HTTP filter of that name; pkg/wellknown/wellknown.go names the filters
    wellknown = module_file(ISTIO, "pkg/wellknown/wellknown.go")
    names = dict(re.findall(r'^\s+(Router|HTTPConnectionManager)\s+= "([^"]+)"', wellknown, re.M))
    match = patch["match"]["listener"]["filterChain"]["filter"]
    assert (match["name"], match["subFilter"]["name"]) == (names["HTTPConnectionManager"], names["Router"])
    assert "EnvoyFilter_Patch_INSERT_BEFORE" in module_file(ISTIO, "pilot/pkg/networking/core/envoyfilter/listener_patch.go")
    assert set(value) == {"name", "typed_config"}


def test_the_lua_filters_typed_config_names_envoys_lua_message_and_its_code_field():
    lua = module_file(ENVOY_API, "extensions/filters/http/lua/v3/lua.pb.go")
    config = build()["EnvoyFilter"]["spec"]["configPatches"][0]["patch"]["value"]["typed_config"]
    # the file descriptor: package (field 2, \x12) and the message Lua (\x03Lua)
    package = re.search(r'/lua/v3/lua\.proto\\x12.([\w.]+)\\x1a', lua).group(1)
    assert '"\\x03Lua\\x12' in lua
    assert config["@type"] == "type.googleapis.com/%s.Lua" % package
    json_names = dict(re.findall(r"^\t(\w+)\s+[\w.*]+\s+`protobuf:\"[^\"]*json=(\w+)", lua, re.M))
    assert set(config) - {"@type"} <= set(json_names.values())
    assert json_names["InlineCode"] == "inlineCode" and config["inlineCode"] == LUA


# envoyproxy/envoy @ 040783c8 source/extensions/filters/http/lua/wrappers.cc: the header map's Lua
# methods are get, getAtIndex, getNumValues, add, replace, remove, pairs, setHttp1ReasonPhrase; each
# looks its key up as Envoy::Http::LowerCaseString(key)
ENVOY_HEADER_METHODS = {"get", "getAtIndex", "getNumValues", "add", "replace", "remove", "pairs", "setHttp1ReasonPhrase"}


def test_the_lua_code_calls_only_envoys_header_methods_with_lower_case_names():
    calls = re.findall(r"headers:(\w+)\(([^,)]*)", LUA)
    assert calls and set(name for name, _arg in calls) <= ENVOY_HEADER_METHODS
    literals = [arg.strip().strip('"') for _name, arg in calls if arg.strip().startswith('"')]
    assert literals and all(name == name.lower() for name in literals)


# ---------------------------------------------------------------- Kubeflow (gaps 36-48)

def render(release):
    with gzip.open(str(UPSTREAM / ("example-render-%s.yaml.gz" % release)), "rt") as stream:
        return [o for o in yaml.load_all(stream, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if o]


needs_upstream = pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/upstream is absent")


@needs_upstream
@pytest.mark.parametrize("release", RELEASES)
def test_the_principals_reach_both_containers_of_profiles_deployment_over_their_envfrom(release):
    """Upstream's profiles-deployment holds the controller `manager` and `kfam`, both loading the
    profiles ConfigMap through envFrom; kfocp appends the principals to `env`, which wins over envFrom
    (k8s.io/api core/v1 types.go: "Values defined by an Env with a duplicate key will take precedence.")."""
    assert "Values defined by an Env with a duplicate key will take precedence." in module_file(K8S_API, "core/v1/types.go")
    [deployment] = [o for o in render(release) if o["kind"] == "Deployment" and o["metadata"]["name"] == "profiles-deployment"]
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert sorted(c["name"] for c in containers) == ["kfam", "manager"]
    for item in containers:
        assert any((ref.get("configMapRef") or {}).get("name", "").startswith("profiles-config") for ref in item["envFrom"])
    wanted = {"ISTIO_INGRESS_GATEWAY_PRINCIPAL": mesh.gateway_info({"flavour": "ossm3"})["principal"],
              "KFP_UI_PRINCIPAL": "cluster.local/ns/kubeflow/sa/ml-pipeline-ui"}
    [out] = m.profile_controller_principals([deployment], wanted)
    for item in out["spec"]["template"]["spec"]["containers"]:
        env = dict((e["name"], e.get("value")) for e in item["env"])
        assert dict((k, env[k]) for k in wanted) == wanted and item["envFrom"]


@needs_upstream
def test_kfocps_profiles_are_what_upstreams_profile_crd_serves():
    with tarfile.open(str(UPSTREAM / "kubeflow-manifests-v1.10.2.tar.gz")) as tar:
        crd = yaml.safe_load(tar.extractfile("./applications/profiles/upstream/crd/bases/kubeflow.org_profiles.yaml").read())
    served = dict((v["name"], v) for v in crd["spec"]["versions"] if v["served"])
    group, version = profiles.PROFILE_API.split("/")
    assert crd["spec"]["group"] == group and version in served
    spec_fields = set(served[version]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"])
    settings = {"profiles_list": [{"name": "team-a", "owner": {"user": "alice"}, "quota": {"cpu": "4"}},
                                  {"name": "team-b", "owner": {"group": "team-b"}}]}
    found = [o for o in profiles.objects(settings, groups=[{"metadata": {"name": "team-b"}, "users": ["bob"]}])
             if o["kind"] == "Profile"]
    assert found and all(o["apiVersion"] == profiles.PROFILE_API and set(o["spec"]) <= spec_fields for o in found)
    assert {"owner", "resourceQuotaSpec"} <= spec_fields


# kubeflow/kubeflow v1.10.0 = 90e987bf (the profile-controller and kfam images of every supported
# release; readings): profile_controller.go l.56 `const KFQUOTA = "kf-resource-quota"`, l.139
# SetControllerReference(instance, ns), l.34-35 security/v1beta1; kfam/bindings.go l.202-206 lists a
# RoleBinding only `if` it has the annotation USER = "user"
KFQUOTA = "kf-resource-quota"
PROFILE_CONTROLLER_AUTHZ_API = "security.istio.io/v1beta1"


def test_the_quota_and_namespace_ownership_kfocp_describes_are_the_profile_controllers():
    assert profiles_report.QUOTA_NAME == standins.QUOTA_NAME == KFQUOTA
    readme = (ROOT / "roles" / "profiles" / "README.md").read_text()
    assert "ResourceQuota `%s`" % KFQUOTA in readme
    assert "Deleting a Profile deletes its namespace (the profile controller makes the Profile its owner)" in readme
    assert "oc describe resourcequota %s" % KFQUOTA in (ROOT / "README.md").read_text()


def test_the_profile_controllers_policy_version_is_served_by_every_mesh_kfocp_runs():
    version = PROFILE_CONTROLLER_AUTHZ_API.split("/")[1]
    # Sail v3.2.8 chart/crds/security.istio.io_authorizationpolicies.yaml serves v1 and v1beta1 (readings)
    assert all(version in served["AuthorizationPolicy"] for v, served in OSSM2_SERVED.items() if v in mesh.OSSM2_VERSIONS)
    for flavour in ("ossm2", "istio"):
        crd = yaml.safe_load_all((ROOT / "hack" / "crds" / flavour / "authorizationpolicies.security.istio.io.yaml").read_text())
        assert version in [v["name"] for doc in crd if doc for v in doc["spec"]["versions"] if v["served"]]


def kfam_lists(binding):
    """kfam/bindings.go l.202-206: `userVal, ok := roleBinding.Annotations[USER]; if !ok { continue }`."""
    return "user" in (binding["metadata"].get("annotations") or {})


def test_the_dashboard_lists_a_group_contributor_as_its_members():
    settings = {"profiles_list": [{"name": "team-a", "owner": {"user": "alice"},
                                   "contributors": [{"group": "auditors", "role": "view"}]}]}
    objs = profiles.objects(settings, groups=[{"metadata": {"name": "auditors"}, "users": ["erin"]}],
                            namespaces=[{"metadata": {"name": "team-a", "annotations": {"owner": "alice"}}}])
    bindings = dict((o["metadata"]["name"], o) for o in objs if o["kind"] == "RoleBinding")
    assert sorted(n for n, b in bindings.items() if kfam_lists(b)) == ["user-erin-clusterrole-view"]
    assert not kfam_lists(bindings["group-auditors-clusterrole-view"])
    readme = (ROOT / "roles" / "profiles" / "README.md").read_text()
    assert "a Group contributor\nappears there as its members" in readme
