"""The physical reference: minimal clients that server-side apply a list of objects as fast as the
API server allows (one discovery, then concurrent PATCHes, namespaces first).

Two of them: `apply_all`, in Python (urllib3, 32 threads), and `go_apply_all`, the Go client of
benchmarks/limit (client-go, no client rate limit, HTTP/2, protobuf responses, 64 concurrent
requests, CRDs waited for with a watch), which is what the API server itself can take. The Go
binary is built like the control plane's (hack/cluster.py go_build), cached under
~/.cache/kfocp/bin/limit-<client-go version>-<source hash>.

They do none of what makes kfocp safe (ownership checks, labels, exact changed, prune); they only
measure what the API server can take.

    python benchmarks/limit.py KUBECONFIG OBJECTS.json [--workers 32] [--go]
    python benchmarks/limit.py --build        # build the Go client into the cache (make bench does)
"""
import argparse
import hashlib
import json
import ssl
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import urllib3
import yaml


def connect(kubeconfig):
    with open(kubeconfig) as handle:
        config = yaml.safe_load(handle)
    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]
    import base64
    import tempfile
    files = {}
    for key in ("certificate-authority-data", "client-certificate-data", "client-key-data"):
        if key in user or key in cluster:
            data = base64.b64decode(user.get(key) or cluster.get(key))
            handle = tempfile.NamedTemporaryFile(delete=False)
            handle.write(data)
            handle.close()
            files[key] = handle.name
    ctx = ssl.create_default_context(cafile=files["certificate-authority-data"])
    headers = {"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"}
    if "client-certificate-data" in files:
        ctx.load_cert_chain(files["client-certificate-data"], files["client-key-data"])
    if user.get("token"):
        headers["Authorization"] = "Bearer " + user["token"]
    pool = urllib3.PoolManager(maxsize=64, ssl_context=ctx)
    return cluster["server"], pool, headers


def discover(server, pool, headers):
    found = {}
    accept = {"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}
    for root in ("/api", "/apis"):
        plain = dict((k, v) for k, v in headers.items() if k != "Content-Type")
        doc = json.loads(pool.request("GET", server + root, headers=dict(plain, **accept)).data)
        for group in doc["items"]:
            name = group["metadata"].get("name", "")
            for version in group["versions"]:
                api_version = "%s/%s" % (name, version["version"]) if name else version["version"]
                for res in version["resources"]:
                    found[(api_version, res["responseKind"]["kind"])] = (res["resource"], res["scope"] == "Namespaced")
    return found


def list_url(server, resources, api_version, kind, namespace=None):
    """The URL of a kind's collection: in every namespace, or in `namespace` when it is given."""
    plural = resources[(api_version, kind)][0]
    base = ("/api/" if "/" not in api_version else "/apis/") + api_version
    if namespace:
        base += "/namespaces/" + namespace
    return "%s%s/%s" % (server, base, plural)


def object_url(server, resources, obj):
    """The URL a server-side apply of `obj` goes to, as the limit client's field manager."""
    meta = obj["metadata"]
    namespaced = resources[(obj["apiVersion"], obj["kind"])][1]
    collection = list_url(server, resources, obj["apiVersion"], obj["kind"], meta["namespace"] if namespaced else None)
    return "%s/%s?fieldManager=limit" % (collection, meta["name"])


def send(pool, method, url, obj, headers):
    """One request with `obj` as its body; an answer that is not a success raises, naming the object."""
    resp = pool.request(method, url, body=json.dumps(obj).encode(), headers=headers)
    if resp.status >= 300:
        raise RuntimeError("%s %s: %s" % (obj["kind"], obj["metadata"]["name"], resp.data[:300]))
    return resp.status


def apply_all(kubeconfig, objs, workers=32):
    server, pool, headers = connect(kubeconfig)
    resources = discover(server, pool, headers)

    def apply(obj):
        return send(pool, "PATCH", object_url(server, resources, obj), obj, headers)

    first = [o for o in objs if o["kind"] in ("CustomResourceDefinition", "Namespace")]
    rest = [o for o in objs if o["kind"] not in ("CustomResourceDefinition", "Namespace")]
    with ThreadPoolExecutor(workers) as executor:
        list(executor.map(apply, first))
        list(executor.map(apply, rest))


GO_DIR = Path(__file__).resolve().parent / "limit"


def go_binary():
    """The Go limit client, built once per client-go version and source (hack/cluster.py go_build)."""
    sys.path.insert(0, str(GO_DIR.parents[1] / "hack"))
    import cluster
    version = cluster.module_version(GO_DIR / "go.mod", "k8s.io/client-go")
    digest = hashlib.sha256()
    for name in ("go.mod", "go.sum", "main.go"):
        digest.update((GO_DIR / name).read_bytes())
    dest = cluster.cache_root() / ("limit-%s-%s" % (version, digest.hexdigest()[:12]))
    return cluster.go_build(GO_DIR, {"limit": "."}, dest) / "limit"


def go_apply_all(kubeconfig, objs, workers=64):
    """Apply `objs` with the Go limit client; return its timings ({"total_s", "crds_s", ...})."""
    binary = go_binary()
    with tempfile.NamedTemporaryFile("w", suffix=".json", prefix="limit-") as handle:
        json.dump({"objects": objs}, handle)
        handle.flush()
        proc = subprocess.run([str(binary), "-kubeconfig", str(kubeconfig), "-objects", handle.name,
                               "-workers", str(workers)], capture_output=True, text=True, check=False)
    if proc.returncode:
        raise RuntimeError("Go limit client failed: %s" % (proc.stderr or proc.stdout)[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kubeconfig", nargs="?")
    parser.add_argument("objects", nargs="?")
    parser.add_argument("--workers", type=int)
    parser.add_argument("--go", action="store_true", help="the Go client of benchmarks/limit")
    parser.add_argument("--build", action="store_true", help="only build the Go client (or find it cached); print its path")
    args = parser.parse_args()
    if args.build:
        started = time.monotonic()
        print("%s (%.1f s)" % (go_binary(), time.monotonic() - started))
        return 0
    if not (args.kubeconfig and args.objects):
        parser.error("KUBECONFIG and OBJECTS are required")
    with open(args.objects) as handle:
        objs = json.load(handle)["objects"]
    started = time.monotonic()
    if args.go:
        print(json.dumps(go_apply_all(args.kubeconfig, objs, args.workers or 64)))
    else:
        apply_all(args.kubeconfig, objs, args.workers or 32)
    print("%.3f" % (time.monotonic() - started))


if __name__ == "__main__":
    sys.exit(main())
