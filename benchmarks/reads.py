"""What the engine's reads cost at N profiles: one LIST per kind of the workload
(benchmarks/workload.py, filled by the Go limit client on a fresh control plane), as full JSON or
metadata only (PartialObjectMetadataList), consistent (the default) or from the watch cache at any
age (resourceVersion=0), each the best of three, the client's decoding included.

    python benchmarks/reads.py 2000
"""
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "benchmarks", ROOT / "hack", ROOT / "tests", ROOT / ".cache" / "collections"):
    if str(_path) not in sys.path:
        sys.path.append(str(_path))

from cluster import ControlPlane  # noqa: E402
import limit  # noqa: E402
import workload  # noqa: E402

WAYS = (("full JSON, consistent", False, None), ("full JSON, resourceVersion=0", False, "0"),
        ("metadata only, consistent", True, None), ("metadata only, resourceVersion=0", True, "0"))


def run(n, workdir):
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client, METADATA_ACCEPT
    plane = ControlPlane(Path(workdir) / "reads")
    try:
        plane.up()
        workload.warm(plane)
        objs = workload.objects(n)
        limit.go_apply_all(plane.kubeconfig, objs)
        client = Client.from_params({"kubeconfig": str(plane.kubeconfig)})
        kinds = [client.resource(a, k) for a, k in sorted(set((o["apiVersion"], o["kind"]) for o in objs))]
        rows = []
        for label, metadata_only, rv in WAYS:
            best, count = None, 0
            for _attempt in range(3):
                started, count = time.monotonic(), 0
                for res in kinds:
                    doc = client.request("GET", client.path(res), query={"resourceVersion": rv},
                                         accept=METADATA_ACCEPT if metadata_only else "application/json") or {}
                    count += len(doc.get("items") or [])
                took = time.monotonic() - started
                best = took if best is None else min(best, took)
            rows.append({"read": label, "objects": count, "seconds": round(best, 2)})
        return rows
    finally:
        plane.destroy()


def main(argv=None):
    n = int((argv or sys.argv[1:] or ["2000"])[0])
    with tempfile.TemporaryDirectory(prefix="kfocp-reads-") as workdir:
        for row in run(n, workdir):
            print("%-34s %6d objects  %.2f s" % (row["read"], row["objects"], row["seconds"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
