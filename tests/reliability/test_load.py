"""Load: many Profiles created at once while the operator runs, and many Users logging in at once.

Kubeflow's profile controller (played by the test) makes a namespace for every Profile; the
operator's fast path gives each its policies, and each User (automatic profiles) a Profile. At the
end every profile namespace holds exactly its policy set (namespace_policies.objects_for_namespace
for that namespace: none missing, none duplicated, no other kfocp object), every User has exactly
one Profile, and the operator's memory (VmRSS, sampled through the run) stayed bounded.

KFOCP_LOAD_PROFILES and KFOCP_LOAD_USERS set the sizes: 2000 and 200 in `make soak`, fewer in
`make test`. The figures are printed and written to tests/output/operator_load.json."""
import json
import os
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import namespace_policies
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.profiles import profile_name
from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import Client
from helpers import ROOT, labelled_objects, operator_account, play_profile_controller, roles_off_except, wait_for

sys.path[:0] = [str(ROOT / "operator"), str(ROOT / "operator" / "hack")]

import launch  # noqa: E402
from kfocp_operator.fastpath import tenancy_settings  # noqa: E402

PROFILES = int(os.environ.get("KFOCP_LOAD_PROFILES", "200"))
USERS = int(os.environ.get("KFOCP_LOAD_USERS", "20"))
NS = launch.NAMESPACE
MIB = 1024 * 1024
SELECTOR = "app.kubernetes.io/part-of=kubeflow-profile"


def rss_bound(namespaces):
    """The operator's memory allowed for this many profile namespaces: 200 MiB at 2200 (the full
    run), half of it fixed and half in proportion to the namespaces (measured: 64 MiB at 220,
    146 MiB at 2200, from 52 MiB idle)."""
    return (100 + 100 * namespaces / 2200.0) * MIB


def _condition(cr, kind):
    for cond in ((cr or {}).get("status") or {}).get("conditions") or []:
        if cond["type"] == kind:
            return cond
    return {}


def _percentile(values, p):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(p / 100.0 * len(ordered))) - 1))]


class Poller(threading.Thread):
    """Records when each profile namespace is first seen, and when all its policy objects are."""

    def __init__(self, kube, instance, expected, interval=0.25):
        super().__init__(daemon=True)
        self.kube, self.instance, self.interval = kube, instance, interval
        self.kinds = sorted(set((obj["apiVersion"], obj["kind"]) for obj in expected if obj["kind"] != "Namespace"))
        self.patch = [obj for obj in expected if obj["kind"] == "Namespace"]
        self.seen, self.complete = {}, {}
        self.stop = threading.Event()

    def run(self):
        namespaces = self.kube.resource("v1", "Namespace")
        while not self.stop.is_set():
            now = time.monotonic()
            live = self.kube.list(namespaces, label_selector=SELECTOR, metadata_only=True)
            for ns in live:
                self.seen.setdefault(ns["metadata"]["name"], now)
            found = None
            for api_version, kind in self.kinds:
                items = self.kube.list(self.kube.resource(api_version, kind),
                                       label_selector="kfocp.io/instance=%s" % self.instance, metadata_only=True)
                names = set(i["metadata"]["namespace"] for i in items)
                found = names if found is None else found & names
            if self.patch:
                patched = set(ns["metadata"]["name"] for ns in live
                              if all(k in (ns["metadata"].get("annotations") or {})
                                     for k in self.patch[0]["metadata"].get("annotations", {})
                                     if not k.startswith("kfocp.io/")))
                found = patched if found is None else found & patched
            for name in found or ():
                self.complete.setdefault(name, time.monotonic())
            self.stop.wait(self.interval)


class Memory(threading.Thread):
    """Samples the operator's VmRSS."""

    def __init__(self, operator, interval=0.5):
        super().__init__(daemon=True)
        self.operator, self.interval = operator, interval
        self.samples = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            rss = self.operator.rss()
            if rss:
                self.samples.append(rss)
            self.stop.wait(self.interval)


def test_profiles_and_users_at_once_get_exactly_their_objects_with_bounded_memory(control_plane, tmp_path):
    plane = control_plane  # this module's own (tests/reliability/conftest.py)
    kube = Client.from_params({"kubeconfig": str(plane.kubeconfig)})
    kubeconfig = operator_account(plane, kube, tmp_path)
    operator = launch.Operator(kubeconfig, tmp_path / "operator.log", ["--default-reconcile-period", "0"])
    name = "kf-load-" + uuid.uuid4().hex[:4]
    cr = {"apiVersion": "kfocp.io/v1alpha1", "kind": "Kubeflow", "metadata": {"name": name, "namespace": NS},
          "spec": dict(roles_off_except("scc", "profiles", "namespace_policies"), profilesAutoFromUsers=True,
                       sccGrantsDefault=[])}
    kubeflows = kube.resource("kfocp.io/v1alpha1", "Kubeflow")
    teams = ["load-%04d" % i for i in range(PROFILES)]
    users = ["user-%04d" % i for i in range(USERS)]
    settings = tenancy_settings({}, name)["namespace_policies"]
    sample = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "sample", "labels": {
        "app.kubernetes.io/part-of": "kubeflow-profile"}}}
    poller = Poller(kube, name, namespace_policies.objects_for_namespace(sample, settings))
    memory = Memory(operator)
    try:
        operator.start(detach=True)
        plane.kubectl("create", "-f", "-", input=json.dumps(cr))
        wait_for(lambda: _condition(kube.get(kubeflows, name, NS), "Ready").get("status") == "True", 600,
                 interval=1, what="the Kubeflow %s Ready" % name)
        idle = operator.rss()
        memory.start()
        poller.start()

        # At once: the Profiles (one request, as a GitOps sync would make them), and the Users.
        started = time.monotonic()
        profiles = [{"apiVersion": "kubeflow.org/v1", "kind": "Profile", "metadata": {"name": team},
                     "spec": {"owner": {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": team + "@x"}}}
                    for team in teams]
        user_res = kube.resource("user.openshift.io/v1", "User")

        def login(user):
            kube.request("POST", kube.path(user_res), body={"apiVersion": "user.openshift.io/v1", "kind": "User",
                                                            "metadata": {"name": user},
                                                            "identities": ["htpasswd:%s" % user]})

        with ThreadPoolExecutor(max_workers=16) as pool:
            logins = [pool.submit(login, user) for user in users]
            plane.kubectl("apply", "--server-side", "--field-manager=kubeflow-user", "-f", "-",
                          input=json.dumps({"apiVersion": "v1", "kind": "List", "items": profiles}))
            for future in logins:
                future.result()
        # Kubeflow's profile controller makes the namespaces: first those of the Profiles, then
        # those of the Users' Profiles as the operator creates them.
        play_profile_controller(plane, teams)
        auto = [profile_name(user) for user in users]
        profile_res = kube.resource("kubeflow.org/v1", "Profile")
        wait_for(lambda: set(auto) <= set(p["metadata"]["name"] for p in kube.list(profile_res, metadata_only=True)),
                 300, interval=1, what="a Profile for every User")
        play_profile_controller(plane, auto)
        every = set(teams) | set(auto)
        wait_for(lambda: every <= set(poller.complete), max(600, 0.6 * len(every)), interval=1,
                 what="the policies of all %d profile namespaces" % len(every))
        converged = time.monotonic() - started
    finally:
        poller.stop.set()
        memory.stop.set()
        operator.stop()
    latencies = [poller.complete[n] - poller.seen.get(n, poller.complete[n]) for n in every]
    peak = max(memory.samples + [idle or 0])

    # Exactly the policy set in every profile namespace, and nothing else of kfocp's.
    owned = labelled_objects(kube, name, patched=False)
    by_namespace = {}
    for key, obj in owned.items():
        by_namespace.setdefault(key[2], {})[key] = obj
    live_namespaces = kube.list(kube.resource("v1", "Namespace"), label_selector=SELECTOR)
    namespaces = dict((ns["metadata"]["name"], dict(ns, apiVersion="v1", kind="Namespace")) for ns in live_namespaces)
    wrong, missing_ns = [], sorted(every - set(namespaces))
    for ns_name in sorted(every & set(namespaces)):
        live_ns = namespaces[ns_name]
        expected = namespace_policies.objects_for_namespace(live_ns, settings)
        want = {}
        for obj in expected:
            prepared = o.prepare(obj, name, "namespace-policies")[0]
            meta = prepared["metadata"]
            want[(o.group_version(prepared["apiVersion"])[0], prepared["kind"], meta.get("namespace") or "",
                  meta["name"])] = prepared
        have = dict(by_namespace.get(ns_name, {}))
        for key, prepared in want.items():
            live = live_ns if key[1] == "Namespace" else have.pop(key, None)
            if live is None or not o.contains(live, prepared):  # the same labels, fields and applied digest
                wrong.append("%s: %s %s" % (ns_name, key[1], "missing" if live is None else "differs"))
        wrong += ["%s: extra %s %s" % (ns_name, key[1], key[3]) for key in have]
    owners = {}
    for profile in kube.list(kube.resource("kubeflow.org/v1", "Profile")):
        owner = (profile.get("spec") or {}).get("owner") or {}
        owners.setdefault(owner.get("name"), []).append(profile["metadata"]["name"])
    not_one = dict((user, owners.get(user, [])) for user in users if len(owners.get(user, [])) != 1)

    figures = {"profiles": PROFILES, "users": USERS, "namespaces": len(every), "converge_s": round(converged, 1),
               "p50_s": round(_percentile(latencies, 50), 2), "p95_s": round(_percentile(latencies, 95), 2),
               "p99_s": round(_percentile(latencies, 99), 2), "max_s": round(max(latencies), 2),
               "rss_idle_mib": round((idle or 0) / MIB, 1), "rss_peak_mib": round(peak / MIB, 1),
               "rss_bound_mib": round(rss_bound(len(every)) / MIB, 1), "rss_samples": len(memory.samples),
               "kfocp_objects": len(owned), "wrong": len(wrong), "users_without_exactly_one_profile": len(not_one),
               "load1": round(os.getloadavg()[0], 2), "cpus": os.cpu_count()}
    out = ROOT / "tests" / "output"
    out.mkdir(exist_ok=True)
    (out / "operator_load.json").write_text(json.dumps(figures, indent=2))
    print("load: %s" % figures)
    assert not missing_ns, "profile namespaces missing: %s" % missing_ns[:10]
    assert not wrong, "profile namespaces without exactly their policy set: %s" % wrong[:20]
    assert not not_one, "Users without exactly one Profile: %s" % dict(list(not_one.items())[:10])
    assert memory.samples, "the operator's memory was never sampled"
    assert peak <= rss_bound(len(every)), "the operator's peak RSS %.0f MiB is over %.0f MiB" % (
        peak / MIB, rss_bound(len(every)) / MIB)
