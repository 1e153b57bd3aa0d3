"""The job spec as command-line flags: one argparse definition shared by `ranktable job` and `%ranktable`.

Pure argparse over the JobSpec fields, so interfaces can share it without importing each other.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from ranktable.compose.argv import python_script, shell_words
from ranktable.compose.spec import EntryPoint, JobSpec
from ranktable.compose.validate import Issue
from ranktable.errors import InputError
from ranktable.limits import decode_utf8, load_json, read_stream, read_text


def add_spec_flags(p: argparse.ArgumentParser, required: bool) -> None:
    """One flag (a few for nested fields) per JobSpec field, help and choices from its JSON Schema;
    `required` adds `-n/--namespace` (commands without cluster flags)."""
    from ranktable.compose.spec_schema import job_spec_schema

    props = job_spec_schema()["properties"]

    def text(field: str, extra: str = "") -> str:
        prop = props[field]
        return "; ".join(part for part in (prop.get("description") or prop["title"], extra) if part)

    p.add_argument(
        "--spec", help="a JobSpec as JSON (file, or - for stdin); flags given as well override its fields"
    )
    p.add_argument("--name", required=False, help=text("name"))
    p.add_argument("--image", help=text("image"))
    if required:
        p.add_argument("-n", "--namespace", default=None, help=text("namespace"))
    p.add_argument("--nodes", type=int, help=text("nodes"))
    p.add_argument("--npus", type=int, help=text("npus_per_node", "8 for multi-node"))
    p.add_argument("--framework", choices=props["framework"]["enum"], help=text("framework"))
    p.add_argument(
        "--command",
        dest="container_command",
        help=text("command", "a command line, split like a shell; not run by a shell"),
    )
    p.add_argument("--script", help=text("entry"))
    p.add_argument("--script-args", default=None, help="arguments for --script (split like a shell)")
    p.add_argument("--master-port", type=int)
    p.add_argument("--python", help="interpreter for --script (default: the launcher's python)")
    p.add_argument("--cpu", help=text("cpu"))
    p.add_argument("--memory", help=text("memory"))
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help=text("env"))
    p.add_argument(
        "--secret-env", action="append", default=[], metavar="NAME=SECRET:KEY", help=text("secret_env")
    )
    p.add_argument("--hostpath", action="append", default=[], metavar="NAME:HOST_PATH:MOUNT_PATH")
    p.add_argument("--pvc", action="append", default=[], metavar="NAME:CLAIM:MOUNT_PATH")
    p.add_argument("--nfs", action="append", default=[], metavar="NAME:SERVER:PATH:MOUNT_PATH")
    p.add_argument("--queue", help=text("queue"))
    p.add_argument("--max-retry", type=int, help=text("max_retry"))
    p.add_argument("--label", action="append", default=[], metavar="KEY=VALUE", help=text("labels"))
    p.add_argument(
        "--node-selector", action="append", default=[], metavar="KEY=VALUE", help=text("node_selector")
    )
    p.add_argument("--routing", action=argparse.BooleanOptionalAction, default=None, help=text("routing"))
    p.add_argument(
        "--rank-table-version", choices=props["rank_table_version"]["enum"], help=text("rank_table_version")
    )
    p.add_argument("--flavour", help=text("flavour"))
    p.add_argument("--task-name", help=text("task_name"))
    p.add_argument("--hccl-algo", help=text("hccl_algo"))
    p.add_argument("--on-fault", choices=[c for c in props["on_fault"]["enum"] if c], help=text("on_fault"))
    p.add_argument("--resume-args", metavar="TEMPLATE", help=text("resume_args"))
    p.add_argument("--avoid-node", action="append", default=[], metavar="NODE", help=text("avoid_nodes"))
    p.add_argument("--parallel", metavar="tp=N,cp=N,ep=N,pp=N", help=text("parallel"))
    p.add_argument(
        "--metric-pattern",
        action="append",
        default=[],
        metavar="REGEX",
        help=text("metric_patterns"),
    )


def _int_flag(value: str, flag: str) -> int:
    if not value.strip().isdigit():
        raise InputError(f"expected a whole number, got {value!r}", where=flag)
    return int(value)


def _pairs(items: list[str], flag: str, sep: str = "=") -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, found, value = item.partition(sep)
        if not found or not key:
            raise InputError(f"expected KEY{sep}VALUE, got {item!r}", where=flag)
        out[key] = value
    return out


def _volumes(args: argparse.Namespace) -> list[dict[str, Any]]:
    vols: list[dict[str, Any]] = []
    for flag, kind, fields in (
        ("--hostpath", "hostPath", ("name", "path", "mount_path")),
        ("--pvc", "pvc", ("name", "claim", "mount_path")),
        ("--nfs", "nfs", ("name", "server", "path", "mount_path")),
    ):
        for item in getattr(args, flag.strip("-")):
            parts = item.split(":")
            if len(parts) != len(fields):
                raise InputError(f"expected {':'.join(f.upper() for f in fields)}, got {item!r}", where=flag)
            vols.append({"kind": kind, **dict(zip(fields, parts, strict=True))})
    return vols


def read_input(path: str, what: str) -> str:
    """A UTF-8 input file, or stdin for `-`, at most `limits.MAX_FILE_BYTES` (the error names the limit)."""
    if path != "-":
        return read_text(path, what=what)
    return decode_utf8(read_stream(sys.stdin.buffer, "stdin", what=what), "stdin", what=what)


def spec_from_args(args: argparse.Namespace) -> JobSpec:
    """A JobSpec from --spec JSON plus flags (flags win), checked field by field."""
    data: dict[str, Any] = {}
    if args.spec:
        data = load_json(read_input(args.spec, "job spec"), args.spec, fix="a JobSpec is one JSON object")
        if not isinstance(data, dict):
            raise InputError("a job spec must be a JSON object", where=args.spec)
    simple = {
        "name": args.name,
        "image": args.image,
        "namespace": getattr(args, "namespace", None),
        "nodes": args.nodes,
        "npus_per_node": args.npus,
        "framework": args.framework,
        "cpu": args.cpu,
        "memory": args.memory,
        "queue": args.queue,
        "max_retry": args.max_retry,
        "routing": args.routing,
        "rank_table_version": args.rank_table_version,
        "flavour": args.flavour,
        "task_name": args.task_name,
        "hccl_algo": args.hccl_algo,
        "on_fault": getattr(args, "on_fault", None),
        "resume_args": getattr(args, "resume_args", None),
    }
    data.update({k: v for k, v in simple.items() if v is not None})
    if args.container_command is not None:
        data["command"] = shell_words(args.container_command, "--command")
    if args.script is not None:
        data["entry"] = {"script": args.script, "args": shell_words(args.script_args or "", "--script-args")}
        if args.master_port is not None:
            data["entry"]["master_port"] = args.master_port
        if args.python:
            data["entry"]["python"] = args.python
    for key, flag in (("env", "--env"), ("labels", "--label"), ("node_selector", "--node-selector")):
        items = getattr(args, {"env": "env", "labels": "label", "node_selector": "node_selector"}[key])
        if items:
            data[key] = {**(data.get(key) or {}), **_pairs(items, flag)}
    if args.secret_env:
        refs = {}
        for name, ref in _pairs(args.secret_env, "--secret-env").items():
            secret, found, key = ref.partition(":")
            if not found:
                raise InputError(f"expected NAME=SECRET:KEY for {name}", where="--secret-env")
            refs[name] = {"secret": secret, "key": key}
        data["secret_env"] = {**(data.get("secret_env") or {}), **refs}
    if getattr(args, "metric_pattern", None):
        data["metric_patterns"] = [*(data.get("metric_patterns") or []), *args.metric_pattern]
    if getattr(args, "avoid_node", None):
        data["avoid_nodes"] = [*(data.get("avoid_nodes") or []), *args.avoid_node]
    if args.parallel:
        sizes = _pairs([part for part in args.parallel.split(",") if part.strip()], "--parallel")
        data["parallel"] = {k.strip(): _int_flag(v, f"--parallel {k.strip()}") for k, v in sizes.items()}
    vols = _volumes(args)
    if vols:
        data["volumes"] = [*(data.get("volumes") or []), *vols]
    if not data.get("name") or not data.get("image"):
        raise InputError("a job needs --name and --image (or a --spec file with both)", where="flags")
    return JobSpec.from_dict(data)


SHELL = ["/bin/bash", "-c"]


def with_cell(spec: JobSpec, cell: str) -> tuple[JobSpec, list[Issue]]:
    """`%%ranktable job`'s cell as the job's training command: ``python SCRIPT ARGS`` (one command) runs
    through the in-container launcher like every other job (rank table, RANK_ID, DEVICE_ID per NPU);
    anything else runs with bash once per pod, and a warning says so."""
    lines = [line for line in cell.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    found = python_script(shell_words(cell, "cell", comments=True)) if len(lines) == 1 else None
    if found is not None:
        python, script, args = found
        interpreter = "" if python == "python" else python
        entry = EntryPoint(script, args, python=interpreter)
        if spec.entry is not None:
            entry = replace(entry, master_port=spec.entry.master_port)
        return replace(spec, entry=entry, command=[]), []
    warning = Issue(
        "cell",
        "warning",
        "the cell runs with bash once per pod, without the launcher: its processes get no RANK_ID, "
        "DEVICE_ID or RANK_TABLE_FILE",
        "start the training script as one command, `python train.py ARGS`, to run it through the launcher",
    )
    return replace(spec, command=[*SHELL, cell.strip()]), [warning]
