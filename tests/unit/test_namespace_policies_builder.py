"""Table tests of the namespace policies builder."""
import json
from pathlib import Path

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies as np
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import OWNERSHIP, SHARED, DefinitionError

ROOT = Path(__file__).resolve().parents[2]
PROFILE_LABELS = {"app.kubernetes.io/part-of": "kubeflow-profile", "istio-injection": "enabled"}


def ns(name, labels=None, owner="alice@example.com", phase="Active"):
    return {"metadata": {"name": name, "labels": labels or {}, "annotations": {"owner": owner}}, "status": {"phase": phase}}


def index(objs):
    return {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in objs}


def test_role_defaults_are_plain_yaml_and_match_the_builder():
    defaults = yaml.safe_load((ROOT / "roles/namespace_policies/defaults/main.yml").read_text())
    assert "{{" not in json.dumps(defaults)
    for key, value in np.DEFAULTS.items():
        assert defaults[key] == value, key


def test_profile_namespace_gets_every_default_policy():
    objs = index(np.objects_for_namespace(ns("team-a", PROFILE_LABELS), {}))
    patch = objs[("Namespace", None, "team-a")]
    assert patch["metadata"]["annotations"][OWNERSHIP] == SHARED
    assert json.loads(patch["metadata"]["annotations"][np.DEFAULT_TOLERATIONS]) == [
        {"key": "workload", "operator": "Equal", "value": "ai-ml", "effect": "NoSchedule"}]
    assert patch["metadata"]["labels"] == dict(  # the default flavour, ossm2, and the baseline Pod Security level
        {"kfocp.io/mesh": "kubeflow", "security.openshift.io/scc.podSecurityLabelSync": "false"},
        **dict(("pod-security.kubernetes.io/" + key, value) for mode in ("enforce", "warn", "audit")
               for key, value in ((mode, "baseline"), (mode + "-version", "v1.36"))))
    member = objs[("ServiceMeshMember", "team-a", "default")]
    assert member["spec"]["controlPlaneRef"] == {"name": "kubeflow", "namespace": "kubeflow-mesh"}
    limits = objs[("LimitRange", "team-a", np.LIMITRANGE)]["spec"]["limits"][0]
    assert limits["type"] == "Container" and limits["default"]["memory"] == "2Gi"
    assert sorted(key[0] for key in objs) == ["LimitRange", "Namespace", "ServiceMeshMember"]


def test_profile_namespace_pod_security_level_and_bad_input():
    objs = index(np.objects_for_namespace(ns("team-a", PROFILE_LABELS), {"namespace_policies_pod_security": "restricted"}))
    labels = objs[("Namespace", None, "team-a")]["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == labels["pod-security.kubernetes.io/warn"] == "restricted"
    objs = index(np.objects_for_namespace(ns("team-a", PROFILE_LABELS), {"namespace_policies_pod_security": "none"}))
    assert not [k for k in objs[("Namespace", None, "team-a")]["metadata"]["labels"] if k.startswith("pod-security")]
    with pytest.raises(DefinitionError, match="namespace_policies_pod_security: 'strict' is not one of restricted"):
        np.objects_for_namespace(ns("team-a", PROFILE_LABELS), {"namespace_policies_pod_security": "strict"})


@pytest.mark.parametrize("settings, present, absent", [
    ({"namespace_policies_serverless": True}, [("NetworkPolicy", np.NETWORKPOLICY), ("AuthorizationPolicy", "kfocp-knative-kserve-predictor")], []),
    ({"namespace_policies_serverless": False}, [], ["NetworkPolicy", "AuthorizationPolicy"]),
    ({"namespace_policies_scc": "nonroot"}, [("RoleBinding", "kfocp-scc-nonroot-default-editor")], []),
    ({"namespace_policies_mesh_mode": "none"}, [], ["ServiceMeshMember"]),
    ({"namespace_policies_limitrange": {}}, [], ["LimitRange"]),
    ({"namespace_policies_tolerations_mode": "gatekeeper", "namespace_policies_mesh_mode": "member",
      "namespace_policies_pod_security": "none"}, [], ["Namespace"]),
    ({"namespace_policies_tolerations_mode": "gatekeeper", "namespace_policies_mesh_mode": "member"},
     [("Namespace", "team-a")], []),
    ({"namespace_policies_data_lake": True, "namespace_policies_data_lake_role_template": "arn:aws:iam::1:role/kf-{namespace}"},
     [("ServiceAccount", "default-editor")], []),
    ({"namespace_policies_data_lake": False, "namespace_policies_data_lake_role_template": "arn:aws:iam::1:role/kf-{namespace}"},
     [], ["ServiceAccount"]),
])
def test_options_switch_policies_on_and_off(settings, present, absent):
    objs = np.objects_for_namespace(ns("team-a", PROFILE_LABELS), settings)
    kinds = set((o["kind"], o["metadata"]["name"]) for o in objs)
    for item in present:
        assert item in kinds
    assert not [o for o in objs if o["kind"] in absent]


def test_serverless_policies_are_scoped_to_their_sources():
    objs = index(np.objects_for_namespace(ns("t", PROFILE_LABELS), {"namespace_policies_serverless": True}))
    netpol = objs[("NetworkPolicy", "t", np.NETWORKPOLICY)]["spec"]
    assert netpol["ingress"] == [{"from": [{"namespaceSelector": {"matchLabels": {np.KNATIVE_SYSTEM_LABEL: "true"}}}]}]
    policy = objs[("AuthorizationPolicy", "t", "kfocp-knative-kserve-predictor")]["spec"]
    assert policy["selector"] == {"matchLabels": {"component": "predictor"}}
    assert policy["rules"] == [{"from": [{"source": {"principals": np.DEFAULTS["namespace_policies_serverless_principals"]}}]}]
    assert {} not in policy["rules"]


def test_data_lake_annotates_only_the_profile_service_account_with_its_own_role():
    settings = {"namespace_policies_data_lake": True, "namespace_policies_data_lake_role_template": "arn:aws:iam::1:role/kf-{namespace}",
                "namespace_policies_data_lake_roles": {"b": "arn:aws:iam::1:role/special"}}
    namespaces = [ns("a", PROFILE_LABELS), ns("b", PROFILE_LABELS), ns("c", PROFILE_LABELS)]
    accounts = [{"metadata": {"namespace": "a", "name": "default-editor"}}, {"metadata": {"namespace": "b", "name": "default-editor"}}]
    objs = [o for o in np.objects(namespaces, settings, serviceaccounts=accounts) if o["kind"] == "ServiceAccount"]
    assert [(o["metadata"]["namespace"], o["metadata"]["annotations"]["eks.amazonaws.com/role-arn"]) for o in objs] == [
        ("a", "arn:aws:iam::1:role/kf-a"), ("b", "arn:aws:iam::1:role/special")]  # c: its account does not exist yet
    assert all(o["metadata"]["name"] == "default-editor" and o["metadata"]["annotations"][OWNERSHIP] == SHARED for o in objs)


def test_other_namespaces_get_a_whitelist_that_is_not_empty_except_the_exclusions():
    everything = [ns("team-a", PROFILE_LABELS), ns("web"), ns("default"), ns("kube-system"), ns("openshift-monitoring"),
                  ns("nvidia-gpu-operator"), ns("gone", phase="Terminating")]
    objs = np.objects([everything[0]], {}, all_namespaces=everything)
    whitelisted = [o["metadata"]["name"] for o in objs if np.WHITELIST in o["metadata"].get("annotations", {})]
    assert whitelisted == ["web"]
    value = json.loads(index(objs)[("Namespace", None, "web")]["metadata"]["annotations"][np.WHITELIST])
    assert value and not [t for t in value if t.get("key") == "workload"]


def test_the_mesh_cni_namespace_gets_no_whitelist_its_node_agents_could_not_pass():
    # Sail's cni chart: istio-cni-node tolerates {effect: NoSchedule, operator: Exists} and
    # {effect: NoExecute, operator: Exists}; the PodTolerationRestriction plugin admits a pod only
    # when the whitelist holds each of its tolerations, which no whitelist of keys does
    everything = [ns("team-a", PROFILE_LABELS), ns("istio-cni"), ns("mesh-cni"), ns("web")]
    cases = (("ossm3", {}, ["mesh-cni", "web"]), ("ossm3", {"cni_namespace": "mesh-cni"}, ["istio-cni", "web"]),
             ("ossm2", {}, ["istio-cni", "mesh-cni", "web"]))
    for flavour, cni, expected in cases:
        settings = {"namespace_policies_service_mesh": {"flavour": flavour, "ossm3": cni}}
        objs = np.objects([everything[0]], settings, all_namespaces=everything)
        assert sorted(o["metadata"]["name"] for o in objs if np.WHITELIST in o["metadata"].get("annotations", {})) \
            == expected, (flavour, cni)
    gatekeeper = np.objects([everything[0]], {"namespace_policies_tolerations_mode": "gatekeeper",
                                              "namespace_policies_service_mesh": {"flavour": "ossm3"}})
    whitelist = index(gatekeeper)[("AssignMetadata", None, "kfocp-gpu-tolerations-whitelist")]["spec"]
    assert "istio-cni" in whitelist["match"]["excludedNamespaces"]


def test_namespaces_kfocp_created_get_no_whitelist_patch():
    platform = ns("kubeflow", {"app.kubernetes.io/managed-by": "kfocp", "kfocp.io/instance": "x"})
    objs = np.objects([], {}, all_namespaces=[platform, ns("web")])
    assert [o["metadata"]["name"] for o in objs] == ["web"]


def test_non_profile_namespaces_in_the_input_get_no_policies():
    objs = np.objects([ns("web"), ns("team-a", PROFILE_LABELS)], {})
    assert set(o["metadata"].get("namespace") or o["metadata"]["name"] for o in objs) == {"team-a"}


def test_gatekeeper_mode_emits_assignmetadata_instead_of_annotations():
    objs = np.objects([ns("team-a", PROFILE_LABELS)], {"namespace_policies_tolerations_mode": "gatekeeper",
                                                       "namespace_policies_mesh_mode": "member",
                                                       "namespace_policies_pod_security": "none"},
                      all_namespaces=[ns("web")])
    mutations = index(o for o in objs if o["kind"] == "AssignMetadata")
    assert sorted(key[2] for key in mutations) == ["kfocp-gpu-tolerations-whitelist", "kfocp-profile-gpu-tolerations"]
    assert not [o for o in objs if o["kind"] == "Namespace"]
    whitelist = mutations[("AssignMetadata", None, "kfocp-gpu-tolerations-whitelist")]["spec"]
    assert "nvidia-gpu-operator" in whitelist["match"]["excludedNamespaces"]
    assert whitelist["location"] == 'metadata.annotations."%s"' % np.WHITELIST


def test_memberroll_keeps_the_owners_members_and_drops_only_its_own():
    live = {"metadata": {"name": "default", "namespace": "istio-system", "annotations": {np.MEMBERS_ANNOTATION: "old,team-a"}},
            "spec": {"members": ["kubeflow", "old", "team-a"]}}
    objs = np.objects([ns("team-a", PROFILE_LABELS), ns("team-b", PROFILE_LABELS)], {"namespace_policies_mesh_mode": "memberroll"},
                      memberroll=live)
    roll = index(objs)[("ServiceMeshMemberRoll", "istio-system", "default")]
    assert roll["spec"]["members"] == ["kubeflow", "team-a", "team-b"]
    assert roll["metadata"]["annotations"][OWNERSHIP] == SHARED
    assert roll["metadata"]["annotations"][np.MEMBERS_ANNOTATION] == "team-a,team-b"
    assert not [o for o in objs if o["kind"] == "ServiceMeshMember"]


@pytest.mark.parametrize("settings, message", [
    ({"namespace_policies_mesh_mode": "sidecar"}, r"namespace_policies_mesh_mode: 'sidecar' is not one of"),
    ({"namespace_policies_gpu_tolerations": [{"key": "a", "operator": "Maybe"}]}, r"namespace_policies_gpu_tolerations\[0\]\.operator"),
    ({"namespace_policies_limitrange": {"default": {"cpu": "one"}}}, r"namespace_policies_limitrange\.default\.cpu: 'one' is not a valid quantity"),
    ({"namespace_policies_scc": "root"}, r"namespace_policies_scc: 'root' is not a known SCC"),
    ({"namespace_policies_serverless": True, "namespace_policies_serverless_principals": []}, r"namespace_policies_serverless_principals: must list"),
    ({"namespace_policies_data_lake": True}, r"namespace_policies_data_lake_role_template: is empty"),
    ({"namespace_policies_data_lake": True, "namespace_policies_data_lake_role_template": "arn:{profile}"}, r"unknown placeholder \{profile\}"),
    ({"namespace_policies_selector": "part-of"}, r"namespace_policies_selector: 'part-of' is not key=value"),
    # selectors the API server would not parse, or that would select nothing (issue: every profile's
    # policies were pruned): refused before anything is read
    ({"namespace_policies_selector": {"a": "b c"}}, r"namespace_policies_selector\.a: 'b c' is not a valid label value"),
    ({"namespace_policies_selector": {"": ""}}, r"namespace_policies_selector key '': '' is not a valid label or"),
    ({"namespace_policies_selector": {"a": "b,c=d"}}, r"namespace_policies_selector\.a: 'b,c=d' is not a valid label"),
    ({"namespace_policies_selector": {"a": {"b": "c"}}}, r"namespace_policies_selector\.a: \{'b': 'c'\} is not a valid"),
    ({"namespace_policies_selector": {"a": ["b"]}}, r"namespace_policies_selector\.a: \['b'\] is not a valid"),
    ({"namespace_policies_selector": {"a" * 64: "b"}}, r"namespace_policies_selector key 'a{64}'"),
    ({"namespace_policies_selector": {"Bad_Prefix/a": "b"}}, r"namespace_policies_selector key 'Bad_Prefix/a'"),
    ({"namespace_policies_selector": {"a": "x" * 64}}, r"namespace_policies_selector\.a: 'x{64}' is not a valid"),
    ({"namespace_policies_selector": "a=b,a=c"}, r"namespace_policies_selector: 'a' is given twice"),
    ({"namespace_policies_selector": "a!=b"}, r"namespace_policies_selector: 'a!=b' is not key=value"),
    ({"namespace_policies_selector": {}}, r"namespace_policies_selector: must be a non-empty mapping"),
    # quantities and LimitRange order, as the API server checks them
    ({"namespace_policies_limitrange": {"default": {"cpu": " 1"}}}, r"namespace_policies_limitrange\.default\.cpu: ' 1'"),
    ({"namespace_policies_limitrange": {"default": {"cpu": "1 "}}}, r"namespace_policies_limitrange\.default\.cpu: '1 '"),
    ({"namespace_policies_limitrange": {"min": {"cpu": "2"}, "max": {"cpu": "1"}}},
     r"namespace_policies_limitrange\.min\.cpu: 2 is larger than max\.cpu \(1\)"),
    ({"namespace_policies_limitrange": {"default": {"memory": "4Gi"}, "max": {"memory": "2Gi"}}},
     r"namespace_policies_limitrange\.default\.memory: 4Gi is larger than max\.memory"),
    ({"namespace_policies_limitrange": {"default": {"cpu": "100m"}, "defaultRequest": {"cpu": "1"}}},
     r"namespace_policies_limitrange\.defaultRequest\.cpu: 1 is larger than default\.cpu"),
    # the API server's other LimitRange rules (k8s.io/kubernetes v1.36.4 pkg/apis/core/validation
    # ValidateLimitRange; tests/integration/test_api_server_rules.py holds them to the API server)
    ({"namespace_policies_limitrange": {"maxLimitRequestRatio": {"cpu": "500m"}}},
     r"namespace_policies_limitrange\.maxLimitRequestRatio\.cpu: 500m is less than 1"),
    ({"namespace_policies_limitrange": {"min": {"cpu": "1"}, "max": {"cpu": "2"}, "maxLimitRequestRatio": {"cpu": "3"}}},
     r"namespace_policies_limitrange\.maxLimitRequestRatio\.cpu: 3 is larger than max/min \(2/1\)"),
    ({"namespace_policies_limitrange": {"default": {"nvidia.com/gpu": "1"}, "defaultRequest": {"nvidia.com/gpu": "0"}}},
     r"namespace_policies_limitrange\.defaultRequest\.nvidia\.com/gpu: 0 differs from default\.nvidia\.com/gpu \(1\)"),
    ({"namespace_policies_limitrange": {"default": {"hugepages-2Mi": "4Mi"}, "defaultRequest": {"hugepages-2Mi": "2Mi"}}},
     r"namespace_policies_limitrange\.defaultRequest\.hugepages-2Mi: 2Mi differs"),
    ({"namespace_policies_data_lake": True, "namespace_policies_data_lake_role_template": "arn:{namespace}",
      "namespace_policies_data_lake_annotation": "not a key!"}, r"namespace_policies_data_lake_annotation: 'not a key!'"),
    ({"namespace_policies_serverless": True, "namespace_policies_serverless_workloads": [
        {"name": "p", "match_labels": {"component": "a b"}}]},
     r"namespace_policies_serverless_workloads\[0\]\.match_labels\.component: 'a b'"),
    ({"namespace_policies_mesh_mode": "memberroll"}, r"no ServiceMeshMemberRoll default in istio-system"),
    ({"namespace_policies_gpu_operator_namespace": "GPU_Ops"}, r"namespace_policies_gpu_operator_namespace: 'GPU_Ops'"),
    ({"namespace_policies_mesh_mode": "none", "namespace_policies_mesh_namespace": "Mesh_NS"},
     r"namespace_policies_mesh_namespace: 'Mesh_NS'"),
])
def test_bad_settings_name_the_variable(settings, message):
    with pytest.raises(DefinitionError, match=message):
        np.objects([ns("team-a", PROFILE_LABELS)], settings)


SAIL_REVISION = {"flavour": "ossm3", "ossm3": {"update_strategy": "RevisionBased", "version": "v1.26.3"}}


@pytest.mark.parametrize("service_mesh, labels, members", [
    ({}, {"kfocp.io/mesh": "kubeflow"}, [("kubeflow", "kubeflow-mesh")]),
    ({"flavour": "ossm2", "namespace": "ai-mesh", "ossm2": {"name": "ai"}}, {"kfocp.io/mesh": "kubeflow"},
     [("ai", "ai-mesh")]),
    ({"flavour": "ossm3"}, {"kfocp.io/mesh": "kubeflow", "istio-injection": "enabled"}, []),
    (SAIL_REVISION, {"kfocp.io/mesh": "kubeflow", "istio.io/rev": "default-v1-26-3"}, []),
    ({"flavour": "ossm3", "namespace": "kubeflow-mesh3", "keep_ossm2": True, "ossm2": {"namespace": "kubeflow-mesh"}},
     {"kfocp.io/mesh": "kubeflow", "istio-injection": "enabled"}, [("kubeflow", "kubeflow-mesh")]),
    ({"flavour": "external", "external": {"namespace": "istio-system", "gateway": "gw", "member_label": {"mesh": "corp"}}},
     {"mesh": "corp", "istio-injection": "enabled"}, []),
])
def test_mesh_mode_joins_the_way_the_service_mesh_flavour_wants(service_mesh, labels, members):
    objs = np.objects_for_namespace(ns("team-a", PROFILE_LABELS), {"namespace_policies_service_mesh": service_mesh})
    patch = index(objs)[("Namespace", None, "team-a")]
    assert dict((k, v) for k, v in patch["metadata"]["labels"].items()
                if not k.startswith(("pod-security.kubernetes.io/", "security.openshift.io/"))) == labels
    assert np.DEFAULT_TOLERATIONS in patch["metadata"]["annotations"]  # one patch carries both
    refs = [(o["spec"]["controlPlaneRef"]["name"], o["spec"]["controlPlaneRef"]["namespace"])
            for o in objs if o["kind"] == "ServiceMeshMember"]
    assert refs == members


def test_mesh_mode_names_the_service_mesh_variable_that_is_wrong():
    with pytest.raises(DefinitionError, match=r"service_mesh_flavour: 'istio' is not a mesh flavour"):
        np.objects_for_namespace(ns("team-a", PROFILE_LABELS), {"namespace_policies_service_mesh": {"flavour": "istio"}})


def test_the_role_passes_exactly_the_membership_settings():
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh
    role_vars = yaml.safe_load((ROOT / "roles/namespace_policies/vars/main.yml").read_text())
    passed = dict((k, v) for k, v in role_vars["__namespace_policies_settings"].items() if k.startswith("service_mesh_"))
    assert tuple(passed) == tuple("service_mesh_" + key for key in mesh.MEMBERSHIP_KEYS)
    assert all(value == "{{ %s | default(none) }}" % key for key, value in passed.items())


@pytest.mark.parametrize("text, parsed", [
    ("app.kubernetes.io/part-of=kubeflow-profile", {"app.kubernetes.io/part-of": "kubeflow-profile"}),
    ("a==b, c=d", {"a": "b", "c": "d"}),
    ({"a": ""}, {"a": ""}),
])
def test_good_selectors_are_kept(text, parsed):
    assert np.selector(text) == parsed


def managed(manager, *keys):
    return {"manager": manager, "operation": "Update",
            "fieldsV1": {"f:metadata": {"f:labels": dict(("f:" + k, {}) for k in keys)}}}


def test_pod_security_labels_another_manager_set_to_another_level_are_left_as_they_are():
    enforce = "pod-security.kubernetes.io/enforce"
    theirs = ns("team-a", dict(PROFILE_LABELS, **{enforce: "restricted"}))
    theirs["metadata"]["managedFields"] = [managed("manager", enforce, "app.kubernetes.io/part-of")]
    labels = index(np.objects_for_namespace(theirs, {}))[("Namespace", None, "team-a")]["metadata"]["labels"]
    assert not [k for k in labels if k.startswith("pod-security") or k.startswith("security.openshift.io")]
    assert np.pod_security_left_alone([theirs, ns("web")], {}) == [
        "team-a: pod-security.kubernetes.io/enforce=restricted (set by manager)"]
    # the same value, or kfocp's own earlier level: applied (co-owned, or kfocp's to change)
    same = ns("team-b", dict(PROFILE_LABELS, **{enforce: "baseline"}))
    same["metadata"]["managedFields"] = [managed("manager", enforce)]
    ours = ns("team-c", dict(PROFILE_LABELS, **{enforce: "privileged"}))
    ours["metadata"]["managedFields"] = [managed("kfocp-namespace-policies", enforce)]
    for namespace in (same, ours):
        name = namespace["metadata"]["name"]
        patch = index(np.objects_for_namespace(namespace, {}))[("Namespace", None, name)]
        assert patch["metadata"]["labels"][enforce] == "baseline"
    assert np.pod_security_left_alone([same, ours], {}) == []
    assert np.pod_security_left_alone([theirs], {"namespace_policies_pod_security": "none"}) == []
