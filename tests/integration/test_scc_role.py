"""The scc role through ansible-playbook (ansible-runner) against the real API server."""
import json


# site.yml with every role but scc switched off: these tests count the scc role's changes only.
ONLY_SCC = {"kfocp_%s_enabled" % role: False for role in (
    "service_mesh", "auth", "serverless", "gpu", "autoscaler", "components", "profiles", "namespace_policies")}


def grants(namespace, *accounts):
    return [{"namespace": namespace, "serviceaccount": sa, "scc": scc, "reason": "test"} for sa, scc in accounts]


def bindings(kube, namespace):
    res = kube.resource("rbac.authorization.k8s.io/v1", "RoleBinding")
    return {b["metadata"]["name"]: b for b in kube.list(res, namespace=namespace)}


def test_grant_idempotence_check_mode_revoke_and_absent(playbook, kube, instance):
    ns = instance
    extra = dict(ONLY_SCC, kfocp_instance=instance, scc_grants=grants(ns, ("mysql", "anyuid"), ("argo", "privileged")))
    first = playbook("site", extra)
    assert first.rc == 0, first.stdout
    assert first.count("changed") == 1
    found = bindings(kube, ns)
    assert set(found) == {"kfocp-scc-anyuid-mysql", "kfocp-scc-privileged-argo"}
    assert found["kfocp-scc-privileged-argo"]["roleRef"]["name"] == "system:openshift:scc:privileged"

    second = playbook("site", extra)
    assert second.rc == 0 and second.count("changed") == 0, second.stdout
    check = playbook("site", extra, check=True, diff=True)
    assert check.rc == 0 and check.count("changed") == 0, check.stdout

    # the SCC objects themselves are never edited
    scc = kube.get(kube.resource("security.openshift.io/v1", "SecurityContextConstraints"), "privileged")
    assert "system:serviceaccount:%s:argo" % ns not in (scc.get("users") or [])

    # removing an entry revokes it; check mode first reports without acting
    fewer = dict(extra, scc_grants=grants(ns, ("mysql", "anyuid")))
    dry = playbook("site", fewer, check=True)
    assert dry.count("changed") == 1 and "kfocp-scc-privileged-argo" in bindings(kube, ns)
    third = playbook("site", fewer)
    assert third.rc == 0 and third.count("changed") == 1
    assert set(bindings(kube, ns)) == {"kfocp-scc-anyuid-mysql"}

    absent = playbook("site", dict(fewer, scc_state="absent"))
    assert absent.rc == 0, absent.stdout
    assert bindings(kube, ns) == {}
    # the namespace kfocp created stays until uninstall
    assert kube.get(kube.resource("v1", "Namespace"), ns) is not None
    gone = playbook("uninstall", {"kfocp_instance": instance})  # uninstall is driven by labels, every set
    assert gone.rc == 0, gone.stdout
    assert kube.get(kube.resource("v1", "Namespace"), ns) is None


def may_use(control_plane, namespace, serviceaccount, scc):
    """The RBAC decision SCC admission asks for (openshift/apiserver-library-go
    sccmatching/matcher.go authorizedForSCC): verb use, group security.openshift.io, resource
    securitycontextconstraints, the SCC's name, in the pod's namespace, for the pod's service
    account (serviceaccount.UserInfo: its user name and groups). The real API server decides."""
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
        "user": "system:serviceaccount:%s:%s" % (namespace, serviceaccount),
        "groups": ["system:serviceaccounts", "system:serviceaccounts:%s" % namespace],
        "resourceAttributes": {"namespace": namespace, "verb": "use", "group": "security.openshift.io",
                               "resource": "securitycontextconstraints", "name": scc}}}
    made = control_plane.kubectl("create", "-o", "json", "-f", "-", input=json.dumps(review))
    return json.loads(made.stdout)["status"].get("allowed", False)


def test_a_grant_lets_the_service_account_use_that_scc_and_no_other(playbook, control_plane, instance):
    ns = instance
    result = playbook("site", dict(ONLY_SCC, kfocp_instance=instance, scc_grants=grants(ns, ("mysql", "anyuid"))))
    assert result.rc == 0, result.stdout
    assert may_use(control_plane, ns, "mysql", "anyuid")
    assert not may_use(control_plane, ns, "mysql", "privileged")
    assert not may_use(control_plane, ns, "other", "anyuid")
    assert not may_use(control_plane, "default", "mysql", "anyuid")
    assert playbook("uninstall", {"kfocp_instance": instance}).rc == 0


def test_bad_grant_fails_before_any_change(playbook, kube, instance):
    extra = dict(ONLY_SCC, kfocp_instance=instance,
                 scc_grants=grants(instance, ("mysql", "anyuid")) + grants(instance, ("x", "root")))
    result = playbook("site", extra)
    assert result.rc != 0
    assert "scc_grants[1].scc: 'root' is not an allowed SCC" in result.stdout
    assert kube.get(kube.resource("v1", "Namespace"), instance) is None


def test_argument_spec_rejects_a_grant_without_namespace(playbook, kube, instance):
    result = playbook("site", dict(ONLY_SCC, kfocp_instance=instance, scc_grants=[{"serviceaccount": "a", "scc": "anyuid"}]))
    assert result.rc != 0
    assert "namespace" in result.stdout and "scc_grants" in result.stdout
    assert kube.get(kube.resource("v1", "Namespace"), instance) is None
