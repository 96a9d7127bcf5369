"""Case 4b, kfocp's roles: playbooks/profiles.yml (profiles, then namespace_policies) converging N
declared profiles end to end, on one cluster or on several as hosts of one inventory.

Run 1 creates the Profiles. The profile controller's namespaces and objects are then written by
tests/helpers.play_profile_controller (the controller is not built here; not timed). Run 2 applies
the contributor access and the policies of the new namespaces. Run 3 is the no-op re-run. The
converge time is runs 1 and 2; the objects counted are those the roles made, labelled with the
install's instance or patched by it.

Each profile gets the 12 objects of benchmarks/workload.py from the roles: its Profile, one
contributor (RoleBinding and AuthorizationPolicy), and the policies of its namespace (the
tolerations patch, ServiceMeshMember, LimitRange, SCC grant, NetworkPolicy, three
AuthorizationPolicies for serverless, the data lake annotation on default-editor).

Its physical reference, case 5b (`limit_run`), is the limit client applying the very objects the
roles apply, built in process by the same builders with kfocp's labels, in the same two steps
around the profile controller: the roles write other kinds than the workload of cases 1-5 (three
AuthorizationPolicies a namespace, patches of namespaces and service accounts that exist), and
the API server's cost differs by kind.

Clusters are hosts of a generated inventory that reuses inventories/local's group_vars. `forks`
runs one ansible-playbook over all hosts (Ansible forks across hosts); `runners` runs one
ansible-runner per cluster at the same time, as AWX runs one job per cluster.
"""
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
for _path in (ROOT / "benchmarks", ROOT / "hack", ROOT / "tests", ROOT / "operator", ROOT / ".cache" / "collections"):
    if str(_path) not in sys.path:
        sys.path.append(str(_path))

import limit  # noqa: E402
import timing  # noqa: E402
import yaml  # noqa: E402
from helpers import ansible_env, labelled_objects, play_profile_controller  # noqa: E402
from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o  # noqa: E402
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import METADATA_ACCEPT  # noqa: E402

INSTANCE = "bench"
PLAYBOOK = ROOT / "playbooks" / "profiles.yml"
FLOOR_PLAYBOOK = ROOT / "benchmarks" / "playbooks" / "noop-floor.yml"


def extravars(n):
    """The declared state: N profiles, each with an owner and one contributor, and the policy
    features that give each profile namespace the workload's objects."""
    return {
        "kfocp_instance": INSTANCE,
        "profiles_list": [{"name": "bench-%05d" % i, "owner": {"user": "user%05d@example.com" % i},
                           "contributors": [{"user": "lead@example.com", "role": "edit"}]} for i in range(n)],
        "namespace_policies_mesh_mode": "member",
        "namespace_policies_scc": "nonroot",
        "namespace_policies_serverless": True,
        "namespace_policies_data_lake": True,
        "namespace_policies_data_lake_role_template": "arn:aws:iam::123456789012:role/kf-{namespace}",
    }


def inventory(planes, directory):
    """An inventory with one host per control plane (c1, c2, ...), each with its kubeconfig, and
    the local inventory's group_vars. Returns its path and the host names."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    hosts = dict(("c%d" % (i + 1), {"kfocp_kubeconfig": str(plane.kubeconfig)}) for i, plane in enumerate(planes))
    doc = {"all": {"vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable},
                   "hosts": hosts}}
    (directory / "hosts.yml").write_text(json.dumps(doc, indent=2))
    link = directory / "group_vars"
    if not link.exists():
        link.symlink_to(ROOT / "inventories" / "local" / "group_vars")
    return directory / "hosts.yml", sorted(hosts)


def _playbook(inventory_file, extra_file, env, playbook=PLAYBOOK):
    cmd = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory_file), str(playbook),
           "-e", "@%s" % extra_file]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=ROOT)
    if proc.returncode:
        raise RuntimeError("%s failed:\n%s" % (Path(playbook).name, (proc.stdout + proc.stderr)[-4000:]))
    return sum(int(part.split("=", 1)[1]) for line in proc.stdout.splitlines() if " : ok=" in line
               for part in line.split() if part.startswith("changed="))


def _runners(inventory_file, hosts, extra, env, workdir):
    import ansible_runner

    def one(host):
        private = Path(workdir) / ("runner-%s-%d" % (host, int(time.monotonic() * 1000)))
        private.mkdir(parents=True)
        result = ansible_runner.run(private_data_dir=str(private), playbook=str(PLAYBOOK),
                                    inventory=str(inventory_file), limit=host, extravars=extra, envvars=env,
                                    quiet=True, project_dir=str(ROOT))
        if result.rc:
            raise RuntimeError("profiles.yml failed for %s:\n%s" % (host, result.stdout.read()[-4000:]))
        return sum((result.stats or {}).get("changed", {}).values())

    with ThreadPoolExecutor(len(hosts)) as pool:
        return sum(pool.map(one, hosts))


def run(planes, n, workdir, mode="forks", floor=False):
    """Converge N profiles on every plane with the roles; return the timings and counts, and with
    `floor` the no-op re-run's floor (noop_floor) on the first plane."""
    workdir = Path(workdir)
    inventory_file, hosts = inventory(planes, workdir / ("inventory-%s-%d" % (mode, len(planes))))
    extra = extravars(n)
    extra_file = workdir / ("roles-extra-%d.json" % n)
    extra_file.write_text(json.dumps(extra))
    env = ansible_env(None, {"ANSIBLE_FORKS": str(max(10, len(hosts)))})
    env.pop("KFOCP_KUBECONFIG", None)

    def converge(run_env=None):
        started = time.monotonic()
        run_env = run_env or env
        changed = _playbook(inventory_file, extra_file, run_env) if mode == "forks" else \
            _runners(inventory_file, hosts, extra, run_env, workdir)
        return time.monotonic() - started, changed

    cpu_file = workdir / ("converge-cpu-%s-%d-%d.jsonl" % (mode, len(planes), n))
    converge_env = dict(env, **timing.cpu_env(cpu_file, env))
    meter = timing.Meter(planes)
    with meter:
        profiles_s = converge(converge_env)[0]
    started = time.monotonic()
    with ThreadPoolExecutor(len(planes)) as pool:
        list(pool.map(play_profile_controller, planes))
    controller_s = time.monotonic() - started
    with meter:
        policies_s = converge(converge_env)[0]
    timing_file = workdir / ("noop-timing-%s-%d.json" % (mode, len(planes)))
    noop_s, noop_changed = converge(dict(env, **timing.env(timing_file)))
    made = [_made(plane) for plane in planes]
    objects = sum(len(found) for found in made)
    floor_figures = {"noop_floor": noop_floor(planes[0], made[0], inventory_file, extra_file, env)} if floor else {}
    return {**floor_figures, "profiles_s": round(profiles_s, 2), "controller_s": round(controller_s, 2),
            "policies_s": round(policies_s, 2), "converge_s": round(profiles_s + policies_s, 2),
            "noop_s": round(noop_s, 2), "noop_changed": noop_changed, "objects": objects,
            "client_cpu_split": timing.cpu_split(cpu_file, meter.client), **meter.figures(),
            "noop_breakdown": timing.read(timing_file, noop_s),
            "load1": round(os.getloadavg()[0], 2)}


def noop_floor(plane, made, inventory_file, extra_file, env, attempts=3):
    """What any no-op re-run of the roles must spend, each part the best of `attempts`: Ansible's
    part (`ansible_s`: benchmarks/playbooks/noop-floor.yml, one module started on each host, with
    the roles' inventory and extra variables), and the reads (`reads_s`: the Python limit client
    reading the metadata of the roles' objects, `made`, one LIST per kind and label at once and
    decoded, the least that tells that none of them drifted). `floor_s` is their sum."""
    def play():
        started = time.monotonic()
        _playbook(inventory_file, extra_file, env, FLOOR_PLAYBOOK)
        return time.monotonic() - started

    server, pool, headers = limit.connect(str(plane.kubeconfig))
    resources = limit.discover(server, pool, headers)
    accept = dict(headers, Accept=METADATA_ACCEPT)
    accept.pop("Content-Type", None)
    selectors = {o.INSTANCE: "%s=%s" % (o.INSTANCE, INSTANCE), o.PATCHED_PREFIX + INSTANCE: o.PATCHED_PREFIX + INSTANCE}
    lists = sorted(set((obj["apiVersion"], obj["kind"], selector) for obj in made.values()
                       for label, selector in selectors.items() if label in (obj["metadata"].get("labels") or {})))

    def read(job):
        api_version, kind, selector = job
        resp = pool.request("GET", limit.list_url(server, resources, api_version, kind),
                            fields={"labelSelector": selector}, headers=accept)
        if resp.status != 200:
            raise RuntimeError("listing %s %s: %s" % (kind, selector, resp.data[:300]))
        return len(json.loads(resp.data)["items"])

    def reads():
        started = time.monotonic()
        with ThreadPoolExecutor(len(lists)) as executor:
            count = sum(executor.map(read, lists))
        if count < len(made):
            raise RuntimeError("the floor's reads found %d of the roles' %d objects" % (count, len(made)))
        return time.monotonic() - started

    ansible_s = min(play() for _attempt in range(attempts))
    reads_s = min(reads() for _attempt in range(attempts))
    return {"ansible_s": round(ansible_s, 2), "reads_s": round(reads_s, 2), "floor_s": round(ansible_s + reads_s, 2),
            "lists": len(lists)}


def _made(plane):
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client
    return labelled_objects(Client.from_params({"kubeconfig": str(plane.kubeconfig)}), INSTANCE)


def _settings(n):
    """The profiles and namespace_policies settings of the roles' run: inventories/local's
    group_vars and extravars(n), as the operator's fast path derives them from variables."""
    from kfocp_operator.fastpath import tenancy_settings
    variables = {}
    for path in sorted((ROOT / "inventories" / "local" / "group_vars" / "all").glob("*.yml")):
        variables.update(yaml.safe_load(path.read_text()) or {})
    variables.update(extravars(n))
    settings = tenancy_settings(variables, INSTANCE)
    return settings["profiles"], settings["namespace_policies"]


def limit_run(plane, n, apply=None):
    """Case 5b (5d with `apply=limit.go_apply_all`, the Go client): the limit client writes the objects the roles write (Profiles; the profile
    controller's part, not timed; contributor access and policies), labelled as kfocp labels them.
    The no-op re-run applies them all again: the limit does not compare."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o, tenancy
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client
    client = Client.from_params({"kubeconfig": str(plane.kubeconfig)})
    profile_settings, policy_settings = _settings(n)
    apply = apply or limit.apply_all

    def prepared(objs, set_name):
        return [o.prepare(obj, INSTANCE, set_name)[0] for obj in objs]

    first = prepared(tenancy.build_profiles(client, profile_settings)[0], "profiles")
    meter = timing.Meter([plane])
    started = time.monotonic()
    with meter:
        apply(str(plane.kubeconfig), first)
    profiles_s = time.monotonic() - started
    play_profile_controller(plane)
    second = prepared(tenancy.build_profiles_access(client, profile_settings)[0], "profiles-access") + \
        prepared(tenancy.build_namespace_policies(client, policy_settings)[0], "namespace-policies")
    started = time.monotonic()
    with meter:
        apply(str(plane.kubeconfig), second)
    policies_s = time.monotonic() - started
    started = time.monotonic()
    apply(str(plane.kubeconfig), first + second)
    noop_s = time.monotonic() - started
    return {"profiles_s": round(profiles_s, 2), "policies_s": round(policies_s, 2),
            "converge_s": round(profiles_s + policies_s, 2), "noop_s": round(noop_s, 2),
            "objects": len(first) + len(second), **meter.figures(),
            "load1": round(os.getloadavg()[0], 2)}
