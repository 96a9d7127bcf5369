"""The webhooks whose CA cert-manager's injector writes (annotation cert-manager.io/inject-ca-from)
are applied without upstream's empty caBundle, so that kfocp never owns the field the injector
writes. The oracle is upstream's render: the webhook that carries both."""
import gzip

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils import components, releases

from helpers import ROOT

UPSTREAM = ROOT.parent / "shared" / "upstream"


@pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/upstream (upstream's renders) is absent")
@pytest.mark.parametrize("release", releases.SUPPORTED)
def test_upstreams_empty_ca_bundle_is_left_to_the_injector(release):
    with gzip.open(str(UPSTREAM / ("example-render-%s.yaml.gz" % release)), "rt") as stream:
        objs = [o for o in yaml.load_all(stream, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if o]
    hooks = [o for o in objs if o["kind"].endswith("WebhookConfiguration")]
    empty = [o["metadata"]["name"] for o in hooks if o["metadata"].get("annotations", {}).get(components.INJECT_CA_FROM)
             and any(h.get("clientConfig", {}).get("caBundle") == "" for h in o["webhooks"])]
    assert "admission-webhook-mutating-webhook-configuration" in empty
    out = components.injected_ca_bundles(hooks)
    assert not [o for o in out if any("caBundle" in (h.get("clientConfig") or {}) and
                                      o["metadata"].get("annotations", {}).get(components.INJECT_CA_FROM)
                                      for h in o["webhooks"])]
    # the rest of each webhook, and every other object, as upstream wrote it
    for before, after in zip(hooks, out):
        if before["metadata"]["name"] not in empty:
            assert after is before
        for b, a in zip(before["webhooks"], after["webhooks"]):
            assert dict(a, clientConfig=None) == dict(b, clientConfig=None)
            assert a["clientConfig"]["service"] == b["clientConfig"]["service"]
