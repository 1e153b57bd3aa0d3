"""Stable planning after a node replacement: surviving servers keep the ranks they had.

The platform keeps survivors' rank ids when a table changes and gives new devices the smallest unused
ids; a training job restarting from a checkpoint may depend on that. We do the same on top of the
previous *planned* table, and put each new server into the freed slot whose neighbours share most of
its switch path, so the ring gets as little worse as the constraint allows.
"""

from __future__ import annotations

from ranktable.hccl.model import RankTable
from ranktable.plan.placement import Placement, rank_order


def stable_order(
    table: RankTable, previous: RankTable, placement: Placement, full_order: list[int]
) -> tuple[list[int], list[str], list[str], list[str]]:
    """Return (server order, moved survivor ids, new server ids, warnings)."""
    index = {s.server_id: i for i, s in enumerate(table.servers)}
    prev_ids = [previous.servers[i].server_id for i in rank_order(previous)]
    prev_sizes = {s.server_id: len(s.devices) for s in previous.servers}
    prev_set = set(prev_ids)
    new = [i for i in full_order if table.servers[i].server_id not in prev_set]
    slots: list[int | None] = []  # current server index, or None for a freed slot
    slot_size: list[int] = []
    for sid in prev_ids:
        slots.append(index.get(sid))
        slot_size.append(prev_sizes[sid])
    warnings: list[str] = []
    remaining = list(new)
    for pos, occupant in enumerate(slots):
        if occupant is not None or not remaining:
            continue
        fitting = [i for i in remaining if len(table.servers[i].devices) == slot_size[pos]]
        if not fitting:
            continue
        neighbours = _neighbours(slots, pos)
        best = max(fitting, key=lambda i: (_affinity(placement, i, neighbours), -remaining.index(i)))
        slots[pos] = best
        remaining.remove(best)
    order = [i for i in slots if i is not None]
    if remaining:
        warnings.append(
            f"{len(remaining)} new server(s) found no freed slot of their size and were appended at the end"
        )
        order.extend(remaining)
    if len(order) < len(slots):
        warnings.append("the job has fewer servers than before; ranks after the removed servers shift down")
    moved = _moved(table, previous, order)
    if moved:
        warnings.append(f"{len(moved)} surviving server(s) could not keep their ranks")
    return order, moved, [table.servers[i].server_id for i in new], warnings


def _neighbours(slots: list[int | None], pos: int) -> list[int]:
    found: list[int] = []
    for step in (-1, 1):
        j = pos + step
        while 0 <= j < len(slots):
            occupant = slots[j]
            if occupant is not None:
                found.append(occupant)
                break
            j += step
    return found


def _affinity(placement: Placement, server: int, neighbours: list[int]) -> int:
    """How many tier positions the server shares with its would-be neighbours (higher = closer)."""
    mine = placement.keys[server]
    return sum(sum(1 for a, b in zip(mine, placement.keys[n], strict=True) if a == b) for n in neighbours)


def _moved(table: RankTable, previous: RankTable, order: list[int]) -> list[str]:
    before = {s.server_id: min((d.rank_id for d in s.devices), default=0) for s in previous.servers}
    moved: list[str] = []
    rank = 0
    for i in order:
        server = table.servers[i]
        if server.server_id in before and before[server.server_id] != rank:
            moved.append(server.server_id)
        rank += len(server.devices)
    return moved
