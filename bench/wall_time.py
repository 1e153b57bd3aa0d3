"""The wall time of one command, shared by the CLI benchmarks (imported from beside them, not run itself)."""

from __future__ import annotations

import subprocess
import time


def wall(argv: list[str], env: dict[str, str] | None = None) -> float:
    """Seconds `argv` took, its output dropped; a failed run ends the benchmark with its stderr's tail."""
    t0 = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    seconds = time.perf_counter() - t0
    if done.returncode:
        shown = " ".join(argv[:4]) + (" ..." if len(argv) > 4 else "")
        raise SystemExit(f"{shown} failed ({done.returncode}): {done.stderr.decode()[-400:]}")
    return seconds
