"""The bundle generator's pure parts: the replaces chain and the permissions it copies."""
import sys

import pytest

from helpers import ROOT

sys.path.insert(0, str(ROOT / "operator" / "hack"))

import gen_bundle  # noqa: E402


@pytest.mark.parametrize("releases, current, previous", [
    ([], "0.1.0", None),
    (["0.1.0"], "0.1.0", None),
    (["0.1.0", "0.2.0"], "0.2.0", "0.1.0"),
    (["0.1.0", "0.2.0", "0.10.0"], "0.10.0", "0.2.0"),
    (["0.1.0", "0.2.0"], "0.3.0", "0.2.0"),
    (["0.1.0", "1.0.0"], "0.5.0", "0.1.0"),
])
def test_replaces_the_newest_earlier_release(tmp_path, releases, current, previous):
    changelog = tmp_path / "changelog.yaml"
    changelog.write_text("releases:\n" + "".join("  %s: {}\n" % r for r in releases) if releases else "releases: {}\n")
    assert gen_bundle.previous_release(current, changelog) == previous


def test_permissions_follow_the_bindings_to_service_accounts():
    rules = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
    role = {"kind": "ClusterRole", "metadata": {"name": "r"}, "rules": rules}
    binding = {"kind": "ClusterRoleBinding", "metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "r"},
               "subjects": [{"kind": "ServiceAccount", "name": "op", "namespace": "x"}, {"kind": "User", "name": "u"}]}
    assert gen_bundle.permissions([role, binding], "ClusterRole", "ClusterRoleBinding") == [
        {"serviceAccountName": "op", "rules": role["rules"]}]


def test_a_binding_to_an_unknown_role_is_an_error():
    binding = {"kind": "ClusterRoleBinding", "metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "r"},
               "subjects": [{"kind": "ServiceAccount", "name": "op"}]}
    with pytest.raises(gen_bundle.BundleError, match="ClusterRoleBinding b: binds ClusterRole r"):
        gen_bundle.permissions([binding], "ClusterRole", "ClusterRoleBinding")


def test_olm_sets_the_watched_namespaces():
    dep = {"kind": "Deployment", "metadata": {"name": "op", "labels": {"a": "b"}}, "spec": {"template": {"spec": {
        "containers": [{"name": "m", "env": [{"name": "WATCH_NAMESPACE", "value": ""}, {"name": "X", "value": "1"}]}]}}}}
    (out,) = gen_bundle.deployments([dep])
    env = out["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env[0] == {"name": "WATCH_NAMESPACE",
                      "valueFrom": {"fieldRef": {"fieldPath": "metadata.annotations['olm.targetNamespaces']"}}}
    assert env[1] == {"name": "X", "value": "1"}
    assert dep["spec"]["template"]["spec"]["containers"][0]["env"][0] == {"name": "WATCH_NAMESPACE", "value": ""}
