"""make demo: converge the platform on the local control plane and show what kfocp created, and
its pods Running on simulated (kwok) nodes.

The control plane is started by `make up` (hack/cluster.py) and stays up; `make down` stops it.
"""
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

from cluster import ControlPlane
from egress_guard import EgressGuard

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / ".cache" / "collections"))  # the collection, as make venv links it
from helpers import play_profile_controller  # noqa: E402  (the controller's part: it is not built here)

USERS = (("alice", "htpasswd:alice"), ("bob", "htpasswd:bob"), ("carol", "htpasswd:carol"))
# Automatic profiles for the users who log in.
PROFILES = ("-e", "profiles_auto_from_users=true")


def ansible_playbook(playbook, *args):
    env = dict(os.environ, ANSIBLE_CONFIG=str(ROOT / "ansible.cfg"), KFOCP_KUBECONFIG=str(PLANE.kubeconfig))
    cmd = [str(BIN / "ansible-playbook"), "-i", str(ROOT / "inventories" / "local" / "hosts.yml"),
           str(ROOT / "playbooks" / playbook), *args]
    print("+ " + " ".join(cmd[0:1] + cmd[3:]), flush=True)
    changed = 0
    with subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True) as proc:
        for line in proc.stdout:
            print(line, end="", flush=True)
            found = re.search(r"\bchanged=(\d+)", line)
            changed += int(found.group(1)) if found else 0
    if proc.returncode:
        sys.exit("%s failed (exit code %d)" % (playbook, proc.returncode))
    return changed


def users_log_in():
    """Three people log in: OpenShift creates a User object (with its identity) for each."""
    items = [{"apiVersion": "user.openshift.io/v1", "kind": "User", "metadata": {"name": name}, "identities": [identity]}
             for name, identity in USERS]
    PLANE.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    print("Users logged in: %s" % ", ".join(name for name, unused in USERS), flush=True)


def show_profiles():
    """The profiles, their namespaces and the policies in them."""
    profiles = json.loads(PLANE.kubectl("get", "profiles.kubeflow.org", "-o", "json").stdout)["items"]
    print("\nProfiles:")
    for profile in profiles:
        quota = (profile["spec"].get("resourceQuotaSpec") or {}).get("hard", {})
        print("  %-10s owner=%-8s gpu=%s" % (profile["metadata"]["name"], profile["spec"]["owner"]["name"],
                                             quota.get("requests.nvidia.com/gpu", "-")))
    for profile in profiles:
        name = profile["metadata"]["name"]
        namespace = PLANE.kubectl("get", "namespace", name, "-o", "json", check=False)
        if namespace.returncode:
            continue
        meta = json.loads(namespace.stdout)["metadata"]
        print("\nNamespace %s: labels=%s defaultTolerations=%s" % (
            name, ",".join("%s=%s" % kv for kv in sorted(meta.get("labels", {}).items())),
            meta.get("annotations", {}).get("scheduler.alpha.kubernetes.io/defaultTolerations")))
        print(PLANE.kubectl("get", "servicemeshmembers.maistra.io,limitranges,rolebindings,resourcequotas",
                            "-n", name).stdout)


def show_pods():
    """The pods of the platform, scheduled onto the simulated (kwok) nodes and Running there."""
    pods = json.loads(PLANE.kubectl("get", "pods", "-A", "-o", "json").stdout)["items"]
    nodes = json.loads(PLANE.kubectl("get", "nodes", "-o", "json").stdout)["items"]
    kwok = set(n["metadata"]["name"] for n in nodes
               if (n["metadata"].get("annotations") or {}).get("kwok.x-k8s.io/node") == "fake")
    print("\nNodes (simulated by kwok): %s" % ", ".join(sorted(kwok)))
    print("Pods:")
    running = 0
    for pod in sorted(pods, key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"])):
        node, phase = pod["spec"].get("nodeName") or "-", pod["status"].get("phase")
        running += phase == "Running" and node in kwok
        print("  %-28s %-52s %-9s %s" % (pod["metadata"]["namespace"], pod["metadata"]["name"], phase, node))
    if not running:
        sys.exit("no pod is Running on a kwok node: is the control plane up with workloads (make up)?")
    print("%d of %d pods Running on kwok nodes" % (running, len(pods)))


def wait_deployments(timeout=180):
    """Wait until every Deployment is Available (the scheduler and kwok run them)."""
    proc = PLANE.kubectl("wait", "--for=condition=Available", "deployments", "--all", "-A",
                         "--timeout=%ds" % timeout, check=False)
    if proc.returncode:
        print("not every Deployment became Available within %ds:\n%s" % (timeout, proc.stderr[-2000:]), flush=True)


def owned_objects():
    """Every object labelled as kfocp's, as 'Kind namespace/name' lines."""
    kinds = PLANE.kubectl("api-resources", "--verbs=list", "-o", "name").stdout.split()
    skip = {"events", "events.events.k8s.io", "componentstatuses"}
    kinds = [k for k in kinds if k not in skip]
    out = PLANE.kubectl("get", ",".join(kinds), "-A", "-l", "app.kubernetes.io/managed-by=kfocp", "-o", "json")
    rows = []
    for item in json.loads(out.stdout)["items"]:
        meta = item["metadata"]
        where = "%s/%s" % (meta["namespace"], meta["name"]) if meta.get("namespace") else meta["name"]
        rows.append((item["kind"], where, meta["labels"].get("kfocp.io/set", "")))
    return sorted(rows)


PLANE = ControlPlane(os.environ.get("KFOCP_CLUSTER_DIR", ROOT / ".cluster"))


def main():
    if not PLANE.running():
        sys.exit("the local control plane is not running: run `make up` (or `make demo`)")
    if os.environ.get("KFOCP_NETNS", "1") == "1" and not os.environ.get("KFOCP_DEMO_IN_NETNS"):
        # the demo runs with no route off this machine (hack/netns.py): the one port it reaches
        # outside its network namespace is the API server's, which keeps running after it
        port = urlsplit(PLANE.server).port
        command = [sys.executable, str(ROOT / "hack" / "netns.py"), "--forward", str(port), "--",
                   sys.executable, str(Path(__file__).resolve())]
        sys.exit(subprocess.call(command, env=dict(os.environ, KFOCP_DEMO_IN_NETNS="1")))
    # nothing the demo or the control plane runs may dial an address off this machine
    guard = EgressGuard(roots=[os.getpid()], plane_dirs=[PLANE.dir]).start()
    seen = len(PLANE.egress_events())
    demo()
    refused = ["%s (meant for %s)" % (e["target"], e["meant_for"]) for e in PLANE.egress_events()[seen:]
               if e["outcome"] == "refused"]
    found = guard.stop()
    print("\nConnections off this machine: %d. Calls of the API server refused by the egress proxy: %s"
          % (len(found), "; ".join(sorted(set(refused))) or "none"))
    if found:
        sys.exit("connections off this machine:\n" + "\n".join(found))


def demo():
    users_log_in()
    ansible_playbook("site.yml", *PROFILES)
    print("\nKubeflow's profile controller is not built here: writing the namespaces, service accounts and "
          "quotas it creates for %s" % ", ".join(play_profile_controller(PLANE)), flush=True)
    print("\nThe profile namespaces exist: their policies follow.")
    ansible_playbook("site.yml", *PROFILES)
    print("\nA further run changes nothing:")
    if ansible_playbook("site.yml", *PROFILES):
        sys.exit("the further run of site.yml reported changes: it should report none")
    show_profiles()
    wait_deployments()
    show_pods()
    rows = owned_objects()
    print("\nWhat kfocp created (%d objects):" % len(rows))
    width = max([len(kind) for kind, unused_where, unused_set in rows] or [4])
    for kind, where, set_name in rows:
        print("  %-*s  %-60s set=%s" % (width, kind, where, set_name))
    kubectl = PLANE.state()["bins"]["kubectl"]
    print("""
Look at it yourself:
  export KUBECONFIG=%s
  %s get rolebindings -A -l app.kubernetes.io/managed-by=kfocp
  %s get securitycontextconstraints
  %s get profiles.kubeflow.org

The control plane keeps running; `make down` stops it.""" % (PLANE.kubeconfig, kubectl, kubectl, kubectl))


if __name__ == "__main__":
    main()
