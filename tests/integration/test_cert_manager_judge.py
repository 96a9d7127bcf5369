"""cert-manager itself (its controller and CA injector at v1.19.4, the version the Kubeflow 26.03
render deploys, built and run by hack/cert_manager.py) as the judge of what the components role
installs from upstream's own 26.03 tree (the tarball source and the remote bases map, as
test_components_releases.py installs a release), on a control plane with cert-manager's own CRDs
from its module:

- each Certificate of the render that the components admission-webhook and pipelines install
  becomes Ready (the Certificate's Ready condition, cert-manager's readiness controller), and its
  Secret is issued by the render's Issuer (the issuer-name and issuer-kind annotations cert-manager
  writes on the Secret, and a certificate for the Certificate's DNS names);
- each webhook configuration annotated cert-manager.io/inject-ca-from gets, in every webhook, a
  caBundle equal to the CA of that Certificate's Secret (ca.crt), written by the CA injector;
- a second run of the role changes nothing and the caBundle stays: kfocp does not apply upstream's
  empty caBundle (plugins/module_utils/components.py injected_ca_bundles). The negative control:
  the same configuration applied by kfocp's field manager with caBundle "" as upstream writes it
  (a dry run) is refused for the field the injector owns, and forced, it removes the CA.
"""
import base64
import datetime

import pytest
from cryptography import x509

import cert_manager
from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError
from cluster import ClusterError
from helpers import wait_for
from test_components_releases import CRD, UPSTREAM, remote_bases, render

pytestmark = pytest.mark.skipif(not UPSTREAM.is_dir(), reason="../shared/upstream (upstream's trees) is absent")
OWN_PLANE = True
RELEASE = "26.03"
NAMESPACE = "kubeflow"
COMPONENTS = {"admission-webhook": "managed", "pipelines": "managed"}
CERTIFICATE = ("cert-manager.io/v1", "Certificate")
WEBHOOKS = (("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"),
            ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"))
INJECT = "cert-manager.io/inject-ca-from"


def upstream_objects():
    """The render's Certificates and the webhook configurations that ask for a CA, by name."""
    certificates, configs = {}, {}
    for obj in render(RELEASE):
        meta = obj["metadata"]
        if obj["kind"] == "Certificate":
            certificates[meta["name"]] = obj
        elif obj["kind"].endswith("WebhookConfiguration") and INJECT in (meta.get("annotations") or {}):
            configs[(obj["kind"], meta["name"])] = obj
    return certificates, configs


def install_mesh_crds(kube):
    """The Istio kinds the components' objects use that the plane does not serve yet, as the render
    has them (what test_components_releases.install_prerequisite_crds does for the mesh)."""
    crds = kube.resource(*CRD)
    for crd in render(RELEASE):
        if crd["kind"] == "CustomResourceDefinition" and crd["spec"]["group"].endswith("istio.io") and \
                kube.get(crds, crd["metadata"]["name"]) is None:
            crd["metadata"].pop("labels", None)
            kube.apply(crds, crd, "cluster-bootstrap", force=True)


def ready(certificate):
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in (certificate.get("status") or {}).get("conditions") or [])


def injected(kube, instance):
    """{(kind, name): (inject-ca-from, [caBundle of each webhook])} of the instance's configurations
    that ask for a CA."""
    out = {}
    for api_version, kind in WEBHOOKS:
        for config in kube.list(kube.resource(api_version, kind), label_selector="kfocp.io/instance=" + instance):
            source = (config["metadata"].get("annotations") or {}).get(INJECT)
            if source:
                out[(kind, config["metadata"]["name"])] = (
                    source, [(h.get("clientConfig") or {}).get("caBundle") for h in config.get("webhooks") or []])
    return out


def test_cert_manager_issues_the_renders_certificates_and_injects_the_ca_kfocp_keeps(
        control_plane, kube, playbook, instance, tmp_path):
    try:
        cert_manager.build()
    except ClusterError as err:
        pytest.fail("cert-manager cannot be built (make build builds it): %s" % str(err)[:1000])
    cert_manager.prepare(control_plane)
    install_mesh_crds(kube)
    kube.resources(refresh=True)
    certificates, configs = upstream_objects()
    gateway = mesh.gateway_info({"flavour": "ossm3"})
    extra = {"kfocp_instance": instance, "components_source": "tarball", "components_release": RELEASE,
             "components_tarball": str(UPSTREAM / ("kubeflow-manifests-%s.tar.gz" % RELEASE)),
             "components_remote_bases": remote_bases(tmp_path), "components_components": COMPONENTS,
             "service_mesh_gateway_info": {"principal": gateway["principal"]}, "components_no_log": False}
    with cert_manager.CertManager(control_plane) as judge:
        first = playbook("components", extra)
        assert first.rc == 0, first.stdout[-4000:]

        certs = kube.resource(*CERTIFICATE)
        installed = dict((c["metadata"]["name"], c) for c in kube.list(certs, namespace=NAMESPACE))
        # the render's, and both components' (the admission webhook's and KFP's cache webhook's)
        assert set(installed) == {"admission-webhook-cert", "kfp-cache-cert"}, sorted(installed)
        assert set(installed) <= set(certificates)

        def all_ready():
            found = [kube.get(certs, name, NAMESPACE) for name in installed]
            return found if all(ready(c) for c in found) else None
        try:
            issued = wait_for(all_ready, 90, interval=1, what="the Certificates Ready")
        except AssertionError:
            raise AssertionError("controller log:\n" + judge.tail("controller"))
        secrets = kube.resource("v1", "Secret")
        ca = {}
        for certificate in issued:
            spec = certificate["spec"]
            upstream = certificates[certificate["metadata"]["name"]]["spec"]
            assert (spec["secretName"], spec["issuerRef"]) == (upstream["secretName"], upstream["issuerRef"])
            secret = kube.get(secrets, spec["secretName"], NAMESPACE)
            annotations = secret["metadata"]["annotations"]
            assert (annotations["cert-manager.io/issuer-name"], annotations["cert-manager.io/issuer-kind"]) == \
                (upstream["issuerRef"]["name"], upstream["issuerRef"]["kind"])
            assert annotations["cert-manager.io/certificate-name"] == certificate["metadata"]["name"]
            leaf = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
            names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            assert set(names.get_values_for_type(x509.DNSName)) == set(upstream["dnsNames"])
            assert leaf.not_valid_after_utc > datetime.datetime.now(datetime.timezone.utc)
            ca["%s/%s" % (NAMESPACE, certificate["metadata"]["name"])] = secret["data"]["ca.crt"]

        wanted = dict((key, source) for key, source in ((k, c["metadata"]["annotations"][INJECT])
                                                        for k, c in configs.items()) if source in ca)
        assert len(wanted) == 2, wanted  # the admission webhook's and KFP's cache webhook's

        def all_injected():
            found = injected(kube, instance)
            return found if set(found) == set(wanted) and all(
                bundles and all(b == ca[source] for b in bundles) for source, bundles in found.values()) else None
        try:
            before = wait_for(all_injected, 60, interval=1, what="the CA injected")
        except AssertionError:
            raise AssertionError("%s\ncainjector log:\n%s" % (injected(kube, instance), judge.tail("cainjector")))
        assert dict((key, source) for key, (source, _b) in before.items()) == wanted

        second = playbook("components", extra)
        assert second.rc == 0, second.stdout[-4000:]
        changed = [x for result in second.task_results("manifests_apply") for x in result.get("objects") or []
                   if x["action"] not in ("unchanged", "skipped")]
        assert second.count("changed") == 0 and changed == [], changed
        assert injected(kube, instance) == before

        # the negative control: upstream's caBundle "" applied by kfocp's field manager
        kind, name = ("MutatingWebhookConfiguration", "admission-webhook-mutating-webhook-configuration")
        assert [h["clientConfig"].get("caBundle") for h in configs[(kind, name)]["webhooks"]] == [""]
        res = kube.resource("admissionregistration.k8s.io/v1", kind)
        live = kube.get(res, name)
        obj = {"apiVersion": live["apiVersion"], "kind": kind,
               "metadata": dict((k, live["metadata"][k]) for k in ("name", "labels", "annotations")),
               "webhooks": [dict(h, clientConfig=dict(h["clientConfig"], caBundle="")) for h in live["webhooks"]]}
        with pytest.raises(KubeError) as refused:
            kube.apply(res, obj, o.MANAGER, dry_run=True)
        print("kfocp applying upstream's empty caBundle: %s" % refused.value)
        assert "conflict" in str(refused.value).lower() and "caBundle" in str(refused.value), str(refused.value)
        forced = kube.apply(res, obj, o.MANAGER, force=True, dry_run=True)
        assert [h["clientConfig"].get("caBundle") for h in forced["webhooks"]] == [None]
        assert injected(kube, instance) == before
