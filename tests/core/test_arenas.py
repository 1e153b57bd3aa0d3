"""The arena cap of the thread-per-pod processes (#28): threads started after it share 2 malloc arenas."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest

# Each thread mallocs once (a bytearray above pymalloc's small-object size), then glibc's malloc_stats()
# prints one "Arena N:" block per arena to stderr.
PROGRAM = """
import ctypes, sys, threading
from ranktable.arenas import limit_arenas
print(limit_arenas() if sys.argv[1] == "cap" else False)
held, gate = [], threading.Barrier(9)
def grab():
    held.append(bytearray(4096))
    gate.wait()
threads = [threading.Thread(target=grab) for _ in range(8)]
for t in threads: t.start()
gate.wait()
ctypes.CDLL(None).malloc_stats()
for t in threads: t.join()
"""


def arenas(mode: str, env: dict[str, str] | None = None) -> tuple[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, mode],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in (env or os.environ).items() if k != "MALLOC_ARENA_MAX"} | (env or {}),
    )
    return done.stdout.strip(), done.stderr.count("Arena ")


@pytest.mark.skipif(not hasattr(ctypes.CDLL(None), "malloc_stats"), reason="glibc only (malloc_stats)")
def test_threads_started_after_the_cap_share_two_arenas_and_a_users_setting_wins() -> None:
    assert arenas("cap") == ("True", 2)
    said, uncapped = arenas("none")
    assert said == "False" and uncapped > 2  # what the cap saves: a new arena per thread
    assert arenas("cap", {**os.environ, "MALLOC_ARENA_MAX": "4"})[0] == "False"
