"""What the local API server dials goes through the plane's egress proxy (hack/egress.py), which
dials only loopback: a webhook's Service registered with a loopback server is answered by it, one
with no server is refused at once and its failurePolicy decides, and the kubelet of a node (logs,
exec) and an aggregated API's Service are refused. The proxy's own record of each CONNECT
(ControlPlane.egress_events) shows the API server's call. On a control plane of its own: it makes
a Node, and an APIService that is not available, which would disturb the other tests'
discovery."""
import json
import re
import time

import pytest

import standins
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError
from helpers import wait_for

OWN_PLANE = True
NAMESPACE = ("v1", "Namespace")
SERVICE = ("v1", "Service")
CONFIGMAP = ("v1", "ConfigMap")
VALIDATING = ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration")


def namespace(kube, name):
    kube.apply(kube.resource(*NAMESPACE), {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
               "test")


def service(kube, ns, name, port=443):
    obj = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": ns},
           "spec": {"ports": [{"name": "https", "port": port, "targetPort": 8443, "protocol": "TCP"}]}}
    return kube.apply(kube.resource(*SERVICE), obj, "test")


def validating_webhook(name, ns, svc, failure_policy, ca_bundle=None, url=None):
    """A ValidatingWebhookConfiguration whose webhook `name` (served by Service `svc`, or at `url`)
    sees the ConfigMaps of namespace `ns`."""
    client = {"url": url} if url else {"service": {"name": svc, "namespace": ns, "path": "/validate", "port": 443}}
    if ca_bundle:
        client["caBundle"] = ca_bundle
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [{"name": name, "clientConfig": client, "failurePolicy": failure_policy,
                          "sideEffects": "None", "admissionReviewVersions": ["v1"], "timeoutSeconds": 10,
                          "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": ns}},
                          "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                                     "resources": ["configmaps"]}]}]}


def configmap(ns, name, value="1"):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns},
            "data": {"value": value}}


def events_since(plane, count, instance):
    """The proxy's events after the first `count`, but those meant for another test's objects: the
    API server still calls an earlier test's webhooks for a moment after their deletion (such as on
    the ConfigMap kube-controller-manager publishes into each new namespace)."""
    def another_tests(event):
        meant_for = event.get("meant_for") or ""
        return bool(re.match(r"(Service |Node )?t-[0-9a-f]{8}", meant_for)) and instance not in meant_for
    return [e for e in plane.egress_events()[count:] if not another_tests(e)]


def cluster_ip(kube, ns, name):
    return kube.get(kube.resource(*SERVICE), name, ns)["spec"]["clusterIP"]


def test_a_webhook_call_goes_through_the_proxy_to_its_loopback_server(control_plane, kube, instance):
    ns, hook = instance + "-hooked", instance + ".hook.kfocp.io"
    namespace(kube, ns)
    service(kube, ns, "validator")
    before = len(control_plane.egress_events())
    with standins.AdmissionWebhook(control_plane, ns, "validator", allowed=False, message="no " + instance) as server:
        kube.apply(kube.resource(*VALIDATING), validating_webhook(hook, ns, "validator", "Fail", server.ca_bundle),
                   "test")
        try:
            # the webhook's answer decides: the loopback server refuses, so the API server refuses
            wait_for(lambda: _refused_with(kube, ns, "no " + instance), timeout=20,
                     what="the webhook's server to refuse the ConfigMap")
            server.allowed = True
            kube.apply(kube.resource(*CONFIGMAP), configmap(ns, "b"), "test")
            assert kube.get(kube.resource(*CONFIGMAP), "b", ns) is not None
            seen = [(r["name"], r["operation"], r["namespace"]) for r in server.reviews]
            assert ("b", "CREATE", ns) in seen and any(r[0].startswith("a-") for r in seen), seen
            served = [e for e in events_since(control_plane, before, instance) if e["outcome"] == "served"]
            assert served and all(e["target"] == cluster_ip(kube, ns, "validator") + ":443" and
                                  e["meant_for"] == ns + "/validator:443" and
                                  e["to"] == "127.0.0.1:%d" % server.server.server_address[1] for e in served), served
        finally:
            kube.delete(kube.resource(*VALIDATING), hook)


def test_a_webhook_url_goes_through_the_proxy_too(control_plane, kube, instance):
    """A webhook's `url` is dialled through the proxy as well (egress selection controlplane): to
    a loopback address it is tunnelled as it is; to any other address it is refused."""
    ns_local, ns_away = instance + "-local", instance + "-away"
    local, away = instance + ".local.kfocp.io", instance + ".away.kfocp.io"
    before = len(control_plane.egress_events())
    with standins.AdmissionWebhook(control_plane, host="localhost", allowed=False, message="local " + instance) as srv:
        port = srv.server.server_address[1]
        for ns, hook, url in ((ns_local, local, srv.url), (ns_away, away, "https://10.0.0.1:8443/validate")):
            namespace(kube, ns)
            kube.apply(kube.resource(*VALIDATING), validating_webhook(hook, ns, None, "Fail", srv.ca_bundle, url),
                       "test")
        try:
            wait_for(lambda: _refused_with(kube, ns_local, "local " + instance), timeout=20,
                     what="the url webhook's loopback server to answer")
            wait_for(lambda: _refused_with(kube, ns_away, 'failed calling webhook "%s"' % away), timeout=20,
                     what="the url webhook off the machine to be refused")
        finally:
            for hook in (local, away):
                kube.delete(kube.resource(*VALIDATING), hook)
    outcomes = {(e["target"], e["outcome"]) for e in events_since(control_plane, before, instance)}
    assert ("localhost:%d" % port, "served") in outcomes, outcomes
    assert ("10.0.0.1:8443", "refused") in outcomes, outcomes


def test_a_webhook_with_no_server_is_refused_at_once_and_its_failure_policy_decides(control_plane, kube, instance):
    ns_fail, ns_ignore = instance + "-fail", instance + "-ignore"
    hooks = {ns_fail: (instance + ".fail.kfocp.io", "Fail"), ns_ignore: (instance + ".ignore.kfocp.io", "Ignore")}
    before = len(control_plane.egress_events())
    for ns, (hook, policy) in hooks.items():
        namespace(kube, ns)
        service(kube, ns, "no-pod")
        kube.apply(kube.resource(*VALIDATING), validating_webhook(hook, ns, "no-pod", policy), "test")
    try:
        # the webhook configuration takes effect within a second or so: retry until it is called
        wait_for(lambda: _create_refused(kube, ns_fail, hooks[ns_fail][0]), timeout=20,
                 what="the Fail webhook with no server to refuse the ConfigMap")
        start = time.monotonic()
        with pytest.raises(KubeError) as refused:
            create(kube, configmap(ns_fail, "again"))
        assert time.monotonic() - start < 5, "the refusal took %.1fs" % (time.monotonic() - start)
        assert 'failed calling webhook "%s"' % hooks[ns_fail][0] in str(refused.value), refused.value
        # failurePolicy Ignore: the same refusal lets the object through
        kube.apply(kube.resource(*CONFIGMAP), configmap(ns_ignore, "through"), "test")
        assert kube.get(kube.resource(*CONFIGMAP), "through", ns_ignore) is not None
        refusals = {(e["target"], e["meant_for"]) for e in events_since(control_plane, before, instance)
                    if e["outcome"] == "refused"}
        for ns in hooks:
            assert (cluster_ip(kube, ns, "no-pod") + ":443", "Service %s/no-pod" % ns) in refusals, refusals
    finally:
        for hook, unused in hooks.values():
            kube.delete(kube.resource(*VALIDATING), hook)


def _refused_with(kube, ns, message):
    """Whether a new ConfigMap is refused with `message` (the configuration may take a moment to
    reach the API server's admission: until then ConfigMaps are admitted)."""
    try:
        create(kube, configmap(ns, "a-%d" % time.monotonic_ns()))
    except KubeError as err:
        assert message in str(err), err
        return True
    return False


def create(kube, obj):
    """POST, which the client does not repeat: one call of the webhook."""
    ns = obj["metadata"]["namespace"]
    return kube.request("POST", "/api/v1/namespaces/%s/%ss" % (ns, obj["kind"].lower()), body=obj)


def _create_refused(kube, ns, hook):
    try:
        create(kube, configmap(ns, "probe-%d" % time.monotonic_ns()))
    except KubeError as err:
        return 'failed calling webhook "%s"' % hook in str(err)
    return False


def test_logs_and_exec_through_the_api_server_go_to_the_proxy_and_are_refused(control_plane, kube, instance):
    """The kubelet of a node at kwok's node IP (hack/cluster.py --node-ip) is never dialled."""
    node, ns = instance + "-node", instance + "-pods"
    kube.apply(kube.resource("v1", "Node"), {"apiVersion": "v1", "kind": "Node", "metadata": {"name": node}}, "test")
    kube.request("PATCH", "/api/v1/nodes/%s/status" % node, content_type="application/merge-patch+json",
                 body={"status": {"addresses": [{"type": "InternalIP", "address": "10.0.1.1"}],
                                  "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}})
    namespace(kube, ns)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": ns},
           "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.example.com/c:1"}]}}
    kube.apply(kube.resource("v1", "Pod"), pod, "test")
    before = len(control_plane.egress_events())
    try:
        logs = control_plane.kubectl("logs", "-n", ns, "p", check=False)
        execs = control_plane.kubectl("exec", "-n", ns, "p", "--", "true", check=False)
        assert logs.returncode and execs.returncode, (logs, execs)
        assert "502" in logs.stderr, logs.stderr
        refusals = [e for e in events_since(control_plane, before, instance) if e["outcome"] == "refused"]
        assert {e["target"] for e in refusals} == {"10.0.1.1:10250"}, refusals
        assert {e["meant_for"] for e in refusals} == {"Node " + node}, refusals
        assert len(refusals) >= 2, refusals
    finally:
        kube.request("DELETE", "/api/v1/namespaces/%s/pods/p" % ns, body={"gracePeriodSeconds": 0})
        kube.delete(kube.resource("v1", "Node"), node)


def test_an_aggregated_api_goes_to_the_proxy(control_plane, kube, instance):
    """kube-aggregator checks an APIService's Service with a discovery request, through the proxy."""
    ns, group = instance + "-agg", instance + ".kfocp.io"
    namespace(kube, ns)
    service(kube, ns, "api")
    slice_ = {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
              "metadata": {"name": "api-1", "namespace": ns, "labels": {"kubernetes.io/service-name": "api"}},
              "addressType": "IPv4", "endpoints": [{"addresses": ["10.128.0.9"], "conditions": {"ready": True}}],
              "ports": [{"name": "https", "port": 8443, "protocol": "TCP"}]}
    kube.apply(kube.resource("discovery.k8s.io/v1", "EndpointSlice"), slice_, "test")
    before = len(control_plane.egress_events())
    apiservice = {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                  "metadata": {"name": "v1alpha1." + group},
                  "spec": {"group": group, "version": "v1alpha1", "insecureSkipTLSVerify": True,
                           "groupPriorityMinimum": 100, "versionPriority": 10,
                           "service": {"namespace": ns, "name": "api", "port": 443}}}
    res = kube.resource("apiregistration.k8s.io/v1", "APIService")
    kube.apply(res, apiservice, "test")
    try:
        wanted = (cluster_ip(kube, ns, "api") + ":443", "Service %s/api" % ns)

        def refused():
            return wanted in {(e["target"], e["meant_for"]) for e in events_since(control_plane, before, instance)
                              if e["outcome"] == "refused"}
        wait_for(refused, timeout=30, what="the aggregator's discovery call at the egress proxy")
        condition = wait_for(lambda: next((c for c in (kube.get(res, "v1alpha1." + group).get("status") or {})
                                           .get("conditions") or [] if c["type"] == "Available"
                                           and c["reason"] == "FailedDiscoveryCheck"), None),
                             timeout=30, what="the APIService to be unavailable")
        assert condition["status"] == "False" and "502" in condition["message"], json.dumps(condition)
    finally:
        kube.delete(res, "v1alpha1." + group)


def _tree(dest, ns, hook, ca_bundle, value):
    """A kustomize tree: a Namespace, the webhook's Service, two ConfigMaps, and a webhook with
    failurePolicy Fail that sees the namespace's ConfigMaps."""
    import yaml
    objs = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "validator", "namespace": ns},
             "spec": {"ports": [{"name": "https", "port": 443, "targetPort": 8443, "protocol": "TCP"}]}},
            configmap(ns, "settings", value), configmap(ns, "other", "stays"),
            validating_webhook(hook, ns, "validator", "Fail", ca_bundle)]
    app = dest / "app"
    app.mkdir(parents=True, exist_ok=True)
    (app / "all.yaml").write_text(yaml.safe_dump_all(objs))
    (app / "kustomization.yaml").write_text(yaml.safe_dump({"apiVersion": "kustomize.config.k8s.io/v1beta1",
                                                            "kind": "Kustomization", "resources": ["all.yaml"]}))


def test_an_upgrade_with_a_fail_webhook_goes_through_while_its_server_is_up(
        control_plane, kube, playbook, instance, tmp_path):
    ns, hook = instance + "-tree", instance + ".tree.kfocp.io"
    server = standins.AdmissionWebhook(control_plane, ns, "validator").start()
    extra = {"kfocp_instance": instance, "components_source": "dir", "components_dir": str(tmp_path / "tree"),
             "components_catalog": {"hooked": ["app"]}, "components_components": {"hooked": "managed"},
             "components_no_log": False}
    try:
        _tree(tmp_path / "tree", ns, hook, server.ca_bundle, "v1")
        first = playbook("components", extra)
        assert first.rc == 0, first.stdout[-3000:]
        _tree(tmp_path / "tree", ns, hook, server.ca_bundle, "v2")
        upgrade = playbook("components", extra)
        assert upgrade.rc == 0, upgrade.stdout[-3000:]
        assert kube.get(kube.resource(*CONFIGMAP), "settings", ns)["data"] == {"value": "v2"}
        assert ("settings", "UPDATE") in {(r["name"], r["operation"]) for r in server.reviews}, server.reviews

        server.stop()  # the webhook's pod is down
        objects = ((NAMESPACE, ns, None), (SERVICE, "validator", ns), (CONFIGMAP, "settings", ns),
                   (CONFIGMAP, "other", ns), (VALIDATING, hook, None))

        def versions():
            return {(kind, name): kube.get(kube.resource(*kind), name, where)["metadata"]["resourceVersion"]
                    for kind, name, where in objects}
        kept = versions()
        _tree(tmp_path / "tree", ns, hook, server.ca_bundle, "v3")
        blocked = playbook("components", extra)
        assert blocked.rc != 0
        failures = blocked.task_results()[0]["failures"]
        assert [f.split(":")[0] for f in failures] == ["ConfigMap %s/settings" % ns], failures
        assert 'failed calling webhook "%s"' % hook in failures[0], failures
        # nothing else is lost: every other object of the tree is there, unchanged
        assert versions() == kept
        assert kube.get(kube.resource(*CONFIGMAP), "settings", ns)["data"] == {"value": "v2"}
    finally:
        server.stop()
        playbook("uninstall", {"kfocp_instance": instance})


def test_the_istiod_injector_stand_in_is_called_through_the_proxy_and_refused(control_plane, kube, instance):
    """No istiod runs here: a pod its injection webhook matches is refused, naming the webhook."""
    mesh, ns = instance + "-mesh", instance + "-injected"
    namespace(kube, mesh)
    kube.apply(kube.resource("v1", "Namespace"), {"apiVersion": "v1", "kind": "Namespace", "metadata": {
        "name": ns, "labels": {"istio-injection": "enabled"}}}, "test")
    kube.apply(kube.resource(*SERVICE), standins.istiod_service("default", mesh), "sail-operator")
    webhook = standins.istiod_injector_webhook("default", mesh)
    mutating = kube.resource("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration")
    kube.apply(mutating, webhook, "sail-operator")
    before = len(control_plane.egress_events())
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": ns},
           "spec": {"containers": [{"name": "c", "image": "registry.example.com/c:1"}]}}
    try:
        def refused():
            try:
                kube.request("POST", "/api/v1/namespaces/%s/pods" % ns,
                             body=dict(pod, metadata=dict(pod["metadata"], name="p-%d" % time.monotonic_ns())))
            except KubeError as err:
                assert 'failed calling webhook "namespace.sidecar-injector.istio.io"' in str(err), err
                return True
            return False
        wait_for(refused, timeout=20, what="the injection webhook to be called")
        wanted = (cluster_ip(kube, mesh, "istiod") + ":443", "Service %s/istiod" % mesh)
        assert wanted in {(e["target"], e["meant_for"]) for e in events_since(control_plane, before, instance)
                          if e["outcome"] == "refused"}
    finally:
        kube.delete(mutating, webhook["metadata"]["name"])
