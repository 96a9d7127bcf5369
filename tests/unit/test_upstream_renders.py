"""kfocp's adaptation held to upstream's own objects: the `kubectl kustomize example` render of each
Kubeflow release kfocp supports (kubeflow/manifests v1.10.2, v1.11.0 and 26.03, in
../shared/upstream, see its README), read here and put through assemble as the components role
does. The oracle is upstream's render: what its own policies decide for its own gateway, and the
names and labels its objects carry."""
import functools
import gzip
import re
import tarfile

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils import authz
from ansible_collections.kfocp.kubeflow.plugins.module_utils import releases
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import auth
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import manifests as m
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh

from helpers import ROOT

UPSTREAM = ROOT.parent / "shared" / "upstream"
RELEASES = ("v1.10.2", "v1.11.0", "26.03")
# upstream's gateway, as its AuthorizationPolicies name it, and the namespace of its mesh
UPSTREAM_PRINCIPAL = "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"
UPSTREAM_ROOT = "istio-system"
# the web apps whose policy upstream writes for its gateway, by the policy's name
UIS = {"central-dashboard", "jupyter-web-app", "volumes-web-app", "tensorboards-web-app", "katib-ui",
       "kserve-models-web-app", "ml-pipeline-ui"}
FLAVOURS = {
    "ossm2": {"flavour": "ossm2"},
    "ossm3": {"flavour": "ossm3"},
    "external": {"flavour": "external", "external": {"namespace": "ingress", "gateway": "public-gateway"}},
}

DEFAULTS = yaml.safe_load((ROOT / "roles" / "components" / "defaults" / "main.yml").read_text())
needs_upstream = pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/upstream (upstream's renders) is absent")


@functools.lru_cache(maxsize=None)
def _render(release):
    with gzip.open(str(UPSTREAM / ("example-render-%s.yaml.gz" % release)), "rt") as stream:
        return tuple(obj for obj in yaml.load_all(stream, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if obj)


def render(release):
    """Upstream's render of `example` at the release, as kubectl kustomize printed it."""
    return [dict(obj) for obj in _render(release)]


def assembled(release, flavour, namespace="kubeflow"):
    """The render through assemble with the options the components role gives it by default."""
    info = mesh.gateway_info(FLAVOURS[flavour])
    options = {"namespace": namespace, "api_versions": {"security.istio.io/AuthorizationPolicy": "v1"},
               "principals": {"ISTIO_INGRESS_GATEWAY_PRINCIPAL": info["principal"],
                              "KFP_UI_PRINCIPAL": "cluster.local/ns/%s/sa/ml-pipeline-ui" % namespace},
               "sidecar": {}, "logout_url": DEFAULTS["components_dashboard_logout_url"]}
    return m.assemble({"example": render(release)}, options)["objects"], info


def _policies(objs):
    return [o for o in objs if o.get("kind") == "AuthorizationPolicy"]


def _names_principal(policy, principal):
    return principal in yaml.safe_dump(policy.get("spec") or {})


def _pod_labels(objs, host):
    """The pod labels of the workload behind a Service host (name.namespace.svc.cluster.local)."""
    name, namespace = host.split(".")[:2]
    service = next(o for o in objs if o["kind"] == "Service" and o["metadata"]["name"] == name
                   and o["metadata"].get("namespace") == namespace)
    selector = service["spec"]["selector"]
    for obj in objs:
        labels = m.pod_meta(obj).get("labels") or {}
        if m.pod_spec(obj) is not None and obj["metadata"].get("namespace") == namespace and \
                all(labels.get(k) == v for k, v in selector.items()):
            return namespace, labels
    raise AssertionError("no workload behind %s" % host)


def gateway_paths(objs, namespace):
    """(path, namespace, pod labels) of each route the VirtualServices of `namespace` publish on
    the kubeflow Gateway."""
    out = []
    for vs in objs:
        if vs.get("kind") != "VirtualService" or vs["metadata"].get("namespace") != namespace:
            continue
        if not any(g.rpartition("/")[2] == m.UPSTREAM_GATEWAY for g in vs["spec"].get("gateways") or []):
            continue
        for http in vs["spec"].get("http") or []:
            for match in http.get("match") or []:
                path = match["uri"]["prefix"]
                out.append((path,) + _pod_labels(objs, http["route"][0]["destination"]["host"]))
    return sorted(out)


def admitted(objs, principal, root, namespace):
    """{path: (allowed, reason)} for a logged-in user's request from the gateway `principal`."""
    policies = _policies(objs)
    out = {}
    for path, where, labels in gateway_paths(objs, namespace):
        request = {"principal": principal, "headers": {"kubeflow-userid": "alice@example.com"}, "path": path + "x",
                   "method": "GET"}
        out[path] = authz.decide(policies, request, where, labels, root_namespace=root)
    return out


@needs_upstream
@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
@pytest.mark.parametrize("release", RELEASES)
def test_upstreams_gateway_policies_admit_the_gateway_kfocp_runs(release, flavour):
    before = dict((p["metadata"]["name"], p) for p in _policies(render(release))
                  if _names_principal(p, UPSTREAM_PRINCIPAL))
    assert set(before) >= UIS, "upstream's render names its gateway in %s" % sorted(before)
    objs, info = assembled(release, flavour)
    after = dict((p["metadata"]["name"], p) for p in _policies(objs))
    if info["principal"] != UPSTREAM_PRINCIPAL:
        assert not [name for name, p in after.items() if _names_principal(p, UPSTREAM_PRINCIPAL)]
    assert [name for name in before if not _names_principal(after[name], info["principal"])] == []


@needs_upstream
@pytest.mark.parametrize("namespace", ["kubeflow", "ml"])
@pytest.mark.parametrize("flavour", sorted(FLAVOURS))
@pytest.mark.parametrize("release", RELEASES)
def test_every_path_upstream_admits_from_its_gateway_is_admitted_from_kfocps(release, flavour, namespace):
    """Upstream's policies, as upstream wrote them, decide for upstream's gateway; the policies kfocp
    applies decide the same for the gateway kfocp runs, on every path the VirtualServices publish."""
    upstream = admitted(render(release), UPSTREAM_PRINCIPAL, UPSTREAM_ROOT, "kubeflow")
    objs, info = assembled(release, flavour, namespace)
    kfocp = admitted(objs, info["principal"], info["mesh_namespace"], namespace)
    assert sorted(kfocp) == sorted(upstream)
    assert {"/", "/jupyter/", "/volumes/", "/tensorboards/", "/katib/", "/pipeline", "/kserve-endpoints/"} <= \
        set(path for path, (allowed, _reason) in upstream.items() if allowed)
    refused = dict((path, kfocp[path]) for path in upstream if upstream[path][0] and not kfocp[path][0])
    assert refused == {}
    # KFAM admits only the dashboard, upstream's and kfocp's alike: not the gateway
    assert not upstream["/kfam/"][0] and not kfocp["/kfam/"][0]


@needs_upstream
@pytest.mark.parametrize("release", RELEASES)
def test_a_custom_namespace_moves_the_principals_of_upstreams_service_accounts(release):
    objs, _info = assembled(release, "ossm3", "ml")
    found = set()
    for policy in _policies(objs):
        found |= set(re.findall(r"cluster\.local/ns/([a-z0-9-]+)/sa/", yaml.safe_dump(policy.get("spec") or {})))
    assert "kubeflow" not in found and "ml" in found


# openshift/oauth-proxy at 2b9ee007290b0e1cb85737f3b37075343f9f4857: main.go l.71
# `flagSet.String("proxy-prefix", "/oauth", ...)`; oauthproxy.go l.277 `SignOutPath: fmt.Sprintf("%s/sign_out",
# opts.ProxyPrefix)`, and ServeHTTP l.578 signs out only on that path (any other is proxied upstream)
OAUTH_PROXY_DEFAULT_PREFIX = "/oauth"


def oauth_proxy_sign_out_path(args):
    """The path oauth-proxy signs out at, for its command line."""
    flags = dict(arg.split("=", 1) for arg in args if "=" in arg)
    return "%s/sign_out" % flags.get("--proxy-prefix", OAUTH_PROXY_DEFAULT_PREFIX)


@needs_upstream
@pytest.mark.parametrize("release", RELEASES)
def test_the_dashboards_logout_signs_out_of_kfocps_oauth_proxy(release):
    gateway = mesh.gateway_info({"flavour": "ossm3"})
    args = auth.proxy_args({"host": "kubeflow.apps.example.com"}, gateway)
    upstream = [e for o in render(release) if o["kind"] == "Deployment" and o["metadata"]["name"] == "centraldashboard"
                for c in o["spec"]["template"]["spec"]["containers"] for e in c.get("env") or []
                if e["name"] == "LOGOUT_URL"]
    assert upstream, "upstream's dashboard sets LOGOUT_URL"
    objs, _info = assembled(release, "ossm3")
    dashboard = next(o for o in objs if o["kind"] == "Deployment" and o["metadata"]["name"] == "centraldashboard")
    values = [e["value"] for c in dashboard["spec"]["template"]["spec"]["containers"] for e in c.get("env") or []
              if e["name"] == "LOGOUT_URL"]
    assert values == [oauth_proxy_sign_out_path(args)]


@needs_upstream
@pytest.mark.parametrize("release", RELEASES)
def test_the_uninstall_hint_selects_upstreams_profile_controller(release):
    """The hint `oc get deployment -A -l <selector>` finds the profile controller's Deployment as
    upstream labels it, and no other Deployment."""
    hint = re.search(r"oc get deployment -A -l (\S+?)\)", (ROOT / "playbooks" / "uninstall.yml").read_text())
    assert hint, "the uninstall playbook gives the hint"
    selector = dict(term.split("=", 1) for term in hint.group(1).split(","))
    found = [o["metadata"]["name"] for o in render(release) if o["kind"] == "Deployment"
             and all((o["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())]
    assert found == ["profiles-deployment"]


@needs_upstream
@pytest.mark.parametrize("release", RELEASES)
def test_the_workloads_that_skip_the_sidecar_for_the_oidc_provider_exist_in_the_release(release):
    names = set(o["metadata"]["name"] for o in render(release) if m.pod_spec(o) is not None)
    assert set(DEFAULTS["components_sidecar_authservice"]) <= names


def _tree_file(release, path):
    with tarfile.open(str(UPSTREAM / ("kubeflow-manifests-%s.tar.gz" % release))) as archive:
        return archive.extractfile("./" + path).read().decode("utf-8")


def _pod_security(text):
    return dict((k, v) for k, v in (yaml.safe_load(text) or {}).items() if k.startswith("pod-security.kubernetes.io/"))


@needs_upstream
@pytest.mark.parametrize("release", RELEASES)
def test_the_readme_says_what_upstreams_namespace_labels_files_set(release):
    text = " ".join((ROOT / "roles" / "components" / "README.md").read_text().split())
    base = re.search(r"Upstream's file `([^`]+namespace-labels\.yaml)` sets no Pod Security label", text)
    overlay = re.search(r"the `([^`]+)` overlay that upstream's `example` installs instead sets only `([^`:]+): (\w+)`", text)
    assert base and overlay, "the README states which Pod Security labels upstream's namespace-labels files set"
    assert _pod_security(_tree_file(release, base.group(1))) == {}
    assert _pod_security(_tree_file(release, overlay.group(1) + "/namespace-labels.yaml")) == \
        {overlay.group(2): overlay.group(3)}
    example = yaml.safe_load(_tree_file(release, "example/kustomization.yaml"))
    assert "../%s" % overlay.group(1) in example["resources"]


def _strings(value):
    if isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value


@needs_upstream
@pytest.mark.parametrize("release", RELEASES)
def test_a_custom_namespace_moves_every_reference_to_upstreams_services_and_accounts(release):
    """With components_namespace, no object (but a CRD's schema) still names a Service upstream puts
    in kubeflow as `<name>.kubeflow[.svc...]`, or one of its accounts as `.../ns/kubeflow/sa/...`:
    env values (the dashboard's KFAM host), configuration (KFP's artifact store, its profile
    controller's code), certificates' DNS names."""
    upstream = render(release)
    services = set(o["metadata"]["name"] for o in upstream if o["kind"] == "Service"
                   and o["metadata"].get("namespace") == "kubeflow")
    reference = re.compile(r"(?<![A-Za-z0-9_.-])([a-z0-9-]+)\.kubeflow(?![A-Za-z0-9_-]|\.(?!svc\b))|/ns/kubeflow/sa/")
    before = set(o["metadata"]["name"] for o in upstream if o["kind"] != "CustomResourceDefinition" and any(
        (not match.group(1) or match.group(1) in services) for s in _strings(dict(o, metadata={}))
        for match in reference.finditer(s)))
    assert {"centraldashboard", "workflow-controller-configmap"} <= before
    objs, _info = assembled(release, "ossm3", "ml")
    left = sorted("%s %s: %s" % (o["kind"], o["metadata"]["name"], match.group(0)) for o in objs
                  if o["kind"] != "CustomResourceDefinition" for s in _strings(dict(o, metadata={}))
                  for match in reference.finditer(s) if not match.group(1) or match.group(1) in services)
    assert left == []


@needs_upstream
@pytest.mark.parametrize("release", RELEASES)
def test_every_argo_object_kfocp_drops_for_an_external_argo_is_one_upstream_renders(release):
    objs = render(release)
    unmatched = [(kind, pattern) for kind, pattern in m.ARGO_OBJECTS
                 if not [o for o in objs if o["kind"] == kind and m.fnmatch.fnmatchcase(o["metadata"]["name"], pattern)]]
    assert unmatched == []
    s3 = {"endpoint": "s3.example.com", "bucket": "kfp", "secret": "s3-creds"}
    out = m.assemble({"example": objs}, {"argo": {"s3": s3}})["objects"]
    assert not [o for o in out if o["kind"] == "Deployment" and o["metadata"]["name"] == "workflow-controller"]
    assert not [o for o in out if o["kind"] == "CustomResourceDefinition" and o["spec"]["group"] == "argoproj.io"]


@needs_upstream
@pytest.mark.parametrize("release", RELEASES)
def test_the_readme_names_the_remote_bases_the_default_catalog_needs_in_each_release(release, tmp_path):
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import kustomize
    with tarfile.open(str(UPSTREAM / ("kubeflow-manifests-%s.tar.gz" % release))) as archive:
        archive.extractall(str(tmp_path))
    found = set(kustomize._remote_key(entry).split("/manifests/")[0] for paths in releases.catalog(release).values()
                for path in paths for _file, entry in kustomize.remote_bases(str(tmp_path), path))
    row = re.search(r"^\| %s \([0-9-]+\) \| [0-9a-f]{40} \| (.*) \|$" % re.escape(release),
                    (ROOT / "roles" / "components" / "README.md").read_text(), re.M)
    assert row, "the README's table of releases has a row for %s" % release
    named = set(kustomize._remote_key(url) for url in re.findall(r"`(https://[^`]+)`", row.group(1)))
    assert named == found
