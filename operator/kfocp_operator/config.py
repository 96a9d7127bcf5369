"""Configuration precedence: the CR spec, then a ConfigMap, then environment variables.

Every setting is a role variable (or an operator option such as reconcile_period). In the CR it
is camelCase (sccGrantsExtra); in the ConfigMap a data key, snake_case or camelCase, whose value
is YAML; in the environment KFOCP_<NAME> (KFOCP_SCC_GRANTS_EXTRA), whose value is YAML too.
Pure functions.
"""
import re

import yaml

ENV_PREFIX = "KFOCP_"
DEFAULT_PERIOD = 30 * 60
# The shortest resync period: a full run costs seconds to minutes, and the fast path and the
# watches repair what changes in between.
MIN_PERIOD = 60
_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h)")
_SCALE = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}


class ConfigError(ValueError):
    pass


def _yaml(value, where):
    try:
        return yaml.safe_load(value)
    except yaml.YAMLError as err:
        raise ConfigError("%s: not valid YAML (%s)" % (where, str(err).splitlines()[0]))


def from_env(model, environ):
    """{variable: value} for every KFOCP_<VARIABLE> set in `environ`."""
    found = {}
    for name in model.options:
        variable = ENV_PREFIX + name.upper()
        if variable in environ:
            found[name] = _yaml(environ[variable], "environment variable %s" % variable)
    return found


def from_configmap(model, data):
    """({variable: value}, [ignored keys]) from a ConfigMap's data."""
    found, ignored = {}, []
    for key, value in (data or {}).items():
        name = key if key in model.options else model.by_camel.get(key)
        if name is None:
            ignored.append(key)
            continue
        parsed = _yaml(value, "ConfigMap key %s" % key)
        found[name] = model.snake_value(model.options[name], parsed) if key != name else parsed
    return found, sorted(ignored)


# The deepest nesting a CR value may have. The CRD cannot bound the depth of its free-form fields
# (objects passed on as they are, such as gpuNfdSpec); a value nested hundreds of levels deep
# would pass it and then break the playbook run's loading of its variables.
MAX_DEPTH = 64


def depth(value, limit=MAX_DEPTH + 1):
    """How deeply `value` nests (a scalar is 0), counted up to `limit`; iterative, so that no
    value is too deep to measure."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        if level >= limit:
            return deepest
        if isinstance(item, dict):
            stack.extend((v, level + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, level + 1) for v in item)
    return deepest


def nesting(spec):
    """Refuse a CR field nested more than MAX_DEPTH levels deep, naming it."""
    for key in sorted(spec or {}):
        if depth(spec[key]) > MAX_DEPTH:
            raise ConfigError("spec.%s: nested more than %d levels deep. Give a flatter value" % (key, MAX_DEPTH))


def host_fields(model, spec):
    """Refuse the CR fields that act on the operator's host (spec.OPERATOR_ONLY)."""
    from kfocp_operator.paramconv import to_snake
    from kfocp_operator.spec import OPERATOR_ONLY
    for key in sorted(spec or {}):
        name = model.by_camel.get(key) or to_snake(key)
        if name in OPERATOR_ONLY:
            raise ConfigError("spec.%s: %s on the operator's host, so only the operator's configuration may set it "
                              "(its ConfigMap key %s, or the environment variable %s%s). Remove it from the "
                              "Kubeflow CR" % (key, OPERATOR_ONLY[name], name, ENV_PREFIX, name.upper()))


def merge(model, spec, configmap_data=None, environ=None):
    """The variables for a run: environment < ConfigMap < CR spec. Returns (variables, ignored keys)."""
    host_fields(model, spec)
    nesting(spec)
    variables = from_env(model, environ or {})
    from_cm, ignored = from_configmap(model, configmap_data)
    variables.update(from_cm)
    variables.update(model.to_variables(spec or {}))
    return variables, ignored


def parse_duration(text):
    """'1h30m' -> 5400.0 seconds (Go duration syntax, as ansible-operator's reconcile period)."""
    text = str(text).strip()
    if text.isdigit():
        return float(text)
    pos, total = 0, 0.0
    for match in _DURATION.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _SCALE[match.group(2)]
        pos = match.end()
    if pos != len(text) or not text:
        raise ConfigError("%r is not a duration: use for example 90s, 10m or 1h30m" % text)
    return total


def reconcile_period(annotations, variables, default=DEFAULT_PERIOD):
    """Seconds between resyncs: the annotation ansible.sdk.operatorframework.io/reconcile-period, then the
    reconcile_period setting, then the default. 0 turns periodic resync off."""
    from kfocp_operator import RECONCILE_PERIOD_ANNOTATION
    value = (annotations or {}).get(RECONCILE_PERIOD_ANNOTATION)
    where = "the annotation %s" % RECONCILE_PERIOD_ANNOTATION
    if value is None:
        value, where = variables.get("reconcile_period"), "spec.reconcilePeriod"
    if value is None or value == "":
        return float(default)
    try:
        seconds = parse_duration(value)
    except ConfigError as err:
        raise ConfigError("%s: %s" % (where, err))
    if 0 < seconds < MIN_PERIOD:
        raise ConfigError("%s: %r is shorter than the minimum of %ds: give at least %ds, or 0 to turn periodic "
                          "resync off" % (where, value, MIN_PERIOD, MIN_PERIOD))
    return seconds
