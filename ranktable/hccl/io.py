"""Reading and writing `jobstart_hccl.json` in the platform's own conventions.

The reader is lenient about what the validator checks (duplicates, rank order, counts) and strict about
shape (a rank id that is not a number cannot be represented). It collects every shape problem with its
JSON path instead of stopping at the first, so `ranktable validate` can list them all; the strict entry
point `parse_rank_table` turns them into one `InputError`.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ranktable import limits
from ranktable.errors import InputError
from ranktable.hccl.bulk import gc_paused
from ranktable.hccl.columns import RankColumns, lazy_columns
from ranktable.hccl.lazy import lazy_module
from ranktable.hccl.model import (
    STATUS_INITIALIZING,
    SUPPORTED_VERSIONS,
    Device,
    Problem,
    RankTable,
    Server,
    SuperPod,
)
from ranktable.limits import brief, check_nesting, decode_utf8, load_json

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")  # imported when first used: `ranktable validate` on a small table never does

TOP_FIELDS = ("status", "version", "server_count", "server_list", "super_pod_list")
SERVER_FIELDS = ("server_id", "host_ip", "container_ip", "hardware_type", "device")
DEVICE_FIELDS = ("device_id", "device_ip", "device_port", "super_device_id", "rank_id")
INTEGER = re.compile(r"-?[0-9]+")
MISSING: Any = object()  # `FieldReader.field` for an absent key (JSON null is a value)


class FieldReader:
    """Typed access to JSON fields that records a `Problem` (with path) instead of raising."""

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def problem(self, path: str, message: str) -> None:
        self.problems.append(Problem(path, message))

    def field(self, obj: dict[str, Any], key: str, path: str, *, required: bool) -> tuple[str, Any]:
        """The field's JSON path and value, or `MISSING` (a problem only when the field is required)."""
        where = f"{path}.{key}" if path else key
        if key not in obj:
            if required:
                self.problem(where, "is missing")
            return where, MISSING
        return where, obj[key]

    def number(self, obj: dict[str, Any], key: str, path: str, *, required: bool = True) -> int | None:
        """A non-negative integer written as a JSON string (the platform's form) or a plain number."""
        where, value = self.field(obj, key, path, required=required)
        if value is MISSING:
            return None
        if isinstance(value, bool):
            self.problem(where, f'must be a number written as a string, e.g. "3"; got {brief(value)}')
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, str) and INTEGER.fullmatch(value.strip()):
            return int(value.strip())
        self.problem(where, f'must be a number written as a string, e.g. "3"; got {brief(value)}')
        return None

    def text(self, obj: dict[str, Any], key: str, path: str, *, required: bool = False) -> str | None:
        """A string field; plain numbers are accepted and kept as their decimal text."""
        where, value = self.field(obj, key, path, required=required)
        if value is MISSING:
            return None
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        self.problem(where, f"must be a string; got {type(value).__name__} {brief(value)}")
        return None

    def array(self, obj: dict[str, Any], key: str, path: str, *, required: bool) -> list[Any]:
        where, value = self.field(obj, key, path, required=required)
        if value is MISSING:
            return []
        if not isinstance(value, list):
            self.problem(where, f"must be a JSON array; got {type(value).__name__}")
            return []
        return value

    def objects(
        self, obj: dict[str, Any], key: str, path: str, *, required: bool
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """The array's JSON objects with their paths; any other element is a problem and skipped."""
        where = f"{path}.{key}" if path else key
        for i, item in enumerate(self.array(obj, key, path, required=required)):
            if isinstance(item, dict):
                yield f"{where}[{i}]", item
            else:
                self.problem(f"{where}[{i}]", "must be a JSON object")


def decode_json(data: str | bytes, source: str, *, nesting: bool = True) -> Any:
    """Parse JSON text within the limits of `ranktable.limits`; errors name the file, line or limit.
    `nesting=False` leaves the depth check to the caller."""
    if isinstance(data, bytes):
        data = decode_utf8(data, source, what="rank table")
    fix = "the file may still be being written, or is not a rank table"
    return load_json(data, source, fix=fix, nesting=nesting)


_UNREAD: Any = object()  # `read_document`'s columns when the caller did not try the fast reader


def read_document(doc: Any, reader: FieldReader, columns: RankColumns | None = _UNREAD) -> RankTable | None:
    """Build a `RankTable` from decoded JSON, recording shape problems in `reader`; `columns` are the
    server list as `_well_formed_columns` read it (None: it could not)."""
    if not isinstance(doc, dict):
        reader.problem("", f"the top level must be a JSON object; got {type(doc).__name__}")
        return None
    if "group_list" in doc:
        from ranktable.hccl.legacy import read_legacy

        return read_legacy(doc, reader)
    status = reader.text(doc, "status", "", required=True) or ""
    if "version" not in doc and status == STATUS_INITIALIZING:
        version = "1.0"  # the ConfigMap starts as {"status": "initializing"}
    else:
        version = reader.text(doc, "version", "", required=True) or ""
        if version and version not in SUPPORTED_VERSIONS:
            reader.problem(
                "version",
                f"unknown version {brief(version)}; this tool reads {', '.join(SUPPORTED_VERSIONS)} "
                "(and the legacy group_list form)",
            )
    declared = reader.number(doc, "server_count", "", required=False)
    required_list = status != STATUS_INITIALIZING
    if columns is _UNREAD:
        columns = _well_formed_columns(doc.get("server_list"))
    servers: list[Server] = []
    if columns is None:
        servers = [
            server
            for i, item in enumerate(reader.array(doc, "server_list", "", required=required_list))
            if (server := _read_server(item, f"server_list[{i}]", reader)) is not None
        ]
    super_pods = None
    if "super_pod_list" in doc:
        super_pods = _read_super_pods(reader.array(doc, "super_pod_list", "", required=True), reader)
    extra = {k: v for k, v in doc.items() if k not in TOP_FIELDS}
    if columns is not None:
        return RankTable.from_columns(status, version, columns, super_pods, extra, declared)
    return RankTable(
        status=status,
        version=version,
        servers=servers,
        super_pods=super_pods,
        extra=extra,
        declared_server_count=declared,
    )


_SERVER_KEYS = frozenset(SERVER_FIELDS)
_DEVICE_KEYS = frozenset(DEVICE_FIELDS)
_TEXT_TYPES = frozenset((str, type(None)))


def _well_formed_columns(items: Any) -> RankColumns | None:
    """The common case, a table exactly as the platform writes it, read column by column (a 65,536-rank
    table in a fraction of the careful reader's time, and no object per device). Anything unusual (an
    unknown key, a number not in plain form, a wrong type) returns None and the careful reader below
    collects every problem with its path."""
    if type(items) is not list or not set(map(type, items)) <= {dict}:
        return None
    if not set().union(*items) <= _SERVER_KEYS:
        return None
    server_ids = [s.get("server_id") for s in items]
    raw = [s.get("device") for s in items]
    if not (set(map(type, server_ids)) <= {str} and set(map(type, raw)) <= {list}):
        return None
    hosts = [s.get("host_ip") for s in items]
    containers = [s.get("container_ip") for s in items]
    hardware = [s.get("hardware_type") for s in items]
    if not set(map(type, hosts + containers + hardware)) <= _TEXT_TYPES:
        return None
    counts = list(map(len, raw))
    devices = list(chain.from_iterable(raw))
    if not set(map(type, devices)) <= {dict}:
        return None
    keys = set().union(*devices)
    if not keys <= _DEVICE_KEYS:
        return None
    device_id = _plain_numbers([d.get("device_id") for d in devices])
    rank_id = _plain_numbers([d.get("rank_id") for d in devices])
    if device_id is None or rank_id is None:
        return None
    texts: list[list[str | None]] = [
        [d.get(key) for d in devices] if key in keys else [None] * len(devices)
        for key in ("device_ip", "device_port", "super_device_id")
    ]
    if not all(set(map(type, column)) <= _TEXT_TYPES for column in texts):
        return None
    ips, ports, supers = texts
    start = np.zeros(len(items) + 1, dtype=np.int64)
    np.cumsum(counts, out=start[1:])
    return RankColumns(server_ids, hosts, containers, hardware, start, device_id, rank_id, ips, ports, supers)


def _plain_numbers(values: list[Any]) -> np.ndarray | None:
    """Non-negative integers written as ASCII digit strings (the platform's form) or as JSON numbers,
    as an int64 array; None for anything else (a sign, blanks, bools, a mix of both forms)."""
    kinds = set(map(type, values))
    if not values:
        return np.zeros(0, dtype=np.int64)
    if kinds == {str}:
        from ranktable.hccl.fastread import digits_column

        return digits_column(values)
    if kinds == {int}:
        if min(values) < 0 or max(values) >= 1 << 63:
            return None
        return np.array(values, dtype=np.int64)
    return None


def _read_server(item: Any, path: str, reader: FieldReader) -> Server | None:
    if not isinstance(item, dict):
        reader.problem(path, f"must be a JSON object; got {type(item).__name__}")
        return None
    server_id = reader.text(item, "server_id", path, required=True)
    devices = [
        device
        for j, dev in enumerate(reader.array(item, "device", path, required=True))
        if (device := _read_device(dev, f"{path}.device[{j}]", reader)) is not None
    ]
    if server_id is None:
        return None
    return Server(
        server_id=server_id,
        devices=devices,
        host_ip=reader.text(item, "host_ip", path),
        container_ip=reader.text(item, "container_ip", path),
        hardware_type=reader.text(item, "hardware_type", path),
        extra={k: v for k, v in item.items() if k not in SERVER_FIELDS},
    )


def _read_device(item: Any, path: str, reader: FieldReader) -> Device | None:
    if not isinstance(item, dict):
        reader.problem(path, f"must be a JSON object; got {type(item).__name__}")
        return None
    device_id = reader.number(item, "device_id", path)
    rank_id = reader.number(item, "rank_id", path)
    device_ip = reader.text(item, "device_ip", path)
    device_port = reader.text(item, "device_port", path)
    super_device_id = reader.text(item, "super_device_id", path)
    if device_id is None or rank_id is None:
        return None
    return Device(
        device_id=device_id,
        rank_id=rank_id,
        device_ip=device_ip,
        device_port=device_port,
        super_device_id=super_device_id,
        extra={k: v for k, v in item.items() if k not in DEVICE_FIELDS},
    )


def _read_super_pods(items: list[Any], reader: FieldReader) -> list[SuperPod]:
    pods: list[SuperPod] = []
    for i, item in enumerate(items):
        path = f"super_pod_list[{i}]"
        if not isinstance(item, dict):
            reader.problem(path, f"must be a JSON object; got {type(item).__name__}")
            continue
        pod_id = reader.text(item, "super_pod_id", path, required=True) or ""
        ids: list[str] = []
        for j, entry in enumerate(reader.array(item, "server_list", path, required=True)):
            entry_path = f"{path}.server_list[{j}]"
            if not isinstance(entry, dict):
                reader.problem(entry_path, "must be a JSON object with server_id")
                continue
            server_id = reader.text(entry, "server_id", entry_path, required=True)
            if server_id is not None:
                ids.append(server_id)
        pods.append(SuperPod(super_pod_id=pod_id, server_ids=ids))
    return pods


def read_rank_table_lenient(
    data: str | bytes | dict[str, Any], source: str = "<input>", *, columns: bool = True
) -> tuple[RankTable | None, list[Problem]]:
    """Read what can be read and list every shape problem; raises `InputError` only for non-JSON text.
    ``columns=False`` builds the objects only (no numpy: for a small table it is as fast)."""
    with gc_paused():
        platform: tuple[dict[str, Any], RankColumns] | None = None
        if columns and not isinstance(data, dict):
            # imported here: msgspec and the schema cost ~20 ms, which objects-only reads never need
            from ranktable.hccl.fastread import read_platform_table

            platform = read_platform_table(data)
        if platform is not None:
            top, platform_columns = platform
            for value in top.values():  # the server list's depth is known; the other fields' is not
                check_nesting(value, source, limits.MAX_NESTING - 1)
            reader = FieldReader()
            return read_document(top, reader, platform_columns), reader.problems
        doc = data if isinstance(data, dict) else decode_json(data, source, nesting=False)
        read_columns = None
        if columns and isinstance(doc, dict) and "group_list" not in doc:
            read_columns = _well_formed_columns(doc.get("server_list"))
        if not isinstance(data, dict):
            if read_columns is None:
                check_nesting(doc, source)
            else:  # the server list's depth is known; the other fields' is not
                for key, value in doc.items():
                    if key != "server_list":
                        check_nesting(value, source, limits.MAX_NESTING - 1)
        reader = FieldReader()
        table = read_document(doc, reader, read_columns)
    return table, reader.problems


def parse_rank_table(data: str | bytes | dict[str, Any], source: str = "<input>") -> RankTable:
    """Read a rank table (1.0, 1.2 or legacy group_list); any shape problem raises `InputError`."""
    table, problems = read_rank_table_lenient(data, source)
    if problems or table is None:
        first = problems[0] if problems else Problem("", "not a rank table")
        more = f" (and {len(problems) - 1} more problems)" if len(problems) > 1 else ""
        where = f"{source}: {first.path}" if first.path else source
        raise InputError(
            first.message + more,
            where=where,
            fix="run `ranktable validate FILE` to list every problem",
        )
    return table


def load_rank_table(path: str | os.PathLike[str]) -> RankTable:
    """Read a rank-table file (see `parse_rank_table`)."""
    return parse_rank_table(read_bytes(path), source=str(path))


def read_bytes(path: str | os.PathLike[str]) -> bytes:
    """A rank-table file's bytes, at most `MAX_FILE_BYTES`."""
    return limits.read_bytes(path, what="rank-table file")


# -- writing --------------------------------------------------------------------------------------------


def rank_table_to_dict(table: RankTable) -> dict[str, Any]:
    """The platform's JSON shape: fields in its order, numbers as strings, unknown fields kept."""
    if (
        table.status == STATUS_INITIALIZING
        and not table.servers
        and table.version == "1.0"
        and table.super_pods is None
        and not table.extra
    ):
        return {"status": table.status}  # how the ConfigMap starts out
    return _document(table, len(table.servers), [_server_to_dict(s) for s in table.servers])


def _document(table: RankTable, servers: int, server_list: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "status": table.status,
        "version": table.version,
        "server_count": str(servers),
        "server_list": server_list,
    }
    if table.super_pods is not None:
        doc["super_pod_list"] = [
            {"super_pod_id": pod.super_pod_id, "server_list": [{"server_id": sid} for sid in pod.server_ids]}
            for pod in table.super_pods
        ]
    for key, value in table.extra.items():
        doc.setdefault(key, value)
    return doc


def _server_to_dict(server: Server) -> dict[str, Any]:
    out: dict[str, Any] = {"server_id": server.server_id}
    for key in ("host_ip", "container_ip", "hardware_type"):
        value = getattr(server, key)
        if value is not None:
            out[key] = value
    out["device"] = [_device_to_dict(d) for d in server.devices]
    for key, value in server.extra.items():
        out.setdefault(key, value)
    return out


def _device_to_dict(device: Device) -> dict[str, Any]:
    out: dict[str, Any] = {"device_id": str(device.device_id)}
    if device.device_ip is not None:
        out["device_ip"] = device.device_ip
    if device.device_port is not None:
        out["device_port"] = device.device_port
    if device.super_device_id is not None:
        out["super_device_id"] = device.super_device_id
    out["rank_id"] = str(device.rank_id)
    for key, value in device.extra.items():
        out.setdefault(key, value)
    return out


def dump_rank_table(table: RankTable) -> str:
    """The rank table as JSON text (4-space indent, as `hccl_tools.py` writes it), ending in a newline."""
    with gc_paused():
        return b"".join(_dump_parts(table)).decode("utf-8")


def _dump_parts(table: RankTable) -> Iterator[bytes]:
    """`dump_rank_table`'s text in pieces (a column-wise table's server list in blocks of servers)."""
    columns = lazy_columns(table)
    if columns is None or not columns.servers:
        yield (json.dumps(rank_table_to_dict(table), indent=4, ensure_ascii=False) + "\n").encode("utf-8")
        return
    # a column-wise table (what the planner writes): the server list from the columns, spliced in
    import uuid  # here: only writing needs it (0.03 s of imports, `platform` among them)

    marker = f"server_list {uuid.uuid4().hex}"
    text = json.dumps(_document(table, columns.servers, marker), indent=4, ensure_ascii=False) + "\n"
    head, tail = text.split(json.dumps(marker), 1)
    yield head.encode("utf-8")
    from ranktable.hccl.fastwrite import server_list_chunks  # only when writing: ~6 ms to import

    yield from server_list_chunks(columns)
    yield tail.encode("utf-8")


def write_rank_table(table: RankTable, path: str | os.PathLike[str]) -> Path:
    """Write atomically (temp file + rename) so a reader polling the file never sees half of it."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or Path("."))
    try:
        # piece by piece (a 65,536-rank table is never one string), the collector paused while the
        # pieces are made (a generation-2 pass would walk the whole table again)
        with os.fdopen(fd, "wb") as handle, gc_paused():
            for part in _dump_parts(table):
                handle.write(part)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
