"""The server list of a column-wise table as the JSON text `dump_rank_table` writes, without objects.

`json.dumps(..., indent=4)` runs Python's pure encoder (the C one has no indent), about 5 us per field:
a 65,536-rank table took 7x a `json.load` of it to write. Here a table whose servers hold equally many
devices and whose text is ASCII (what the platform writes) is laid out as a byte matrix, a row per
server: the constant text json writes between values is broadcast into fixed columns, the values
(strings NUL-padded, numbers as digit columns) copied in, and the NUL bytes dropped, in blocks of
servers, so there is no per-device Python work. Any other table: one %-format per device, strings
through `json`'s own C string encoder. Both give the text byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from itertools import repeat
from typing import TYPE_CHECKING, TypeAlias, cast

from ranktable.hccl.columns import RankColumns
from ranktable.hccl.lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")  # imported when first used: `ranktable validate` on a small table never does

_encode = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) quotes strings with
_SERVER, _SERVER_FIELD, _DEVICE, _DEVICE_FIELD = (" " * n for n in (8, 12, 16, 20))
_NEXT = ",\n"  # json's item separator with an indent


def _fragments(key: str, values: list[str | None], indent: str) -> list[str] | repeat[str]:
    """Per row `,<newline><indent>"key": "value"`, or "" where the value is None (field left out)."""
    missing = values.count(None)
    if missing == len(values):
        return repeat("")
    head = f",\n{indent}{_encode(key)}: "
    if not missing:
        return list(map(head.__add__, map(_encode, values)))  # type: ignore[arg-type]
    return ["" if value is None else head + _encode(value) for value in values]


def server_list_text(columns: RankColumns) -> str:
    """The `server_list` array (its first line unindented, as a value after `"server_list": `)."""
    return b"".join(server_list_chunks(columns)).decode("utf-8")


def server_list_chunks(columns: RankColumns, block: int = 1024) -> Iterator[bytes]:
    """`server_list_text` as UTF-8 in pieces of `block` servers (a writer need not hold it as one
    string): a regular ASCII table as byte matrices (`_regular_blocks`), any other with `%`-formats."""
    regular = _regular_blocks(columns, block)
    if regular is None:
        return iter((_irregular_text(columns).encode("utf-8"),))
    return regular


def _irregular_text(columns: RankColumns) -> str:
    """`server_list_text` for any table: one %-format per device and per server."""
    head, rank = f'{_DEVICE}{{\n{_DEVICE_FIELD}"device_id": "', f',\n{_DEVICE_FIELD}"rank_id": "'
    rows = zip(
        columns.device_id.tolist(),
        _fragments("device_ip", columns.device_ip, _DEVICE_FIELD),
        _fragments("device_port", columns.device_port, _DEVICE_FIELD),
        _fragments("super_device_id", columns.super_device_id, _DEVICE_FIELD),
        columns.rank_id.tolist(),
        strict=False,  # the repeat("") of an unused field is endless
    )
    tail = f"\n{_DEVICE}}}"
    devices = [f'{head}{i}"{ip}{port}{sup}{rank}{r}"{tail}' for i, ip, port, sup, r in rows]
    bounds = columns.start.tolist()
    blocks = [
        f"[\n{_NEXT.join(devices[bounds[i] : bounds[i + 1]])}\n{_SERVER_FIELD}]"
        if bounds[i + 1] > bounds[i]
        else "[]"
        for i in range(columns.servers)
    ]
    server = f'{_SERVER}{{\n{_SERVER_FIELD}"server_id": %s%s%s%s,\n{_SERVER_FIELD}"device": %s\n{_SERVER}}}'
    servers = zip(
        map(_encode, columns.server_id),
        _fragments("host_ip", columns.host_ip, _SERVER_FIELD),
        _fragments("container_ip", columns.container_ip, _SERVER_FIELD),
        _fragments("hardware_type", columns.hardware_type, _SERVER_FIELD),
        blocks,
        strict=False,
    )
    return "[\n" + _NEXT.join(map(server.__mod__, servers)) + "\n    ]"


def _plain(values: list[str]) -> bool:
    """True when json writes every value as is between quotes (no quote, backslash or control
    character; ASCII-printable keeps the test to one C pass over the joined text)."""
    text = "".join(values)
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


# A piece of the output: constant text, or one value per server ("server") / per device ("device").
_Values: TypeAlias = "list[str] | np.ndarray"
_Piece = str | tuple[str, _Values]


def _field(key: str, values: list[str | None], indent: str, level: str) -> list[_Piece]:
    """An optional field's pieces: none when no row has it; the key as constant text when every row
    has it (the quotes too when the values are plain); else a fragment per row ("" where absent)."""
    missing = values.count(None)
    if missing == len(values):
        return []
    if missing:
        return [(level, list(_fragments(key, values, indent)))]
    present = cast(list[str], values)  # no None left (see above)
    head = f",\n{indent}{_encode(key)}: "
    if _plain(present):
        return [head + '"', (level, present), '"']
    return [head, (level, list(map(_encode, present)))]


def _digits(values: np.ndarray) -> np.ndarray | None:
    """Decimal digits of a non-negative int column as a [rows, width] byte matrix, right-aligned with
    NUL bytes in front (dropped from the text later); None for a negative value."""
    if len(values) == 0 or int(values.min()) < 0:
        return None
    width = len(str(int(values.max())))
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    column = values.astype(np.int64)[:, None]
    out = (column // powers % 10 + 48).astype(np.uint8)
    out[:, :-1][column < powers[:-1]] = 0  # leading zeros (the last digit always stays)
    return out


def _bytes_of(values: _Values) -> np.ndarray | None:
    """A value column as a [rows, width] byte matrix (shorter values NUL-padded); None when a value is
    not ASCII (the caller then writes the table another way)."""
    if isinstance(values, np.ndarray):
        return _digits(values)
    try:
        fixed = np.array(values, dtype="S")
    except UnicodeEncodeError:
        return None
    return fixed.view(np.uint8).reshape(len(values), fixed.dtype.itemsize)


def _row_pieces(columns: RankColumns, per: int) -> list[str | tuple[_Values, int]]:
    """Every piece of one server's text in order, `per` devices each: constant text, or a column of
    values with the device it belongs to (-1: the server's own)."""
    device: list[_Piece] = [
        f'{_DEVICE}{{\n{_DEVICE_FIELD}"device_id": "',
        ("device", columns.device_id),
        '"',
    ]
    for key, values in (
        ("device_ip", columns.device_ip),
        ("device_port", columns.device_port),
        ("super_device_id", columns.super_device_id),
    ):
        device += _field(key, values, _DEVICE_FIELD, "device")
    device += [f',\n{_DEVICE_FIELD}"rank_id": "', ("device", columns.rank_id), f'"\n{_DEVICE}}}']
    server: list[_Piece] = [
        f'{_SERVER}{{\n{_SERVER_FIELD}"server_id": ',
        ("server", list(map(_encode, columns.server_id))),
    ]
    for key, values in (
        ("host_ip", columns.host_ip),
        ("container_ip", columns.container_ip),
        ("hardware_type", columns.hardware_type),
    ):
        server += _field(key, values, _SERVER_FIELD, "server")
    server.append(f',\n{_SERVER_FIELD}"device": [\n')
    pieces: list[str | tuple[_Values, int]] = [p if isinstance(p, str) else (p[1], -1) for p in server]
    for j in range(per):
        pieces += [p if isinstance(p, str) else (p[1], j) for p in device]
        pieces.append(_NEXT if j < per - 1 else f"\n{_SERVER_FIELD}]\n{_SERVER}}}{_NEXT}")
    return pieces


def _regular_blocks(columns: RankColumns, block: int) -> Iterator[bytes] | None:
    """For a table whose servers all hold the same number (> 0) of devices and whose values are ASCII:
    the bytes of `server_list_text` in blocks of `block` servers. Every server is one row of a byte
    matrix with its values and the constant text between them (as json writes it) at fixed columns,
    NUL-padded; the text is the matrix without its NUL bytes (JSON text has none: json escapes NUL).
    None for any other table."""
    counts = columns.counts()
    servers = columns.servers
    if servers == 0 or int(counts.min()) != int(counts.max()) or int(counts[0]) == 0:
        return None
    per = int(counts[0])
    pieces = _row_pieces(columns, per)
    # (start column, constant bytes or [servers, width] values) per piece, adjacent constants merged
    placed: list[tuple[int, bytes | np.ndarray]] = []
    matrices: dict[int, np.ndarray] = {}
    width = 0
    for piece in pieces:
        if isinstance(piece, str):
            if not piece.isascii():
                return None
            if placed and isinstance(placed[-1][1], bytes):
                start, text = placed.pop()
                placed.append((start, text + piece.encode()))
            else:
                placed.append((width, piece.encode()))
            width += len(piece)
            continue
        column, j = piece
        matrix = matrices.get(id(column))
        if matrix is None:
            found = _bytes_of(column)
            if found is None:
                return None
            matrix = matrices[id(column)] = found if j < 0 else found.reshape(servers, per, -1)
        part = matrix if j < 0 else matrix[:, j]
        placed.append((width, part))
        width += part.shape[1]

    # the constant text of a row once; every block starts as copies of it, then takes its values
    template = np.zeros(width, dtype=np.uint8)
    for start, what in placed:
        if isinstance(what, bytes):
            template[start : start + len(what)] = np.frombuffer(what, dtype=np.uint8)
    value_parts = [(start, what) for start, what in placed if isinstance(what, np.ndarray)]

    def blocks() -> Iterator[bytes]:
        for first in range(0, servers, block):
            last = min(first + block, servers)
            rows = np.empty((last - first, width), dtype=np.uint8)
            rows[:] = template
            for start, part in value_parts:
                rows[:, start : start + part.shape[1]] = part[first:last]
            text = rows.tobytes().replace(b"\0", b"")
            if first == 0:
                text = b"[\n" + text
            if last == servers:
                text = text[: -len(_NEXT)] + b"\n    ]"  # no separator after the last server
            yield text

    return blocks()
