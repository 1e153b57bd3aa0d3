"""Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) for the few types kubectl
sends that way: Namespace, ConfigMap, Secret and SelfSubjectAccessReview.

kubectl's generators (`create namespace|configmap|secret`, `auth can-i`) use the typed client, which
sends built-in types as protobuf; a real API server decodes them, so this one must too. The body is the
`k8s\\x00` magic, then a `runtime.Unknown` (typeMeta, raw), and `raw` is the object's message. Field
numbers come from the `generated.proto` files of k8s.io/api and k8s.io/apimachinery (v0.35).
Other kinds get 415, as a real server answers protobuf for kinds it has no protobuf codec for.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

from ranktable.sim.k8s import errors

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
MAGIC = b"k8s\x00"
MAX_DEPTH = 16

# A schema maps a field number to (JSON name, kind); kind is a scalar kind or a nested schema.
Schema = dict[int, tuple[str, Any]]

TIME: Schema = {1: ("seconds", "int"), 2: ("nanos", "int")}
OWNER_REFERENCE: Schema = {
    1: ("kind", "string"),
    3: ("name", "string"),
    4: ("uid", "string"),
    5: ("apiVersion", "string"),
    6: ("controller", "bool"),
    7: ("blockOwnerDeletion", "bool"),
}
OBJECT_META: Schema = {
    1: ("name", "string"),
    2: ("generateName", "string"),
    3: ("namespace", "string"),
    5: ("uid", "string"),
    6: ("resourceVersion", "string"),
    7: ("generation", "int"),
    8: ("creationTimestamp", "time"),
    10: ("deletionGracePeriodSeconds", "int"),
    11: ("labels", "map:string"),
    12: ("annotations", "map:string"),
    13: ("ownerReferences", ("repeated", OWNER_REFERENCE)),
    14: ("finalizers", "repeated:string"),
}
TYPES: dict[tuple[str, str], Schema] = {
    ("v1", "Namespace"): {
        1: ("metadata", OBJECT_META),
        2: ("spec", {1: ("finalizers", "repeated:string")}),
        3: ("status", {1: ("phase", "string")}),
    },
    ("v1", "ConfigMap"): {
        1: ("metadata", OBJECT_META),
        2: ("data", "map:string"),
        3: ("binaryData", "map:bytes"),
        4: ("immutable", "bool"),
    },
    ("v1", "Secret"): {
        1: ("metadata", OBJECT_META),
        2: ("data", "map:bytes"),
        3: ("type", "string"),
        4: ("stringData", "map:string"),
        5: ("immutable", "bool"),
    },
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): {
        1: ("metadata", OBJECT_META),
        2: (
            "spec",
            {
                1: (
                    "resourceAttributes",
                    {
                        1: ("namespace", "string"),
                        2: ("verb", "string"),
                        3: ("group", "string"),
                        4: ("version", "string"),
                        5: ("resource", "string"),
                        6: ("subresource", "string"),
                        7: ("name", "string"),
                    },
                ),
                2: ("nonResourceAttributes", {1: ("path", "string"), 2: ("verb", "string")}),
            },
        ),
    },
}
UNKNOWN: Schema = {
    1: ("typeMeta", {1: ("apiVersion", "string"), 2: ("kind", "string")}),
    2: ("raw", "bytes"),
    3: ("contentEncoding", "string"),
    4: ("contentType", "string"),
}


class _Malformed(ValueError):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if pos >= len(data) or shift > 63:
            raise _Malformed("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) pairs: an int for varints, bytes for length-delimited fields."""
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise _Malformed("truncated field")
            yield number, data[pos : pos + length]
            pos += length
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
        else:
            raise _Malformed(f"unsupported wire type {wire}")


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise _Malformed("expected a length-delimited field")
    return value.decode("utf-8")


def _map_entry(value: int | bytes) -> tuple[str, bytes]:
    key, item = "", b""
    for number, part in _fields(value if isinstance(value, bytes) else b""):
        if number == 1:
            key = _text(part)
        elif number == 2 and isinstance(part, bytes):
            item = part
    return key, item


def _scalar(kind: str, value: int | bytes) -> Any:
    if kind == "string":
        return _text(value)
    if kind == "bytes":
        return value if isinstance(value, bytes) else b""
    if kind == "bool":
        return bool(value)
    if kind == "int":
        return _signed(value) if isinstance(value, int) else 0
    raise _Malformed(f"unknown kind {kind}")


def _message(data: bytes, schema: Schema, depth: int = 0) -> dict[str, Any]:
    if depth > MAX_DEPTH:
        raise _Malformed(f"nested deeper than {MAX_DEPTH} levels")
    out: dict[str, Any] = {}
    for number, value in _fields(data):
        if number not in schema:
            continue  # fields this server does not keep, as an older server skips newer fields
        name, kind = schema[number]
        if isinstance(kind, dict):
            out[name] = _message(_as_bytes(value), kind, depth + 1)
        elif isinstance(kind, tuple):
            out.setdefault(name, []).append(_message(_as_bytes(value), kind[1], depth + 1))
        elif kind == "time":
            stamp = _message(_as_bytes(value), TIME, depth + 1)
            moment = datetime.fromtimestamp(int(stamp.get("seconds", 0)), timezone.utc)
            out[name] = moment.strftime("%Y-%m-%dT%H:%M:%SZ")
        elif kind.startswith("map:"):
            key, item = _map_entry(value)
            mapped = item.decode("utf-8") if kind == "map:string" else base64.b64encode(item).decode()
            out.setdefault(name, {})[key] = mapped
        elif kind.startswith("repeated:"):
            out.setdefault(name, []).append(_scalar(kind.removeprefix("repeated:"), value))
        else:
            out[name] = _scalar(kind, value)
    return out


def _as_bytes(value: int | bytes) -> bytes:
    if not isinstance(value, bytes):
        raise _Malformed("expected an embedded message")
    return value


def decode(body: bytes) -> dict[str, Any]:
    """A protobuf request body as the JSON object it stands for; 400 if malformed, 415 if unsupported."""
    if not body.startswith(MAGIC):
        raise errors.bad_request("the protobuf body does not start with the Kubernetes magic 'k8s\\x00'")
    try:
        envelope = _message(body[len(MAGIC) :], UNKNOWN)
        type_meta = envelope.get("typeMeta") or {}
        api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
        schema = TYPES.get((api_version, kind))
        if schema is None:
            raise errors.ApiError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - {MEDIA_TYPE} is decoded only for "
                + ", ".join(k for _, k in TYPES)
                + f" (got {kind or 'no kind'} {api_version}); accepted media types include: "
                "application/json, application/yaml",
            )
        if envelope.get("contentEncoding"):
            raise errors.bad_request(f"unsupported protobuf contentEncoding {envelope['contentEncoding']!r}")
        obj = _message(envelope.get("raw") or b"", schema)
    except (_Malformed, UnicodeDecodeError) as exc:
        raise errors.bad_request(f"the request body could not be decoded as protobuf: {exc}") from exc
    return {"apiVersion": api_version, "kind": kind, **obj}
