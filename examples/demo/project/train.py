"""The demo's training script: prints MindSpore-style progress (LossMonitor and TimeMonitor lines), so the
Job view's metrics and diagnosis have something to read. Standard library only: it runs in any image and
on the simulated pool.

    python train.py [--steps N] [--interval SECONDS]

`ranktable launch` starts it once per NPU with RANK_ID, RANK_SIZE and RANK_TABLE_FILE set.

The deliberate bug (docs/first-hour.md): with DEMO_FAIL_RANK=<rank> in the job's environment (the example
job sets 5), that rank reads past the end of its data shard at step 5 and dies with an IndexError; the
launcher then stops the other processes of its pod. To fix it, delete the two lines marked "the bug" in
`next_batch`, save (automatic upload syncs the file), and resubmit the job.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import sys
import time
from pathlib import Path

FAIL_STEP = 5


def say(text: str) -> None:
    """One write per line: the ranks of a pod share its stdout."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def shard_of(rank: int, size: int) -> list[int]:
    """This rank's sample ids (a stand-in for a MindRecord shard)."""
    return list(range(rank, 64 * size, size))


def next_batch(shard: list[int], rank: int, step: int) -> list[int]:
    start = (step * 4) % len(shard)
    if rank == int(os.environ.get("DEMO_FAIL_RANK", "-1")) and step == FAIL_STEP:  # the bug
        start = len(shard) + step  # the bug: starts past the end of the shard
    if start >= len(shard):
        raise IndexError(
            f"[Rank {rank}] step {step}: batch starts at sample {start}, past the end of the shard "
            f"({len(shard)} samples)"
        )
    return shard[start : start + 4]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--interval", type=float, default=0.3, help="seconds per step")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped by the launcher: exit quietly

    rank = int(os.environ.get("RANK_ID", "0"))
    size = int(os.environ.get("RANK_SIZE", "1"))
    table_file = Path(os.environ.get("RANK_TABLE_FILE", "/user/config/jobstart_hccl.json"))
    status = json.loads(table_file.read_text()).get("status", "?") if table_file.is_file() else "none"
    say(f"[INFO] rank {rank}/{size}: rank table {status}, script {Path(__file__).resolve()}")
    shard = shard_of(rank, size)
    started = time.monotonic()
    for step in range(1, args.steps + 1):
        step_started = time.monotonic()
        try:
            batch = next_batch(shard, rank, step)
        except IndexError as exc:  # one line naming the rank, not a traceback per rank
            say(f"{type(exc).__name__}: {exc}")
            return 1
        loss = 2.5 * math.exp(-step / 15) + 0.002 * (sum(batch) % 7)
        if args.interval:
            time.sleep(args.interval)
        say(f"epoch: 1 step: {step}, loss is {loss:.4f}")
        say(
            f"Train epoch time: {(time.monotonic() - started) * 1000:.3f} ms, per step time: "
            f"{(time.monotonic() - step_started) * 1000:.3f} ms"
        )
    say(f"[INFO] rank {rank}: training finished after {args.steps} steps")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
