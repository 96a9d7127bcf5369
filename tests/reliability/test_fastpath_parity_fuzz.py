"""The operator's fast path writes what a playbook run writes (tests/parity.py), for fuzzed specs:
one or two fields of the roles the fast path serves (and the variables they derive settings from),
valid by the CRD's schema (test_bad_input.from_schema). A spec the roles' checks refuse is counted,
not run: bad input is test_bad_input's.

Size: KFOCP_PARITY_EXAMPLES, small by default, larger in `make soak`. Hypothesis runs derandomized,
without a database."""
import json
import os
import uuid

import pytest
import yaml
from hypothesis import given, settings, strategies as st

import parity
from helpers import ROOT
from test_bad_input import FUZZ, SPEC_SCHEMA, from_schema
from kfocp_operator.paramconv import to_snake
from kfocp_operator.spec import SpecModel

from ansible_collections.kfocp.kubeflow.plugins.module_utils import settings as role_settings
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies, profiles, self_service
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError

EXAMPLES = int(os.environ.get("KFOCP_PARITY_EXAMPLES", "2"))
# The scenario's own settings (its users, its isolation) and what needs more than the API server.
KEPT = ("profiles_list", "profiles_auto_from_users", "profiles_auto_provider", "profiles_state", "profiles_prune",
        "profiles_namespace_wait", "namespace_policies_selector", "namespace_policies_whitelist_namespaces",
        "namespace_policies_state", "namespace_policies_prune_max_share", "profile_self_service_state")
FIELDS = sorted(field for field in SPEC_SCHEMA["properties"]
                if to_snake(field).startswith(("profiles_", "namespace_policies_", "profile_self_service_name_prefix",
                                               "service_mesh_flavour", "components_namespace"))
                and to_snake(field) not in KEPT and not to_snake(field).startswith("namespace_policies_data_lake"))
FIGURES = {"run": 0, "refused by the roles' checks": 0}
MODEL = SpecModel.from_collection(ROOT)


def refused(variables):
    """The roles' own checks of these variables (those of the pre-flight that need no cluster):
    their argument specs, then their builders' checks."""
    from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
    for role in ("profiles", "profile_self_service", "namespace_policies"):
        spec = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
        options = spec["argument_specs"]["main"]["options"]
        given = dict((k, v) for k, v in variables.items() if k in options)
        errors = ArgumentSpecValidator(options).validate(given).error_messages
        if errors:
            return "; ".join(errors)
    try:
        resolved = dict((role, role_settings.resolve(role, role_settings.site_facts(variables)))
                        for role in ("profiles", "profile_self_service", "namespace_policies"))
        profiles.objects(resolved["profiles"], [], [], [])
        self_service.objects(resolved["profile_self_service"])
        namespace_policies.Settings(resolved["namespace_policies"]).check()
    except DefinitionError as err:
        return str(err)
    return None


@st.composite
def specs(draw):
    """One or two fields of a CR's spec, as role variables (the operator's conversion)."""
    fields = draw(st.lists(st.sampled_from(FIELDS), min_size=1, max_size=2, unique=True))
    return MODEL.to_variables(dict((field, draw(from_schema(SPEC_SCHEMA["properties"][field]))) for field in fields))


@settings(max_examples=EXAMPLES, **FUZZ)
@given(spec=specs())
def test_fuzzed_specs_give_the_same_objects_on_both_roads(control_plane, kube, tmp_path_factory, spec):
    instance = "p-" + uuid.uuid4().hex[:8]
    variables = parity.spec_variables(instance, spec)
    why = refused(variables)
    print("spec %s: %s" % (json.dumps(spec, sort_keys=True)[:300], "refused (%s)" % why if why else "run"))
    if why:
        FIGURES["refused by the roles' checks"] += 1
        return
    FIGURES["run"] += 1
    _ours, _result, found = parity.differences(control_plane, kube, variables, tmp_path_factory.mktemp(instance))
    assert found == "", "spec %r: the playbook changed what the fast path wrote:\n%s" % (spec, found)


@pytest.fixture(scope="module", autouse=True)
def figures():
    yield
    print("fast path parity: %s" % ", ".join("%s %d" % item for item in sorted(FIGURES.items())))
