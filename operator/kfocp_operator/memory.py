"""The C allocator's share of the operator's resident memory.

Under glibc, each thread that allocates gets a malloc arena of its own, up to eight per CPU, and
memory freed in an arena stays in it. The operator runs a thread per watch plus the engine's
workers, and every LIST and watch event is parsed into short-lived objects, so most of the
arenas' pages hold nothing live after a burst. Two arenas, and giving freed pages back after each
batch of work, keep the process near what it holds.

glibc's contract (bminor/glibc malloc/malloc.h): mallopt(M_ARENA_MAX = -8, n), and malloc_trim(pad)
returns free memory to the system. Other C libraries (musl has no arenas) are left as they are.
"""
import ctypes
import os

M_ARENA_MAX = -8
ARENAS = 2


def _glibc():
    """The C library, when it is glibc (which has mallopt and malloc_trim); else None."""
    try:
        return ctypes.CDLL(None) if os.confstr("CS_GNU_LIBC_VERSION") else None
    except (ValueError, OSError):
        return None


_LIBC = _glibc()


def limit_arenas(count=ARENAS):
    """At most `count` malloc arenas, unless the environment sets their number (glibc's
    MALLOC_ARENA_MAX, or glibc.malloc.arena_max in GLIBC_TUNABLES). Call it before the threads
    start. Returns whether the limit was set here."""
    env = os.environ
    if _LIBC is None or "MALLOC_ARENA_MAX" in env or "glibc.malloc.arena_max" in env.get("GLIBC_TUNABLES", ""):
        return False
    return bool(_LIBC.mallopt(M_ARENA_MAX, count))


def trim():
    """Give the allocator's free pages back to the system; True when some were."""
    return bool(_LIBC.malloc_trim(0)) if _LIBC is not None else False
