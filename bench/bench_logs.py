"""Log streaming throughput: our per-pod stream vs `kubectl logs -f -l ... --prefix`, on the simulated pool.

A 64-pod job (64 simulated Snt9B nodes under 8 leaves, one pod per node by anti-affinity) whose
processes each print LINES lines. Once every pod has finished, both readers fetch the same 64 logs in
the same run: ours (`ClusterClient.logs(follow=True)`, lines parsed and tagged) and the real kubectl
with `--max-log-requests 64`. Prints lines/s for each and the peak RSS growth of our stream (the pool
runs in a separate process, so only the client is measured).

    .venv/bin/python bench/bench_logs.py [--pods 64] [--lines 10000]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from ranktable.cluster.client import ClusterClient
from ranktable.compose.manifests import compose
from ranktable.compose.spec import JobSpec
from ranktable.sim.control import start_background, stop_running

PRINTER = (
    "import sys\n"
    "n = int(sys.argv[1])\n"
    "w = sys.stdout.write\n"
    "for i in range(n):\n"
    "    w(f'step {i} loss {1.0 / (i + 1):.6f} throughput 1234.5 samples/s\\n')\n"
)


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def wait_all_done(client: ClusterClient, name: str, pods: int, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        phases = [(p.get("status") or {}).get("phase") for p in client.job_pods(name)]
        if len(phases) == pods and all(ph in ("Succeeded", "Failed") for ph in phases):
            return
        time.sleep(1)
    raise TimeoutError(f"job {name} did not finish in {timeout:.0f}s")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pods", type=int, default=64)
    parser.add_argument("--lines", type=int, default=10_000)
    args = parser.parse_args()
    expected = args.pods * args.lines

    state = Path(tempfile.mkdtemp(prefix="bench-logs-"))
    leaves = max(1, args.pods // 8)
    running = start_background(state, ["--nodes", str(args.pods), "--leaves", str(leaves), "--tenants", "0"])
    try:
        client = ClusterClient(str(running.kubeconfig), running.context, "default", timeout=(5, 60))
        spec = JobSpec(
            name="logbench",
            image="bench",
            nodes=args.pods,
            command=[sys.executable, "-c", PRINTER, str(args.lines)],
        )
        client.submit(compose(spec))
        started = time.monotonic()
        wait_all_done(client, "logbench", args.pods)
        print(f"job: {args.pods} pods x {args.lines} lines done in {time.monotonic() - started:.1f}s")

        before = rss_mib()
        t0 = time.monotonic()
        count = 0
        pods_seen: set[str] = set()
        with client.logs("logbench", follow=True) as stream:
            for line in stream:
                count += 1
                pods_seen.add(line.pod)
        ours = time.monotonic() - t0
        peak = rss_mib() - before
        rate = count / ours
        print(f"ours:    {count} lines from {len(pods_seen)} pods in {ours:.2f}s = {rate:,.0f} lines/s")
        print(f"         peak RSS growth {peak:.1f} MiB (reconnects {stream.stats.reconnects})")

        env = {**os.environ, "KUBECONFIG": str(running.kubeconfig), "HOME": str(state / "kubectl-home")}
        t0 = time.monotonic()
        out = subprocess.run(
            ["kubectl", "logs", "-f", "-l", "volcano.sh/job-name=logbench", "--prefix", "--max-log-requests",
             str(args.pods), "--tail=-1"],
            env=env, capture_output=True, timeout=900, check=False,
        )  # fmt: skip
        theirs = time.monotonic() - t0
        kcount = out.stdout.count(b"\n")
        krate = kcount / theirs
        print(f"kubectl: {kcount} lines in {theirs:.2f}s = {krate:,.0f} lines/s (exit {out.returncode})")
        if out.returncode:
            print(out.stderr.decode(errors="replace")[-500:])
        print(f"ratio ours/kubectl: {rate / krate:.2f}x; expected {expected} lines")

        tracemalloc.start()  # a second, slower pass that measures the Python heap the stream holds at most
        with client.logs("logbench", follow=True) as stream:
            heap_count = sum(1 for _ in stream)
        heap_peak = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
        print(f"ours, traced: {heap_count} lines, Python heap peak {heap_peak:.1f} MiB")
        client.stop("logbench")
        return 0 if count == kcount else 1  # both readers must see the same lines
    finally:
        stop_running(state)


if __name__ == "__main__":
    raise SystemExit(main())
