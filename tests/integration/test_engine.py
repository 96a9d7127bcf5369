"""The apply engine against the real API server: changed reporting, check and diff mode,
ownership, conflicts, prune safety, ordering and bad input."""
import json
import time

import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import namespace
from ansible_collections.kfocp.kubeflow.plugins.module_utils import transport
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client
from ansible_collections.kfocp.kubeflow.plugins.module_utils.engine import ApplyError, Engine


def ns(name, **labels):
    obj = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    if labels:
        obj["metadata"]["labels"] = labels
    return obj


def cm(name, namespace, **data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace},
            "data": data}


def recording_client(control_plane, kubeconfig=None):
    """A client of the control plane (as the user of `kubeconfig`, when given) that records every
    request it sends, as (method, path, label selector, accept), and the list it records them in."""
    client = Client.from_params({"kubeconfig": str(kubeconfig or control_plane.kubeconfig)})
    sent = []
    send = client.request

    def recording(method, path, query=None, accept="application/json", **kwargs):
        sent.append((method, path, (query or {}).get("labelSelector") or "", accept))
        return send(method, path, query=query, accept=accept, **kwargs)

    client.request = recording
    return client, sent


def engine(kube, instance, **kwargs):
    kwargs.setdefault("set_name", "test")
    return Engine(kube, instance=instance, **kwargs)


def get(kube, api_version, kind, name, namespace=None):
    return kube.get(kube.resource(api_version, kind), name, namespace)


def test_apply_reports_changes_exactly_and_a_noop_costs_no_write(kube, instance):
    objs = [ns(instance), cm("a", instance, x="1"), cm("b", instance, y="2")]
    first = engine(kube, instance).apply(objs)
    assert first.counts()["created"] == 3 and first.changed

    before = kube.requests
    second = engine(kube, instance).apply(objs)
    assert not second.changed and second.counts()["unchanged"] == 3
    # a few objects: a GET each, no PATCH at all, and no LIST of every object of their kinds
    assert kube.requests - before == 3

    objs[1]["data"]["x"] = "changed"
    third = engine(kube, instance).apply(objs)
    assert third.counts() == dict(third.counts(), updated=1, unchanged=2)
    assert get(kube, "v1", "ConfigMap", "a", instance)["data"] == {"x": "changed"}


def test_removed_field_is_dropped_and_labels_are_set(kube, instance):
    engine(kube, instance).apply([ns(instance), cm("a", instance, x="1", y="2")])
    result = engine(kube, instance).apply([ns(instance), cm("a", instance, x="1")])
    assert result.counts()["updated"] == 1
    live = get(kube, "v1", "ConfigMap", "a", instance)
    assert live["data"] == {"x": "1"}
    labels = live["metadata"]["labels"]
    assert labels[o.MANAGED_BY] == "kfocp" and labels[o.INSTANCE] == instance and labels[o.SET] == "test"
    assert labels[o.PART_OF] == "kfocp"


def test_check_mode_changes_nothing_and_diff_shows_before_and_after(kube, instance):
    engine(kube, instance).apply([ns(instance), cm("a", instance, x="1")])
    result = engine(kube, instance, check_mode=True, diff=True).apply(
        [ns(instance), cm("a", instance, x="2"), cm("new", instance, z="3")])
    assert result.counts()["updated"] == 1 and result.counts()["created"] == 1
    assert get(kube, "v1", "ConfigMap", "a", instance)["data"] == {"x": "1"}
    assert get(kube, "v1", "ConfigMap", "new", instance) is None
    diff = {d["after_header"]: d for d in result.diffs}
    changed = diff["ConfigMap %s/a" % instance]
    assert changed["before"]["data"] == {"x": "1"} and changed["after"]["data"] == {"x": "2"}
    assert diff["ConfigMap %s/new" % instance]["before"] == {}


def test_check_mode_with_a_new_namespace_does_not_fail(kube, instance):
    result = engine(kube, instance, check_mode=True).apply([ns(instance), cm("a", instance, x="1")])
    assert result.counts()["created"] == 2
    assert get(kube, "v1", "Namespace", instance) is None


def test_a_field_owned_by_another_manager_fails_clearly_and_changes_nothing(kube, instance, control_plane):
    engine(kube, instance).apply([ns(instance), cm("a", instance, x="1")])
    # someone edits the value kfocp set
    control_plane.kubectl("-n", instance, "patch", "configmap", "a", "--field-manager=someone-else",
                          "-p", '{"data":{"x":"theirs"}}')
    before = get(kube, "v1", "ConfigMap", "a", instance)
    with pytest.raises(ApplyError) as err:
        engine(kube, instance).apply([ns(instance), cm("a", instance, x="1", extra="new")])
    message = str(err.value)
    assert "ConfigMap %s/a" % instance in message
    assert ".data.x" in message and "someone-else" in message and "force" in message
    after = get(kube, "v1", "ConfigMap", "a", instance)
    assert after["data"] == {"x": "theirs"}
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    # check mode reports the conflict without failing
    dry = engine(kube, instance, check_mode=True).apply([ns(instance), cm("a", instance, x="1")])
    conflict = [i for i in dry.items if i["action"] == "conflict"]
    assert len(conflict) == 1 and "someone-else" in conflict[0]["message"] and not dry.errors
    # force takes it over
    engine(kube, instance, force=True).apply([ns(instance), cm("a", instance, x="1")])
    assert get(kube, "v1", "ConfigMap", "a", instance)["data"] == {"x": "1"}


def test_an_object_kfocp_did_not_create_is_never_overwritten(kube, instance, control_plane):
    engine(kube, instance).apply([ns(instance)])
    control_plane.kubectl("-n", instance, "create", "configmap", "handmade", "--from-literal=x=mine")
    before = get(kube, "v1", "ConfigMap", "handmade", instance)
    with pytest.raises(ApplyError) as err:
        engine(kube, instance).apply([ns(instance), cm("handmade", instance, x="mine")])
    assert "already exists and was created by someone else" in str(err.value)
    after = get(kube, "v1", "ConfigMap", "handmade", instance)
    assert after == before
    # adopt takes it over on request
    engine(kube, instance, adopt=True).apply([ns(instance), cm("handmade", instance, x="mine")])
    assert o.owned_by(get(kube, "v1", "ConfigMap", "handmade", instance), instance)


def test_prune_removes_only_what_this_instance_and_set_own(kube, instance, control_plane):
    other = instance + "-other"
    engine(kube, instance).apply([ns(instance), cm("keep", instance, a="1"), cm("drop", instance, a="1")])
    engine(kube, instance, set_name="another-set").apply([cm("other-set", instance, a="1")])
    engine(kube, other).apply([cm("other-instance", instance, a="1")])
    # look-alikes kfocp did not create: same labels but one, and no labels at all
    control_plane.kubectl("-n", instance, "create", "configmap", "handmade")
    look_alike = cm("look-alike", instance)
    look_alike["metadata"]["labels"] = {o.MANAGED_BY: "someone", o.INSTANCE: instance, o.SET: "test"}
    control_plane.kubectl("apply", "-f", "-", input=str(look_alike).replace("'", '"'))

    result = engine(kube, instance).apply([ns(instance), cm("keep", instance, a="1")], prune=True)
    deleted = [(i["kind"], i["name"]) for i in result.items if i["action"] == "deleted"]
    assert deleted == [("ConfigMap", "drop")]
    for name in ("keep", "other-set", "other-instance", "handmade", "look-alike"):
        assert get(kube, "v1", "ConfigMap", name, instance) is not None, name
    assert get(kube, "v1", "ConfigMap", "drop", instance) is None


def test_unknown_kind_and_missing_namespace_fail_before_any_change(kube, instance):
    bad_kind = {"apiVersion": "example.com/v1", "kind": "Nope", "metadata": {"name": "x"}}
    with pytest.raises(o.DefinitionError) as err:
        engine(kube, instance).apply([ns(instance), bad_kind])
    assert "definitions[1] Nope x" in str(err.value) and "no kind Nope in example.com/v1" in str(err.value)
    no_ns = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    with pytest.raises(o.DefinitionError) as err:
        engine(kube, instance).apply([ns(instance), no_ns])
    assert "metadata.namespace is required" in str(err.value)
    assert get(kube, "v1", "Namespace", instance) is None


def test_a_field_the_api_server_rejects_is_named(kube, instance):
    bad = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "lr", "namespace": instance},
           "spec": {"limits": [{"type": "Container", "default": {"cpu": "lots"}}]}}
    unknown = cm("u", instance)
    unknown["spec"] = {"nope": 1}
    with pytest.raises(ApplyError) as err:
        engine(kube, instance).apply([ns(instance), bad, unknown])
    message = str(err.value)
    assert "LimitRange %s/lr: rejected by the API server" % instance in message
    assert "quantities must match" in message
    assert "ConfigMap %s/u: rejected by the API server" % instance in message
    assert ".spec: field not declared in schema" in message


def test_crd_and_its_custom_resources_in_one_list(kube, instance):
    group = "%s.kfocp.test" % instance
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets." + group},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"kind": "Widget", "plural": "widgets", "singular": "widget"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "properties": {"spec": {"type": "object", "properties": {
                            "size": {"type": "integer"}}}}}}}]}}
    widget = {"apiVersion": group + "/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": instance},
              "spec": {"size": 3}}
    # the CR comes first in the list: the engine orders CRD, Namespace, then the rest
    result = engine(kube, instance).apply([widget, ns(instance), crd])
    assert result.counts()["created"] == 3
    assert get(kube, group + "/v1", "Widget", "w", instance)["spec"] == {"size": 3}
    assert not engine(kube, instance).apply([widget, ns(instance), crd]).changed
    engine(kube, instance).delete_all(wait=True)
    kube.forget()
    assert (group + "/v1", "Widget") not in kube.resources()


def gadget_crd(group, plural):
    """A CRD of kind Gadget in `group`: two of them in one group conflict on the kind."""
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "%s.%s" % (plural, group)},
            "spec": {"group": group, "scope": "Namespaced", "names": {"kind": "Gadget", "plural": plural},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def test_a_crd_the_api_server_never_establishes_fails_at_the_deadline_naming_it(kube, instance):
    """The API server accepts a CRD whose kind another CRD of its group already has, but never
    establishes it (NamesAccepted false): the run fails once its wait is over, naming that CRD."""
    group = "%s.kfocp.test" % instance
    engine(kube, instance, set_name="first").apply([gadget_crd(group, "gadgets")])
    started = time.monotonic()
    with pytest.raises(ApplyError) as err:
        engine(kube, instance, wait_timeout=3).apply([gadget_crd(group, "gadgetz")])
    assert time.monotonic() - started < 30
    assert "gadgetz.%s: not Established after 3s" % group in str(err.value), str(err.value)
    engine(kube, instance).delete_all(wait=True)


def test_a_client_that_may_not_watch_crds_reads_them_until_established(kube, instance, control_plane, tmp_path):
    """Without the right to watch CRDs, the wait reads the pending CRDs instead, until Established."""
    user = instance + "-crds"
    rules = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": user},
             "rules": [{"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"],
                        "verbs": ["get", "list", "create", "patch", "update", "delete"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": user},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}
    control_plane.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List",
                                                                "items": [rules, binding]}))
    client, sent = recording_client(control_plane, control_plane.write_kubeconfig(tmp_path / "crds.kubeconfig", user))
    group = "%s.kfocp.test" % instance
    try:
        result = Engine(client, instance=instance, set_name="test").apply([gadget_crd(group, "gadgets")])
        assert result.counts()["created"] == 1
        crd = get(kube, "apiextensions.k8s.io/v1", "CustomResourceDefinition", "gadgets." + group)
        assert [c["status"] for c in crd["status"]["conditions"] if c["type"] == "Established"] == ["True"]
        assert ("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/gadgets." + group) in \
            [entry[:2] for entry in sent]
    finally:
        engine(kube, instance).delete_all(wait=True)
        control_plane.kubectl("delete", "clusterrolebinding,clusterrole", user)


def test_the_kinds_of_a_crd_it_creates_are_not_read(kube, instance, control_plane):
    """No object of a kind can exist before its CRD: a run that creates the CRD sends its custom
    resources without a GET or LIST of that kind, prune included; a later run reads them again."""
    group = "%s.kfocp.test" % instance
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "gizmos." + group},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"kind": "Gizmo", "plural": "gizmos", "singular": "gizmo"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
    # more than the engine GETs one by one, so that without prune they would be listed too
    gizmos = [{"apiVersion": group + "/v1", "kind": "Gizmo", "metadata": {"name": "g%d" % i, "namespace": instance}}
              for i in range(40)]
    client, sent = recording_client(control_plane)
    path = "/apis/%s/v1/" % group
    try:
        result = engine(client, instance).apply([crd, ns(instance)] + gizmos, prune=True)
        assert result.counts()["created"] == 42
        assert [e[0] for e in sent if e[1].startswith(path) or "/gizmos" in e[1] and "apiextensions" not in e[1]] \
            == ["PATCH"] * 40
        del sent[:]
        again = engine(client, instance).apply([crd, ns(instance)] + gizmos[1:], prune=True)
        assert [(i["name"], i["action"]) for i in again.items if i["action"] != "unchanged"] == [("g0", "deleted")]
        assert ("GET", "/apis/%s/v1/gizmos" % group) in [entry[:2] for entry in sent]
    finally:
        engine(kube, instance).delete_all(wait=True)


def test_custom_resources_wait_for_discovery_after_established(kube, instance, control_plane):
    """The API server lists a new CRD's kinds in its discovery document shortly after it sets
    Established (seen on 70 CRDs at once: the last one's custom resources failed as an unknown
    kind). The engine waits for discovery too: here a client whose discovery lists the new kind
    only from its fourth answer that could hold it."""
    group = "%s.kfocp.test" % instance
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "sprockets." + group},
           "spec": {"group": group, "scope": "Namespaced",
                    "names": {"kind": "Sprocket", "plural": "sprockets", "singular": "sprocket"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                        "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}
    sprocket = {"apiVersion": group + "/v1", "kind": "Sprocket", "metadata": {"name": "s", "namespace": instance}}
    client = Client.from_params({"kubeconfig": str(control_plane.kubeconfig)})
    discover = client._discover
    hidden = []

    def lagging():
        found = discover()
        if (group + "/v1", "Sprocket") in found and len(hidden) < 3:
            hidden.append(1)
            del found[(group + "/v1", "Sprocket")]
        return found

    client._discover = lagging
    try:
        result = engine(client, instance).apply([crd, ns(instance), sprocket])
        assert result.counts()["created"] == 3 and len(hidden) == 3
        assert get(kube, group + "/v1", "Sprocket", "s", instance) is not None
    finally:
        engine(kube, instance).delete_all(wait=True)


def test_a_long_lived_client_finds_a_kind_installed_after_its_discovery(kube, control_plane, instance, monkeypatch):
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import client as client_module
    group = "%s.kfocp.test" % instance
    kube.resources(refresh=True)
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "gadgets." + group},
           "spec": {"group": group, "scope": "Cluster", "names": {"kind": "Gadget", "plural": "gadgets"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "schema": {"openAPIV3Schema": {"type": "object"}}}]}}
    control_plane.kubectl("apply", "--server-side", "--field-manager=kfocp-test", "-f", "-", input=json.dumps(crd))
    control_plane.wait_established("gadgets." + group)
    try:
        # within the grace period after a discovery, a miss is a miss: no request storm on typos
        monkeypatch.setattr(client_module, "REDISCOVER_AFTER", 3600)
        with pytest.raises(client_module.UnknownKind):
            kube.resource(group + "/v1", "Gadget")
        monkeypatch.setattr(client_module, "REDISCOVER_AFTER", 0)
        assert kube.resource(group + "/v1", "Gadget").plural == "gadgets"
    finally:
        control_plane.kubectl("delete", "crd", "gadgets." + group, "--wait=false")


def test_a_client_that_saw_an_outage_applies_once_the_server_answers_and_fails_while_it_does_not(
        control_plane, instance):
    """A long-lived client (the operator's fast path keeps one) remembers that the API server did
    not answer until a request is answered. An apply made then sends its objects, and reports
    what it did; while the server still does not answer, it fails. It never skips its objects and
    reports success."""
    from cluster import free_port
    client = Client.from_params({"kubeconfig": str(control_plane.kubeconfig)}, retries=1, backoff=0.01)
    client.resources()
    server = client.pool
    down = "https://127.0.0.1:%d" % free_port()  # the API server is down
    client.pool = transport.Pool(down, server.context, server.server_hostname)
    with pytest.raises(Exception, match="did not answer"):
        client.request("GET", "/version")
    assert client.unreachable
    with pytest.raises(ApplyError, match="did not answer"):
        Engine(client, instance=instance, set_name="test").apply([ns(instance), cm("a", instance, x="1")])
    assert client.unreachable
    client.pool = server  # it is back
    result = Engine(client, instance=instance, set_name="test").apply([ns(instance), cm("a", instance, x="1")])
    assert result.counts()["created"] == 2, result.counts()
    assert client.unreachable is None
    assert get(client, "v1", "ConfigMap", "a", instance)["data"] == {"x": "1"}


def test_shared_objects_get_fields_only_and_are_given_back(kube, instance, control_plane):
    control_plane.kubectl("create", "namespace", instance)
    control_plane.kubectl("label", "namespace", instance, "owner=them")
    shared = ns(instance, **{"istio-injection": "enabled"})
    shared["metadata"]["annotations"] = {o.OWNERSHIP: o.SHARED}
    result = engine(kube, instance).apply([shared])
    assert result.counts()["updated"] == 1
    labels = get(kube, "v1", "Namespace", instance)["metadata"]["labels"]
    assert labels["istio-injection"] == "enabled" and labels["owner"] == "them"
    assert o.MANAGED_BY not in labels and labels[o.PATCHED_PREFIX + instance] == "true"
    assert not engine(kube, instance).apply([shared]).changed

    released = engine(kube, instance).delete_all()
    assert released.counts()["released"] == 1
    labels = get(kube, "v1", "Namespace", instance)["metadata"]["labels"]
    assert "istio-injection" not in labels and o.PATCHED_PREFIX + instance not in labels
    assert labels["owner"] == "them"


def test_a_shared_object_is_never_created(kube, instance):
    shared = ns(instance)
    shared["metadata"]["annotations"] = {o.OWNERSHIP: o.SHARED}
    with pytest.raises(ApplyError) as err:
        engine(kube, instance).apply([shared])
    assert "never creates it" in str(err.value)
    assert get(kube, "v1", "Namespace", instance) is None


def test_ensure_leaves_an_existing_foreign_object_alone(kube, instance, control_plane):
    control_plane.kubectl("create", "namespace", instance)
    before = get(kube, "v1", "Namespace", instance)
    wanted = ns(instance)
    wanted["metadata"]["annotations"] = {o.OWNERSHIP: o.ENSURE}
    result = engine(kube, instance).apply([wanted])
    assert result.counts()["skipped"] == 1 and not result.changed
    assert get(kube, "v1", "Namespace", instance) == before
    engine(kube, instance).delete_all(wait=True)
    assert get(kube, "v1", "Namespace", instance) is not None


def test_delete_all_removes_everything_of_the_instance(kube, instance):
    engine(kube, instance, set_name="one").apply([ns(instance), cm("a", instance)])
    engine(kube, instance, set_name="two").apply([cm("b", instance)])
    result = engine(kube, instance).delete_all(wait=True)
    assert result.counts()["deleted"] == 3
    assert get(kube, "v1", "Namespace", instance) is None


def test_many_objects_go_through_concurrently(kube, instance):
    objs = [ns(instance)] + [cm("c%03d" % i, instance, i=str(i)) for i in range(300)]
    result = engine(kube, instance, concurrency=16).apply(objs)
    assert result.counts()["created"] == 301
    before = kube.requests
    assert not engine(kube, instance).apply(objs).changed
    assert kube.requests - before == 2


def test_a_client_with_too_few_rights_gets_a_clear_error(kube, instance, control_plane, tmp_path):
    engine(kube, instance).apply([ns(instance)])
    path = control_plane.write_kubeconfig(tmp_path / "nobody.kubeconfig", "nobody")
    nobody = Client.from_params({"kubeconfig": str(path)})
    with pytest.raises(ApplyError) as err:
        Engine(nobody, instance=instance, set_name="test").apply([cm("a", instance)])
    assert "forbidden" in str(err.value) and "ConfigMap %s/a" % instance in str(err.value)


@pytest.mark.parametrize("how", ["kubeconfig", "host-and-api-key"])
def test_a_token_authenticates_as_its_service_account(control_plane, tmp_path, how):
    token = control_plane.serviceaccount_token("default", "default")
    if how == "kubeconfig":
        path = control_plane.write_kubeconfig(tmp_path / "sa.kubeconfig", "sa", token=token)
        client = Client.from_params({"kubeconfig": str(path)})
    else:
        client = Client.from_params({"host": control_plane.server, "api_key": token,
                                     "ca_cert": str(control_plane.dir / "ca.crt")})
    with pytest.raises(Exception) as err:
        client.request("GET", "/api/v1/namespaces/default/secrets")
    assert 'User "system:serviceaccount:default:default"' in str(err.value)


def test_sets_that_patch_one_object_keep_each_others_fields(kube, instance):
    mine = ns(instance)
    mine["metadata"]["annotations"] = {o.OWNERSHIP: o.ENSURE}
    engine(kube, instance, set_name="a").apply([mine])
    for set_name, label in (("b", "from-b"), ("c", "from-c")):
        patch = ns(instance, **{label: "yes"})
        patch["metadata"]["annotations"] = {o.OWNERSHIP: o.SHARED}
        engine(kube, instance, set_name=set_name).apply([patch])
    for set_name, label in (("a", None), ("b", "from-b"), ("c", "from-c")):
        again = ns(instance, **({label: "yes"} if label else {}))
        again["metadata"]["annotations"] = {o.OWNERSHIP: o.ENSURE if set_name == "a" else o.SHARED}
        assert not engine(kube, instance, set_name=set_name).apply([again]).changed, set_name
    labels = get(kube, "v1", "Namespace", instance)["metadata"]["labels"]
    assert labels["from-b"] == labels["from-c"] == "yes"
    assert labels[o.MANAGED_BY] == "kfocp" and labels[o.INSTANCE] == instance and labels[o.SET] == "a"
    engine(kube, instance).delete_all(wait=True)
    assert get(kube, "v1", "Namespace", instance) is None


def test_sets_that_declare_one_platform_namespace_keep_each_others_labels(kube, instance):
    """A platform Namespace that several roles declare (the 'namespaces' set), each with labels of
    its own: every role's run leaves the others' labels, and a second round changes nothing."""
    declared = {"scc": {}, "mesh": {"member": "yes"}, "components": {"istio-injection": "enabled"}}
    for unused_round in range(2):
        results = [engine(kube, instance, set_name=set_name).apply([namespace(instance, labels)])
                   for set_name, labels in declared.items()]
    assert [r.changed for r in results] == [False, False, False]
    labels = get(kube, "v1", "Namespace", instance)["metadata"]["labels"]
    assert labels["member"] == "yes" and labels["istio-injection"] == "enabled"
    assert labels[o.SET] == o.NAMESPACES_SET and labels[o.INSTANCE] == instance

    # a role that stops setting a label removes it; the others' stay
    assert engine(kube, instance, set_name="components").apply([namespace(instance)]).changed
    labels = get(kube, "v1", "Namespace", instance)["metadata"]["labels"]
    assert "istio-injection" not in labels and labels["member"] == "yes"
    engine(kube, instance).delete_all(wait=True)
    assert get(kube, "v1", "Namespace", instance) is None


def test_pruning_one_set_gives_back_only_its_patch(kube, instance, control_plane):
    control_plane.kubectl("create", "namespace", instance)
    for set_name, label in (("b", "from-b"), ("c", "from-c")):
        patch = ns(instance, **{label: "yes"})
        patch["metadata"]["annotations"] = {o.OWNERSHIP: o.SHARED}
        engine(kube, instance, set_name=set_name).apply([patch])
    result = engine(kube, instance, set_name="b").apply([], prune=True)
    assert result.counts()["released"] == 1
    labels = get(kube, "v1", "Namespace", instance)["metadata"]["labels"]
    assert "from-b" not in labels and labels["from-c"] == "yes"
    engine(kube, instance).delete_all()
    labels = get(kube, "v1", "Namespace", instance)["metadata"]["labels"]
    assert "from-c" not in labels and o.PATCHED_PREFIX + instance not in labels


def test_prune_reads_the_applied_kinds_once(kube, instance, control_plane):
    """A run with prune compares and prunes from one LIST of kfocp's objects per applied kind."""
    objs = [ns(instance), cm("a", instance, x="1"), cm("b", instance, x="2")]
    engine(kube, instance).apply(objs, prune=True)
    client, sent = recording_client(control_plane)
    result = engine(client, instance).apply(objs[:2], prune=True)
    assert [(i["name"], i["action"]) for i in result.items if i["action"] != "unchanged"] == [("b", "deleted")]
    owned = [s for s in sent if s[:2] == ("GET", "/api/v1/configmaps") and s[2].startswith(o.MANAGED_BY)]
    assert len(owned) == 1, owned
    assert owned[0][2].endswith(",%s=test" % o.SET)  # the set's own objects, not every set's of the install
    assert get(kube, "v1", "ConfigMap", "a", instance) is not None
    assert get(kube, "v1", "ConfigMap", "b", instance) is None


def _update(kube, obj, patch, manager="someone-else"):
    """Another writer's merge patch (an Update, as kubectl edit or a controller makes)."""
    res = kube.resource(obj["apiVersion"], obj["kind"])
    meta = obj["metadata"]
    kube.request("PATCH", kube.path(res, meta.get("namespace"), meta["name"]), query={"fieldManager": manager},
                 body=patch, content_type="application/merge-patch+json")


def test_a_run_reads_metadata_only_and_still_finds_what_another_writer_changed(kube, instance, control_plane):
    """kfocp's objects are listed as metadata only: the digest and kfocp's managed fields tell
    which are as applied. Whatever another writer changed or removed of kfocp's fields is found
    (and put back, or refused as a conflict); what it only repeated, or added beside them, costs
    no write."""
    objs = [ns(instance)] + [cm(name, instance, x="1", y="2") for name in "abcde"]
    engine(kube, instance).apply(objs, prune=True)
    _update(kube, objs[1], {"data": {"x": "edited"}})                          # a value changed
    _update(kube, objs[2], {"data": {"y": None}})                              # a field removed
    _update(kube, objs[3], {"metadata": {"labels": {o.SET: None}}})            # kfocp's label removed
    _update(kube, objs[4], {"data": {"x": "1"}})                               # the same value again
    _update(kube, objs[5], {"data": {"theirs": "z"}})                          # a field of its own
    client, sent = recording_client(control_plane)
    with pytest.raises(ApplyError) as failed:
        engine(client, instance).apply(objs, prune=True)
    # a value another writer changed is theirs now: named, never overwritten without force
    assert ".data.x (owned by someone-else)" in str(failed.value)
    result = failed.value.result
    assert sorted((i["name"], i["action"]) for i in result.items if i["action"] != "unchanged") == [
        ("a", "failed"), ("b", "updated"), ("c", "updated")]
    lists = [s for s in sent if s[:2] == ("GET", "/api/v1/configmaps")]
    assert lists and all("PartialObjectMetadataList" in s[3] for s in lists), lists
    assert sorted(s[1].rsplit("/", 1)[1] for s in sent if s[0] == "PATCH") == ["a", "b", "c"]
    assert get(kube, "v1", "ConfigMap", "b", instance)["data"] == {"x": "1", "y": "2"}
    assert get(kube, "v1", "ConfigMap", "c", instance)["metadata"]["labels"][o.SET] == "test"
    assert get(kube, "v1", "ConfigMap", "e", instance)["data"] == {"x": "1", "y": "2", "theirs": "z"}
    assert engine(kube, instance, force=True).apply(objs, prune=True).counts()["updated"] == 1
    assert get(kube, "v1", "ConfigMap", "a", instance)["data"] == {"x": "1", "y": "2"}
    assert not engine(kube, instance).apply(objs, prune=True).changed


def test_a_controller_that_writes_back_an_equal_value_in_another_form_is_not_fought(kube, instance, control_plane):
    """A controller that writes a whole object back (Kubeflow's profile controller does, with its
    own encoding of quantities) takes the fields whose text it changed: metadata then shows them
    as someone else's, and the full object shows the same quantity, so nothing is written."""
    profile = {"apiVersion": "kubeflow.org/v1", "kind": "Profile", "metadata": {"name": instance},
               "spec": {"owner": {"kind": "User", "name": "someone@example.com"},
                        "resourceQuotaSpec": {"hard": {"cpu": "8", "memory": "1Gi"}}}}
    engine(kube, instance).apply([profile], prune=True)
    _update(kube, profile, {"spec": {"resourceQuotaSpec": {"hard": {"cpu": "8000m"}}}}, manager="profile-controller")
    client, sent = recording_client(control_plane)
    assert engine(client, instance).apply([profile], prune=True).counts()["unchanged"] == 1
    assert ("GET", "/apis/kubeflow.org/v1/profiles/" + instance) in [entry[:2] for entry in sent]
    assert not [s for s in sent if s[0] == "PATCH"]
    engine(kube, instance).delete_all(wait=True)


def test_a_patch_is_read_as_metadata_and_put_back_when_another_writer_removed_its_field(
        kube, instance, control_plane):
    control_plane.kubectl("create", "namespace", instance)
    for name in "ab":
        control_plane.kubectl("create", "configmap", name, "-n", instance, "--from-literal=theirs=1")
    patches = [dict(cm(name, instance), data={"ours": "1"}) for name in "ab"]
    for patch in patches:
        patch["metadata"]["annotations"] = {o.OWNERSHIP: o.SHARED}
    assert engine(kube, instance).apply(patches, prune=True).counts()["updated"] == 2
    _update(kube, patches[0], {"data": {"ours": None}})
    client, sent = recording_client(control_plane)
    result = engine(client, instance).apply(patches, prune=True)
    assert [(i["name"], i["action"]) for i in result.items] == [("a", "updated"), ("b", "unchanged")]
    lists = [s for s in sent if s[:2] == ("GET", "/api/v1/configmaps")]
    assert lists and all("PartialObjectMetadataList" in s[3] for s in lists), lists
    assert [s[1].rsplit("/", 1)[1] for s in sent if s[0] == "PATCH"] == ["a"]
    assert get(kube, "v1", "ConfigMap", "a", instance)["data"] == {"theirs": "1", "ours": "1"}


def test_prune_uses_the_reads_prescan_made_while_the_caller_rendered(kube, instance, control_plane):
    """prescan() lists the set's objects of every served kind in the background (the components
    module does it while kustomize renders); the apply's prune uses those reads, no second LIST of
    a kind, and still deletes only what this instance and set own and the run does not want, and
    nothing at all when the apply fails."""
    def secret(name, set_name="test"):
        engine(kube, instance, set_name=set_name).apply([{
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": instance},
            "stringData": {"key": "value"}}])

    engine(kube, instance).apply([ns(instance), cm("keep", instance, a="1")])
    secret("drop")
    secret("other-set", "another-set")
    control_plane.kubectl("-n", instance, "create", "secret", "generic", "handmade", "--from-literal=a=b")
    client, sent = recording_client(control_plane)
    runner = engine(client, instance)
    runner.prescan()
    with pytest.raises(ApplyError):  # a namespace that does not exist: nothing is pruned
        runner.apply([ns(instance), cm("keep", instance, a="1"), cm("bad", instance + "-missing")], prune=True)
    assert get(kube, "v1", "Secret", "drop", instance) is not None
    del sent[:]
    runner.prescan()
    result = runner.apply([ns(instance), cm("keep", instance, a="1")], prune=True)
    assert [(i["kind"], i["name"]) for i in result.items if i["action"] == "deleted"] == [("Secret", "drop")]
    for name in ("other-set", "handmade"):
        assert get(kube, "v1", "Secret", name, instance) is not None, name
    listed = [s for s in sent if s[:2] == ("GET", "/api/v1/secrets") and s[2].startswith(o.MANAGED_BY)]
    assert len(listed) == 1, listed


def test_prune_refuses_to_empty_most_namespaces_and_names_what_it_would_remove(kube, instance):
    """A desired state emptied by a wrong input (a selector that selects nothing) must not empty
    the set's namespaces: prune stops before deleting anything, and names the objects. A change
    that removes some objects of each namespace goes ahead."""
    spaces = ["%s-%d" % (instance, i) for i in range(3)]
    objs = [ns(name) for name in spaces] + [cm(c, name, x="1") for name in spaces for c in ("a", "b")]
    engine(kube, instance).apply(objs, prune=True)
    fewer = [obj for obj in objs if obj["kind"] == "Namespace" or obj["metadata"]["name"] == "a"]
    result = engine(kube, instance, max_prune_share=0.5).apply(fewer, prune=True)  # b from every namespace
    assert result.counts()["deleted"] == 3
    with pytest.raises(ApplyError) as err:
        engine(kube, instance, max_prune_share=0.5).apply(fewer[:4], prune=True)  # only the first keeps a
    message = str(err.value)
    assert "prune refused: it would remove every object of set test from 2 of its 3 namespaces" in message, message
    assert all("ConfigMap %s/a" % name in message for name in spaces[1:]), message
    assert all(get(kube, "v1", "ConfigMap", "a", name) for name in spaces), "prune deleted something"
    # one namespace emptied is allowed, and 1 allows any share
    engine(kube, instance, max_prune_share=0.5).apply(fewer[:5], prune=True)
    assert get(kube, "v1", "ConfigMap", "a", spaces[2]) is None
    result = engine(kube, instance, max_prune_share=1).apply(fewer[:3], prune=True)
    assert result.counts()["deleted"] == 2


def test_text_outside_the_basic_multilingual_plane_round_trips(kube, instance):
    """Apply bodies go as YAML (apply-patch+yaml): every Unicode character, astral-plane ones
    included, must reach the API server as itself and come back the same."""
    text = "ålice😀 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 \u00e9\u4e2d\U0001F680"
    obj = cm("unicode", instance, note=text)
    obj["metadata"]["annotations"] = {"owner": text}
    obj["metadata"]["labels"] = {"plain": "ascii"}
    created = engine(kube, instance).apply([ns(instance), obj])
    assert created.counts()["created"] == 2, created.as_dict()
    live = get(kube, "v1", "ConfigMap", "unicode", instance)
    assert live["data"]["note"] == text and live["metadata"]["annotations"]["owner"] == text
    again = engine(kube, instance).apply([ns(instance), obj])
    assert not again.changed, again.as_dict()
    # a user's name, as a profile owner's RoleBinding subject holds it
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "owner", "namespace": instance},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "ålice😀"}]}
    engine(kube, instance).apply([ns(instance), obj, binding])
    assert get(kube, "rbac.authorization.k8s.io/v1", "RoleBinding", "owner", instance)["subjects"][0]["name"] == "ålice😀"
    obj["data"]["note"] = text + "🎉"
    changed = engine(kube, instance).apply([ns(instance), obj, binding])
    assert changed.counts()["updated"] == 1
    assert get(kube, "v1", "ConfigMap", "unicode", instance)["data"]["note"] == text + "🎉"
