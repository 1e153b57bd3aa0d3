"""The benchmarks' stage counters: off by default, sampled to a file with CPU times when switched on."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = """
import threading, time
from ranktable import probe
probe.count("pool.lines", 10)
probe.count("pool.lines", 5)
probe.gauge("pool.backlog", lambda: 7)
threading.Thread(target=lambda: time.sleep(3), name="log-worker-12").start()
time.sleep(2.5)
"""


def run(tmp_path: Path, probe_dir: str | None, trace: bool = False) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("RANKTABLE_PROBE", "RANKTABLE_PROBE_TRACEMALLOC")}
    if probe_dir is not None:
        env["RANKTABLE_PROBE"] = probe_dir
    if trace:
        env["RANKTABLE_PROBE_TRACEMALLOC"] = "1"
    subprocess.run([sys.executable, "-c", SCRIPT], env=env, check=True, timeout=60, cwd=tmp_path)


def test_counts_are_sampled_with_cpu_times_only_when_switched_on(tmp_path: Path) -> None:
    run(tmp_path, None)
    assert list(tmp_path.iterdir()) == []  # off: nothing written anywhere
    folder = tmp_path / "probe"
    run(tmp_path, str(folder))
    (path,) = folder.glob("*.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(rows) >= 2  # one a SAMPLE_SECONDS and one at exit
    last = rows[-1]
    assert last["counts"] == {"pool.lines": 15, "pool.backlog": 7}
    assert last["cpu"] >= 0 and "MainThread" in last["threads"]
    assert "log-worker-N" in rows[0]["threads"]  # threads named alike are one group
    assert [r["t"] for r in rows] == sorted(r["t"] for r in rows)


def test_allocation_sites_are_written_only_when_tracing(tmp_path: Path) -> None:
    """Issue 28 item 5: with RANKTABLE_PROBE_TRACEMALLOC the largest allocation sites are written."""
    run(tmp_path, str(tmp_path / "plain"))
    assert list((tmp_path / "plain").glob("*.tracemalloc.txt")) == []
    run(tmp_path, str(tmp_path / "traced"), trace=True)
    (path,) = (tmp_path / "traced").glob("*.tracemalloc.txt")
    head, *sites = path.read_text().splitlines()
    assert head.startswith("t ") and "traced" in head and "peak" in head
    assert sites and all(" MiB " in line and "blocks" in line and ":" in line for line in sites)
