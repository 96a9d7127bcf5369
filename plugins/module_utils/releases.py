# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubeflow releases kfocp supports (kubeflow/manifests tags) and, per release, the kustomize
paths of each component, the remote bases those paths name, and the tag's commit: the components
role's catalog, in one place.

The role takes the release from `components_release`, or from `components_git_ref` when it is a
supported tag, and the catalog of that release unless `components_catalog` gives one. The install
records its release in a ConfigMap of the components' namespace (`record`), and the next install
reads it and refuses, before any change, what an in-place upgrade cannot do (`check_upgrade`).
README's "Supported versions" Kubeflow table is rendered from here (`table()`), and
tests/unit/test_releases.py opens every path of every release in that release's tree.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import require

# oldest first: an in-place upgrade goes from one to the next
SUPPORTED = ("v1.10.2", "v1.11.0", "26.03")
DEFAULT = "26.03"

ARGO = "https://github.com/argoproj/argo-workflows"

# The kustomize paths of the v1.10 layout, which v1.11.0 keeps: each component's directory as
# upstream's `example/kustomization.yaml` lists it (the Training Operator v1 overlay, which the
# example of v1.11.0 and 26.03 comments out for the Trainer, is still in both trees and kept).
_V1_10 = {
    "kubeflow-roles": ["common/kubeflow-roles/base"],
    "istio-resources": ["common/istio/kubeflow-istio-resources/base"],
    "pipelines": ["applications/pipeline/upstream/env/cert-manager/platform-agnostic-multi-user"],
    "notebooks": ["applications/jupyter/notebook-controller/upstream/overlays/kubeflow",
                  "applications/jupyter/jupyter-web-app/upstream/overlays/istio"],
    "katib": ["applications/katib/upstream/installs/katib-with-kubeflow"],
    "kserve": ["applications/kserve/kserve"],
    # KServe's models web app, the dashboard's /kserve-endpoints/ (its own component, as the other
    # web apps without a controller of their own: a site may run KServe without its UI)
    "kserve-models-web-app": ["applications/kserve/models-web-app/overlays/kubeflow"],
    "training-operator": ["applications/training-operator/upstream/overlays/kubeflow"],
    "central-dashboard": ["applications/centraldashboard/overlays/oauth2-proxy"],
    "volumes-web-app": ["applications/volumes-web-app/upstream/overlays/istio"],
    "tensorboards": ["applications/tensorboard/tensorboard-controller/upstream/overlays/kubeflow",
                     "applications/tensorboard/tensorboards-web-app/upstream/overlays/istio"],
    "profiles": ["applications/profiles/upstream/overlays/kubeflow"],
    "admission-webhook": ["applications/admission-webhook/upstream/overlays/cert-manager"],
}

# release -> its tag's commit, its date, each component's paths, and the remote bases (URL
# prefixes) those paths name, which kustomize fetches when online and an air-gapped site maps in
# components_remote_bases. 26.03's example installs Pipelines from `applications/pipeline/overlays`
# (upstream's multi-user install with a securityContext patch of its own).
RELEASES = {
    "v1.10.2": {"commit": "d8d643f1a736b28c525bd9b8ee5c9b2f4a661b39", "date": "2025-07-18",
                "catalog": _V1_10, "remote_bases": ()},
    "v1.11.0": {"commit": "854bd3a21044f767204def71b2dcda83e376891f", "date": "2025-12-15",
                "catalog": _V1_10, "remote_bases": (ARGO,)},
    "26.03": {"commit": "d68ebc7fab366ab40ddd1541d2ec22febb31bc83", "date": "2026-03-21",
              "catalog": dict(_V1_10, pipelines=["applications/pipeline/overlays"]), "remote_bases": (ARGO,)},
}

# The ConfigMap of the components' namespace that says which release is installed there.
RECORD = "kfocp-kubeflow-release"


def _supported():
    return ", ".join(SUPPORTED)


def release(source, git_ref=None, given=None, catalog=None):
    """The release whose catalog the role uses: `given` (components_release), else with a git
    source `git_ref` when it is a supported tag. None only when a catalog of the user's is given
    and the release is not known. Raises naming the field."""
    if given:
        require(given in RELEASES, "components_release", "%r is not a Kubeflow release kfocp supports" % (given,),
                "Use one of %s" % _supported())
        require(source != "git" or git_ref not in RELEASES or git_ref == given, "components_release",
                "is %s, but components_git_ref checks out %s" % (given, git_ref),
                "Give the same release in both, or leave components_release empty (the ref decides)")
        return given
    if source == "git":
        require(git_ref in RELEASES or catalog, "components_git_ref",
                "%r is not a Kubeflow release kfocp supports, so the components' paths are not known" % (git_ref,),
                "Check out one of %s, or name the release whose layout the ref has in components_release "
                "(or give components_catalog)" % _supported())
        return git_ref if git_ref in RELEASES else None
    require(catalog, "components_release",
            "is required with components_source: %s: the tree's release decides the components' paths" % (source,),
            "Give the release of the tree, one of %s (or give components_catalog)" % _supported())
    return None


def catalog(name, given=None):
    """The catalog to use: `given` (components_catalog) when not empty, else the release's."""
    if given:
        return given
    return dict((component, list(paths)) for component, paths in RELEASES[name]["catalog"].items())


def components(given, chosen_catalog):
    """components_components: `given` when not empty, else every component of the catalog managed."""
    if given:
        return given
    return dict((name, "managed") for name in chosen_catalog)


def plan(params):
    """The role's choice, from its variables ({source, git_ref, release, catalog, components}):
    {release, catalog, components}."""
    name = release(params.get("source"), params.get("git_ref"), params.get("release"), params.get("catalog"))
    chosen = catalog(name, params.get("catalog"))
    return {"release": name, "catalog": chosen, "components": components(params.get("components"), chosen)}


def record(name, namespace, commit=None):
    """The ConfigMap that records the release installed in `namespace`."""
    data = {"release": name}
    if commit:
        data["commit"] = commit
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": RECORD, "namespace": namespace},
            "data": data}


def installed(configmap):
    """The release a record says is installed, or None."""
    return ((configmap or {}).get("data") or {}).get("release") or None


def check_upgrade(installed_release, wanted, field="components_release"):
    """Refuse what an in-place upgrade cannot do, before any change: going back to an older
    release (the newer one's CRDs, stored objects and database schemas stay), and going past a
    release (kfocp upgrades one release at a time, each step as its test runs it). A record of a
    release kfocp does not know is refused too. Returns the step, e.g. "v1.10.2 -> v1.11.0"."""
    if not installed_release or not wanted or installed_release == wanted:
        return None
    require(installed_release in SUPPORTED, field,
            "the cluster has Kubeflow %s installed (ConfigMap %s), which kfocp does not know"
            % (installed_release, RECORD),
            "Upgrade with the kfocp release that installed it, or remove the components first (components_state: "
            "absent)")
    have, want = SUPPORTED.index(installed_release), SUPPORTED.index(wanted)
    require(want > have, field,
            "the cluster has Kubeflow %s installed; going back to %s is a downgrade, which an in-place upgrade "
            "cannot do (the newer release's CRDs, stored objects and database schemas stay)"
            % (installed_release, wanted),
            "Install %s (or a later release), or remove the components first (components_state: absent) and then "
            "install %s" % (installed_release, wanted))
    require(want == have + 1, field,
            "the cluster has Kubeflow %s installed; %s skips %s, and kfocp upgrades one release at a time"
            % (installed_release, wanted, ", ".join(SUPPORTED[have + 1:want])),
            "Install %s first, then %s" % (SUPPORTED[have + 1], wanted))
    return "%s -> %s" % (installed_release, wanted)


def table():
    """README's table: one row per supported Kubeflow release."""
    rows = ["| Kubeflow (kubeflow/manifests) | tag commit | released | remote bases of the catalog | default |",
            "|---|---|---|---|---|"]
    for name in SUPPORTED:
        entry = RELEASES[name]
        rows.append("| %s | %s | %s | %s | %s |" % (
            name, entry["commit"], entry["date"],
            ", ".join("`%s`" % url for url in entry["remote_bases"]) or "none", "yes" if name == DEFAULT else ""))
    return "\n".join(rows)
