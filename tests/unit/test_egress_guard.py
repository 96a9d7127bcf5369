"""The guard against dials off the machine (hack/egress_guard.py) and the egress proxy's address
rules (hack/egress.py). The planted dial runs in a network namespace of its own, whose only route
to 10.0.0.0/8 is its loopback interface: its SYN never leaves that namespace."""
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import egress
from egress_guard import EgressGuard, decode_address, off_machine
from helpers import wait_for

HERE = Path(__file__).resolve().parents[1]
ROOT = HERE.parent
PLANT = ("import socket, time; s = socket.socket(); s.setblocking(False); "
         "s.connect_ex(('10.0.0.1', 443)); time.sleep(20)")


def test_the_guard_names_a_dial_off_the_machine_and_the_process(egress_guard):
    guard = EgressGuard(interval=0.1).start()
    child = subprocess.Popen(  # pylint: disable=consider-using-with
        ["unshare", "--net", "sh", "-c", "ip link set lo up && ip route add 10.0.0.0/8 dev lo && exec %s -c \"%s\""
         % (sys.executable, PLANT)])
    egress_guard.exempt(child.pid)  # the session's guard would report it too: it is planted
    try:
        found = wait_for(guard.report, timeout=10, what="the guard to see the planted dial")
    finally:
        child.kill()
        child.wait()
        guard.stop()
    assert len(found) == 1, found
    assert found[0].startswith("10.0.0.1:443 (tcp SYN_SENT) by pid %d: " % child.pid), found
    assert "connect_ex(('10.0.0.1', 443))" in found[0], found


# Two processes in one network namespace whose route to 10.0.0.0/8 is its loopback interface: one
# holds UDP sockets connected to 127.0.0.1 and ::1, the other one connected to 10.0.0.1:443 (a UDP
# connect() sends nothing). Each writes its role and pid, in one write(2) that the other's cannot
# split, once its sockets are connected.
LOOPBACK = ("import os, socket, time; a = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); a.connect(('127.0.0.1', 9)); "
            "b = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); b.connect(('::1', 9)); "
            "os.write(1, b'loopback %d\\n' % os.getpid()); time.sleep(30)")
REMOTE = ("import os, socket, time; c = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); c.connect(('10.0.0.1', 443)); "
          "os.write(1, b'remote %d\\n' % os.getpid()); time.sleep(30)")


def test_the_guard_ignores_loopback_and_other_processes(egress_guard):
    script = ("ip link set lo up && ip route add 10.0.0.0/8 dev lo || exit 1; "
              "%s -c \"$1\" & %s -c \"$2\" & wait" % (sys.executable, sys.executable))
    child = subprocess.Popen(["unshare", "--net", "sh", "-c", script, "sh", LOOPBACK, REMOTE],  # pylint: disable=consider-using-with
                             stdout=subprocess.PIPE, text=True, start_new_session=True)
    egress_guard.exempt(child.pid)  # the session's guard would report the remote one: it is planted
    try:
        pids = dict(child.stdout.readline().split() for _line in range(2))
        loopback, remote = int(pids["loopback"]), int(pids["remote"])
        # the process that holds only loopback sockets: nothing, though the other one, in the same
        # network namespace, holds a socket off the machine
        guard = EgressGuard(roots=[loopback])
        guard.poll()
        assert guard.report() == []
        # the same poll with the other process as a root names its socket
        guard = EgressGuard(roots=[remote])
        guard.poll()
        assert [line.split(": ", 1)[0] for line in guard.report()] == [
            "10.0.0.1:443 (udp connected) by pid %d" % remote]
    finally:
        os.killpg(child.pid, signal.SIGKILL)  # the shell and both processes: the group it leads
        child.wait()


PLANTED = """
import socket


def test_dials():
    socket.create_connection(("10.0.0.1", 443), timeout=5)


def test_sends_one_datagram_quietly():
    try:
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("10.0.0.1", 53))
    except OSError:
        pass
"""


def test_a_dial_off_the_machine_fails_the_run_and_names_the_target(egress_guard, tmp_path):
    """A planted test file run as make test runs the tests (hack/netns.py, with this directory's
    conftest.py): the dial fails at once, the datagram is not sent, and the run fails naming both
    targets and the tests that tried them, also the one that swallowed its error."""
    (tmp_path / "test_planted.py").write_text(PLANTED)
    child = subprocess.Popen(  # pylint: disable=consider-using-with
        [sys.executable, str(ROOT / "hack" / "netns.py"), "--", sys.executable, "-m", "pytest", "-p", "conftest",
         "-p", "no:cacheprovider", "-q", "test_planted.py"], cwd=tmp_path, env=dict(os.environ, PYTHONPATH=str(HERE)),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    egress_guard.exempt(child.pid)
    out = child.communicate(timeout=120)[0]
    assert child.returncode != 0, out
    assert "OSError: [Errno 101] Network is unreachable" in out, out
    assert "2 connection(s) off this machine:\n" in out, out
    assert "10.0.0.1:443 (tcp connect) in test_planted.py::test_dials\n" in out, out
    assert "10.0.0.1:53 (udp sendto) in test_planted.py::test_sends_one_datagram_quietly" in out, out


@pytest.mark.parametrize("text, address", [
    ("0100007F:1F90", ("127.0.0.1", 8080)),
    ("0100000A:01BB", ("10.0.0.1", 443)),
    ("00000000000000000000000001000000:0050", ("::1", 80)),
    ("0000000000000000FFFF00000100007F:0050", ("::ffff:7f00:1", 80)),
])
def test_socket_table_addresses_are_decoded(text, address):
    assert decode_address(text) == address


@pytest.mark.parametrize("host, port, off", [
    ("127.0.0.1", 443, False), ("127.5.0.1", 443, False), ("::1", 443, False), ("::ffff:127.0.0.1", 80, False),
    ("0.0.0.0", 0, False), ("10.0.0.1", 443, True), ("10.255.255.53", 53, True), ("::ffff:10.0.0.1", 443, True),
    ("fd00::1", 443, True),
])
def test_what_counts_as_off_the_machine(host, port, off):
    assert off_machine(host, port) is off


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("localhost", True), ("::1", True), ("10.0.0.1", False), ("worker-0", False),
    ("kubernetes.default.svc", False),
])
def test_the_proxy_dials_only_loopback_as_it_is(host, loopback):
    assert egress.is_loopback(host) is loopback


FORWARDED = r"""
import socket, sys
reply = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
reply.sendall(b"ping")
print(reply.recv(100).decode())
for port in (int(sys.argv[2]), 443):
    try:
        socket.create_connection(("127.0.0.1" if port != 443 else "10.0.0.1", port), timeout=5)
        print("reached %d" % port)
    except OSError as error:
        print("refused %d: %s" % (port, error))
sys.exit(7)
"""


def test_netns_forwards_the_ports_it_is_given_and_nothing_else(tmp_path):
    """make demo's road (hack/netns.py --forward): inside, the forwarded port of this namespace's
    loopback answers; another port that answers outside does not, nor any address off the machine;
    the command's exit code comes back."""
    import socket
    import threading
    servers = [socket.create_server(("127.0.0.1", 0)), socket.create_server(("127.0.0.1", 0))]

    def echo(server):
        while True:
            try:
                conn, _addr = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"pong:" + conn.recv(100))
    for server in servers:
        threading.Thread(target=echo, args=(server,), daemon=True).start()
    forwarded, other = (server.getsockname()[1] for server in servers)
    (tmp_path / "dial.py").write_text(FORWARDED)
    try:
        proc = subprocess.run([sys.executable, str(ROOT / "hack" / "netns.py"), "--forward", str(forwarded), "--",
                               sys.executable, str(tmp_path / "dial.py"), str(forwarded), str(other)],
                              capture_output=True, text=True, timeout=60, check=False)
    finally:
        for server in servers:
            server.close()
    assert proc.returncode == 7, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "pong:ping", proc.stdout
    assert lines[1].startswith("refused %d: [Errno 111]" % other), proc.stdout
    assert lines[2] == "refused 443: [Errno 101] Network is unreachable", proc.stdout
