"""Where each server of a rank table sits in the switch tree, as sortable keys and integer codes.

A server's tier-k position is the set of tier-k switches above the leaves its devices use: one switch on
an ordinary fabric, several on a rail-optimised one (where a server's rail group acts as one "switch").
Because a tier-(k+1) position is a function of the tier-k position, sorting servers by their positions
from the top tier down makes every tier-k group one contiguous block; that is what the planner relies on.
The cost model reuses the same codes to count ring crossings and uplink flows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ranktable.hccl.columns import RankColumns, columns_of, lazy_columns
from ranktable.hccl.model import RankTable
from ranktable.topology.model import Topology

UNKNOWN = "?"  # tier key of servers the topology does not know: one group at every tier
_DIGITS = re.compile(r"(\d+)")


def natural_key(name: str) -> tuple[str | int, ...]:
    """`leaf2` before `leaf10`; parts alternate str/int so keys always compare."""
    return tuple(int(part) if i % 2 else part for i, part in enumerate(_DIGITS.split(name)))


@dataclass
class Placement:
    """Per server (index into ``table.servers``): canonical name, leaves used and per-tier keys."""

    tiers: int
    names: list[str | None]
    leaves: list[tuple[str, ...]]
    keys: list[tuple[tuple[str, ...], ...]]  # keys[i][k-1] = tier-k position of server i
    rank_order: list[int]  # server indices in the table's own rank order
    device_leaf: list[list[str | None]] = field(default_factory=list)  # per server, per device entry
    rails: bool = True  # False: no server's devices span leaves (each device_leaf entry is one leaf repeated)
    # per server the index of its key in `group_keys` (0 = the unknown key): the per-server passes
    # (tier codes, tree order, device leaves) then run once per distinct key and are spread with numpy
    group: np.ndarray | None = None
    group_keys: list[tuple[tuple[str, ...], ...]] = field(default_factory=list)
    group_leaf: list[str | None] = field(default_factory=list)  # without rails: each group's one leaf
    _codes: np.ndarray | None = field(default=None, init=False, repr=False, compare=False)

    def reordered(self, order: list[int]) -> Placement:
        """The placement of the table `renumber(table, order)` builds: servers in `order`, ranks ascending."""
        placement = Placement(
            self.tiers,
            [self.names[i] for i in order],
            [self.leaves[i] for i in order],
            [self.keys[i] for i in order],
            list(range(len(order))),
            [self.device_leaf[i] for i in order] if self.device_leaf else [],
            self.rails,
            None if self.group is None else self.group[np.asarray(order, dtype=np.int64)],
            self.group_keys,
            self.group_leaf,
        )
        if self._codes is not None:
            placement._codes = self._codes[:, np.asarray(order, dtype=np.int64)]
        return placement

    def groups(self) -> np.ndarray:
        """Per server its index in `group_keys` (0 = unknown), derived from `keys` when not given."""
        if self.group is None:
            index: dict[tuple[tuple[str, ...], ...], int] = {}
            found = [
                0 if name is None else index.setdefault(key, len(index) + 1)
                for name, key in zip(self.names, self.keys, strict=True)
            ]
            self.group = np.array(found, dtype=np.int64)
            self.group_keys = [tuple((UNKNOWN,) for _ in range(self.tiers)), *index]
        return self.group

    @property
    def unknown(self) -> list[int]:
        return [i for i, name in enumerate(self.names) if name is None]

    def tier_codes(self) -> np.ndarray:
        """An int array [tiers, servers]: equal code = same tier-k position (computed once; read-only)."""
        if self._codes is None or self._codes.shape[1] != len(self.keys):
            codes = np.zeros((self.tiers, len(self.keys)), dtype=np.int64)
            for k in range(self.tiers):
                seen: dict[tuple[str, ...], int] = {}
                per_group = [seen.setdefault(key[k], len(seen)) for key in self.group_keys]
                codes[k] = np.array(per_group, dtype=np.int64)[self.groups()]
            codes.flags.writeable = False
            self._codes = codes
        return self._codes

    def switches_per_tier(self) -> list[int]:
        """How many distinct tier-k positions the job uses (the planner's bound for ring crossings)."""
        return [len({key[k] for key in self.keys}) for k in range(self.tiers)]


def rails_of(topology: Topology) -> dict[str, dict[int, str]]:
    """Per-device leaves grouped by server, built once (the model stores them flat)."""
    rails: dict[str, dict[int, str]] = {}
    for (server, device_id), leaf in topology.device_leaf.items():
        rails.setdefault(server, {})[device_id] = leaf
    return rails


def rank_order(table: RankTable) -> list[int]:
    """Server indices ordered by their lowest rank id (the ring the given table really forms)."""
    columns = lazy_columns(table)
    if columns is not None:
        return first_rank_order(columns)
    firsts = [min((d.rank_id for d in s.devices), default=i) for i, s in enumerate(table.servers)]
    return sorted(range(len(table.servers)), key=lambda i: (firsts[i], i))


def first_rank_order(columns: RankColumns) -> list[int]:
    """`rank_order` on columns: by lowest rank id, ties by index (a stable sort keeps index order)."""
    return [int(i) for i in np.argsort(columns.first_ranks(), kind="stable")]


def place(table: RankTable, topology: Topology) -> Placement:
    """Resolve every server against the topology and compute its tier keys."""
    return place_columns(columns_of(table), topology)


def place_columns(columns: RankColumns, topology: Topology) -> Placement:
    """`place` for a table read column-wise (the same placement, without per-device objects)."""
    tiers = max(topology.tier_count, 1)
    rails = rails_of(topology)
    if not rails:
        return _place_whole_servers(columns, topology, tiers)
    key_cache: dict[tuple[str, ...], tuple[int, tuple[tuple[str, ...], ...]]] = {}  # used -> (group, key)
    unknown_key = tuple((UNKNOWN,) for _ in range(tiers))
    names: list[str | None] = []
    leaves: list[tuple[str, ...]] = []
    keys: list[tuple[tuple[str, ...], ...]] = []
    groups: list[int] = []
    device_leaf: list[list[str | None]] = []
    counts = columns.counts().tolist()
    bounds = columns.start.tolist()
    device_ids = columns.device_id.tolist() if rails else []
    resolve, server_leaf = topology.resolve, topology.server_leaf
    for i, (server_id, host, container) in enumerate(
        zip(columns.server_id, columns.host_ip, columns.container_ip, strict=True)
    ):
        name = resolve(server_id, host, container)
        count = counts[i]
        default = server_leaf.get(name) if name is not None else None
        rail = rails.get(name) if name is not None and rails else None
        if rail is None:
            per_device: list[str | None] = [default] * count
            used: tuple[str, ...] = (default,) if default is not None and count else ()
        else:
            per_device = [rail.get(d, default) for d in device_ids[bounds[i] : bounds[i + 1]]]
            used = tuple(sorted({leaf for leaf in per_device if leaf is not None}))
        if name is None or not used:
            names.append(None)
            leaves.append(())
            keys.append(unknown_key)
            groups.append(0)
            device_leaf.append([None] * count)
            continue
        names.append(name)
        leaves.append(used)
        device_leaf.append(per_device)
        found = key_cache.get(used)
        if found is None:
            found = key_cache[used] = (len(key_cache) + 1, _tier_key(topology, used, tiers))
        groups.append(found[0])
        keys.append(found[1])
    return Placement(
        tiers,
        names,
        leaves,
        keys,
        first_rank_order(columns),
        device_leaf,
        bool(rails),
        np.array(groups, dtype=np.int64),
        [unknown_key, *(key for _, key in key_cache.values())],
    )


def _place_whole_servers(columns: RankColumns, topology: Topology, tiers: int) -> Placement:
    """`place_columns` when every server sits under one leaf (no rails): a few passes over servers."""
    unknown_key = tuple((UNKNOWN,) for _ in range(tiers))
    counts = columns.counts().tolist()
    leaf_of = topology.server_leaf
    resolve = topology.resolve
    resolved = [  # most server_ids are the topology's own names: skip the general lookup for those
        server_id if server_id and server_id in leaf_of else resolve(server_id, host, container)
        for server_id, host, container in zip(
            columns.server_id, columns.host_ip, columns.container_ip, strict=True
        )
    ]
    found = [
        leaf_of.get(name) if name is not None and count else None
        for name, count in zip(resolved, counts, strict=True)
    ]
    group_of = {leaf: n for n, leaf in enumerate(dict.fromkeys([None, *found]))}  # None (unknown) first
    key_of = {leaf: unknown_key if leaf is None else _tier_key(topology, (leaf,), tiers) for leaf in group_of}
    return Placement(
        tiers,
        [name if leaf is not None else None for name, leaf in zip(resolved, found, strict=True)],
        [(leaf,) if leaf is not None else () for leaf in found],
        list(map(key_of.__getitem__, found)),
        first_rank_order(columns),
        [[leaf] * count for leaf, count in zip(found, counts, strict=True)],
        False,
        np.fromiter(map(group_of.__getitem__, found), dtype=np.int64, count=len(found)),
        list(key_of.values()),
        list(group_of),
    )


def _tier_key(topology: Topology, used: tuple[str, ...], tiers: int) -> tuple[tuple[str, ...], ...]:
    return tuple(
        tuple(sorted({topology.ancestor(leaf, k) or "" for leaf in used})) for k in range(1, tiers + 1)
    )


def ring_crossings(codes: np.ndarray, order: list[int] | np.ndarray) -> list[int]:
    """Per tier, ring edges (consecutive servers, wrapping) whose tier-k positions differ."""
    if len(order) < 2:
        return [0] * codes.shape[0]
    ordered = codes[:, np.asarray(order, dtype=np.int64)]
    return [int(n) for n in (ordered != np.roll(ordered, -1, axis=1)).sum(axis=1)]
