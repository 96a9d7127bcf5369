"""Upstream Go modules in the module cache, as oracles: a test reads upstream's own files at the
module version the register cites. `make build` fills the cache; a module that is not there is
fetched with `go mod download MODULE@VERSION` (the tests never fetch)."""
import os
import re
from pathlib import Path

# The upstream modules the tests read, at the versions docs/contracts.md cites.
GPU_OPERATOR = ("github.com/NVIDIA/gpu-operator", "v0.0.0-20250917190837-d73a0086a6ba")  # tag v25.3.4
KNATIVE_OPERATOR = ("knative.dev/operator", "v0.42.2")  # Knative 1.15, Serverless 1.35
KNATIVE_SERVING = ("knative.dev/serving", "v0.42.2")  # Knative Serving 1.15


def cache_root():
    found = os.environ.get("GOMODCACHE")
    if not found:
        gopath = os.environ.get("GOPATH") or str(Path.home() / "go")
        found = os.path.join(gopath.split(os.pathsep)[0], "pkg", "mod")
    return Path(found)


def escape(path):
    """The module cache's spelling of a module path or version (an upper-case letter is !lower)."""
    return re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), path)


def module_dir(module, version):
    """The extracted module, or None when the cache does not hold it."""
    found = cache_root() / ("%s@%s" % (escape(module), escape(version)))
    return found if found.is_dir() else None


def require_module(pytest, module, version):
    """The module's directory; the test is skipped, naming the command that fetches it, when the
    cache does not hold it."""
    found = module_dir(module, version)
    if found is None:
        pytest.skip("the Go module cache holds no %s@%s (go mod download %s@%s)" % (module, version, module, version))
    return found


def json_fields(go_source, struct):
    """{Go field: JSON name} of `struct` in Go source (embedded fields by their type's name)."""
    match = re.search(r"^type %s struct \{\n(.*?)^\}" % re.escape(struct), go_source, re.M | re.S)
    if not match:
        return {}
    out = {}
    for line in match.group(1).splitlines():
        field = re.match(r'^\s*([\w.]+)(?:\s+[^`/]+?)?\s+`json:"([^,"]*)', line)
        if field:
            out[field.group(1).split(".")[-1]] = field.group(2)
    return out
