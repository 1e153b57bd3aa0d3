"""`ranktable launch`: the in-container launcher that composed jobs run (core dependencies only).

Waits for the platform to complete the rank table (``ranktable wait``), applies the route plan when
``ROUTE_PLAN=true`` and the job has 3+ nodes (``ranktable route``, its exports applied), finds this
server in the table, then starts the training script: MindSpore once per local NPU with
``RANK_TABLE_FILE``/``RANK_ID``/``DEVICE_ID``/``RANK_SIZE``, each child's output lines tagged ``[rankN]: ``
(as torchrun tags its own) so triage files a traceback under the rank that printed it; PyTorch through
torchrun with ``NODE_RANK`` from the plan (``RANK_AFTER_ACC``), ``--tee=3`` and
``TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE=[rank${rank}]: `` so its children's lines carry their global rank
too (torch < 2.2 ignores the template and tags ``[default<local rank>]:``, which triage maps back through
the pod's node rank). The training image needs only the minimal
install in docs/launcher.md: this module uses the standard library; ``wait`` and ``route`` use the pure core.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO, Any

LAUNCH_COMMAND = ["ranktable", "launch"]
DEFAULT_RANK_TABLE = "/user/config/jobstart_hccl.json"
TOR_FILE = "ranktable_tor.json"
ROUTING_MIN_NODES = 3
TORCHRUN_PREFIX_ENV = "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"
TORCHRUN_PREFIX = "[rank${rank}]: "
"""torchrun (>= 2.2) substitutes ``${rank}`` with each child's global rank: ``[rank11]: ...``."""


def launch_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    parser = parser or argparse.ArgumentParser(prog="ranktable launch")
    parser.add_argument("--framework", choices=("mindspore", "pytorch"), required=True)
    parser.add_argument("--job", required=True, help="Volcano job name (for MASTER_ADDR)")
    parser.add_argument("--task", required=True, help="Volcano task name (for MASTER_ADDR)")
    parser.add_argument("--nodes", type=int, required=True)
    parser.add_argument("--npus", type=int, required=True, help="NPUs per node")
    parser.add_argument("--master-port", type=int, default=29500)
    parser.add_argument(
        "--wait-timeout", type=float, default=1800.0, help="seconds to wait for the rank table"
    )
    parser.add_argument(
        "--python", help="interpreter for the training processes (default: the launcher's own)"
    )
    parser.add_argument("program", nargs=argparse.REMAINDER, help="-- SCRIPT [ARGS...]")
    return parser


@dataclass(frozen=True)
class LocalServer:
    """This pod's place in the (possibly planned) rank table."""

    server_id: str
    node_rank: int
    rank_size: int
    devices: tuple[tuple[int, int], ...]  # (device_id, rank_id)


def find_server(table: dict[str, Any], host_ip: str | None, pod_index: int | None) -> LocalServer:
    """Match this pod by host IP (server_id / host_ip), else by pod index (the table is in pod order)."""
    servers = [s for s in table.get("server_list", []) or [] if isinstance(s, dict)]
    rank_size = sum(len(s.get("device") or []) for s in servers)
    chosen = None
    if host_ip:
        chosen = next(
            (i for i, s in enumerate(servers) if host_ip in (s.get("server_id"), s.get("host_ip"))), None
        )
    if chosen is None and pod_index is not None and 0 <= pod_index < len(servers):
        chosen = pod_index
    if chosen is None:
        ids = ", ".join(str(s.get("server_id")) for s in servers)
        raise LookupError(f"this pod (host IP {host_ip}, index {pod_index}) is not in the rank table ({ids})")
    server = servers[chosen]
    devices = tuple(sorted((int(d["device_id"]), int(d["rank_id"])) for d in server.get("device") or []))
    return LocalServer(str(server.get("server_id")), chosen, rank_size, devices)


def parse_exports(text: str) -> dict[str, str]:
    """``export K=V`` lines (as ``ranktable route`` prints them) -> a dict, without running a shell."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        words = shlex.split(line)
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            key, value = words[1].split("=", 1)
            out[key] = value
    return out


def torchrun_argv(
    args: argparse.Namespace, node_rank: int, program: list[str], python: str = sys.executable
) -> list[str]:
    return [
        python,
        "-m",
        "torch.distributed.run",
        f"--nnodes={args.nodes}",
        f"--nproc_per_node={args.npus}",
        f"--node_rank={node_rank}",
        f"--master_addr={args.job}-{args.task}-0.{args.job}",
        f"--master_port={args.master_port}",
        "--tee=3",  # each child's stdout and stderr to the pod's log, every line tagged with its rank
        *program,
    ]


def _ranktable(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ranktable", *argv], text=True, stdout=subprocess.PIPE)


def _say(text: str) -> None:
    print(f"ranktable launch: {text}", file=sys.stderr, flush=True)


def _pod_index() -> int | None:
    for key in ("VC_TASK_INDEX", "VK_TASK_INDEX"):
        if os.environ.get(key, "").isdigit():
            return int(os.environ[key])
    name = os.environ.get("name") or os.environ.get("HOSTNAME", "")  # noqa: SIM112 - the guide's own env
    tail = name.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else None


def run(args: argparse.Namespace) -> int:
    program = list(args.program)
    if program and program[0] == "--":
        program = program[1:]
    if not program:
        _say("no training script given (expected: ranktable launch ... -- SCRIPT [ARGS])")
        return 2
    env = dict(os.environ)
    table_file = env.get("RANK_TABLE_FILE") or DEFAULT_RANK_TABLE
    env["RANK_TABLE_FILE"] = table_file
    waited = _ranktable("wait", table_file, "--timeout", str(args.wait_timeout))
    if waited.returncode != 0:
        _say(f"rank table {table_file} did not become usable; not starting training")
        return waited.returncode
    table = json.loads(Path(table_file).read_text())
    server = find_server(table, env.get("ip"), _pod_index())
    if env.get("ROUTE_PLAN", "").lower() == "true":
        if args.nodes < ROUTING_MIN_NODES:
            _say(f"routing skipped: the job has {args.nodes} node(s); routing needs {ROUTING_MIN_NODES}+")
        else:
            tor = str(Path(table_file).with_name(TOR_FILE))
            routed = _ranktable(
                "route", "--ranktable", table_file, "--topology", tor, "--server-id", server.server_id
            )
            if routed.returncode != 0:
                _say("routing failed; not starting training")
                return routed.returncode
            exports = parse_exports(routed.stdout)
            env.update(exports)
            _say(
                f"route plan applied: NODE_RANK={exports.get('NODE_RANK')} ({exports.get('RANK_TABLE_FILE')})"
            )
            table_file = env["RANK_TABLE_FILE"]
            server = find_server(json.loads(Path(table_file).read_text()), server.server_id, None)
    python = args.python or sys.executable
    node_rank = int(env.get("RANK_AFTER_ACC", server.node_rank))
    env["NODE_RANK"] = str(node_rank)
    if args.framework == "pytorch":
        env.setdefault(TORCHRUN_PREFIX_ENV, TORCHRUN_PREFIX)  # a template the user set is theirs
        return _supervise([(torchrun_argv(args, node_rank, program, python), env)])
    children = []
    for device_id, rank_id in server.devices:
        child_env = dict(env, RANK_ID=str(rank_id), DEVICE_ID=str(device_id), RANK_SIZE=str(server.rank_size))
        children.append(([python, *program], child_env))
    _say(f"server {server.server_id}: {len(children)} process(es), ranks {[r for _, r in server.devices]}")
    return _supervise(children, tags=[rank for _, rank in server.devices])


_WRITE = threading.Lock()


def _relay(source: IO[bytes], sink: IO[bytes], tag: bytes) -> None:
    """Copy a child's output line by line, each prefixed with its rank tag (whole lines, so the ranks'
    lines never interleave mid-line)."""
    for line in iter(source.readline, b""):
        with _WRITE:
            sink.write(tag + line if line.endswith(b"\n") else tag + line + b"\n")
            sink.flush()
    source.close()


def _supervise(commands: list[tuple[list[str], dict[str, str]]], tags: list[int] | None = None) -> int:
    """Start all processes (their output tagged ``[rankN]: `` when `tags` gives each one's rank), forward
    SIGTERM/SIGINT, return the first non-zero exit code (else 0)."""
    pipe = subprocess.PIPE if tags else None
    procs = [subprocess.Popen(argv, env=env, stdout=pipe, stderr=pipe) for argv, env in commands]
    relays = []
    for proc, rank in zip(procs, tags or [], strict=False):
        tag = f"[rank{rank}]: ".encode()
        for source, sink in ((proc.stdout, sys.stdout.buffer), (proc.stderr, sys.stderr.buffer)):
            if source is not None:
                relay = threading.Thread(target=_relay, args=(source, sink, tag), daemon=True)
                relay.start()
                relays.append(relay)

    def forward(signum: int, _frame: FrameType | None) -> None:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    failed = 0
    while any(proc.poll() is None for proc in procs):
        code = next((p.returncode for p in procs if p.returncode not in (None, 0)), 0)
        if code and not failed:
            failed = code  # one rank died: the others would hang in collectives, so stop them
            forward(signal.SIGTERM, None)
        alive = [p for p in procs if p.poll() is None]
        if alive:
            with contextlib.suppress(subprocess.TimeoutExpired):
                alive[0].wait(timeout=0.5)
    for relay in relays:
        relay.join()
    return failed or next((p.returncode for p in procs if p.returncode != 0), 0)


def main(argv: list[str] | None = None) -> int:
    return run(launch_parser().parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
