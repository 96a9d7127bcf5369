"""The operator's fast path on a fresh control plane: its reaction latency to a burst of new profile
namespaces, and its memory when it watches many of them.

The Python operator runs as its own service account (operator/hack/launch.py), for a Kubeflow CR
that keeps only the namespace_policies role on. Once the CR is Ready (its playbook run is over),
`burst` namespaces are created at once and each is timed from just before its creation until
every policy object of it exists (tests/measure.py, shared with tests/integration/test_operator.py:
a watch per policy kind sees them arrive, which costs the API server less than LISTs polled during
the burst). The fast path's batches that applied the burst are read from the operator's log: how
many namespaces each held, when each ended and how long its reads and writes took. Two floors are
measured after it on the same plane, with the limit client: the burst's objects written at once
for namespaces that already exist (`limit_s`), and the same burst with its creations, each
namespace's objects written as soon as it exists (`limit_burst`). Then more are
created until `watch` profile namespaces exist, and once the operator has applied the policies of
all of them, its VmRSS is read.
"""
import datetime
import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "benchmarks", ROOT / "hack", ROOT / "tests", ROOT / "operator", ROOT / "operator" / "hack",
              ROOT / ".cache" / "collections"):
    if str(_path) not in sys.path:
        sys.path.append(str(_path))

import launch  # noqa: E402
import measure  # noqa: E402
from cluster import ControlPlane  # noqa: E402
from helpers import wait_for  # noqa: E402
from kfocp_operator.paramconv import to_camel  # noqa: E402

CR_NAME = "bench"
# The floor's namespaces (see _limit) get no tolerations whitelist: the operator's patches of them
# would compete with the limit client it is measured against.
VARIABLES = {"namespace_policies_mesh_mode": "member",
             "namespace_policies_whitelist_exclude": ["default", "openshift", "openshift-*", "kube-*", "floor-*"]}


# The fast path's line for each batch of namespaces it applied (kfocp_operator/fastpath.py).
BATCH_LINE = re.compile(r"^(\S+ \S+) INFO kfocp\.operator\.fastpath policies of (\d+) namespace\(s\) applied: "
                        r".*\((.*)\)$")


def batches(lines, started, ended):
    """The fast path's batches that ended between `started` and `ended` (epoch seconds), read from
    the operator's log lines: [{"namespaces", "end_s" (after `started`), "stages": {stage: s}}]."""
    out = []
    for line in lines:
        match = BATCH_LINE.match(line.rstrip("\n"))
        if not match:
            continue
        when = datetime.datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        if started <= when <= ended:
            stages = {}
            for part in match.group(3).split(", "):
                stage, seconds = part.rsplit(" ", 1)
                stages[stage] = float(seconds.rstrip("s"))
            out.append({"namespaces": int(match.group(2)), "end_s": round(when - started, 3), "stages": stages})
    return out


def _ready(kube, generation=1):
    cr = kube.get(kube.resource("kfocp.io/v1alpha1", "Kubeflow"), CR_NAME, launch.NAMESPACE) or {}
    status = cr.get("status") or {}
    ready = [c for c in status.get("conditions") or [] if c["type"] == "Ready" and c["status"] == "True"]
    return bool(ready) and status.get("observedGeneration") == generation


def _limit(plane, kube, count):
    """Seconds the limit client (benchmarks/limit.py) takes to write the policy objects of `count`
    new namespaces, made just before and not labelled as profile namespaces (the operator leaves
    them alone): what the API server allows for the same burst, the floor of the latency above."""
    import limit
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies
    from kfocp_operator.fastpath import tenancy_settings
    settings = tenancy_settings(VARIABLES, CR_NAME)["namespace_policies"]
    res = kube.resource("v1", "Namespace")
    objs = []
    for i in range(count):
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "floor-%05d" % i}}
        kube.request("POST", kube.path(res), body=namespace)
        objs += namespace_policies.objects_for_namespace(namespace, settings)
    started = time.monotonic()
    limit.apply_all(str(plane.kubeconfig), objs)
    return time.monotonic() - started


def _limit_burst(plane, count):
    """The same burst with nothing to react to: the limit client (benchmarks/limit.py, as _limit)
    creates `count` namespaces at once, one thread each as the bench does, and each thread writes
    its namespace's policy objects as soon as the namespace exists. The API server has the burst's
    whole work: the creations, what its controllers do for each new namespace (a ServiceAccount, a
    ConfigMap) and the policy objects. {"p50", "p99"}: seconds from just before a namespace's
    creation until its last object is written."""
    import limit
    from concurrent.futures import ThreadPoolExecutor
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies
    from kfocp_operator.fastpath import tenancy_settings
    settings = tenancy_settings(VARIABLES, CR_NAME)["namespace_policies"]
    server, pool, headers = limit.connect(str(plane.kubeconfig))
    resources = limit.discover(server, pool, headers)
    create_headers = dict(headers, **{"Content-Type": "application/json"})

    def one(name):
        started = time.monotonic()
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        limit.send(pool, "POST", server + "/api/v1/namespaces", namespace, create_headers)
        for obj in namespace_policies.objects_for_namespace(namespace, settings):
            limit.send(pool, "PATCH", limit.object_url(server, resources, obj), obj, headers)
        return time.monotonic() - started

    names = ["floor-burst-%05d" % i for i in range(count)]
    with ThreadPoolExecutor(max_workers=count) as threads:
        latencies = list(threads.map(one, names))
    return dict((k, v) for k, v in measure.percentiles(latencies).items() if k in ("p50", "p99"))


def run(workdir, burst=200, watch=2000, timeout=600):
    """Measure on a fresh control plane in `workdir`; return the figures."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client
    workdir = Path(workdir)
    plane = ControlPlane(workdir / "operator-plane")
    operator = None
    try:
        plane.up()
        launch.install_api(plane, manager="kfocp-bench")
        kubeconfig = launch.account_kubeconfig(plane, workdir / "operator-sa.kubeconfig")
        operator = launch.Operator(kubeconfig, workdir / "operator.log", ["--default-reconcile-period", "24h"])
        operator.start()
        kube = Client.from_params({"kubeconfig": str(plane.kubeconfig)})
        spec = measure.roles_off_except(launch.CRD, ("namespace_policies",))
        spec.update((to_camel(key), value) for key, value in VARIABLES.items())
        cr = {"apiVersion": "kfocp.io/v1alpha1", "kind": "Kubeflow",
              "metadata": {"name": CR_NAME, "namespace": launch.NAMESPACE}, "spec": spec}
        plane.kubectl("create", "-f", "-", input=json.dumps(cr))
        wait_for(lambda: _ready(kube), timeout, interval=1, what="the Kubeflow CR Ready (operator log: %s)"
                 % operator.log_path)
        kinds = measure.policy_kinds(VARIABLES)
        rss_ready = operator.rss()
        watched = max(burst, watch)
        names = ["team-%05d" % i for i in range(watched)]
        load = os.getloadavg()[0]
        started, created = time.time(), {}
        latencies = measure.burst(kube, names[:burst], CR_NAME, kinds, timeout=timeout, created=created)
        ended = time.time() + 0.5  # the log line is written just after the batch's last request
        if len(latencies) < burst:
            raise RuntimeError("%d of %d namespaces got no policies within %ds (operator log: %s)"
                               % (burst - len(latencies), burst, timeout, operator.log_path))
        figures = {"burst": dict(measure.percentiles(latencies.values()), load1=round(load, 2),
                                 limit_s=round(_limit(plane, kube, burst), 3),
                                 created_s=round(max(created.values()) - min(created.values()), 3),
                                 limit_burst=_limit_burst(plane, burst),
                                 batches=batches(Path(operator.log_path).read_text().splitlines(), started, ended))}
        started = time.monotonic()
        rest = measure.burst(kube, names[burst:watch], CR_NAME, kinds, timeout=timeout, workers=16)
        if len(rest) < watch - burst:
            raise RuntimeError("%d namespaces got no policies within %ds" % (watch - burst - len(rest), timeout))
        figures["watch"] = {"namespaces": watched, "fill_s": round(time.monotonic() - started, 1),
                            "rss_mib": round(operator.rss() / 2.0 ** 20, 1),
                            "rss_ready_mib": round(rss_ready / 2.0 ** 20, 1),
                            "load1": round(os.getloadavg()[0], 2)}
        return figures
    finally:
        if operator is not None:
            operator.stop()
        plane.destroy()


if __name__ == "__main__":
    import tempfile
    with tempfile.TemporaryDirectory(prefix="kfocp-bench-operator-") as directory:
        print(json.dumps(run(directory, int(sys.argv[1]) if len(sys.argv) > 1 else 200,
                             int(sys.argv[2]) if len(sys.argv) > 2 else 2000), indent=2))
