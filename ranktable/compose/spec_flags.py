"""The job spec as command-line flags: one argparse definition shared by `ranktable job` and `%ranktable`.

Pure argparse over the JobSpec fields, so interfaces can share it without importing each other.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from typing import Any

from ranktable.compose.spec import JobSpec
from ranktable.errors import InputError
from ranktable.limits import brief, decode_utf8, load_json, read_stream, read_text


def add_spec_flags(p: argparse.ArgumentParser, required: bool) -> None:
    """The JobSpec fields as flags; `required` adds `-n/--namespace` (commands without cluster flags)."""
    p.add_argument(
        "--spec", help="a JobSpec as JSON (file, or - for stdin); flags given as well override its fields"
    )
    p.add_argument("--name", required=False)
    p.add_argument("--image")
    if required:
        p.add_argument("-n", "--namespace", default=None)
    p.add_argument("--nodes", type=int)
    p.add_argument("--npus", type=int, help="NPUs per node/pod (8 for multi-node)")
    p.add_argument("--framework", choices=("mindspore", "pytorch"))
    p.add_argument(
        "--command",
        dest="container_command",
        help="container command line (split like a shell; not run by a shell)",
    )
    p.add_argument("--script", help="training entry point run by the framework launcher")
    p.add_argument("--script-args", default=None, help="arguments for --script (split like a shell)")
    p.add_argument("--master-port", type=int)
    p.add_argument("--python", help="interpreter for --script (default: the launcher's python)")
    p.add_argument("--cpu")
    p.add_argument("--memory")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--secret-env", action="append", default=[], metavar="NAME=SECRET:KEY")
    p.add_argument("--hostpath", action="append", default=[], metavar="NAME:HOST_PATH:MOUNT_PATH")
    p.add_argument("--pvc", action="append", default=[], metavar="NAME:CLAIM:MOUNT_PATH")
    p.add_argument("--nfs", action="append", default=[], metavar="NAME:SERVER:PATH:MOUNT_PATH")
    p.add_argument("--queue")
    p.add_argument("--max-retry", type=int)
    p.add_argument("--label", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--node-selector", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--routing", action=argparse.BooleanOptionalAction, default=None)
    p.add_argument("--rank-table-version", choices=("v1", "v2"))
    p.add_argument("--flavour")
    p.add_argument("--task-name")
    p.add_argument(
        "--metric-pattern",
        action="append",
        default=[],
        metavar="REGEX",
        help="a metric regex with named groups (step, loss, step_time_s, lr, ...) for `job metrics`",
    )


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


def split_words(value: str, flag: str) -> list[str]:
    """A flag's value split like a shell does (not run by one); an unterminated quote names the flag."""
    try:
        return shlex.split(value)
    except ValueError as exc:
        raise InputError(
            f"cannot split {brief(value)} into words: {str(exc).lower()}",
            where=flag,
            fix="close the quote, or escape it with a backslash",
        ) from None


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
    }
    data.update({k: v for k, v in simple.items() if v is not None})
    if args.container_command is not None:
        data["command"] = split_words(args.container_command, "--command")
    if args.script is not None:
        data["entry"] = {"script": args.script, "args": split_words(args.script_args or "", "--script-args")}
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
    vols = _volumes(args)
    if vols:
        data["volumes"] = [*(data.get("volumes") or []), *vols]
    if not data.get("name") or not data.get("image"):
        raise InputError("a job needs --name and --image (or a --spec file with both)", where="flags")
    return JobSpec.from_dict(data)
