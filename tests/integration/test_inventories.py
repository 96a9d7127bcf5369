"""Every shipped inventory passes site.yml's pre-flight (kfocp_preflight_only: every enabled
role's argument specs and input checks, and nothing else): an example that fails them would fail
the first run of whoever copies it."""
import pytest

from helpers import ROOT, run_playbook

INVENTORIES = sorted(p.name for p in (ROOT / "inventories").iterdir() if (p / "hosts.yml").exists())


def test_every_inventory_is_found():
    assert {"example-dev", "example-prod", "example-multicluster", "awx", "local"} <= set(INVENTORIES)


@pytest.mark.parametrize("inventory", INVENTORIES)
def test_every_shipped_inventory_passes_the_pre_flight(inventory, tmp_path):
    result = run_playbook(None, "site", {"kfocp_preflight_only": True}, tmp_path,
                          inventory=ROOT / "inventories" / inventory / "hosts.yml")
    assert result.rc == 0, result.stdout[-3000:]
    assert "Check the inputs of every enabled role" in result.stdout
    assert result.changed == 0


def test_the_pre_flight_fails_on_a_wrong_input_and_names_it(tmp_path):
    result = run_playbook(None, "site", {"kfocp_preflight_only": True,
                                         "profiles_list": [{"name": "kube-system", "owner": {"user": "a"}}]},
                          tmp_path, inventory=ROOT / "inventories" / "example-dev" / "hosts.yml")
    assert result.rc != 0
    assert "profiles_list[0].name: 'kube-system' is a reserved namespace" in " ".join(result.stdout.split())


def test_the_pre_flight_refuses_a_kserve_url_host_that_is_not_a_host(tmp_path):
    """components_kserve_ingress_domain (KServe's ingressDomain) is refused before any change, naming
    the field, as the auth role's own host would be."""
    result = run_playbook(None, "site", {"kfocp_preflight_only": True,
                                         "components_kserve_ingress_domain": "https://kubeflow.apps.example.com"},
                          tmp_path, inventory=ROOT / "inventories" / "example-dev" / "hosts.yml")
    assert result.rc != 0
    assert "components_kserve_ingress_domain: 'https://kubeflow.apps.example.com' is not a host name" in \
        " ".join(result.stdout.split())
    assert result.changed == 0
