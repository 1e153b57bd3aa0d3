"""A rank table held column-wise: one numpy array (or list) per device field, servers as offsets.

A 65,536-rank table as 65,536 `Device` objects costs more to build than the JSON it came from takes to
parse. The planner and the cost model only need a few columns, so the reader of a well-formed table
keeps those, and `RankTable.servers` builds the objects only when a caller asks for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ranktable.hccl.lazy import lazy_module
from ranktable.hccl.model import Device, RankTable, Server

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")  # imported when first used: `ranktable validate` on a small table never does


@dataclass(frozen=True, eq=False)
class RankColumns:
    """Per server (lists of `servers` entries) and per device (arrays of `devices` entries, server by
    server in file order); server i's devices are rows ``start[i]:start[i + 1]``. No unknown fields:
    a table that has some is read into objects instead."""

    server_id: list[str]
    host_ip: list[str | None]
    container_ip: list[str | None]
    hardware_type: list[str | None]
    start: np.ndarray  # int64, servers + 1 offsets
    device_id: np.ndarray  # int64
    rank_id: np.ndarray  # int64
    device_ip: list[str | None]
    device_port: list[str | None]
    super_device_id: list[str | None]

    @property
    def servers(self) -> int:
        return len(self.server_id)

    @property
    def devices(self) -> int:
        return len(self.rank_id)

    def counts(self) -> np.ndarray:
        """Devices per server."""
        return np.diff(self.start)

    def server_of_device(self) -> np.ndarray:
        """Per device row, the index of its server."""
        return np.repeat(np.arange(self.servers, dtype=np.int64), self.counts())

    def first_ranks(self) -> np.ndarray:
        """Per server its lowest rank id (its index when it has no device, as `rank_order` sorts)."""
        counts = self.counts()
        out = np.arange(self.servers, dtype=np.int64)
        present = counts > 0
        if present.any():
            out[present] = np.minimum.reduceat(self.rank_id, self.start[:-1][present])
        return out

    def to_servers(self) -> list[Server]:
        """The object form (each device and server with its own empty `extra`)."""
        ids, ranks, bounds = self.device_id.tolist(), self.rank_id.tolist(), self.start.tolist()
        ips, ports, supers = self.device_ip, self.device_port, self.super_device_id
        servers: list[Server] = []
        for i, server_id in enumerate(self.server_id):
            devices = [
                Device(ids[j], ranks[j], ips[j], ports[j], supers[j], {})
                for j in range(bounds[i], bounds[i + 1])
            ]
            servers.append(
                Server(server_id, devices, self.host_ip[i], self.container_ip[i], self.hardware_type[i], {})
            )
        return servers

    def renumbered(self, order: Sequence[int]) -> tuple[RankColumns, np.ndarray]:
        """Servers in `order`, ranks 0..N-1 contiguous per server (device order kept); with the old rank
        of every new rank."""
        index = np.asarray(order, dtype=np.int64)
        counts = self.counts()[index]
        start = np.zeros(len(index) + 1, dtype=np.int64)
        np.cumsum(counts, out=start[1:])
        rows = np.repeat(self.start[:-1][index] - start[:-1], counts) + np.arange(start[-1], dtype=np.int64)
        picked = rows.tolist()
        columns = RankColumns(
            [self.server_id[i] for i in order],
            [self.host_ip[i] for i in order],
            [self.container_ip[i] for i in order],
            [self.hardware_type[i] for i in order],
            start,
            self.device_id[rows],
            np.arange(len(rows), dtype=np.int64),
            _picked(self.device_ip, picked),
            _picked(self.device_port, picked),
            _picked(self.super_device_id, picked),
        )
        return columns, self.rank_id[rows]

    @classmethod
    def of_servers(cls, servers: list[Server]) -> RankColumns:
        """Columns of an object table (unknown fields are not carried)."""
        counts = [len(s.devices) for s in servers]
        start = np.zeros(len(servers) + 1, dtype=np.int64)
        np.cumsum(counts, out=start[1:])
        devices = [d for s in servers for d in s.devices]
        return cls(
            [s.server_id for s in servers],
            [s.host_ip for s in servers],
            [s.container_ip for s in servers],
            [s.hardware_type for s in servers],
            start,
            np.fromiter((d.device_id for d in devices), dtype=np.int64, count=len(devices)),
            np.fromiter((d.rank_id for d in devices), dtype=np.int64, count=len(devices)),
            [d.device_ip for d in devices],
            [d.device_port for d in devices],
            [d.super_device_id for d in devices],
        )


def _picked(values: list[str | None], rows: list[int]) -> list[str | None]:
    if values == [None] * len(values):  # a field the table does not use (compared by identity: fast)
        return [None] * len(rows)
    return list(map(values.__getitem__, rows))


def lazy_columns(table: RankTable) -> RankColumns | None:
    """The columns of a table whose objects were never built (None once `table.servers` was used:
    from then on the objects, which callers may change, are the truth)."""
    columns = table.__dict__.get("_columns")
    return columns if isinstance(columns, RankColumns) else None


def columns_of(table: RankTable) -> RankColumns:
    """The table's columns: kept from reading, or built from its objects now."""
    return lazy_columns(table) or RankColumns.of_servers(table.servers)
