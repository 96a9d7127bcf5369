"""Where the kfocp.kubeflow collection is, and making its module_utils importable.

The operator runs the collection's playbooks and imports its builders and apply engine, so it
needs the collection as `ansible_collections/kfocp/kubeflow` on a collections path: from
KFOCP_COLLECTIONS_PATH, ANSIBLE_COLLECTIONS_PATH, the usual Ansible locations, or, in a source
checkout, the link `.cache/collections/ansible_collections/kfocp/kubeflow` to the checkout.
"""
import os
import sys
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parents[2]
_RELATIVE = Path("ansible_collections") / "kfocp" / "kubeflow"


class CollectionNotFound(RuntimeError):
    pass


def _candidates():
    for variable in ("KFOCP_COLLECTIONS_PATH", "ANSIBLE_COLLECTIONS_PATH", "ANSIBLE_COLLECTIONS_PATHS"):
        for entry in (os.environ.get(variable) or "").split(os.pathsep):
            if entry:
                yield Path(entry).expanduser()
    if (_CHECKOUT / "galaxy.yml").exists():
        yield _CHECKOUT / ".cache" / "collections"
    yield Path("~/.ansible/collections").expanduser()
    yield Path("/usr/share/ansible/collections")


def collections_path():
    """The directory that holds ansible_collections/kfocp/kubeflow (made in a checkout if missing)."""
    for base in _candidates():
        if (base / _RELATIVE / "galaxy.yml").exists():
            return base
    if (_CHECKOUT / "galaxy.yml").exists():
        link = _CHECKOUT / ".cache" / "collections" / _RELATIVE
        link.parent.mkdir(parents=True, exist_ok=True)
        if not link.exists():
            link.symlink_to(Path("../../../.."))
        return _CHECKOUT / ".cache" / "collections"
    raise CollectionNotFound("the kfocp.kubeflow collection was not found: install it, or set "
                             "KFOCP_COLLECTIONS_PATH to the directory that holds ansible_collections/")


def root():
    """The collection's own directory (galaxy.yml, roles/, playbooks/)."""
    return collections_path() / _RELATIVE


def importable():
    """Put the collection on sys.path so that `ansible_collections.kfocp.kubeflow...` imports."""
    path = str(collections_path())
    if path not in sys.path:
        sys.path.insert(0, path)
    return path
