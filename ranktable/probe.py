"""Stage counters for the benchmarks: what each stage of a path moved, sampled to a file with CPU times.

Off unless the environment variable ``RANKTABLE_PROBE`` names a folder (bench_logview sets it for the pool
and the Jupyter server it starts). Then `count(name, n)` adds to a process-wide total and a thread appends,
every `SAMPLE_SECONDS`, one JSON line to ``FOLDER/<pid>.jsonl``: the wall time, the totals, the process'
CPU seconds and each thread group's (``/proc/self/task``, threads named alike summed: 1,024 ``log-POD``
threads are one group), so a benchmark can give each stage's rate and CPU over its own window. Off, a
`count` is one global check; on, a lock and a dict update per call (callers count per batch, not per line).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

ENV = "RANKTABLE_PROBE"
TRACE_ENV = "RANKTABLE_PROBE_TRACEMALLOC"
"""Set (with RANKTABLE_PROBE) to trace allocations: every `TRACE_EVERY` samples, and at exit, the largest
allocation sites (file:line, by size) go to ``FOLDER/<pid>.tracemalloc.txt`` (issue 28, item 5: where the
server's and the pool's memory goes). Tracing slows the process: figures of such a run are no timings."""
TRACE_EVERY = 15
TRACE_TOP = 30
SAMPLE_SECONDS = 2.0  # reading 1,000+ threads' /proc files costs ~1% of a core each second

_dir: Path | None = Path(os.environ[ENV]) if os.environ.get(ENV) else None
_lock = threading.Lock()
_counts: dict[str, float] = {}
_gauges: dict[str, Callable[[], float]] = {}
_thread: threading.Thread | None = None
_DIGITS = re.compile(r"\d+")
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def enabled() -> bool:
    return _dir is not None


def count(name: str, n: float = 1) -> None:
    """Add `n` to the counter `name` (a no-op unless probing)."""
    if _dir is None:
        return
    with _lock:
        _counts[name] = _counts.get(name, 0) + n
    if _thread is None:
        _start()


def gauge(name: str, read: Callable[[], float]) -> None:
    """Sample `read()` with every line (e.g. a backlog); replaces an earlier gauge of that name."""
    if _dir is None:
        return
    with _lock:
        _gauges[name] = read
    if _thread is None:
        _start()


def _start() -> None:
    global _thread
    with _lock:
        if _thread is not None:
            return
        _thread = threading.Thread(target=_run, name="ranktable-probe", daemon=True)
    _thread.start()
    atexit.register(_sample)


def _trace() -> None:
    """The largest allocation sites now, written over the previous ones (a no-op unless tracing)."""
    import tracemalloc

    if _dir is None or not tracemalloc.is_tracing():
        return
    current, peak = tracemalloc.get_traced_memory()
    stats = tracemalloc.take_snapshot().statistics("lineno")[:TRACE_TOP]
    lines = [f"t {time.time():.1f} traced {current / 2**20:.1f} MiB, peak {peak / 2**20:.1f} MiB"]
    lines += [f"{s.size / 2**20:9.2f} MiB {s.count:9d} blocks  {s.traceback[0]}" for s in stats]
    _dir.mkdir(parents=True, exist_ok=True)
    (_dir / f"{os.getpid()}.tracemalloc.txt").write_text("\n".join(lines) + "\n")


def _threads_cpu() -> dict[str, float]:
    """CPU seconds (user + system) of this process' live threads, by name with digits folded."""
    out: dict[str, float] = {}
    for thread in threading.enumerate():
        tid = thread.native_id
        try:
            stat = Path(f"/proc/self/task/{tid}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / _TICK
        key = _DIGITS.sub("N", thread.name)
        out[key] = round(out.get(key, 0.0) + cpu, 2)
    return out


def _sample() -> None:
    if _dir is None:
        return
    with _lock:
        counts = dict(_counts)
        gauges = dict(_gauges)
    for name, read in gauges.items():
        with contextlib.suppress(Exception):  # a gauge of something that went away: not sampled
            counts[name] = read()
    times = os.times()
    line = {
        "t": time.time(),
        "pid": os.getpid(),
        "argv": sys.argv[1:4],
        "cpu": round(times.user + times.system, 2),
        "counts": counts,
        "threads": _threads_cpu(),
    }
    _dir.mkdir(parents=True, exist_ok=True)
    with open(_dir / f"{os.getpid()}.jsonl", "a") as fh:
        fh.write(json.dumps(line) + "\n")


def _run() -> None:
    samples = 0
    while True:
        time.sleep(SAMPLE_SECONDS)
        samples += 1
        try:
            _sample()
            if samples % TRACE_EVERY == 0 and os.environ.get(TRACE_ENV):
                _trace()
        except OSError:
            return


if _dir is not None and os.environ.get(
    TRACE_ENV
):  # from the import on: what was allocated before is not seen
    import tracemalloc

    tracemalloc.start(1)
    atexit.register(_trace)
