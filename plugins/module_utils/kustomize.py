# -*- coding: utf-8 -*-
# Copyright: kfocp contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fetch a kustomize manifests tree (git, directory or tarball), build components with
`kubectl kustomize`, and write rendered objects to a directory for GitOps.

This is the I/O side of the components role; the transforms are pure functions in
builders/manifests.py. Every failure is a SourceError whose message names the component, the
path and the fix.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import glob
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.kfocp.kubeflow.plugins.module_utils import objects as o
from ansible_collections.kfocp.kubeflow.plugins.module_utils.objects import phase

try:
    import yaml
    HAS_YAML = True
except ImportError:  # the modules report it with missing_required_lib
    HAS_YAML = False
if HAS_YAML:
    _Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    _Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
GENERATED = "# Written by kfocp.kubeflow.write_manifests; files listed here are replaced on each run.\n"


class SourceError(Exception):
    """The manifests source or a component's build failed; the message says which and why."""


# ---------------------------------------------------------------- kubectl

def find_kubectl(explicit=None):
    """kubectl to run `kubectl kustomize` with: the given path, kubectl on PATH, or the one the
    local control plane built (~/.cache/kfocp/bin/<version>/kubectl)."""
    if explicit:
        if not (os.path.isfile(explicit) and os.access(explicit, os.X_OK)):
            raise SourceError("kubectl %r is not an executable file. Give the path of kubectl (1.27 or newer, "
                              "kustomize v5 built in), or leave it empty to use the one on PATH" % explicit)
        return explicit
    found = shutil.which("kubectl")
    if found:
        return found
    base = os.environ.get("KFOCP_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "kfocp")
    cached = sorted(glob.glob(os.path.join(base, "bin", "v*", "kubectl")))
    if cached:
        return cached[-1]
    raise SourceError("no kubectl found: not on PATH and not in %s/bin/<version>/. Install kubectl (kustomize v5 "
                      "is built in) or set components_kubectl to its path" % base)


# ---------------------------------------------------------------- sources

def _run(cmd, cwd=None, timeout=600):
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False,
                              env=dict(os.environ, GIT_TERMINAL_PROMPT="0"))
    except subprocess.TimeoutExpired:
        raise SourceError("%s did not finish within %ds" % (" ".join(cmd[:3]), timeout))
    except OSError as err:
        raise SourceError("cannot run %s: %s" % (cmd[0], err))
    return proc


def fetch_git(url, ref, dest, timeout=600):
    """Clone `url` at `ref` (a branch, tag or commit) into `dest`; return the commit."""
    if not url:
        raise SourceError("components_git_url: is required with components_source: git. Give the repository URL, "
                          "for example https://github.com/kubeflow/manifests.git")
    if not shutil.which("git"):
        raise SourceError("git is not on PATH: install git, or use components_source: dir or tarball")
    # a value that git would read as an option (--upload-pack=<program>) or a transport that runs
    # a program (ext::) would run it on this host
    if url.startswith("-") or "::" in url.split("/")[0]:
        raise SourceError("components_git_url: %r is not a repository URL. Give an https://, ssh:// or file:// URL"
                          % (url,))
    if (ref or "").startswith("-"):
        raise SourceError("components_git_ref: %r is not a branch, tag or commit. Give a release tag such as v1.10.2"
                          % (ref,))
    ref = ref or "HEAD"
    if ref != "HEAD":
        shallow = _run(["git", "-c", "protocol.ext.allow=never", "clone", "--quiet", "--depth", "1", "--branch", ref,
                        "--", url, dest], timeout=timeout)
        if shallow.returncode == 0:
            return _head(dest)
        shutil.rmtree(dest, ignore_errors=True)
    full = _run(["git", "-c", "protocol.ext.allow=never", "clone", "--quiet", "--", url, dest], timeout=timeout)
    if full.returncode:
        raise SourceError("git clone of %s failed: %s. Check components_git_url and your access to it"
                          % (url, full.stderr.strip()[-1000:]))
    if ref != "HEAD":
        checkout = _run(["git", "checkout", "--quiet", "--detach", ref], cwd=dest)
        if checkout.returncode:
            raise SourceError("components_git_ref: %r is not a branch, tag or commit of %s (%s). Give an existing "
                              "release tag such as v1.10.2" % (ref, url, checkout.stderr.strip()[-500:]))
    return _head(dest)


def _head(dest):
    proc = _run(["git", "rev-parse", "HEAD"], cwd=dest)
    return proc.stdout.strip()


def extract_tarball(path, dest):
    """Unpack a tarball of the manifests tree into `dest`; return the tree's root (the only
    top-level directory when there is exactly one, as in GitHub's release archives)."""
    if not path or not os.path.isfile(path):
        raise SourceError("components_tarball: %r is not a file. Give the path of a .tar.gz of the manifests tree "
                          "on the host that runs the role" % (path,))
    try:
        with tarfile.open(path) as archive:
            root = os.path.realpath(dest)
            for member in archive.getmembers():
                target = os.path.realpath(os.path.join(dest, member.name))
                if not (target == root or target.startswith(root + os.sep)) or member.issym() and \
                        os.path.isabs(member.linkname) or member.isdev():
                    raise SourceError("components_tarball: %s holds %r, which points outside the tree. Use an "
                                      "archive of the manifests tree only" % (path, member.name))
            archive.extractall(dest)
    except (tarfile.TarError, EOFError, OSError) as err:
        raise SourceError("components_tarball: %s is not a readable tar archive (%s)" % (path, err))
    entries = [e for e in os.listdir(dest) if not e.startswith(".")]
    if len(entries) == 1 and os.path.isdir(os.path.join(dest, entries[0])):
        return os.path.join(dest, entries[0])
    return dest


def fetch(params, workdir):
    """The manifests tree's root directory and a description of the source."""
    kind = params.get("source") or "dir"
    if kind == "git":
        dest = os.path.join(workdir, "manifests")
        commit = fetch_git(params.get("git_url"), params.get("git_ref"), dest, params.get("timeout") or 600)
        root, info = dest, {"type": "git", "url": params.get("git_url"), "ref": params.get("git_ref"), "commit": commit}
    elif kind == "tarball":
        dest = os.path.join(workdir, "manifests")
        os.makedirs(dest)
        root = extract_tarball(params.get("tarball"), dest)
        info = {"type": "tarball", "path": params.get("tarball")}
    elif kind == "dir":
        root = params.get("dir")
        if not root or not os.path.isdir(root):
            raise SourceError("components_dir: %r is not a directory. Give the path of a kubeflow/manifests "
                              "checkout on the host that runs the role" % (root,))
        info = {"type": "dir", "path": root}
    else:
        raise SourceError("components_source: %r is not git, dir or tarball" % (kind,))
    if params.get("subdir"):
        root = os.path.join(root, params["subdir"])
        if not os.path.isdir(root):
            raise SourceError("components_subdir: %r is not a directory of the manifests source" % params["subdir"])
    return root, info


# ---------------------------------------------------------------- building

def _malformed_file(root, base, message):
    """The path (relative to the tree) of the file kustomize found malformed, with YAML's own
    account of the problem; kustomize names the file by its base name only."""
    match = re.search(r"in File: ([^\s\"']+)", message)
    name = os.path.basename(match.group(1)) if match else None
    for directory in ([base] if base else []) + [root]:
        for dirpath, dirnames, filenames in os.walk(directory):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for filename in filenames:
                if not filename.endswith((".yaml", ".yml")) or (name and filename != name):
                    continue
                path = os.path.join(dirpath, filename)
                try:
                    with open(path) as handle:
                        list(yaml.load_all(handle, Loader=_Loader))
                except yaml.YAMLError as err:
                    return "%s (%s)" % (os.path.relpath(path, root), " ".join(str(err).split()))
                except (OSError, UnicodeDecodeError):
                    continue
    return None


def build_path(kubectl, root, component, path, timeout=300):
    """The objects `kubectl kustomize <root>/<path>` renders."""
    where = os.path.join(root, path)
    if not os.path.isdir(where):
        raise SourceError("component %s: path %s does not exist in the manifests source. Check components_catalog.%s "
                          "against the release's layout (applications/<x>/upstream/...)" % (component, path, component))
    if not any(os.path.isfile(os.path.join(where, name)) for name in KUSTOMIZATION_FILES):
        raise SourceError("component %s: %s has no kustomization (kustomization.yaml, kustomization.yml or "
                          "Kustomization). Point components_catalog.%s at a kustomize directory"
                          % (component, path, component))
    try:
        proc = subprocess.run([kubectl, "kustomize", where], capture_output=True, text=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        raise SourceError("component %s: kubectl kustomize %s did not finish within %ds" % (component, path, timeout))
    if proc.returncode:
        message = proc.stderr.strip()
        bad = _malformed_file(root, where, message) if "MalformedYAML" in message or "yaml:" in message else None
        tail = ("; malformed YAML in %s" % bad) if bad else ""
        raise SourceError("component %s: kustomize build of %s failed: %s%s" % (component, path, message[-2000:], tail))
    try:
        docs = list(yaml.load_all(proc.stdout, Loader=_Loader))
    except yaml.YAMLError as err:
        raise SourceError("component %s: kustomize printed YAML that does not parse: %s" % (component, err))
    return [doc for doc in docs if isinstance(doc, dict) and doc]


# ---------------------------------------------------------------- remote bases (air gap)

_REMOTE = re.compile(r"^(git::|https?://|ssh://|git@|github\.com/|gitlab\.com/|bitbucket\.org/)")


def _remote_key(url):
    """A remote base's URL without scheme, ref and `//` marker: github.com/org/repo/path."""
    text = re.sub(r"^(git::)?(https?|ssh)://", "", url.strip())
    text = re.sub(r"^git@([^:]+):", r"\1/", text)
    text = text.split("?", 1)[0].replace(".git/", "/").replace("//", "/").rstrip("/")
    return text[:-4] if text.endswith(".git") else text


def _kustomization(directory):
    for name in KUSTOMIZATION_FILES:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return path
    return None


def remote_bases(root, path):
    """Every remote base that building `path` would fetch: [(kustomization file relative to the
    tree, entry)], following the local bases it names."""
    found, seen, todo = [], set(), [os.path.realpath(os.path.join(root, path))]
    while todo:
        directory = todo.pop()
        if directory in seen:
            continue
        seen.add(directory)
        kustomization = _kustomization(directory)
        if not kustomization:
            continue
        try:
            with open(kustomization) as handle:
                doc = yaml.load(handle, Loader=_Loader) or {}
        except (OSError, yaml.YAMLError):
            continue  # kustomize reports it with its own message
        for key in ("resources", "bases", "components"):
            for entry in doc.get(key) or [] if isinstance(doc, dict) else []:
                if not isinstance(entry, str):
                    continue
                if _REMOTE.match(entry):
                    found.append((os.path.relpath(kustomization, root), entry))
                elif os.path.isdir(os.path.join(directory, entry)):
                    todo.append(os.path.realpath(os.path.join(directory, entry)))
    return found


def _mirror_of(entry, mirrors):
    """The local directory of a remote base under `mirrors` ({URL prefix: directory}), or None."""
    key = _remote_key(entry)
    best = None
    for prefix, directory in (mirrors or {}).items():
        norm = _remote_key(prefix)
        if key == norm or key.startswith(norm + "/"):
            if best is None or len(norm) > len(best[0]):
                best = (norm, directory)
    if best is None:
        return None
    return os.path.join(best[1], key[len(best[0]):].lstrip("/")) if key != best[0] else best[1]


def localise(root, components, mirrors, workdir, fetch=False):
    """The tree to build: `root` itself when no component names a remote base; else a copy in
    which each remote base is replaced by its local mirror (`mirrors`: {URL prefix: directory}).
    A remote base without a mirror fails here, before anything is built or changed, naming each;
    with `fetch` (a git source, fetched from the network itself) it is left for kustomize to fetch."""
    remote = {}
    for component in sorted(components or {}):
        for path in components[component]:
            for kustomization, entry in remote_bases(root, path):
                remote.setdefault((kustomization, entry), set()).add(component)
    if not remote:
        return root
    missing = []
    if fetch:  # kustomize fetches the ones without a mirror
        remote = dict((key, names) for key, names in remote.items() if _mirror_of(key[1], mirrors) is not None)
        if not remote:
            return root
    for (kustomization, entry), names in sorted(remote.items()):
        target = _mirror_of(entry, mirrors)
        if target is None:
            missing.append("%s (in %s, component %s)" % (entry, kustomization, ", ".join(sorted(names))))
        elif not os.path.isdir(target):
            missing.append("%s: its mirror %s is not a directory (in %s)" % (entry, target, kustomization))
    if missing:
        raise SourceError("the manifests name %d remote base(s), which kustomize would fetch from the network: %s. "
                          "For an air-gapped site, clone each repository at the release's ref and map its URL to "
                          "the clone in components_remote_bases ({https://github.com/<org>/<repo>: /path/to/clone}), "
                          "or drop the component" % (len(missing), "; ".join(missing)))
    copy = os.path.join(workdir, "localised")
    shutil.copytree(root, copy, symlinks=True)
    for kustomization in sorted(set(pair[0] for pair in remote)):
        path = os.path.join(copy, kustomization)
        with open(path) as handle:
            doc = yaml.load(handle, Loader=_Loader) or {}
        for key in ("resources", "bases", "components"):
            if isinstance(doc.get(key), list):
                # kustomize takes a base by a relative path only
                doc[key] = [os.path.relpath(os.path.realpath(_mirror_of(e, mirrors)), os.path.dirname(path))
                            if isinstance(e, str) and _REMOTE.match(e) and _mirror_of(e, mirrors) is not None
                            else e for e in doc[key]]
        with open(path, "w") as handle:
            handle.write(yaml.dump(doc, Dumper=_Dumper, default_flow_style=False, sort_keys=False))
    return copy


def _concurrently(func, items, workers=4):
    """[func(item) for item in items], a few at a time (each is a kustomize process); the first
    failure in the items' order is raised."""
    if len(items) <= 1:
        return [func(item) for item in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return list(pool.map(func, items))


def build(params):
    """{component: [objects]} for every component in params['components'] ({name: [paths]}),
    and the source's description."""
    kubectl = find_kubectl(params.get("kubectl"))
    workdir = tempfile.mkdtemp(prefix="kfocp-manifests-")
    try:
        root, info = fetch(params, workdir)
        # a git source comes from the network: kustomize fetches the remote bases no mirror maps
        online = params.get("source") == "git"
        root = localise(root, params.get("components") or {}, params.get("remote_bases") or {}, workdir, online)
        components = params.get("components") or {}
        jobs = []  # each path once, named by the first component that has it
        for component in sorted(components):
            jobs += [(component, path) for path in components[component] if path not in [j[1] for j in jobs]]
        try:
            built = dict(zip([job[1] for job in jobs], _concurrently(
                lambda job: build_path(kubectl, root, job[0], job[1], params.get("timeout") or 300), jobs)))
        except SourceError as err:
            fetched = sorted(set(entry for _c, path in jobs for _k, entry in remote_bases(root, path)))
            if not fetched:
                raise
            raise SourceError("%s. The manifests name remote bases that kustomize fetches from the network (%s): "
                              "without access to them, map each to a local copy in components_remote_bases"
                              % (err, ", ".join(fetched)))
        rendered, used = {}, set()
        for component in sorted(components):
            objs = []
            for path in components[component]:
                # a path two components share is built once; each gets objects of its own to adapt
                objs.extend(copy.deepcopy(built[path]) if path in used else built[path])
                used.add(path)
            rendered[component] = objs
        info["kubectl"] = kubectl
        return rendered, info
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


# ---------------------------------------------------------------- writing for GitOps

_SAFE = re.compile(r"[^a-z0-9.-]+")


def file_name(obj):
    meta = obj.get("metadata") or {}
    group = (obj.get("apiVersion") or "").split("/")[0] if "/" in (obj.get("apiVersion") or "") else "core"
    parts = [obj.get("kind", ""), group, meta.get("namespace") or "cluster", meta.get("name", "")]
    return "_".join(_SAFE.sub("-", p.lower()).strip("-") for p in parts) + ".yaml"


def dump(obj):
    return yaml.dump(obj, Dumper=_Dumper, default_flow_style=False, sort_keys=True)


# Argo CD's sync wave annotation (argo-cd gitops-engine pkg/sync/common/types.go AnnotationSyncWave):
# each object is synced in the wave of its apply phase, so that CRDs are Established and namespaces
# exist before what needs them, and admission webhooks come last.
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
_WAVES = {o.PHASE_CRD: "-2", o.PHASE_NAMESPACE: "-1", o.PHASE_MAIN: "0", o.PHASE_LAST: "1", o.PHASE_BINDING: "2"}
# kfocp's own markers, read by its apply engine and never sent: a GitOps engine would send them
_MARKERS = (o.OWNERSHIP, o.SET_OVERRIDE, o.FORCE, o.ADOPT)


def for_gitops(obj, instance=None, set_name=None):
    """The object as a GitOps engine is to apply it: kfocp's markers removed, its sync wave, and,
    when `instance` is given, the ownership labels kfocp's apply would give it (so that status,
    verify and uninstall know it, and no other instance prunes it)."""
    if o.mode_of(obj) == o.SHARED:
        raise SourceError("%s is another writer's object that kfocp only patches; it cannot be written for GitOps"
                          % o.describe(o.ref(obj)))
    obj = dict(obj)
    meta = obj["metadata"] = dict(obj.get("metadata") or {})
    annotations = dict((k, v) for k, v in (meta.get("annotations") or {}).items() if k not in _MARKERS)
    annotations[SYNC_WAVE] = _WAVES[phase(obj.get("kind") or "")]
    meta["annotations"] = annotations
    if instance:
        meta["labels"] = o.owner_labels(dict(meta.get("labels") or {}), instance, set_name)
    return obj


def write(dest, objs, check_mode=False, instance=None, set_name=None):
    """Write one file per object (as `for_gitops` makes it) and a kustomization.yaml listing them,
    in apply order; remove files an earlier run wrote and this one does not. Returns (changed
    files, removed files)."""
    wanted = {}
    order = []
    objs = [for_gitops(obj, instance, set_name) for obj in objs]
    for obj in sorted(objs, key=lambda item: phase(item.get("kind") or "")):
        name = file_name(obj)
        if name in wanted:
            raise SourceError("two objects would be written to %s: %s %s" % (name, obj.get("kind"),
                                                                             (obj.get("metadata") or {}).get("name")))
        wanted[name] = dump(obj)
        order.append(name)
    kustomization = GENERATED + dump({"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization",
                                      "resources": order})
    previous = []
    index = os.path.join(dest, "kustomization.yaml")
    if os.path.isfile(index):
        with open(index) as handle:
            text = handle.read()
        if not text.startswith(GENERATED):
            raise SourceError("components_render_dir: %s holds a kustomization.yaml that kfocp did not write. Give "
                              "an empty directory, or one kfocp rendered into before" % dest)
        previous = (yaml.safe_load(text) or {}).get("resources") or []
    elif os.path.isdir(dest) and [e for e in os.listdir(dest) if not e.startswith(".")]:
        raise SourceError("components_render_dir: %s is not empty and was not written by kfocp. Give an empty "
                          "directory, or one kfocp rendered into before" % dest)
    changed, removed = [], []
    for name, text in list(wanted.items()) + [("kustomization.yaml", kustomization)]:
        path = os.path.join(dest, name)
        current = None
        if os.path.isfile(path):
            with open(path) as handle:
                current = handle.read()
        if current != text:
            changed.append(name)
            if not check_mode:
                os.makedirs(dest, exist_ok=True)
                with open(path + ".tmp", "w") as handle:
                    handle.write(text)
                os.replace(path + ".tmp", path)
    for name in previous:
        if name not in wanted and os.path.basename(name) == name and os.path.isfile(os.path.join(dest, name)):
            removed.append(name)
            if not check_mode:
                os.remove(os.path.join(dest, name))
    return changed, removed
