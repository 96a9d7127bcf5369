"""What AWX, ansible-builder and ansible-core do with kfocp's AWX configuration, execution environment
and AWX inventory: AWX's checks ported from ansible/awx 24.6.1 (94e5795d, recorded in
docs/readings/operator-bundle-awx-admission-readings.md), ansible-builder's and ansible-core's own
code as installed (requirements-dev.txt, the ansible 12.3.0 bundle)."""
import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from ansible_builder.ee_schema import validate_schema
from ansible_builder.exceptions import DefinitionError

from helpers import ROOT

BIN = Path(sys.executable).parent
CONFIGURE = yaml.safe_load((ROOT / "awx" / "configure.yml").read_text())[0]["tasks"]
AWX_VARS = yaml.safe_load((ROOT / "awx" / "vars" / "main.yml").read_text())

# awx/main/constants.py ENV_BLOCKLIST and SURVEY_TYPE_MAPPING (ansible/awx 24.6.1)
ENV_BLOCKLIST = frozenset(("VIRTUAL_ENV", "PATH", "PYTHONPATH", "JOB_ID", "INVENTORY_ID", "INVENTORY_SOURCE_ID",
                           "INVENTORY_UPDATE_ID", "AD_HOC_COMMAND_ID", "REST_API_URL", "REST_API_TOKEN", "MAX_EVENT_RES",
                           "CALLBACK_QUEUE", "CALLBACK_CONNECTION", "CACHE", "JOB_CALLBACK_DEBUG", "INVENTORY_HOSTVARS",
                           "AWX_HOST", "PROJECT_REVISION", "SUPERVISOR_CONFIG_PATH"))
SURVEY_TYPE_MAPPING = {"text": str, "textarea": str, "password": str, "multiplechoice": str, "multiselect": str,
                       "integer": int, "float": (float, int)}


def env_var_refusal(name):
    """awx/main/fields.py CredentialTypeInjectorField.validate_env_var_allowed."""
    if name.startswith("ANSIBLE_"):
        return "Environment variable %s may affect Ansible configuration so its use is not allowed in credentials." % name
    if name in ENV_BLOCKLIST:
        return "Environment variable %s is not allowed to be used in credentials." % name
    return None


def survey_error(new_spec):
    """awx/api/views/__init__.py JobTemplateSurveySpec._validate_spec_data: the first error, or None
    (the $encrypted$ handling of password defaults left out: kfocp's survey has no password)."""
    for field, kind in (("name", str), ("description", str), ("spec", list)):
        if field not in new_spec:
            return "Field '%s' is missing from survey spec." % field
        if not isinstance(new_spec[field], kind):
            return "Expected %s for field '%s'" % (kind.__name__, field)
    if len(new_spec["spec"]) < 1:
        return "'spec' doesn't contain any items."
    variables = set()
    for idx, item in enumerate(new_spec["spec"]):
        if not isinstance(item, dict):
            return "Survey question %d is not a json object." % idx
        for field in ("type", "question_name", "variable", "required"):
            if field not in item:
                return "'%s' missing from survey question %d" % (field, idx)
            if not isinstance(item[field], bool if field == "required" else str):
                return "'%s' in survey question %d has the wrong type" % (field, idx)
        if item["variable"] in variables:
            return "'variable' '%s' duplicated in survey question %d." % (item["variable"], idx)
        variables.add(item["variable"])
        qtype = item["type"]
        if qtype not in SURVEY_TYPE_MAPPING:
            return "'%s' in survey question %d is not one of the allowed question types." % (qtype, idx)
        if "default" in item and item["default"] != "" and not isinstance(item["default"], SURVEY_TYPE_MAPPING[qtype]):
            return "Default value %s in survey question %d has the wrong type" % (item["default"], idx)
        for key in ("min", "max"):
            if key in item and item[key] is not None and not isinstance(item[key], int):
                return "The %s limit in survey question %d expected to be integer." % (key, idx)
        if qtype in ("multiselect", "multiplechoice"):
            if "choices" not in item:
                return "Survey question %d of type %s must specify choices." % (idx, qtype)
            choices = item["choices"]
            if isinstance(choices, str):
                choices = "\n".join(c for c in choices.splitlines() if c.strip() != "")
            if "default" in item:
                default = item["default"]
                defaults = ("\n".join(c for c in default.splitlines() if c.strip() != "").splitlines()
                            if isinstance(default, str) else default)
                if qtype == "multiplechoice" and len(defaults) > 1:
                    return "Multiple Choice (Single Select) can only have one default value."
                if any(d not in choices for d in defaults):
                    return "Default choice must be answered from the choices listed."
    return None


def _task(module):
    return [t for t in CONFIGURE if module in t][0][module]


def test_the_credential_type_injects_only_env_names_awx_allows():
    env = _task("awx.awx.credential_type")["injectors"]["env"]
    assert env and [env_var_refusal(name) for name in env] == [None] * len(env)
    assert env_var_refusal("ANSIBLE_CONFIG") and env_var_refusal("PATH")


def test_the_survey_passes_awxs_survey_validation():
    survey = AWX_VARS["kfocp_awx_survey"]
    for module in ("awx.awx.job_template", "awx.awx.workflow_job_template"):
        assert _task(module)["survey_spec"] == "{{ kfocp_awx_survey }}", module
    assert survey_error(survey) is None
    # the port refuses what AWX refuses
    broken = copy.deepcopy(survey)
    choice = [q for q in broken["spec"] if q["type"] == "multiplechoice"][0]
    choice["default"] = "maybe"
    assert survey_error(broken) == "Default choice must be answered from the choices listed."
    broken = copy.deepcopy(survey)
    del broken["spec"][0]["required"]
    assert survey_error(broken) == "'required' missing from survey question 0"


def test_the_execution_environment_passes_ansible_builders_schema():
    """ansible_builder/ee_schema.py schema_v3 (additionalProperties false at every level)."""
    definition = yaml.safe_load((ROOT / "execution-environment.yml").read_text())
    assert definition["version"] == 3
    validate_schema(copy.deepcopy(definition))
    broken = copy.deepcopy(definition)
    broken["options"]["tag"] = broken["options"].pop("tags")
    with pytest.raises(DefinitionError, match="tag"):
        validate_schema(broken)


def test_a_job_reads_the_inventory_awx_hands_it_with_its_host_vars_templated(tmp_path):
    """An SCM inventory source is imported with `ansible-inventory --list --export`, and a job gets
    the imported inventory as an executable script printing that JSON, runs in the project's
    checkout (so the project's ansible.cfg applies) with ANSIBLE_INVENTORY_UNPARSED_FAILED=True
    (awx/main/tasks/jobs.py write_inventory_file, build_env; awx/settings/defaults.py). ansible-core
    must read that script (its `script` inventory plugin enabled), and it takes a script's output as
    trusted templates (plugins/inventory/script.py), so the host var
    `ansible_python_interpreter: "{{ ansible_playbook_python }}"` names the controller's Python."""
    source = _task("awx.awx.inventory_source")
    assert source["source"] == "scm" and source["source_path"] == "{{ kfocp_awx_inventory_source_path }}"
    path = ROOT / AWX_VARS["kfocp_awx_inventory_source_path"]
    exported = subprocess.run([str(BIN / "ansible-inventory"), "-i", str(path), "--list", "--export"], cwd=ROOT,
                              capture_output=True, text=True, check=True, timeout=120).stdout
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    script = inventory / "hosts"
    script.write_text("#! %s\n# -*- coding: utf-8 -*-\nprint(%r)\n" % (sys.executable, json.dumps(json.loads(exported))))
    script.chmod(0o700)
    (host,) = json.loads(exported)["_meta"]["hostvars"]
    env = {"PATH": "%s:/usr/bin:/bin" % BIN, "HOME": str(tmp_path), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp"),
           "ANSIBLE_INVENTORY_UNPARSED_FAILED": "True"}
    proc = subprocess.run([str(BIN / "ansible"), host, "-i", str(script), "-m", "ansible.builtin.debug",
                           "-a", "var=ansible_python_interpreter"], cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    value = re.search(r"ansible_python_interpreter\"?:\s*\"?([^\s\",]+)", proc.stdout).group(1)
    assert os.path.samefile(value, sys.executable), proc.stdout
