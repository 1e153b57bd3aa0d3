"""The server list of a column-wise table as the JSON text `dump_rank_table` writes, without objects.

`json.dumps(..., indent=4)` runs Python's pure encoder (the C one has no indent), about 5 us per field:
a 65,536-rank table took 7x a `json.load` of it to write. Here every device is one %-format of its
columns and strings go through `json`'s own C string encoder, so the text is byte for byte the same.
"""

from __future__ import annotations

import json
from itertools import repeat

from ranktable.hccl.columns import RankColumns

_encode = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) quotes strings with
_SERVER, _SERVER_FIELD, _DEVICE, _DEVICE_FIELD = (" " * n for n in (8, 12, 16, 20))
_NEXT = ",\n"  # json's item separator with an indent


def _fragments(key: str, values: list[str | None], indent: str) -> list[str] | repeat[str]:
    """Per row `,<newline><indent>"key": "value"`, or "" where the value is None (field left out)."""
    if values.count(None) == len(values):
        return repeat("")
    head = f",\n{indent}{_encode(key)}: "
    if None not in values:
        return list(map(head.__add__, map(_encode, values)))  # type: ignore[arg-type]
    return ["" if value is None else head + _encode(value) for value in values]


def server_list_text(columns: RankColumns) -> str:
    """The `server_list` array (its first line unindented, as a value after `"server_list": `)."""
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
