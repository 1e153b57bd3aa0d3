"""Metrics + triage cost: a finished 1,024-rank run of 10,000 lines per rank, and a live 1,024-pod stream.

Finished run: 128 pods x 8 ranks (torchrun-style ``[rankN]:`` lines with kubelet timestamps: per step a
loss line, every 10th step a step-time line, some warnings), one rank failing first with EI0006 and the
others later. Each pod's log is fed in batches of 200 lines, as the log stream delivers them. The peer
baseline, timed on the same batches in the same run, is the plain pass every log reader does anyway:
split each line into timestamp and text. Then ``diagnose()`` and ``metrics_json()`` are timed.

Live: 1,024 pods each print LIVE_RATE lines/s for LIVE_SECONDS; a producer thread enqueues batches, the
consumer feeds them and re-diagnoses every second. "Behind" = time from a batch's arrival to the first
diagnosis that includes it; each diagnosis first reads the batches fed since the last one (the observer
coalesces them: see RunObserver.feed). Memory: peak RSS of this process (the generator holds one pod's
text at a time) and the observer's retained Python memory (tracemalloc, on a separate pass).

    .venv/bin/python bench/bench_triage.py [--ranks 1024] [--lines 10000] [--live-seconds 20]
"""

from __future__ import annotations

import argparse
import gc
import os
import queue
import resource
import threading
import time
import tracemalloc
from statistics import median

from ranktable.observe import ObserveSettings, RankLayout, RunObserver

NPUS = 8
BATCH = 200
BASE = 1_790_000_000.0  # 2026-09-21, epoch seconds


def stamp(t: float) -> str:
    whole = int(t)
    hh, mm, ss = (whole // 3600) % 24, (whole // 60) % 60, whole % 60
    return f"2026-09-21T{hh:02d}:{mm:02d}:{ss:02d}.{int((t - whole) * 1e9):09d}Z"


def pod_lines(node: int, lines_per_rank: int, failing_node: int) -> list[str]:
    """One pod's log (8 ranks interleaved), kubelet-stamped, as `kubectl logs --timestamps` prints it."""
    out = []
    steps = int(lines_per_rank * 0.85)
    for step in range(1, steps + 1):
        t = BASE + step * 0.5
        st = stamp(t)
        for local in range(NPUS):
            rank = node * NPUS + local
            out.append(
                f"{st} [rank{rank}]:step {step} loss {2.5 / (1 + step / 500):.5f} lr 1.0e-04 grad_norm 0.93"
            )
            if step % 10 == 0:
                out.append(f"{st} [rank{rank}]:step_time 512.3 ms, 2304.5 tokens/s")
        if step % 100 == 0:
            for local in range(NPUS):
                out.append(
                    f"{st} [rank{node * NPUS + local}]:[W compiler_depend.ts:133] NPU allocator: expandable"
                )
    end = BASE + steps * 0.5
    for local in range(NPUS):
        rank = node * NPUS + local
        when = end + (1 if node == failing_node and local == 3 else 130 + rank * 0.01)
        out.append(f"{stamp(when)} [rank{rank}]:Traceback (most recent call last):")
        out.append(f"{stamp(when)} [rank{rank}]:EI0006: [PID: 99] Getting socket times out.")
    while len(out) < lines_per_rank * NPUS:  # pad with chatter to exactly lines_per_rank lines per rank
        out.append(f"{stamp(end)} [rank{node * NPUS}]:INFO dataloader worker heartbeat ok")
    return out[: lines_per_rank * NPUS]


def finished_run(ranks: int, lines_per_rank: int) -> dict[str, float]:
    pods = ranks // NPUS
    layout = RankLayout.uniform([(f"job-worker-{n}", n) for n in range(pods)], NPUS)
    observer = RunObserver(layout)
    failing = pods // 3
    fed = split = 0.0
    total = nbytes = 0
    for node in range(pods):
        text = "\n".join(pod_lines(node, lines_per_rank, failing))
        nbytes += len(text)
        start = time.perf_counter()
        raw = text.split("\n")
        batches = [raw[i : i + BATCH] for i in range(0, len(raw), BATCH)]
        pairs_all = [[line.partition(" ")[::2] for line in batch] for batch in batches]
        split += time.perf_counter() - start  # the peer baseline: split lines, split off the timestamp
        start = time.perf_counter()
        pod = f"job-worker-{node}"
        for pairs in pairs_all:
            observer.feed(pod, node, pairs)
        fed += time.perf_counter() - start
        total += len(raw)
        del text, raw, batches, pairs_all
    start = time.perf_counter()
    diagnosis = observer.diagnose("Failed")
    metrics = observer.metrics_json()
    results = time.perf_counter() - start
    first = diagnosis["first_failure"]
    expect = failing * NPUS + 3
    assert first is not None and first["rank"] == expect, (first, expect)
    assert len(metrics["ranks"]) == ranks
    return {
        "lines": total,
        "mib": nbytes / 2**20,
        "split_s": split,
        "feed_s": fed,
        "results_s": results,
        "first_rank": first["rank"],
    }


def live(pods: int, rate: float, seconds: float) -> dict[str, float]:
    layout = RankLayout.uniform([(f"job-worker-{n}", n) for n in range(pods)], NPUS)
    observer = RunObserver(layout, ObserveSettings())
    inbox: queue.Queue[tuple[float, int, list[tuple[str, str]]] | None] = queue.Queue()
    per_tick = max(1, int(rate * 0.25))  # each pod delivers a batch every 250 ms

    def produce() -> None:
        step = 0
        t0 = time.monotonic()
        ticks = int(seconds * 4)
        for tick in range(ticks):
            now = BASE + tick * 0.25
            for node in range(pods):
                lines = []
                for k in range(per_tick):
                    rank = node * NPUS + (k % NPUS)
                    lines.append((stamp(now), f"[rank{rank}]:step {step + k} loss 2.0 lr 1e-4"))
                inbox.put((time.monotonic(), node, lines))
            step += per_tick
            delay = t0 + (tick + 1) * 0.25 - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        inbox.put(None)

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    waiting: list[float] = []
    behind: list[float] = []
    diagnose_costs: list[float] = []
    next_diag = time.monotonic() + 1.0
    done = False
    while not done:
        try:
            item = inbox.get(timeout=0.05)
        except queue.Empty:
            item = ()  # type: ignore[assignment]
        if item is None:
            done = True
        elif item:
            arrived, node, lines = item
            observer.feed(f"job-worker-{node}", node, lines)
            waiting.append(arrived)
        if time.monotonic() >= next_diag or done:
            start = time.perf_counter()
            observer.diagnose("Running")
            diagnose_costs.append(time.perf_counter() - start)
            now = time.monotonic()
            behind.extend(now - t for t in waiting)
            waiting.clear()
            next_diag = now + 1.0
    behind.sort()
    return {
        "lines_per_s": pods * per_tick * 4,
        "behind_p50_s": median(behind),
        "behind_max_s": behind[-1],
        "diagnose_ms": 1000 * median(diagnose_costs),
    }


def retained_mib(ranks: int, lines_per_rank: int) -> float:
    """Python memory the observer keeps after a run (tracemalloc; the generated text is freed)."""
    gc.collect()
    tracemalloc.start()
    pods = ranks // NPUS
    observer = RunObserver(RankLayout.uniform([(f"job-worker-{n}", n) for n in range(pods)], NPUS))
    for node in range(pods):
        lines = pod_lines(node, lines_per_rank, 0)
        pairs = [line.partition(" ")[::2] for line in lines]
        for i in range(0, len(pairs), BATCH):
            observer.feed(f"job-worker-{node}", node, pairs[i : i + BATCH])
        del lines, pairs
    assert observer.series  # read: unread batches (at most 65,536 lines) are merged
    gc.collect()
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return current / 2**20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=1024)
    parser.add_argument("--lines", type=int, default=10_000, help="lines per rank")
    parser.add_argument("--live-pods", type=int, default=1024)
    parser.add_argument("--live-rate", type=float, default=20.0, help="lines/s per pod")
    parser.add_argument("--live-seconds", type=float, default=20.0)
    args = parser.parse_args()

    print("load average before: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    run = finished_run(args.ranks, args.lines)
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    total = run["feed_s"] + run["results_s"]
    print(
        f"finished run: {args.ranks} ranks x {args.lines} lines = {run['lines']:,} lines "
        f"({run['mib']:.0f} MiB)"
    )
    print(
        f"  metrics + triage: {total:.2f} s ({run['lines'] / run['feed_s'] / 1e6:.2f} M lines/s feed, "
        f"diagnose + metrics JSON {run['results_s']:.2f} s)  target < 10 s"
    )
    print(
        f"  per line: {1e6 * run['feed_s'] / run['lines']:.2f} us metrics + triage, "
        f"{1e6 * run['split_s'] / run['lines']:.2f} us baseline"
    )
    print(
        f"  peer baseline (split lines + timestamps): {run['split_s']:.2f} s  -> "
        f"{run['feed_s'] / run['split_s']:.1f}x the baseline"
    )
    print(f"  first failure found: rank {run['first_rank']}")
    print(f"  peak RSS {rss1:.0f} MiB (before the run {rss0:.0f} MiB)")
    retained_lines = max(1000, args.lines // 10)
    retained = retained_mib(args.ranks, retained_lines)
    print(
        f"  observer retained memory: {retained:.1f} MiB ({args.ranks} ranks x {retained_lines} lines; "
        "bounded per rank by max_points)"
    )
    result = live(args.live_pods, args.live_rate, args.live_seconds)
    print(
        f"live: {args.live_pods} pods x {args.live_rate:g} lines/s = {result['lines_per_s']:,.0f} lines/s "
        f"for {args.live_seconds:g} s"
    )
    print(
        f"  diagnosis behind the stream: p50 {result['behind_p50_s']:.2f} s, "
        f"max {result['behind_max_s']:.2f} s (target <= 2 s); diagnose() {result['diagnose_ms']:.0f} ms"
    )
    rss2 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of the whole bench {rss2:.0f} MiB")
    print("load average after: {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
