# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What playbooks/verify.yml checks on an OpenShift cluster, and how it decides each check.

targets() says where to look, from the same variables the roles read (so the Route, the mesh and
the GPU taint are where the auth, service_mesh and gpu roles put them); reviews() lists the access
reviews the SCC check needs; rows() decides every check from what the cluster holds. Each row is
{check, target, pass, detail}. The fields read of other programs, and where they are defined:

- ``openshift.io/scc`` on a pod: the SCC that OpenShift's SCC admission admitted it under
  (openshift/api security/v1 ValidatedSCCAnnotation). Admission allows an SCC when its users or
  groups name the pod's service account, or RBAC allows that account (or the user who created the
  pod) ``use`` of the SCC in the pod's namespace (apiserver-library-go sccmatching
  ConstraintAppliesTo). verify asks the API server's authorizer the same question for the pod's
  service account, with system:authenticated among its groups: the SCCs every authenticated user
  may use (restricted-v2) count, the ones only the creating user could use do not.
- Route ``status.ingress[].conditions[type=Admitted].status`` (openshift/api route/v1, written by
  the router's StatusAdmitter).
- ServiceMeshMemberRoll ``status.members``, ``status.pendingMembers`` and the ``Ready`` condition:
  the Service Mesh 2 operator sets Ready False while a member is pending (maistra/istio-operator
  memberroll controller).
- Istio (Service Mesh 3) ``status.conditions[type=Ready]`` (sailoperator.io/v1).
- Node ``status.capacity["nvidia.com/gpu"]``: the NVIDIA device plugin's resource.
- oauth-proxy's answer to a request without a session, with --skip-provider-button: a 302 to the
  OAuth server's authorization endpoint with its client_id and redirect_uri (oauth-proxy
  oauthproxy.go OAuthStart, providers GetLoginRedirectURL).
- The references between the Kubeflow objects of the verified namespaces, as the references
  module finds them (plugins/module_utils/references.py): one failing row per broken reference.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    from urllib.parse import parse_qs, urlsplit
except ImportError:  # pragma: no cover  # Python 2
    from urlparse import parse_qs, urlsplit

from ansible_collections.kfocp.kubeflow.plugins.module_utils import references
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import auth, gpu, mesh, pod_security
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import require

SCC_ANNOTATION = "openshift.io/scc"
GPU_RESOURCE = "nvidia.com/gpu"
ROUTE_ADMITTED = "Admitted"
# Service Mesh 2's member roll and Service Mesh 3's Istio resource
MEMBER_ROLL = {"api_version": mesh.MAISTRA_V1, "kind": "ServiceMeshMemberRoll", "name": "default"}
ISTIO = {"api_version": mesh.SAIL, "kind": "Istio"}
# The Gateway upstream's VirtualServices publish the UIs on (in the components' namespace).
KUBEFLOW_GATEWAY = "kubeflow-gateway"
# The variables targets() reads, besides service_mesh_*.
MESH_KEYS = mesh.MEMBERSHIP_KEYS + ("gateway",)


def _enabled(variables, role):
    value = variables.get("kfocp_%s_enabled" % role)
    return True if value is None else value in (True, "true", "True", "yes", 1)


def mesh_settings(variables):
    """The service_mesh role's settings from its variables (service_mesh_<key>), defaults for the rest."""
    return dict((key, variables["service_mesh_" + key]) for key in MESH_KEYS
                if variables.get("service_mesh_" + key) is not None)


def targets(variables):
    """Where each check looks, from the roles' variables: {namespaces, route, oauth, mesh, gpu,
    references}.

    - route: the auth role's Route (auth_name in auth_namespace, or the gateway's namespace), or,
      with auth off, the service_mesh role's edge Route when service_mesh_gateway.route is on;
    - mesh: what says the members are in: the member roll of the Service Mesh 2 control plane, the
      Istio resource of Service Mesh 3, nothing mesh-wide for an existing mesh; and the labels each
      verified namespace needs to be a member (Service Mesh 3 and existing meshes join by label);
    - gpu: the gpu role's node taint and its GPU MachineSets;
    - references: what the references module needs: the kubeflow Gateway of the components'
      namespace, the principal of the gateway the service_mesh role runs and the mesh's root
      namespace."""
    # a variable that is not set comes as None or '' (the vars lookup's default): the role's default applies
    variables = dict((key, value) for key, value in (variables or {}).items() if value is not None and value != "")
    names = variables.get("kfocp_verify_namespaces") or []
    require(isinstance(names, list) and all(isinstance(n, str) and n for n in names), "kfocp_verify_namespaces",
            "must be a list of namespace names", "Give e.g. [kubeflow]")
    settings = mesh.normalise(mesh_settings(variables))
    gateway = mesh.gateway_info(settings)
    out = {"namespaces": list(names), "route": None, "oauth": None, "mesh": None, "gpu": None, "references": None}
    if _enabled(variables, "auth"):
        host = variables.get("auth_host") or ""
        out["route"] = {"namespace": variables.get("auth_namespace") or gateway["namespace"],
                        "name": variables.get("auth_name") or auth.DEFAULTS["name"], "host": host}
        out["oauth"] = {"client_id": variables.get("auth_client_id") or auth.DEFAULTS["client_id"],
                        "redirect_uri": "https://%s/oauth/callback" % host}
    elif settings["gateway"]["route"] and settings["flavour"] != "external":
        out["route"] = {"namespace": gateway["namespace"], "name": gateway["name"],
                        "host": settings["gateway"]["route_host"]}
    if _enabled(variables, "service_mesh"):
        found = {"flavour": settings["flavour"],
                 "labels": dict((name, mesh.membership(name, settings)["labels"]) for name in names)}
        if settings["flavour"] == "ossm2":
            found.update(MEMBER_ROLL, namespace=settings["ossm2"]["namespace"])
        elif settings["flavour"] == "ossm3":
            found.update(ISTIO, name=settings["ossm3"]["name"], namespace="")
        out["mesh"] = found
    if _enabled(variables, "gpu") and (variables.get("gpu_state") or "present") == "present":
        entries = variables.get("gpu_machinesets") or []
        out["gpu"] = {"taint": dict(gpu.TAINT), "namespace": gpu.MACHINE_API,
                      "machinesets": [e["name"] for e in entries if isinstance(e, dict) and e.get("name")]}
    if _enabled(variables, "components"):
        out["references"] = {"namespaces": list(names),
                             "gateway": "%s/%s" % (variables.get("components_namespace") or "kubeflow", KUBEFLOW_GATEWAY),
                             "principals": [gateway["principal"]], "root_namespace": gateway["mesh_namespace"]}
    return out


# ---------------------------------------------------------------- scc

def _service_account(pod):
    return (pod.get("spec") or {}).get("serviceAccountName") or "default"


def _scc(pod):
    return ((pod.get("metadata") or {}).get("annotations") or {}).get(SCC_ANNOTATION, "")


def reviews(pods):
    """The SubjectAccessReviews the scc check needs: one per (namespace, service account, SCC) of
    the pods that carry an SCC: may that service account use that SCC in its namespace?"""
    seen = set()
    out = []
    for pod in pods or []:
        scc, namespace_name = _scc(pod), pod["metadata"]["namespace"]
        key = (namespace_name, _service_account(pod), scc)
        if not scc or key in seen:
            continue
        seen.add(key)
        user = "system:serviceaccount:%s:%s" % key[:2]
        out.append({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "metadata": {},
                    "spec": {"user": user,
                             "groups": ["system:serviceaccounts", "system:serviceaccounts:" + namespace_name,
                                        "system:authenticated"],
                             "resourceAttributes": {"namespace": namespace_name, "verb": "use",
                                                    "group": "security.openshift.io",
                                                    "resource": "securitycontextconstraints", "name": scc}}})
    return out


def answers(registered):
    """The answered reviews, from what the one kubernetes.core.k8s task that created them all
    registered: with one definition the module returns that definition's result (the review in
    `result`), with more `{"result": {"results": [{"result": review}, ...]}}` (kubernetes.core
    6.2.0, plugins/module_utils/k8s/runner.py, run_module). A skipped task answered nothing."""
    registered = registered or {}
    result = registered.get("result") or {}
    if registered.get("skipped") or not result:
        return []
    if "results" in result:
        return [entry.get("result") or {} for entry in result["results"]]
    return [result]


def _allowed(answers):
    """{(namespace, user, scc): allowed} from the answered reviews."""
    out = {}
    for answer in answers or []:
        spec = answer.get("spec") or {}
        attrs = spec.get("resourceAttributes") or {}
        out[(attrs.get("namespace"), spec.get("user"), attrs.get("name"))] = bool(
            (answer.get("status") or {}).get("allowed"))
    return out


def _listed(scc_obj, user, groups):
    """Whether the SCC's own users or groups fields name the user or one of its groups."""
    scc_obj = scc_obj or {}
    return user in (scc_obj.get("users") or []) or bool(set(groups) & set(scc_obj.get("groups") or []))


def scc_rows(pods, answers, sccs):
    """One row per pod: it passes when it carries openshift.io/scc and its service account may use
    that SCC (by RBAC, or by the SCC's users and groups)."""
    allowed = _allowed(answers)
    by_name = dict(((s.get("metadata") or {}).get("name"), s) for s in sccs or [])
    rows = []
    for pod in pods or []:
        meta = pod["metadata"]
        scc, account = _scc(pod), _service_account(pod)
        target = "%s/%s" % (meta["namespace"], meta["name"])
        if not scc:
            rows.append({"check": "scc", "target": target, "pass": False,
                         "detail": "no %s annotation: not admitted by SCC admission" % SCC_ANNOTATION})
            continue
        user = "system:serviceaccount:%s:%s" % (meta["namespace"], account)
        groups = ["system:serviceaccounts", "system:serviceaccounts:" + meta["namespace"], "system:authenticated"]
        ok = allowed.get((meta["namespace"], user, scc), False) or _listed(by_name.get(scc), user, groups)
        detail = scc if ok else "%s, which its service account %s may not use (no grant of it in %s)" % (
            scc, account, meta["namespace"])
        rows.append({"check": "scc", "target": target, "pass": ok, "detail": detail})
    return rows


# ---------------------------------------------------------------- route and oauth

def route_row(target, route):
    """Passes when some router's ingress of the Route has Admitted True."""
    where = "%s/%s" % (target["namespace"], target["name"])
    if not route:
        return {"check": "route", "target": where, "pass": False, "detail": "no such Route"}
    conditions = [c for ingress in (route.get("status") or {}).get("ingress") or []
                  for c in ingress.get("conditions") or [] if c.get("type") == ROUTE_ADMITTED]
    admitted = [c for c in conditions if c.get("status") == "True"]
    if admitted:
        return {"check": "route", "target": where, "pass": True, "detail": "admitted"}
    refused = "; ".join("%s: %s" % (c.get("reason", ""), c.get("message", "")) for c in conditions)
    return {"check": "route", "target": where, "pass": False,
            "detail": "not admitted by any router" + (" (%s)" % refused if refused else "")}


def oauth_row(target, answer):
    """Passes when a request without a session is redirected (302) to the OAuth server's
    authorization endpoint with kfocp's client_id and redirect_uri."""
    answer = answer or {}
    status, location = answer.get("status"), answer.get("location") or ""
    query = parse_qs(urlsplit(location).query)
    wanted = (("client_id", target["client_id"]), ("redirect_uri", target["redirect_uri"]))
    wrong = ["%s %s (want %s)" % (key, ",".join(query.get(key) or ["missing"]), value)
             for key, value in wanted if query.get(key) != [value]]
    ok = status == 302 and not wrong
    detail = "%s %s" % (status or "no answer", location or answer.get("msg", ""))
    if status == 302 and wrong:
        detail += ": " + "; ".join(wrong)
    return {"check": "oauth", "target": answer.get("url") or "-", "pass": ok, "detail": detail.strip()}


# ---------------------------------------------------------------- mesh

def _condition(obj, kind):
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return {}


def mesh_rows(target, control, namespaces):
    """Service Mesh 2: the member roll is Ready, nothing is pending, and each verified namespace
    is a member. Service Mesh 3: the Istio resource is Ready. Service Mesh 3 and existing meshes:
    each verified namespace carries the labels that make it a member."""
    rows = []
    labels = dict(((n.get("metadata") or {}).get("name"), (n.get("metadata") or {}).get("labels") or {})
                  for n in namespaces or [])
    if target.get("kind"):
        where = "%s %s" % (target["kind"], "/".join(p for p in (target["namespace"], target["name"]) if p))
        ready = _condition(control, "Ready")
        status = (control or {}).get("status") or {}
        problems = []
        if control is None:
            problems.append("missing")
        elif ready.get("status") != "True":
            problems.append("not Ready (%s)" % (ready.get("message") or "no Ready condition"))
        if target["kind"] == MEMBER_ROLL["kind"] and control is not None:
            pending = status.get("pendingMembers") or []
            if pending:
                problems.append("pending members: %s" % ", ".join(pending))
            absent = [n for n in target["labels"] if n not in (status.get("members") or [])]
            if absent:
                problems.append("not members: %s" % ", ".join(absent))
        detail = "; ".join(problems) or "Ready" + (
            ", members: %s" % ", ".join(status.get("members") or []) if "members" in status else "")
        rows.append({"check": "mesh", "target": where, "pass": not problems, "detail": detail})
    if target["flavour"] != "ossm2":
        for name, wanted in sorted(target["labels"].items()):
            have = labels.get(name)
            missing = ["%s=%s" % kv for kv in sorted(wanted.items()) if (have or {}).get(kv[0]) != kv[1]]
            detail = "no such namespace" if have is None else (
                "missing labels " + ", ".join(missing) if missing else "member labels set")
            rows.append({"check": "mesh", "target": name, "pass": have is not None and not missing, "detail": detail})
    return rows


# ---------------------------------------------------------------- gpu

def _tainted(taints, taint):
    return any(all(t.get(k) == taint[k] for k in ("key", "value", "effect")) for t in taints or [])


def _gpus(node):
    status = node.get("status") or {}
    value = str((status.get("capacity") or {}).get(GPU_RESOURCE) or "0")
    return value not in ("0", "")


def gpu_rows(target, machinesets, nodes):
    """Each of kfocp's GPU MachineSets exists and puts the taint on its nodes; each node with
    nvidia.com/gpu capacity carries the taint."""
    taint = target["taint"]
    text = "%s=%s:%s" % (taint["key"], taint["value"], taint["effect"])
    rows = []
    live = dict(((m.get("metadata") or {}).get("name"), m) for m in machinesets or [])
    for name in target["machinesets"]:
        found = live.get(name)
        where = "MachineSet %s/%s" % (target["namespace"], name)
        taints = (((found or {}).get("spec") or {}).get("template") or {}).get("spec", {}).get("taints")
        ok = found is not None and _tainted(taints, taint)
        if found is None:
            detail = "no such MachineSet"
        else:
            detail = ("taints its nodes " if ok else "does not taint its nodes ") + text
        rows.append({"check": "gpu", "target": where, "pass": ok, "detail": detail})
    gpu_nodes = [n for n in nodes or [] if _gpus(n)]
    for node in gpu_nodes:
        ok = _tainted((node.get("spec") or {}).get("taints"), taint)
        rows.append({"check": "gpu", "target": "Node " + node["metadata"]["name"], "pass": ok,
                     "detail": ("tainted " if ok else "not tainted ") + text})
    if not rows:
        rows.append({"check": "gpu", "target": "-", "pass": True,
                     "detail": "no GPU MachineSet and no node with %s capacity" % GPU_RESOURCE})
    return rows


# ---------------------------------------------------------------- references

def reference_rows(target, result):
    """One failing row per broken reference the references module found (the referring object and
    field; the value, the object it names and what is wrong), or one passing row saying how many
    references were checked."""
    result = result or {}
    if "findings" not in result:
        return [{"check": "references", "target": ", ".join(target["namespaces"]), "pass": False,
                 "detail": "not checked: %s" % (result.get("msg") or "the references module did not run")}]
    rows = []
    for found in result["findings"]:
        rows.append({"check": "references", "pass": False,
                     "target": "%s %s" % (references.describe(found["source"]), found["field"]),
                     "detail": "%r: %s %s" % (found["value"], references.describe(found["target"]), found["problem"])})
    if not rows:
        counts = result.get("checked") or {}
        rows.append({"check": "references", "target": ", ".join(target["namespaces"]), "pass": True,
                     "detail": "none broken (%s)" % ", ".join("%d %s" % (counts[k], k) for k in sorted(counts))})
    return rows


# ---------------------------------------------------------------- all of them

def rows(targets_, live):
    """Every check's rows. `live` holds what the cluster holds: pods, namespaces, reviews (the
    answered reviews()), sccs, route, oauth ({url, status, location}), mesh (the control object),
    machinesets, nodes, references (what the references module returned)."""
    live = live or {}
    names = targets_["namespaces"]
    pods = [p for p in live.get("pods") or [] if p["metadata"]["namespace"] in names]
    out = scc_rows(pods, live.get("reviews"), live.get("sccs"))
    out += pod_security.verify_rows(names, live.get("namespaces"), pods)
    if targets_.get("route"):
        out.append(route_row(targets_["route"], live.get("route")))
    if targets_.get("oauth"):
        out.append(oauth_row(targets_["oauth"], live.get("oauth")))
    if targets_.get("mesh"):
        out += mesh_rows(targets_["mesh"], live.get("mesh"), live.get("namespaces"))
    if targets_.get("gpu"):
        out += gpu_rows(targets_["gpu"], live.get("machinesets"), live.get("nodes"))
    if targets_.get("references"):
        out += reference_rows(targets_["references"], live.get("references"))
    return out
