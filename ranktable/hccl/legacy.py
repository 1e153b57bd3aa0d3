"""The legacy `group_list` / `instance_list` rank tables, converted to version 1.0.

Two forms share the shape. CCE's "v0" lists one instance per pod; HCCL numbers ranks in the listed
order, so the conversion keeps it: no re-sorting by the trailing digits of pod names (which may be
hashes, as in ``job-7d9f8c6b5-x2k4q``). ``pod_name`` is optional (kept as an extra field when given).
The "lab" form of ModelZoo READMEs and HCCL's test stubs (``deploy_mode: lab``) lists one instance per
device, each with its own ``rank_id`` and the ``server_id`` of its machine: the instances of one
``server_id`` are one server, and a given ``rank_id`` is that device's rank.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ranktable.hccl.model import Device, RankTable, Server

if TYPE_CHECKING:
    from ranktable.hccl.io import FieldReader


def read_legacy(doc: dict[str, Any], reader: FieldReader) -> RankTable:
    """Convert a decoded `group_list` document; shape problems go to `reader` with their paths."""
    status = reader.text(doc, "status", "", required=True) or ""
    instances: list[tuple[str | None, str, int | None, list[tuple[int, str | None]]]] = []
    groups = reader.array(doc, "group_list", "", required=True)
    group_count = reader.number(doc, "group_count", "", required=False)  # "x" is an error, not ignored
    if group_count is not None and group_count != len(groups):
        reader.problem("group_count", f"says {group_count} but group_list has {len(groups)} groups")
    for g, group in enumerate(groups):
        gpath = f"group_list[{g}]"
        if not isinstance(group, dict):
            reader.problem(gpath, "must be a JSON object")
            continue
        reader.number(group, "device_count", gpath, required=False)
        reader.number(group, "instance_count", gpath, required=False)
        for ipath, inst in reader.objects(group, "instance_list", gpath, required=True):
            pod_name = reader.text(inst, "pod_name", ipath)
            server_id = reader.text(inst, "server_id", ipath, required=True)
            rank_id = reader.number(inst, "rank_id", ipath, required=False)
            devices: list[tuple[int, str | None]] = []
            for dpath, dev in reader.objects(inst, "devices", ipath, required=True):
                device_id = reader.number(dev, "device_id", dpath)
                device_ip = reader.text(dev, "device_ip", dpath)
                if device_id is not None:
                    devices.append((device_id, device_ip))
            if server_id is not None:
                instances.append((pod_name, server_id, rank_id, devices))
    by_id: dict[str, Server] = {}  # the instances of one machine (the lab form's one per device)
    rank = 0
    for pod_name, server_id, rank_id, devices in instances:  # the listed order is the rank order
        server = by_id.get(server_id)
        if server is None:
            extra: dict[str, Any] = {"pod_name": pod_name} if pod_name is not None else {}
            server = by_id[server_id] = Server(server_id=server_id, extra=extra)
        for device_id, device_ip in devices:
            given = rank_id if rank_id is not None and len(devices) == 1 else None
            server.devices.append(
                Device(device_id=device_id, rank_id=rank if given is None else given, device_ip=device_ip)
            )
            rank += 1
    servers = list(by_id.values())
    return RankTable(status=status, version="1.0", servers=servers, declared_server_count=len(servers))
