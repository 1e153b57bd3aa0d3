"""The legacy CCE "v0" rank table (`group_list` / `instance_list`), converted to version 1.0.

Older clusters still write this form. The ModelArts SDK converts it by sorting instances by the index
suffix of their pod name (``job-worker-10`` after ``job-worker-9``) and numbering ranks in that order;
we do the same so a converted table matches what the SDK would have produced.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ranktable.hccl.model import Device, RankTable, Server

if TYPE_CHECKING:
    from ranktable.hccl.io import FieldReader

POD_INDEX = re.compile(r"(\d+)$")


def pod_index(pod_name: str) -> tuple[int, int, str]:
    """Sort key: pods with a numeric suffix by that number, then the others by name."""
    match = POD_INDEX.search(pod_name)
    return (0, int(match.group(1)), pod_name) if match else (1, 0, pod_name)


def read_legacy(doc: dict[str, Any], reader: FieldReader) -> RankTable:
    """Convert a decoded `group_list` document; shape problems go to `reader` with their paths."""
    status = reader.text(doc, "status", "", required=True) or ""
    instances: list[tuple[tuple[int, int, str], str, list[tuple[int, str | None]]]] = []
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
            pod_name = reader.text(inst, "pod_name", ipath, required=True) or ""
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
                instances.append((pod_index(pod_name), server_id, devices))
    instances.sort(key=lambda item: item[0])
    servers: list[Server] = []
    rank = 0
    for key, server_id, devices in instances:
        server = Server(server_id=server_id, extra={"pod_name": key[2]})
        for device_id, device_ip in devices:
            server.devices.append(Device(device_id=device_id, rank_id=rank, device_ip=device_ip))
            rank += 1
        servers.append(server)
    return RankTable(status=status, version="1.0", servers=servers, declared_server_count=len(servers))
