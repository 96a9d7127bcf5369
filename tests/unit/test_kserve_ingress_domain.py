"""KServe's InferenceService URLs are the front door's: the `ingress` of upstream's own
`inferenceservice-config` (upstream's example renders; 26.03's kustomization patches in
`pathTemplate`), as the components role adapts it,
read with KServe v0.16.0's own field names (pkg/apis/serving/v1beta1/configmap.go, IngressConfig).

In Serverless mode KServe v0.16.0 gives an InferenceService, when `pathTemplate` is set, the URL
`<urlScheme>://<ingressDomain><pathTemplate>` and a VirtualService rule for authority
`ingressDomain` and that path on `ingressGateway` (reconcilers/ingress/ingress_reconciler.go
getPathBasedServiceUrl, createIngress). The front door kfocp runs is the auth role's Route on
auth_host (TLS), oauth-proxy, then the gateway with Host auth_host; upstream's `example.com` and
`http` match no request that comes that way. tests/integration/test_kserve_judge.py runs KServe's
controller on the result."""
import functools
import gzip
import json
import re

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils import role_defaults, settings
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import manifests
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError
from gomod import json_fields, require_module
from helpers import ROOT

KSERVE = ("github.com/kserve/kserve", "v0.16.0")  # pinned by hack/kserve/go.sum
HOST = "kubeflow.apps.cluster.example.com"


def _ingress_keys():
    """{Go field: JSON key} of KServe's IngressConfig."""
    source = (require_module(pytest, *KSERVE) / "pkg/apis/serving/v1beta1/configmap.go").read_text()
    fields = json_fields(source, "IngressConfig")
    assert fields, "no IngressConfig in KServe's configmap.go"
    return fields


def _ingress(objs):
    [cm] = [o for o in objs if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "inferenceservice-config"]
    return json.loads(cm["data"]["ingress"])


@functools.lru_cache(maxsize=None)
def _render_configs(release):
    """The render's inferenceservice-config (its other documents are not parsed)."""
    path = ROOT.parent / "shared" / "upstream" / ("example-render-%s.yaml.gz" % release)
    if not path.is_file():
        pytest.skip("../shared/upstream holds no %s" % path.name)
    with gzip.open(str(path), "rt") as stream:
        docs = stream.read().split("\n---\n")
    found = [yaml.safe_load(d) for d in docs if "name: inferenceservice-config" in d]
    return json.dumps([o for o in found if o and o.get("kind") == "ConfigMap"
                       and o["metadata"]["name"] == "inferenceservice-config"])


def _upstream(release):
    return json.loads(_render_configs(release))


def test_26_03_inference_services_get_the_front_doors_https_url():
    keys = _ingress_keys()
    domain, scheme, path = keys["IngressDomain"], keys["UrlScheme"], keys["PathTemplate"]
    upstream = _upstream("26.03")
    before = _ingress(upstream)
    # what KServe would write with upstream's configuration: a host no request through the front door has
    assert (before[domain], before[scheme], before[path]) == ("example.com", "http", "/serving/{{ .Namespace }}/{{ .Name }}")
    adapted = manifests.kserve_ingress_domain(upstream, HOST)
    after = _ingress(adapted)
    assert (after[domain], after[scheme]) == (HOST, "https")
    # everything else as upstream wrote it (the gateways, the path, the local gateway)
    assert dict((k, v) for k, v in after.items() if k not in (domain, scheme)) == \
        dict((k, v) for k, v in before.items() if k not in (domain, scheme))
    url = "%s://%s%s" % (after[scheme], after[domain], after[path].replace("{{ .Namespace }}", "team-a")
                         .replace("{{ .Name }}", "sklearn-iris"))
    assert url == "https://%s/serving/team-a/sklearn-iris" % HOST
    assert manifests.kserve_ingress_domain(adapted, HOST) == adapted  # a second run changes nothing


@pytest.mark.parametrize("release", ["v1.10.2", "v1.11.0"])
def test_releases_without_a_path_template_keep_upstreams_ingress(release):
    """Without `pathTemplate` KServe names an InferenceService by Knative's domain, which the
    front door does not serve: kfocp leaves the configuration as upstream wrote it."""
    keys = _ingress_keys()
    upstream = _upstream(release)
    assert not _ingress(upstream).get(keys["PathTemplate"])
    assert manifests.kserve_ingress_domain(upstream, HOST) == upstream


def test_the_components_role_derives_the_host_from_the_auth_role_and_its_variable_wins():
    assert role_defaults.DEFAULTS["components"]["components_kserve_ingress_domain"] is None
    derive = settings.kserve_ingress_domain
    assert derive({"auth_host": HOST}) == HOST
    assert derive({"auth_host": HOST, "kfocp_auth_enabled": False}) == ""
    assert derive({"auth_host": ""}) == "" and derive({}) == ""
    assert derive({"auth_host": HOST, "components_kserve_ingress_domain": "models.example.org"}) == "models.example.org"
    assert derive({"auth_host": HOST, "components_kserve_ingress_domain": ""}) == ""
    assert settings.components_settings({"auth_host": HOST})["components_kserve_ingress_domain"] == HOST


def test_the_whole_assembly_gives_kserve_the_host_and_empty_keeps_upstreams():
    upstream = _upstream("26.03")
    given = manifests.assemble({"kserve": upstream}, {"namespace": "kubeflow", "kserve_ingress_domain": HOST})["objects"]
    assert (_ingress(given)["ingressDomain"], _ingress(given)["urlScheme"]) == (HOST, "https")
    kept = manifests.assemble({"kserve": upstream}, {"namespace": "kubeflow", "kserve_ingress_domain": ""})["objects"]
    assert (_ingress(kept)["ingressDomain"], _ingress(kept)["urlScheme"]) == ("example.com", "http")


@pytest.mark.parametrize("value", ["https://kubeflow.apps.example.com", "kubeflow.apps.example.com/serving",
                                   "kubeflow.apps.example.com:443", "Kubeflow.Apps", ["a.example.com"]])
def test_a_value_that_is_not_a_host_is_refused_naming_the_field(value):
    with pytest.raises(DefinitionError, match=r"^components_kserve_ingress_domain: .* is not a host name\. Give the host"):
        settings.components_settings({"components_kserve_ingress_domain": value})
    with pytest.raises(DefinitionError, match=re.escape("components_kserve_ingress_domain:")):
        manifests.kserve_ingress_domain(_upstream("26.03"), value)
