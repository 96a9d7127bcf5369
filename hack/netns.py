"""Run a command with no route off this machine: in a network namespace of its own whose only
interface is loopback, brought up. A dial to any other address fails at once ("Network is
unreachable"), and nothing the command or its children send can leave.

    python hack/netns.py -- pytest tests/unit

As root it makes the network namespace alone (unshare(2) CLONE_NEWNET, what `unshare --net`
does); as another user it makes a user namespace with it, in which the user keeps its own uid and
gid (mapped to themselves) and gets no capability once the command runs. Loopback is brought up
with the SIOCSIFFLAGS ioctl (what `ip link set lo up` does). The command's exit code is returned.

    python hack/netns.py --forward 6443 -- python hack/demo.py

`--forward PORT` (repeatable) lets the command reach one TCP port of this machine's loopback, such
as a control plane's API server that runs outside: inside, 127.0.0.1:PORT is served by a relay to
a Unix socket, which a relay outside (in this machine's network namespace) connects to
127.0.0.1:PORT. The command then runs as a child, and nothing else it dials leaves the namespace.
"""
import ctypes
import fcntl
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def _unshare(flags):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(flags) != 0:
        error = ctypes.get_errno()
        raise OSError(error, "unshare(%s): %s" % ("CLONE_NEWNET" if flags == CLONE_NEWNET else
                                                  "CLONE_NEWUSER|CLONE_NEWNET", os.strerror(error)))


def _map_self(uid, gid):
    with open("/proc/self/setgroups", "w", encoding="ascii") as out:
        out.write("deny")
    with open("/proc/self/uid_map", "w", encoding="ascii") as out:
        out.write("%d %d 1" % (uid, uid))
    with open("/proc/self/gid_map", "w", encoding="ascii") as out:
        out.write("%d %d 1" % (gid, gid))


def loopback_up():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH", fcntl.ioctl(sock, SIOCGIFFLAGS, request)[:18])[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | IFF_UP, b""))


def enter():
    """Move this process into a new network namespace with only loopback, up."""
    uid, gid = os.getuid(), os.getgid()
    if uid == 0:
        _unshare(CLONE_NEWNET)
    else:
        _unshare(CLONE_NEWUSER | CLONE_NEWNET)
        _map_self(uid, gid)
    loopback_up()


def _pipe(source, sink):
    """Copy bytes from `source` to `sink` until either side closes."""
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def _relay(listener, connect):
    """Accept on `listener` forever; join each connection to a new one from `connect()`."""
    def serve():
        while True:
            try:
                client, _addr = listener.accept()
            except OSError:
                return
            try:
                upstream = connect()
            except OSError:
                client.close()
                continue
            for pair in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=pair, daemon=True).start()
    threading.Thread(target=serve, daemon=True).start()


def _unix_listener(path):
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    return listener


def _tcp(port):
    return socket.create_connection(("127.0.0.1", port))


def _unix(path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(path)
    return sock


def run_forwarding(command, ports):
    """Run `command` in a new namespace from which only `ports` of this machine's loopback are
    reached, through Unix sockets; return its exit code."""
    folder = tempfile.mkdtemp(prefix="kfocp-netns-")
    try:
        paths = dict((port, os.path.join(folder, "%d.sock" % port)) for port in ports)
        listeners = dict((port, _unix_listener(path)) for port, path in paths.items())
        child = os.fork()
        if child == 0:
            code = 1
            try:
                for listener in listeners.values():
                    listener.close()
                enter()
                for port, path in paths.items():
                    inside = socket.create_server(("127.0.0.1", port), backlog=64)
                    _relay(inside, lambda path=path: _unix(path))
                code = subprocess.call(command)
            except OSError as error:
                print("netns.py: %s" % error, file=sys.stderr, flush=True)
            finally:
                os._exit(code)
        for port, listener in listeners.items():
            _relay(listener, lambda port=port: _tcp(port))
        while True:
            try:
                _pid, status = os.waitpid(child, 0)
                break
            except KeyboardInterrupt:
                continue
        return os.waitstatus_to_exitcode(status)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main(argv):
    command, ports = argv[1:], []
    while command[:1] == ["--forward"] and len(command) > 1:
        ports.append(int(command[1]))
        command = command[2:]
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        sys.exit("usage: netns.py [--forward PORT]... -- COMMAND [ARG...]")
    try:
        if ports:
            sys.exit(run_forwarding(command, ports))
        enter()
    except OSError as error:
        sys.exit("cannot make a network namespace with only loopback: %s. Run as root, allow user namespaces "
                 "(sysctl kernel.unprivileged_userns_clone=1), or run with NETNS=0" % error)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv)
