"""The operator's RBAC: least privilege, every rule named."""
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
RBAC = ROOT / "operator" / "config" / "rbac"


def _role():
    return yaml.safe_load((RBAC / "role.yaml").read_text())


def test_the_cluster_role_has_no_wildcard():
    for index, rule in enumerate(_role()["rules"]):
        for field in ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"):
            assert not any("*" in value for value in rule.get(field) or []), "rules[%d].%s has a wildcard" % (index, field)


def test_binding_and_account_match_the_role():
    binding = yaml.safe_load((RBAC / "role_binding.yaml").read_text())
    account = yaml.safe_load((RBAC / "service_account.yaml").read_text())
    assert binding["roleRef"]["name"] == _role()["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account["metadata"]["name"],
                                    "namespace": account["metadata"]["namespace"]}]
    kustomization = yaml.safe_load((RBAC / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == ["role.yaml", "role_binding.yaml", "service_account.yaml"]


def test_the_operator_may_manage_its_own_api():
    rules = _role()["rules"]
    allowed = set((g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"])
    for resource, verbs in (("kubeflows", ("get", "list", "watch", "patch")), ("kubeflows/status", ("patch",))):
        for verb in verbs:
            assert ("kfocp.io", resource, verb) in allowed
