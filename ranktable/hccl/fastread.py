"""Reading a rank table exactly as the platform writes it straight into columns, with msgspec.

msgspec decodes the JSON and checks every field's type in C against the platform's schema (numbers as
strings, no unknown fields), about as fast as `json.load` alone builds the dictionaries. Anything the
schema does not describe (an unknown field, a number written as a JSON number, a BOM, NaN, text that is
not JSON at all) returns None, and the general reader (`json` + the careful field reader) takes the
input, so what is accepted and every error message stay the same. Without msgspec installed, the
general reader is used for everything.
"""

from __future__ import annotations

from itertools import chain
from typing import TYPE_CHECKING, Any

from ranktable.hccl.columns import RankColumns
from ranktable.hccl.lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")  # imported when first used: `ranktable validate` on a small table never does

try:
    import msgspec
except ImportError:  # pragma: no cover - msgspec is a core dependency; the general reader still works
    msgspec = None  # type: ignore[assignment]

MAX_PLAIN_DIGITS = 18  # a longer id may not fit an int64 column: left to the general reader
_TOP_FIELDS = ("status", "version", "server_count", "super_pod_list")

if msgspec is not None:

    class _Device(msgspec.Struct, forbid_unknown_fields=True, gc=False):
        device_id: str
        rank_id: str
        device_ip: str | None = None
        device_port: str | None = None
        super_device_id: str | None = None

    class _Server(msgspec.Struct, forbid_unknown_fields=True, gc=False):
        server_id: str
        device: list[_Device]
        host_ip: str | None = None
        container_ip: str | None = None
        hardware_type: str | None = None

    class _Table(msgspec.Struct, forbid_unknown_fields=True):
        server_list: list[_Server]
        status: Any = msgspec.UNSET
        version: Any = msgspec.UNSET
        server_count: Any = msgspec.UNSET
        super_pod_list: Any = msgspec.UNSET

    _DECODER = msgspec.json.Decoder(_Table)


def read_platform_table(data: str | bytes) -> tuple[dict[str, Any], RankColumns] | None:
    """(the top-level fields other than server_list, the server list as columns), or None when the
    input is not exactly in the platform's form."""
    if msgspec is None:
        return None
    try:
        table = _DECODER.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    servers = table.server_list
    devices = list(chain.from_iterable([s.device for s in servers]))
    device_id = digits_column([d.device_id for d in devices])
    rank_id = digits_column([d.rank_id for d in devices])
    if device_id is None or rank_id is None:
        return None
    counts = [len(s.device) for s in servers]
    start = np.zeros(len(servers) + 1, dtype=np.int64)
    np.cumsum(counts, out=start[1:])
    columns = RankColumns(
        [s.server_id for s in servers],
        [s.host_ip for s in servers],
        [s.container_ip for s in servers],
        [s.hardware_type for s in servers],
        start,
        device_id,
        rank_id,
        [d.device_ip for d in devices],
        [d.device_port for d in devices],
        [d.super_device_id for d in devices],
    )
    top = {key: value for key in _TOP_FIELDS if (value := getattr(table, key)) is not msgspec.UNSET}
    return top, columns


def digits_column(values: list[str]) -> np.ndarray | None:
    """Non-empty ASCII digit strings (at most 18 digits) as an int64 array, else None."""
    if not values:
        return np.zeros(0, dtype=np.int64)
    text = ",".join(values)
    if not text.isascii():
        return None
    raw = text.encode("ascii")  # checked on bytes: a C pass each, no per-value Python work
    if raw.translate(None, b"0123456789,") or raw.count(b",") != len(values) - 1:
        return None  # a character other than a digit, or a value holding a comma
    commas = np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) == ord(","))
    lengths = np.append(commas, len(raw)) - np.concatenate(([0], commas + 1))
    if lengths.min() < 1 or lengths.max() > MAX_PLAIN_DIGITS:
        return None
    return np.fromstring(text, dtype=np.int64, sep=",")  # checked: digits only
