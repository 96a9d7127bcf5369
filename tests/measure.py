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
    from kfocp_operator.fastpath import tenancy_settings
    settings = tenancy_settings(variables, "x")["namespace_policies"]
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x", "labels": dict(PROFILE_LABELS)}}
    objs = namespace_policies.objects_for_namespace(namespace, settings)
    return sorted(set((o["apiVersion"], o["kind"]) for o in objs))


def _selector(instance, kind):
    """The label selector of `instance`'s policy objects of `kind` (for Namespace: its shared patch)."""
    return ("patched.kfocp.io/%s" if kind == "Namespace" else "kfocp.io/instance=%s") % instance


def _where(kind, meta):
    """The namespace a policy object of `kind` counts for, or None (a Namespace without the default
    tolerations yet)."""
    if kind == "Namespace":
        return meta.get("name") if TOLERATIONS in (meta.get("annotations") or {}) else None
    return meta.get("namespace")


class _Observer(object):
    """Watches `instance`'s policy objects of `kinds` and records, for each namespace among `names`,
    when the last of its kinds arrived. A watch per kind costs the API server far less than LISTs
    polled during the burst it measures."""

    def __init__(self, kube, instance, kinds, names, timeout):
        self.instance, self.names, self.wanted = instance, set(names), len(kinds)
        self.found, self.seen, self.errors = {}, {}, []
        self.lock, self.done = threading.Lock(), threading.Event()
        self.deadline = time.monotonic() + timeout
        for api_version, kind in kinds:
            res = kube.resource(api_version, kind)
            listed = kube.request("GET", kube.path(res), query={"labelSelector": _selector(instance, kind), "limit": "1"})
            threading.Thread(target=self._watch, args=(kube, res, kind, listed["metadata"]["resourceVersion"]),
                             daemon=True).start()

    def _note(self, kind, obj):
        name = _where(kind, obj.get("metadata") or {})
        if name not in self.names:
            return
        with self.lock:
            got = self.found.setdefault(name, set())
            got.add(kind)
            if len(got) == self.wanted and name not in self.seen:
                self.seen[name] = time.monotonic()
                if len(self.seen) == len(self.names):
                    self.done.set()

    def _watch(self, kube, res, kind, version):
        selector = _selector(self.instance, kind)
        try:
            while not self.done.is_set() and time.monotonic() < self.deadline:
                # short watches, so that the thread ends soon after the burst
                for event, obj in kube.watch(res, version, timeout=5, label_selector=selector):
                    version = (obj.get("metadata") or {}).get("resourceVersion") or version
                    if event in ("ADDED", "MODIFIED"):
                        self._note(kind, obj)
        except Exception as err:  # pylint: disable=broad-except  # raised again by wait()
            self.errors.append(err)
            self.done.set()

    def wait(self):
        """{namespace: when its last policy object arrived}; raises the first watch's error."""
        self.done.wait(max(0, self.deadline - time.monotonic()))
        self.done.set()
        if self.errors:
            raise self.errors[0]
        with self.lock:
            return dict(self.seen)


def burst(kube, names, instance, kinds, labels=None, timeout=60, workers=None, created=None):
    """Create the namespaces `names` (labelled as profile namespaces) all at once, and return
    {name: seconds from just before its creation until every policy object of it exists}.
    Namespaces still without them after `timeout` seconds are missing from the result. `created`,
    when given, gets {name: time.monotonic() just before its creation}. No names: {} at once."""
    if not names:
        return {}  # nothing to wait for (an observer would wait out its timeout)
    created = {} if created is None else created
    res = kube.resource("v1", "Namespace")
    labels = dict(PROFILE_LABELS if labels is None else labels)
    observer = _Observer(kube, instance, kinds, names, timeout)

    def create(name):
        created[name] = time.monotonic()
        kube.request("POST", kube.path(res), body={"apiVersion": "v1", "kind": "Namespace",
                                                   "metadata": {"name": name, "labels": labels}})

    with ThreadPoolExecutor(max_workers=workers or len(names)) as pool:
        list(pool.map(create, names))
    seen = observer.wait()
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
