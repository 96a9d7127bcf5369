"""Only the Kubeflow in the operator's namespace drives kfocp's operator: which resources may become
the active one, and what a refused one is told (the pure parts; tests/integration/test_operator.py
shows it on the API server with a project editor's credentials)."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "operator"))

from kfocp_operator import collection  # noqa: E402

collection.importable()

from kfocp_operator import controller, status  # noqa: E402
from kfocp_operator.metrics import Metrics  # noqa: E402
from kfocp_operator.spec import SpecModel  # noqa: E402


def _cr(namespace, name, created):
    return {"metadata": {"namespace": namespace, "name": name, "creationTimestamp": created, "generation": 1}}


def _controller(operator_namespace, crs):
    ctl = controller.Controller(None, controller.Settings(None, ROOT, operator_namespace=operator_namespace),
                                SpecModel({}), Metrics())
    ctl.informer.items = lambda: list(crs)
    return ctl


def test_an_older_kubeflow_in_a_project_does_not_become_the_active_one():
    tenant = _cr("team-a", "kubeflow", "2026-01-01T00:00:00Z")
    platform = _cr("kfocp-system", "kubeflow", "2026-02-01T00:00:00Z")
    ctl = _controller("kfocp-system", [tenant, platform])
    assert not ctl.owned(tenant) and ctl.owned(platform)
    assert controller.active_key(ctl._candidates()) == ("kfocp-system", "kubeflow")  # pylint: disable=protected-access


def test_without_an_operator_namespace_every_kubeflow_is_a_candidate():
    tenant = _cr("team-a", "kubeflow", "2026-01-01T00:00:00Z")
    assert _controller(None, [tenant]).owned(tenant)


def test_the_deletion_of_a_project_kubeflow_does_not_touch_the_platforms():
    """A project's Kubeflow named like the platform's: its deletion neither stops the platform's
    fast path nor queues anything."""
    tenant = _cr("team-a", "kubeflow", "2026-01-01T00:00:00Z")
    platform = _cr("kfocp-system", "kubeflow", "2026-02-01T00:00:00Z")
    disabled = []

    class FastPath:
        def disable(self, name):
            disabled.append(name)

    ctl = _controller("kfocp-system", [platform])
    ctl.fastpath = FastPath()
    ctl._event("DELETED", tenant, None)  # pylint: disable=protected-access
    assert disabled == [] and ctl.queue.depth() == 0


def test_a_refused_kubeflow_is_told_where_the_platforms_is():
    out = status.outside("kfocp-system", "team-a", 3)
    conds = dict((c["type"], c) for c in out["conditions"])
    assert conds["Ready"]["status"] == "False" and conds["Ready"]["reason"] == "Refused"
    assert conds["Degraded"]["status"] == "True" and conds["Degraded"]["reason"] == "OutsideOperatorNamespace"
    assert "kfocp-system" in conds["Degraded"]["message"] and "team-a" in conds["Degraded"]["message"]
    assert "nothing was changed" in conds["Degraded"]["message"]
    assert out["observedGeneration"] == 3
