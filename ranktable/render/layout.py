"""Where things go in one panel of the layout picture: switch rows, columns, and a slot per server or leaf.

The geometry is shared by both panels (given and planned) so the eye compares like with like: the
physical place of a server never moves, only its rank numbers and the ring drawn over it change. Small
pools get one slot per server (with its NPUs); past a threshold a slot is a whole leaf, and when even
the leaves are too many for one row of columns, columns become the switches of a higher tier with
their leaves stacked inside. Columns that still do not fit wrap into bands, each with its own switch rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ranktable.render.ring import PlacedServer
from ranktable.topology.model import Topology

UNPLACED = "\x00unplaced"  # column/slot key for servers the topology does not know (never a switch name)

# Detailed mode (one slot per server).
CELL_W = 26.0
CELL_H = 16.0
CELLS_PER_ROW = 4
SERVER_PAD = 5.0
SERVER_HEAD = 16.0
SERVER_W = CELLS_PER_ROW * CELL_W + 2 * SERVER_PAD
SERVER_GAP = 14.0
# Aggregated mode (one slot per leaf).
LEAF_W = 124.0
LEAF_H = 48.0
LEAF_GAP = 8.0
# Shared.
COL_PAD = 10.0
COL_GAP = 26.0
SWITCH_H = 24.0
TIER_GAP = 28.0
COLUMN_TOP_GAP = 14.0
MIN_SWITCH_W = 60.0
BAND_GAP = 36.0


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    w: float
    h: float

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def bottom(self) -> float:
        return self.y + self.h


@dataclass(frozen=True)
class SwitchNode:
    name: str
    tier: int
    parent: str | None
    rect: Rect
    band: int = 0
    column_top: float | None = None  # for the lowest drawn tier: where its column starts


@dataclass(frozen=True)
class Column:
    key: str
    rect: Rect
    band: int = 0


@dataclass
class Frame:
    """The panel body shared by given and planned: origin (0, 0) is the top of the highest switch row."""

    aggregated: bool
    column_tier: int
    top_tier: int
    switches: list[SwitchNode] = field(default_factory=list)
    columns: list[Column] = field(default_factory=list)
    slots: dict[str, Rect] = field(default_factory=dict)
    slot_column: dict[str, str] = field(default_factory=dict)
    slot_of_server: dict[str, str] = field(default_factory=dict)
    width: float = 0.0
    height: float = 0.0


def server_box_height(device_count: int) -> float:
    rows = max(1, math.ceil(device_count / CELLS_PER_ROW))
    return SERVER_HEAD + rows * CELL_H + SERVER_PAD


def _first_seen(placed: list[PlacedServer], topology: Topology) -> dict[str, int]:
    """Position in `placed` where each switch (and UNPLACED) is first met: the column order."""
    seen: dict[str, int] = {}
    for server in placed:
        chain = topology.path(server.leaf) if server.leaf else [UNPLACED]
        for name in chain:
            seen.setdefault(name, server.node_rank)
    return seen


def _ordered_leaves(placed: list[PlacedServer], topology: Topology, top: int) -> list[str]:
    """Used leaves in tree (depth-first) order, following the order `placed` meets them; UNPLACED last."""
    seen = _first_seen(placed, topology)
    big = len(placed) + 1

    def key(leaf: str) -> tuple[int, ...]:
        if leaf == UNPLACED:
            return (big + 1,) * (top + 1)
        above = [topology.ancestor(leaf, tier) for tier in range(top, 0, -1)]
        return (*(seen.get(name, big) if name else -1 for name in above), seen[leaf])

    leaves = {s.leaf or UNPLACED for s in placed}
    return sorted(leaves, key=key)


def _group_key(topology: Topology, leaf: str, tier: int) -> str:
    """The tier-`tier` switch a leaf belongs to (its topmost switch when the tree is shorter)."""
    if leaf == UNPLACED:
        return UNPLACED
    return topology.ancestor(leaf, tier) or topology.path(leaf)[-1]


def choose_column_tier(leaves: list[str], topology: Topology, top: int, max_columns: int) -> int:
    """The lowest tier whose switches fit in `max_columns` columns (the top tier if none does)."""
    for tier in range(1, top + 1):
        if len({_group_key(topology, leaf, tier) for leaf in leaves}) <= max_columns:
            return tier
    return top


def build_frame(
    order: list[PlacedServer],
    topology: Topology,
    *,
    aggregated: bool,
    max_columns: int = 12,
) -> Frame:
    """Lay out the switch rows and the slots for the servers of `order` (usually the planned order)."""
    top = max(topology.tier_count, 1)
    leaves = _ordered_leaves(order, topology, top)
    column_tier = choose_column_tier(leaves, topology, top, max_columns) if aggregated else 1
    frame = Frame(aggregated=aggregated, column_tier=column_tier, top_tier=top)

    column_keys: list[str] = []
    leaves_in_column: dict[str, list[str]] = {}
    for leaf in leaves:
        key = _group_key(topology, leaf, column_tier) if aggregated else leaf
        if key not in leaves_in_column:
            column_keys.append(key)
            leaves_in_column[key] = []
        leaves_in_column[key].append(leaf)

    servers_in_leaf: dict[str, list[PlacedServer]] = {}
    rails: dict[str, list[str]] = {}
    for server in order:
        servers_in_leaf.setdefault(server.leaf or UNPLACED, []).append(server)
        if server.leaf:
            group = rails.setdefault(server.leaf, [server.leaf])
            group.extend(leaf for leaf in server.leaves if leaf not in group)

    rows = top - column_tier + 1
    switch_rows_h = rows * (SWITCH_H + TIER_GAP) - TIER_GAP + COLUMN_TOP_GAP
    inner_w = LEAF_W if aggregated else SERVER_W
    col_w = inner_w + 2 * COL_PAD
    band_top = 0.0
    for band, keys in enumerate(_bands(column_keys, max_columns)):
        columns_y = band_top + switch_rows_h
        bottom = columns_y
        for index, key in enumerate(keys):
            x = index * (col_w + COL_GAP)
            y = columns_y + COL_PAD
            for leaf in leaves_in_column[key]:
                if aggregated:
                    frame.slots[leaf] = Rect(x + COL_PAD, y, LEAF_W, LEAF_H)
                    frame.slot_column[leaf] = key
                    for server in servers_in_leaf[leaf]:
                        frame.slot_of_server[server.server_id] = leaf
                    y += LEAF_H + LEAF_GAP
                else:
                    for server in servers_in_leaf[leaf]:
                        h = server_box_height(len(server.ranks))
                        frame.slots[server.server_id] = Rect(x + COL_PAD, y, SERVER_W, h)
                        frame.slot_column[server.server_id] = key
                        frame.slot_of_server[server.server_id] = server.server_id
                        y += h + SERVER_GAP
            column_bottom = y - (LEAF_GAP if aggregated else SERVER_GAP) + COL_PAD
            frame.columns.append(Column(key, Rect(x, columns_y, col_w, column_bottom - columns_y), band))
            bottom = max(bottom, column_bottom)
        frame.width = max(frame.width, len(keys) * (col_w + COL_GAP) - COL_GAP, col_w)
        in_band = [c for c in frame.columns if c.band == band]
        frame.switches += _switch_rows(
            in_band, band, band_top, topology, leaves_in_column, rails, column_tier, top
        )
        frame.height = bottom
        band_top = bottom + BAND_GAP
    return frame


def _bands(keys: list[str], max_columns: int) -> list[list[str]]:
    """Split columns into rows of near-equal length, at most `max_columns` each."""
    count = max(1, math.ceil(len(keys) / max(max_columns, 1)))
    size = math.ceil(len(keys) / count) if keys else 1
    return [keys[i : i + size] for i in range(0, len(keys), size)] or [[]]


def _switch_rows(
    columns: list[Column],
    band: int,
    band_top: float,
    topology: Topology,
    leaves_in_column: dict[str, list[str]],
    rails: dict[str, list[str]],
    column_tier: int,
    top: int,
) -> list[SwitchNode]:
    """One box per used switch of tiers >= column_tier, centred over the columns below it.

    On a rail-optimised fabric a column's servers use several leaves; those share the column's width.
    """
    span: dict[str, tuple[float, float]] = {}
    column_top: dict[str, float] = {}

    def widen(name: str, left: float, right: float) -> None:
        old = span.get(name, (left, right))
        span[name] = (min(old[0], left), max(old[1], right))

    for column in columns:
        if column.key == UNPLACED:
            continue
        leaves = [rail for leaf in leaves_in_column[column.key] for rail in rails.get(leaf, [leaf])]
        for name in {name for leaf in leaves for name in topology.path(leaf)}:
            tier = topology.switches[name].tier
            if tier > column_tier or (tier == column_tier and column_tier > 1):
                widen(name, column.rect.x, column.rect.right)
                if tier == column_tier:
                    column_top[name] = column.rect.y
        if column_tier == 1:
            share = column.rect.w / len(leaves)
            for i, leaf in enumerate(leaves):
                pad = 0.0 if len(leaves) == 1 else COL_PAD - 4.0
                widen(leaf, column.rect.x + i * share - pad, column.rect.x + (i + 1) * share + pad)
                column_top[leaf] = column.rect.y
    nodes: list[SwitchNode] = []
    for name, (left, right) in span.items():
        switch = topology.switches[name]
        width = right - left - 2 * COL_PAD
        if switch.tier > 1 or width > MIN_SWITCH_W:
            width = max(width, MIN_SWITCH_W)
        row = top - switch.tier
        rect = Rect((left + right - width) / 2, band_top + row * (SWITCH_H + TIER_GAP), width, SWITCH_H)
        nodes.append(SwitchNode(name, switch.tier, switch.parent, rect, band, column_top.get(name)))
    nodes.sort(key=lambda n: (-n.tier, n.rect.x))
    return nodes
