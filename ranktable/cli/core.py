"""`ranktable validate | plan | wait | route`: the rank-table commands, on a laptop or inside a pod.

`wait` and `route` are the in-container steps a launcher runs before training: block until the platform
has completed the table, then plan it and print the `export` lines for this server.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ranktable.cli.commands import HELP
from ranktable.errors import InputError, NotFoundError
from ranktable.hccl import RankTable, check_file, load_rank_table, write_rank_table
from ranktable.hccl.bulk import gc_paused
from ranktable.hccl.validate import INITIALIZING, INVALID, VALID, ValidationReport

if TYPE_CHECKING:
    from ranktable.plan import PlanResult

TOPOLOGY_FORMATS = ("tor-json", "hypernode", "slurm", "labels", "tor-file", "yaml")
ROUTEPLAN_NAME = "jobstart_routeplan.json"
POLL_SECONDS = 1.0  # how often `wait` looks at the file (the platform's own consumers use 1 s)
HEARTBEAT_SECONDS = 30.0  # repeat an unchanged progress line this often
EXIT_TIMEOUT = 124  # like coreutils `timeout`
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(i?b?)\s*$", re.IGNORECASE)


def message_size(text: str) -> int:
    """`1073741824`, `1GiB`, `256MiB`, `4k` -> bytes (binary multiples; a plain number is bytes)."""
    match = _SIZE.match(text)
    if not match:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size; use bytes or e.g. 256MiB, 1GiB")
    number, unit = float(match.group(1)), match.group(2).lower()
    value = int(number * (1 << (10 * " kmgt".index(unit or " "))))
    if value <= 0:
        raise argparse.ArgumentTypeError("the message size must be at least 1 byte")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value < 0:
        raise argparse.ArgumentTypeError("the timeout must not be negative (0 waits without limit)")
    return value


def register(sub: Any) -> None:
    _register_validate(sub)
    _register_plan(sub)
    _register_wait(sub)
    _register_route(sub)


def _register_validate(sub: Any) -> None:
    p = sub.add_parser(
        "validate",
        help=HELP["validate"],
        description="Check an HCCL rank table (1.0, 1.2 or legacy group_list). Exit 0 when valid (or still "
        "initializing), 1 with every problem listed when not.",
    )
    p.add_argument("file", metavar="FILE", help="the rank table, e.g. /user/config/jobstart_hccl.json")
    p.set_defaults(handler=cmd_validate)


def _register_plan(sub: Any) -> None:
    p = sub.add_parser(
        "plan",
        help=HELP["plan"],
        description="Renumber a rank table so servers sharing a switch are contiguous at every tier, print "
        "the cost comparison (ring crossings per tier, busiest uplink, all-reduce estimate, speed-up), and "
        "optionally write the planned table and the layout picture.",
    )
    _topology_arguments(p)
    p.add_argument("-o", "--output", metavar="PLANNED.json", help="write the planned rank table here")
    p.add_argument("--svg", metavar="LAYOUT.svg", help="write the layout picture (given and planned) here")
    _cost_arguments(p)
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(handler=cmd_plan)


def _topology_arguments(p: argparse.ArgumentParser) -> None:
    """`plan`'s inputs: the rank table, the topology and how to read it."""
    p.add_argument("--ranktable", required=True, metavar="FILE", help="the completed rank table")
    p.add_argument("--topology", required=True, metavar="FILE", help="the switch topology")
    p.add_argument(
        "--format",
        choices=TOPOLOGY_FORMATS,
        help="topology format (detected from the content when omitted)",
    )
    p.add_argument(
        "--nodes", metavar="NODELIST", help="`kubectl get nodes -o json` output (HyperNode, labels)"
    )
    p.add_argument(
        "--label-keys",
        type=label_key_list,
        metavar="LEAF[,SPINE[,CORE]]",
        help="for --format labels: the node labels naming each tier's switch, tier 1 first (default: "
        "network.topology.nvidia.com/{leaf,spine,core}, else topology.ranktable.io/{leaf,spine,core})",
    )
    p.add_argument(
        "--tier-bandwidth",
        action="append",
        metavar="TIER=R:1|TIER=GBPS",
        help="uplinks of tier TIER's switches: oversubscribed R:1, or GBPS Gb/s (repeatable; over the "
        "file's figures; default: the file's, else 4:1 at tier 1, said in the report)",
    )


def _cost_arguments(p: argparse.ArgumentParser) -> None:
    """`plan`'s cost model: the message, a stable replan, the collective, HCCL's algorithm, the groups."""
    p.add_argument(
        "--message-bytes",
        type=message_size,
        default=1 << 30,
        metavar="N",
        help="all-reduce message size in bytes, or with a unit like 256MiB (default 1GiB)",
    )
    p.add_argument(
        "--previous",
        metavar="PLANNED.json",
        help="the planned table in force before this table changed (node replacement); used by --stable",
    )
    p.add_argument(
        "--stable",
        action="store_true",
        help="keep the surviving servers' ranks from --previous (as the platform does), place new servers "
        "in the freed slots, and report what a full replan would gain",
    )
    p.add_argument(
        "--operation",
        choices=("allreduce", "allgather", "reducescatter", "broadcast", "alltoall"),
        default="allreduce",
        help="the collective to estimate for the whole job (default allreduce)",
    )
    p.add_argument(
        "--algo",
        metavar="ALGO",
        help="force HCCL's algorithm as HCCL_ALGO does: a level-1 name (ring, H-D_R, NHR, NHR_V1, NB, AHC, "
        "pipeline, pairwise) or an HCCL_ALGO string such as 'level0:NA;level1:NHR' or "
        "'allreduce=level0:NA;level1:ring/alltoall=level0:NA;level1:pairwise' (default: HCCL's own choice)",
    )
    p.add_argument(
        "--parallel",
        metavar="SIZES",
        help="Megatron / MindSpeed parallel sizes, e.g. tp=8,cp=1,ep=1,pp=4 (dp derived): cost every "
        "group's collective and let the planner order servers for them",
    )
    p.add_argument(
        "--group-bytes",
        metavar="SIZES",
        help="bytes per collective call of each group kind, e.g. tp=64MiB,dp=2GiB,pp=16MiB "
        "(default: --message-bytes for every kind)",
    )
    p.add_argument(
        "--product",
        choices=("910", "A2", "A3"),
        help="NPU product for the in-server level and HCCL's defaults (default: from the rank table)",
    )


def _register_wait(sub: Any) -> None:
    p = sub.add_parser(
        "wait",
        help=HELP["wait"],
        description="Poll the rank table every second until its status is completed and it is valid; "
        f"progress goes to stderr. Exit 0 when ready, 1 if the completed table is invalid, {EXIT_TIMEOUT} "
        "on timeout.",
    )
    p.add_argument("file", metavar="FILE", help="the rank table, e.g. /user/config/jobstart_hccl.json")
    p.add_argument(
        "--timeout",
        type=seconds,
        default=900.0,
        metavar="SECONDS",
        help="give up after this long (default 900; 0 waits without limit)",
    )
    p.set_defaults(handler=cmd_wait)


def _register_route(sub: Any) -> None:
    p = sub.add_parser(
        "route",
        help=HELP["route"],
        description=f"Plan the rank table on the topology, write {ROUTEPLAN_NAME}, and print shell export "
        "lines for one server: RANK_TABLE_FILE, RANK_AFTER_ACC, NODE_RANK, RANK_SIZE and RANK_ID (its "
        'first rank). Use as: eval "$(ranktable route ...)".',
    )
    p.add_argument("--ranktable", required=True, metavar="FILE", help="the completed rank table")
    p.add_argument("--topology", required=True, metavar="FILE", help="the switch topology (format detected)")
    p.add_argument(
        "--server-id", required=True, metavar="ID", help="this server's server_id (or host_ip) in the table"
    )
    p.add_argument("--out", metavar="DIR", help=f"where to write {ROUTEPLAN_NAME} (default: beside FILE)")
    p.set_defaults(handler=cmd_route)


# -- validate ---------------------------------------------------------------------------------------------


def cmd_validate(args: argparse.Namespace) -> int:
    report = check_file(args.file)
    if report.status == INVALID:
        for problem in report.problems:
            print(str(problem))
        print(report.summary(), file=sys.stderr)
        return 1
    print(report.summary())
    for problem in report.problems:  # an initializing table may carry a stale list; say so, no failure
        print(f"note: {problem}")
    return 0


# -- plan -------------------------------------------------------------------------------------------------


def _provided(module: str, name: str, where: str) -> Any:
    """A function from another area of the package, looked up when used so each area stays optional."""
    found = getattr(importlib.import_module(module), name, None)
    if found is None:
        raise InputError(f"this build has no {module}.{name}", where=where, fix="install the full package")
    return found


def label_key_list(text: str) -> list[str]:
    """`--label-keys a,b,c`: non-empty, distinct label keys, tier 1 first."""
    keys = [k.strip() for k in text.split(",")]
    if not all(keys) or len(set(keys)) != len(keys):
        raise argparse.ArgumentTypeError(
            f"expected distinct comma-separated label keys, tier 1 first, got {text!r}"
        )
    return keys


def _load_topology(
    path: str,
    fmt: str | None = None,
    nodes: str | None = None,
    label_keys: list[str] | None = None,
    tier_bandwidth: list[str] | None = None,
) -> Any:
    load = _provided("ranktable.topology", "load_topology", path)
    from ranktable.topology.bandwidth import parse_tier_bandwidth

    settings = [parse_tier_bandwidth(text) for text in tier_bandwidth or []]
    return load(path, fmt, nodes, label_keys=label_keys, tier_bandwidth=settings)


def _load_previous(args: argparse.Namespace) -> RankTable | None:
    """The plan in force before the table changed; usage errors before any file is read."""
    from ranktable.cli import CliError
    from ranktable.plan import require_plannable

    if args.stable and not args.previous:
        raise CliError(
            "--stable needs --previous PLANNED.json",
            fix="pass the planned rank table that was in force before the table changed",
        )
    if args.previous and not args.stable:
        raise CliError("--previous is only used with --stable", fix="add --stable, or drop --previous")
    if not args.stable:
        return None
    previous = load_rank_table(args.previous)
    require_plannable(previous, f"--previous {args.previous}")
    return previous


def stable_summary(
    result: PlanResult, previous: RankTable, source: str, topology: Any, message_bytes: int
) -> dict[str, Any]:
    """Which servers kept their ranks, which were placed anew, and the stable plan vs a full replan."""
    from ranktable.choice.cost import compare

    replan = result.replan
    if replan is None:  # plan_routes always sets it in stable mode
        raise InputError("the planner returned no replan figures", where="--stable")
    before = {s.server_id for s in previous.servers}
    moved = set(replan.moved_servers)
    ids = [s.server_id for s in result.planned.servers]
    versus = compare(result.planned, replan.full_plan, topology, message_bytes=message_bytes)
    return {
        "previous": source,
        "kept": [sid for sid in ids if sid in before and sid not in moved],
        "moved": list(replan.moved_servers),
        "placed": list(replan.new_servers),
        "removed": sorted(before.difference(ids)),
        "stable_plan": {
            "crossings_per_tier": replan.crossings_per_tier,
            "allreduce_seconds": versus.given.allreduce_seconds,
        },
        "full_replan": {
            "crossings_per_tier": replan.full_crossings_per_tier,
            "allreduce_seconds": versus.planned.allreduce_seconds,
        },
        "full_replan_speedup": versus.speedup,
        "worthwhile": replan.worthwhile,
        "summary": replan.describe(),
        "tier_names": versus.tier_names,
    }


def _duration(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.3f} s"


def _listed(ids: list[str], limit: int = 8) -> str:
    if not ids:
        return "none"
    more = f" and {len(ids) - limit} more" if len(ids) > limit else ""
    return ", ".join(ids[:limit]) + more


def format_stable(summary: dict[str, Any]) -> str:
    """The stable-mode part of the text report."""
    stable, full = summary["stable_plan"], summary["full_replan"]
    lines = [
        f"stable mode against {summary['previous']}:",
        f"  kept their ranks: {len(summary['kept'])} server(s)",
        f"  replaced/placed: {_listed(summary['placed'])}",
    ]
    if summary["moved"]:
        lines.append(f"  could not keep their ranks: {_listed(summary['moved'])}")
    if summary["removed"]:
        lines.append(f"  gone since the previous plan: {_listed(summary['removed'])}")
    names = summary["tier_names"]
    rows = [
        (
            f"ring edges crossing tier {k} ({names[k - 1] if k - 1 < len(names) else f'tier {k}'})",
            str(a),
            str(b),
        )
        for k, (a, b) in enumerate(
            zip(stable["crossings_per_tier"], full["crossings_per_tier"], strict=True), 1
        )
    ]
    rows.append(
        (
            "estimated all-reduce time",
            _duration(stable["allreduce_seconds"]),
            _duration(full["allreduce_seconds"]),
        )
    )
    width = max(len(r[0]) for r in rows)
    cols = [
        max(len("stable"), *(len(r[1]) for r in rows)),
        max(len("full replan"), *(len(r[2]) for r in rows)),
    ]
    lines.append(f"  {'':<{width}}  {'stable':>{cols[0]}}  {'full replan':>{cols[1]}}")
    lines.extend(f"  {a:<{width}}  {b:>{cols[0]}}  {c:>{cols[1]}}" for a, b, c in rows)
    lines.append(f"  full replan gain: {summary['full_replan_speedup']:.2f}x; {summary['summary']}")
    return "\n".join(lines)


def collective_query(args: argparse.Namespace) -> Any:
    """The `plan` flags that shape the estimate (checked before any file is read)."""
    from ranktable.choice.cost import CollectiveQuery
    from ranktable.collectives.choice import parse_hccl_algo
    from ranktable.collectives.groups import parse_group_bytes, parse_parallel

    return CollectiveQuery(
        operation=args.operation,
        settings=parse_hccl_algo(args.algo, "--algo") if args.algo else None,
        source="--algo",
        parallel=parse_parallel(args.parallel) if args.parallel else None,
        group_bytes=parse_group_bytes(args.group_bytes) if args.group_bytes else {},
        product=args.product,
    )


def cmd_plan(args: argparse.Namespace) -> int:
    from ranktable.cli import CliError
    from ranktable.usecases.layout import plan_report

    query = collective_query(args)
    if args.group_bytes and not args.parallel:
        raise CliError("--group-bytes needs --parallel", fix="add --parallel tp=...,pp=...")
    previous = _load_previous(args)
    with gc_paused():  # tens of thousands of objects: one collector pass at the end, not one per step
        table = load_rank_table(args.ranktable)
        topology = _load_topology(
            args.topology, args.format, args.nodes, args.label_keys, args.tier_bandwidth
        )
        if query.parallel is not None:
            query.parallel.resolved(table.rank_size)
        report = plan_report(
            table,
            topology,
            message_bytes=args.message_bytes,
            query=query,
            previous=previous,
            stable=previous is not None,
        )
    result = report.result
    stable = (
        None
        if previous is None
        else stable_summary(result, previous, args.previous, topology, args.message_bytes)
    )
    notes: list[str] = []
    if args.output:
        written = write_rank_table(result.planned, args.output)
        notes.append(f"planned rank table written to {written}")
    if args.svg:
        Path(args.svg).write_text(report.svg(), encoding="utf-8")
        notes.append(f"layout picture written to {args.svg}")
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.json:
        data = report.comparison.to_json()
        data["warnings"] = result.warnings
        data["unknown_servers"] = result.unknown_servers
        if stable is not None:
            data["stable"] = stable
        print(json.dumps(data, indent=2))
        for note in notes:
            print(note, file=sys.stderr)
    else:
        print(report.text)
        if stable is not None:
            print(format_stable(stable))
        for note in notes:
            print(note)
    return 0


# -- wait -------------------------------------------------------------------------------------------------


def _probe(path: Path) -> tuple[str, ValidationReport | None]:
    """(what the file looks like now, the report once it parses)."""
    if not path.exists():
        return "file does not exist yet", None
    try:
        report = check_file(path)
    except (NotFoundError, OSError):
        return "file is not readable yet", None
    if report.table is None:
        if any(p.message.startswith(("not JSON", "not UTF-8")) for p in report.problems):
            return "file is not complete JSON yet", None
        return "file is not a rank table (the top level is not a JSON object)", None
    if report.status == INITIALIZING:
        return "status is initializing", report
    if report.status == VALID and report.completed:
        return "completed and valid", report
    if report.completed:
        return "completed but invalid", report
    return f"status is {report.table_status!r}", report


def cmd_wait(args: argparse.Namespace) -> int:
    path = Path(args.file)
    start = time.monotonic()
    limit = args.timeout
    last_state = ""
    last_print = start
    while True:
        state, report = _probe(path)
        elapsed = time.monotonic() - start
        if report is not None and report.ok:
            size = (
                f"{len(report.table.servers)} servers, {report.table.rank_size} ranks" if report.table else ""
            )
            print(f"{path}: completed and valid ({size}) after {elapsed:.0f}s", file=sys.stderr)
            return 0
        if report is not None and report.completed and report.status == INVALID:
            print(f"{path}: the table is completed but invalid:", file=sys.stderr)
            for problem in report.problems:
                print(f"  {problem}", file=sys.stderr)
            return 1
        now = time.monotonic()
        if state != last_state or now - last_print >= HEARTBEAT_SECONDS:
            print(f"waiting for {path}: {state} ({elapsed:.0f}s)", file=sys.stderr)
            last_state, last_print = state, now
        if limit and elapsed >= limit:
            print(
                f"{path}: timed out after {limit:g}s; last seen: {state} (check that every pod of the job "
                "is Running; the platform completes the table only then)",
                file=sys.stderr,
            )
            return EXIT_TIMEOUT
        pause = POLL_SECONDS if not limit else max(0.0, min(POLL_SECONDS, limit - elapsed))
        time.sleep(pause)


# -- route ------------------------------------------------------------------------------------------------


def find_server(table: RankTable, wanted: str, source: str) -> str:
    """The server_id for `wanted`, which may be a server_id, host_ip or container_ip."""
    if table.server(wanted) is not None:
        return wanted
    matches = [s.server_id for s in table.servers if wanted in (s.host_ip, s.container_ip)]
    if len(matches) == 1:
        return matches[0]
    if len(matches) > 1:
        raise InputError(
            f"{wanted!r} is the host/container IP of several servers: {', '.join(matches)}",
            where="--server-id",
            fix="pass the server_id itself",
        )
    known = ", ".join(s.server_id for s in table.servers[:5]) + (", ..." if len(table.servers) > 5 else "")
    raise NotFoundError(
        f"server {wanted!r} is not in {source} (servers: {known})",
        where="--server-id",
        fix="pass this pod's server_id as the table lists it",
    )


def cmd_route(args: argparse.Namespace) -> int:
    import os

    from ranktable.choice.routing import routing_plan

    table = load_rank_table(args.ranktable)
    server_id = find_server(table, args.server_id, args.ranktable)
    topology = _load_topology(args.topology)
    result = routing_plan(table, topology, os.environ)
    out_dir = Path(args.out) if args.out else Path(args.ranktable).resolve().parent
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        target = write_rank_table(result.planned, out_dir / ROUTEPLAN_NAME).resolve()
    except OSError as exc:
        raise InputError(
            f"cannot write {ROUTEPLAN_NAME}: {exc.strerror or exc}",
            where=str(out_dir),
            fix="pass --out DIR with a writable directory (the ConfigMap mount is read-only)",
        ) from None
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    node_rank = result.node_rank[server_id]
    values = {
        "RANK_TABLE_FILE": str(target),
        "RANK_AFTER_ACC": str(node_rank),
        "NODE_RANK": str(node_rank),
        "RANK_SIZE": str(result.planned.rank_size),
        "RANK_ID": str(result.first_rank(server_id)),
    }
    for name, value in values.items():
        print(f"export {name}={shlex.quote(value)}")
    return 0
