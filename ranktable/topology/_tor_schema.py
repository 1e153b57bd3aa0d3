"""The platform's tor file (``ranktable_tor.json``) as msgspec types: the fields the topology uses, checked
in C while decoding (other fields are ignored). Imported only by the tor-file reader's fast path."""

from __future__ import annotations

from typing import Any

import msgspec


class TorDevice(msgspec.Struct, gc=False):
    device_id: str
    tor_ip: str


class TorServer(msgspec.Struct, gc=False):
    server_id: str
    device: list[TorDevice]
    pod_name: str | None = None


class TorFile(msgspec.Struct, gc=False):
    server_list: list[TorServer]
    server_count: Any = None


_DECODER = msgspec.json.Decoder(TorFile)


def decode_tor_json(text: bytes) -> TorFile | None:
    """The document, or None when it is not JSON or a field is not of the platform's type."""
    try:
        return _DECODER.decode(text)
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
