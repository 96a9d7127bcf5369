"""The render case: an upstream-sized kustomize render (hundreds of objects, dozens of CRDs with
schemas of real size, admission webhooks), applied end to end, each on a fresh control plane, by

- the components role (playbooks/components.yml, the tree as a local-directory component: a
  `components_catalog` entry, name -> path, that is `managed` in `components_components`);
- `kubectl apply --server-side`, phase by phase as its users do: the CRDs, `kubectl wait` until
  they are Established, the namespaces, the rest, the webhook configurations last;
- the Go limit client (benchmarks/limit), in the same phases, the CRDs waited for with a watch:
  what the API server itself takes, its own CRD establishment included.

The generated tree (`generate`) is like kubeflow/manifests' `example`: 70 CRDs (a third of them
with two versions; each schema about 15 KB of JSON in nested properties with descriptions, as upstream
CRDs are), 8 namespaces, 20 webhook configurations, and 40 components of ServiceAccount, Role,
RoleBinding, ClusterRole, ClusterRoleBinding, ConfigMap, Service, Deployment, NetworkPolicy and
PodDisruptionBudget, with two custom resources of each CRD. The webhooks block nothing: their
failurePolicy is Ignore and their namespace and object selectors match a label no object has.

    python benchmarks/render.py --methods kubectl,limit-go,role [--component render-bench]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "benchmarks", ROOT / "hack", ROOT / "tests", ROOT / ".cache" / "collections"):
    if str(_path) not in sys.path:
        sys.path.append(str(_path))

from cluster import ControlPlane  # noqa: E402
import limit  # noqa: E402
import timing  # noqa: E402
from helpers import ansible_env  # noqa: E402

CRDS = 70
NAMESPACES = 8
WEBHOOKS = 20
COMPONENTS = 40
NEVER = {"bench.kfocp.io/never-matches": "true"}
METHODS = ("kubectl", "limit-go", "role")
LABELS = {"kubectl": "kubectl apply --server-side, phase by phase",
          "limit-go": "Go limit client, same phases",
          "role": "components role (playbooks/components.yml)"}
COMPONENT = "render-bench"
# the one task that renders (kubectl kustomize), adapts and applies (manifests_apply)
APPLY_TASK = "kfocp.kubeflow.components : Render, adapt and apply the components"
TARGET = 3.0  # the role at least this many times faster than kubectl


def _schema(seed, depth=3, breadth=7):
    """A nested openAPIV3Schema object of some size, like an upstream CRD's (about 15 KB of JSON at the top)."""
    props = {}
    for i in range(breadth):
        name = "field%s%d" % ("abcdefghij"[(seed + i) % 10], i)
        desc = ("%s configures part %d of the resource. It is defaulted by the controller when unset and "
                "validated on admission; see the project's documentation for the values it accepts." % (name, i))
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


def _crd(i):
    group = "g%02d.bench.kfocp.io" % (i // 5)
    kind = "Thing%02d" % i
    plural = kind.lower() + "s"
    schema = {"openAPIV3Schema": {"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": dict(_schema(i, 3, 7), description="The desired state."),
        "status": dict(_schema(i + 3, 2, 6), **{"x-kubernetes-preserve-unknown-fields": True})}}}
    versions = [{"name": "v1", "served": True, "storage": True, "schema": schema,
                 "subresources": {"status": {}},
                 "additionalPrinterColumns": [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]}]
    if i % 3 == 0:
        versions.append({"name": "v1beta1", "served": True, "storage": False, "schema": schema})
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "%s.%s" % (plural, group)},
            "spec": {"group": group, "scope": "Namespaced", "versions": versions,
                     "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": kind + "List"}}}


def _webhook(i, mutating):
    kind = "MutatingWebhookConfiguration" if mutating else "ValidatingWebhookConfiguration"
    hook = {"name": "w%02d.bench.kfocp.io" % i, "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "failurePolicy": "Ignore", "timeoutSeconds": 5,
            "namespaceSelector": {"matchLabels": NEVER}, "objectSelector": {"matchLabels": NEVER},
            "clientConfig": {"service": {"name": "bench-webhook", "namespace": "bench-ns-0", "path": "/hook%d" % i}},
            "rules": [{"apiGroups": ["g%02d.bench.kfocp.io" % (i % 14)], "apiVersions": ["*"],
                       "operations": ["CREATE", "UPDATE"], "resources": ["*"]}]}
    if mutating:
        hook["reinvocationPolicy"] = "Never"
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
            "metadata": {"name": "bench-%s-%02d" % ("mutating" if mutating else "validating", i)},
            "webhooks": [hook]}


def _component(i):
    ns = "bench-ns-%d" % (i % NAMESPACES)
    name = "comp-%02d" % i
    labels = {"app.kubernetes.io/name": name, "app.kubernetes.io/part-of": "bench"}

    def meta(kind_name, namespaced=True):
        doc = {"name": kind_name, "labels": dict(labels)}
        if namespaced:
            doc["namespace"] = ns
        return doc
    rules = [{"apiGroups": ["", "apps"], "resources": ["pods", "deployments", "configmaps"],
              "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
             {"apiGroups": ["g%02d.bench.kfocp.io" % (i % 14)], "resources": ["*"], "verbs": ["*"]}]
    container = {"name": "manager", "image": "ghcr.io/kubeflow/%s:v1.10.0" % name,
                 "args": ["--metrics-bind-address=:8080", "--leader-elect"],
                 "ports": [{"containerPort": 8080, "name": "metrics"}, {"containerPort": 9443, "name": "webhook"}],
                 "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}, "limits": {"memory": "512Mi"}},
                 "securityContext": {"allowPrivilegeEscalation": False, "runAsNonRoot": True,
                                     "capabilities": {"drop": ["ALL"]}},
                 "readinessProbe": {"httpGet": {"path": "/readyz", "port": 8081}}}
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(name)},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta(name), "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta(name),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": meta("bench-" + name, False),
         "rules": rules},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": meta("bench-" + name, False),
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "bench-" + name},
         "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}]},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(name + "-config"),
         "data": {"config.yaml": yaml.safe_dump({"component": name, "replicas": 1, "features": list(range(20))})}},
        {"apiVersion": "v1", "kind": "Service", "metadata": meta(name),
         "spec": {"selector": labels, "ports": [{"name": "https", "port": 443, "targetPort": 9443}]}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(name),
         "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
             "metadata": {"labels": labels},
             "spec": {"serviceAccountName": name, "containers": [container],
                      "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}}}}}},
        {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta(name),
         "spec": {"podSelector": {"matchLabels": labels}, "policyTypes": ["Ingress"],
                  "ingress": [{"ports": [{"port": 9443}]}]}},
        {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta(name),
         "spec": {"minAvailable": 1, "selector": {"matchLabels": labels}}},
    ]


def _custom(crd, j):
    spec = crd["spec"]
    return {"apiVersion": "%s/v1" % spec["group"], "kind": spec["names"]["kind"],
            "metadata": {"name": "%s-%d" % (spec["names"]["singular"], j), "namespace": "bench-ns-%d" % (j % NAMESPACES)},
            "spec": {}}


def objects():
    """The render: every object, in upstream's order (kustomize sorts by kind; appliers phase them)."""
    crds = [_crd(i) for i in range(CRDS)]
    out = list(crds)
    out += [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench-ns-%d" % i}}
            for i in range(NAMESPACES)]
    for i in range(COMPONENTS):
        out += _component(i)
    out += [_custom(crd, j) for crd in crds for j in range(2)]
    out += [_webhook(i, i % 2 == 0) for i in range(WEBHOOKS)]
    return out


def generate(directory):
    """Write the tree: <directory>/bench/{kustomization.yaml,all.yaml}; return the objects."""
    objs = objects()
    tree = Path(directory) / "bench"
    tree.mkdir(parents=True, exist_ok=True)
    (tree / "kustomization.yaml").write_text("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                                             "resources: [all.yaml]\n")
    (tree / "all.yaml").write_text(yaml.safe_dump_all(objs, sort_keys=False))
    return objs


def phases(objs):
    """kubectl's phases: CRDs, namespaces, the rest, webhook configurations."""
    hooks = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
    return [("crds", [o for o in objs if o["kind"] == "CustomResourceDefinition"]),
            ("namespaces", [o for o in objs if o["kind"] == "Namespace"]),
            ("rest", [o for o in objs if o["kind"] not in hooks + ("CustomResourceDefinition", "Namespace")]),
            ("webhooks", [o for o in objs if o["kind"] in hooks])]


def by_kubectl(plane, objs, workdir):
    """kubectl apply --server-side phase by phase, with a fresh discovery cache: {phase: seconds}."""
    env = dict(os.environ, KUBECACHEDIR=str(Path(workdir) / "kubectl-cache"))
    kubectl = plane.state()["bins"]["kubectl"]
    out, started = {}, time.monotonic()

    def run(*args):
        proc = subprocess.run([kubectl, "--kubeconfig=%s" % plane.kubeconfig, *args], env=env,
                              capture_output=True, text=True, check=False)
        if proc.returncode:
            raise RuntimeError("kubectl %s failed: %s" % (" ".join(args[:3]), proc.stderr[-2000:]))
    for name, items in phases(objs):
        path = Path(workdir) / ("phase-%s.yaml" % name)
        path.write_text(yaml.safe_dump_all(items))
        mark = time.monotonic()
        run("apply", "--server-side", "--field-manager=kubectl-bench", "-f", str(path))
        out[name + "_s"] = round(time.monotonic() - mark, 2)
        if name == "crds":
            mark = time.monotonic()
            run("wait", "--for=condition=Established", "--timeout=300s",
                *["crd/%s" % o["metadata"]["name"] for o in items])
            out["established_s"] = round(time.monotonic() - mark, 2)
    out["total_s"] = round(time.monotonic() - started, 2)
    return out


def by_role(plane, tree_root, component, workdir):
    """playbooks/components.yml over the tree as one local-directory component; the SCC, sidecar and
    metadata-envoy transforms off, so that it writes the same objects as the others."""
    extra = {"kfocp_instance": "bench", "kfocp_kubeconfig": str(plane.kubeconfig),
             "components_source": "dir", "components_dir": str(tree_root),
             "components_catalog": {component: ["bench"]}, "components_components": {component: "managed"},
             "components_kubectl": plane.state()["bins"]["kubectl"],
             "components_sidecar_enabled": False, "components_scc_enabled": False,
             "components_metadata_envoy_enabled": False,
             # the module's result then reaches the timing callback: where its own seconds went
             "components_no_log": False}
    extra_file = Path(workdir) / "render-extra.json"
    extra_file.write_text(json.dumps(extra))
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
           "-e", "ansible_python_interpreter=%s" % sys.executable, "-e", "@%s" % extra_file,
           str(ROOT / "playbooks" / "components.yml")]
    timing_file = Path(workdir) / "render-timing.json"
    # kustomize's own render of the tree, alone: the part of the role's apply task that no API
    # server bounds, and what `kustomize build | kubectl apply` adds to kubectl's figures
    mark = time.monotonic()
    subprocess.run([plane.state()["bins"]["kubectl"], "kustomize", str(Path(tree_root) / "bench")],
                   capture_output=True, check=True)
    kustomize_s = time.monotonic() - mark
    env = ansible_env(None, timing.env(timing_file))
    started = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=ROOT)
    total = time.monotonic() - started
    if proc.returncode:
        msg = [line.strip() for line in proc.stdout.splitlines() if "msg" in line or "Supported parameters" in line]
        raise RuntimeError("components.yml failed: %s\n%s" % (" ".join(msg[-3:]), (proc.stdout + proc.stderr)[-3000:]))
    breakdown = timing.read(timing_file, total)
    row = {"total_s": round(total, 2), "breakdown": breakdown, "kustomize_s": round(kustomize_s, 2)}
    if breakdown:
        # the task that renders, adapts and applies (the API's work, kustomize's and the module's
        # start), and the rest: fixed costs
        tasks = dict(breakdown["tasks"])
        row["apply_s"] = round(sum(v for k, v in tasks.items() if k.startswith(APPLY_TASK)), 2)
        row["fixed_s"] = round(total - row["apply_s"], 2)
        # inside the task, as the module measured it: render (kustomize and parsing), adapt, apply
        row["module"] = next((v for k, v in (breakdown.get("stages") or {}).items() if k.startswith(APPLY_TASK)), {})
    return row


def count_present(plane, objs):
    """How many of `objs` the API server has (one list per kind)."""
    sys.path.append(str(ROOT / "benchmarks"))
    import workload
    return workload.count_present(plane, objs)


def measure(method, workdir, component=COMPONENT):
    """One method on a fresh control plane; its row, or the reason it could not run."""
    workdir = Path(workdir)
    tree_root = workdir / "render-tree"
    objs = generate(tree_root)
    plane = ControlPlane(workdir / ("render-%s" % method))
    row = {"method": method, "objects": len(objs), "crds": CRDS}
    try:
        plane.up()
        if method == "kubectl":
            row.update(by_kubectl(plane, objs, workdir))
        elif method == "limit-go":
            row.update(dict((k, round(v, 2)) for k, v in limit.go_apply_all(plane.kubeconfig, objs).items()))
        else:
            row.update(by_role(plane, tree_root, component, workdir))
        present = count_present(plane, objs)
        if present != len(objs):
            raise RuntimeError("%d of %d objects present after %s" % (present, len(objs), method))
        row["load1"] = round(os.getloadavg()[0], 2)
    except RuntimeError as err:
        row["error"] = str(err)[-1500:]
    finally:
        plane.destroy()
    return row


def run(workdir, methods=METHODS, component=COMPONENT):
    rows = []
    for method in methods:
        row = measure(method, workdir, component)
        print(json.dumps(dict(("render_" + k if k == "method" else k, v) for k, v in row.items())), flush=True)
        rows.append(row)
    return rows


def table(rows):
    out = ["| render case (%d objects, %d CRDs) | total (s) | CRDs sent (s) | CRDs Established (s) | rest (s) "
           "| apply task (s) | fixed costs (s) | load |" % (rows[0]["objects"], CRDS), "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if "error" in r:
            out.append("| %s | failed: %s | | | | | | |" % (LABELS[r["method"]], r["error"].splitlines()[0][:200]))
            continue
        rest = sum(r.get(k, 0) for k in ("namespaces_s", "rest_s", "webhooks_s"))
        out.append("| %s | %.2f | %s | %s | %s | %s | %s | %s |" % (
            LABELS[r["method"]], r["total_s"], r.get("crds_s", "-"), r.get("established_s", "-"),
            "%.2f" % rest if "rest_s" in r else "-", r.get("apply_s", "-"), r.get("fixed_s", "-"), r.get("load1", "-")))
    return "\n".join(out)


def verdict(rows):
    """(what was measured, met or not, None when not measured) for the target: the role at least
    3x faster than kubectl end to end. When it is missed, the Go limit says how much of it the API
    server's own work (its CRD establishment above all) leaves to any client, and the role's run
    is split into its fixed costs (ansible-playbook's start, the small tasks) and the task that
    renders and applies, kustomize's render (measured alone) apart, each side by side with what
    it would need."""
    by = dict((r["method"], r) for r in rows if "error" not in r)
    role, kubectl, go = by.get("role"), by.get("kubectl"), by.get("limit-go")
    if not (role and kubectl):
        failed = [r for r in rows if "error" in r]
        return "; ".join("%s failed: %s" % (r["method"], r["error"].splitlines()[0][:160]) for r in failed) or "-", None
    speedup = kubectl["total_s"] / role["total_s"]
    need = kubectl["total_s"] / TARGET
    text = "%.2fx (role %.1f s, kubectl %.1f s; %.0fx needs the role in %.1f s)" % (
        speedup, role["total_s"], kubectl["total_s"], TARGET, need)
    if go:
        text += ("; Go limit %.1f s (CRDs sent %.1f s, Established %.1f s, the rest %.1f s): kubectl/Go limit %.2fx, "
                 "role/Go limit %.2fx" % (go["total_s"], go.get("crds_s", 0), go.get("established_s", 0),
                                          go["total_s"] - go.get("crds_s", 0) - go.get("established_s", 0),
                                          kubectl["total_s"] / go["total_s"], role["total_s"] / go["total_s"]))
        if kubectl["total_s"] / go["total_s"] < TARGET:
            text += "; the API server bounds it: even the Go limit is less than %.0fx faster than kubectl" % TARGET
    if "kustomize_s" in role:
        with_render = kubectl["total_s"] + role["kustomize_s"]
        text += ("; kubectl's figures start from rendered files: with kustomize's render of the tree (%.1f s, "
                 "`kustomize build | kubectl apply`) kubectl takes %.1f s, %.2fx the role"
                 % (role["kustomize_s"], with_render, with_render / role["total_s"]))
    if speedup < TARGET and "fixed_s" in role:
        task = role["apply_s"] - role.get("kustomize_s", 0)
        text += ("; the role is %.1f s of fixed costs (start-up %.1f s, other tasks and exit %.1f s) and one task of "
                 "%.1f s that renders (kubectl kustomize alone %.1f s), adapts and applies (%.1f s besides the render)"
                 % (role["fixed_s"], role["breakdown"]["startup_s"], role["fixed_s"] - role["breakdown"]["startup_s"],
                    role["apply_s"], role.get("kustomize_s", 0), task))
        inside = role.get("module") or {}
        if inside:
            applied = sum(v for k, v in inside.items() if k not in ("render", "adapt"))
            text += ("; inside the task, as the module measured it: render %.1f s (kustomize and its output's parsing), "
                     "adapt %.1f s, apply and prune %.1f s (%s), the module's start (Ansible's templating and "
                     "transfer, the interpreter, imports, the result) %.1f s"
                     % (inside.get("render", 0), inside.get("adapt", 0), applied,
                        ", ".join("%s %.1f s" % (k, v) for k, v in inside.items() if k not in ("render", "adapt")),
                        max(0.0, role["apply_s"] - sum(inside.values()))))
            task = applied
        if go:
            text += "; that apply is %.2fx the Go limit's whole run" % (task / go["total_s"])
        floor = role["fixed_s"] + role.get("kustomize_s", 0)
        if floor >= need:
            text += ": its fixed costs and kustomize's render alone exceed %.1f s" % need
        elif go and floor + go["total_s"] > need:
            text += (": even an apply as fast as the Go limit, after kustomize's render, would give %.1f s, over %.1f s"
                     % (floor + go["total_s"], need))
        elif go:
            text += (": the apply needed %.1f s, %.2fx the Go limit's whole run"
                     % (need - floor, (need - floor) / go["total_s"]))
    return text, speedup >= TARGET


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--component", default=COMPONENT, help="the components_catalog entry's name")
    parser.add_argument("--generate", help="only write the tree into this directory")
    args = parser.parse_args(argv)
    if args.generate:
        print("%d objects in %s" % (len(generate(args.generate)), Path(args.generate) / "bench"))
        return 0
    with tempfile.TemporaryDirectory(prefix="kfocp-render-") as workdir:
        rows = run(workdir, args.methods.split(","), args.component)
    print("\n" + table(rows))
    measured, met = verdict(rows)
    shown = {None: "not measured", True: "MET", False: "MISSED"}[met]
    print("\nrole >= %.0fx faster than kubectl: %s: %s" % (TARGET, shown, measured))
    for row in rows:
        if row.get("breakdown"):
            print("\nwhere the role's %.1f s go:" % row["total_s"])
            print("\n".join(timing.lines(row["breakdown"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
