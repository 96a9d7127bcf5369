"""The processes a playbook run leaves: found from /proc, and ended together.

ansible-runner ends a cancelled run by killing the playbook's process group, but Ansible's workers
run in sessions of their own, so a worker in the middle of a task would go on alone. On shutdown
the operator ends every process it started instead."""
import os
import signal


def descendants(pid):
    """Every process started by `pid`, at any depth."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as handle:
                parents[int(entry)] = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found, frontier = [], {pid}
    while frontier:
        frontier = set(child for child, parent in parents.items() if parent in frontier)
        found += sorted(frontier)
    return found


def _signal(pid, sig):
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass


def kill_tree(pid, include_root=False):
    """SIGKILL every process started by `pid` (and `pid` itself with include_root). The tree is
    stopped first, so that no process escapes by being handed to init when its parent dies.
    Returns the pids."""
    pids = set()
    while True:
        found = set(descendants(pid)) | (set([pid]) if include_root else set())
        if found <= pids:
            break
        pids |= found
        for child in found:
            _signal(child, signal.SIGSTOP)
    for child in pids:
        _signal(child, signal.SIGKILL)
    return sorted(pids)
