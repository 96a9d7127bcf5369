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
import json
import re

from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import pod_security
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import scc as scc_builder
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import scc_policies
from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders.common import (
    dns_label, namespace as platform_namespace, plain, require)
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import DefinitionError

MANAGED, REMOVED = "managed", "removed"
COMPONENT_LABEL = "kfocp.io/component"
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job", "CronJob", "Pod")
INJECT = "sidecar.istio.io/inject"
EXCLUDE_OUTBOUND = "traffic.sidecar.istio.io/excludeOutboundPorts"
# What the upstream Argo Workflows install in KFP renders, by kind and name pattern.
ARGO_OBJECTS = (
    ("CustomResourceDefinition", "*.argoproj.io"),
    ("Deployment", "workflow-controller"),
    ("ServiceAccount", "argo"),
    ("Role", "argo-role"),
    ("RoleBinding", "argo-binding"),
    ("ClusterRole", "argo-*"),
    ("ClusterRoleBinding", "argo-*"),
    ("PriorityClass", "workflow-controller"),
)


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


def pod_meta(obj):
    """The pod template metadata of a workload, read only ({} when missing)."""
    kind = obj.get("kind")
    spec = obj.get("spec") or {}
    if kind == "Pod":
        return obj.get("metadata") or {}
    if kind == "CronJob":
        spec = ((spec.get("jobTemplate") or {}).get("spec") or {})
    return (spec.get("template") or {}).get("metadata") or {}


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
            obj = _copy(obj)
            meta = obj.setdefault("metadata", {})
            meta["labels"] = dict(meta.get("labels") or {}, **{COMPONENT_LABEL: component})
            seen[key] = (component, obj)
            out.append(obj)
    return out


def _same_object(a, b):
    a = _copy(a)
    a.get("metadata", {}).get("labels", {}).pop(COMPONENT_LABEL, None)
    return a == b or a == dict(b, metadata=dict(b.get("metadata") or {}, labels=a["metadata"].get("labels")))


def _copy(value):
    """A copy of `value` that shares nothing mutable with it: rendered objects are plain dicts,
    lists and scalars, copied directly (several times faster than copy.deepcopy, which each pass
    did for every object); anything else is left to copy.deepcopy."""
    kind = type(value)
    if kind is dict:
        return dict((key, _copy(item)) for key, item in value.items())
    if kind is list:
        return [_copy(item) for item in value]
    if kind is str or kind is int or kind is float or kind is bool or value is None:
        return value
    return copy.deepcopy(value)


# ---------------------------------------------------------------- namespace

# The Gateway upstream's VirtualServices and controllers name as kubeflow/kubeflow-gateway.
UPSTREAM_GATEWAY = "kubeflow-gateway"


def set_namespace(objs, new, old="kubeflow"):
    """Move everything upstream puts in namespace `old` to `new`: metadata.namespace, RBAC
    subjects, webhook and CRD conversion services, Namespace objects, service hosts
    (`x.old.svc...`) in VirtualServices and ConfigMaps, references to its Istio Gateways, and, in
    any object but a CRD, the principals of its service accounts (`.../ns/old/sa/...`: policies,
    the profile controllers' configuration and code) and the hosts `<service>.old[.svc...]` of
    the Services the render puts in `old` (environment values, configuration files, certificates'
    DNS names)."""
    dns_label(new, "components_namespace")
    if new == old:
        return _copy(objs)
    host = re.compile(r"(?<=[a-z0-9-]\.)%s(?=\.svc\b)" % re.escape(old))
    principal = re.compile(r"(?<=/ns/)%s(?=/sa/)" % re.escape(old))
    services = sorted(set(_name(o) for o in objs if o.get("kind") == "Service" and _ns(o) == old and _name(o)))
    service_host = re.compile(r"(?<![A-Za-z0-9_.-])(%s)\.%s(?=\.svc\b|[^A-Za-z0-9_.-]|$)" % (
        "|".join(re.escape(n) for n in services), re.escape(old))) if services else None

    def move_names(value):
        value = principal.sub(new, value)
        return service_host.sub(r"\1.%s" % new, value) if service_host else value
    move_gateway = _gateway_refs(objs, old, new)
    out = []
    for obj in objs:
        obj = _copy(obj)
        _move_metadata(obj, old, new)
        for service in _service_refs(obj):
            if service.get("namespace") == old:
                service["namespace"] = new
        obj = _move_strings(obj, move_gateway, lambda value: host.sub(new, value))
        if obj.get("kind") != "CustomResourceDefinition":
            obj = _walk_strings(obj, lambda key, value: move_names(value), skip_keys=("metadata",))
        out.append(obj)
    return out


def _move_metadata(obj, old, new):
    """The object's own namespace (a Namespace's name), and cert-manager's CA reference."""
    meta = obj.setdefault("metadata", {})
    if obj.get("kind") == "Namespace" and meta.get("name") == old:
        meta["name"] = new
    if meta.get("namespace") == old:
        meta["namespace"] = new
    annotations = meta.get("annotations") or {}
    if annotations.get("cert-manager.io/inject-ca-from", "").startswith(old + "/"):
        annotations["cert-manager.io/inject-ca-from"] = new + annotations["cert-manager.io/inject-ca-from"][len(old):]


def _service_refs(obj):
    """The references to namespaced objects that name their namespace: RBAC subjects, admission
    webhooks' services, and a CRD's conversion webhook service."""
    refs = list(obj.get("subjects") or [])
    refs += [(webhook.get("clientConfig") or {}).get("service") or {} for webhook in obj.get("webhooks") or []]
    if obj.get("kind") == "CustomResourceDefinition":
        refs.append(((((obj.get("spec") or {}).get("conversion") or {}).get("webhook") or {})
                     .get("clientConfig") or {}).get("service") or {})
    return refs


def _move_strings(obj, move_gateway, move_host):
    """Service hosts, and references to the moved Gateways: VirtualServices' spec.gateways,
    controllers' ISTIO_GATEWAY, KServe's ingressGateway, Knative's gateway.<ns>.<name> keys."""
    kind = obj.get("kind")
    if kind in ("VirtualService", "ConfigMap", "DestinationRule", "Certificate", "AuthorizationPolicy"):
        obj = _walk_strings(obj, lambda key, value: move_gateway(move_host(value)), skip_keys=("metadata",))
    elif kind != "CustomResourceDefinition":
        obj = _walk_strings(obj, lambda key, value: move_gateway(value), skip_keys=("metadata",))
    if kind == "ConfigMap" and isinstance(obj.get("data"), dict):
        obj["data"] = dict((move_gateway(k), v) for k, v in obj["data"].items())
    return obj


def _gateway_refs(objs, old, new):
    """A function that moves references to the Istio Gateways the render puts in namespace `old`
    (<old>/<name>, and Knative's gateway.<old>.<name>) to namespace `new`: upstream's
    kubeflow-gateway (istio-resources may be rendered in another run) and any in the render."""
    names = sorted(set([UPSTREAM_GATEWAY]) | set(
        o["metadata"]["name"] for o in objs if o.get("kind") == "Gateway"
        and str(o.get("apiVersion", "")).startswith("networking.istio.io/")
        and (o.get("metadata") or {}).get("namespace") == old and o["metadata"].get("name")))
    alternatives = "|".join(re.escape(n) for n in names)
    edge, end = r"(?<![A-Za-z0-9_./-])", r"(?![A-Za-z0-9_.-])"
    slash = re.compile(r"%s%s/(%s)%s" % (edge, re.escape(old), alternatives, end))
    knative = re.compile(r"%sgateway\.%s\.(%s)%s" % (edge, re.escape(old), alternatives, end))

    def move(value):
        return knative.sub(lambda m: "gateway.%s.%s" % (new, m.group(1)),
                           slash.sub(lambda m: "%s/%s" % (new, m.group(1)), value))
    return move


# ---------------------------------------------------------------- API versions

def set_api_versions(objs, versions):
    """Write objects of the kinds in `versions` ({group/Kind: version}) in that version.

    Upstream writes Istio objects in old versions (networking.istio.io/v1alpha3); the cluster
    serves the same schema under its preferred version, which is the one prune compares with."""
    require(isinstance(versions, dict), "components_api_versions", "must map group/Kind to a version",
            "Give for example {networking.istio.io/VirtualService: v1beta1}")
    out = []
    for obj in objs:
        obj = _copy(obj)
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


_BARE_IMAGE = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9._-]{0,127})?"
                         r"(@sha256:[a-f0-9]{64})?$")
_HOSTED = re.compile(r"^([a-z0-9-]+(\.[a-z0-9-]+)+(:[0-9]+)?|localhost(:[0-9]+)?)/[a-z0-9._\-/]+"
                     r"(:[A-Za-z0-9._-]+)?(@sha256:[a-f0-9]{64})?$")


def _image_key(key):
    """A key whose string value is one image reference: image, or a camelCase ...Image."""
    return isinstance(key, str) and (key == "image" or key.endswith("Image"))


def mirror_images(objs, prefixes, digests=None):
    """Rewrite every image reference to the internal registry following `prefixes`.

    Found: every `image` (and `...Image`) field of any object but a CRD, qualified or not
    (busybox:1.28 is docker.io/library/busybox:1.28), with or without a tag or digest; image
    references with a registry host inside args, env values and other strings
    (ghcr.io/containerd/busybox); the same inside ConfigMap values that hold JSON (KServe's
    inferenceservice-config); and a `hub` (Istio's injector values: a registry prefix, with the
    images under it named by `image` fields beside a `tag`).
    Returns (objects, mirror list [{source, target}], unmatched images (sorted), warnings): a
    warning names each reference no prefix matches, with its object and field.
    """
    _check_prefixes(prefixes)
    digests = digests or {}
    require(isinstance(digests, dict), "components_image_digests", "must be a mapping of image to digest",
            "Give {image: sha256:...}")
    mirrored, unmatched, warnings = {}, set(), set()
    targets = tuple(normalise_prefix(t) + "/" for t in prefixes.values())
    current = [None]  # the object being walked, named in the warnings

    def already(image):
        return normalise_image(image).startswith(targets)

    def image_ref(value, where):
        if already(value):
            return value
        target = map_image(value, prefixes, digests)
        if target is None:
            unmatched.add(value)
            warnings.add("%s (%s, field %s)" % (value, current[0], where))
            return value
        mirrored[normalise_image(value)] = target
        return target

    def hub(value, tag, names, where):
        """A registry prefix: rewritten by the same map; the images under it join the mirror list."""
        probe = value.rstrip("/") + "/x"
        if already(probe):
            return value
        target = map_image(probe, prefixes)
        for name in names:
            image = "%s/%s%s" % (value.rstrip("/"), name, ":" + tag if tag else "")
            if target is None:
                unmatched.add(image)
            else:
                mirrored[normalise_image(image)] = map_image(image, prefixes, digests)
        if target is None:
            warnings.add("hub %s (%s, field %s)" % (value, current[0], where))
            return value
        return target[:-2]

    def free_text(value, where):
        def token(match):
            text = match.group(0)
            if "://" in text:
                return text  # a URL, not an image
            stripped = text.rstrip(".:,")
            tail = text[len(stripped):]
            repo, suffix = _split_tag(stripped)
            if not _HOSTED.match(stripped) and not (suffix and "/" in stripped):
                return text
            if "/" not in repo.split("/", 1)[-1] and not suffix and "." in repo.rsplit("/", 1)[-1]:
                return text  # a host/file.ext path, not an image
            return image_ref(stripped, where) + tail
        return _TOKEN.sub(token, value)

    def walk(value, where, context):
        if isinstance(value, dict):
            tag = value.get("tag") if isinstance(value.get("tag"), str) else context.get("tag")
            inner = dict(context, tag=tag)
            if isinstance(value.get("hub"), str):
                inner["hub"] = True
            out = {}
            for key, item in value.items():
                path = "%s.%s" % (where, key)
                if key == "hub" and isinstance(item, str):
                    out[key] = hub(item, tag, _relative_names(value), path)
                elif _image_key(key) and isinstance(item, str) and item:
                    if inner.get("hub") and "/" not in item and ":" not in item:
                        out[key] = item  # a name under the hub, listed with it
                    elif _BARE_IMAGE.match(item) or _HOSTED.match(item):
                        out[key] = image_ref(item, path)
                    else:
                        out[key] = free_text(item, path)
                else:
                    out[key] = walk(item, path, inner)
            return out
        if isinstance(value, list):
            return [walk(item, "%s[%d]" % (where, index), context) for index, item in enumerate(value)]
        if isinstance(value, str):
            if value[:1] in "{[" and where.startswith("data."):
                parsed = _json(value)
                if parsed is not None:
                    rewritten = walk(parsed, where, context)
                    return value if rewritten == parsed else json.dumps(rewritten, indent=2, sort_keys=False)
            return free_text(value, where)
        return value

    out = []
    for obj in objs:
        if obj.get("kind") == "CustomResourceDefinition":
            out.append(_copy(obj))
            continue
        current[0] = describe(obj)
        new = {}
        for key, value in obj.items():
            new[key] = _copy(value) if key in ("metadata", "apiVersion", "kind") else \
                walk(value, key, {})
        out.append(new)
    mirror = [{"source": source, "target": mirrored[source]} for source in sorted(mirrored)]
    return out, mirror, sorted(unmatched), sorted(warnings)


def _relative_names(values):
    """The image names relative to a hub, in a hub's subtree (Istio's values: proxy.image: proxyv2)."""
    names = set()

    def visit(value):
        if isinstance(value, dict):
            for key, item in value.items():
                if _image_key(key) and isinstance(item, str) and item and "/" not in item and ":" not in item:
                    names.add(item)
                else:
                    visit(item)
        elif isinstance(value, list):
            for item in value:
                visit(item)
    visit(values)
    return sorted(names)


def _json(text):
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, (dict, list)) else None


def mirror_lines(mirror):
    """`source=target` lines, the mapping file format of `oc image mirror -f`."""
    return ["%s=%s" % (entry["source"], entry["target"].split("@")[0]) for entry in mirror]


# ---------------------------------------------------------------- sidecar injection

# Workloads that never get a sidecar, whichever namespace they are in: the mesh's own control plane,
# gateways and CNI agent, cert-manager and Knative's system workloads. Matched on namespace, on name
# (fnmatch) or on a label's value; an injected sidecar would break them (istiod, the CNI DaemonSet)
# or their traffic (gateways, webhooks that the API server calls directly).
SIDECAR_NEVER_NAMESPACES = ("kube-system", "cert-manager", "knative-serving", "knative-eventing", "istio-cni",
                            "openshift-*")
SIDECAR_NEVER_NAMES = ("istiod*", "istio-ingressgateway*", "istio-egressgateway*", "istio-cni*", "*-gateway",
                       "cert-manager*", "ztunnel*")
SIDECAR_NEVER_LABELS = (("app", "istiod"), ("istio", "pilot"), ("istio", "*gateway"), ("k8s-app", "istio-cni-node"),
                        ("app.kubernetes.io/part-of", "cert-manager"), ("app.kubernetes.io/instance", "cert-manager"),
                        ("app.kubernetes.io/part-of", "knative-*"), ("app.kubernetes.io/name", "knative-*"),
                        ("gateway.istio.io/managed", "*"))


def sidecar_system_workload(obj):
    """Why a workload is one that never gets a sidecar, or None."""
    namespace, name = _ns(obj) or "", _name(obj) or ""
    if any(fnmatch.fnmatchcase(namespace, pattern) for pattern in SIDECAR_NEVER_NAMESPACES):
        return "namespace %s" % namespace
    if any(fnmatch.fnmatchcase(name, pattern) for pattern in SIDECAR_NEVER_NAMES):
        return "name %s" % name
    labels = dict((obj.get("metadata") or {}).get("labels") or {})
    labels.update(((obj.get("spec") or {}).get("template") or {}).get("metadata", {}).get("labels") or {})
    for key, pattern in SIDECAR_NEVER_LABELS:
        if key in labels and fnmatch.fnmatchcase(str(labels[key]), pattern):
            return "label %s=%s" % (key, labels[key])
    return None


def inject_sidecars(objs, namespaces, revision="", authservice=(), exclude=()):
    """Sidecar injection into the named namespaces only (a name, or a list of names).

    - Each named Namespace is labelled for injection (istio-injection=enabled, or istio.io/rev).
    - Each workload there gets sidecar.istio.io/inject "true" on its pods, except: a workload
      upstream says "false" for (label or annotation), one named in `exclude`, and mesh control
      plane, gateway, CNI, cert-manager and Knative workloads (sidecar_system_workload), which get
      "false". Where the pod template has both the label and the annotation, they agree.
    - Workloads in other namespaces are left as they are; those named in `authservice` get
      traffic.sidecar.istio.io/excludeOutboundPorts "443" (to reach the OIDC provider past a sidecar).
    """
    if isinstance(namespaces, str):
        namespaces = [namespaces]
    require(isinstance(namespaces, (list, tuple)) and all(isinstance(n, str) for n in namespaces),
            "components_sidecar_namespaces", "must be a list of namespace names", "Give for example [kubeflow]")
    for name in namespaces:
        dns_label(name, "components_sidecar_namespaces")
    out = []
    for obj in objs:
        obj = _copy(obj)
        meta = obj.setdefault("metadata", {})
        if obj.get("kind") == "Namespace" and meta.get("name") in namespaces:
            labels = dict(meta.get("labels") or {})
            if revision:
                labels.pop("istio-injection", None)
                labels["istio.io/rev"] = revision
            else:
                labels["istio-injection"] = "enabled"
            meta["labels"] = labels
        elif pod_spec(obj) is not None:
            template = pod_template_meta(obj)
            annotations = dict(template.get("annotations") or {})
            if meta.get("name") in authservice:
                annotations[EXCLUDE_OUTBOUND] = "443"
            if _ns(obj) in namespaces:
                labels = dict(template.get("labels") or {})
                upstream = (labels.get(INJECT), annotations.get(INJECT))
                off = "false" in upstream or meta.get("name") in exclude or sidecar_system_workload(obj)
                value = "false" if off else "true"
                annotations[INJECT] = value
                if INJECT in labels:
                    labels[INJECT] = value
                    template["labels"] = labels
            if annotations:
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
        obj = _copy(obj)
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


# ---------------------------------------------------------------- the profile controller's principals

# The environment variables the profile controller puts into each profile's ns-owner-access-istio
# AuthorizationPolicy (upstream defaults: istio-system's gateway, kubeflow's ml-pipeline-ui).
PRINCIPAL_ENV = ("ISTIO_INGRESS_GATEWAY_PRINCIPAL", "KFP_UI_PRINCIPAL", "NOTEBOOK_CONTROLLER_PRINCIPAL")
_PRINCIPAL = re.compile(r"^[a-z0-9.-]+/ns/[a-z0-9-]+/sa/[a-z0-9.-]+$")


def profile_controller_principals(objs, principals, deployment="profiles-deployment",
                                  field="components_profile_principals"):
    """Set the principals the profile controller trusts ({env name: principal}; empty values keep
    upstream's) on every container of its Deployment: the controller (`manager`) writes them into
    ns-owner-access-istio, KFAM (`kfam`) into the contributors' policies. Owners' and contributors'
    requests arriving from the gateway kfocp runs are then allowed."""
    require(isinstance(principals, dict), field, "must be a mapping of environment variable to principal",
            "Give e.g. {ISTIO_INGRESS_GATEWAY_PRINCIPAL: cluster.local/ns/kubeflow-mesh/sa/<gateway account>}")
    wanted = {}
    for name, value in sorted(principals.items()):
        require(name in PRINCIPAL_ENV, "%s.%s" % (field, name), "is not a principal the profile controller reads",
                "Use one of %s" % ", ".join(PRINCIPAL_ENV))
        require(value is None or isinstance(value, str) and (not value or _PRINCIPAL.match(value)),
                "%s.%s" % (field, name), "%r is not a principal" % (value,),
                "Give <trust domain>/ns/<namespace>/sa/<service account>, or leave it empty for upstream's")
        if value:
            wanted[name] = value
    out = []
    for obj in objs:
        if wanted and obj.get("kind") == "Deployment" and _name(obj) == deployment:
            obj = _copy(obj)
            for item in (pod_spec(obj) or {}).get("containers") or []:
                env = [e for e in item.get("env") or [] if e.get("name") not in wanted]
                item["env"] = env + [{"name": name, "value": value} for name, value in sorted(wanted.items())]
        out.append(obj)
    return out


# ---------------------------------------------------------------- upstream's policies of the gateway

# The gateway principal upstream's web-app AuthorizationPolicies admit (central-dashboard,
# jupyter-web-app, volumes-web-app, tensorboards-web-app, katib-ui, kserve-models-web-app,
# ml-pipeline-ui): istio-system's istio-ingressgateway, which kfocp does not run.
UPSTREAM_GATEWAY_PRINCIPAL = "cluster.local/ns/istio-system/sa/istio-ingressgateway-service-account"


def gateway_policy_principals(objs, principal, upstream=UPSTREAM_GATEWAY_PRINCIPAL,
                              field="components_profile_principals.ISTIO_INGRESS_GATEWAY_PRINCIPAL"):
    """Every AuthorizationPolicy that names upstream's gateway principal names `principal`, the
    gateway kfocp runs, instead: in its sources' principals and notPrincipals, and in the values of
    its source.principal conditions. Other principals are left as they are."""
    require(isinstance(principal, str) and _PRINCIPAL.match(principal), field, "%r is not a principal" % (principal,),
            "Give <trust domain>/ns/<namespace>/sa/<service account> of the gateway kfocp runs")

    def swap(values):
        return [principal if value == upstream else value for value in values or []]

    out = []
    for obj in objs:
        if obj.get("kind") == "AuthorizationPolicy" and upstream in json.dumps(obj.get("spec") or {}):
            obj = _copy(obj)
            for rule in obj["spec"].get("rules") or []:
                for source in ((entry or {}).get("source") or {} for entry in rule.get("from") or []):
                    for key in ("principals", "notPrincipals"):
                        if key in source:
                            source[key] = swap(source[key])
                for condition in rule.get("when") or []:
                    if condition.get("key") == "source.principal":
                        for key in ("values", "notValues"):
                            if key in condition:
                                condition[key] = swap(condition[key])
        out.append(obj)
    return out


# ---------------------------------------------------------------- the dashboard's logout

def dashboard_logout_url(objs, url, deployment="centraldashboard", field="components_dashboard_logout_url"):
    """The central dashboard's Logout button goes to `url` (its LOGOUT_URL): the sign-out path of
    the oauth-proxy in front of the gateway, where upstream names its own oauth2-proxy's."""
    require(isinstance(url, str) and (url.startswith("/") or url.startswith("https://")), field,
            "%r is not a path or an https URL" % (url,), "Give oauth-proxy's sign-out path, /oauth/sign_out")
    out = []
    for obj in objs:
        if obj.get("kind") == "Deployment" and _name(obj) == deployment:
            obj = _copy(obj)
            for item in (pod_spec(obj) or {}).get("containers") or []:
                env = [e for e in item.get("env") or [] if e.get("name") != "LOGOUT_URL"]
                item["env"] = env + [{"name": "LOGOUT_URL", "value": url}]
        out.append(obj)
    return out


# ---------------------------------------------------------------- KServe's local gateway

# Kourier's cluster-local Service, `kourier-internal` (port 80), in the namespace OpenShift Serverless
# runs Kourier in, `<serving namespace>-ingress` (serverless-operator openshift-knative-operator
# kodata/ingress/latest/kourier/1-net-kourier.yaml and pkg/serving/kourier.go `kourierNamespace`).
KOURIER_INTERNAL_SERVICE = "kourier-internal"


def kourier_local_gateway_service():
    """The host of the Knative ingress that serves cluster-local routes in the Knative kfocp runs
    (the serverless role: OpenShift Serverless, always with Kourier)."""
    from ansible_collections.kfocp.kubeflow.plugins.module_utils.builders import serverless
    return "%s.%s%s.svc.cluster.local" % (KOURIER_INTERNAL_SERVICE, serverless.SERVING_NAMESPACE,
                                          serverless.INGRESS_SUFFIX)


def kserve_local_gateway(objs, service, field="kserve_local_gateway_service"):
    """KServe's `inferenceservice-config` `ingress`: its `localGatewayService` (and
    `knativeLocalGatewayService` where given) is `service`. In Serverless mode KServe routes every
    InferenceService through a VirtualService to that host (rewriting Host to the Knative Service's
    cluster-local name) and makes `<isvc>.<ns>.svc` an ExternalName Service for it. Upstream names
    net-istio's `knative-local-gateway.istio-system`, which only common/knative deploys; kfocp's
    Knative uses Kourier, whose cluster-local Service is `kourier-internal`."""
    require(isinstance(service, str) and re.match(r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$", service or "x"), field,
            "%r is not a host name" % (service,), "Give the Service host of the Knative ingress's cluster-local gateway")
    out = []
    for obj in objs:
        data = obj.get("data") if obj.get("kind") == "ConfigMap" and _name(obj) == "inferenceservice-config" else None
        if service and isinstance(data, dict) and isinstance(data.get("ingress"), str):
            ingress = json.loads(data["ingress"])
            keys = ["localGatewayService"] + [k for k in ("knativeLocalGatewayService",) if ingress.get(k)]
            if any(ingress.get(k) != service for k in keys):
                obj = _copy(obj)
                ingress.update((k, service) for k in keys)
                obj["data"]["ingress"] = json.dumps(ingress, indent=2)
        out.append(obj)
    return out


# ---------------------------------------------------------------- KServe's external URL

# The scheme of the front door kfocp runs (the auth role's Route terminates TLS on auth_host).
FRONT_DOOR_SCHEME = "https"


def kserve_ingress_host(value, field="components_kserve_ingress_domain"):
    """`value` as KServe's `ingressDomain`: a host name, no scheme, port or path ("" is kept)."""
    require(isinstance(value, str) and (value == "" or (
        len(value) <= 253 and re.match(r"^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$", value))),
        field, "%r is not a host name" % (value,),
        "Give the host users open Kubeflow at (the auth role's auth_host, e.g. kubeflow.apps.<cluster domain>), "
        "without scheme, port or path; \"\" keeps upstream's")
    return value


def kserve_ingress_domain(objs, domain, field="components_kserve_ingress_domain"):
    """KServe's `inferenceservice-config` `ingress`, where it has a `pathTemplate` (26.03's
    `/serving/{{ .Namespace }}/{{ .Name }}`): `ingressDomain` is `domain` and `urlScheme` https. In
    Serverless mode KServe then gives an InferenceService the URL
    https://<domain>/serving/<ns>/<name> and adds to its VirtualService, on `ingressGateway`, a rule
    for authority `domain` and that path: the request the front door (the Route on auth_host,
    oauth-proxy, the gateway with Host auth_host) sends. Upstream's example.com matches no request
    that reaches the gateway. A configuration without `pathTemplate` (v1.10.2, v1.11.0) names
    InferenceServices by Knative's domain, which the front door does not serve: it is kept, as is
    every configuration when `domain` is ""."""
    kserve_ingress_host(domain, field)
    out = []
    for obj in objs:
        data = obj.get("data") if obj.get("kind") == "ConfigMap" and _name(obj) == "inferenceservice-config" else None
        if domain and isinstance(data, dict) and isinstance(data.get("ingress"), str):
            ingress = json.loads(data["ingress"])
            wanted = {"ingressDomain": domain, "urlScheme": FRONT_DOOR_SCHEME}
            if ingress.get("pathTemplate") and any(ingress.get(k) != v for k, v in wanted.items()):
                obj = _copy(obj)
                ingress.update(wanted)
                obj["data"]["ingress"] = json.dumps(ingress, indent=2)
        out.append(obj)
    return out


# ---------------------------------------------------------------- mesh membership

def mesh_member(membership, namespace, field="mesh_membership"):
    """The labels and objects (a ServiceMeshMember on Service Mesh 2) that make the components'
    namespace, whose pods get sidecars, a member of the mesh: what the mesh_membership filter
    returned for it."""
    require(isinstance(membership, dict) and isinstance(membership.get("labels") or {}, dict), field,
            "must be what the mesh_membership filter returns", "Pass components_namespace | mesh_membership(settings)")
    objs = []
    for obj in membership.get("objects") or []:
        require(_ns(obj) == namespace, field + ".objects", "%s is for namespace %r, not %r" % (
            describe(obj), _ns(obj), namespace), "Compute the membership for components_namespace")
        objs.append(_copy(obj))
    return dict(membership.get("labels") or {}), objs


# ---------------------------------------------------------------- metadata-envoy

def metadata_envoy_base_id(objs, name="metadata-envoy-deployment", base_id=1, config="/etc/envoy.yaml"):
    """Give metadata-envoy its own Envoy --base-id, so that it runs beside an injected sidecar.

    The image's entrypoint is `envoy -c` with the config path as its only argument, so when the
    container has no args the config path is kept first."""
    out = []
    for obj in objs:
        obj = _copy(obj)
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
        obj = _copy(obj)
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

def derive_scc(objs, uid_range=None, openshift=None, selinux_level=None):
    """The least privileged SCC each service account needs, from its pods' whole security context.

    Every workload's pod spec is checked against the SCC strategies OpenShift ships
    (scc_policies: restricted-v2, nonroot-v2, anyuid, hostmount-anyuid, hostnetwork-v2,
    privileged, least privileged first, in SCC admission's own order); an account gets the first SCC
    that, with the SCCs every authenticated user may use, admits all its pods (admission admits a pod
    under any SCC the account may use that admits it); where that is privileged and less privileged
    SCCs admit each pod, those instead, one grant each (scc_policies.grants).
    `openshift` is the cluster's OpenShift minor (kfocp_openshift): its own default SCCs
    (scc_policies.model: hostmount-anyuid-v2 from 4.17; restricted-v3, nested-container and image
    volumes from 4.20); None, those every supported version ships.
    `uid_range` ({start, size}) is the namespace's UID range (and group range), which fixed UIDs,
    fsGroups and supplemental groups must fall in for restricted-v2; unknown ({} or None), every
    fixed value is outside. `selinux_level` is the namespace's SELinux level (its annotation
    openshift.io/sa.scc.mcs): SELinux options with that level (and no user, role or type) need no
    grant; unknown, a level set is taken to differ. Returns grants [{namespace, serviceaccount, scc, field, reason}] for
    the accounts that need more than restricted-v2: `field` is the field that forced the SCC (the
    first the SCC just before it refused), `reason` every such field with its workload."""
    if uid_range:
        for key in ("start", "size"):
            value = uid_range.get(key)
            require(isinstance(value, int) and not isinstance(value, bool) and value >= 0,
                    "components_scc_uid_range.%s" % key, "must be a non-negative integer",
                    "Copy it from the namespace's openshift.io/sa.scc.uid-range annotation (start/size)")
    require(selinux_level is None or isinstance(selinux_level, str), "components_scc_selinux_level",
            "must be a string", "Copy it from the namespace's %s annotation (such as s0:c26,c5)"
            % scc_policies.MCS_ANNOTATION)
    pods = {}
    for obj in objs:
        spec = pod_spec(obj)
        if spec is None:
            continue
        account = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
        annotations = pod_meta(obj).get("annotations") or {}
        pods.setdefault((_ns(obj) or "default", account), []).append(("%s %s" % (obj["kind"], _name(obj)), spec,
                                                                      annotations))
    grants, model = [], scc_policies.model(openshift or None)
    for (namespace, account), specs in sorted(pods.items()):
        try:
            chosen = scc_policies.grants(specs, uid_range or None, version=openshift or None,
                                         selinux_level=selinux_level or None)
        except ValueError as error:
            raise DefinitionError("service account %s/%s: %s" % (namespace, account, error))
        for scc, refused, before in chosen:
            if scc in model.defaults:
                continue
            reasons = []
            for label, field, why in refused:
                text = "%s: %s %s" % (label, field, why)
                if text not in reasons:
                    reasons.append(text)
            pinned = refused[0][1].endswith("[%s]" % scc_policies.REQUIRED_SCC_ANNOTATION)
            grants.append({"namespace": namespace, "serviceaccount": account, "scc": scc, "field": refused[0][1],
                           "reason": reasons[0] if pinned else "%s refuses: %s" % (before, "; ".join(reasons))})
    return grants


def scc_objects(grants):
    """The RoleBindings of the derived grants (through the scc role's builder), named apart from
    the scc role's own grants so that the two roles never manage the same object."""
    bindings = scc_builder.rolebindings(grants, allowed=scc_builder.KNOWN_SCCS, field="components SCC grants")
    for binding in bindings:
        binding["metadata"]["name"] = "kfocp-components-" + binding["metadata"]["name"][len("kfocp-"):]
    return bindings


def audit_table(grants):
    """Lines of a fixed-width table: service account, namespace, SCC, the field that forced it,
    and the reason (every refused field, with its workload)."""
    rows = [("SERVICE ACCOUNT", "NAMESPACE", "SCC", "FORCED BY", "REASON")]
    rows += [(g["serviceaccount"], g["namespace"], g["scc"], g.get("field", ""), g.get("reason", "")) for g in grants]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return ["%-*s  %-*s  %-*s  %-*s  %s" % (widths[0], r[0], widths[1], r[1], widths[2], r[2], widths[3], r[3], r[4])
            for r in rows]


# ---------------------------------------------------------------- Pod Security Standards

POD_SECURITY_SETTINGS = ("auto", "none") + pod_security.LEVELS
REASON_WORKLOADS = 3  # the workloads a reason names, with their checks


def derive_pod_security(objs, namespaces, setting="auto"):
    """The Pod Security Standards level of each namespace in `namespaces`, from the pod templates
    of the workloads that live there (after kfocp's own adaptations): the most permissive level
    any of them needs (restricted when none needs more), on Kubernetes and on OpenShift (where SCC
    admission turns seccomp annotations into fields). `setting` is auto (that level), a level
    (that level for every namespace: it fails, before any change, naming the workload and the
    field, when a workload needs more), or none (no levels: {}).

    Returns {namespace: {level, workload, field, reason}}: `workload` and `field` forced the
    level (the first workload that needs it, and its first field the next stricter level
    refuses), `reason` the checks of that level each such workload fails (the first few workloads;
    "" for restricted)."""
    require(setting in POD_SECURITY_SETTINGS, "components_pod_security",
            "must be one of %s, not %r" % (", ".join(POD_SECURITY_SETTINGS), setting),
            "Give auto to derive each namespace's level from its workloads, a level, or none")
    if setting == "none":
        return {}
    needs = _workload_levels(objs, namespaces)
    return dict((namespace, _namespace_level(namespace, workloads, setting))
                for namespace, workloads in sorted(needs.items()))


def _workload_levels(objs, namespaces):
    """{namespace: [(workload, the level it needs, the checks the next stricter level fails)]}."""
    needs = dict((name, []) for name in namespaces)
    for obj in objs:
        spec = pod_spec(obj)
        if spec is None or _ns(obj) not in needs:
            continue
        level, reasons = pod_security.least_level(spec, pod_meta(obj), openshift=True)
        needs[_ns(obj)].append(("%s %s" % (obj["kind"], _name(obj)), level, reasons))
    return needs


def _namespace_level(namespace, workloads, setting):
    """One namespace's entry: its level (the most permissive its workloads need, or `setting`,
    which fails when a workload needs more), and with auto what forced it."""
    level = pod_security.RESTRICTED
    for _workload, needed, _reasons in workloads:
        level = pod_security.more_permissive(level, needed)
    forcing = [(workload, reasons) for workload, needed, reasons in workloads if needed == level and reasons]
    if setting == "auto":
        return _forced_by(level, forcing)
    if pod_security.LEVELS.index(level) > pod_security.LEVELS.index(setting):
        workload, reasons = forcing[0]
        require(False, "components_pod_security",
                "%s in namespace %s needs the %s level, as %s is %s, which %s refuses" % (
                    workload, namespace, level, reasons[0][2], reasons[0][3], setting),
                "Give auto, or at least %s, or change that workload" % level)
    return {"level": setting, "workload": "", "field": "", "reason": ""}


def _forced_by(level, forcing):
    """A derived level's entry: the first workload that forced it and its field, and the checks
    of the next stricter level the first few such workloads fail."""
    entry = {"level": level, "workload": "", "field": "", "reason": ""}
    if not forcing:
        return entry
    entry["workload"], entry["field"] = forcing[0][0], forcing[0][1][0][2]
    shown = ["%s (%s)" % (workload, ", ".join(sorted(set(r[0] for r in reasons))))
             for workload, reasons in forcing[:REASON_WORKLOADS]]
    more = len(forcing) - REASON_WORKLOADS
    entry["reason"] = "%s refuses %s%s" % (pod_security.stricter(level), "; ".join(shown),
                                           "; and %d more" % more if more > 0 else "")
    return entry


def pod_security_table(levels):
    """Lines of a fixed-width table: namespace, level, the workload and field that forced it, and
    the reason (the checks of the next stricter level each forcing workload fails)."""
    rows = [("NAMESPACE", "LEVEL", "WORKLOAD", "FORCED BY", "REASON")]
    rows += [(ns, e["level"], e["workload"], e["field"], e["reason"]) for ns, e in sorted(levels.items())]
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return ["%-*s  %-*s  %-*s  %-*s  %s" % (widths[0], r[0], widths[1], r[1], widths[2], r[2], widths[3], r[3], r[4])
            for r in rows]


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


# ---------------------------------------------------------------- objects someone else created

OWNERSHIP, ENSURE, ADOPT = "kfocp.io/ownership", "ensure", "kfocp.io/adopt"


def ownership_policy(objs, take_over=()):
    """Mark what the apply engine does with objects that exist and are not kfocp's, per kind.

    - CustomResourceDefinition: created when missing and kept up to date when kfocp created it;
      one that an earlier install, OLM or the cluster made is left as it is and reported (skipped),
      unless `take_over` names it.
    - Objects `take_over` names (patterns of Kind/name, fnmatch: CustomResourceDefinition/*,
      CustomResourceDefinition/profiles.kubeflow.org): taken over, fields included, and reported;
      an object that an operator controls (a controller ownerReference, OLM's labels) never is.
    - Namespaces are platform namespaces (created when missing, else left as they are).
    - Every other kind: an existing object someone else created is a failure naming it, reported
      at the end with every other failure, after all else was applied.
    """
    require(isinstance(take_over, (list, tuple)) and all(isinstance(p, str) and "/" in p for p in take_over),
            "components_take_over", "must be a list of Kind/name patterns",
            "Give for example [CustomResourceDefinition/*] or [CustomResourceDefinition/profiles.kubeflow.org]")
    out = []
    for obj in objs:
        taken = any(fnmatch.fnmatchcase("%s/%s" % (obj.get("kind"), _name(obj)), pattern) for pattern in take_over)
        if taken or obj.get("kind") == "CustomResourceDefinition":
            obj = _copy(obj)
            meta = obj.setdefault("metadata", {})
            annotations = dict(meta.get("annotations") or {})
            if taken:
                annotations[ADOPT] = "true"
            else:
                annotations.setdefault(OWNERSHIP, ENSURE)
            meta["annotations"] = annotations
        out.append(obj)
    return out


# ---------------------------------------------------------------- the whole pipeline

PROFILE_LABELS_FILE = "namespace-labels.yaml"


def profile_namespace_labels(objs, revision, extra=None):
    """The profile controller's namespace-labels file (the ConfigMap holding namespace-labels.yaml)
    with the injection labels of a revision-based mesh: istio.io/rev=<revision>, and
    istio-injection given the empty value, which makes the controller remove the
    istio-injection=enabled it puts on every profile namespace (that label would win over the
    revision). The controller only adds missing labels, so these belong in its file, not in a
    patch of the namespaces. `extra` labels are written into the file too (the Pod Security labels
    of profile namespaces). Without a revision or extra labels the objects are returned unchanged."""
    if not revision and not extra:
        return objs
    import yaml  # PyYAML comes with Ansible; the labels file is YAML inside a ConfigMap value
    out = []
    for obj in objs:
        data = obj.get("data") or {}
        if obj.get("kind") == "ConfigMap" and PROFILE_LABELS_FILE in data:
            obj = _copy(obj)
            labels = yaml.safe_load(data[PROFILE_LABELS_FILE] or "") or {}
            if revision:
                labels.update({"istio-injection": "", "istio.io/rev": revision})
            labels.update(extra or {})
            obj["data"][PROFILE_LABELS_FILE] = yaml.safe_dump(labels, default_flow_style=False, sort_keys=True)
        out.append(obj)
    return out


def platform_namespaces(objs, injection=None):
    """Replace rendered Namespace objects by platform namespaces (created when missing, kept until
    uninstall) and add one for every namespace that a rendered object lives in. `injection` maps
    the namespaces that get sidecars to their injection labels."""
    names = set(_ns(obj) for obj in objs if _ns(obj))
    names |= set(_name(obj) for obj in objs if obj.get("kind") == "Namespace")
    rendered = dict((_name(obj), obj) for obj in objs if obj.get("kind") == "Namespace")
    out = [obj for obj in objs if obj.get("kind") != "Namespace"]
    spaces = []
    for name in sorted(names):
        labels = dict(((rendered.get(name) or {}).get("metadata") or {}).get("labels") or {})
        labels.pop(COMPONENT_LABEL, None)
        labels.update((injection or {}).get(name) or {})
        spaces.append(platform_namespace(name, labels or None))
    return spaces + out


class Assembly:
    """What assemble's passes read and change: the objects, the options, the components'
    namespace, the labels each namespace gets (`injection`, {namespace: labels}), the mesh member
    objects, and the result so far."""

    def __init__(self, objs, options):
        self.objs = objs
        self.options = options
        self.namespace = options.get("namespace") or "kubeflow"
        self.injection = {}
        self.members = []
        self.result = {"mirror": [], "mirror_lines": [], "unmatched_images": [], "mirror_warnings": [],
                       "grants": [], "audit": []}


def namespace_pass(state):
    """Move the objects from upstream's kubeflow namespace (and their references to the kubeflow
    Gateway) to the components' namespace."""
    state.objs = set_namespace(state.objs, state.namespace)


def api_versions_pass(state):
    """Serve each listed kind in the version the cluster has (api_versions {group/Kind: version})."""
    state.objs = set_api_versions(state.objs, state.options.get("api_versions") or {})


def argo_pass(state):
    """Drop Argo's own controller for an external one, and point pipelines at its S3 store."""
    argo = state.options.get("argo")
    if argo is not None:
        state.objs = external_argo(state.objs, argo.get("s3") or {},
                                   configmap=argo.get("configmap") or "workflow-controller-configmap")


def metadata_envoy_pass(state):
    """Give metadata-envoy its own Envoy base id, beside an injected sidecar."""
    envoy = state.options.get("metadata_envoy")
    if envoy is not None:
        state.objs = metadata_envoy_base_id(state.objs, base_id=envoy.get("base_id", 1),
                                            config=envoy.get("config") or "/etc/envoy.yaml")


def virtualservices_pass(state):
    """Point the VirtualServices at another mesh's gateway, hosts and exportTo."""
    vs = state.options.get("virtualservice")
    if vs is not None:
        state.objs = adapt_virtualservices(state.objs, vs.get("gateway") or "", vs.get("hosts") or None,
                                           vs.get("export_to") or None)


def gateway_principals_pass(state):
    """Give the profile controller the principals of the gateway (and the other callers) it trusts."""
    if state.options.get("principals"):
        state.objs = profile_controller_principals(state.objs, state.options["principals"])


def gateway_policies_pass(state):
    """Upstream's AuthorizationPolicies that admit istio-system's gateway admit the gateway kfocp
    runs instead (the profile controller's ISTIO_INGRESS_GATEWAY_PRINCIPAL)."""
    principal = (state.options.get("principals") or {}).get("ISTIO_INGRESS_GATEWAY_PRINCIPAL")
    if principal:
        state.objs = gateway_policy_principals(state.objs, principal)


def logout_pass(state):
    """The dashboard's Logout button signs out of the oauth-proxy kfocp runs (logout_url)."""
    if state.options.get("logout_url"):
        state.objs = dashboard_logout_url(state.objs, state.options["logout_url"])


def kserve_local_gateway_pass(state):
    """KServe reaches InferenceServices through Kourier's cluster-local Service (option
    kserve_local_gateway_service; "" keeps upstream's)."""
    service = state.options.get("kserve_local_gateway_service")
    state.objs = kserve_local_gateway(state.objs, kourier_local_gateway_service() if service is None else service)


def kserve_ingress_domain_pass(state):
    """KServe's InferenceService URLs are the front door's (option kserve_ingress_domain, what
    settings.kserve_ingress_domain derives; "" or absent keeps upstream's)."""
    state.objs = kserve_ingress_domain(state.objs, state.options.get("kserve_ingress_domain") or "")


def sidecars_pass(state):
    """Inject sidecars into the workloads of the listed namespaces (the components' by default),
    and label those namespaces, and the profile namespaces, for injection."""
    sidecar = state.options.get("sidecar")
    if sidecar is None:
        return
    injected = list(sidecar.get("namespaces") or [state.namespace])
    # A named revision of the mesh the components join is theirs too: istiod's webhooks let
    # istio-injection=enabled win over istio.io/rev and serve it only for the default revision, so
    # the sidecar namespaces and the profile namespaces would get no proxy.
    mesh_revision = ((state.options.get("mesh_membership") or {}).get("labels") or {}).get("istio.io/rev", "")
    revision = sidecar.get("revision") or mesh_revision
    require(not mesh_revision or revision == mesh_revision, "components_sidecar_revision",
            "is %r, but the mesh's revision is %r (service_mesh role)" % (revision, mesh_revision),
            "Leave it empty: the components follow the mesh's revision")
    state.objs = inject_sidecars(state.objs, injected, revision, tuple(sidecar.get("authservice") or ()),
                                 tuple(sidecar.get("exclude") or ()))
    labels = {"istio.io/rev": revision} if revision else {"istio-injection": "enabled"}
    state.injection = dict((name, labels) for name in injected)
    state.objs = profile_namespace_labels(state.objs, revision)


def profile_pod_security_pass(state):
    """Write the Pod Security level of profile namespaces into the profile controller's labels file."""
    level = state.options.get("profile_pod_security") or "none"
    require(level in pod_security.LEVELS + ("none",), "components_profile_pod_security",
            "must be one of %s, not %r" % (", ".join(pod_security.LEVELS + ("none",)), level),
            "Give the level of namespace_policies_pod_security, or none")
    if level != "none":
        state.objs = profile_namespace_labels(state.objs, "", pod_security.labels(level))


def images_pass(state):
    """Pull every image from its mirror (mirror {prefixes, digests}), and list what was mirrored."""
    mirror = state.options.get("mirror")
    if mirror is None:
        return
    result = state.result
    state.objs, result["mirror"], result["unmatched_images"], result["mirror_warnings"] = mirror_images(
        state.objs, mirror.get("prefixes") or {}, mirror.get("digests") or {})
    result["mirror_lines"] = mirror_lines(result["mirror"])


def scc_pass(state):
    """Derive the least privileged SCC of each service account (scc {uid_range, openshift, selinux_level}),
    and its audit."""
    scc = state.options.get("scc")
    if scc is not None:
        state.result["grants"] = derive_scc(state.objs, scc.get("uid_range"), scc.get("openshift"),
                                            scc.get("selinux_level"))
        state.result["audit"] = audit_table(state.result["grants"])


def mesh_membership_pass(state):
    """Make the components' namespace a member of the mesh: its labels (a revision's wins over
    istio-injection) and a ServiceMeshMember on Service Mesh 2."""
    if not state.options.get("mesh_membership"):
        return
    labels, state.members = mesh_member(state.options["mesh_membership"], state.namespace)
    own = dict(state.injection.get(state.namespace) or {})
    if "istio.io/rev" in labels:  # istio-injection would win over the mesh's revision
        own.pop("istio-injection", None)
    state.injection[state.namespace] = dict(own, **labels)


def pod_security_pass(state):
    """Derive the Pod Security level of every namespace the objects live in, and label it."""
    names = sorted(set(_ns(obj) for obj in state.objs if _ns(obj)) |
                   set(_name(obj) for obj in state.objs if obj.get("kind") == "Namespace"))
    levels = derive_pod_security(state.objs, names, state.options.get("pod_security") or "auto")
    state.result["pod_security"] = levels
    state.result["pod_security_table"] = pod_security_table(levels)
    for name, entry in levels.items():
        state.injection[name] = dict(state.injection.get(name) or {}, **pod_security.labels(entry["level"]))


def platform_namespaces_pass(state):
    """Put the platform Namespaces, with their labels, first; add the mesh members and the SCC
    grants' RoleBindings."""
    state.objs = platform_namespaces(state.objs, state.injection) + [_label(obj, "mesh") for obj in state.members]
    if state.result["grants"]:
        state.objs += [_label(b, "scc") for b in scc_objects(state.result["grants"])]


def ownership_pass(state):
    """Aggregated ClusterRoles without their rules (a GitOps engine that applied upstream's empty
    rules would fight the aggregation controller too: Argo CD reports them OutOfSync for ever), then
    plain objects for GitOps (render), or the apply-time ownership markers."""
    objs = aggregated_rules(state.objs)
    if state.options.get("render"):
        cluster = _cluster_scoped(objs)
        state.objs = [_plain(obj, cluster) for obj in objs]
    else:
        state.objs = ownership_policy(objs, state.options.get("take_over") or ())


# assemble's passes, in order: later passes see what earlier ones did (images are mirrored after
# sidecars are injected, SCCs and Pod Security levels are derived from the final pods, and the
# namespaces get every label the passes before gave them).
PASSES = (namespace_pass, api_versions_pass, argo_pass, metadata_envoy_pass, virtualservices_pass,
          kserve_local_gateway_pass, kserve_ingress_domain_pass, gateway_principals_pass, gateway_policies_pass, logout_pass, sidecars_pass,
          profile_pod_security_pass, images_pass, scc_pass, mesh_membership_pass, pod_security_pass,
          platform_namespaces_pass, ownership_pass)


def assemble(rendered, options, passes=PASSES):
    """Everything the role applies or writes, from {component: [rendered objects]}: the rendered
    objects, labelled with their component, through each of `passes` in turn (PASSES).

    Returns {objects, grants, audit, pod_security, pod_security_table, mirror, mirror_lines,
    unmatched_images}. `options` keys (all optional): namespace, pod_security (auto, a level or none),
    profile_pod_security (the level written into the profile controller's namespace labels, or none),
    api_versions, mirror {prefixes, digests}, sidecar {revision, authservice,
    exclude, namespaces}, virtualservice {gateway, hosts, export_to}, metadata_envoy {base_id, config},
    principals {env name: principal} (the profile controller's; its ISTIO_INGRESS_GATEWAY_PRINCIPAL
    replaces istio-system's gateway in upstream's AuthorizationPolicies), logout_url (the dashboard's
    LOGOUT_URL), mesh_membership (what the
    mesh_membership filter returns for the namespace: its labels and ServiceMeshMember),
    argo {s3, configmap}, scc {uid_range, openshift, selinux_level}, take_over [Kind/name patterns], render (bool: plain objects
    for GitOps), kserve_local_gateway_service (KServe's localGatewayService; default Kourier's
    cluster-local Service, "" keeps upstream's), kserve_ingress_domain (KServe's ingressDomain, with
    urlScheme https, where its configuration has a pathTemplate; "" keeps upstream's).
    """
    require(isinstance(rendered, dict), "rendered", "must map component names to object lists",
            "Pass the kustomize module's `components` result")
    # plain data first: copying Ansible's lazy containers object by object is very slow
    rendered, options = plain(rendered), plain(options)
    state = Assembly(label_components(rendered), options)
    for step in passes:
        step(state)
    state.result["objects"] = state.objs
    return state.result


def _label(obj, component):
    meta = obj.setdefault("metadata", {})
    meta["labels"] = dict(meta.get("labels") or {}, **{COMPONENT_LABEL: component})
    return obj


def _cluster_scoped(objs):
    """The (group, kind) pairs that the render's own CRDs make cluster-scoped."""
    return set((crd["spec"].get("group"), (crd["spec"].get("names") or {}).get("kind")) for crd in objs
               if crd.get("kind") == "CustomResourceDefinition" and (crd.get("spec") or {}).get("scope") == "Cluster")


def _plain(obj, cluster_scoped=()):
    """The object without kfocp's apply-time markers, for a GitOps repository; an object of a
    cluster-scoped kind (`cluster_scoped`: (group, kind) pairs) without the namespace kustomize gave
    it (kustomize gives one to every kind it does not know)."""
    obj = _copy(obj)
    if (str(obj.get("apiVersion", "")).rpartition("/")[0], obj.get("kind")) in cluster_scoped:
        obj["metadata"].pop("namespace", None)
    annotations = (obj.get("metadata") or {}).get("annotations")
    if annotations:
        for key in ("kfocp.io/ownership", "kfocp.io/set"):
            annotations.pop(key, None)
        if not annotations:
            obj["metadata"].pop("annotations")
    return obj


def unmatched_warning(result):
    """The warning for the images that no prefix of the mirror map matches, with where each is."""
    return ("components_image_prefixes matches none of these %d images, which are left as they are: %s. Where each "
            "is: %s" % (len(result["unmatched_images"]), ", ".join(result["unmatched_images"]),
                        "; ".join(result["mirror_warnings"])))
