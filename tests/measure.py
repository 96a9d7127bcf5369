"""Measuring the operator's fast path on a real API server, shared by
tests/integration/test_operator.py and the benchmark (benchmarks/operator_bench.py): a burst of new
profile namespaces, the time each waits until every policy object of it exists, percentiles, and
the Kubeflow spec that keeps only some roles on."""
import math
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "operator", ROOT / "operator" / "hack", ROOT / ".cache" / "collections"):
    if str(_path) not in sys.path:
        sys.path.append(str(_path))

PROFILE_LABELS = {"app.kubernetes.io/part-of": "kubeflow-profile"}
TOLERATIONS = "scheduler.alpha.kubernetes.io/defaultTolerations"


def roles_off_except(crd_path, keep):
    """Spec fields <role>State: absent for every role of the Kubeflow CRD at `crd_path` but those in
    `keep` (role names): the roles that wait for operators the local control plane does not run."""
    import yaml
    from kfocp_operator.paramconv import to_camel
    doc = yaml.safe_load(Path(crd_path).read_text())
    fields = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
    kept = set(to_camel(role + "_state") for role in keep)
    return dict((field, "absent") for field, schema in fields.items()
                if field.endswith("State") and field not in kept and "absent" in schema.get("enum", []))


def policy_kinds(variables):
    """The (apiVersion, kind) pairs of the policy objects the namespace_policies role gives one
    profile namespace, with these role variables."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies
    from kfocp_operator.fastpath import role_settings
    settings = role_settings(ROOT, "namespace_policies", variables, "x")
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x", "labels": dict(PROFILE_LABELS)}}
    objs = namespace_policies.objects_for_namespace(namespace, settings)
    return sorted(set((o["apiVersion"], o["kind"]) for o in objs))


def namespaces_with_policies(kube, instance, kinds, names):
    """The namespaces among `names` that hold a policy object of every kind in `kinds`, made by
    `instance` (for Namespace: its shared patch with the default tolerations). One LIST per kind."""
    found = {}
    for api_version, kind in kinds:
        res = kube.resource(api_version, kind)
        if kind == "Namespace":
            items = kube.list(res, label_selector="patched.kfocp.io/%s" % instance, metadata_only=True)
            where = [i["metadata"]["name"] for i in items if TOLERATIONS in (i["metadata"].get("annotations") or {})]
        else:
            items = kube.list(res, label_selector="kfocp.io/instance=%s" % instance, metadata_only=True)
            where = [i["metadata"].get("namespace") for i in items]
        for name in where:
            if name in names:
                found.setdefault(name, set()).add((api_version, kind))
    return set(name for name, got in found.items() if len(got) == len(kinds))


def burst(kube, names, instance, kinds, labels=None, timeout=60, poll=0.02, workers=None):
    """Create the namespaces `names` (labelled as profile namespaces) all at once, and return
    {name: seconds from just before its creation until every policy object of it exists}.
    Namespaces still without them after `timeout` seconds are missing from the result."""
    wanted = set(names)
    created, seen = {}, {}
    res = kube.resource("v1", "Namespace")
    labels = dict(PROFILE_LABELS if labels is None else labels)
    done = threading.Event()

    def create(name):
        created[name] = time.monotonic()
        kube.request("POST", kube.path(res), body={"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": name, "labels": labels}})

    def watch():
        deadline = time.monotonic() + timeout
        while not done.is_set() and len(seen) < len(wanted) and time.monotonic() < deadline:
            now = time.monotonic()
            for name in namespaces_with_policies(kube, instance, kinds, wanted):
                seen.setdefault(name, now)
            time.sleep(poll)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    with ThreadPoolExecutor(max_workers=workers or len(wanted)) as pool:
        list(pool.map(create, names))
    watcher.join(timeout + 5)
    done.set()
    return dict((name, seen[name] - created[name]) for name in seen)


def percentiles(latencies):
    """count, p50, p95, p99 and max of `latencies` (nearest rank), in seconds rounded to ms."""
    ordered = sorted(latencies)
    if not ordered:
        return {"count": 0}

    def rank(p):
        return ordered[max(1, int(math.ceil(p / 100.0 * len(ordered)))) - 1]

    return {"count": len(ordered), "p50": round(rank(50), 3), "p95": round(rank(95), 3), "p99": round(rank(99), 3),
            "max": round(ordered[-1], 3)}
