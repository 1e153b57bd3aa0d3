"""Fewer malloc arenas for the processes that run a thread per pod: the Jupyter server (a log reader per
pod of a followed job) and the simulated pool (a thread per log connection).

glibc gives every new thread its own arena until there are 8 per core; memory freed in one arena is not
reused by the others, so at 1,024 pods x 100 lines/s the server held 1.2 GB where 2 arenas hold 0.8 GB
(`bench/bench_logview.py`, #28). This is `MALLOC_ARENA_MAX=2`, set from inside the process (a server
extension cannot set its server's environment); threads started afterwards share the 2 arenas. A
`MALLOC_ARENA_MAX` the user set wins; elsewhere than glibc nothing changes.
"""

from __future__ import annotations

import ctypes
import os

M_ARENA_MAX = -8  # glibc's mallopt parameter (malloc.h)
ARENAS = 2


def limit_arenas(count: int = ARENAS) -> bool:
    """Cap this process's malloc arenas at `count`; whether the cap was set."""
    if os.environ.get("MALLOC_ARENA_MAX"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS)
        return False
    return bool(mallopt(M_ARENA_MAX, count))
