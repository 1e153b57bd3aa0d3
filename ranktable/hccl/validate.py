"""Rank-table validation: every defect HCCL would trip over, each with its JSON path.

HCCL stops at the first bad field with a terse `RanktableCheck` line; we list them all. A table whose
status is still `initializing` is not usable yet but not wrong either, so the report says so explicitly
instead of calling it invalid.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ranktable.errors import InputError
from ranktable.hccl.columns import RankColumns, lazy_columns
from ranktable.hccl.io import read_bytes, read_rank_table_lenient
from ranktable.hccl.lazy import lazy_module
from ranktable.hccl.model import (
    STATUS_COMPLETED,
    STATUS_INITIALIZING,
    SUPPORTED_VERSIONS,
    Problem,
    RankTable,
)
from ranktable.limits import brief

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")  # imported when first used: `ranktable validate` on a small table never does

MAX_DEVICE_ID = 15
MAX_SERVER_ID_LENGTH = 64

# A smaller file is validated from objects alone: as fast at that size, and numpy (0.1-0.3 s to import)
# is never loaded, so `ranktable validate` on a typical table answers in well under 0.15 s.
COLUMNS_FROM_BYTES = 256 * 1024

VALID = "valid"
INVALID = "invalid"
INITIALIZING = "initializing"


@dataclass(frozen=True)
class ValidationReport:
    """The verdict on one table: `status` is ``valid``, ``invalid`` or ``initializing``.

    `problems` is filled whenever something is wrong, also for an initializing table (shown as a hint,
    since the platform may still rewrite it); `table_status` is the file's own ``status`` field.
    """

    status: str
    problems: tuple[Problem, ...] = ()
    table_status: str | None = None
    source: str = "<input>"
    table: RankTable | None = field(default=None, compare=False, repr=False)

    @property
    def completed(self) -> bool:
        return self.table_status == STATUS_COMPLETED

    @property
    def ok(self) -> bool:
        """Usable now: completed and without problems."""
        return self.status == VALID and self.completed

    def summary(self) -> str:
        if self.status == VALID:
            size = f"{len(self.table.servers)} servers, {self.table.rank_size} ranks" if self.table else ""
            return f"{self.source}: valid, status completed ({size})"
        if self.status == INITIALIZING:
            return f"{self.source}: status initializing (not usable yet; filled once every pod runs)"
        return f"{self.source}: invalid, {len(self.problems)} problem{'s' if len(self.problems) != 1 else ''}"

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "status": self.status,
            "table_status": self.table_status,
            "problems": [{"path": p.path, "message": p.message} for p in self.problems],
        }


def validate_rank_table(table: RankTable) -> list[Problem]:
    """Every defect in the table (empty when valid), in document order per kind."""
    problems: list[Problem] = []
    add = problems.append
    if table.status not in (STATUS_INITIALIZING, STATUS_COMPLETED):
        add(
            Problem(
                "status", f"{brief(table.status)} is not a status; expected 'initializing' or 'completed'"
            )
        )
    if table.version not in SUPPORTED_VERSIONS:
        add(
            Problem(
                "version", f"unknown version {brief(table.version)}; expected one of {SUPPORTED_VERSIONS}"
            )
        )
    count = table.server_count
    if table.declared_server_count is not None and table.declared_server_count != count:
        add(
            Problem(
                "server_count",
                f"says {table.declared_server_count} but server_list has {count} servers",
            )
        )
    if table.status == STATUS_COMPLETED and not count:
        add(Problem("server_list", "a completed table must list at least one server"))
    columns = lazy_columns(table)
    if columns is not None and _columns_look_fine(table, columns):
        return problems
    _check_servers(table, add)
    _check_devices(table, add)
    _check_device_counts(table, add)
    _check_ranks(table, add)
    if table.version == "1.2":
        _check_super_pods(table, add)
    return problems


def _columns_look_fine(table: RankTable, columns: RankColumns) -> bool:
    """Every check below at once on a table read column-wise, in the common case where all pass
    (False sends the table to the per-object checks, which name every problem)."""
    ids = columns.server_id
    lengths = list(map(len, ids))
    if len(set(ids)) != len(ids) or (ids and (min(lengths) == 0 or max(lengths) > MAX_SERVER_ID_LENGTH)):
        return False
    counts = columns.counts()
    if len(counts) and counts.min() != counts.max():
        return False
    if columns.devices:
        device = columns.device_id
        if device.min() < 0 or device.max() > MAX_DEVICE_ID:
            return False
        per_server = np.sort(device.reshape(len(counts), int(counts[0])), axis=1)
        if not (per_server[:, 1:] > per_server[:, :-1]).all():  # a device id twice in one server
            return False
    ips = columns.device_ip
    present = ips if all(ips) else [ip for ip in ips if ip]  # all(): no None and no "" in one pass
    if columns.servers > 1 and len(present) != columns.devices:
        return False
    if len(set(present)) != len(present):
        return False
    if table.version == "1.2" and not all(columns.super_device_id):
        return False
    if not _rank_blocks_fine(columns.rank_id, counts):
        return False
    if table.version == "1.2":
        known = set(ids)
        return table.super_pods is not None and all(
            sid in known for pod in table.super_pods for sid in pod.server_ids
        )
    return True


def _check_servers(table: RankTable, add: Any) -> None:
    first: dict[str, int] = {}
    for i, server in enumerate(table.servers):
        path = f"server_list[{i}].server_id"
        if not server.server_id:
            add(Problem(path, "is empty"))
        elif len(server.server_id) > MAX_SERVER_ID_LENGTH:
            add(Problem(path, f"is {len(server.server_id)} characters; HCCL allows at most 64"))
        if server.server_id in first:
            add(
                Problem(
                    path,
                    f"duplicate server_id {server.server_id!r} (also server_list[{first[server.server_id]}])",
                )
            )
        else:
            first[server.server_id] = i


def _devices_look_fine(table: RankTable) -> bool:
    """The common case checked in a few passes (no per-device bookkeeping); False sends the table to
    the detailed check below, which names every problem."""
    every_ip: list[str | None] = []
    for server in table.servers:
        ids = [d.device_id for d in server.devices]
        if ids and (len(set(ids)) != len(ids) or min(ids) < 0 or max(ids) > MAX_DEVICE_ID):
            return False
        every_ip.extend([d.device_ip for d in server.devices])
    present = [ip for ip in every_ip if ip]
    if len(table.servers) > 1 and len(present) != len(every_ip):
        return False
    if len(set(present)) != len(present):
        return False
    return table.version != "1.2" or all(d.super_device_id for s in table.servers for d in s.devices)


def _check_devices(table: RankTable, add: Any) -> None:
    if _devices_look_fine(table):
        return
    ip_first: dict[str, tuple[int, int]] = {}
    multi = len(table.servers) > 1
    needs_super = table.version == "1.2"
    for i, server in enumerate(table.servers):
        ids: dict[int, int] = {}
        for j, dev in enumerate(server.devices):
            if not 0 <= dev.device_id <= MAX_DEVICE_ID:
                add(Problem(_dev(i, j, "device_id"), f"{dev.device_id} is outside 0..{MAX_DEVICE_ID}"))
            first_id = ids.setdefault(dev.device_id, j)
            if first_id != j:
                add(
                    Problem(
                        _dev(i, j, "device_id"),
                        f"device_id {dev.device_id} appears twice in this server (also device[{first_id}])",
                    )
                )
            ip = dev.device_ip
            if ip:
                first_ip = ip_first.setdefault(ip, (i, j))
                if first_ip != (i, j):
                    add(
                        Problem(
                            _dev(i, j, "device_ip"),
                            f"duplicate device_ip {ip} (also {_dev(*first_ip, 'device_ip')})",
                        )
                    )
            elif multi:
                add(
                    Problem(
                        _dev(i, j, "device_ip"),
                        "is missing; it is required when the table has more than one server "
                        "(address_N in /etc/hccn.conf)",
                    )
                )
            if needs_super and not dev.super_device_id:
                add(Problem(_dev(i, j, "super_device_id"), "is missing or empty; version 1.2 requires it"))


def _dev(server: int, device: int, key: str) -> str:
    return f"server_list[{server}].device[{device}].{key}"


def _check_device_counts(table: RankTable, add: Any) -> None:
    counts = Counter(len(s.devices) for s in table.servers)
    if len(counts) <= 1:
        return
    usual = counts.most_common(1)[0][0]
    for i, server in enumerate(table.servers):
        if len(server.devices) != usual:
            add(
                Problem(
                    f"server_list[{i}].device",
                    f"has {len(server.devices)} devices but most servers have {usual}; "
                    "every server must have the same number",
                )
            )


def _ranks_look_fine(table: RankTable) -> bool:
    """Ranks exactly 0..N-1, each server's a contiguous block: the common case in two passes."""
    total = table.rank_size
    if total == 0:
        return True
    if sorted(d.rank_id for s in table.servers for d in s.devices) != list(range(total)):
        return False
    for server in table.servers:  # plain Python: the objects exist already, and numpy stays unloaded
        ranks = [d.rank_id for d in server.devices]
        if ranks and max(ranks) - min(ranks) + 1 != len(ranks):
            return False
    return True


def _rank_blocks_fine(ranks: np.ndarray, counts: np.ndarray) -> bool:
    """`ranks` (server by server, `counts` each) are exactly 0..N-1 and each server's are contiguous."""
    total = len(ranks)
    if total == 0:
        return True
    if ranks.min() < 0 or ranks.max() >= total or np.bincount(ranks, minlength=total).max() != 1:
        return False
    starts = (np.cumsum(counts) - counts)[counts > 0]
    spans = np.maximum.reduceat(ranks, starts) - np.minimum.reduceat(ranks, starts) + 1
    return bool((spans == counts[counts > 0]).all())


def _check_ranks(table: RankTable, add: Any) -> None:
    if _ranks_look_fine(table):
        return
    total = table.rank_size
    owner: dict[int, tuple[int, int]] = {}
    for i, server in enumerate(table.servers):
        for j, dev in enumerate(server.devices):
            rank = dev.rank_id
            if not 0 <= rank < total:
                add(Problem(_dev(i, j, "rank_id"), f"{rank} is outside 0..{total - 1}"))
                continue
            first = owner.setdefault(rank, (i, j))
            if first != (i, j):
                add(
                    Problem(
                        _dev(i, j, "rank_id"), f"rank {rank} is used twice (also {_dev(*first, 'rank_id')})"
                    )
                )
    missing = [r for r in range(total) if r not in owner] if len(owner) < total else []
    if missing:
        add(
            Problem(
                "server_list",
                f"rank ids {format_ranges(missing)} are missing; rank ids must be exactly 0..{total - 1}",
            )
        )
    for i, server in enumerate(table.servers):
        ranks = sorted({d.rank_id for d in server.devices if 0 <= d.rank_id < total})
        if not ranks or ranks[-1] - ranks[0] + 1 == len(ranks):
            continue
        others = _interleaving_servers(owner, ranks[0], ranks[-1], i)
        with_whom = ", ".join(f"server_list[{k}]" for k in others) or "missing ranks"
        add(
            Problem(
                f"server_list[{i}].device",
                f"ranks {format_ranges(ranks)} are not one contiguous block; they interleave with "
                f"{with_whom} (each server's ranks must be consecutive, e.g. 0-7, 8-15)",
            )
        )


def _interleaving_servers(owner: dict[int, tuple[int, int]], low: int, high: int, me: int) -> list[int]:
    """Up to three other servers holding ranks inside this server's span (enough to point at)."""
    found: set[int] = set()
    for rank in range(low, high):
        other = owner.get(rank)
        if other is not None and other[0] != me:
            found.add(other[0])
            if len(found) == 3:
                break
    return sorted(found)


def _check_super_pods(table: RankTable, add: Any) -> None:
    if table.super_pods is None:
        add(Problem("super_pod_list", "is missing; version 1.2 requires it"))
        return
    known = {s.server_id for s in table.servers}
    for i, pod in enumerate(table.super_pods):
        for j, server_id in enumerate(pod.server_ids):
            if server_id not in known:
                add(
                    Problem(
                        f"super_pod_list[{i}].server_list[{j}].server_id",
                        f"{server_id!r} is not in server_list",
                    )
                )


def format_ranges(numbers: list[int]) -> str:
    """`[0, 1, 2, 7]` -> ``0-2, 7`` (short even when thousands of ranks are listed)."""
    parts: list[str] = []
    ordered = sorted(numbers)
    start = prev = ordered[0] if ordered else 0
    for n in ordered[1:]:
        if n == prev + 1:
            prev = n
            continue
        parts.append(f"{start}-{prev}" if prev > start else str(start))
        start = prev = n
    if ordered:
        parts.append(f"{start}-{prev}" if prev > start else str(start))
    return ", ".join(parts)


def check_rank_table(table: RankTable, source: str = "<input>") -> ValidationReport:
    """The explicit verdict for a table already in memory."""
    return _report(table, validate_rank_table(table), source)


def check_document(
    data: str | bytes | dict[str, Any], source: str = "<input>", *, columns: bool = True
) -> ValidationReport:
    """Read and validate raw file content; shape and content problems come back together.
    ``columns=False``: objects only, no numpy (see `COLUMNS_FROM_BYTES`)."""
    try:
        table, shape = read_rank_table_lenient(data, source, columns=columns)
    except InputError as exc:
        return ValidationReport(INVALID, (Problem("", exc.reason),), None, source)
    if table is None:
        return ValidationReport(INVALID, tuple(shape), None, source)
    located = {p.path for p in shape}  # one message per field: a shape problem already says it
    return _report(table, shape + [p for p in validate_rank_table(table) if p.path not in located], source)


def check_file(path: str | os.PathLike[str]) -> ValidationReport:
    """Validate a file (a missing file raises `NotFoundError`)."""
    data = read_bytes(path)
    return check_document(data, source=str(path), columns=len(data) >= COLUMNS_FROM_BYTES)


def _report(table: RankTable, problems: list[Problem], source: str) -> ValidationReport:
    status = INVALID if problems else VALID
    if table.status == STATUS_INITIALIZING:
        status = INITIALIZING
    return ValidationReport(status, tuple(problems), table.status, source, table)
