"""Build (or reuse) the operator-framework tools the operator tests run, from their Go modules.

    python operator/hack/build.py ansible-operator   # operator-sdk's ansible-operator
    python operator/hack/build.py validate-bundle    # the OLM bundle validator (operator-framework/api)

Each has its own go.mod beside this file. The binaries are cached by version under
~/.cache/kfocp/bin/, like the control plane's, so only the first run builds anything.
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "hack"))

from cluster import ClusterError, _digest, cache_root, go_build, module_version  # noqa: E402

ANSIBLE_OPERATOR_MODULE = "github.com/operator-framework/ansible-operator-plugins"
API_MODULE = "github.com/operator-framework/api"


def ansible_operator_version() -> str:
    return module_version(HERE / "ansible-operator" / "go.mod", ANSIBLE_OPERATOR_MODULE)


def api_version() -> str:
    return module_version(HERE / "validate-bundle" / "go.mod", API_MODULE)


def ansible_operator() -> Path:
    """The path of the ansible-operator binary, built on first use."""
    version = ansible_operator_version()
    stamp = f"{ANSIBLE_OPERATOR_MODULE}/internal/version"
    ldflags = f"-s -w -X {stamp}.Version={version} -X {stamp}.GitVersion={version}"
    dest = go_build(HERE / "ansible-operator", {"ansible-operator": f"{ANSIBLE_OPERATOR_MODULE}/cmd/ansible-operator"},
                    cache_root() / f"ansible-operator-{version}", ldflags)
    return dest / "ansible-operator"


def validate_bundle() -> Path:
    """The path of the bundle validator, built on first use (again when its source or go.mod changes)."""
    source = _digest("".join((HERE / "validate-bundle" / name).read_text() for name in ("main.go", "go.mod", "go.sum")))
    dest = go_build(HERE / "validate-bundle", {"validate-bundle": "."},
                    cache_root() / f"validate-bundle-{api_version()}-{source}")
    return dest / "validate-bundle"


TOOLS = {"ansible-operator": ansible_operator, "validate-bundle": validate_bundle}


def main(argv=None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or list(TOOLS)
    try:
        for name in names:
            if name not in TOOLS:
                print(f"error: unknown tool {name!r}; choose from {', '.join(TOOLS)}", file=sys.stderr)
                return 2
            print(f"{name}\t{TOOLS[name]()}")
    except ClusterError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
