"""The job spec as command-line flags: one argparse definition shared by `ranktable job` and `%ranktable`.

Pure argparse over the JobSpec fields, so interfaces can share it without importing each other.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import typing
from dataclasses import replace
from typing import Any

from ranktable.compose.argv import python_script, shell_words
from ranktable.compose.field_info import FieldInfo, info_of
from ranktable.compose.spec import EntryPoint, JobSpec
from ranktable.compose.validate import Issue
from ranktable.errors import InputError
from ranktable.limits import decode_utf8, load_json, read_stream, read_text


def add_spec_flags(p: argparse.ArgumentParser, required: bool, spec_class: type[JobSpec] = JobSpec) -> None:
    """One flag per JobSpec field, from its field info (help, choices, metavar); records (entry, secrets,
    volumes, parallel sizes) get the few hand-made flags below. `required` adds `-n/--namespace` (commands
    without cluster flags)."""
    p.add_argument(
        "--spec", help="a JobSpec as JSON (file, or - for stdin); flags given as well override its fields"
    )
    hints = typing.get_type_hints(spec_class)
    for f in dataclasses.fields(spec_class):
        about = info_of(f)
        if about.flag and _shape(hints[f.name]) and (f.name != "namespace" or required):
            _add_field_flag(p, f.name, hints[f.name], about)
    p.add_argument("--script", help=_help(info_of(_field(spec_class, "entry"))))
    p.add_argument("--script-args", default=None, help="arguments for --script (split like a shell)")
    p.add_argument("--master-port", type=int)
    p.add_argument("--python", help="interpreter for --script (default: the launcher's python)")
    p.add_argument(
        "--secret-env",
        action="append",
        default=[],
        metavar="NAME=SECRET:KEY",
        help=_help(info_of(_field(spec_class, "secret_env"))),
    )
    p.add_argument("--hostpath", action="append", default=[], metavar="NAME:HOST_PATH:MOUNT_PATH")
    p.add_argument("--pvc", action="append", default=[], metavar="NAME:CLAIM:MOUNT_PATH")
    p.add_argument("--nfs", action="append", default=[], metavar="NAME:SERVER:PATH:MOUNT_PATH")
    p.add_argument(
        "--parallel", metavar="tp=N,cp=N,ep=N,pp=N", help=_help(info_of(_field(spec_class, "parallel")))
    )


#: argparse settings per field shape (the records have hand-made flags)
_SHAPES: dict[Any, str] = {str: "text", int: "number", bool: "switch", str | None: "text"}


def _shape(tp: Any) -> str:
    """How a field is given on the command line: text, number, switch, list (repeated or one line) or
    pairs (KEY=VALUE, repeated); "" for records."""
    if tp in _SHAPES:
        return _SHAPES[tp]
    if tp == list[str]:
        return "list"
    if tp == dict[str, str]:
        return "pairs"
    return ""


def _field(spec_class: type[JobSpec], name: str) -> dataclasses.Field[Any]:
    return next(f for f in dataclasses.fields(spec_class) if f.name == name)


def _help(about: FieldInfo) -> str:
    line = "one line, split like a shell; not run by a shell" if about.flag_style == "line" else ""
    return "; ".join(part for part in (about.help or about.title, line) if part)


def _add_field_flag(p: argparse.ArgumentParser, name: str, tp: Any, about: FieldInfo) -> None:
    shape = _shape(tp)
    names = ["-n", about.flag] if name == "namespace" else [about.flag]
    dest = "namespace" if name == "namespace" else f"spec_{name}"
    kwargs: dict[str, Any] = {"dest": dest, "help": _help(about), "default": None}
    if shape != "switch" and not about.choices:
        kwargs["metavar"] = about.metavar or about.flag.lstrip("-").upper().replace("-", "_")
    if about.choices:
        kwargs["choices"] = [c for c in about.choices if c]
    if shape == "number":
        kwargs["type"] = int
    elif shape == "switch":
        kwargs["action"] = argparse.BooleanOptionalAction
    elif shape == "pairs" or (shape == "list" and about.flag_style != "line"):
        kwargs.update(action="append", default=[])
    p.add_argument(*names, **kwargs)


def _field_values(args: argparse.Namespace, spec_class: type[JobSpec], data: dict[str, Any]) -> None:
    """The generated flags' values into `data` (JSON-like, as `from_dict` reads it): a given scalar
    replaces the --spec file's value, repeated flags add to it."""
    hints = typing.get_type_hints(spec_class)
    for f in dataclasses.fields(spec_class):
        about, shape = info_of(f), _shape(hints[f.name])
        value = getattr(args, "namespace" if f.name == "namespace" else f"spec_{f.name}", None)
        if not about.flag or not shape or value is None or value == []:
            continue
        if shape == "pairs":
            data[f.name] = {**(data.get(f.name) or {}), **_pairs(value, about.flag)}
        elif shape == "list" and about.flag_style == "line":
            data[f.name] = shell_words(value, about.flag)
        elif shape == "list":
            data[f.name] = [*(data.get(f.name) or []), *value]
        else:
            data[f.name] = value


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


def spec_from_args(args: argparse.Namespace, spec_class: type[JobSpec] = JobSpec) -> JobSpec:
    """A JobSpec from --spec JSON plus flags (flags win), checked field by field."""
    data: dict[str, Any] = {}
    if args.spec:
        data = load_json(read_input(args.spec, "job spec"), args.spec, fix="a JobSpec is one JSON object")
        if not isinstance(data, dict):
            raise InputError("a job spec must be a JSON object", where=args.spec)
    _field_values(args, spec_class, data)
    if args.script is not None:
        data["entry"] = {"script": args.script, "args": shell_words(args.script_args or "", "--script-args")}
        if args.master_port is not None:
            data["entry"]["master_port"] = args.master_port
        if args.python:
            data["entry"]["python"] = args.python
    if args.secret_env:
        refs = {}
        for name, ref in _pairs(args.secret_env, "--secret-env").items():
            secret, found, key = ref.partition(":")
            if not found:
                raise InputError(f"expected NAME=SECRET:KEY for {name}", where="--secret-env")
            refs[name] = {"secret": secret, "key": key}
        data["secret_env"] = {**(data.get("secret_env") or {}), **refs}
    if args.parallel:
        sizes = _pairs([part for part in args.parallel.split(",") if part.strip()], "--parallel")
        data["parallel"] = {k.strip(): _int_flag(v, f"--parallel {k.strip()}") for k, v in sizes.items()}
    vols = _volumes(args)
    if vols:
        data["volumes"] = [*(data.get("volumes") or []), *vols]
    if not data.get("name") or not data.get("image"):
        raise InputError("a job needs --name and --image (or a --spec file with both)", where="flags")
    return spec_class.from_dict(data)


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
