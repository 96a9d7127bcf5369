"""The Pod Security Standards levels, checked on one table of pod specs (tests/pod_security_table.py)
that the integration tests also send through the real PodSecurity admission."""
import pytest

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import pod_security as ps
from pod_security_table import ROWS, container, pod

CHECK_IDS = set(check for check, _level, _func in ps.CHECKS)


@pytest.mark.parametrize("name, template, level, checks", ROWS, ids=[row[0] for row in ROWS])
def test_least_level_and_the_checks_that_forced_it(name, template, level, checks):
    found, reasons = ps.least_level(template["spec"], template["metadata"])
    assert found == level
    assert sorted(set(r[0] for r in reasons)) == sorted(checks)
    # each reason names a field of the pod
    assert all(r[2].startswith(("spec.", "metadata.")) for r in reasons)


def test_the_table_covers_every_check_of_the_policy():
    covered = set()
    for _name, template, _level, _checks in ROWS:
        covered |= set(v[0] for v in ps.violations(template["spec"], template["metadata"]))
    assert covered == CHECK_IDS


def test_every_level_is_in_the_table_and_every_check_has_a_row_at_its_own_level():
    assert set(row[2] for row in ROWS) == set(ps.LEVELS)
    forcing = dict((check, level) for check, level, _func in ps.CHECKS)
    for check, level in forcing.items():
        assert any(check in checks and row_level == ps.LEVELS[ps.LEVELS.index(level) + 1]
                   for _name, _t, row_level, checks in ROWS), check


def test_the_reason_names_the_container_and_field():
    spec = pod(container(), container("sidecar", privileged=True))["spec"]
    level, reasons = ps.least_level(spec)
    assert level == ps.PRIVILEGED
    assert reasons == [("privileged", ps.BASELINE, "spec.containers[sidecar].securityContext.privileged", "true")]


def test_a_pod_level_setting_is_overridden_by_a_container_level_one():
    spec = pod(container(runAsNonRoot=False, seccompProfile=None),
               securityContext={"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}})["spec"]
    assert ps.least_level(spec)[0] == ps.BASELINE
    assert [r[2] for r in ps.least_level(spec)[1]] == ["spec.containers[app].securityContext.runAsNonRoot"]


def test_baseline_reasons_leave_out_the_restricted_ones():
    spec = pod({"name": "app", "image": "x", "securityContext": {"privileged": True}})["spec"]
    level, reasons = ps.least_level(spec)
    assert level == ps.PRIVILEGED and set(r[1] for r in reasons) == {ps.BASELINE}


def test_the_order_of_levels():
    assert ps.more_permissive(ps.RESTRICTED, ps.BASELINE) == ps.BASELINE
    assert ps.more_permissive(ps.PRIVILEGED, ps.BASELINE) == ps.PRIVILEGED
    assert ps.stricter(ps.PRIVILEGED) == ps.BASELINE and ps.stricter(ps.BASELINE) == ps.RESTRICTED
    assert ps.stricter(ps.RESTRICTED) is None


def test_an_empty_pod_is_restricted():
    assert ps.least_level({}) == (ps.RESTRICTED, [])


def namespace(name, level=None, warn=None, audit=None):
    labels = {}
    for mode, value in (("enforce", level), ("warn", warn or level), ("audit", audit or level)):
        if value:
            labels["pod-security.kubernetes.io/" + mode] = value
    return {"metadata": {"name": name, "labels": labels}}


def live(name, ns, template):
    return {"metadata": dict(template["metadata"], name=name, namespace=ns), "spec": template["spec"]}


def test_pod_level_of_a_live_pod():
    assert ps.pod_level(live("a", "kf", pod(container(privileged=True)))) == {
        "level": "privileged", "reasons": ["spec.containers[app].securityContext.privileged: true"]}
    assert ps.pod_level(live("a", "kf", pod())) == {"level": "restricted", "reasons": []}


def test_verify_rows_pass_only_when_the_labels_are_one_level_that_admits_every_pod():
    pods = [live("ok", "kf", pod()), live("bare", "kf", pod({"name": "app", "image": "x"})),
            live("root", "other", pod(container(privileged=True)))]
    rows = ps.verify_rows(["kf", "other", "split", "missing"],
                          [namespace("kf", "baseline"), namespace("other", "baseline"),
                           namespace("split", "baseline", warn="restricted")], pods)
    assert [(r["target"], r["pass"]) for r in rows] == [("kf", True), ("other", False), ("split", False),
                                                        ("missing", False)]
    assert rows[1]["detail"] == "enforce/warn/audit baseline; root needs privileged"
    assert "not one level" in rows[2]["detail"] and rows[3]["detail"] == "no such namespace"
    assert ps.verify_rows(["kf"], [namespace("kf", "restricted")], pods)[0]["detail"] == (
        "enforce/warn/audit restricted; bare needs baseline")
    assert not ps.verify_rows(["kf"], [namespace("kf")], pods)[0]["pass"]  # no labels at all


def test_seccomp_annotations_count_where_scc_admission_turns_them_into_fields():
    """Kubernetes ignores them (the table's rows go through its admission); OpenShift's SCC
    admission makes them the seccomp profile, so the workloads' level counts the unconfined ones."""
    unconfined = pod(annotations={"container.seccomp.security.alpha.kubernetes.io/app": "unconfined"})
    assert ps.least_level(unconfined["spec"], unconfined["metadata"]) == (ps.RESTRICTED, [])
    level, reasons = ps.least_level(unconfined["spec"], unconfined["metadata"], openshift=True)
    assert level == ps.PRIVILEGED
    assert reasons[0][2] == "metadata.annotations[container.seccomp.security.alpha.kubernetes.io/app]"
    for value in ("runtime/default", "docker/default", "localhost/kf.json"):
        fine = pod(annotations={"seccomp.security.alpha.kubernetes.io/pod": value})
        assert ps.least_level(fine["spec"], fine["metadata"], openshift=True) == (ps.RESTRICTED, [])
