"""Run a command with no route off this machine: in a network namespace of its own whose only
interface is loopback, brought up. A dial to any other address fails at once ("Network is
unreachable"), and nothing the command or its children send can leave.

    python hack/netns.py -- pytest tests/unit

As root it makes the network namespace alone (unshare(2) CLONE_NEWNET, what `unshare --net`
does); as another user it makes a user namespace with it, in which the user keeps its own uid and
gid (mapped to themselves) and gets no capability once the command runs. Loopback is brought up
with the SIOCSIFFLAGS ioctl (what `ip link set lo up` does). The command's exit code is returned.
"""
import ctypes
import fcntl
import os
import socket
import struct
import sys

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


def main(argv):
    command = argv[1:]
    if command[:1] == ["--"]:
        command = command[1:]
    if not command:
        sys.exit("usage: netns.py -- COMMAND [ARG...]")
    try:
        enter()
    except OSError as error:
        sys.exit("cannot make a network namespace with only loopback: %s. Run as root, allow user namespaces "
                 "(sysctl kernel.unprivileged_userns_clone=1), or run with NETNS=0" % error)
    os.execvp(command[0], command)


if __name__ == "__main__":
    main(sys.argv)
