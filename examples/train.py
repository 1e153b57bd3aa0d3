"""A small stand-in for a training script: what the demo's jobs run, so their logs mean something.

Reads the rank table the platform (or `ranktable launch`) hands it through RANK_TABLE_FILE, RANK_ID and
RANK_SIZE, prints its rank, server and leaf switch, then one loss line per step. Standard library only,
so it runs in any training image (or on the simulated pool).

    python train.py [--steps N] [--interval SECONDS] [--fail-at STEP]
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import math
import os
import sys
import time
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
    args = parser.parse_args()

    table_file = Path(os.environ.get("RANK_TABLE_FILE", "/user/config/jobstart_hccl.json"))
    rank = int(os.environ.get("RANK_ID", "0"))
    size = int(os.environ.get("RANK_SIZE", "1"))
    table = read_json(table_file) if table_file.is_file() else {}
    server, device = my_place(table, rank)
    device = os.environ.get("DEVICE_ID", device)
    leaf = my_leaf(table_file, server, device)
    say(f"rank {rank}/{size} server {server} device {device} leaf {leaf} status {table.get('status', '?')}")
    for step in range(1, args.steps + 1):
        if step == args.fail_at:
            say(f"rank {rank} step {step}: simulated failure")
            return 1
        loss = 2.5 * math.exp(-step / 50) + 0.01 * ((rank * 7 + step) % 5)
        say(f"rank {rank} step {step} loss {loss:.4f}")
        if args.interval:
            time.sleep(args.interval)
    say(f"rank {rank} done")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
