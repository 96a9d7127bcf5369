"""The physical reference: a minimal client that server-side applies a list of objects as fast
as the API server allows (one discovery, then concurrent PATCHes, namespaces first).

It does none of what makes kfocp safe (ownership checks, labels, exact changed, prune); it only
measures what the API server can take.

    python benchmarks/limit.py KUBECONFIG OBJECTS.json [--workers 32]
"""
import argparse
import json
import ssl
import sys
import time
from concurrent.futures import ThreadPoolExecutor

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


def apply_all(kubeconfig, objs, workers=32):
    server, pool, headers = connect(kubeconfig)
    resources = discover(server, pool, headers)

    def path(obj):
        plural, namespaced = resources[(obj["apiVersion"], obj["kind"])]
        base = "/api/" + obj["apiVersion"] if "/" not in obj["apiVersion"] else "/apis/" + obj["apiVersion"]
        meta = obj["metadata"]
        if namespaced:
            base += "/namespaces/" + meta["namespace"]
        return "%s%s/%s/%s?fieldManager=limit" % (server, base, plural, meta["name"])

    def send(obj):
        resp = pool.request("PATCH", path(obj), body=json.dumps(obj).encode(), headers=headers)
        if resp.status >= 300:
            raise RuntimeError("%s %s: %s" % (obj["kind"], obj["metadata"]["name"], resp.data[:300]))
        return resp.status

    first = [o for o in objs if o["kind"] in ("CustomResourceDefinition", "Namespace")]
    rest = [o for o in objs if o["kind"] not in ("CustomResourceDefinition", "Namespace")]
    with ThreadPoolExecutor(workers) as executor:
        list(executor.map(send, first))
        list(executor.map(send, rest))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("kubeconfig")
    parser.add_argument("objects")
    parser.add_argument("--workers", type=int, default=32)
    args = parser.parse_args()
    with open(args.objects) as handle:
        objs = json.load(handle)["objects"]
    started = time.monotonic()
    apply_all(args.kubeconfig, objs, args.workers)
    print("%.3f" % (time.monotonic() - started))


if __name__ == "__main__":
    sys.exit(main())
