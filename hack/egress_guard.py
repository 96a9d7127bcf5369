"""A guard against dials off this machine: while it runs, it records every socket that a process
of ours (the given root processes, the local control plane's components, and all their
descendants) has connected to an address that is not loopback, and names the target and the
process.

It polls the socket tables (/proc/<pid>/net/{tcp,tcp6,udp,udp6}, once per network namespace
that our processes are in) every `interval` seconds and maps the sockets to processes through
/proc/<pid>/fd. A connection that opens and closes between two polls is not seen; one that
waits for an answer that never comes (a SYN to an address off the machine) is. A poll is not
free: reading a TCP table walks the kernel's whole connection hash (about 5 ms a table here), so
the default interval is half a second.

    guard = EgressGuard(roots=[os.getpid()], plane_dirs=[".cluster"]).start()
    ...
    found = guard.stop()      # ["10.0.0.1:443 (tcp SYN_SENT) by pid 42: python -c ...", ...]
"""
from __future__ import annotations

import ipaddress
import json
import os
import socket
import sys
import threading
from pathlib import Path

TCP_STATES = {"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1", "05": "FIN_WAIT2",
              "06": "TIME_WAIT", "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0A": "LISTEN",
              "0B": "CLOSING"}
TABLES = ("tcp", "tcp6", "udp", "udp6")


def decode_address(text: str) -> tuple[str, int]:
    """An address of /proc/net/tcp{,6} ("0100007F:1F90") as ("127.0.0.1", 8080)."""
    hexaddr, hexport = text.split(":")
    raw = bytes.fromhex(hexaddr)
    # the kernel prints each 32-bit word in host (little-endian) order
    raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    return str(ipaddress.ip_address(raw)), int(hexport, 16)


def off_machine(host: str, port: int) -> bool:
    """Whether a remote address is a peer off this machine (not unset, not loopback)."""
    address = ipaddress.ip_address(host)
    if getattr(address, "ipv4_mapped", None):
        address = address.ipv4_mapped
    return port != 0 and not address.is_unspecified and not address.is_loopback


def remote_sockets(pid: int) -> dict[str, str]:
    """{socket inode: "host:port (proto STATE)"} of the sockets in `pid`'s network namespace whose
    peer is off the machine."""
    out = {}
    for table in TABLES:
        try:
            lines = Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10 or (table in ("tcp", "udp") and fields[2][6:8] in ("7F", "00")):
                continue  # the cheap test first: 127.0.0.0/8, or unset (IPv4 in host byte order)
            host, port = decode_address(fields[2])
            if not off_machine(host, port) or fields[9] == "0":
                continue
            state = TCP_STATES.get(fields[3], fields[3]) if table.startswith("tcp") else "connected"
            shown = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
            out[fields[9]] = f"{shown} ({table.rstrip('6')} {state})"
    return out


def parents() -> dict[int, int]:
    """{pid: parent pid} of every process."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            out[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    return out


def command(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return " ".join(part.decode(errors="replace") for part in raw.split(b"\0") if part)[:300]


class DialRecorder:
    """The dials off the machine that this Python process tries, named as it tries them: Python's
    audit events socket.connect, socket.sendto and socket.sendmsg (one hook per process: audit
    hooks cannot be removed). Under hack/netns.py such a dial fails at once with "Network is
    unreachable", which does not name its target; this does. Names other than IP addresses are
    left to the dial itself, which fails resolving them."""

    _installed = None

    def __init__(self):
        self.found: list[str] = []

    @classmethod
    def install(cls) -> "DialRecorder":
        if cls._installed is None:
            cls._installed = cls()
            sys.addaudithook(cls._installed.hook)
        return cls._installed

    def hook(self, event: str, args: tuple) -> None:
        if event in ("socket.connect", "socket.sendto", "socket.sendmsg"):
            address = args[1]
            if isinstance(address, tuple) and len(address) >= 2 and isinstance(address[1], int):
                try:
                    off = off_machine(str(address[0]), address[1])
                except ValueError:
                    return
                if off:
                    kind = {socket.SOCK_STREAM: "tcp", socket.SOCK_DGRAM: "udp"}.get(args[0].type, str(args[0].type))
                    shown = f"[{address[0]}]:{address[1]}" if ":" in str(address[0]) else f"{address[0]}:{address[1]}"
                    test = os.environ.get("PYTEST_CURRENT_TEST")
                    by = f"in {test.rsplit(' ', 1)[0]}" if test else f"by pid {os.getpid()}: {command(os.getpid())}"
                    line = f"{shown} ({kind} {event.split('.', 1)[1]}) {by}"
                    if line not in self.found:
                        self.found.append(line)


class EgressGuard:
    """Records the dials off the machine of `roots`, of the processes in the state files of the
    control planes in `plane_dirs` (hack/cluster.py), and of all their descendants."""

    def __init__(self, roots=(), plane_dirs=(), interval: float = 0.5):
        self.roots = set(roots) or {os.getpid()}
        self.plane_dirs = [Path(d) for d in plane_dirs]
        self.interval = interval
        self.found: dict[tuple[str, int], str] = {}
        self.exempt_pids: set[int] = set()
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, name="egress-guard", daemon=True)

    def start(self) -> "EgressGuard":
        self.thread.start()
        return self

    def stop(self) -> list[str]:
        """Stop polling (after one last poll); the dials seen, one line each."""
        self.stopping.set()
        self.thread.join(timeout=10)
        self.poll()
        return self.report()

    def report(self) -> list[str]:
        with self.lock:
            return sorted(self.found.values())

    def exempt(self, pid: int) -> None:
        """Ignore `pid` and its descendants from now on, and forget what they were seen doing (a
        test of the guard itself plants a dial)."""
        with self.lock:
            self.exempt_pids.add(pid)
            self.found = {key: line for key, line in self.found.items() if key[1] != pid}

    def ours(self) -> set[int]:
        tree = parents()
        roots = set(self.roots)
        for directory in self.plane_dirs:
            try:
                roots |= set(json.loads((directory / "state.json").read_text()).get("pids", {}).values())
            except (OSError, ValueError):
                continue
        children: dict[int, list[int]] = {}
        for pid, parent in tree.items():
            children.setdefault(parent, []).append(pid)
        out, todo = set(), [pid for pid in roots if pid in tree]
        while todo:
            pid = todo.pop()
            if pid in out or pid in self.exempt_pids:
                continue
            out.add(pid)
            todo += children.get(pid, [])
        return out

    def poll(self) -> None:
        pids = self.ours()
        candidates: dict[str, str] = {}
        seen_ns = set()
        for pid in pids:
            try:
                netns = os.readlink(f"/proc/{pid}/ns/net")
            except OSError:
                continue
            if netns not in seen_ns:
                seen_ns.add(netns)
                candidates.update(remote_sockets(pid))
        if not candidates:
            return
        for pid in pids:
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                continue
            for fd in fds:
                try:
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                except OSError:
                    continue
                inode = link[8:-1] if link.startswith("socket:[") else None
                if inode in candidates:
                    line = f"{candidates[inode]} by pid {pid}: {command(pid)}"
                    with self.lock:
                        if pid not in self.exempt_pids:
                            self.found.setdefault((candidates[inode].split(" ")[0], pid), line)

    def _run(self) -> None:
        while not self.stopping.is_set():
            try:
                self.poll()
            except Exception as err:  # pylint: disable=broad-exception-caught  # keep watching; say why
                with self.lock:
                    self.found.setdefault(("guard", 0), f"the egress guard could not poll: {err!r}")
            self.stopping.wait(self.interval)
