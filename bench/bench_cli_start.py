"""CLI start-up: `ranktable --help` and `ranktable validate TABLE` (the shipped 128-rank example) as whole
processes, against their 0.15 s target and against `python -c pass` measured in the same run (the floor
any Python command pays). No cluster or kubectl needed, unlike bench_cli.py. Medians of --runs runs, each
command in turn so load hits all alike, with the 1-minute load before and after.

    .venv/bin/python bench/bench_cli_start.py [--runs 9]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

from wall_time import wall

TARGET_SECONDS = 0.15
TABLE = Path(__file__).resolve().parent.parent / "ranktable" / "examples" / "jobstart_hccl.json"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    runs = max(5, parser.parse_args().runs)
    ranktable = str(Path(sys.executable).with_name("ranktable"))
    commands = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "ranktable --help": [ranktable, "--help"],
        "ranktable validate": [ranktable, "validate", str(TABLE)],
    }
    print(
        f"{runs} runs each, medians; 1-minute load before: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})"
    )
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            times[name].append(wall(argv))
    floor = statistics.median(times["python -c pass"])
    print(f"{'python -c pass':<19} {floor:.3f} s")
    for name in list(commands)[1:]:
        seconds = statistics.median(times[name])
        verdict = "met" if seconds <= TARGET_SECONDS else "MISSED"
        print(
            f"{name:<19} {seconds:.3f} s = {seconds / floor:.1f}x python -c pass "
            f"(target <= {TARGET_SECONDS} s: {verdict})"
        )
    print(f"1-minute load after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
