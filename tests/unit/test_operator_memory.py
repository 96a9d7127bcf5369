"""The operator's malloc arenas, counted by glibc's own report (malloc_info) in a child process."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

OPERATOR = Path(__file__).resolve().parents[2] / "operator"

# Eight threads allocate at once, then glibc describes its heaps: one <heap nr=...> per arena.
CHILD = r"""
import ctypes, os, sys, tempfile, threading
sys.path.insert(0, %(operator)r)
from kfocp_operator import memory
limited = memory.limit_arenas() if sys.argv[1] == "limit" else False
start = threading.Barrier(8)
def work():
    start.wait()
    junk = [bytearray(4096) for _ in range(2000)]
    del junk
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
libc = ctypes.CDLL(None)
libc.fopen.restype = ctypes.c_void_p
path = tempfile.mktemp()
fp = libc.fopen(path.encode(), b"w")
libc.malloc_info(0, ctypes.c_void_p(fp))
libc.fclose(ctypes.c_void_p(fp))
print(limited, open(path).read().count("<heap nr="), memory.trim())
os.unlink(path)
"""

glibc = pytest.mark.skipif(not os.confstr("CS_GNU_LIBC_VERSION"), reason="glibc's arenas only")


def _heaps(mode, **env):
    environ = dict((k, v) for k, v in os.environ.items() if k not in ("MALLOC_ARENA_MAX", "GLIBC_TUNABLES"))
    environ.update(env)
    out = subprocess.run([sys.executable, "-c", CHILD % {"operator": str(OPERATOR)}, mode], env=environ,
                         capture_output=True, text=True, check=True, timeout=60).stdout.split()
    return out[0] == "True", int(out[1]), out[2] == "True"


@glibc
def test_threads_share_two_arenas_once_limited():
    limited, heaps, trimmed = _heaps("limit")
    assert limited and heaps <= 2
    assert trimmed  # the threads' freed pages went back to the system


@glibc
def test_without_the_limit_the_threads_take_arenas_of_their_own():
    """The control: the count above is the limit's doing, not the machine's."""
    limited, heaps, _trimmed = _heaps("none")
    assert not limited and heaps > 2


@glibc
def test_the_environment_sets_the_number_of_arenas_instead():
    limited, heaps, _trimmed = _heaps("limit", MALLOC_ARENA_MAX="4")
    assert not limited and 2 < heaps <= 4
    limited, heaps, _trimmed = _heaps("limit", GLIBC_TUNABLES="glibc.malloc.arena_max=3")
    assert not limited and 2 < heaps <= 3
