"""Bad input: the Kubeflow CR, the roles' variables and the components' manifests.

- The CR is fuzzed with hypothesis from the CRD's own openAPIV3Schema plus mutations (wrong types,
  values outside enums and patterns, unknown fields, huge strings, nulls, deep nesting). Each case
  is rejected by the API server's validation, naming the field, or accepted; an accepted one is
  reconciled by the real operator (its own service account) and ends Ready, or Degraded with a
  message naming the field and nothing applied. The operator never dies.
- Each role's variables are fuzzed from its meta/argument_specs.yml plus mutations; every case is
  rejected before any write reaches the API server (counted by a proxy in front of it), naming
  the variable. site.yml checks every enabled role's inputs before its first change.
- A malformed file in the components' source fails with its name, and nothing is applied.

Sizes: KFOCP_FUZZ_EXAMPLES (CR cases) and KFOCP_FUZZ_ROLE_CASES (cases per role), small by default,
larger in `make soak`. Hypothesis runs derandomized, without a database, so CI is reproducible;
what it found is kept below as explicit regression cases. Each test prints its figures.
"""
import os
import re
import string
import subprocess
import sys
import time

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from faultproxy import FaultProxy
from helpers import ROOT, labelled_objects, only_roles, roles_off_except, wait_for

sys.path[:0] = [str(ROOT / "operator")]

from kfocp_operator.paramconv import to_snake  # noqa: E402

CR_EXAMPLES = int(os.environ.get("KFOCP_FUZZ_EXAMPLES", "6"))
# An accepted spec must have a status for its generation within this many seconds.
STATUS_WITHIN = 60
ROLE_CASES = int(os.environ.get("KFOCP_FUZZ_ROLE_CASES", "6"))
CRD = ROOT / "operator" / "config" / "crd" / "bases" / "kfocp.io_kubeflows.yaml"
SPEC_SCHEMA = yaml.safe_load(CRD.read_text())["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
WRITES = ("POST", "PUT", "PATCH", "DELETE")
FUZZ = dict(derandomize=True, database=None, deadline=None, phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck))
NAME = st.text(string.ascii_lowercase, min_size=1, max_size=8)


# ---------------------------------------------------------------- values from a schema, and mutations

def json_values(depth=2):
    scalars = st.none() | st.booleans() | st.integers(-10, 10 ** 6) | st.text(string.printable, max_size=12)
    return st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(NAME, inner, max_size=3),
                        max_leaves=6) if depth else scalars


def from_schema(schema):
    """Values valid for an OpenAPI v3 (structural) schema."""
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if kind == "string":
        if schema.get("pattern"):
            return st.from_regex(schema["pattern"], fullmatch=True).filter(
                lambda s: len(s) <= schema.get("maxLength", 253) and "\n" not in s)
        return st.text(string.ascii_letters + string.digits + "-._/ ", max_size=min(schema.get("maxLength", 30), 30))
    if kind == "integer":
        return st.integers(schema.get("minimum", 0), schema.get("maximum", 10 ** 4))
    if kind == "number":
        return st.floats(0, 10 ** 4, allow_nan=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        return st.lists(from_schema(schema.get("items") or {}), max_size=3)
    if isinstance(schema.get("additionalProperties"), dict):
        return st.dictionaries(NAME, from_schema(schema["additionalProperties"]), max_size=3)
    props = schema.get("properties")
    if props:
        required = set(schema.get("required") or [])
        return st.fixed_dictionaries(dict((k, from_schema(v)) for k, v in props.items() if k in required),
                                     optional=dict((k, from_schema(v)) for k, v in props.items() if k not in required))
    return st.dictionaries(NAME, json_values(1), max_size=3)


def deep(depth):
    value = "bottom"
    for level in range(depth):
        value = {"level%d" % level: value}
    return value


WRONG_TYPE = {"string": st.just({"not": "a string"}) | st.lists(st.integers(), min_size=1, max_size=2),
              "integer": st.just("twelve") | st.just([1]), "number": st.just("a lot"),
              "boolean": st.just("maybe") | st.just({"yes": True}), "array": st.just({"not": "a list"}) | st.just(7),
              "object": st.just(["not", "an", "object"]) | st.just("not an object")}


def mutations(schema):
    """(kind of mutation, strategy of values) that break `schema`, or test its limits."""
    out = [("null", st.none()), ("deep nesting", st.integers(20, 60).map(deep)),
           ("huge string", st.integers(10 ** 4, 10 ** 5).map(lambda n: "x" * n))]
    kind = schema.get("type")
    if kind in WRONG_TYPE:
        out.append(("wrong type", WRONG_TYPE[kind]))
    if "enum" in schema:
        out.append(("outside the enum", NAME.filter(lambda v: v not in schema["enum"])))
    if schema.get("pattern"):
        out.append(("outside the pattern", st.sampled_from(["Not_A_Name", "-dash-", "UPPER", "a" * 300, "a b"])))
    if schema.get("properties"):
        out.append(("unknown field", from_schema(schema).map(lambda v: dict(v or {}, notAField="x"))))
    return out


FIELDS = sorted(f for f in SPEC_SCHEMA["properties"] if not f.endswith("State"))


@st.composite
def cr_cases(draw):
    """(field, kind of case, value): a valid value or a mutation of one spec field; or an unknown field."""
    if draw(st.integers(0, 9)) == 0:
        return ("notAField", "unknown field", draw(json_values(1)))
    field = draw(st.sampled_from(FIELDS))
    schema = SPEC_SCHEMA["properties"][field]
    kinds = [("valid", from_schema(schema))] + mutations(schema)
    kind, values = draw(st.sampled_from(kinds))
    return (field, kind, draw(values))


# ---------------------------------------------------------------- the Kubeflow CR, reconciled by the operator

def base_spec(name):
    """Three roles on, the others absent; the policies kept to namespaces labelled for this test."""
    return dict(roles_off_except("scc", "profiles", "namespace_policies"), sccGrantsDefault=[],
                namespacePoliciesSelector={"kfocp-fuzz": name}, namespacePoliciesWhitelistOthers=False,
                namespacePoliciesMeshMode="none")


def names_of(field):
    """How a message may name a spec field: camelCase, the role variable, or the variable the role
    derives from it (scc_grants = scc_grants_default + scc_grants_extra)."""
    snake = to_snake(field)
    names = {field, snake}
    if snake.startswith("scc_grants"):
        names.add("scc_grants")
    return names


def role_of(field):
    return next((role for role in ROLES if to_snake(field).startswith(role + "_")), None)


def versions(kube, instance):
    """resourceVersion of every object labelled with (or patched by) the instance."""
    return dict((key, obj["metadata"]["resourceVersion"]) for key, obj in labelled_objects(kube, instance).items())


def condition(cr, kind):
    return next((c for c in (cr.get("status") or {}).get("conditions") or [] if c["type"] == kind), {})


class CRFuzz:
    """Sends specs to the real API server and follows what the operator makes of them."""

    def __init__(self, operator, kube, name):
        self.op, self.kube, self.name = operator, kube, name
        self.res = kube.resource("kfocp.io/v1alpha1", "Kubeflow")
        self.figures = dict.fromkeys(("tried", "rejected", "accepted", "unchanged", "ready", "degraded"), 0)
        self.outcomes = {}
        self.seconds = dict.fromkeys(("rejected", "unchanged", "ready", "degraded"), 0.0)

    def send(self, spec):
        """JSON-patch the whole spec, with strict field validation (as kubectl does)."""
        from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError
        try:
            self.kube.request("PATCH", self.kube.path(self.res, self.op.namespace, self.name),
                              query={"fieldValidation": "Strict"}, content_type="application/json-patch+json",
                              body=[{"op": "replace", "path": "/spec", "value": spec}])
        except KubeError as err:
            return err
        return None

    def case(self, field, kind, value, spec=None):
        """One case; returns what happened, exactly one of: rejected (by the CRD's schema),
        degraded (naming the field, nothing written) or ready. Anything else fails the test: an
        accepted spec without a status for its generation within STATUS_WITHIN seconds, a Degraded
        that does not name the field or that wrote something, an operator that died."""
        started = time.monotonic()
        outcome = self._case(field, kind, value, spec)
        self.seconds[outcome] += time.monotonic() - started
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        return "ready" if outcome == "unchanged" else outcome

    def _case(self, field, kind, value, spec):
        self.figures["tried"] += 1
        spec = spec if spec is not None else dict(base_spec(self.name), **{field: value})
        generation = self.op.get(self.name)["metadata"]["generation"]
        before = versions(self.kube, self.name)
        error = self.send(spec)
        assert self.op.proc.alive(), "the operator died:\n" + self.op.proc.log_tail()
        if error is not None:
            assert error.status in (400, 422), "%s %s: %s" % (field, kind, error)
            assert field in str(error), "the rejection does not name %s: %s" % (field, error)
            self.figures["rejected"] += 1
            assert self.op.get(self.name)["metadata"]["generation"] == generation
            return "rejected"
        self.figures["accepted"] += 1
        new = self.op.get(self.name)["metadata"]["generation"]
        if new == generation:  # pruned or defaulted back to the same spec: nothing to reconcile, still Ready
            self.figures["unchanged"] += 1
            cr = self.op.get(self.name)
            assert condition(cr, "Ready").get("status") == "True", "%s %s: spec unchanged but not Ready: %s" % (
                field, kind, cr.get("status"))
            return "unchanged"
        self.status_for(new, field, kind)
        cr = self.op.settled(self.name, new)
        assert self.op.proc.alive(), "the operator died:\n" + self.op.proc.log_tail()
        if condition(cr, "Ready").get("status") == "True":
            self.figures["ready"] += 1
            return "ready"
        message = condition(cr, "Degraded")["message"]
        named = names_of(field) if field != "notAField" else set()
        role = role_of(field)
        assert any(n in message for n in named) or (role and re.search(r"\b%s_[a-z_]+" % role, message)), \
            "Degraded for %s (%s) without naming it: %s" % (field, kind, message)
        if condition(cr, "Degraded").get("reason") != "InvalidSpec":  # (refused before any run)
            assert cr["status"]["lastRun"]["changed"] == 0, cr["status"]["lastRun"]
        after = versions(self.kube, self.name)
        assert after == before, "a rejected generation changed objects: %s" % sorted(
            set(after.items()) ^ set(before.items()))[:5]
        self.figures["degraded"] += 1
        return "degraded"

    def status_for(self, generation, field, kind):
        """The operator posts a status for `generation` (Running, Ready or Degraded) within STATUS_WITHIN seconds."""
        def posted():
            cr = self.op.get(self.name)
            return any(c.get("observedGeneration") == generation
                       for c in ((cr or {}).get("status") or {}).get("conditions") or [])
        wait_for(posted, STATUS_WITHIN, interval=0.2,
                 what="a status for generation %s (%s %s)\n%s" % (generation, field, kind, self.op.proc.log_tail(2000)))


ROLES = sorted(p.parent.parent.name for p in (ROOT / "roles").glob("*/meta/argument_specs.yml"))


@pytest.fixture(scope="module")
def cr_fuzz(kfocp_operator, kube):
    import uuid
    name = "kf-fuzz-" + uuid.uuid4().hex[:6]
    kfocp_operator.create(name, base_spec(name))
    cr = kfocp_operator.settled(name, 1)
    assert condition(cr, "Ready")["status"] == "True", cr["status"]
    fuzz = CRFuzz(kfocp_operator, kube, name)
    yield fuzz
    log = kfocp_operator.proc.log_path.read_text(errors="replace")
    counts = dict(fuzz.outcomes)
    print("CR fuzz: %d specs: rejected by the schema %d, Degraded naming the field before any write %d, Ready %d "
          "(of which spec unchanged %d), any other outcome 0 (it fails the test); figures %s; seconds %s; "
          "operator alive %s, tracebacks in its log %d"
          % (sum(counts.values()), counts.get("rejected", 0), counts.get("degraded", 0),
             counts.get("ready", 0) + counts.get("unchanged", 0), counts.get("unchanged", 0), fuzz.figures,
             dict((k, round(v)) for k, v in fuzz.seconds.items()), kfocp_operator.proc.alive(), log.count("Traceback")))
    kfocp_operator.delete(name)
    assert "Traceback" not in log, log[log.index("Traceback") - 2000:][:6000]


# Found by the fuzz, or by reading the roles, and kept.
CR_REGRESSIONS = [
    ("sccGrantsExtra", "valid", [{"namespace": "fuzz-grant", "serviceaccount": "trainer", "scc": "nonroot-v2",
                                  "reason": "fixed UID"}], "ready"),
    ("authImage", "huge string", "x" * 50000, "rejected"),
    # a selector the API server would not parse selected nothing, and every profile's policies went
    ("namespacePoliciesSelector", "bad label value", {"a": "b c"}, "degraded"),
    ("namespacePoliciesSelector", "empty key", {"": ""}, "degraded"),
    ("namespacePoliciesSelector", "selector syntax in a value", {"a": "b,c=d"}, "degraded"),
    ("namespacePoliciesSelector", "nested", {"a": {"b": "c"}}, "rejected"),
    ("namespacePoliciesSelector", "deep nesting", deep(200), "rejected"),
    # passed the checks and failed at apply, after other objects were written
    ("profilesQuotaDefault", "space in a quantity", {"cpu": " 1"}, "degraded"),
    ("profilesQuotaDefault", "space in a quantity", {"cpu": "1 "}, "degraded"),
    ("namespacePoliciesLimitrange", "min above max", {"min": {"cpu": "2"}, "max": {"cpu": "1"}}, "degraded"),
    ("namespacePoliciesLimitrange", "default above max", {"default": {"memory": "4Gi"}, "max": {"memory": "1Gi"}},
     "degraded"),
    # 200 levels passed the schema and broke the run's loading of its variables
    ("gpuNfdSpec", "deep nesting", deep(200), "degraded"),
    # a file written or a program run on the operator's host
    ("componentsKubectl", "host program", "/bin/sh", "rejected"),
    ("componentsMirrorFile", "host file", "/tmp/kfocp-mirror", "rejected"),
    ("authReplicas", "wrong type", "many", "rejected"),
    ("notAField", "unknown field", 1, "rejected"),
    ("namespacePoliciesMeshMode", "outside the enum", "sideways", "rejected"),
    ("sccGrantsExtra", "outside the pattern", [{"namespace": "Not_A_Name", "serviceaccount": "sa", "scc": "anyuid",
                                                "reason": "x"}], "rejected"),
    ("profilesList", "valid", [{"name": "Bad Name", "owner": {"user": "a"}}], "degraded"),
    ("sccGrantsExtra", "valid", [{"namespace": "fuzz-a", "serviceaccount": "sa", "scc": "no-such-scc",
                                  "reason": "x"}], "degraded"),
    ("namespacePoliciesLimitrange", "valid", {"default": {"cpu": "lots"}}, "degraded"),
    ("profilesQuotaDefault", "deep nesting", deep(40), "degraded"),
]


@pytest.mark.parametrize("field,kind,value,expected", CR_REGRESSIONS, ids=[c[0] + "-" + c[1] for c in CR_REGRESSIONS])
def test_cr_regressions(cr_fuzz, field, kind, value, expected):
    assert cr_fuzz.case(field, kind, value) == expected


def test_a_wrong_late_role_value_in_the_cr_applies_nothing(cr_fuzz, kube):
    """site.yml's first role has a change to make (a new grant) and its last role a wrong input:
    the run stops before the grant is applied."""
    namespace = cr_fuzz.name + "-grant"
    spec = dict(base_spec(cr_fuzz.name), namespacePoliciesLimitrange={"default": {"cpu": "lots"}},
                sccGrantsExtra=[{"namespace": namespace, "serviceaccount": "trainer", "scc": "nonroot-v2",
                                 "reason": "fixed UID"}])
    assert cr_fuzz.case("namespacePoliciesLimitrange", "valid", None, spec=spec) == "degraded"
    cr = cr_fuzz.op.get(cr_fuzz.name)
    assert "namespace_policies_limitrange.default.cpu" in condition(cr, "Degraded")["message"]
    assert kube.get(kube.resource("v1", "Namespace"), namespace) is None
    assert kube.get(kube.resource("rbac.authorization.k8s.io/v1", "RoleBinding"), "kfocp-scc-nonroot-v2-trainer",
                    namespace) is None


def test_a_template_in_the_cr_is_text_not_code(cr_fuzz, kube):
    """A CR's spec reaches the playbook as extra variables: a Jinja template in it must stay text
    (here it would run a command in the operator, with the operator's rights)."""
    template = "{{ lookup('pipe', 'id -u') }} {{ 6 * 7 }}"
    grant = {"namespace": cr_fuzz.name + "-tpl", "serviceaccount": "sa", "scc": "anyuid", "reason": template}
    assert cr_fuzz.case("sccGrantsExtra", "template", [grant]) == "ready"
    binding = kube.get(kube.resource("rbac.authorization.k8s.io/v1", "RoleBinding"), "kfocp-scc-anyuid-sa",
                       grant["namespace"])
    assert binding["metadata"]["annotations"]["kfocp.io/scc-reason"] == template


@settings(max_examples=CR_EXAMPLES, **FUZZ)
@given(case=cr_cases())
def test_fuzzed_crs_are_rejected_or_reconciled(cr_fuzz, case):
    cr_fuzz.case(*case)


# ---------------------------------------------------------------- role variables, through a proxy that counts writes

def argument_specs(role):
    doc = yaml.safe_load((ROOT / "roles" / role / "meta" / "argument_specs.yml").read_text())
    return doc["argument_specs"]["main"]["options"]


def patterned(name):
    """Names whose values the roles check as DNS names (the CRD gives them the same patterns)."""
    return name in ("namespace", "serviceaccount") or name.endswith("_namespace")


BAD_NAMES = st.sampled_from(["Not_A_Name", "-dash-", "UPPER", "a" * 300, "a b"])


def bad_values(option):
    """(kind, strategy) of values that the argument spec or the role's checks must reject."""
    kind = option.get("type", "str")
    out = []
    if option.get("choices"):
        out.append(("outside the choices", NAME.filter(lambda v: v not in option["choices"])))
    if kind == "int":
        out.append(("wrong type", st.sampled_from(["twelve", [1], {"a": 1}])))
    elif kind == "bool":
        out.append(("wrong type", st.sampled_from(["maybe", [True], {"a": 1}])))
    elif kind == "list":
        out.append(("wrong type", st.sampled_from([{"not": "a list"}, deep(30)])))
        if option.get("elements") == "dict":
            out.append(("wrong item type", st.just(["not a mapping"])))
            if option.get("options"):
                out.append(("unknown item field", st.just([{"not_an_option": 1}])))
    elif kind == "dict":
        # (an int for a mapping with options is rejected too, but ansible-core's validator then fails
        # with "argument of type 'int' is not iterable", naming nothing: see ANSIBLE_CORE_UNNAMED)
        wrong = [["a", "list"], "no mapping"] + ([] if option.get("options") else [7])
        out.append(("wrong type", st.sampled_from(wrong)))
        if option.get("options"):
            out.append(("unknown field", st.just({"not_an_option": 1})))
            for sub, spec in sorted(option["options"].items()):
                if spec.get("type") in ("int", "bool"):
                    out.append(("wrong field type", st.just({sub: "not a %s" % spec["type"]})))
    # (a str option takes anything: the argument spec converts mappings and lists to strings)
    return out


def role_cases(role):
    """(variable, kind of case, strategy of values) for one role's variables."""
    choices = []
    for variable, option in sorted(argument_specs(role).items()):
        for kind, values in bad_values(option):
            choices.append((variable, kind, values))
        if patterned(variable) and option.get("type", "str") == "str":
            choices.append((variable, "outside the pattern", BAD_NAMES))
    return choices


# ansible-core's argument validation rejects an int given for a mapping with options, but with
# "argument of type 'int' is not iterable", naming no variable: such a case must be rejected
# before any write, and is not required to name its variable.
ANSIBLE_CORE_UNNAMED = "wrong type (int for a mapping with options)"
# Found by the fuzz and kept, per role: each was accepted (and applied) or named no variable before
# its fix (scc_grants' default, namespace_policies' checks of the namespaces it names).
ROLE_REGRESSIONS = {
    "auth": [("auth_sar", ANSIBLE_CORE_UNNAMED, 7)],
    "autoscaler": [("autoscaler_cluster", ANSIBLE_CORE_UNNAMED, 7)],
    "scc": [("scc_grants_default", "wrong type", {"not": "a list"}), ("scc_grants_extra", "wrong type", "x")],
    "namespace_policies": [("namespace_policies_gpu_operator_namespace", "outside the pattern", "GPU_Ops"),
                           ("namespace_policies_mesh_namespace", "outside the pattern", "Not_A_Name")],
}


def fuzz_playbook(role, cases, instance):
    """One play that runs the role once per case (its variable set to the case's value), rescues
    the failure and records its message; the results are printed by the last task."""
    tasks = [{"name": "Start with no results", "ansible.builtin.set_fact": {"fuzz_results": {}}}]
    for index, (variable, _kind, value) in enumerate(cases):
        tasks.append({"name": "Case %d" % index, "block": [
            {"name": "Run the role with case %d" % index,
             "ansible.builtin.include_role": {"name": "kfocp.kubeflow." + role}, "vars": {variable: value}},
            {"name": "Record that case %d was accepted" % index,
             "ansible.builtin.set_fact": {"fuzz_results": "{{ fuzz_results | combine({'%d': 'ACCEPTED'}) }}" % index}}],
            "rescue": [{"name": "Record why case %d was rejected" % index, "ansible.builtin.set_fact": {
                "fuzz_results": "{{ fuzz_results | combine({'%d': (ansible_failed_result.msg | default('')) ~ ' ' ~ "
                                "(ansible_failed_result.argument_errors | default([]) | join(' '))}) }}" % index}}]})
    tasks.append({"name": "Show the results", "ansible.builtin.debug": {"var": "fuzz_results"}})
    connection = {"kubeconfig": "{{ kfocp_kubeconfig }}"}
    return [{"name": "Fuzz the variables of " + role, "hosts": "all", "gather_facts": False,
             "module_defaults": {"group/kfocp.kubeflow.kfocp": dict(connection, instance=instance),
                                 "group/kubernetes.core.k8s": connection},
             "tasks": tasks}]


def refuse_writes(method, path, n):
    """The proxy answers writes itself, so that a case a role wrongly accepts changes nothing."""
    return (403, None) if method in WRITES else None


def attempted_writes(proxy):
    return sum(n for (method, _depth), n in proxy.counts.items() if method in WRITES)


def results_of(run):
    for event in run.events:
        res = (event.get("event_data") or {}).get("res") or {}
        if "fuzz_results" in res:
            return res["fuzz_results"]
    raise AssertionError("no results:\n" + run.stdout[-3000:])


def variable_named(variable, message):
    names = {variable, "scc_grants"} if variable.startswith("scc_grants") else {variable}
    return any(name in message for name in names)


@pytest.mark.parametrize("role", ROLES)
def test_fuzzed_role_variables_are_rejected_before_any_write(role, control_plane, playbook, instance, tmp_path):
    figures = {"cases": 0, "rejected": 0, "writes": 0, "reads": 0}
    found = []

    choices = role_cases(role)
    # each (variable, kind) once, and more values of them when more cases than that are asked for
    unique = ROLE_CASES <= len(choices)

    @settings(max_examples=1, **FUZZ)
    @given(picked=st.lists(st.sampled_from(range(len(choices))), min_size=ROLE_CASES, max_size=ROLE_CASES,
                           unique=unique), data=st.data())
    def batch(picked, data):
        found.append([(choices[i][0], choices[i][1], data.draw(choices[i][2])) for i in picked])

    batch()
    cases = ROLE_REGRESSIONS.get(role, []) + found[-1]
    path = tmp_path / "fuzz.yml"
    path.write_text(yaml.safe_dump(fuzz_playbook(role, cases, instance), sort_keys=False))
    with FaultProxy(control_plane, refuse_writes) as proxy:
        kubeconfig = proxy.kubeconfig(tmp_path / "proxy.kubeconfig")
        run = playbook(str(path), {"kfocp_kubeconfig": str(kubeconfig), "kfocp_instance": instance})
    results = results_of(run)
    figures.update(cases=len(cases), writes=attempted_writes(proxy),
                   reads=sum(n for (method, _d), n in proxy.counts.items() if method == "GET"))
    problems = []
    for index, (variable, kind, value) in enumerate(cases):
        message = results.get(str(index), "")
        if message == "ACCEPTED":
            problems.append("%s %s %r: accepted" % (variable, kind, value))
        elif kind != ANSIBLE_CORE_UNNAMED and not variable_named(variable, message):
            problems.append("%s %s: the error does not name it: %s" % (variable, kind, message[:300]))
        else:
            figures["rejected"] += 1
    print("role %s: %s; kinds %s" % (role, figures, sorted(set(c[1] for c in cases))))
    assert not problems, "\n".join(problems)
    assert figures["writes"] == 0, "writes reached the proxy: %s" % proxy.counts


# ---------------------------------------------------------------- site.yml checks every enabled role first

SITE_ROLES = ("scc", "service_mesh", "auth", "components", "profiles", "namespace_policies")
# One wrong value per role that site.yml runs on the local inventory: each passes the argument
# specs and is caught by the role's own checks, which run only when the role starts.
LATE_WRONG = {
    "service_mesh_external": {"namespace": "Not_A_Name", "gateway": "istio-ingressgateway"},
    "auth_host": "not a host",
    "components_components": {"no-such-component": "managed"},
    "profiles_list": [{"name": "Bad Name", "owner": {"user": "someone"}}],
    "namespace_policies_limitrange": {"default": {"cpu": "lots"}},
}


def site_through_proxy(playbook, control_plane, tmp_path, extra, name="site"):
    with FaultProxy(control_plane, refuse_writes) as proxy:
        kubeconfig = proxy.kubeconfig(tmp_path / "proxy.kubeconfig")
        run = playbook(name, dict(extra, kfocp_kubeconfig=str(kubeconfig)))
    return run, proxy


def test_site_checks_a_late_roles_inputs_before_the_first_change(playbook, control_plane, instance, tmp_path):
    """The scc role, first, has a grant to add; namespace_policies, last, a wrong input."""
    extra = dict(only_roles(*SITE_ROLES), kfocp_instance=instance,
                 scc_grants_extra=[{"namespace": instance, "serviceaccount": "trainer", "scc": "nonroot-v2",
                                    "reason": "fixed UID"}],
                 namespace_policies_limitrange=LATE_WRONG["namespace_policies_limitrange"])
    run, proxy = site_through_proxy(playbook, control_plane, tmp_path, extra)
    print("late wrong input: rc=%s, %d requests, %d writes attempted"
          % (run.rc, sum(proxy.counts.values()), attempted_writes(proxy)))
    assert run.rc != 0
    assert "namespace_policies_limitrange.default.cpu" in run.stdout and "Nothing was changed" in run.stdout
    assert attempted_writes(proxy) == 0, proxy.counts


def test_profiles_playbook_checks_policies_inputs_before_profiles(playbook, control_plane, instance, tmp_path):
    """playbooks/profiles.yml: a declared profile to create first, a wrong policies input last."""
    extra = dict(kfocp_instance=instance, kfocp_profile_self_service_enabled=False,
                 profiles_list=[{"name": instance + "-p", "owner": {"user": "someone@example.com"}}],
                 namespace_policies_limitrange=LATE_WRONG["namespace_policies_limitrange"])
    run, proxy = site_through_proxy(playbook, control_plane, tmp_path, extra, name="profiles")
    assert run.rc != 0
    assert "namespace_policies_limitrange.default.cpu" in run.stdout and "Nothing was changed" in run.stdout
    assert attempted_writes(proxy) == 0, proxy.counts


def test_site_names_every_wrong_input_at_once_and_changes_nothing(playbook, control_plane, instance, tmp_path):
    extra = dict(only_roles(*SITE_ROLES), kfocp_instance=instance, namespace_policies_mesh_mode="none", **LATE_WRONG)
    extra["scc_grants_extra"] = [{"namespace": "Not_A_Name", "serviceaccount": "sa", "scc": "anyuid", "reason": "x"}]
    run, proxy = site_through_proxy(playbook, control_plane, tmp_path, extra)
    assert run.rc != 0 and "Nothing was changed. Wrong inputs:" in run.stdout, run.stdout[-3000:]
    stop = run.stdout[run.stdout.index("Nothing was changed. Wrong inputs:"):]
    missing = [name for name in list(LATE_WRONG) + ["scc_grants"] if name not in stop]
    print("every role wrong: rc=%s, %d of %d wrong inputs named, %d writes attempted"
          % (run.rc, len(LATE_WRONG) + 1 - len(missing), len(LATE_WRONG) + 1, attempted_writes(proxy)))
    assert not missing, stop[:3000]
    assert attempted_writes(proxy) == 0, proxy.counts


# ---------------------------------------------------------------- a malformed manifest in the components' source

def test_a_malformed_manifest_names_its_file_and_applies_nothing(playbook, control_plane, instance, tmp_path):
    tree = tmp_path / "tree"
    subprocess.run(["cp", "-r", str(ROOT / "tests" / "fixtures" / "manifests"), str(tree)], check=True)
    bad = "applications/katib/upstream/installs/katib-with-kubeflow/katib-config.yaml"
    (tree / bad).write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n data: [\n")
    extra = {"kfocp_instance": instance, "components_dir": str(tree),
             "components_components": {"kubeflow-roles": "managed", "katib": "managed"}}
    with FaultProxy(control_plane, refuse_writes) as proxy:
        extra["kfocp_kubeconfig"] = str(proxy.kubeconfig(tmp_path / "proxy.kubeconfig"))
        run = playbook("components", extra)
    print("malformed manifest: rc=%s, %d requests, %d writes attempted"
          % (run.rc, sum(proxy.counts.values()), attempted_writes(proxy)))
    assert run.rc != 0
    assert "malformed YAML in %s" % bad in run.stdout, run.stdout[-3000:]
    assert attempted_writes(proxy) == 0, proxy.counts
