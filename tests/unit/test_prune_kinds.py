"""Prune looks for a set's objects no longer desired only in the kinds the set declares.

The tenancy builds declare theirs in module_utils/tenancy.KINDS. A kind a builder makes and KINDS
leaves out would be applied, but never pruned once its objects are no longer desired: each builder
is run here over every choice of the settings that decide which kinds it makes, and every kind it
gives must be declared for its build. Every declared kind is made by some choice, so the list does
not grow stale either. The engine holds every run to the list as well: an object of another kind
fails the run before any change.

The roles that apply with kfocp.kubeflow.apply give their sets' kinds as `prune_kinds`, Kind.group
strings in their vars: each pruning task must, and each list must read as kinds. That a list holds
every kind its role makes is held by the engine's check in every integration and molecule run of
the role."""
import itertools

import pytest
import yaml

from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies as np
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import profiles
from ansible_collections.kfocp.kubeflow.plugins.module_utils.engine import Item, check_kinds_declared
from ansible_collections.kfocp.kubeflow.plugins.module_utils.tenancy import BUILDS, KINDS
from helpers import ROOT

PROFILE_LABELS = {"app.kubernetes.io/part-of": "kubeflow-profile", "istio-injection": "enabled"}
NAMESPACES = [{"apiVersion": "v1", "kind": "Namespace", "status": {"phase": "Active"},
               "metadata": {"name": "team-a", "labels": PROFILE_LABELS, "annotations": {"owner": "alice"}}},
              {"apiVersion": "v1", "kind": "Namespace", "status": {"phase": "Active"},
               "metadata": {"name": "other", "labels": {}}}]
ACCOUNTS = [{"metadata": {"name": "default-editor", "namespace": "team-a"}}]
ROLL = {"apiVersion": "maistra.io/v1", "kind": "ServiceMeshMemberRoll",
        "metadata": {"name": "default", "namespace": "istio-system", "annotations": {}},
        "spec": {"members": ["kubeflow"]}}


def role_spec(role):
    path = ROOT / "roles" / role / "meta" / "argument_specs.yml"
    return yaml.safe_load(path.read_text())["argument_specs"]["main"]["options"]


def choices(role, skip=()):
    """Every value of each of the role's options with choices, and both of each boolean."""
    out = {}
    for name, option in role_spec(role).items():
        if name in skip:
            continue
        if option.get("choices"):
            out[name] = list(option["choices"])
        elif option.get("type") == "bool":
            out[name] = [True, False]
    return out


def combinations(options):
    names = sorted(options)
    for values in itertools.product(*(options[name] for name in names)):
        yield dict(zip(names, values))


def kinds_of(objs):
    return set((o.group_version(obj["apiVersion"])[0], obj["kind"]) for obj in objs)


def test_every_build_declares_its_kinds():
    assert set(KINDS) == set(BUILDS)


def test_the_namespace_policies_builder_makes_only_declared_kinds_and_each_of_them():
    defaults = yaml.safe_load((ROOT / "roles" / "namespace_policies" / "defaults" / "main.yml").read_text())
    options = choices("namespace_policies", skip=("namespace_policies_state",))
    options["namespace_policies_scc"] = ["", "nonroot", "anyuid"]
    made = set()
    for chosen in combinations(options):
        settings = dict(defaults, namespace_policies_data_lake_role_template="arn:aws:iam::1:role/kf-{namespace}",
                        **chosen)
        found = kinds_of(np.objects(NAMESPACES, settings, NAMESPACES, ACCOUNTS, ROLL))
        assert found <= set(KINDS["namespace_policies"]), (chosen, found - set(KINDS["namespace_policies"]))
        made |= found
    assert made == set(KINDS["namespace_policies"])


@pytest.mark.parametrize("auto", [True, False])
def test_the_profiles_builds_make_only_their_declared_kinds(auto):
    settings = {"kfocp_instance": "kfocp", "profiles_auto_from_users": auto,
                "profiles_list": [{"name": "team-a", "owner": {"group": "team-a"}, "quota": {"cpu": "4"},
                                   "contributors": [{"user": "carol", "role": "view"},
                                                    {"group": "team-b", "role": "edit"}]}],
                "profiles_authz_principals": ["cluster.local/ns/kubeflow/sa/kfam"]}
    users = [{"metadata": {"name": "alice"}, "identities": ["htpasswd:alice"]}]
    groups = [{"metadata": {"name": "team-a"}, "users": ["alice"]}]
    namespaces = NAMESPACES + [dict(NAMESPACES[0], metadata=dict(NAMESPACES[0]["metadata"], name="alice"))]
    objs = profiles.objects(settings, users, groups, [], namespaces)
    # build_profiles applies the Profiles, build_profiles_access the rest (module_utils/tenancy.py)
    assert kinds_of([obj for obj in objs if obj["kind"] == "Profile"]) == set(KINDS["profiles"])
    assert kinds_of([obj for obj in objs if obj["kind"] != "Profile"]) == set(KINDS["profiles_access"])


def items(*objs, set_name="namespace-policies"):
    return [Item(i, obj, o.OWNED, set_name) for i, obj in enumerate(objs)]


def test_an_object_of_a_kind_its_set_does_not_declare_fails_naming_the_kind():
    limits = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "a", "namespace": "team-a"}}
    quota = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "team-a"}}
    check_kinds_declared(items(limits), KINDS["namespace_policies"], "namespace-policies")
    with pytest.raises(o.DefinitionError, match=r"set namespace-policies holds objects of ResourceQuota, .*LimitRange"):
        check_kinds_declared(items(limits, quota), KINDS["namespace_policies"], "namespace-policies")
    # an object that goes to another set (kfocp.io/set on it) is that set's to prune
    check_kinds_declared(items(quota, set_name="namespaces"), KINDS["namespace_policies"], "namespace-policies")


def test_kinds_are_read_as_kind_dot_group_and_anything_else_is_refused_naming_the_option():
    assert o.group_kinds(["RoleBinding.rbac.authorization.k8s.io", "Namespace", "Route.route.openshift.io"]) == [
        ("rbac.authorization.k8s.io", "RoleBinding"), ("", "Namespace"), ("route.openshift.io", "Route")]
    for wrong in ("rolebinding.rbac.authorization.k8s.io", "Namespace.", "v1/Namespace", ""):
        with pytest.raises(o.DefinitionError, match="prune_kinds: .* is not a kind as Kind.group"):
            o.group_kinds([wrong])


def apply_tasks():
    """Every kfocp.kubeflow.apply task of the roles, with its file."""
    for path in sorted((ROOT / "roles").glob("*/tasks/*.yml")):
        for task in yaml.safe_load(path.read_text()) or []:
            for inner in [task] + list(task.get("block") or []):
                if "kfocp.kubeflow.apply" in inner:
                    yield path, inner["kfocp.kubeflow.apply"]


def test_every_role_task_that_prunes_names_its_sets_kinds_and_each_list_reads():
    pruning = [(path, args) for path, args in apply_tasks() if args.get("prune") is True]
    assert len(pruning) >= 9, pruning
    for path, args in pruning:
        assert "prune_kinds" in args, "%s: the apply of set %s prunes without prune_kinds" % (path, args.get("set"))
        var = args["prune_kinds"].strip("{} ")
        role_vars = yaml.safe_load((path.parents[1] / "vars" / "main.yml").read_text())
        assert o.group_kinds(role_vars[var]), (path, var)
