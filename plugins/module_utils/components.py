# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The components role's install in one module run: render the managed components with kustomize,
adapt them for OpenShift, and apply them, so that an upstream-sized render (megabytes of JSON)
goes through none of Ansible's variables, and the connection to the API server and prune's reads
are made while kustomize renders."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading
import time

from ansible_collections.kfocp.kubeflow.plugins.module_utils import releases
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import manifests
from ansible_collections.kfocp.kubeflow.plugins.module_utils.kustomize import SourceError, build
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError


def render(client, check_mode=False, **params):
    """The definitions to apply (the adapted objects of every component) and the results to
    return beside the apply's: `assembled` (what components_assemble returns but the objects:
    the SCC grants and audit table, the mirror list), `source` and `counts`, as manifests_build
    returns them. A render that fails raises DefinitionError: nothing has been applied yet."""
    started = time.monotonic()
    try:
        rendered, info = build(params)
    except SourceError as err:
        raise DefinitionError(str(err))
    counts = dict((name, len(objs)) for name, objs in rendered.items())
    built = time.monotonic()
    assembled = manifests.assemble(rendered, params.get("adapt") or {})
    objects = injected_ca_bundles(assembled.pop("objects"))
    namespace = (params.get("adapt") or {}).get("namespace") or "kubeflow"
    # recorded where the components live: a selection with nothing in that namespace has no release there
    if params.get("release") and any((o.get("metadata") or {}).get("namespace") == namespace or
                                     (o.get("kind") == "Namespace" and o["metadata"].get("name") == namespace)
                                     for o in objects):
        objects.append(releases.record(params["release"], namespace, releases.RELEASES[params["release"]]["commit"]))
    timing = {"render": round(built - started, 3), "adapt": round(time.monotonic() - built, 3)}
    return objects, {"assembled": assembled, "source": info, "counts": counts, "timing": timing}


INJECT_CA_FROM = "cert-manager.io/inject-ca-from"


def injected_ca_bundles(objs):
    """The objects without the empty `clientConfig.caBundle` that upstream writes in webhooks whose
    configuration asks cert-manager's CA injector for it (annotation cert-manager.io/inject-ca-from):
    the injector writes that field, and kfocp applying "" would own it, so that its next apply after
    the injection stops on a field another manager owns (or, forced, removes the CA)."""
    out = []
    for obj in objs:
        if obj.get("kind") in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration") and \
                ((obj.get("metadata") or {}).get("annotations") or {}).get(INJECT_CA_FROM) and \
                any((hook.get("clientConfig") or {}).get("caBundle") == "" for hook in obj.get("webhooks") or []):
            obj = dict(obj, webhooks=[_without_empty_ca(hook) for hook in obj["webhooks"]])
        out.append(obj)
    return out


def _without_empty_ca(hook):
    if (hook.get("clientConfig") or {}).get("caBundle") != "":
        return hook
    return dict(hook, clientConfig=dict((k, v) for k, v in hook["clientConfig"].items() if k != "caBundle"))


class Render:
    """The render, started at once in a thread: kustomize runs while the caller sets up its API
    client and starts prune's reads. `build` (run_engine's build) waits for it and returns what
    `render` returns, or raises what it raised."""

    def __init__(self, params):
        self._params = params
        self._result = None
        self._error = None
        self._thread = threading.Thread(target=self._run, name="kfocp-render")
        self._thread.start()

    def _run(self):
        try:
            self._result = render(None, **self._params)
        except Exception as err:  # pylint: disable=broad-except  # raised again by build, in the caller
            self._error = err

    def build(self, client, check_mode=False, **params):
        step = upgrade_step(client, params)  # read while kustomize renders; refused before any change
        self._thread.join()
        if self._error is not None:
            raise self._error
        objects, extra = self._result
        if step:
            extra = dict(extra, upgrade=step)
        return objects, extra


def upgrade_step(client, params):
    """The upgrade from the release recorded in the components' namespace to params' release
    ("v1.10.2 -> v1.11.0"), or None; raises DefinitionError for one an upgrade cannot do."""
    wanted = params.get("release")
    if not wanted or client is None:
        return None
    namespace = (params.get("adapt") or {}).get("namespace") or "kubeflow"
    live = client.get(client.resource("v1", "ConfigMap"), releases.RECORD, namespace)
    return releases.check_upgrade(releases.installed(live), wanted)
