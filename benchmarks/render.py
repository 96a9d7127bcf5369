"""The render case: an upstream-sized kustomize render (hundreds of objects, dozens of CRDs with
schemas of real size, admission webhooks), applied end to end, each on a fresh control plane, by

- the components role (playbooks/components.yml, the tree as a local-directory component: a
  `components_catalog` entry, name -> path, that is `managed` in `components_components`);
- `kubectl kustomize` on the tree, then `kubectl apply --server-side`, phase by phase as its users
  do: the CRDs, `kubectl wait` until they are Established, the namespaces, the rest, the webhook
  configurations last;
- the Go limit client (benchmarks/limit), in the same phases, the CRDs waited for with a watch:
  what the API server itself takes, its own CRD establishment included.

The generated tree (`generate`) is like kubeflow/manifests' `example`, at one of two weights
(WEIGHTS):

- real: what `example` renders: 683 objects, 5.7 MB of JSON; 74 CRDs holding 5.0 MB (four of
  360 to 446 KB, the others 20 to 100 KB, every fifth serving two versions), 108 ClusterRoles,
  54 ClusterRoleBindings, 50 ConfigMaps, 49 Deployments, 17 validating and 6 mutating webhook
  configurations, and ServiceAccounts, Roles, RoleBindings, Services, network policies,
  disruption budgets and custom resources;
- light: the first, lighter tree: 638 objects, 1.9 MB; 70 CRDs of about 15 KB of schema each,
  40 objects of each of ten kinds, 20 webhook configurations.

The CRDs' schemas are nested properties with descriptions, as upstream CRDs are, grown to each
CRD's size. The webhooks block nothing: their failurePolicy is Ignore and their namespace and
object selectors match a label no object has.

Beside them, upstream's own tree (UPSTREAM_TREES): kubeflow/manifests 26.03 as tagged
(../shared/upstream/kubeflow-manifests-26.03.tar.gz), its remote bases from their local copies
the air-gapped way (components_remote_bases), the components of the release's catalog
(plugins/module_utils/releases.py, where the role takes it):

- upstream-26.03: every component of the catalog, as the role installs the release by default;
- upstream-26.03-quick: a few of them (make bench QUICK=1).

The tree is unpacked before anything is timed. The role is given it as a local directory with the
release and the remote bases' copies (it copies the tree to point the remote bases at them, inside
its time); kubectl renders each of the components' paths of a copy whose remote bases point at the
copies already, and the Namespace its objects go in (upstream's common/kubeflow-namespace, which
the role makes itself), then applies them phase by phase with --force-conflicts, as upstream's
README does; the Go limit applies the same objects. What the cluster provides beside Kubeflow
(cert-manager's CRDs and the mesh's, from the release's own render) is installed on each control
plane first, not timed. Where ../shared/upstream is absent the upstream trees are skipped, saying so.

    python benchmarks/render.py --methods kubectl,limit-go,role [--weights upstream-26.03,real,light] [--component render-bench]
"""
import argparse
import gzip
import json
import os
import subprocess
import tarfile
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "benchmarks", ROOT / "hack", ROOT / "tests", ROOT / ".cache" / "collections"):
    if str(_path) not in sys.path:
        sys.path.append(str(_path))

import cluster  # noqa: E402
from cluster import ControlPlane  # noqa: E402
import limit  # noqa: E402
import timing  # noqa: E402
from helpers import ansible_env  # noqa: E402

KB = 1000
# The kinds of the components' objects, in the order they are written.
KINDS = ("ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "ConfigMap", "Service",
         "Deployment", "NetworkPolicy", "PodDisruptionBudget")
# Each weight of the tree: how many objects of each kind, and how large the CRDs are. `crd_kb`:
# the CRDs' sizes in KB of JSON, `large` ones spread among the others, which go from `low` to
# `high`, most of them near `low` (the larger `skew`, the more); None: every CRD of the light
# tree's one shape. Every `two_versions`-th CRD serves two versions. `config_kb`: each ConfigMap's
# data.
WEIGHTS = {
    "real": {"crds": 74, "crd_kb": {"large": (446, 420, 390, 360), "low": 20, "high": 100, "skew": 1.8},
             "two_versions": 5, "namespaces": 10, "custom": 84, "validating": 17, "mutating": 6, "config_kb": 10,
             "kinds": {"ServiceAccount": 66, "Role": 34, "RoleBinding": 36, "ClusterRole": 108,
                       "ClusterRoleBinding": 54, "ConfigMap": 50, "Service": 64, "Deployment": 49,
                       "NetworkPolicy": 22, "PodDisruptionBudget": 9}},
    "light": {"crds": 70, "crd_kb": None, "two_versions": 3, "namespaces": 8, "custom": 140, "validating": 10,
              "mutating": 10, "config_kb": 0, "kinds": dict.fromkeys(KINDS, 40)},
}
# upstream's trees, as their projects publish them (../shared/upstream/README.md)
UPSTREAM = ROOT.parent / "shared" / "upstream"
# the remote bases the trees name: {URL prefix: the local copy's archive in UPSTREAM}
LOCAL_BASES = {"https://github.com/argoproj/argo-workflows": "argo-workflows-v3.7.3-manifests.tar.gz"}
# Each upstream tree: the release (its tarball and its catalog), and the components of the
# catalog to install (None: every one, as the role does by default).
UPSTREAM_TREES = {
    "upstream-26.03": {"release": "26.03", "components": None},
    "upstream-26.03-quick": {"release": "26.03",
                             "components": ("kubeflow-roles", "profiles", "central-dashboard", "notebooks",
                                            "admission-webhook")},
}
# the weights run by default (make bench) and in make bench QUICK=1, in order
DEFAULT_WEIGHTS = ("upstream-26.03", "real", "light")
QUICK_WEIGHTS = ("upstream-26.03-quick", "real", "light")
KNOWN = tuple(UPSTREAM_TREES) + tuple(WEIGHTS)
NEVER = {"bench.kfocp.io/never-matches": "true"}
METHODS = ("kubectl", "limit-go", "role")
LABELS = {"kubectl": "kubectl kustomize, then apply --server-side, phase by phase",
          "limit-go": "Go limit client, same phases (from the objects)",
          "role": "components role (playbooks/components.yml)"}
COMPONENT = "render-bench"
# the one task that renders (kubectl kustomize), adapts and applies (manifests_apply)
APPLY_TASK = "kfocp.kubeflow.components : Render, adapt and apply the components"
TARGET = 3.0  # the role at least this many times faster than kubectl, kustomize's render counted for both
GO_TARGET = 1.3  # the role within this many times the Go limit's time
DESCRIPTION = ("%s configures part %d of the resource. It is defaulted by the controller when unset and "
               "validated on admission; see the project's documentation for the values it accepts.")


def _schema(seed, depth=3, breadth=7):
    """A nested openAPIV3Schema object of some size, like an upstream CRD's (about 15 KB of JSON at the top
    at depth 3 and breadth 7; at breadth 8 each level doubles it)."""
    props = {}
    for i in range(breadth):
        name = "field%s%d" % ("abcdefghij"[(seed + i) % 10], i)
        desc = DESCRIPTION % (name, i)
        kind = (seed + i) % 4
        if depth > 0 and kind == 0:
            props[name] = dict(_schema(seed + i + 1, depth - 1, breadth), description=desc)
        elif kind == 1:
            props[name] = {"type": "array", "description": desc, "items": {"type": "string"}}
        elif kind == 2:
            props[name] = {"type": "integer", "format": "int32", "description": desc, "minimum": 0}
        else:
            props[name] = {"type": "string", "description": desc, "enum": ["Always", "IfNotPresent", "Never"]}
    return {"type": "object", "properties": props}


def _section(seed, depth):
    return dict(_schema(seed, depth, 8), description=DESCRIPTION % ("section", seed))


def _spec_schema(seed, budget):
    """A spec schema of at most `budget` bytes of JSON, within a few hundred bytes of it: sections
    of nested properties, the deepest that fits first, then shallower ones in what is left, then
    single fields."""
    deepest = 0
    while len(json.dumps(_section(seed, deepest + 1))) <= budget:
        deepest += 1
    props, size = {}, len(json.dumps({"type": "object", "description": "The desired state.", "properties": {}}))
    for depth in range(deepest, -1, -1):
        while True:
            name = "section%02d" % len(props)
            section = _section(seed + len(props), depth)
            grown = size + len(json.dumps(name)) + len(json.dumps(section)) + 4  # '"name": {...}, '
            if grown > budget:
                break
            props[name], size = section, grown
    while True:
        name = "option%02d" % len(props)
        field = {"type": "string", "description": DESCRIPTION % (name, len(props))}
        grown = size + len(json.dumps(name)) + len(json.dumps(field)) + 4
        if grown > budget:
            break
        props[name], size = field, grown
    return {"type": "object", "description": "The desired state.", "properties": props}


def crd_sizes(weight):
    """Each CRD's size in bytes of JSON (None for the light tree's one shape), in the CRDs' order."""
    spec, count = weight["crd_kb"], weight["crds"]
    if not spec:
        return [None] * count
    rest = count - len(spec["large"])
    sizes = [int(KB * (spec["low"] + (spec["high"] - spec["low"]) * (k / (rest - 1)) ** spec["skew"]))
             for k in range(rest)]
    step = count // len(spec["large"])
    for k, large in enumerate(spec["large"]):
        sizes.insert(k * step, large * KB)
    return sizes


def _crd(i, weight, size=None):
    """The i-th CRD: of the light tree's shape, or of `size` bytes of JSON (within a few KB)."""
    group = "g%02d.bench.kfocp.io" % (i // 5)
    kind = "Thing%02d" % i
    plural = kind.lower() + "s"
    schema = {"openAPIV3Schema": {"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": dict(_schema(i, 3, 7), description="The desired state."),
        "status": dict(_schema(i + 3, 2, 6), **{"x-kubernetes-preserve-unknown-fields": True})}}}
    versions = [{"name": "v1", "served": True, "storage": True, "schema": schema,
                 "subresources": {"status": {}},
                 "additionalPrinterColumns": [{"name": "Age", "type": "date",
                                               "jsonPath": ".metadata.creationTimestamp"}]}]
    if i % weight["two_versions"] == 0:
        versions.append({"name": "v1beta1", "served": True, "storage": False, "schema": schema})
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "%s.%s" % (plural, group)},
           "spec": {"group": group, "scope": "Namespaced", "versions": versions,
                    "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": kind + "List"}}}
    if size:
        # the versions share one schema: each holds its spec schema once
        props = schema["openAPIV3Schema"]["properties"]
        props["spec"] = {}
        budget = (size - len(json.dumps(crd))) // len(versions)
        props["spec"] = _spec_schema(i, budget)
    return crd


def _webhook(i, mutating, groups):
    kind = "MutatingWebhookConfiguration" if mutating else "ValidatingWebhookConfiguration"
    hook = {"name": "w%02d.bench.kfocp.io" % i, "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "failurePolicy": "Ignore", "timeoutSeconds": 5,
            "namespaceSelector": {"matchLabels": NEVER}, "objectSelector": {"matchLabels": NEVER},
            "clientConfig": {"service": {"name": "bench-webhook", "namespace": "bench-ns-0", "path": "/hook%d" % i}},
            "rules": [{"apiGroups": ["g%02d.bench.kfocp.io" % (i % groups)], "apiVersions": ["*"],
                       "operations": ["CREATE", "UPDATE"], "resources": ["*"]}]}
    if mutating:
        hook["reinvocationPolicy"] = "Never"
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": "bench-%s-%02d" % ("mutating" if mutating else "validating", i)},
            "webhooks": [hook]}


def _config(name, kb):
    """A ConfigMap's config.yaml: a few settings, and lines of features up to `kb` KB."""
    doc = {"component": name, "replicas": 1, "features": list(range(20))}
    text = yaml.safe_dump(doc)
    line = 0
    while len(text) < kb * KB:
        text += "feature-%03d: enabled by default since the component's first release; see its documentation\n" % line
        line += 1
    return text


def _component_object(kind, i, weight):
    """The i-th object of `kind`: component i's, in namespace i modulo the weight's namespaces."""
    ns = "bench-ns-%d" % (i % weight["namespaces"])
    name = "comp-%03d" % i
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "bench"}
    group = "g%02d.bench.kfocp.io" % (i % ((weight["crds"] + 4) // 5))

    def meta(kind_name, namespaced=True):
        doc = {"name": kind_name, "labels": dict(labels)}
        if namespaced:
            doc["namespace"] = ns
        return doc
    rules = [{"apiGroups": ["", "apps"], "resources": ["pods", "deployments", "configmaps"],
              "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
             {"apiGroups": [group], "resources": ["*"], "verbs": ["*"]}]
    subjects = [{"kind": "ServiceAccount", "name": name, "namespace": ns}]
    rbac = "rbac.authorization.k8s.io/v1"
    if kind == "ServiceAccount":
        return {"apiVersion": "v1", "kind": kind, "metadata": meta(name)}
    if kind in ("Role", "ClusterRole"):
        return {"apiVersion": rbac, "kind": kind, "rules": rules,
                "metadata": meta(name) if kind == "Role" else meta("bench-" + name, False)}
    if kind == "RoleBinding":
        return {"apiVersion": rbac, "kind": kind, "metadata": meta(name), "subjects": subjects,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name}}
    if kind == "ClusterRoleBinding":
        return {"apiVersion": rbac, "kind": kind, "metadata": meta("bench-" + name, False), "subjects": subjects,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "bench-" + name}}
    if kind == "ConfigMap":
        return {"apiVersion": "v1", "kind": kind, "metadata": meta(name + "-config"),
                "data": {"config.yaml": _config(name, weight["config_kb"])}}
    if kind == "Service":
        return {"apiVersion": "v1", "kind": kind, "metadata": meta(name),
                "spec": {"selector": labels, "ports": [{"name": "https", "port": 443, "targetPort": 9443}]}}
    if kind == "Deployment":
        container = {"name": "manager", "image": "ghcr.io/kubeflow/%s:v1.10.0" % name,
                     "args": ["--metrics-bind-address=:8080", "--leader-elect"],
                     "ports": [{"containerPort": 8080, "name": "metrics"}, {"containerPort": 9443, "name": "webhook"}],
                     "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
                     "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                                         "capabilities": {"drop": ["ALL"]}},
                     "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8081}}}
        return {"apiVersion": "apps/v1", "kind": kind, "metadata": meta(name),
                "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
                    "metadata": {"labels": labels},
                    "spec": {"serviceAccountName": name, "containers": [container],
                             "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}}}}}
    if kind == "NetworkPolicy":
        return {"apiVersion": "networking.k8s.io/v1", "kind": kind, "metadata": meta(name),
                "spec": {"podSelector": {"matchLabels": labels}, "policyTypes": ["Ingress"],
                         "ingress": [{"ports": [{"port": 9443}]}]}}
    return {"apiVersion": "policy/v1", "kind": kind, "metadata": meta(name),
            "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}}}


def _custom(crd, j, namespaces):
    spec = crd["spec"]
    return {"apiVersion": "%s/v1" % spec["group"], "kind": spec["names"]["kind"],
            "metadata": {"name": "%s-%d" % (spec["names"]["singular"], j),
                         "namespace": "bench-ns-%d" % (j % namespaces)},
            "spec": {}}


def objects(weight="real"):
    """The render at `weight` (a name of WEIGHTS): every object, CRDs first (kustomize sorts by kind;
    appliers phase them)."""
    weight = WEIGHTS[weight]
    crds = [_crd(i, weight, size) for i, size in enumerate(crd_sizes(weight))]
    out = list(crds)
    out += [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench-ns-%d" % i}}
            for i in range(weight["namespaces"])]
    for kind in KINDS:
        out += [_component_object(kind, i, weight) for i in range(weight["kinds"].get(kind, 0))]
    # the custom resources, one of each CRD in turn
    out += [_custom(crds[k % len(crds)], k // len(crds), weight["namespaces"]) for k in range(weight["custom"])]
    groups = (weight["crds"] + 4) // 5
    out += [_webhook(i, False, groups) for i in range(weight["validating"])]
    out += [_webhook(i, True, groups) for i in range(weight["mutating"])]
    return out


def _dump(objs):
    return yaml.dump_all(objs, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False)


def generate(directory, weight="real"):
    """Write the tree: <directory>/bench/{kustomization.yaml,all.yaml}; return the objects."""
    objs = objects(weight)
    tree = Path(directory) / "bench"
    tree.mkdir(parents=True, exist_ok=True)
    (tree / "kustomization.yaml").write_text("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                                             "resources: [all.yaml]\n")
    (tree / "all.yaml").write_text(_dump(objs))
    return objs


def _kustomize(kubectl, path):
    out = subprocess.run([kubectl, "kustomize", str(path)], capture_output=True, text=True, check=False)
    if out.returncode:
        raise RuntimeError("kubectl kustomize %s failed: %s" % (path, out.stderr[-2000:]))
    return [o for o in yaml.load_all(out.stdout, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if o]


def upstream_absent():
    """Why the upstream trees cannot run here, or None."""
    if not UPSTREAM.is_dir():
        return "../shared/upstream (upstream's trees, %s) is absent" % UPSTREAM
    return None


def prepare_upstream(directory, name):
    """Unpack upstream's tree `name` (of UPSTREAM_TREES) and its remote bases' copies into
    `directory`, and render what each applier is given: {root, release, components, mirrors,
    paths (kubectl's, in the tree copy whose remote bases point at the copies), objs (theirs,
    each once), expected (the catalog's objects, which every applier must leave in the cluster)}."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import kustomize, releases  # noqa: E501 pylint: disable=import-outside-toplevel
    spec = UPSTREAM_TREES[name]
    directory = Path(directory)
    root = directory / "tree"
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(str(UPSTREAM / ("kubeflow-manifests-%s.tar.gz" % spec["release"]))) as archive:
        archive.extractall(str(root))
    mirrors = {}
    for url in releases.RELEASES[spec["release"]]["remote_bases"]:
        copy = directory / ("base-%d" % len(mirrors))
        copy.mkdir()
        with tarfile.open(str(UPSTREAM / LOCAL_BASES[url])) as archive:
            archive.extractall(str(copy))
        mirrors[url] = str(copy)
    catalog = releases.catalog(spec["release"])
    components = dict((c, catalog[c]) for c in (spec["components"] or sorted(catalog)))
    localised = kustomize.localise(str(root), components, mirrors, str(directory))
    paths = []
    for component in sorted(components):
        paths += [p for p in components[component] if p not in paths]
    kubectl = cluster.build()["kubectl"]
    objs, seen = [], set()
    for path in paths:
        for obj in _kustomize(kubectl, Path(localised) / path):
            key = (obj["apiVersion"].rpartition("/")[0], obj["kind"], obj["metadata"].get("namespace"),
                   obj["metadata"]["name"])
            if key not in seen:
                seen.add(key)
                objs.append(obj)
    expected = list(objs)
    # the namespaces the objects go in, as upstream's example makes them (the role makes its own)
    used = set(o["metadata"].get("namespace") for o in objs) - {None}
    namespaces = "common/kubeflow-namespace/base"
    made = [o for o in _kustomize(kubectl, Path(localised) / namespaces) if o["metadata"]["name"] in used]
    missing = used - set(o["metadata"]["name"] for o in made)
    if missing:
        raise RuntimeError("%s: objects in namespaces that no rendered Namespace makes: %s" % (name, sorted(missing)))
    return {"root": str(root), "release": spec["release"], "components": sorted(components), "mirrors": mirrors,
            "paths": [str(Path(localised) / p) for p in [namespaces] + paths], "objs": made + objs,
            "expected": expected}


def prerequisites(plane, release):
    """What the cluster provides beside Kubeflow, installed untimed before an upstream tree: the
    CRDs of cert-manager (OpenShift's cert-manager operator) and of the mesh that the control plane
    does not serve yet, from the release's own render, as tests/integration/test_components_releases.py
    installs them."""
    kubectl = [plane.state()["bins"]["kubectl"], "--kubeconfig=%s" % plane.kubeconfig]
    served = set(subprocess.run(kubectl + ["get", "crd", "-o", "name"], capture_output=True, text=True,
                                check=True).stdout.split())
    with gzip.open(str(UPSTREAM / ("example-render-%s.yaml.gz" % release)), "rt") as stream:
        render = [o for o in yaml.load_all(stream, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if o]
    crds = []
    for crd in render:
        if crd["kind"] != "CustomResourceDefinition":
            continue
        group = crd["spec"]["group"]
        if group.endswith("cert-manager.io") or (group.endswith("istio.io") and
                                                 "customresourcedefinition.apiextensions.k8s.io/%s"
                                                 % crd["metadata"]["name"] not in served):
            crd["metadata"].pop("labels", None)
            crds.append(crd)
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as handle:
        handle.write(_dump(crds))
        handle.flush()
        subprocess.run(kubectl + ["apply", "--server-side", "--field-manager=cluster-bootstrap", "--force-conflicts",
                                  "-f", handle.name], capture_output=True, text=True, check=True)
    subprocess.run(kubectl + ["wait", "--for=condition=Established", "--timeout=300s"] +
                   ["crd/%s" % c["metadata"]["name"] for c in crds], capture_output=True, text=True, check=True)


def phases(objs):
    """kubectl's phases: CRDs, namespaces, the rest, webhook configurations."""
    hooks = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
    return [("crds", [o for o in objs if o["kind"] == "CustomResourceDefinition"]),
            ("namespaces", [o for o in objs if o["kind"] == "Namespace"]),
            ("rest", [o for o in objs if o["kind"] not in hooks + ("CustomResourceDefinition", "Namespace")]),
            ("webhooks", [o for o in objs if o["kind"] in hooks])]


def by_kubectl(plane, objs, trees, workdir, force=False):
    """`kubectl kustomize` on each of `trees`, then kubectl apply --server-side (`force`: with
    --force-conflicts) phase by phase, with a fresh discovery cache: {phase: seconds}, the total
    from the render on."""
    env = dict(os.environ, KUBECACHEDIR=str(Path(workdir) / "kubectl-cache"))
    kubectl = plane.state()["bins"]["kubectl"]
    files = []
    for name, items in phases(objs):
        path = Path(workdir) / ("phase-%s.yaml" % name)
        path.write_text(_dump(items))
        files.append((name, items, path))

    def run(*args):
        while True:
            proc = subprocess.run([kubectl, "--kubeconfig=%s" % plane.kubeconfig, *args], env=env,
                                  capture_output=True, text=True, check=False)
            # kubectl wait stops on a CRD read before the API server gave it any condition: wait again
            if not (proc.returncode and args[0] == "wait" and "conditions accessor error" in proc.stderr
                    and time.monotonic() - started < 300):
                break
        if proc.returncode:
            raise RuntimeError("kubectl %s failed: %s" % (" ".join(args[:3]), proc.stderr[-2000:]))
    out, started = {}, time.monotonic()
    # kustomize's render, as `kustomize build | kubectl apply` starts; the phases' files hold its objects
    for tree in trees:
        run("kustomize", str(tree))
    out["kustomize_s"] = round(time.monotonic() - started, 2)
    for name, items, path in files:
        if not items:
            continue
        mark = time.monotonic()
        run("apply", "--server-side", "--field-manager=kubectl-bench", *(["--force-conflicts"] if force else []),
            "-f", str(path))
        out[name + "_s"] = round(time.monotonic() - mark, 2)
        if name == "crds":
            mark = time.monotonic()
            run("wait", "--for=condition=Established", "--timeout=300s",
                *["crd/%s" % o["metadata"]["name"] for o in items])
            out["established_s"] = round(time.monotonic() - mark, 2)
    out["total_s"] = round(time.monotonic() - started, 2)
    return out


def by_role(plane, tree_root, component, workdir, upstream=None):
    """playbooks/components.yml over the tree as one local-directory component, or over upstream's
    tree (`upstream`, from prepare_upstream) as a local directory of its release, its catalog's
    components (all, or those the tree names) and its remote bases from their copies; the SCC,
    sidecar and metadata-envoy transforms off, so that it writes the same objects as the others."""
    extra = {"kfocp_instance": "bench", "kfocp_kubeconfig": str(plane.kubeconfig),
             "components_source": "dir", "components_dir": str(tree_root),
             "components_catalog": {component: ["bench"]}, "components_components": {component: "managed"},
             "components_kubectl": plane.state()["bins"]["kubectl"],
             "components_sidecar_enabled": False, "components_scc_enabled": False,
             "components_metadata_envoy_enabled": False,
             # the module's result then reaches the timing callback: where its own seconds went
             "components_no_log": False}
    renders = [Path(tree_root) / "bench"]
    if upstream:
        extra.update(components_dir=upstream["root"], components_release=upstream["release"], components_catalog={},
                     components_components=dict.fromkeys(upstream["components"], "managed"),
                     components_remote_bases=upstream["mirrors"])
        renders = upstream["paths"][1:]  # the catalog's paths (the first is kubectl's namespace)
    extra_file = Path(workdir) / "render-extra.json"
    extra_file.write_text(json.dumps(extra))
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
           "-e", "ansible_python_interpreter=%s" % sys.executable, "-e", "@%s" % extra_file,
           str(ROOT / "playbooks" / "components.yml")]
    timing_file = Path(workdir) / "render-timing.json"
    # kustomize's own render of the tree, and the parsing of its output, each alone: the parts of
    # the module's render stage that no API server bounds
    kustomize_s = parse_s = 0.0
    for path in renders:
        mark = time.monotonic()
        rendered = subprocess.run([plane.state()["bins"]["kubectl"], "kustomize", str(path)],
                                  capture_output=True, text=True, check=True).stdout
        kustomize_s += time.monotonic() - mark
        mark = time.monotonic()
        list(yaml.load_all(rendered, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
        parse_s += time.monotonic() - mark
    env = ansible_env(None, timing.env(timing_file))
    started = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=ROOT)
    total = time.monotonic() - started
    if proc.returncode:
        msg = [line.strip() for line in proc.stdout.splitlines() if "msg" in line or "Supported parameters" in line]
        raise RuntimeError("components.yml failed: %s\n%s" % (" ".join(msg[-3:]), (proc.stdout + proc.stderr)[-3000:]))
    breakdown = timing.read(timing_file, total)
    row = {"total_s": round(total, 2), "breakdown": breakdown, "kustomize_s": round(kustomize_s, 2),
           "parse_s": round(parse_s, 2)}
    if breakdown:
        # the task that renders, adapts and applies (the API's work, kustomize's and the module's
        # start), and the rest: fixed costs
        tasks = dict(breakdown["tasks"])
        row["apply_s"] = round(sum(v for k, v in tasks.items() if k.startswith(APPLY_TASK)), 2)
        row["fixed_s"] = round(total - row["apply_s"], 2)
        # inside the task, as the module measured it: render (kustomize and parsing), adapt, apply
        row["module"] = next((v for k, v in (breakdown.get("stages") or {}).items() if k.startswith(APPLY_TASK)), {})
    return row


def missing(plane, objs):
    """Those of `objs` the API server does not have (one list per kind). A cluster-scoped object is
    matched by its name alone: kustomize's namespace transformer gives a namespace to objects of
    cluster-scoped custom kinds (upstream's ClusterStorageContainer, DecoratorController), which
    the API server drops."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client  # noqa: E501 pylint: disable=import-outside-toplevel
    client = Client.from_params({"kubeconfig": str(plane.kubeconfig)})
    present = set()
    for api_version, kind in sorted(set((o["apiVersion"], o["kind"]) for o in objs)):
        for item in client.list(client.resource(api_version, kind), metadata_only=True):
            present.add((api_version, kind, item["metadata"].get("namespace") or "", item["metadata"]["name"]))
    return [o for o in objs if not any((o["apiVersion"], o["kind"], ns, o["metadata"]["name"]) in present
                                       for ns in (o["metadata"].get("namespace") or "", ""))]


def measure(method, workdir, weight, objs, tree_root, component=COMPONENT, upstream=None):
    """One method over the tree of `weight` (its objects `objs`, written in `tree_root`; or
    upstream's tree, `upstream` from prepare_upstream) on a fresh control plane; its row, or the
    reason it could not run."""
    workdir = Path(workdir)
    plane = ControlPlane(workdir / ("render-%s-%s" % (weight, method)))
    expected = upstream["expected"] if upstream else objs
    row = {"method": method, "weight": weight, "objects": len(objs),
           "crds": sum(1 for o in objs if o["kind"] == "CustomResourceDefinition"),
           "mb": round(sum(len(json.dumps(o)) for o in objs) / KB / KB, 2)}
    try:
        plane.up()
        if upstream:
            prerequisites(plane, upstream["release"])
        if method == "kubectl":
            trees = upstream["paths"] if upstream else [Path(tree_root) / "bench"]
            row.update(by_kubectl(plane, objs, trees, workdir, force=bool(upstream)))
        elif method == "limit-go":
            figures = limit.go_apply_all(plane.kubeconfig, objs)
            row.update((k, round(v, 2)) for k, v in figures.items() if k != "objects")
        else:
            row.update(by_role(plane, tree_root, component, workdir, upstream))
        absent = missing(plane, expected)
        if absent:
            raise RuntimeError("%d of %d objects present after %s; absent: %s" % (
                len(expected) - len(absent), len(expected), method,
                ", ".join("%s %s/%s" % (o["kind"], o["metadata"].get("namespace") or "", o["metadata"]["name"])
                          for o in absent[:10])))
        row["load1"] = round(os.getloadavg()[0], 2)
    except (RuntimeError, subprocess.CalledProcessError) as err:
        row["error"] = str(err)[-1500:]
    finally:
        plane.destroy()
    return row


def run(workdir, methods=METHODS, component=COMPONENT, weights=DEFAULT_WEIGHTS):
    """Each method over the tree of each weight (a generated tree of WEIGHTS, or upstream's of
    UPSTREAM_TREES), in that order, each on a fresh control plane. An upstream tree where
    ../shared/upstream is absent gives each method a row that says so (`skipped`)."""
    rows = []
    for weight in weights:
        tree_root = Path(workdir) / ("render-tree-%s" % weight)
        upstream = None
        if weight in UPSTREAM_TREES:
            why = upstream_absent()
            if why:
                print("render case (%s) skipped: %s" % (weight, why), flush=True)
                rows += [{"method": m, "weight": weight, "skipped": why} for m in methods]
                continue
            upstream = prepare_upstream(tree_root, weight)
            objs = upstream["objs"]
        else:
            objs = generate(tree_root, weight)
        for method in methods:
            row = measure(method, workdir, weight, objs, tree_root, component, upstream)
            print(json.dumps(dict(("render_" + k if k == "method" else k, v) for k, v in row.items())), flush=True)
            rows.append(row)
    return rows


# ------------------------------------------------------------------ report

# Where a run's time goes, the same stages for every method (those it has).
STAGES = {"render": "render (kustomize)", "parse": "parse (YAML of the render)", "adapt": "adapt (transforms)",
          "ansible": "Ansible (start-up, other tasks, exit)",
          "transfer": "transfer through Ansible (module start, arguments, result)",
          "apply": "apply (requests)", "wait": "CRD wait (Established)", "webhooks": "webhooks phase"}
# the module's stages that are requests to the API server (the rest: render, adapt, wait)
REQUESTS = ("plan", "read", "compare and write", "prune")


def stages(row):
    """{stage of STAGES: seconds} of one run, for the stages its method has. The role's come from
    the module's own timing: its render stage, kustomize and the parsing of its output, is split
    as kustomize and the parsing took each alone; its webhooks phase is not apart from its other
    requests (in `apply`)."""
    if row["method"] == "role":
        inside = row.get("module") or {}
        if not inside:
            return {"render": row.get("kustomize_s", 0), "ansible": row.get("fixed_s", 0),
                    "apply": row.get("apply_s", row["total_s"]) - row.get("kustomize_s", 0)}
        alone = row.get("kustomize_s", 0) + row.get("parse_s", 0)
        kustomize = inside.get("render", 0) * (row.get("kustomize_s", 0) / alone if alone else 1)
        return {"render": kustomize, "parse": inside.get("render", 0) - kustomize, "adapt": inside.get("adapt", 0),
                "ansible": row["fixed_s"], "transfer": max(0.0, row["apply_s"] - sum(inside.values())),
                "apply": sum(inside.get(k, 0) for k in REQUESTS), "wait": inside.get("wait", 0)}
    out = {"render": row.get("kustomize_s", 0)} if row["method"] == "kubectl" else {}
    out["apply"] = sum(row.get(k, 0) for k in ("discovery_s", "crds_s", "rediscovery_s", "namespaces_s", "rest_s"))
    out.update(wait=row.get("established_s", 0), webhooks=row.get("webhooks_s", 0))
    return out


def holder(role, reference, share):
    """The stage of the role's run furthest over `share` times the reference's same stage (0 s when
    the reference has none): (stage, the role's seconds, the reference's or None)."""
    mine, theirs = stages(role), stages(reference)
    stage = max(mine, key=lambda k: mine[k] - share * theirs.get(k, 0))
    return stage, mine[stage], theirs.get(stage)


def _held(role, reference, share, name, allowed):
    """Where the role's time is, against the reference `name`: the stage that holds it (`allowed`:
    the share of the reference's time that the target allows, in words), then every stage."""
    stage, mine, theirs = holder(role, reference, share)
    if theirs is None:
        against = "which the %s does not have" % name
    else:
        against = "where the %s takes %.1f s (%s of it: %.1f s)" % (name, theirs, allowed, share * theirs)
    return "the time is in %s: %.1f s, %s; %s" % (STAGES[stage], mine, against, _by_stage(role, reference, name))


def _by_stage(role, reference, name):
    mine, theirs = stages(role), stages(reference)
    parts = ["%s %s/%s" % (label, "%.1f" % mine[k] if k in mine else ("in apply" if k == "webhooks" else "-"),
                           "%.1f" % theirs[k] if k in theirs else "-") for k, label in STAGES.items()]
    return "by stage, role/%s (s): %s" % (name.split()[0], ", ".join(parts))


def _missing(by, methods):
    """Why a target over `methods` could not be judged, or None."""
    skipped = [by[m]["skipped"] for m in methods if m in by and "skipped" in by[m]]
    if skipped:
        return "skipped: %s" % skipped[0]
    why = ["%s failed: %s" % (m, by[m]["error"].splitlines()[0][:160]) for m in methods if m in by and "error" in by[m]]
    why += ["%s not measured" % m for m in methods if m not in by]
    return "; ".join(why) or None


def kubectl_target(by):
    """(measured, met) for the role at least TARGET times faster than kubectl end to end, kustomize's
    render counted for both (kubectl's run starts with it; the role renders itself)."""
    why = _missing(by, ("role", "kubectl"))
    if why:
        return why, None
    role, kubectl = by["role"], by["kubectl"]
    speedup = kubectl["total_s"] / role["total_s"]
    need = kubectl["total_s"] / TARGET
    text = "%.2fx (role %.1f s; kubectl %.1f s: kustomize %.1f s, then the phased apply %.1f s)" % (
        speedup, role["total_s"], kubectl["total_s"], kubectl.get("kustomize_s", 0),
        kubectl["total_s"] - kubectl.get("kustomize_s", 0))
    if speedup < TARGET:
        text += "; %.0fx needs the role in %.1f s, %.1f s less; %s" % (
            TARGET, need, role["total_s"] - need, _held(role, kubectl, 1 / TARGET, "kubectl run", "1/%g" % TARGET))
    return text, speedup >= TARGET


def go_target(by):
    """(measured, met) for the role within GO_TARGET times the Go limit's time over the same objects
    (the Go limit's run includes the API server's CRD establishment; it starts from the objects)."""
    why = _missing(by, ("role", "limit-go"))
    if why:
        return why, None
    role, go = by["role"], by["limit-go"]
    ratio = role["total_s"] / go["total_s"]
    text = "%.2fx (role %.1f s; Go limit %.1f s, CRD establishment %.1f s of it" % (
        ratio, role["total_s"], go["total_s"], go.get("established_s", 0))
    if role.get("kustomize_s"):
        text += "; with kustomize's render (%.1f s) before it: %.2fx" % (
            role["kustomize_s"], role["total_s"] / (go["total_s"] + role["kustomize_s"]))
    text += ")"
    if ratio > GO_TARGET:
        need = GO_TARGET * go["total_s"]
        text += "; %.1fx needs the role in %.1f s, %.1f s less; %s" % (
            GO_TARGET, need, role["total_s"] - need, _held(role, go, GO_TARGET, "Go limit", "%gx" % GO_TARGET))
    return text, ratio <= GO_TARGET


def targets(rows, weights=None):
    """Both targets for each weight, from the same run's rows: [(target, measured, met)], met None
    when not measured. `weights`: those to judge (default: the rows', or every weight)."""
    weights = weights or list(dict.fromkeys(r["weight"] for r in rows)) or list(DEFAULT_WEIGHTS)
    out = []
    for weight in weights:
        by = dict((r["method"], r) for r in rows if r.get("weight") == weight)
        out.append(("render case (%s): role >= %gx faster than kubectl" % (weight, TARGET),) + kubectl_target(by))
        out.append(("render case (%s): role <= %gx the Go limit" % (weight, GO_TARGET),) + go_target(by))
    return out


SHOWN = {None: "not measured", True: "MET", False: "MISSED"}


def lines(rows, weights=None):
    """The targets as printed: target, MET or MISSED, the measured value."""
    return ["%-52s %-12s %s" % (target, SHOWN[met], measured) for target, measured, met in targets(rows, weights)]


def table(rows):
    """One table per weight: each method's total and its stages (STAGES)."""
    out = []
    for weight in dict.fromkeys(r["weight"] for r in rows):
        some = [r for r in rows if r["weight"] == weight]
        if "skipped" in some[0]:
            out += ["render case, %s: skipped (%s)" % (weight, some[0]["skipped"]), ""]
            continue
        head = "| render case, %s %s (%d objects, %d CRDs, %.1f MB) | total (s) | %s | load |" % (
            weight, "tree" if weight in UPSTREAM_TREES else "weight", some[0]["objects"], some[0]["crds"],
            some[0].get("mb", 0), " | ".join("%s (s)" % k for k in STAGES))
        out += [head, "|---|---:|%s---:|" % ("---:|" * len(STAGES))]
        for r in some:
            if "error" in r:
                failed = r["error"].splitlines()[0][:200]
                out.append("| %s | failed: %s |%s |" % (LABELS[r["method"]], failed, " |" * len(STAGES)))
                continue
            got = stages(r)
            cells = ["%.2f" % got[k] if k in got else ("in apply" if r["method"] == "role" and k == "webhooks" else "-")
                     for k in STAGES]
            out.append("| %s | %.2f | %s | %s |" % (LABELS[r["method"]], r["total_s"], " | ".join(cells),
                                                    r.get("load1", "-")))
        out.append("")
    return "\n".join(out).rstrip()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--weights", default=",".join(DEFAULT_WEIGHTS),
                        help="the trees' weights, in order: %%(default)s (known: %s)" % ", ".join(KNOWN))
    parser.add_argument("--component", default=COMPONENT, help="the components_catalog entry's name")
    parser.add_argument("--generate", help="only write the trees into this directory (<weight>/bench)")
    args = parser.parse_args(argv)
    weights = args.weights.split(",")
    unknown = [w for w in weights if w not in KNOWN]
    if unknown:
        parser.error("unknown weights %s; known: %s" % (", ".join(unknown), ", ".join(KNOWN)))
    if args.generate:
        for weight in [w for w in weights if w in WEIGHTS]:
            objs = generate(Path(args.generate) / weight, weight)
            print("%d objects in %s" % (len(objs), Path(args.generate) / weight / "bench"))
        return 0
    with tempfile.TemporaryDirectory(prefix="kfocp-render-") as workdir:
        rows = run(workdir, args.methods.split(","), args.component, weights)
    print("\n" + table(rows) + "\n")
    print("\n".join(lines(rows, weights)))
    for row in rows:
        if row.get("breakdown"):
            print("\nwhere the role's %.1f s go (%s weight):" % (row["total_s"], row["weight"]))
            print("\n".join(timing.lines(row["breakdown"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
