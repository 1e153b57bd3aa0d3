"""The ring over a rank order and the highest switch tier each ring edge crosses.

The picture colours every edge by that tier. It uses the planner's own placement (`ranktable.plan.place`)
so an edge crosses tier k exactly when the cost model counts it as crossing tier k: the two servers'
tier-k positions differ. Its class is the highest such k (0 when both share their leaf, or leaf group on
a rail-optimised fabric). The ring runs over servers ordered by their lowest rank id, wrapping around.
"""

from __future__ import annotations

from dataclasses import dataclass

from ranktable.hccl.model import RankTable
from ranktable.plan import place
from ranktable.topology.model import Topology


def plural_tier_name(topology: Topology, tier: int) -> str:
    """The switches of a tier, in the plural: leaves, spines, cores, "tier 4 switches"."""
    name = topology.tier_name(tier)
    if name.lower() == "leaf":
        return name[:-1] + "ves"
    if name.startswith("tier "):
        return f"{name} switches"
    return name + "s"


@dataclass(slots=True)
class PlacedServer:
    """A rank-table server at its place in the ring, with where it hangs in the tree (leaf None: unknown)."""

    node_rank: int
    server_id: str
    name: str | None
    leaf: str | None
    leaves: tuple[str, ...]
    ranks: tuple[int, ...]
    key: tuple[tuple[str, ...], ...]


@dataclass(slots=True)
class RingEdge:
    """One ring edge between node ranks `src` -> `dst`, with the highest tier it crosses (0: none)."""

    src: int
    dst: int
    tier: int


def place_servers(table: RankTable, topology: Topology) -> list[PlacedServer]:
    """The servers of `table` in ring order (by lowest rank id), resolved against `topology`."""
    placement = place(table, topology)
    placed: list[PlacedServer] = []
    for node_rank, index in enumerate(placement.rank_order):
        server = table.servers[index]
        leaves = placement.leaves[index]
        placed.append(
            PlacedServer(
                node_rank=node_rank,
                server_id=server.server_id,
                name=placement.names[index],
                leaf=leaves[0] if leaves else None,
                leaves=leaves,
                ranks=tuple(d.rank_id for d in server.devices),
                key=placement.keys[index],
            )
        )
    return placed


def crossing_tier(a: PlacedServer, b: PlacedServer) -> int:
    """The highest tier whose positions differ between two servers (0 when none does)."""
    if a.key is b.key or a.key == b.key:
        return 0
    for tier in range(len(a.key), 0, -1):
        if a.key[tier - 1] != b.key[tier - 1]:
            return tier
    return 0


def ring_edges(placed: list[PlacedServer]) -> list[RingEdge]:
    """The ring over `placed` in order, wrapping around; no edges for a single server."""
    count = len(placed)
    if count < 2:
        return []
    return [
        RingEdge(i, (i + 1) % count, crossing_tier(s, placed[(i + 1) % count])) for i, s in enumerate(placed)
    ]


def crossings_per_tier(edges: list[RingEdge], tiers: int) -> list[int]:
    """Edges crossing each tier (tier 1 first): an edge of class k crosses every tier up to k."""
    return [sum(1 for e in edges if e.tier >= tier) for tier in range(1, tiers + 1)]
