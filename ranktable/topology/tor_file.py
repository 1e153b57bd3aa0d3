"""``ranktable_tor.json`` as the platform's ``configmap1980`` plugin writes it: gzip, then base64, of
``{status, version, server_count, server_list: [{pod_name, server_id, device: [{device_id, device_ip,
rank_id, tor_ip, tor_port}]}]}``.

Each device's ``tor_ip`` is the leaf it attaches to: a server whose devices share one ToR is attached
whole, a rail-optimised server (devices on different ToRs) per device. Servers are named by
``server_id``, with ``pod_name`` as an alias.
The plain JSON (already decoded) and raw gzip are accepted too.
"""

from __future__ import annotations

import base64
import binascii
import gzip
import json
import re
from typing import Any

from ranktable.errors import InputError
from ranktable.limits import decode_utf8, gunzip
from ranktable.topology._fields import Field, location, parse_json, type_name
from ranktable.topology.model import Switch, Topology

GZIP_MAGIC = b"\x1f\x8b"
_BASE64 = re.compile(rb"^[A-Za-z0-9+/=\s]+$")


def decode_tor_file(data: str | bytes, source: str = "ranktable_tor.json") -> Any:
    """The JSON inside a tor file: base64 of gzip, raw gzip, or plain JSON."""
    return parse_json(decode_utf8(tor_json_bytes(data, source), source, what="tor file"), source)


def tor_json_bytes(data: str | bytes, source: str = "ranktable_tor.json") -> bytes:
    """The JSON text inside a tor file (base64 of gzip, raw gzip, or plain JSON), not yet parsed."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    stripped = raw.strip()
    if stripped.startswith((b"{", b"[")):
        return stripped
    if not stripped.startswith(GZIP_MAGIC):
        if not _BASE64.match(stripped):
            raise InputError(
                "is neither JSON nor base64 text", where=source, fix="expected gzip + base64 JSON"
            )
        try:
            stripped = base64.b64decode(b"".join(stripped.split()), validate=True)
        except (binascii.Error, ValueError) as err:
            raise InputError(f"invalid base64: {err}", where=source) from None
        if not stripped.startswith(GZIP_MAGIC):
            raise InputError(
                "base64 content is not gzip data", where=source, fix="expected gzip + base64 JSON"
            )
    return gunzip(stripped, source)


def load_tor_file(data: str | bytes, source: str = "ranktable_tor.json") -> Topology:
    """The topology of a tor file as the platform writes it: read with msgspec's typed decoder when it
    is exactly in the platform's form (strings, well-formed, no duplicate), else with the careful reader
    (`topology_from_tor_file`), which says what is wrong. 65,536 devices: ~0.11 s -> ~0.03 s (issue 28)."""
    text = tor_json_bytes(data, source)
    fast = _fast_tor_topology(text, source)
    if fast is not None:
        return fast
    return topology_from_tor_file(parse_json(decode_utf8(text, source, what="tor file"), source), source)


def _plain_device_ids(ids: str, count: int) -> bool:
    """`count` distinct device ids in plain decimal (no sign, no leading zero), space-separated."""
    parts = ids.split(" ")
    return (
        len(parts) == count > 0
        and all(p.isascii() and p.isdecimal() and (p == "0" or p[0] != "0") for p in parts)
        and len(set(parts)) == count
    )


def _fast_tor_topology(text: bytes, source: str) -> Topology | None:
    """The topology when every field is in the platform's form, else None (the careful reader runs)."""
    try:
        from ranktable.topology._tor_schema import decode_tor_json
    except ImportError:  # pragma: no cover - msgspec is a core dependency
        return None
    doc = decode_tor_json(text)
    if doc is None:
        return None
    servers = doc.server_list
    count = doc.server_count
    if type(count) is str and count.isascii() and count.isdecimal():
        count = int(count)  # the platform writes numbers as strings
    if not servers or (count is not None and (type(count) is not int or count != len(servers))):
        return None
    topo = Topology(source=source, tier_names={1: "tor"})
    switches, pods = topo.switches, {}
    plain: dict[str, bool] = {}  # the servers' device-id lists ("0 1 2 ... 7": most are alike), checked
    for server in servers:
        server_id, devices = server.server_id, server.device
        ids = " ".join([d.device_id for d in devices])
        ok = plain.get(ids)
        if ok is None:
            ok = plain[ids] = _plain_device_ids(ids, len(devices))
        tors = {d.tor_ip for d in devices}
        if not ok or not server_id or server_id != server_id.strip() or server_id in topo.server_leaf:
            return None
        for tor in tors if len(tors) == 1 else [d.tor_ip for d in devices]:  # as listed: switch order
            if tor not in switches:
                if not tor or tor != tor.strip():
                    return None
                switches[tor] = Switch(tor, 1)
        if len(tors) == 1:
            topo.attach_server(server_id, devices[0].tor_ip)
        else:
            for device_id, tor in sorted((int(d.device_id), d.tor_ip) for d in devices):
                topo.attach_device(server_id, device_id, tor)
        pod = server.pod_name
        if pod is not None:
            if not pod or pod != pod.strip() or pod in pods:
                return None
            pods[pod] = server_id
    for pod_name, server_id in pods.items():
        topo.register_alias(pod_name, server_id, where=location(source, "server_list"))
    topo.validate()
    return topo


def encode_tor_file(data: dict[str, Any]) -> str:
    """The platform's encoding (gzip then base64) of a tor-file document, for tests and the simulator."""
    return base64.b64encode(gzip.compress(json.dumps(data).encode("utf-8"), mtime=0)).decode("ascii")


def _device(raw: Any, listed: Field, index: int) -> tuple[int, str]:
    """(device_id, tor_ip) of entry `index` of the server's device list: a fast path for the usual
    well-formed entry (65,536 of them for an 8,192-server job; no `Field` is built for it), the checked
    path with field errors otherwise."""
    if type(raw) is dict:
        device_id, tor = raw.get("device_id"), raw.get("tor_ip")
        if type(device_id) is str and device_id.isdigit() and type(tor) is str and tor.strip():
            return int(device_id), tor.strip()
    device = listed.child(index, raw)
    device.mapping()
    device_id = device.key("device_id").integer(minimum=0)
    tor = device.key("tor_ip", fix="the platform writes it when --rank-table-tor-enable is on").text()
    return device_id, tor


def topology_from_tor_file(
    data: str | bytes | dict[str, Any], source: str = "ranktable_tor.json"
) -> Topology:
    """Build a rail-aware topology (tier 1 only) from the tor file or its decoded JSON."""
    doc = data if isinstance(data, dict) else decode_tor_file(data, source)
    root = Field(doc, "", source)
    root.mapping()
    status = root.opt("status")
    servers = list(root.key("server_list").items()) if root.has("server_list") else []
    if not servers:
        if status is not None and status.text() == "initializing":
            raise status.error("is initializing: the platform has not written the switch data yet")
        raise root.child("server_list", None).error("lists no server")
    count = root.opt("server_count")
    if count is not None and count.integer(minimum=0) != len(servers):
        raise count.error(f"says {count.value} but server_list has {len(servers)} servers")

    topo = Topology(source=source, tier_names={1: "tor"})
    pods: dict[str, str] = {}
    for server in servers:
        server_id = server.key("server_id").text()
        if server_id in topo.server_leaf:
            raise server.child("server_id", server_id).error(f"server {server_id!r} is listed twice")
        listed = server.key("device")
        raw_devices = listed.value
        if not isinstance(raw_devices, list):
            raise listed.error(f"expected a list, got {type_name(raw_devices)}")
        if not raw_devices:
            raise server.child("device", []).error("lists no device")
        tors: dict[int, str] = {}
        for index, raw in enumerate(raw_devices):
            device_id, tor = _device(raw, listed, index)
            if device_id in tors:
                raise (
                    listed.child(index, raw)
                    .child("device_id", raw.get("device_id"))
                    .error(f"device {device_id} is listed twice for server {server_id!r}")
                )
            if tor not in topo.switches:
                topo.switches[tor] = Switch(tor, 1)
            tors[device_id] = tor
        if len(set(tors.values())) == 1:
            topo.attach_server(server_id, next(iter(tors.values())))
        else:
            for device_id, tor in sorted(tors.items()):
                topo.attach_device(server_id, device_id, tor)
        pod = server.opt("pod_name")
        if pod is not None:
            name = pod.text()
            if name in pods:
                raise pod.error(f"pod {name!r} is listed for two servers: {pods[name]!r} and {server_id!r}")
            pods[name] = server_id
    for pod_name, server_id in pods.items():
        topo.register_alias(pod_name, server_id, where=location(source, "server_list"))
    topo.validate()
    return topo
