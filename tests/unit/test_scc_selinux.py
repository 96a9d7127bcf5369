"""SELinux options under SCC admission, as openshift/apiserver-library-go decides them: the SCC
derivation (manifests.derive_scc) and the admission stand-in (standins.scc_admit) on pods built for
each rule, on the SCCs OpenShift ships (hack/seed, upstream's files).

The rules (pkg/securitycontextconstraints, the same files from release-4.14 to release-4.21; the
reading with each branch's commit and blob is docs/readings/scc-selinux-and-mixed-pods.md):
- sccmatching/matcher.go: an SCC whose seLinuxContext is MustRunAs without a level
  (requiresPreAllocatedSELinuxLevel: every shipped SCC but privileged and hostmount-anyuid-v2) gets
  the namespace's annotation openshift.io/sa.scc.mcs as its level (getPreallocatedLevel), and keeps
  its own user, role and type (nested-container: type container_engine_t);
- sccmatching/provider.go: a pod or container that sets no SELinux options gets the SCC's
  (Create*SecurityContext); the options then checked are the pod's, and for a container its own or
  else the pod's (the effective context);
- selinux/mustrunas.go Validate: the level must equal the SCC's (equalLevels: the same string, or the
  same sensitivity and the same categories in any order), and role, type and user must each be the
  SCC's, empty where the SCC sets none; RunAsAny accepts any.
Registered in docs/contracts.md."""
import re
from pathlib import Path

import pytest
import yaml

import standins
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import manifests, scc_policies
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError

ROOT = Path(__file__).resolve().parents[2]
LEVEL = "s0:c26,c5"
RANGE = {"start": 1000660000, "size": 10000}
NAMESPACE = {"metadata": {"name": "kubeflow", "annotations": {
    "openshift.io/sa.scc.uid-range": "1000660000/10000", "openshift.io/sa.scc.supplemental-groups": "1000660000/10000",
    "openshift.io/sa.scc.mcs": LEVEL}}}
# Every shipped SCC but anyuid, which priority 10 puts first and which is MustRunAs like restricted-v2.
USABLE = ("restricted-v2", "nonroot-v2", "hostmount-anyuid", "hostnetwork-v2", "privileged")


def shipped(version=None):
    name = "sccs.yaml" if version is None else "sccs-%s.yaml" % version
    docs = [d for d in yaml.safe_load_all((ROOT / "hack" / "seed" / name).read_text()) if d]
    return [d for doc in docs for d in (doc.get("items") or [doc]) if d["kind"] == "SecurityContextConstraints"]


def pod(ctx=None, pod_ctx=None, **spec):
    container = {"name": "main", "image": "x"}
    if ctx is not None:
        container["securityContext"] = ctx
    spec = dict(spec, serviceAccountName="s", containers=[container], securityContext=dict(pod_ctx or {}))
    return {"metadata": {"name": "p", "namespace": "kubeflow", "annotations": {}}, "spec": spec}


def workload(obj):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "p", "namespace": "kubeflow"},
            "spec": {"template": {"metadata": {}, "spec": obj["spec"]}}}


def admit(obj, usable=USABLE, namespace=None, version=None):
    return standins.scc_admit(shipped(version), obj, lambda name: name in usable, NAMESPACE if namespace is None else namespace)


def grant(obj, level=LEVEL, version=None):
    grants = manifests.derive_scc([workload(obj)], RANGE, version, level)
    return grants[0]["scc"] if grants else "restricted-v2"


def options(**fields):
    return {"seLinuxOptions": fields}


# (pod, the SCC admission chooses among USABLE): the expected SCC follows from the rules above.
CASES = [
    # the namespace's level, on the pod or on the container: restricted-v2's own (no grant)
    ("pod-level", pod(pod_ctx=options(level=LEVEL)), "restricted-v2"),
    ("container-level", pod(ctx=options(level=LEVEL)), "restricted-v2"),
    # equalLevels: the same categories in another order are the same level
    ("categories-reordered", pod(pod_ctx=options(level="s0:c5,c26")), "restricted-v2"),
    # another level, or none (options set without a level, even empty), is refused by every MustRunAs SCC
    ("other-level", pod(pod_ctx=options(level="s0:c1,c2")), "privileged"),
    ("other-sensitivity", pod(pod_ctx=options(level="s1:c26,c5")), "privileged"),
    ("no-level", pod(ctx=options(type="container_t")), "privileged"),
    ("empty-options", pod(pod_ctx=options()), "privileged"),
    # the level, but a user, role or type the SCC does not set
    ("level-and-type", pod(ctx=options(level=LEVEL, type="spc_t")), "privileged"),
    ("level-and-user", pod(ctx=options(level=LEVEL, user="system_u")), "privileged"),
    ("level-and-role", pod(ctx=options(level=LEVEL, role="system_r")), "privileged"),
    # the container's own options are checked in place of the pod's
    ("container-overrides-pod", pod(pod_ctx=options(level="s0:c1,c2"), ctx=options(level=LEVEL)), "privileged"),
    ("pod-level-container-other", pod(pod_ctx=options(level=LEVEL), ctx=options(level="s0:c1,c2")), "privileged"),
    # the level, with what else forces an SCC: that SCC
    ("level-and-uid", pod(ctx=dict(options(level=LEVEL), runAsUser=1000)), "nonroot-v2"),
    ("level-and-host-network", pod(pod_ctx=options(level=LEVEL), hostNetwork=True), "hostnetwork-v2"),
]


@pytest.mark.parametrize("obj, chosen", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_admission_compares_selinux_options_with_the_sccs_and_the_namespaces_level(obj, chosen):
    assert admit(obj) == chosen


@pytest.mark.parametrize("obj, chosen", [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_derivation_grants_what_admission_needs_for_selinux_options(obj, chosen):
    """The grant is the SCC admission chooses (restricted-v2: none), and with it and restricted-v2
    admission admits the pod."""
    assert grant(obj) == chosen
    assert admit(obj, usable=("restricted-v2", chosen)) == chosen


def test_a_refusal_names_the_field_and_what_it_must_be():
    with pytest.raises(AssertionError, match=re.escape(
            "restricted-v2: spec.securityContext.seLinuxOptions.level 's0:c1,c2' is not %s, the namespace's "
            "SELinux level" % LEVEL)):
        admit(pod(pod_ctx=options(level="s0:c1,c2")), usable=("restricted-v2",))
    with pytest.raises(AssertionError, match=re.escape(
            "restricted-v2: spec.containers[0].securityContext.seLinuxOptions.type 'spc_t' is not '', the SCC's")):
        admit(pod(ctx=options(level=LEVEL, type="spc_t")), usable=("restricted-v2",))


def test_a_level_not_known_is_taken_to_differ():
    """Without the namespace's level (the annotation, components_scc_selinux_level), a level set is
    taken to differ, as a UID is taken to be outside a range not known; a pod that sets none needs
    nothing."""
    unannotated = {"metadata": {"name": "kubeflow", "annotations": dict(
        (key, value) for key, value in NAMESPACE["metadata"]["annotations"].items() if key != "openshift.io/sa.scc.mcs")}}
    obj = pod(pod_ctx=options(level=LEVEL))
    assert admit(obj, namespace=unannotated) == "privileged"
    assert grant(obj, level=None) == "privileged"
    reason = manifests.derive_scc([workload(obj)], RANGE)[0]["reason"]
    assert "components_scc_selinux_level is not set" in reason, reason
    assert grant(pod(), level=None) == "restricted-v2"


def test_a_bad_level_is_an_error_naming_the_variable_and_the_annotation():
    with pytest.raises(DefinitionError, match="components_scc_selinux_level.*openshift.io/sa.scc.mcs"):
        manifests.derive_scc([workload(pod())], RANGE, None, 5)


# selinux/mustrunas_test.go TestMustRunAsValidate (release-4.14 to release-4.21, the same file): the
# SCC's options, each case's pod options, and the one field refused ("" none).
VALID = {"user": "user", "role": "role", "level": "s0:c0,c6", "type": "type"}


@pytest.mark.parametrize("scc_options, pod_options, refused", [
    (VALID, dict(VALID, role="invalid"), "role"),
    (VALID, dict(VALID, user="invalid"), "user"),
    (dict(VALID, level="s0:c1,c2"), dict(VALID, level="s0"), "level"),
    (dict(VALID, level="s1:c6"), dict(VALID, level="s0:c6"), "level"),
    (dict(VALID, level="s0:c1,c7"), dict(VALID, level="s0:c0,c8"), "level"),
    (VALID, VALID, ""),
    (VALID, dict(VALID, level="s0:c6,c0"), ""),
], ids=["invalid role", "invalid user", "levels are not equal", "levels differ by sensitivity",
        "levels differ by categories", "valid", "valid with different order of categories"])
def test_must_run_as_validates_as_upstreams_own_cases(scc_options, pod_options, refused):
    scc = next(s for s in shipped() if s["metadata"]["name"] == "restricted-v2")
    scc = dict(scc, seLinuxContext={"type": "MustRunAs", "seLinuxOptions": scc_options})
    found = scc_policies.refusals(scc_policies.strategies(scc), pod(pod_ctx=options(**pod_options))["spec"], RANGE)
    assert [field for field, _why in found] == (["spec.securityContext.seLinuxOptions." + refused] if refused else [])


# nested-container (4.20) is MustRunAs with its own type, container_engine_t, and no level: the
# namespace's level is filled in, and the type must be its own.
NESTED = ("restricted-v2", "restricted-v3", "nested-container", "privileged")
ROOT_IN_USER_NAMESPACE = {"runAsUser": 0, "capabilities": {"add": ["SETUID"]}}


@pytest.mark.parametrize("fields, chosen", [
    ({}, "nested-container"),  # none set: the SCC's
    ({"type": "container_engine_t", "level": LEVEL}, "nested-container"),
    ({"type": "container_engine_t"}, "privileged"),  # no level: not the namespace's
    ({"level": LEVEL}, "privileged"),  # no type: not the SCC's
    ({"type": "spc_t", "level": LEVEL}, "privileged"),
])
def test_an_scc_with_a_type_of_its_own_takes_the_namespaces_level(fields, chosen):
    ctx = dict(ROOT_IN_USER_NAMESPACE, **(options(**fields) if fields else {}))
    obj = pod(ctx=ctx, hostUsers=False)
    assert admit(obj, usable=NESTED, version="4.20") == chosen
    assert grant(obj, version="4.20") == chosen


def test_the_model_records_each_sccs_own_selinux_options():
    """The SCCs' SELinux options are their seed files' (nested-container: type container_engine_t)."""
    found = dict((scc["metadata"]["name"], scc_policies.strategies(scc)["seLinuxOptions"]) for scc in shipped("4.20"))
    assert found["nested-container"] == {"type": "container_engine_t"}
    assert found["restricted-v2"] is None
    assert scc_policies.model("4.20").sccs["nested-container"]["seLinuxOptions"] == {"type": "container_engine_t"}
