"""The Kubeflow CR's spec, derived from the roles' meta/argument_specs.yml: its OpenAPI schema
(for the CRD) and the conversion of a CR spec (camelCase) into role variables (snake_case).

Every option of every role's `main` entry point is one spec field, named the way
ansible-operator converts it back (paramconv.to_snake(field) == option). Keys of free-form
mappings (options of type dict or raw without sub-options: labels, quotas) are data, not
variable names, and are left as they are.
"""
import re
from pathlib import Path

import yaml

from kfocp_operator import API_VERSION, GROUP, KIND, PLURAL, VERSION
from kfocp_operator.paramconv import to_camel, to_snake

# Fields of the operator itself, next to the roles' variables.
OPERATOR_OPTIONS = {
    "kfocp_openshift_version": {
        "type": "str",
        "description": ["The OpenShift version of a cluster that serves OpenShift's APIs without a ClusterVersion (the local "
                        "control plane), for which the "
                        "roles choose their channels and fields; on OpenShift it is read from the cluster, and this "
                        "one, when set, must match it (README \"Supported versions\")."],
    },
    "reconcile_period": {
        "type": "str",
        "description": ["How often the operator re-runs the playbook to correct drift (for example 30m, 1h30m). "
                        "The annotation ansible.sdk.operatorframework.io/reconcile-period takes precedence."],
    },
}
# Role variables that act on the operator's own host: a file written, a program run, a cloud
# credential used (and the endpoint it is sent to). A CR editor
# must not choose them (they would write files and run programs as the operator), so they are not
# in the CRD and the operator refuses them in a CR; only the operator's configuration (its
# ConfigMap, its environment) sets them.
OPERATOR_ONLY = {
    "components_kubectl": "runs this program",
    "components_render_dir": "writes files in this directory",
    "scc_render_dir": "writes files in this directory",
    "components_mirror_file": "writes this file",
    "data_lake_aws_access_key": "is a cloud credential used",
    "data_lake_aws_secret_key": "is a cloud credential used",
    "data_lake_aws_session_token": "is a cloud credential used",
    "data_lake_aws_endpoint_url": "sends the cloud credentials to this endpoint",
    "data_lake_documents_dir": "writes files in this directory",
}
# Bounds on what a CR may hold, so that a value too large or too deep is refused by the API server
# (and, for free-form values, by the operator before a run: config.MAX_DEPTH), not by the
# playbook run that would load it.
MAX_STRING = 8192
MAX_PROPERTIES = 256
# Free-form mappings whose values are all strings (labels, selectors, image and version maps),
# by variable or sub-option name: the schema types their values, which also bounds their depth.
STRING_MAPS = {
    "namespace_policies_selector": 63, "match_labels": 63, "service_mesh_member_label": 63, "member_label": 63,
    "gateway_labels": 63, "labels": 63, "node_selector": 63, "selector": 63,
    "components_image_prefixes": MAX_STRING, "components_image_digests": MAX_STRING,
    "components_api_versions": MAX_STRING, "api_versions": MAX_STRING, "instance_type": MAX_STRING,
    "gpu_instance_type_fields": MAX_STRING, "namespace_policies_data_lake_roles": MAX_STRING,
}
DURATION = r"^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$"
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_TYPES = {"str": "string", "path": "string", "int": "integer", "float": "number", "bool": "boolean",
          "list": "array", "dict": "object"}
_MARKUP = re.compile(r"\b([CIVO])\(([^()]*)\)")


class SpecError(ValueError):
    pass


def _templated(value):
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, dict):
        return any(_templated(v) for v in value.values())
    if isinstance(value, list):
        return any(_templated(v) for v in value)
    return False


def load_roles(roles_dir, on_error=None):
    """{role: {"options": argument spec options, "defaults": defaults/main.yml}} for every role.

    A role whose files are not valid YAML raises SpecError, or, with `on_error`, is reported to
    it and left out."""
    roles = {}
    for spec_file in sorted(Path(roles_dir).glob("*/meta/argument_specs.yml")):
        role_dir = spec_file.parents[1]
        defaults_file = role_dir / "defaults" / "main.yml"
        try:
            doc = yaml.safe_load(spec_file.read_text()) or {}
            defaults = (yaml.safe_load(defaults_file.read_text()) or {}) if defaults_file.exists() else {}
        except yaml.YAMLError as err:
            error = SpecError("role %s: %s" % (role_dir.name, str(err).replace("\n", " ")))
            if on_error is None:
                raise error
            on_error(error)
            continue
        main = (doc.get("argument_specs") or {}).get("main") or {}
        roles[role_dir.name] = {"options": main.get("options") or {}, "defaults": defaults,
                                "description": main.get("short_description", "")}
    return roles


def _description(option):
    text = option.get("description") or ""
    if isinstance(text, list):
        text = " ".join(str(t) for t in text)
    return _MARKUP.sub(lambda m: to_camel(m.group(2)) if m.group(1) == "O" else m.group(2), str(text)).strip()


def _pattern(name, option):
    if option.get("type", "str") != "str" or option.get("choices"):
        return None
    if name == "namespace" or name.endswith("_namespace"):
        return DNS_LABEL
    if name == "serviceaccount":
        return DNS_SUBDOMAIN
    if name.endswith("_period"):
        return DURATION
    return None


def _allow_empty(schema):
    """A pattern field whose default is '' (meaning 'none') accepts '' too."""
    if schema.get("default") == "" and schema.get("pattern"):
        schema["pattern"] = "^(%s)?$" % schema["pattern"][1:-1]
    return schema


class SpecModel:
    """The spec of a Kubeflow CR as the roles define it."""

    def __init__(self, roles, extra=None):
        self.roles = roles
        self.options = {}
        self.owner = {}
        self.verbatim = set()
        self.warnings = []
        self.defaults = {}
        for role, data in sorted(roles.items()):
            for name, option in (data["options"] or {}).items():
                self._add(name, option, role)
                if "default" in option and option["default"] is not None:
                    self.defaults[name] = option["default"]
                elif name in data["defaults"] and data["defaults"][name] is not None \
                        and not _templated(data["defaults"][name]):
                    self.defaults[name] = data["defaults"][name]
        for name, option in (extra if extra is not None else OPERATOR_OPTIONS).items():
            self._add(name, option, None)
        self.by_camel = dict((to_camel(name), name) for name in self.options)

    @classmethod
    def from_collection(cls, collection_root, on_error=None):
        return cls(load_roles(Path(collection_root) / "roles", on_error))

    def _add(self, name, option, role):
        if name in self.options:
            raise SpecError("%s: defined by both %s and %s; role variables must be prefixed with the role name"
                            % (name, self.owner[name] or "the operator", role or "the operator"))
        self._check_names(name, option, role)
        self.options[name] = option
        self.owner[name] = role

    def _check_names(self, name, option, role, top=True):
        camel = to_camel(name)
        if to_snake(camel) != name:
            if top:
                raise SpecError("%s (role %s): camelCase %r converts back to %r, not to the variable's name; "
                                "rename the variable" % (name, role, camel, to_snake(camel)))
            # A sub-option that is data (a component name such as kubeflow-roles): kept verbatim.
            self.verbatim.add(name)
            self.warnings.append("%s (role %s): no camelCase form converts back to it, so the CR spells it %r; "
                                 "ansible-operator's snakeCaseParameters would turn that into %r"
                                 % (name, role, name, to_snake(name)))
        for sub, sub_option in (option.get("options") or {}).items():
            self._check_names(sub, sub_option, role, top=False)

    def camel(self, name):
        return name if name in self.verbatim else to_camel(name)

    # ------------------------------------------------------------ schema

    def _schema(self, name, option, with_default=True):
        kind = option.get("type", "str") if "type" in option else "raw"
        schema = {}
        description = _description(option)
        if description:
            schema["description"] = description
        if kind == "raw":
            schema["x-kubernetes-preserve-unknown-fields"] = True
        elif kind in ("list",):
            schema["type"] = "array"
            schema["items"] = self._schema(name, {"type": option.get("elements", "raw") if "elements" in option
                                                  else "raw", "options": option.get("options")}, with_default=False)
            schema["items"].pop("description", None)
        elif kind == "dict":
            schema["type"] = "object"
            self._properties(schema, option.get("options"), name)
        elif kind in _TYPES:
            schema["type"] = _TYPES[kind]
        else:
            raise SpecError("%s: type %r has no OpenAPI equivalent" % (name, kind))
        if kind == "raw" and option.get("options"):
            schema.pop("x-kubernetes-preserve-unknown-fields")
            schema["type"] = "object"
            self._properties(schema, option.get("options"), name)
        if kind == "str" and not option.get("choices"):
            schema["maxLength"] = MAX_STRING
        if option.get("choices"):
            schema["enum"] = list(option["choices"])
        pattern = _pattern(name, option)
        if pattern:
            schema["pattern"] = pattern
            if pattern == DNS_LABEL:
                schema["maxLength"] = 63
        if with_default and option.get("default") is not None:
            schema["default"] = self.camel_value(option, option["default"])
        return _allow_empty(schema)

    def _properties(self, schema, options, name=None):
        if not options:
            schema["maxProperties"] = MAX_PROPERTIES
            if name in STRING_MAPS:
                schema["additionalProperties"] = {"type": "string", "maxLength": STRING_MAPS[name]}
            else:
                schema["x-kubernetes-preserve-unknown-fields"] = True
            return
        schema["properties"] = dict((self.camel(sub), self._schema(sub, opt)) for sub, opt in options.items())
        required = sorted(self.camel(sub) for sub, opt in options.items() if opt.get("required"))
        if required:
            schema["required"] = required

    def spec_schema(self):
        properties = {}
        for name, option in self.options.items():
            if name in OPERATOR_ONLY:
                continue
            schema = self._schema(name, option, with_default=False)
            if name in self.defaults:
                schema["default"] = self.camel_value(option, self.defaults[name])
            properties[to_camel(name)] = _allow_empty(schema)
        return {"type": "object", "description": "The platform's desired state: every role variable of "
                "kfocp.kubeflow, in camelCase (sccGrantsExtra is the variable scc_grants_extra).",
                "properties": properties}

    # ------------------------------------------------------------ conversion

    def camel_value(self, option, value):
        """A variable's value with its sub-option keys in camelCase (for schema defaults)."""
        return self._convert(option, value, self.camel, lambda opts: dict((k, k) for k in opts))

    def snake_value(self, option, value):
        return self._convert(option, value, None,
                             lambda opts: dict((self.camel(k), k) for k in opts))

    def _convert(self, option, value, direction, key_map):
        options = option.get("options")
        if isinstance(value, list):
            return [self._convert(option, v, direction, key_map) for v in value]
        if isinstance(value, dict) and options:
            names = key_map(options)
            out = {}
            for key, sub in value.items():
                name = names.get(key)
                if name is None:  # not an option: convert the key the plain way
                    out[direction(key) if direction else to_snake(key)] = sub
                    continue
                out[direction(name) if direction else name] = self._convert(options[name], sub, direction, key_map)
            return out
        return value

    def key_map(self):
        """{field: variable or {"name": variable, "keys": {...}}} for every spec field: the names
        to_variables gives a CR's keys, as data for the playbooks under ansible-operator
        (plugins/module_utils/spec_keys.py). A sub-option is listed when the CR spells it
        otherwise than the role, or when it has sub-options of its own; every other key, and every
        key of a free-form mapping, stays as written."""
        def keys(options):
            out = {}
            for name, option in (options or {}).items():
                sub = keys(option.get("options"))
                if sub:
                    out[self.camel(name)] = {"name": name, "keys": sub}
                elif self.camel(name) != name:
                    out[self.camel(name)] = name
            return out

        out = {}
        for name, option in sorted(self.options.items()):
            if name in OPERATOR_ONLY:
                continue
            sub = keys(option.get("options"))
            out[to_camel(name)] = {"name": name, "keys": sub} if sub else name
        return out

    def to_variables(self, spec):
        """A CR spec (camelCase) -> role variables (snake_case); free-form mappings are kept as they are."""
        variables = {}
        for key, value in (spec or {}).items():
            name = self.by_camel.get(key)
            if name is None:
                variables[to_snake(key)] = value
            else:
                variables[name] = self.snake_value(self.options[name], value)
        return variables


# ------------------------------------------------------------ the CRD

def printer_columns():
    ready = '.status.conditions[?(@.type=="Ready")]'
    return [
        {"name": "Ready", "type": "string", "jsonPath": ready + ".status"},
        {"name": "Reason", "type": "string", "jsonPath": ready + ".reason"},
        {"name": "Changed", "type": "integer", "jsonPath": ".status.lastRun.changed",
         "description": "Tasks that changed something in the last playbook run"},
        {"name": "Failed", "type": "integer", "jsonPath": ".status.lastRun.failed", "priority": 1},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]


def status_schema():
    condition = {
        "type": "object", "required": ["type", "status"],
        "properties": {
            "type": {"type": "string", "enum": ["Ready", "Progressing", "Degraded"]},
            "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
            "reason": {"type": "string"},
            "message": {"type": "string"},
            "observedGeneration": {"type": "integer", "format": "int64"},
            "lastTransitionTime": {"type": "string", "format": "date-time"},
        },
    }
    counts = dict((key, {"type": "integer"}) for key in ("ok", "changed", "failed", "skipped", "unreachable"))
    component = {"type": "object", "properties": dict(counts, state={
        "type": "string", "enum": ["Ready", "Failed", "NotRun", "Removed"]}, message={"type": "string"})}
    last_run = {"type": "object", "properties": dict(counts, **{
        "playbook": {"type": "string"}, "result": {"type": "string", "enum": ["Succeeded", "Failed"]},
        "startedAt": {"type": "string", "format": "date-time"},
        "finishedAt": {"type": "string", "format": "date-time"},
        "durationSeconds": {"type": "number"}})}
    return {
        "type": "object",
        "description": "What the operator last did, written by it (the status subresource).",
        "properties": {
            "observedGeneration": {"type": "integer", "format": "int64"},
            "conditions": {"type": "array", "items": condition,
                           "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]},
            "components": {"type": "object", "additionalProperties": component,
                           "description": "State of each role of the last run, by role name."},
            "lastRun": last_run,
            "openshift": {"type": "object", "description": "The OpenShift version the roles were chosen for "
                                                           "(README \"Supported versions\"), and the versions of the "
                                                           "operators OLM had installed, by package.",
                          "properties": {"version": {"type": "string"},
                                         "operators": {"type": "object", "additionalProperties": {"type": "string"}}}},
        },
    }


def crd(model):
    schema = {"type": "object", "description": "A kfocp Kubeflow platform: one per cluster.",
              "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"},
                             "metadata": {"type": "object"}, "spec": model.spec_schema(),
                             "status": status_schema()}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "%s.%s" % (PLURAL, GROUP)},
        "spec": {
            "group": GROUP,
            "names": {"kind": KIND, "listKind": KIND + "List", "plural": PLURAL, "singular": KIND.lower(),
                      "shortNames": ["kf"], "categories": ["kfocp"]},
            "scope": "Namespaced",
            "versions": [{"name": VERSION, "served": True, "storage": True,
                          "additionalPrinterColumns": printer_columns(),
                          "subresources": {"status": {}},
                          "schema": {"openAPIV3Schema": schema}}],
        },
    }


HEADER = ("# Generated by operator/hack/gen_crd.py from roles/*/meta/argument_specs.yml and\n"
          "# roles/*/defaults/main.yml: do not edit; run `make operator-crd` after changing a role's variables.\n"
          "# %s, kind %s\n" % (API_VERSION, KIND))


def render(model):
    return HEADER + yaml.safe_dump(crd(model), sort_keys=True, default_flow_style=False, width=120)
