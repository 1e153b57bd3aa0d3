"""The legacy CCE "v0" rank table (`group_list` / `instance_list`), converted to version 1.0.

Older clusters still write this form. HCCL numbers ranks in the order the instances are listed, so the
conversion keeps that order: no re-sorting by the trailing digits of pod names (which may be hashes, as
in ``job-7d9f8c6b5-x2k4q``). ``pod_name`` is optional (kept as an extra field when given).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ranktable.hccl.model import Device, RankTable, Server

if TYPE_CHECKING:
    from ranktable.hccl.io import FieldReader


def read_legacy(doc: dict[str, Any], reader: FieldReader) -> RankTable:
    """Convert a decoded `group_list` document; shape problems go to `reader` with their paths."""
    status = reader.text(doc, "status", "", required=True) or ""
    instances: list[tuple[str | None, str, list[tuple[int, str | None]]]] = []
    for g, group in enumerate(reader.array(doc, "group_list", "", required=True)):
        gpath = f"group_list[{g}]"
        if not isinstance(group, dict):
            reader.problem(gpath, "must be a JSON object")
            continue
        for i, inst in enumerate(reader.array(group, "instance_list", gpath, required=True)):
            ipath = f"{gpath}.instance_list[{i}]"
            if not isinstance(inst, dict):
                reader.problem(ipath, "must be a JSON object")
                continue
            pod_name = reader.text(inst, "pod_name", ipath)
            server_id = reader.text(inst, "server_id", ipath, required=True)
            devices: list[tuple[int, str | None]] = []
            for d, dev in enumerate(reader.array(inst, "devices", ipath, required=True)):
                dpath = f"{ipath}.devices[{d}]"
                if not isinstance(dev, dict):
                    reader.problem(dpath, "must be a JSON object")
                    continue
                device_id = reader.number(dev, "device_id", dpath)
                device_ip = reader.text(dev, "device_ip", dpath)
                if device_id is not None:
                    devices.append((device_id, device_ip))
            if server_id is not None:
                instances.append((pod_name, server_id, devices))
    servers: list[Server] = []
    rank = 0
    for pod_name, server_id, devices in instances:  # the listed order is the rank order
        server = Server(server_id=server_id, extra={"pod_name": pod_name} if pod_name is not None else {})
        for device_id, device_ip in devices:
            server.devices.append(Device(device_id=device_id, rank_id=rank, device_ip=device_ip))
            rank += 1
        servers.append(server)
    return RankTable(status=status, version="1.0", servers=servers, declared_server_count=len(servers))
