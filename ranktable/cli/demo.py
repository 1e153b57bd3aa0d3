"""`ranktable demo`: plan the shipped example pool and write its picture and report, with no cluster.

It runs the same path as `ranktable plan` (read, plan, cost, render) on the example in
`ranktable.examples`, so a fresh install shows what route planning does in one command.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ranktable.cli.commands import HELP
from ranktable.examples import load_example_pool
from ranktable.hccl import write_rank_table
from ranktable.render.ring import plural_tier_name
from ranktable.usecases.layout import plan_report

DEFAULT_OUT = "ranktable-demo"
GIB = 1 << 30


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "demo",
        help=HELP["demo"],
        description="Plan the example pool shipped with ranktable (16 servers x 8 NPUs, 4 leaves, "
        "2 spines; rank table in pod-index order as the platform fills it). Writes layout.svg, "
        "jobstart_routeplan.json, report.txt and report.json to DIR and prints the comparison.",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        default=DEFAULT_OUT,
        help=f"directory for the files (default: ./{DEFAULT_OUT}/, created if missing)",
    )
    parser.add_argument(
        "--message-bytes",
        type=int,
        default=GIB,
        metavar="N",
        help="all-reduce message size for the cost estimate (default: 1 GiB)",
    )
    parser.set_defaults(handler=run_demo)


def run_demo(args: argparse.Namespace) -> int:
    from ranktable.cli import CliError

    if args.message_bytes <= 0:
        raise CliError("must be a positive number of bytes", where="--message-bytes")
    out = Path(args.out)
    if out.exists() and not out.is_dir():
        raise CliError(f"{out} exists and is not a directory", where="--out", fix="choose another DIR")
    out.mkdir(parents=True, exist_ok=True)

    pool = load_example_pool()
    topo = pool.topology
    tiers = ", ".join(
        f"{len(topo.switches_at(k))} {plural_tier_name(topo, k)}" for k in range(1, topo.tier_count + 1)
    )
    title = f"Example pool: {len(pool.table.servers)} servers, {pool.table.rank_size} NPUs; switches: {tiers}"
    planned = plan_report(pool.table, topo, message_bytes=args.message_bytes, title=title)
    result, report, svg = planned.result, planned.text, planned.svg()

    paths = {
        "layout": out / "layout.svg",
        "planned": out / "jobstart_routeplan.json",
        "report": out / "report.txt",
        "json": out / "report.json",
    }
    paths["layout"].write_text(svg, encoding="utf-8")
    write_rank_table(result.planned, paths["planned"])
    paths["report"].write_text(report + "\n", encoding="utf-8")
    summary: dict[str, Any] = planned.to_json() | {
        "inputs": {"ranktable": pool.ranktable_source, "topology": pool.topology_source},
    }
    paths["json"].write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")

    print(report)
    for warning in result.warnings:
        print(f"warning: {warning}")
    print()
    print(f"layout picture:  {paths['layout']}")
    print(f"planned table:   {paths['planned']}")
    print(f"report:          {paths['report']}")
    print(f"report (JSON):   {paths['json']}")
    return 0
