"""The size, depth and count limit of every input, and bounded readers whose errors name the limit.

Untrusted files and request bodies go through these readers, so a huge, endless (`/dev/zero`), deeply
nested, alias-bombed or non-UTF-8 input is one clear `InputError` (where, what, which limit, how to fix)
instead of a traceback, a MemoryError or an error line the size of the expanded document.
docs/security.md lists the limits.
"""

from __future__ import annotations

import json
import os
import reprlib
import sys
import zlib
from typing import Any, BinaryIO

from ranktable.errors import InputError, MissingFileError

MiB = 1024 * 1024

MAX_FILE_BYTES = 256 * MiB
"""A rank table, topology, job spec or manifest file (a 65,536-server rank table is ~40 MB)."""
MAX_DECOMPRESSED_BYTES = 256 * MiB
"""The JSON inside a gzip tor file, after decompression (a gzip bomb stops here)."""
MAX_NESTING = 100
"""Levels of nesting in a JSON/YAML document (real ones need fewer than 20)."""
MAX_YAML_NODES = 5_000_000
"""Values in a YAML document counted with every alias expanded (an alias bomb stops here)."""
MAX_INT_DIGITS = sys.int_info.default_max_str_digits
"""Digits in one integer (Python's own conversion limit, 4300)."""
MAX_SERVERS = 65_536
"""Servers in one topology or generated pool."""
MAX_DEVICES_PER_SERVER = 16
"""NPUs of one server (`device_id` is 0..15 on the platform)."""
MAX_NODES = 65_536
"""Nodes (pods) of one job."""
MAX_COUNT = 1 << 20
"""Any other whole number in a job spec (retries, NPUs per pod, parallel sizes)."""
MAX_PATH = 4096
"""Characters in one path (PATH_MAX): a profile's shared folder, a volume's mount path."""
MAX_LOG_FILES = 4096
"""Log files read by one `diagnose --logs` / `metrics --logs` (a 4,096-rank job's per-rank logs)."""
MAX_LOG_BYTES = 2 * 1024 * MiB
"""Bytes of logs read by one `--logs` call, all files together (they are held in memory)."""
MAX_UPLOAD_BYTES = 256 * MiB
"""Bytes of logs sent to `POST /ranktable/logs` in one request (the server holds them in memory)."""
KEEP_LOGS_S = 60.0
MAX_SUBSCRIPTIONS_PER_SOCKET = 256
"""Active subscriptions (logs, jobs, uploads, operations) on one stream websocket."""
MAX_SUBSCRIPTIONS_PER_USER = 1024
"""Active subscriptions of one user across every websocket of the server."""
"""Seconds a stop or resubmit waits at most for the run's logs to reach its archive before the pods go."""


def size_text(limit: int) -> str:
    return f"{limit // MiB} MiB" if limit >= MiB and limit % MiB == 0 else f"{limit:,} bytes"


def amount_text(size: int) -> str:
    """A measured size for people: ``3.5 KiB``, ``12.0 MiB`` (a run's 3,599 bytes are not "0.0 MiB")."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", 1 << 10)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


# -- files ------------------------------------------------------------------------------------------------
def read_bytes(path: str | os.PathLike[str], *, limit: int = MAX_FILE_BYTES, what: str = "file") -> bytes:
    """At most `limit` bytes of a file (reads one byte more to tell an over-long or endless input)."""
    where = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            return read_stream(handle, where, limit=limit, what=what)
    except FileNotFoundError:
        raise MissingFileError(f"{what} not found", where=where, fix="check the path") from None
    except IsADirectoryError:
        raise InputError(f"is a directory, not a {what}", where=where, fix="give a file") from None
    except OSError as err:
        raise InputError(f"cannot read the {what}: {err.strerror or err}", where=where) from None


def read_stream(stream: BinaryIO, where: str, *, limit: int = MAX_FILE_BYTES, what: str = "file") -> bytes:
    """At most `limit` bytes of an open stream (a file, stdin); more is an error naming the limit."""
    data = stream.read(_first_read(stream, limit))
    if len(data) <= limit:  # a stream that is not a regular file, or a file that grew: read on to the limit
        rest = stream.read(limit + 1 - len(data))
        data = data + rest if rest else data
    if len(data) > limit:
        raise InputError(
            f"is larger than the {size_text(limit)} limit for a {what}",
            where=where,
            fix="give the right input; this one is too big, or endless like /dev/zero",
        )
    return data


def _first_read(stream: BinaryIO, limit: int) -> int:
    """A regular file's size plus one (a buffer of `limit` bytes would be allocated and paged in for
    nothing: 4x the read time of an 11 MB rank table); `limit + 1` for anything else."""
    try:
        size = os.fstat(stream.fileno()).st_size
    except (OSError, AttributeError, ValueError):  # io.BytesIO, a closed or fd-less stream
        return limit + 1
    return min(size, limit) + 1 if size > 0 else limit + 1


def decode_utf8(data: bytes, where: str | None, *, what: str = "file") -> str:
    """UTF-8 text (a leading BOM is dropped); the error names the first bad byte's offset."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(
            f"is not UTF-8 text (byte {err.start} is 0x{data[err.start]:02x})",
            where=where,
            fix=f"save the {what} as UTF-8",
        ) from None


def read_text(path: str | os.PathLike[str], *, limit: int = MAX_FILE_BYTES, what: str = "file") -> str:
    """A UTF-8 text file of at most `limit` bytes."""
    return decode_utf8(read_bytes(path, limit=limit, what=what), os.fspath(path), what=what)


def gunzip(data: bytes, where: str | None, *, limit: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """gzip data decompressed to at most `limit` bytes (a small bomb cannot fill the memory)."""
    inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error as err:
        raise InputError(f"cannot decompress gzip data: {err}", where=where) from None
    if len(out) > limit:
        raise InputError(
            f"decompresses to more than the {size_text(limit)} limit",
            where=where,
            fix="this is not a tor file the platform writes",
        )
    if not inflater.eof:
        raise InputError("cannot decompress gzip data: the data is truncated", where=where)
    return out


# -- documents ---------------------------------------------------------------------------------------------
def load_json(
    text: str | bytes,
    where: str | None,
    *,
    fix: str | None = None,
    line_in_where: bool = False,
    nesting: bool = True,
) -> Any:
    """Parse JSON; syntax, nesting and integer-size problems are an `InputError` naming line or limit.

    `line_in_where` writes a syntax error's place as `file:line` (the topology loaders' convention);
    `nesting=False` leaves `check_nesting` to a caller that knows part of the document's shape.
    """
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        at = f"{where}:{err.lineno}" if where and line_in_where else where
        raise InputError(
            f"not valid JSON: {err.msg} (line {err.lineno}, column {err.colno})", where=at, fix=fix
        ) from None
    except RecursionError:
        raise _too_deep(where) from None
    except ValueError as err:  # an integer longer than MAX_INT_DIGITS, or bytes that are not UTF-8
        raise InputError(f"not valid JSON: {_value_error(err)}", where=where, fix=fix) from None
    if nesting:
        check_nesting(doc, where)
    return doc


def load_yaml_all(text: str, where: str | None, *, line_in_where: bool = False) -> list[Any]:
    """Every document of a YAML stream, refusing alias bombs, self-references and deep nesting."""
    if len(text) < MAX_YAML_NODES // 2:  # plain block YAML (what tools write): read without PyYAML
        from ranktable.block_yaml import load_block_yaml

        simple = load_block_yaml(text, MAX_NESTING - 1)  # -1: a `{}` value is one level more
        if simple is not None:
            return simple
    import yaml  # here: commands that read no YAML (plan, validate) start faster

    loader_class: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        docs = list(yaml.load_all(text, Loader=loader_class))
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        if "nesting depth" in problem:  # libyaml's own (higher) limit
            raise _too_deep(where) from None
        if mark is not None and where and line_in_where:
            where = f"{where}:{mark.line + 1}"
        elif mark is not None:
            problem = f"line {mark.line + 1}: {problem}"
        raise InputError(
            f"not valid YAML: {problem}", where=where, fix="check indentation and quoting"
        ) from None
    except RecursionError:
        raise _too_deep(where) from None
    except ValueError as err:  # an integer longer than MAX_INT_DIGITS
        raise InputError(f"not valid YAML: {_value_error(err)}", where=where) from None
    if "*" in text or len(text) >= MAX_YAML_NODES // 2:
        for doc in docs:
            check_expanded(doc, where)
    else:  # no alias, so nothing is shared and a value costs >= 2 characters: only the depth can be wrong
        for doc in docs:  # (walking containers only: 2-4x faster on a 65,536-rank HyperNode file)
            check_nesting(doc, where)
    return docs


def check_nesting(doc: Any, where: str | None, limit: int = MAX_NESTING) -> None:
    """Refuse a document nested deeper than `limit` (walks only the containers, iteratively)."""
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > limit:
            raise _too_deep(where, limit)
        children = value.values() if type(value) is dict else value if type(value) is list else ()
        for child in children:
            if type(child) is dict or type(child) is list:
                stack.append((child, depth + 1))


def check_expanded(
    doc: Any, where: str | None, *, nodes: int = MAX_YAML_NODES, depth: int = MAX_NESTING
) -> None:
    """Refuse a parsed YAML document that is too big once its aliases are expanded, too deep, or cyclic.

    YAML aliases share one object, so the parsed value is small; anything that walks or prints it
    (error messages, JSON output) expands it. Sizes are memoised per shared object, so this is linear
    in the distinct values.
    """
    sizes: dict[int, tuple[int, int]] = {}  # id -> (expanded values, depth)
    active: set[int] = set()
    stack: list[tuple[Any, bool]] = [(doc, False)]
    while stack:
        value, done = stack.pop()
        if type(value) is not dict and type(value) is not list:
            continue
        key = id(value)
        children = list(value.values()) if type(value) is dict else value
        if not done:
            if key in sizes:
                continue
            if key in active:
                raise InputError(
                    "a YAML alias refers to a value that contains it (an endless document)",
                    where=where,
                    fix="remove the self-referencing alias",
                )
            active.add(key)
            stack.append((value, True))
            stack.extend((child, False) for child in children)
            continue
        active.discard(key)
        count, levels = 1, 1
        for child in children:
            if type(child) is dict or type(child) is list:
                child_count, child_levels = sizes[id(child)]
                count += child_count
                levels = max(levels, child_levels + 1)
            else:
                count += 1
        if count > nodes:
            raise InputError(
                f"expands to more than {nodes:,} values (YAML aliases are counted each time they are used)",
                where=where,
                fix="write the document without alias bombs",
            )
        if levels > depth:
            raise _too_deep(where, depth)
        sizes[key] = (count, levels)


def _too_deep(where: str | None, limit: int = MAX_NESTING) -> InputError:
    return InputError(
        f"is nested deeper than the limit of {limit} levels",
        where=where,
        fix="real rank tables, topologies and job specs nest a few levels; check the file",
    )


def _value_error(err: ValueError) -> str:
    if "digits" in str(err):
        return f"an integer has more than {MAX_INT_DIGITS} digits (the limit)"
    return str(err).splitlines()[0][:200]


# -- error messages ------------------------------------------------------------------------------------------
_BRIEF = reprlib.Repr()
_BRIEF.maxstring = _BRIEF.maxother = 60
_BRIEF.maxlong = 40
_BRIEF.maxlist = _BRIEF.maxdict = _BRIEF.maxtuple = _BRIEF.maxset = 4
_BRIEF.maxlevel = 2
BRIEF_CHARS = 120


def brief(value: Any) -> str:
    """`repr(value)` cut to at most `BRIEF_CHARS` characters, for error messages about untrusted values."""
    text = _BRIEF.repr(value)
    return text if len(text) <= BRIEF_CHARS else text[: BRIEF_CHARS - 3] + "..."
