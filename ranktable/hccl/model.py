"""HCCL rank-table data model (versions "1.0" and "1.2"), independent of any file format detail.

Numbers are held as ints here; the writer turns them back into the platform's JSON strings. Unknown
fields are kept in ``extra`` (in their original order) so a read-then-write round trip loses nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ranktable.hccl.columns import RankColumns

STATUS_INITIALIZING = "initializing"
STATUS_COMPLETED = "completed"
SUPPORTED_VERSIONS = ("1.0", "1.2")


@dataclass(slots=True)
class Device:
    device_id: int
    rank_id: int
    device_ip: str | None = None
    device_port: str | None = None
    super_device_id: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Server:
    server_id: str
    devices: list[Device] = field(default_factory=list)
    host_ip: str | None = None
    container_ip: str | None = None
    hardware_type: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class SuperPod:
    super_pod_id: str
    server_ids: list[str] = field(default_factory=list)


@dataclass
class RankTable:
    status: str
    version: str = "1.0"
    servers: list[Server] = field(default_factory=list)
    super_pods: list[SuperPod] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # `server_count` as the file declared it (None when built in code); the writer always writes the
    # real count, the validator compares the two.
    declared_server_count: int | None = field(default=None, compare=False)

    @classmethod
    def from_columns(
        cls,
        status: str,
        version: str,
        columns: RankColumns,
        super_pods: list[SuperPod] | None = None,
        extra: dict[str, Any] | None = None,
        declared_server_count: int | None = None,
    ) -> RankTable:
        """A table whose `servers` objects are built from `columns` on first use (the planner and the
        cost model read the columns and never need them)."""
        table = cls.__new__(cls)
        table.status, table.version, table.super_pods = status, version, super_pods
        table.extra = extra if extra is not None else {}
        table.declared_server_count = declared_server_count
        table.__dict__["_columns"] = columns
        return table

    if not TYPE_CHECKING:

        def __getattr__(self, name: str) -> Any:
            # Only reached when `servers` was never set: a table read column-wise. The objects become
            # the truth from here on (callers may change them), so the columns are dropped.
            columns = self.__dict__.pop("_columns", None) if name == "servers" else None
            if columns is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            servers = self.__dict__["servers"] = columns.to_servers()
            return servers

    @property
    def completed(self) -> bool:
        return self.status == STATUS_COMPLETED

    @property
    def server_count(self) -> int:
        columns = self.__dict__.get("_columns")
        return columns.servers if columns is not None else len(self.servers)

    @property
    def rank_size(self) -> int:
        columns = self.__dict__.get("_columns")
        if columns is not None:
            return int(columns.devices)
        return sum(len(s.devices) for s in self.servers)

    def server(self, server_id: str) -> Server | None:
        return next((s for s in self.servers if s.server_id == server_id), None)


@dataclass(frozen=True)
class Problem:
    """One defect in a rank table, located by its JSON path (e.g. ``server_list[2].device[3].rank_id``)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or '(document)'}: {self.message}"
