"""Generate the OLM bundle (operator/bundle/) from operator/config, so that the two never drift.

    python operator/hack/gen_bundle.py           # write operator/bundle/
    python operator/hack/gen_bundle.py --check   # exit 1, naming the files, when they are stale

It renders `kubectl kustomize operator/config/default` and takes from it the CRDs (owned by the
CSV), the operator's ClusterRole and Role rules (clusterPermissions, permissions), the Deployment
(install strategy) and the Services (bundle manifests). The samples become alm-examples. The
version is galaxy.yml's; the CSV `replaces` the newest earlier release in changelogs/changelog.yaml.
"""
from __future__ import annotations

import argparse
import base64
import copy
import json
import subprocess
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
OPERATOR = HERE.parent
ROOT = OPERATOR.parent
BUNDLE = OPERATOR / "bundle"
PACKAGE = "kfocp-operator"
CHANNEL = "candidate"
SUGGESTED_NAMESPACE = "kfocp-system"
sys.path.insert(0, str(OPERATOR))

from kfocp_operator import collection  # noqa: E402

collection.importable()
from ansible_collections.kfocp.kubeflow.plugins.module_utils.versions import SUPPORTED  # noqa: E402


def kubernetes_minor(openshift: str) -> str:
    """The Kubernetes minor of an OpenShift 4 minor: 4.14 runs 1.27, 4.16 runs 1.29 (OpenShift 4.N
    rebases on Kubernetes 1.(N+13): openshift/kubernetes CHANGELOG/README.md per release-4.N
    branch, and operator-pipelines' OCP_TO_K8S table)."""
    major, minor = (int(part) for part in openshift.split("."))
    if major != 4 or minor < 3:  # 4.1 and 4.2 ran 1.13 and 1.14
        raise ValueError(f"OpenShift {openshift}: only OpenShift 4 minors have a known Kubernetes version")
    return f"1.{minor + 13}"


# The oldest OpenShift kfocp supports decides the oldest Kubernetes OLM may install on (OLM leaves
# a CSV whose minKubeVersion is above the server's version Pending), and the catalog annotation
# says the same range in OpenShift versions (operator-pipelines check_api_version_constraints).
MIN_KUBE_VERSION = kubernetes_minor(SUPPORTED[0]) + ".0"
OPENSHIFT_VERSIONS = f"v{SUPPORTED[0]}-v{SUPPORTED[-1]}"
# OLM gives every namespace's admin and edit roles full and write rights on each owned CRD,
# whatever the install mode (operator-lifecycle-manager pkg/controller/operators/olm/
# operatorgroup.go ensureClusterRolesForCSV: ClusterRoles <crd>-<version>-admin/-edit/-view
# labelled rbac.authorization.k8s.io/aggregate-to-<suffix>). So any project editor can create a
# Kubeflow in their project. The operator acts only on the one in its own namespace, where only
# the platform's owners may write; OwnNamespace is then the one install mode that means what it
# says (a target namespace other than its own would have nothing acted on).
INSTALL_MODES = ("OwnNamespace",)

ICON_SVG = (b'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 64 64"><rect width="64" height="64" rx="12" '
            b'fill="#1f4e79"/><path d="M16 48V16h8v13l12-13h10L33 30l14 18H37L27 35l-3 3v10z" fill="#fff"/></svg>')

DESCRIPTION = """\
kfocp turns an OpenShift cluster into a secure, multi-tenant, GPU-ready Kubeflow platform, and
keeps it that way.

Create one `Kubeflow` resource: the operator runs the kfocp.kubeflow Ansible collection's
`site.yml` playbook with the resource's spec as the roles' variables, and runs it again when the
spec changes and periodically to correct drift. New users and profile namespaces get their
profiles and per-namespace policies within about a second, without a playbook run. Deleting the
resource removes everything the operator created, and nothing else.

Everything the operator creates is labelled `app.kubernetes.io/managed-by=kfocp`; it never
deletes or overwrites objects it did not create.
"""


class BundleError(RuntimeError):
    pass


def kubectl() -> str:
    sys.path.insert(0, str(ROOT / "hack"))
    from cluster import build  # noqa: E402  (the control plane's kubectl, built from its Go module)
    return str(build()["kubectl"])


def render(kubectl_bin: str, target: Path) -> list[dict]:
    proc = subprocess.run([kubectl_bin, "kustomize", str(target)], capture_output=True, text=True, check=False)
    if proc.returncode:
        raise BundleError(f"kubectl kustomize {target} failed: {proc.stderr.strip()}")
    return [doc for doc in yaml.safe_load_all(proc.stdout) if doc]


def version() -> str:
    return str(yaml.safe_load((ROOT / "galaxy.yml").read_text())["version"])


def _semver(text: str) -> tuple:
    core = text.split("-", 1)[0].split("+", 1)[0]
    return tuple(int(part) for part in core.split("."))


def previous_release(current: str, changelog: Path | None = None) -> str | None:
    """The newest release in the changelog older than `current`, or None for the first release."""
    changelog = changelog or ROOT / "changelogs" / "changelog.yaml"
    releases = (yaml.safe_load(changelog.read_text()) or {}).get("releases") or {} if changelog.exists() else {}
    older = sorted((str(r) for r in releases if _semver(str(r)) < _semver(current)), key=_semver)
    return older[-1] if older else None


def csv_name(ver: str) -> str:
    return f"{PACKAGE}.v{ver}"


def _of(objs: list[dict], kind: str) -> list[dict]:
    return [o for o in objs if o.get("kind") == kind]


def _strip_namespace(obj: dict) -> dict:
    obj = copy.deepcopy(obj)
    obj.get("metadata", {}).pop("namespace", None)
    return obj


def permissions(objs: list[dict], kind: str, binding_kind: str) -> list[dict]:
    """[{serviceAccountName, rules}] for every (Cluster)Role bound to a ServiceAccount."""
    roles = dict((r["metadata"]["name"], r) for r in _of(objs, kind))
    out = {}
    for binding in _of(objs, binding_kind):
        ref = binding["roleRef"]
        if ref.get("kind") != kind or ref["name"] not in roles:
            raise BundleError(f"{binding_kind} {binding['metadata']['name']}: binds {ref.get('kind')} {ref['name']}, "
                              f"which operator/config does not define")
        for subject in binding.get("subjects") or []:
            if subject.get("kind") == "ServiceAccount":
                out.setdefault(subject["name"], []).extend(copy.deepcopy(roles[ref["name"]].get("rules") or []))
    return [{"serviceAccountName": sa, "rules": rules} for sa, rules in out.items()]


def deployments(objs: list[dict]) -> list[dict]:
    # WATCH_NAMESPACE stays as operator/config sets it (empty: every namespace), not OLM's
    # olm.targetNamespaces: the operator acts only on the Kubeflow in its own namespace (the one
    # install mode, OwnNamespace) and tells any other, which a project editor may have made, why
    # not, in its status. That needs the other namespaces' Kubeflows in its watch.
    out = []
    for dep in _of(objs, "Deployment"):
        spec = copy.deepcopy(dep["spec"])
        out.append({"name": dep["metadata"]["name"], "label": dict(dep["metadata"].get("labels") or {}),
                    "spec": spec})
    if len(out) != 1:
        raise BundleError(f"operator/config/default renders {len(out)} Deployments; the bundle needs exactly one")
    return out


def owned_crds(crds: list[dict]) -> list[dict]:
    owned = []
    for crd in crds:
        names = crd["spec"]["names"]
        for ver in crd["spec"]["versions"]:
            if not ver.get("served"):
                continue
            schema = (ver.get("schema") or {}).get("openAPIV3Schema") or {}
            owned.append({
                "name": crd["metadata"]["name"], "version": ver["name"], "kind": names["kind"],
                "displayName": names["kind"],
                "description": schema.get("description") or f"A {names['kind']} resource.",
                "statusDescriptors": [
                    {"path": "conditions", "displayName": "Conditions",
                     "description": "Ready, Progressing and Degraded, with reasons and messages.",
                     "x-descriptors": ["urn:alm:descriptor:io.kubernetes.conditions"]},
                    {"path": "observedGeneration", "displayName": "Observed generation",
                     "description": "The generation of the spec that the last run applied."},
                ] if "status" in (schema.get("properties") or {}) else [],
            })
    return owned


def alm_examples(samples: list[dict]) -> str:
    return json.dumps([_strip_namespace(s) for s in samples], indent=2, sort_keys=True)


def cluster_service_version(objs: list[dict], samples: list[dict], ver: str, image: str) -> dict:
    crds = _of(objs, "CustomResourceDefinition")
    galaxy = yaml.safe_load((ROOT / "galaxy.yml").read_text())
    csv = {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": csv_name(ver),
            "namespace": "placeholder",
            "annotations": {
                "alm-examples": alm_examples(samples),
                "capabilities": "Full Lifecycle",
                "categories": "AI/Machine Learning",
                "containerImage": image,
                "description": galaxy["description"],
                "operatorframework.io/suggested-namespace": SUGGESTED_NAMESPACE,
                "operators.operatorframework.io/operator-type": "standalone",
                "repository": galaxy["repository"],
                "support": "kfocp contributors",
                "features.operators.openshift.io/disconnected": "false",
                "features.operators.openshift.io/fips-compliant": "false",
                "features.operators.openshift.io/proxy-aware": "true",
                "features.operators.openshift.io/tls-profiles": "false",
                "features.operators.openshift.io/token-auth-aws": "false",
                "features.operators.openshift.io/token-auth-azure": "false",
                "features.operators.openshift.io/token-auth-gcp": "false",
            },
            "labels": {"operatorframework.io/arch.amd64": "supported", "operatorframework.io/os.linux": "supported"},
        },
        "spec": {
            "displayName": "kfocp Kubeflow",
            "description": DESCRIPTION,
            "version": ver,
            "maturity": "alpha",
            "minKubeVersion": MIN_KUBE_VERSION,
            "provider": {"name": "kfocp contributors", "url": galaxy["repository"]},
            "maintainers": [{"name": "kfocp contributors", "email": "kfocp@users.noreply.github.com"}],
            "links": [{"name": "Source", "url": galaxy["repository"]},
                      {"name": "Documentation", "url": galaxy["documentation"]}],
            "keywords": list(galaxy.get("tags") or []),
            "icon": [{"base64data": base64.b64encode(ICON_SVG).decode(), "mediatype": "image/svg+xml"}],
            # Only the operator's own namespace: see INSTALL_MODES.
            "installModes": [{"type": mode, "supported": mode in INSTALL_MODES} for mode in
                             ("OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces")],
            "customresourcedefinitions": {"owned": owned_crds(crds)},
            "install": {"strategy": "deployment", "spec": {
                "clusterPermissions": permissions(objs, "ClusterRole", "ClusterRoleBinding"),
                "permissions": permissions(objs, "Role", "RoleBinding"),
                "deployments": deployments(objs),
            }},
            "relatedImages": [{"name": "operator", "image": image}],
        },
    }
    if not csv["spec"]["install"]["spec"]["permissions"]:
        del csv["spec"]["install"]["spec"]["permissions"]
    previous = previous_release(ver)
    if previous:
        csv["spec"]["replaces"] = csv_name(previous)
    return csv


def annotations() -> dict:
    return {"annotations": {
        "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
        "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
        "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
        "operators.operatorframework.io.bundle.package.v1": PACKAGE,
        "operators.operatorframework.io.bundle.channels.v1": CHANNEL,
        "operators.operatorframework.io.bundle.channel.default.v1": CHANNEL,
        "com.redhat.openshift.versions": OPENSHIFT_VERSIONS,
    }}


def dockerfile() -> str:
    labels = "".join(f"LABEL {key}={value}\n" for key, value in annotations()["annotations"].items())
    return ("# The OLM bundle image; generated by operator/hack/gen_bundle.py from operator/config.\n"
            "# Build from operator/bundle:  podman build -f bundle.Dockerfile -t kfocp-operator-bundle .\n"
            "FROM scratch\n\n" + labels + "\nCOPY manifests /manifests/\nCOPY metadata /metadata/\n")


class _Dumper(yaml.SafeDumper):
    """Multi-line strings as literal blocks, so the CSV reads as it is written."""


def _str(dumper, value):
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str)


def _dump(obj) -> str:
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, width=120, default_flow_style=False)


def files(kubectl_bin: str) -> dict[str, str]:
    """{path under operator/bundle: content}."""
    objs = render(kubectl_bin, OPERATOR / "config" / "default")
    samples = render(kubectl_bin, OPERATOR / "config" / "samples")
    ver = version()
    deps = _of(objs, "Deployment")
    image = deps[0]["spec"]["template"]["spec"]["containers"][0]["image"] if deps else ""
    header = "# Generated by operator/hack/gen_bundle.py from operator/config: do not edit.\n"
    out = {f"manifests/{PACKAGE}.clusterserviceversion.yaml":
           header + _dump(cluster_service_version(objs, samples, ver, image))}
    for crd in _of(objs, "CustomResourceDefinition"):
        out[f"manifests/{crd['metadata']['name']}.yaml"] = header + _dump(crd)
    for svc in _of(objs, "Service"):
        out[f"manifests/{svc['metadata']['name']}_v1_service.yaml"] = header + _dump(_strip_namespace(svc))
    out["metadata/annotations.yaml"] = header + _dump(annotations())
    out["bundle.Dockerfile"] = dockerfile()
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 when operator/bundle is stale")
    parser.add_argument("--kubectl", help="kubectl to render with (default: the local control plane's)")
    parser.add_argument("--out", default=str(BUNDLE), help="bundle directory (default %(default)s)")
    args = parser.parse_args(argv)
    try:
        wanted = files(args.kubectl or kubectl())
    except (BundleError, OSError, KeyError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    out = Path(args.out)
    stale = sorted(p for p, text in wanted.items() if not (out / p).exists() or (out / p).read_text() != text)
    extra = sorted(str(p.relative_to(out)) for p in (out / "manifests").glob("*") if str(p.relative_to(out))
                   not in wanted) if (out / "manifests").exists() else []
    if args.check:
        if stale or extra:
            print("operator/bundle is out of date with operator/config: " + ", ".join(stale + extra)
                  + ". fix: python operator/hack/gen_bundle.py", file=sys.stderr)
            return 1
        return 0
    for path in extra:
        (out / path).unlink()
    for path, text in wanted.items():
        (out / path).parent.mkdir(parents=True, exist_ok=True)
        (out / path).write_text(text)
    print(f"wrote {len(wanted)} files to {out}" + (f", removed {', '.join(extra)}" if extra else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
