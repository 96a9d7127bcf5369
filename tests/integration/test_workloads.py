"""Running pods: the control plane with workloads on (workload controllers, kube-scheduler, kwok
nodes). What the roles write is admitted by the real admission chain (PodTolerationRestriction,
ResourceQuota, LimitRanger, ServiceAccount), scheduled onto simulated nodes made from the
MachineSets, and reported Running, or refused."""
import json

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import mesh

from helpers import (ensure_namespace, isolated_policies, only_roles, play_installer_worker_machineset, play_olm_csv_succeeded,
                     play_profile_controller, wait_for)

GPU_TOLERATION = {"key": "workload", "operator": "Equal", "value": "ai-ml", "effect": "NoSchedule"}
MACHINE_API = "openshift-machine-api"


# Pods run on this module's own plane (kube-scheduler, kwok)
OWN_PLANE = True
WORKLOADS = True


def pods(kube, namespace, selector=None):
    return kube.list(kube.resource("v1", "Pod"), namespace=namespace, label_selector=selector)


def node_of(kube, namespace, name):
    found = kube.get(kube.resource("v1", "Pod"), name, namespace) or {}
    if (found.get("status") or {}).get("phase") == "Running":
        return found["spec"]["nodeName"]
    return None


def create(control_plane, obj):
    return control_plane.kubectl("create", "-o", "json", "-f", "-", input=json.dumps(obj), check=False)


def notebook(name, namespace, gpus=None, tolerations=None):
    """What the notebook controller makes of a Notebook: a one-replica StatefulSet running as
    default-editor (gpus: the nvidia.com/gpu limit the notebook asks for)."""
    container = {"name": name, "image": "kubeflownotebookswg/jupyter-scipy:v1.10.0",
                 "resources": {"limits": {"nvidia.com/gpu": str(gpus)}} if gpus else {}}
    spec = {"serviceAccountName": "default-editor", "containers": [container]}
    if tolerations:
        spec["tolerations"] = tolerations
    labels = {"statefulset": name, "notebook-name": name}
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 1, "serviceName": "", "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


def bare_pod(name, namespace, gpus=None, tolerations=None):
    spec = notebook(name, namespace, gpus, tolerations)["spec"]["template"]["spec"]
    spec.pop("serviceAccountName")
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def test_gpu_notebooks_land_on_gpu_nodes_and_admission_refuses_what_is_not_allowed(
        playbook, kube, control_plane, instance):
    profile, web = instance + "-p", instance + "-web"
    gpu_set = instance + "-a10g"
    # the cluster: one worker MachineSet (two nodes); OLM has installed the GPU operators
    play_installer_worker_machineset(kube)
    for namespace in ("openshift-nfd", "nvidia-gpu-operator"):
        ensure_namespace(kube, namespace)
    play_olm_csv_succeeded(kube, "openshift-nfd", "nfd")
    play_olm_csv_succeeded(kube, "nvidia-gpu-operator", "gpu-operator-certified")
    gpu = playbook("site", dict(only_roles("gpu"), kfocp_instance=instance, kfocp_gpu_enabled=True, scc_grants=[],
                                gpu_machinesets=[{"name": gpu_set, "accelerator": "nvidia-a10g",
                                                  "instance_type": {"aws": "g5.2xlarge"}}]))
    assert gpu.rc == 0, gpu.stdout[-3000:]
    # the machine API makes the nodes of both MachineSets (the autoscaled GPU one: one node)
    nodes = control_plane.add_machineset_nodes(MACHINE_API)
    assert sorted(nodes) == ["ci-x1-worker-a-0", "ci-x1-worker-a-1", gpu_set + "-0"]
    gpu_node = kube.get(kube.resource("v1", "Node"), gpu_set + "-0")
    assert GPU_TOLERATION["key"] in gpu_node["metadata"]["labels"]
    assert {"key": "workload", "value": "ai-ml", "effect": "NoSchedule"} in gpu_node["spec"]["taints"]
    assert gpu_node["status"]["allocatable"]["nvidia.com/gpu"] == "1"
    # kwok renews each node's lease, or node lifecycle would mark it NotReady and its pods not Ready
    leases = kube.resource("coordination.k8s.io/v1", "Lease")
    assert all(kube.get(leases, name, "kube-node-lease") for name in nodes)

    # a profile with a quota of one GPU, and a namespace outside the GPU whitelist
    control_plane.kubectl("create", "namespace", web)
    extra = dict(isolated_policies(instance), kfocp_instance=instance, service_mesh_flavour="ossm3",
                 profiles_quota_default={"requests.nvidia.com/gpu": "1"},
                 profiles_list=[{"name": profile, "owner": {"user": "alice@example.com"}}])
    assert playbook("profiles", extra).rc == 0
    play_profile_controller(control_plane, [profile], {"kfocp-test": instance})
    second = playbook("profiles", extra)
    assert second.rc == 0, second.stdout[-3000:]
    quotas = kube.resource("v1", "ResourceQuota")
    wait_for(lambda: (kube.get(quotas, "kf-resource-quota", profile).get("status") or {}).get("hard"), 30,
             what="the quota controller to compute kf-resource-quota")

    # the tenant's GPU notebook: admitted with the namespace's default GPU toleration, Running on the GPU node
    made = create(control_plane, notebook("gpu-nb", profile, gpus=1))
    assert made.returncode == 0, made.stderr
    assert wait_for(lambda: node_of(kube, profile, "gpu-nb-0"), 60, what="gpu-nb-0 Running") == gpu_set + "-0"
    running = kube.get(kube.resource("v1", "Pod"), "gpu-nb-0", profile)
    assert GPU_TOLERATION in running["spec"]["tolerations"]
    assert running["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] == "1"

    # the profile namespace's Pod Security level (namespace_policies_pod_security: baseline) admits a
    # tenant's notebook, which no stricter level would
    without_gpu = json.loads(json.dumps(running))  # the quota has room for one GPU only, which gpu-nb-0 holds
    for container in without_gpu["spec"]["containers"]:
        container["resources"] = {}
    assert_pod_security_labels_are_exact(kube, profile, [without_gpu], instance)

    # a second GPU notebook is over the profile's quota: the StatefulSet's pod is refused
    assert create(control_plane, notebook("gpu-nb2", profile, gpus=1)).returncode == 0
    sets = kube.resource("apps/v1", "StatefulSet")
    wait_for(lambda: kube.get(sets, "gpu-nb2", profile).get("status", {}).get("observedGeneration"), 30,
             what="the StatefulSet controller to handle gpu-nb2")
    events = wait_for(lambda: [e for e in kube.list(kube.resource("v1", "Event"), namespace=profile)
                               if e["involvedObject"]["name"] == "gpu-nb2" and "exceeded quota" in e["message"]],
                      30, what="the quota refusal of gpu-nb2-0")
    assert "kf-resource-quota" in events[0]["message"]
    assert not [p for p in pods(kube, profile) if p["metadata"]["name"] == "gpu-nb2-0"]
    greedy = create(control_plane, bare_pod("greedy", profile, gpus=2))
    assert greedy.returncode != 0 and "exceeded quota: kf-resource-quota" in greedy.stderr

    # outside the whitelist: the GPU toleration is refused; a GPU pod without it is never put on the GPU node
    sneaky = create(control_plane, bare_pod("sneaky", web, gpus=1, tolerations=[GPU_TOLERATION]))
    assert sneaky.returncode != 0 and "conflict with its namespace whitelist" in sneaky.stderr
    assert create(control_plane, bare_pod("plain", web)).returncode == 0
    assert wait_for(lambda: node_of(kube, web, "plain"), 60, what="plain Running").startswith("ci-x1-worker-a-")
    assert create(control_plane, bare_pod("wants-gpu", web, gpus=1)).returncode == 0
    unschedulable = wait_for(lambda: [c for c in (kube.get(kube.resource("v1", "Pod"), "wants-gpu", web).get("status")
                                                  or {}).get("conditions") or []
                                      if c["type"] == "PodScheduled" and c.get("reason") == "Unschedulable"],
                             30, what="the scheduler to find no node for wants-gpu")
    assert "untolerated taint" in unschedulable[0]["message"]
    assert node_of(kube, web, "wants-gpu") is None


def test_components_deployments_become_available_on_kwok_nodes(playbook, kube, control_plane, instance):
    control_plane.add_workers(2, prefix=instance + "-worker")
    ns = instance
    # a namespace of the render that someone else made: the role never labels it
    foreign = ensure_namespace(kube, "istio-system")
    foreign_labels = dict(foreign["metadata"].get("labels") or {})
    extra = dict(only_roles("service_mesh", "components"), kfocp_instance=instance, components_namespace=ns,
                 components_no_log=False, scc_grants=[])
    first = playbook("site", extra)
    assert first.rc == 0, first.stdout[-3000:]
    assert "FORCED BY" in first.stdout  # the Pod Security report
    assert kube.get(kube.resource("v1", "Namespace"), "istio-system")["metadata"].get("labels") == foreign_labels
    deployments = kube.list(kube.resource("apps/v1", "Deployment"), namespace=ns)
    assert len(deployments) >= 5, [d["metadata"]["name"] for d in deployments]

    def unavailable():
        live = kube.list(kube.resource("apps/v1", "Deployment"), namespace=ns)
        pending = [d["metadata"]["name"] for d in live if not any(
            c["type"] == "Available" and c["status"] == "True" for c in (d.get("status") or {}).get("conditions") or [])]
        return pending or None
    wait_for(lambda: unavailable() is None, 180, what="every Deployment of the components Available",
             error=lambda message: AssertionError("%s; still unavailable: %s; warnings: %s" % (
                 message, unavailable(), sorted(set(e["message"] for e in kube.list(kube.resource("v1", "Event"), namespace=ns)
                                                    if e.get("type") == "Warning"))[:8])))
    running = [p for p in pods(kube, ns) if p["status"].get("phase") == "Running"]
    assert len(running) >= len(deployments)
    # on plain workers only: none of them tolerates the GPU nodes' taint
    workers = set(n["metadata"]["name"] for n in kube.list(kube.resource("v1", "Node")) if not n["spec"].get("taints"))
    assert set(p["spec"]["nodeName"] for p in running) <= workers
    # every namespace the role created carries the labels, exact for the pods running there
    labelled = [n["metadata"]["name"] for n in kube.list(kube.resource("v1", "Namespace"),
                                                         label_selector="kfocp.io/instance=" + instance)]
    assert ns in labelled and "istio-system" not in labelled
    for name in labelled:
        assert_pod_security_labels_are_exact(kube, name, [p for p in pods(kube, name)
                                                          if p["status"].get("phase") == "Running"], instance)

    # the profile controller and KFAM trust the user header from the gateway the service_mesh role describes
    settings = {"flavour": "external", "external": {"namespace": "istio-system", "gateway": "istio-ingressgateway",
                                                    "api": "ossm2"}}
    principal = mesh.gateway_info(settings)["principal"]
    controller = kube.get(kube.resource("apps/v1", "Deployment"), "profiles-deployment", ns)
    for container in controller["spec"]["template"]["spec"]["containers"]:
        env = dict((e["name"], e.get("value")) for e in container.get("env") or [])
        assert env["ISTIO_INGRESS_GATEWAY_PRINCIPAL"] == principal
        assert env["KFP_UI_PRINCIPAL"] == "cluster.local/ns/%s/sa/ml-pipeline-ui" % ns
    gone = playbook("site", dict(extra, components_state="absent"))
    assert gone.rc == 0, gone.stdout[-3000:]


# ---------------------------------------------------------------- Pod Security Standards

PSA = "pod-security.kubernetes.io/"


def psa_namespace(kube, name, level):
    """A scratch namespace that enforces (and warns at) `level`, with its default service account."""
    ensure_namespace(kube, name, {PSA + "enforce": level, PSA + "enforce-version": "latest",
                                  PSA + "warn": level, PSA + "warn-version": "latest"})
    wait_for(lambda: kube.get(kube.resource("v1", "ServiceAccount"), "default", name), 30,
             what="the default service account of %s" % name)
    return name


def dry_run_pod(kube, namespace, name, template):
    """Create the pod with a server-side dry run; (admitted, message). A pod with ephemeral
    containers is created without them (a restricted pod) and they are added with a dry run of the
    ephemeralcontainers subresource, the only way they reach a pod, which admission checks too."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.client import KubeError
    res = kube.resource("v1", "Pod")
    spec = dict(template["spec"])
    ephemeral = spec.pop("ephemeralContainers", None)
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": dict(template["metadata"], name=name, namespace=namespace),
            "spec": spec}
    try:
        if not ephemeral:
            kube.request("POST", kube.path(res, namespace), query={"dryRun": "All"}, body=body)
            return True, ""
        live = kube.get(res, name, namespace) or kube.request("POST", kube.path(res, namespace), body=body)
        live["spec"]["ephemeralContainers"] = ephemeral
        live["metadata"].pop("resourceVersion")  # the scheduler and kwok update the pod meanwhile
        kube.request("PUT", kube.path(res, namespace, name) + "/ephemeralcontainers", query={"dryRun": "All"},
                     body=live)
        return True, ""
    except KubeError as err:
        if err.status == 422:
            return None, str(err)
        assert err.status == 403 and "violates PodSecurity" in str(err), (namespace, name, str(err))
        return False, str(err)


def pod_template(pod):
    """A pod as a template to create again: without what the scheduler and the Priority admission set."""
    return {"metadata": {"annotations": pod["metadata"].get("annotations") or {}},
            "spec": dict((k, v) for k, v in pod["spec"].items() if k not in ("nodeName", "priority", "preemptionPolicy"))}


def assert_pod_security_labels_are_exact(kube, namespace, running, instance):
    """The namespace's PodSecurity labels admit every pod of its own, without a warning, and no
    stricter level would: at least one of them is refused at the next stricter level (a server-side
    dry run in a scratch namespace labelled at that level)."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import pod_security as ps
    labels = kube.get(kube.resource("v1", "Namespace"), namespace)["metadata"]["labels"]
    level = labels[PSA + "enforce"]
    assert labels[PSA + "warn"] == labels[PSA + "audit"] == level
    assert labels[PSA + "enforce-version"] == ps.POLICY_VERSION
    templates = [pod_template(p) for p in running]
    kube.warnings.clear()
    for index, template in enumerate(templates):
        admitted, message = dry_run_pod(kube, namespace, "psa-check-%d" % index, template)
        assert admitted, message
    assert not [w for w in kube.warnings if "PodSecurity" in w], kube.warnings
    stricter = ps.stricter(level)
    if stricter is None:
        return
    scratch = psa_namespace(kube, "%s-%s-%s" % (instance, namespace[:20], stricter), stricter)
    for template in templates:  # the scratch namespace has only its default account (not a Pod Security field)
        template["spec"].pop("serviceAccount", None)
        template["spec"]["serviceAccountName"] = "default"
    refused = [message for index, template in enumerate(templates)
               for admitted, message in [dry_run_pod(kube, scratch, "psa-check-%d" % index, template)] if not admitted]
    assert refused, "every pod of %s would be admitted at %s, so %s is not the least permissive level" % (
        namespace, stricter, level)


def test_the_pod_security_levels_agree_with_the_real_podsecurity_admission(kube, instance):
    """Every row of the table (tests/pod_security_table.py) goes through the API server's own
    PodSecurity admission in a namespace of each level: it is admitted exactly at its level and
    the more permissive ones, and refused by the checks the function names."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import pod_security as ps
    from pod_security_table import INVALID, rows
    spaces = dict((level, psa_namespace(kube, "%s-%s" % (instance, level), level)) for level in ps.LEVELS)
    disagree = []
    for name, template, _expected, _checks in rows():
        level, reasons = ps.least_level(template["spec"], template["metadata"])
        for namespace_level, namespace in spaces.items():
            admitted, message = dry_run_pod(kube, namespace, name, template)
            if name in INVALID:
                assert admitted is None and INVALID[name] in message, (name, message)
                continue
            should = ps.LEVELS.index(namespace_level) >= ps.LEVELS.index(level)
            if admitted != should:
                disagree.append((name, namespace_level, level, message))
            elif not admitted and namespace_level == ps.stricter(level):
                # the admission's refusal names what the function's reasons name
                words = {"privileged": "privileged", "hostNamespaces": "host namespaces", "hostPorts": "hostPort",
                         "hostPathVolumes": "hostPath volumes", "restrictedVolumes": "restricted volume types",
                         "allowPrivilegeEscalation": "allowPrivilegeEscalation != false",
                         "capabilities_baseline": "non-default capabilities",
                         "capabilities_restricted": "unrestricted capabilities", "runAsNonRoot": "runAsNonRoot != true",
                         "runAsUser": "runAsUser=0", "seccompProfile_baseline": "seccompProfile",
                         "seccompProfile_restricted": "seccompProfile", "seLinuxOptions": "seLinuxOptions",
                         "procMount": "procMount", "procMount_restricted": "procMount", "sysctls": "forbidden sysctls",
                         "appArmorProfile": "AppArmor profile", "hostProbesAndHostLifecycle": "probe or lifecycle host",
                         "windowsHostProcess": "hostProcess"}
                missing = [r[0] for r in reasons if words[r[0]] not in message]
                if missing:
                    disagree.append((name, namespace_level, "reasons not in the refusal: %s" % missing, message))
    assert not disagree, "\n".join(map(str, disagree))
