"""A small stand-in for a training script: what the demo's jobs run, so their logs mean something.

Reads the rank table the platform (or `ranktable launch`) hands it through RANK_TABLE_FILE, RANK_ID and
RANK_SIZE, prints its rank, server and leaf switch, then one loss line per step. Standard library only,
so it runs in any training image (or on the simulated pool).

    python train.py [--steps N] [--interval SECONDS] [--fail-at STEP]

Flags that play out the failures `ranktable job diagnose` explains (all ranks get the same flags; each
flag names the rank it affects): --slow-rank R --slow-factor F (a straggler), --hang-rank R --hang-at STEP
(stops printing, keeps running), --fail-rank R --fail-rank-at STEP (exits first with an HCCL EI0006
error) and --victims-fail-at STEP (every other rank then fails with EI0006, as HCCL peers time out).

Checkpoints, as Megatron-LM prints and tracks them: --save DIR --save-interval N makes rank 0 write
DIR/latest_checkpointed_iteration.txt every N steps and print "successfully saved checkpoint from
iteration N to DIR"; --load DIR starts at the step after the one that file names (what `ranktable job
resume` appends for a Megatron-style save).
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import math
import os
import signal
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any


def read_json(path: Path) -> Any:
    raw = path.read_bytes()
    try:
        return json.loads(raw)
    except ValueError:  # ranktable_tor.json is gzip-compressed, then base64-encoded
        return json.loads(gzip.decompress(base64.b64decode(raw)))


def my_place(table: dict[str, Any], rank: int) -> tuple[str, str]:
    """(server_id, device_id) holding `rank`."""
    for server in table.get("server_list") or []:
        for device in server.get("device") or []:
            if int(device.get("rank_id", -1)) == rank:
                return str(server.get("server_id")), str(device.get("device_id"))
    return "?", "?"


def my_leaf(table_file: Path, server_id: str, device_id: str) -> str:
    tor_file = table_file.with_name("ranktable_tor.json")
    if not tor_file.is_file():
        return "?"
    try:
        tor = read_json(tor_file)
    except (ValueError, OSError):
        return "?"
    for server in tor.get("server_list") or []:
        if str(server.get("server_id")) == server_id:
            for device in server.get("device") or []:
                if str(device.get("device_id")) == device_id:
                    return str(device.get("tor_ip") or "?")
    return "?"


def say(text: str) -> None:
    """One write per line: ranks share the pod's stdout, and split writes would interleave."""
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--interval", type=float, default=0.2, help="seconds between steps")
    parser.add_argument("--fail-at", type=int, default=-1, help="exit 1 at this step (to test restarts)")
    parser.add_argument(
        "--slow-rank", type=int, default=-1, help="this rank's steps take --slow-factor x longer"
    )
    parser.add_argument("--slow-factor", type=float, default=1.5)
    parser.add_argument("--hang-rank", type=int, default=-1, help="this rank stops printing at --hang-at")
    parser.add_argument("--hang-at", type=int, default=-1)
    parser.add_argument(
        "--fail-rank", type=int, default=-1, help="this rank fails with EI0006 at --fail-rank-at"
    )
    parser.add_argument("--fail-rank-at", type=int, default=-1)
    parser.add_argument("--save", default="", help="checkpoint folder (Megatron's --save)")
    parser.add_argument("--save-interval", type=int, default=0, help="save every N steps (0: never)")
    parser.add_argument("--load", default="", help="resume from this folder's latest checkpoint")
    parser.add_argument("--victims-fail-at", type=int, default=-1, help="other ranks fail with EI0006 here")
    args = parser.parse_args()

    table_file = Path(os.environ.get("RANK_TABLE_FILE", "/user/config/jobstart_hccl.json"))
    rank = int(os.environ.get("RANK_ID", "0"))
    size = int(os.environ.get("RANK_SIZE", "1"))
    table = read_json(table_file) if table_file.is_file() else {}
    server, device = my_place(table, rank)
    device = os.environ.get("DEVICE_ID", device)
    leaf = my_leaf(table_file, server, device)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped by the launcher: exit quietly
    say(f"rank {rank}/{size} server {server} device {device} leaf {leaf} status {table.get('status', '?')}")
    interval = args.interval * (args.slow_factor if rank == args.slow_rank else 1.0)
    first = 1
    if args.load:
        saved = int((Path(args.load) / TRACKER).read_text().strip())
        say(f"loading checkpoint from {args.load} at iteration {saved}")
        first = saved + 1
    for step in range(first, args.steps + 1):
        if step == args.fail_at:
            say(f"rank {rank} step {step}: simulated failure")
            return 1
        if (rank == args.fail_rank and step == args.fail_rank_at) or (
            rank not in (args.fail_rank, args.hang_rank) and step == args.victims_fail_at
        ):
            hccl_timeout(rank, device)
            return 1
        if rank == args.hang_rank and step == args.hang_at:
            while True:  # a hung collective: alive, silent
                time.sleep(3600)
        loss = 2.5 * math.exp(-step / 50) + 0.01 * ((rank * 7 + step) % 5)
        say(f"rank {rank} step {step} loss {loss:.4f}")
        if rank == 0 and args.save and args.save_interval and step % args.save_interval == 0:
            save_checkpoint(Path(args.save), step)
        if interval:
            time.sleep(interval)
    say(f"rank {rank} done")
    return 0


TRACKER = "latest_checkpointed_iteration.txt"  # Megatron's tracker file: the last saved iteration


def save_checkpoint(folder: Path, step: int) -> None:
    """Rank 0's save: the tracker file, then Megatron's line (printed once the save is complete)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / TRACKER).write_text(f"{step}\n")
    say(f"successfully saved checkpoint from iteration {step:7d} to {folder}")


def hccl_timeout(rank: int, device: str) -> None:
    """The lines torch_npu and CANN print when HCCL link setup times out (EI0006)."""
    now = datetime.now(timezone.utc)
    stamp = now.strftime("%Y-%m-%d-%H:%M:%S")
    micro = now.strftime("%f")
    pid = os.getpid()
    say(f"[ERROR] {stamp} (PID:{pid}, Device:{device}, RankID:{rank}) ERR02200 DIST call hccl api failed.")
    say(
        f"EI0006: [PID: {pid}] {stamp}.{micro[:3]}.{micro[3:]} Getting socket times out. Reason: Remote Rank "
        f"did not send the data in time. (RankID:{rank})"
    )


if __name__ == "__main__":
    raise SystemExit(main())
