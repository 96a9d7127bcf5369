# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runs the apply engine for a module: decides the operation from the options and turns every
failure into a message, never a traceback."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64

from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client, KubeError
from ansible_collections.kfocp.kubeflow.plugins.module_utils.engine import ApplyError, Engine
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError


def redacted_forms(values):
    """Each secret value as it may appear in a result: as it is, and base64-encoded."""
    forms = set()
    for value in values or ():
        if value:
            forms.add(value)
            forms.add(base64.b64encode(value.encode("utf-8")).decode("ascii"))
    return forms


def engine_from(params, auth, check_mode=False, diff=False):
    client = Client.from_params(auth, pool_size=params.get("concurrency") or 32)
    return Engine(client, instance=params.get("instance") or "kfocp", set_name=params.get("set"),
                  field_manager=params.get("field_manager") or "kfocp", force=params.get("force", False),
                  adopt=params.get("adopt", False), check_mode=check_mode, diff=diff,
                  concurrency=params.get("concurrency") or 32, wait_timeout=params.get("wait_timeout") or 120)


def run_engine(params, auth, check_mode=False, diff=False, build=None):
    """Return (module result, error message or None).

    build(client, **params), when given, returns the definitions and extra results of a run
    with state present (module_utils/tenancy.py); otherwise the definitions are params'."""
    out, error = _run(params, auth, check_mode, diff, build)
    # The result echoes the options, as every module's does, but not the definitions: thousands of
    # objects sent back to the controller and kept in registered variables, for nothing.
    echoed = dict((key, value) for key, value in params.items() if key != "redact")
    if "definitions" in params:
        echoed["definitions"] = "%d object(s), not echoed" % len(params.get("definitions") or [])
    if "settings" in params:  # a builder's settings hold the declared profiles, thousands of them
        echoed["settings"] = "%d setting(s), not echoed" % len(params.get("settings") or {})
    out["invocation"] = {"module_args": echoed}
    return out, error


def _run(params, auth, check_mode, diff, build):
    report = params.get("report") or "changed"
    extra = {}
    try:
        engine = engine_from(params, auth, check_mode, diff)
        if params.get("state", "present") == "absent":
            if params.get("definitions"):
                result = engine.delete(params["definitions"], wait=params.get("wait", False))
            else:
                result = engine.delete_all(params.get("set"), wait=params.get("wait", False))
        else:
            definitions = params.get("definitions") or []
            if build is not None:
                definitions, extra = build(engine.client, check_mode=check_mode, **params)
            result = engine.apply(definitions, prune=params.get("prune", False))
        return dict(result.as_dict(report), **extra), None
    except ApplyError as err:
        out = err.result.as_dict(report) if err.result is not None else {"changed": False}
        return dict(out, **extra), str(err)
    except (DefinitionError, KubeError) as err:
        return {"changed": False}, str(err)
