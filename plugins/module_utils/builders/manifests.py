# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubeflow's upstream manifests, adapted for OpenShift: pure transforms over rendered objects.

Each transform takes the rendered object list (plain dicts, as `kubectl kustomize` prints them)
and returns a new list; none of them mutates its input or does I/O. `assemble()` runs the ones
switched on, in a fixed order, and returns the objects to apply or write plus the reports
(mirror list, unmatched images, SCC grants).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import fnmatch
import re

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import scc as scc_builder
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import (
    dns_label, namespace as platform_namespace, plain, require)

MANAGED, REMOVED = "managed", "removed"
COMPONENT_LABEL = "kfocp.io/component"
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod")
INJECT = "sidecar.istio.io/inject"
EXCLUDE_OUTBOUND = "traffic.sidecar.istio.io/excludeOutboundPorts"
# What the upstream Argo Workflows install in KFP renders, by kind and name pattern.
ARGO_OBJECTS = (
    ("CustomResourceDefinition", "*.argoproj.io"),
    ("Deployment", "workflow-controller"),
    ("Service", "workflow-controller-metrics"),
    ("ServiceAccount", "argo"),
    ("Role", "argo-role"),
    ("RoleBinding", "argo-binding"),
    ("ClusterRole", "argo-*"),
    ("ClusterRoleBinding", "argo-*"),
    ("PriorityClass", "workflow-controller"),
)
_SCC_RANK = {"nonroot-v2": 1, "nonroot": 1, "anyuid": 2, "privileged": 3}


# ---------------------------------------------------------------- helpers

def _walk_strings(value, func, skip_keys=()):
    """A copy of `value` with func(key, string) applied to every string, recursively."""
    if isinstance(value, dict):
        return dict((k, v if k in skip_keys else _walk_strings(v, func, skip_keys) if isinstance(v, (dict, list))
                     else func(k, v) if isinstance(v, str) else v) for k, v in value.items())
    if isinstance(value, list):
        return [_walk_strings(v, func, skip_keys) if isinstance(v, (dict, list))
                else func(None, v) if isinstance(v, str) else v for v in value]
    return value


def pod_spec(obj):
    """The pod spec of a workload (None for any other kind)."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "Pod":
        return spec
    if kind == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec") or {})
    elif kind not in WORKLOAD_KINDS:
        return None
    return (spec.get("template") or {}).get("spec")


def pod_template_meta(obj):
    """The pod template metadata of a workload, created when missing (callers pass a copy)."""
    kind = obj.get("kind")
    spec = obj.setdefault("spec", {})
    if kind == "Pod":
        return obj.setdefault("metadata", {})
    if kind == "CronJob":
        spec = spec.setdefault("jobTemplate", {}).setdefault("spec", {})
    return spec.setdefault("template", {}).setdefault("metadata", {})


def containers(spec):
    for field in ("initContainers", "containers", "ephemeralContainers"):
        yield from (spec or {}).get(field) or []


def _name(obj):
    return (obj.get("metadata") or {}).get("name")


def _ns(obj):
    return (obj.get("metadata") or {}).get("namespace")


def describe(obj):
    ns = _ns(obj)
    return "%s %s" % (obj.get("kind"), "%s/%s" % (ns, _name(obj)) if ns else _name(obj))


# ---------------------------------------------------------------- components

def select(components, catalog, field="components_components"):
    """The managed components and their manifest paths, checked against the catalog.

    `components` maps a component name to managed or removed; `catalog` maps a name to the list of
    its paths in the manifests tree. Returns {name: [paths]} for the managed ones.
    """
    require(isinstance(components, dict), field, "must be a mapping of component name to managed or removed",
            "Give for example {pipelines: managed, katib: removed}")
    require(isinstance(catalog, dict) and catalog, "components_catalog", "must be a non-empty mapping",
            "Map each component name to the list of its paths in the manifests tree")
    known = sorted(catalog)
    selected = {}
    for name in sorted(components):
        state = components[name]
        require(name in catalog, "%s.%s" % (field, name), "unknown component",
                "Use one of %s, or add it to components_catalog" % ", ".join(known))
        require(state in (MANAGED, REMOVED), "%s.%s" % (field, name), "%r is not managed or removed" % (state,),
                "Set it to managed or removed")
        if state == MANAGED:
            paths = catalog[name]
            if isinstance(paths, str):
                paths = [paths]
            require(isinstance(paths, list) and paths and all(isinstance(p, str) and p for p in paths),
                    "components_catalog.%s" % name, "must be a non-empty list of paths", "List its kustomize paths")
            for path in paths:
                require(not path.startswith("/") and ".." not in path.split("/"), "components_catalog.%s" % name,
                        "%r is not a path inside the manifests tree" % path,
                        "Give it relative to the tree's root, as applications/<x>/upstream/...")
            selected[name] = list(paths)
    return selected


def label_components(rendered):
    """Flatten {component: [objects]} into one list, each object labelled with its component.

    An object rendered by two components is kept once, under the first; two different objects
    with the same identity are an error naming both components.
    """
    out, seen = [], {}
    for component in sorted(rendered):
        for obj in rendered[component] or []:
            if not isinstance(obj, dict) or not obj.get("kind"):
                continue
            if obj.get("kind") == "List":
                continue
            key = (obj.get("apiVersion"), obj.get("kind"), _ns(obj) or "", _name(obj))
            if key in seen:
                first, other = seen[key]
                require(_same_object(other, obj), "components_components.%s" % component,
                        "%s is also rendered by %s, differently" % (describe(obj), first),
                        "Remove one of the two components, or make their manifests agree")
                continue
            obj = copy.deepcopy(obj)
            meta = obj.setdefault("metadata", {})
            meta["labels"] = dict(meta.get("labels") or {}, **{COMPONENT_LABEL: component})
            seen[key] = (component, obj)
            out.append(obj)
    return out


def _same_object(a, b):
    a = copy.deepcopy(a)
    a.get("metadata", {}).get("labels", {}).pop(COMPONENT_LABEL, None)
    return a == b or a == dict(b, metadata=dict(b.get("metadata") or {}, labels=a["metadata"].get("labels")))


# ---------------------------------------------------------------- namespace

def set_namespace(objs, new, old="kubeflow"):
    """Move everything upstream puts in namespace `old` to `new`: metadata.namespace, RBAC
    subjects, webhook and CRD conversion services, Namespace objects, and service hosts
    (`x.old.svc...`) in VirtualServices and ConfigMaps."""
    dns_label(new, "components_namespace")
    if new == old:
        return copy.deepcopy(objs)
    host = re.compile(r"(?<=[a-z0-9-]\.)%s(?=\.svc\b)" % re.escape(old))
    out = []
    for obj in objs:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        kind = obj.get("kind")
        if kind == "Namespace" and meta.get("name") == old:
            meta["name"] = new
        if meta.get("namespace") == old:
            meta["namespace"] = new
        for subject in obj.get("subjects") or []:
            if subject.get("namespace") == old:
                subject["namespace"] = new
        for webhook in obj.get("webhooks") or []:
            service = (webhook.get("clientConfig") or {}).get("service") or {}
            if service.get("namespace") == old:
                service["namespace"] = new
        if kind == "CustomResourceDefinition":
            service = ((((obj.get("spec") or {}).get("conversion") or {}).get("webhook") or {})
                       .get("clientConfig") or {}).get("service") or {}
            if service.get("namespace") == old:
                service["namespace"] = new
        annotations = meta.get("annotations") or {}
        if annotations.get("cert-manager.io/inject-ca-from", "").startswith(old + "/"):
            annotations["cert-manager.io/inject-ca-from"] = new + annotations["cert-manager.io/inject-ca-from"][len(old):]
        if kind in ("VirtualService", "ConfigMap", "DestinationRule", "Certificate", "AuthorizationPolicy"):
            obj = _walk_strings(obj, lambda key, value: host.sub(new, value), skip_keys=("metadata",))
        out.append(obj)
    return out


# ---------------------------------------------------------------- API versions

def set_api_versions(objs, versions):
    """Write objects of the kinds in `versions` ({group/Kind: version}) in that version.

    Upstream writes Istio objects in old versions (networking.istio.io/v1alpha3); the cluster
    serves the same schema under its preferred version, which is the one prune compares with."""
    require(isinstance(versions, dict), "components_api_versions", "must map group/Kind to a version",
            "Give for example {networking.istio.io/VirtualService: v1beta1}")
    out = []
    for obj in objs:
        obj = copy.deepcopy(obj)
        group = obj.get("apiVersion", "").rpartition("/")[0]
        version = versions.get("%s/%s" % (group, obj.get("kind")))
        if group and version:
            obj["apiVersion"] = "%s/%s" % (group, version)
        out.append(obj)
    return out


# ---------------------------------------------------------------- image mirroring

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-/:@]*")
_QUALIFIED = re.compile(r"^[a-z0-9-]+(\.[a-z0-9-]+)+(:[0-9]+)?/[a-z0-9._\-/]+(:[A-Za-z0-9._-]+|@sha256:[a-f0-9]{64})$")


def normalise_image(image):
    """The fully qualified form of an image reference: docker.io/library/busybox:1 for busybox:1."""
    first, sep, rest = image.partition("/")
    if not sep:
        return "docker.io/library/" + image
    if "." in first or ":" in first or first == "localhost":
        return image
    return "docker.io/" + image


def normalise_prefix(prefix):
    """The fully qualified form of a registry/path prefix: docker.io/kubeflow for kubeflow."""
    prefix = prefix.rstrip("/")
    first = prefix.split("/")[0]
    if "." in first or ":" in first or first == "localhost":
        return prefix
    return "docker.io/" + prefix


def _split_tag(image):
    """(repository, suffix) where suffix is ':tag', '@digest', ':tag@digest' or ''."""
    repo, at, digest = image.partition("@")
    slash = repo.rfind("/")
    colon = repo.rfind(":")
    tag = ""
    if colon > slash:
        repo, tag = repo[:colon], repo[colon:]
    return repo, tag + (at + digest if at else "")


def _check_prefixes(prefixes):
    require(isinstance(prefixes, dict), "components_image_prefixes", "must be a mapping of source prefix to target",
            "Give for example {docker.io/kubeflownotebookswg: registry.example.com/kubeflow}")
    for source, target in prefixes.items():
        require(isinstance(source, str) and source and isinstance(target, str) and target,
                "components_image_prefixes.%s" % source, "source and target must be non-empty strings",
                "Give registry/path prefixes without a tag")
        require(":" not in source.split("/")[-1] and "@" not in source, "components_image_prefixes.%s" % source,
                "a prefix has no tag or digest", "Give the registry and path only")


def map_image(image, prefixes, digests=None):
    """The target of `image` under the prefix map (longest prefix wins), or None when no prefix
    matches. With `digests` (source image -> sha256:...), the target is pinned by digest."""
    full = normalise_image(image)
    repo, suffix = _split_tag(full)
    best = None
    for source, target in prefixes.items():
        norm = normalise_prefix(source)
        if repo == norm or repo.startswith(norm + "/"):
            if best is None or len(norm) > len(best[0]):
                best = (norm, target.rstrip("/"))
    if best is None:
        return None
    mapped = best[1] + repo[len(best[0]):] + suffix
    digest = (digests or {}).get(image) or (digests or {}).get(full)
    if digest:
        require(re.match(r"^sha256:[a-f0-9]{64}$", digest or ""), "components_image_digests.%s" % image,
                "%r is not a sha256 digest" % digest, "Give sha256:<64 hex digits>, as skopeo inspect prints it")
        mapped = mapped.split("@")[0] + "@" + digest
    return mapped


def mirror_images(objs, prefixes, digests=None):
    """Rewrite every image to the internal registry following `prefixes`.

    Container, initContainer and ephemeral container images, any `image` field of a custom
    resource, and image references inside args, env values and ConfigMap data are rewritten.
    Returns (objects, mirror list [{source, target}], unmatched images (sorted)).
    """
    _check_prefixes(prefixes)
    digests = digests or {}
    require(isinstance(digests, dict), "components_image_digests", "must be a mapping of image to digest",
            "Give {image: sha256:...}")
    mirrored, unmatched = {}, set()
    targets = tuple(normalise_prefix(t) + "/" for t in prefixes.values())

    def already(image):
        return normalise_image(image).startswith(targets)

    def image_field(value):
        target = map_image(value, prefixes, digests)
        if target is None:
            if not already(value):
                unmatched.add(value)
            return value
        mirrored[normalise_image(value)] = target
        return target

    def free_text(value):
        def token(match):
            text = match.group(0)
            stripped = text.rstrip(".:,")
            tail = text[len(stripped):]
            repo, suffix = _split_tag(stripped)
            if not suffix or "/" not in stripped:
                return text
            target = map_image(stripped, prefixes, digests)
            if target is None:
                if _QUALIFIED.match(stripped) and not already(stripped):
                    unmatched.add(stripped)
                return text
            mirrored[normalise_image(stripped)] = target
            return target + tail
        return _TOKEN.sub(token, value)

    def rewrite(key, value):
        if key == "image":
            return image_field(value)
        return free_text(value)

    out = []
    for obj in objs:
        if obj.get("kind") == "CustomResourceDefinition":
            out.append(copy.deepcopy(obj))
            continue
        obj = _walk_strings(obj, rewrite, skip_keys=("metadata", "apiVersion", "kind"))
        out.append(obj)
    mirror = [{"source": source, "target": mirrored[source]} for source in sorted(mirrored)]
    return out, mirror, sorted(unmatched)


def mirror_lines(mirror):
    """`source=target` lines, the mapping file format of `oc image mirror -f`."""
    return ["%s=%s" % (entry["source"], entry["target"].split("@")[0]) for entry in mirror]


# ---------------------------------------------------------------- sidecar injection

def inject_sidecars(objs, namespace, revision="", authservice=("authservice",), exclude=()):
    """Label the components' namespace for injection (istio-injection=enabled, or istio.io/rev),
    annotate every workload's pods with sidecar.istio.io/inject: "true" (except those named in
    `exclude`), and let authservice reach its OIDC provider on 443 around the sidecar."""
    out = []
    for obj in objs:
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        if obj.get("kind") == "Namespace" and meta.get("name") == namespace:
            labels = dict(meta.get("labels") or {})
            if revision:
                labels.pop("istio-injection", None)
                labels["istio.io/rev"] = revision
            else:
                labels["istio-injection"] = "enabled"
            meta["labels"] = labels
        elif pod_spec(obj) is not None and meta.get("name") not in exclude:
            template = pod_template_meta(obj)
            annotations = dict(template.get("annotations") or {})
            annotations[INJECT] = "true"
            if meta.get("name") in authservice:
                annotations[EXCLUDE_OUTBOUND] = "443"
            template["annotations"] = annotations
        out.append(obj)
    return out


# ---------------------------------------------------------------- VirtualServices

def adapt_virtualservices(objs, gateway="", hosts=None, export_to=None):
    """Point every VirtualService at another mesh's gateway, hosts and exportTo."""
    require(isinstance(gateway, str), "components_vs_gateway", "must be a string", "Give namespace/name")
    if gateway:
        require(re.match(r"^[a-z0-9-]+/[a-z0-9.-]+$", gateway), "components_vs_gateway",
                "%r is not namespace/name" % gateway, "Give the Gateway as <namespace>/<name>")
    for field, value in (("components_vs_hosts", hosts), ("components_vs_export_to", export_to)):
        require(value is None or (isinstance(value, list) and all(isinstance(v, str) and v for v in value)),
                field, "must be a list of strings", "Give a list, or leave it empty to keep upstream's")
    out = []
    for obj in objs:
        obj = copy.deepcopy(obj)
        if obj.get("kind") == "VirtualService" and str(obj.get("apiVersion", "")).startswith("networking.istio.io/"):
            spec = obj.setdefault("spec", {})
            if gateway and spec.get("gateways"):
                spec["gateways"] = [gateway if g != "mesh" else g for g in spec["gateways"]]
            if hosts:
                spec["hosts"] = list(hosts)
            if export_to:
                spec["exportTo"] = list(export_to)
        out.append(obj)
    return out


# ---------------------------------------------------------------- metadata-envoy

def metadata_envoy_base_id(objs, name="metadata-envoy-deployment", base_id=1, config="/etc/envoy.yaml"):
    """Give metadata-envoy its own Envoy --base-id, so that it runs beside an injected sidecar.

    The image's entrypoint is `envoy -c` with the config path as its only argument, so when the
    container has no args the config path is kept first."""
    out = []
    for obj in objs:
        obj = copy.deepcopy(obj)
        if obj.get("kind") == "Deployment" and _name(obj) == name:
            for container in (pod_spec(obj) or {}).get("containers") or []:
                args = list(container.get("args") or [])
                if not args and not container.get("command"):
                    args = [config]
                kept, skip = [], False
                for arg in args:  # drop every earlier --base-id, then set ours once
                    if skip:
                        skip = False
                    elif arg == "--base-id":
                        skip = True
                    elif not arg.startswith("--base-id="):
                        kept.append(arg)
                container["args"] = kept + ["--base-id", str(base_id)]
        out.append(obj)
    return out


# ---------------------------------------------------------------- external Argo

def _matches(obj, patterns):
    return any(obj.get("kind") == kind and fnmatch.fnmatchcase(_name(obj) or "", pattern) for kind, pattern in patterns)


def external_argo(objs, s3, configmap="workflow-controller-configmap", argo_objects=ARGO_OBJECTS):
    """Drop Argo's own install and point KFP's workflow-controller-configmap artifact repository
    at an external S3 bucket. Credentials are referenced by Secret name and keys, never copied.

    `s3`: {endpoint, bucket, secret, access_key_key?, secret_key_key?, region?, insecure?, key_format?}.
    """
    import yaml  # PyYAML comes with Ansible; the artifact repository is YAML inside a ConfigMap value

    require(isinstance(s3, dict), "components_argo_s3", "must be a mapping", "Give {endpoint, bucket, secret}")
    for key in ("endpoint", "bucket", "secret"):
        require(isinstance(s3.get(key), str) and s3.get(key), "components_argo_s3.%s" % key, "is required",
                "Set it (secret: the name of an existing Secret with the S3 keys)")
    out = []
    found = False
    for obj in objs:
        if _matches(obj, argo_objects):
            continue
        obj = copy.deepcopy(obj)
        if obj.get("kind") == "ConfigMap" and _name(obj) == configmap:
            found = True
            data = obj.setdefault("data", {})
            repo = yaml.safe_load(data.get("artifactRepository") or "") or {}
            old = repo.get("s3") or {}
            # plain str and bool: the values may come in as template results of another type
            new = {"endpoint": str(s3["endpoint"]), "bucket": str(s3["bucket"]),
                   "insecure": bool(s3.get("insecure", False)),
                   "accessKeySecret": {"name": str(s3["secret"]), "key": str(s3.get("access_key_key") or "accesskey")},
                   "secretKeySecret": {"name": str(s3["secret"]), "key": str(s3.get("secret_key_key") or "secretkey")}}
            if s3.get("region"):
                new["region"] = str(s3["region"])
            key_format = s3.get("key_format") or old.get("keyFormat")
            if key_format:
                new["keyFormat"] = str(key_format)
            repo["s3"] = new
            repo.setdefault("archiveLogs", True)
            data["artifactRepository"] = yaml.safe_dump(repo, default_flow_style=False, sort_keys=True)
        out.append(obj)
    require(found, "components_argo_external", "no ConfigMap %s in the rendered manifests" % configmap,
            "Manage the pipelines component, or switch components_argo_external off")
    return out


# ---------------------------------------------------------------- SCC derivation

def _uid_in_range(uid, uid_range):
    if not uid_range:
        return False
    start, size = int(uid_range.get("start", 0)), int(uid_range.get("size", 0))
    return start <= uid < start + size


def derive_scc(objs, uid_range=None, fixed_uid_scc="anyuid"):
    """The SCC each service account needs, from its pods' security contexts.

    - privileged: a privileged container, capabilities added beyond NET_BIND_SERVICE, a hostPath
      volume, or the host's network, PID or IPC namespace;
    - anyuid: runAsUser 0;
    - `fixed_uid_scc` (anyuid, or nonroot-v2): a fixed non-root runAsUser outside the namespace's
      UID range (`uid_range`: {start, size}; without it every fixed UID is outside).
    Returns grants [{namespace, serviceaccount, scc, reason}], one per service account (the
    strongest SCC it needs; the reason lists the workloads and why)."""
    require(fixed_uid_scc in ("anyuid", "nonroot-v2", "nonroot"), "components_scc_fixed_uid",
            "%r is not anyuid, nonroot-v2 or nonroot" % (fixed_uid_scc,), "Use anyuid or nonroot-v2")
    needs = {}
    for obj in objs:
        spec = pod_spec(obj)
        if spec is None:
            continue
        namespace = _ns(obj) or "default"
        account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        found = []
        pod_ctx = spec.get("securityContext") or {}
        for container in containers(spec):
            ctx = container.get("securityContext") or {}
            if ctx.get("privileged"):
                found.append(("privileged", "container %s is privileged" % container.get("name")))
            added = [c for c in ((ctx.get("capabilities") or {}).get("add") or []) if c != "NET_BIND_SERVICE"]
            if added:
                found.append(("privileged", "container %s adds %s" % (container.get("name"), ", ".join(added))))
            uid = ctx.get("runAsUser", pod_ctx.get("runAsUser"))
            if isinstance(uid, int) and not isinstance(uid, bool):
                if uid == 0:
                    found.append(("anyuid", "container %s runs as root (runAsUser 0)" % container.get("name")))
                elif not _uid_in_range(uid, uid_range):
                    found.append((fixed_uid_scc, "container %s runs as fixed UID %d" % (container.get("name"), uid)))
        if any("hostPath" in (volume or {}) for volume in spec.get("volumes") or []):
            found.append(("privileged", "mounts a hostPath volume"))
        for host in ("hostNetwork", "hostPID", "hostIPC"):
            if spec.get(host):
                found.append(("privileged", "uses %s" % host))
        for scc, why in found:
            entry = needs.setdefault((namespace, account), {"scc": scc, "reasons": []})
            if _SCC_RANK[scc] > _SCC_RANK[entry["scc"]]:
                entry["scc"] = scc
            reason = "%s %s: %s" % (obj["kind"], _name(obj), why)
            if reason not in entry["reasons"]:
                entry["reasons"].append(reason)
    return [{"namespace": ns, "serviceaccount": sa, "scc": needs[(ns, sa)]["scc"],
             "reason": "; ".join(needs[(ns, sa)]["reasons"])} for ns, sa in sorted(needs)]


def scc_objects(grants):
    """The RoleBindings of the derived grants (through the scc role's builder), named apart from
    the scc role's own grants so that the two roles never manage the same object."""
    bindings = scc_builder.rolebindings(grants, allowed=scc_builder.KNOWN_SCCS, field="components SCC grants")
    for binding in bindings:
        binding["metadata"]["name"] = "kfocp-components-" + binding["metadata"]["name"][len("kfocp-"):]
    return bindings


def audit_table(grants):
    """Lines of a fixed-width table: SA, namespace, SCC, reason."""
    rows = [("SERVICE ACCOUNT", "NAMESPACE", "SCC", "REASON")]
    rows += [(g["serviceaccount"], g["namespace"], g["scc"], g.get("reason", "")) for g in grants]
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return ["%-*s  %-*s  %-*s  %s" % (widths[0], r[0], widths[1], r[1], widths[2], r[2], r[3]) for r in rows]


# ---------------------------------------------------------------- aggregated ClusterRoles

def aggregated_rules(objs):
    """ClusterRoles with an aggregationRule (upstream's kubeflow-admin, -edit, -view) without their
    `rules`: the API server's aggregation controller writes that field, so applying upstream's
    `rules: []` would fight it (a field manager conflict on every later run)."""
    out = []
    for obj in objs:
        if obj.get("kind") == "ClusterRole" and obj.get("aggregationRule") and "rules" in obj:
            obj = dict((k, v) for k, v in obj.items() if k != "rules")
        out.append(obj)
    return out


# ---------------------------------------------------------------- the whole pipeline

PROFILE_LABELS_FILE = "namespace-labels.yaml"


def profile_namespace_labels(objs, revision):
    """The profile controller's namespace-labels file (the ConfigMap holding namespace-labels.yaml)
    with the injection labels of a revision-based mesh: istio.io/rev=<revision>, and
    istio-injection given the empty value, which makes the controller remove the
    istio-injection=enabled it puts on every profile namespace (that label would win over the
    revision). The controller only adds missing labels, so these belong in its file, not in a
    patch of the namespaces. Without a revision the objects are returned unchanged."""
    if not revision:
        return objs
    import yaml  # PyYAML comes with Ansible; the labels file is YAML inside a ConfigMap value
    out = []
    for obj in objs:
        data = obj.get("data") or {}
        if obj.get("kind") == "ConfigMap" and PROFILE_LABELS_FILE in data:
            obj = copy.deepcopy(obj)
            labels = yaml.safe_load(data[PROFILE_LABELS_FILE] or "") or {}
            labels.update({"istio-injection": "", "istio.io/rev": revision})
            obj["data"][PROFILE_LABELS_FILE] = yaml.safe_dump(labels, default_flow_style=False, sort_keys=True)
        out.append(obj)
    return out


def platform_namespaces(objs, components_namespace, injection_labels=None):
    """Replace rendered Namespace objects by platform namespaces (created when missing, kept until
    uninstall) and add one for every namespace that a rendered object lives in."""
    names = set(_ns(obj) for obj in objs if _ns(obj))
    names |= set(_name(obj) for obj in objs if obj.get("kind") == "Namespace")
    rendered = dict((_name(obj), obj) for obj in objs if obj.get("kind") == "Namespace")
    out = [obj for obj in objs if obj.get("kind") != "Namespace"]
    spaces = []
    for name in sorted(names):
        labels = dict(((rendered.get(name) or {}).get("metadata") or {}).get("labels") or {})
        labels.pop(COMPONENT_LABEL, None)
        if name == components_namespace:
            labels.update(injection_labels or {})
        spaces.append(platform_namespace(name, labels or None))
    return spaces + out


def assemble(rendered, options):
    """Everything the role applies or writes, from {component: [rendered objects]}.

    Returns {objects, grants, audit, mirror, mirror_lines, unmatched_images}. `options` keys
    (all optional): namespace, api_versions, mirror {prefixes, digests}, sidecar {revision, authservice,
    exclude}, virtualservice {gateway, hosts, export_to}, metadata_envoy {base_id, config},
    argo {s3, configmap}, scc {uid_range, fixed_uid}, render (bool: plain objects for GitOps).
    """
    require(isinstance(rendered, dict), "rendered", "must map component names to object lists",
            "Pass the kustomize module's `components` result")
    # plain data first: copying Ansible's lazy containers object by object is very slow
    rendered, options = plain(rendered), plain(options)
    objs = label_components(rendered)
    namespace = options.get("namespace") or "kubeflow"
    objs = set_namespace(objs, namespace)
    objs = set_api_versions(objs, options.get("api_versions") or {})
    result = {"mirror": [], "mirror_lines": [], "unmatched_images": [], "grants": [], "audit": []}
    if options.get("argo") is not None:
        argo = options["argo"]
        objs = external_argo(objs, argo.get("s3") or {}, configmap=argo.get("configmap") or
                             "workflow-controller-configmap")
    if options.get("metadata_envoy") is not None:
        envoy = options["metadata_envoy"]
        objs = metadata_envoy_base_id(objs, base_id=envoy.get("base_id", 1), config=envoy.get("config") or
                                      "/etc/envoy.yaml")
    if options.get("virtualservice") is not None:
        vs = options["virtualservice"]
        objs = adapt_virtualservices(objs, vs.get("gateway") or "", vs.get("hosts") or None,
                                     vs.get("export_to") or None)
    injection = {}
    if options.get("sidecar") is not None:
        sidecar = options["sidecar"]
        objs = inject_sidecars(objs, namespace, sidecar.get("revision") or "",
                               tuple(sidecar.get("authservice") or ("authservice",)), tuple(sidecar.get("exclude") or ()))
        injection = {"istio.io/rev": sidecar["revision"]} if sidecar.get("revision") else {"istio-injection": "enabled"}
        objs = profile_namespace_labels(objs, sidecar.get("revision") or "")
    if options.get("mirror") is not None:
        mirror = options["mirror"]
        objs, result["mirror"], result["unmatched_images"] = mirror_images(objs, mirror.get("prefixes") or {},
                                                                           mirror.get("digests") or {})
        result["mirror_lines"] = mirror_lines(result["mirror"])
    if options.get("scc") is not None:
        scc = options["scc"]
        result["grants"] = derive_scc(objs, scc.get("uid_range"), scc.get("fixed_uid") or "anyuid")
        result["audit"] = audit_table(result["grants"])
    objs = platform_namespaces(objs, namespace, injection)
    objs += [_label(b, "scc") for b in scc_objects(result["grants"])] if result["grants"] else []
    if options.get("render"):
        objs = [_plain(obj) for obj in objs]
    else:
        objs = aggregated_rules(objs)
    result["objects"] = objs
    return result


def _label(obj, component):
    meta = obj.setdefault("metadata", {})
    meta["labels"] = dict(meta.get("labels") or {}, **{COMPONENT_LABEL: component})
    return obj


def _plain(obj):
    """The object without kfocp's apply-time markers, for a GitOps repository."""
    obj = copy.deepcopy(obj)
    annotations = (obj.get("metadata") or {}).get("annotations")
    if annotations:
        for key in ("kfocp.io/ownership", "kfocp.io/set"):
            annotations.pop(key, None)
        if not annotations:
            obj["metadata"].pop("annotations")
    return obj
