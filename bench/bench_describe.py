"""The Job view's overview refresh at 1,024 pods: what one `describe` costs the Jupyter server.

A simulated pool of BENCH_PODS nodes (1,024 by default, no tenants) runs in its own process (`ranktable sim
serve`), so this process's CPU is the server side alone. A job with a pod per node runs the pool's synthetic
log source (no process per pod). With the namespace's live `JobTable` (what the open job list keeps), the
overview is read N times (BENCH_CALLS, 20) two ways in the same run:
* before (the code path up to #8): `ClusterClient.describe` with the job and pods from the table; every call
  lists the nodes, reads the switch tree, lists every event of the namespace, reads and parses the rank
  table, builds the description and encodes it as JSON (what the REST handler sent every 2 s);
* after: `JobTable.describe`: events and nodes from watches, the description built once per change of its
  inputs, the same version otherwise (the REST handler answers 304 without encoding anything).
Prints wall time and this process's CPU time per call (cold: the first call; warm: the median of the rest).

    .venv/bin/python bench/bench_describe.py
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ranktable.cluster.client import ClusterClient  # noqa: E402
from ranktable.cluster.jobtable import JobTable  # noqa: E402
from ranktable.compose.manifests import compose  # noqa: E402
from ranktable.compose.spec import JobSpec  # noqa: E402
from ranktable.server_ext.demo import stop_process  # noqa: E402
from ranktable.sim.control import find_running  # noqa: E402
from tests.integration.sim_helpers import eventually  # noqa: E402

PODS = int(os.environ.get("BENCH_PODS", "1024"))
CALLS = int(os.environ.get("BENCH_CALLS", "20"))
JOB = "overview"


def timed(fn: Callable[[], Any]) -> tuple[float, float, Any]:
    """(wall s, this process's CPU s, result) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def report(label: str, runs: list[tuple[float, float, Any]]) -> dict[str, float]:
    warm = runs[1:]
    out = {
        "cold_wall_ms": runs[0][0] * 1e3,
        "cold_cpu_ms": runs[0][1] * 1e3,
        "warm_wall_ms": statistics.median(r[0] for r in warm) * 1e3,
        "warm_cpu_ms": statistics.median(r[1] for r in warm) * 1e3,
    }
    print(
        f"  {label}: cold {out['cold_wall_ms']:.1f} ms wall / {out['cold_cpu_ms']:.1f} ms CPU; "
        f"warm median {out['warm_wall_ms']:.2f} ms wall / {out['warm_cpu_ms']:.2f} ms CPU "
        f"({len(warm)} calls)"
    )
    return out


def main() -> int:
    state = Path(tempfile.mkdtemp(prefix="overview-bench-describe-"))
    leaves = max(2, -(-PODS // 8))
    log = open(state / "serve.log", "ab")  # noqa: SIM115 - the child owns it
    pool = subprocess.Popen(
        [
            *(sys.executable, "-m", "ranktable", "sim", "serve", "--state-dir", str(state / "pool")),
            *("--nodes", str(PODS), "--leaves", str(leaves), "--tenants", "0"),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    table: JobTable | None = None
    try:
        running = eventually(lambda: find_running(state / "pool"), 120, "the pool to start", every=0.2)
        client = ClusterClient(str(running.kubeconfig), running.context, "default", timeout=(5.0, 120.0))
        spec = JobSpec(
            name=JOB,
            image="bench:v1",
            nodes=PODS,
            npus_per_node=8,
            command=["ranktable-sim-synthetic-log", "--rate=0.1"],
        )
        client.submit(compose(spec))
        table = JobTable(client)
        table.start()
        stop = threading.Event()
        rows = table.follow(stop)
        started = time.monotonic()
        for snapshot in rows:
            row = next((r for r in snapshot if r["name"] == JOB), None)
            if row and row["rank_table"] == "completed" and row["health"].get("ready") == PODS:
                break
            if time.monotonic() - started > 600:
                raise TimeoutError(f"the job's {PODS} pods did not get ready in 600 s")
        stop.set()
        print(f"describe of a {PODS}-pod job, {CALLS} calls each way (pool: its own process)")
        known = table.job_and_pods(JOB)
        assert known is not None

        def before() -> int:
            return len(json.dumps(client.describe(JOB, table.job_and_pods(JOB)).to_json()))

        old = [timed(before) for _ in range(CALLS)]
        size = old[-1][2]
        # the first describe starts the overview's watches
        eventually(lambda: table.describe(JOB), 120, "the overview's watches to list", every=0.2)
        table._described.clear()  # cold: the description and the leaves built again
        table._leaves = (-1, 0.0, {}, 0)
        new = [timed(lambda: table.describe(JOB)) for _ in range(CALLS)]
        versions = {r[2][0] for r in new}
        print(f"  the description: {size / 1e3:.0f} kB of JSON, {len(new[-1][2][1]['events'])} events")
        a = report("before (API lists + build + JSON each call)", old)
        b = report("after (watches, built once per change)", new)
        print(
            f"  warm CPU per call {a['warm_cpu_ms'] / max(b['warm_cpu_ms'], 1e-3):.0f}x less; "
            f"{len(versions)} version(s) over {CALLS} calls; at one refresh per 2 s the server spends "
            f"{a['warm_cpu_ms'] / 20:.1f}% -> {b['warm_cpu_ms'] / 20:.2f}% of a core per open Job view"
        )
        print(json.dumps({"pods": PODS, "calls": CALLS, "json_bytes": size, "before": a, "after": b}))
        return 0
    finally:
        if table is not None:
            table.close()
        stop_process(pool, timeout=60)
        log.close()
        shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
