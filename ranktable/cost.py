"""An alpha-beta cost model of all-reduce on a rank order, to say what a plan buys in seconds.

Constants are HCCL's own selector values (alpha = 60 us, HCCS 18.3 GB/s, RoCE 20 GB/s per NPU), derated
modelling figures rather than datasheet ones; every one is overridable through `LinkModel`.

Congestion: a switch whose uplinks are oversubscribed r:1 has (NPU ports below it) / r uplink "lanes",
each as fast as one NPU NIC (or `uplink_gbps` of capacity when the topology says). Every ring edge that
leaves a switch's subtree is one flow on its uplink; when flows outnumber lanes each flow gets
lanes/flows of a NIC, and a ring runs at its slowest edge. A pod-index order sends about two flows per
server through every leaf uplink; a planned order sends one per ring and leaf.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from ranktable.hccl.bulk import gc_paused
from ranktable.hccl.model import RankTable
from ranktable.plan.placement import Placement, place, ring_crossings
from ranktable.topology.model import Topology

GIB = 1 << 30


@dataclass(frozen=True)
class LinkModel:
    """Link classes; bandwidths are in GB/s (gigabytes per second) per NPU, alpha in seconds per step."""

    alpha_s: float = 60e-6
    hccs_gbps: float = 18.3
    roce_gbps: float = 20.0
    gamma_s_per_byte: float = 0.0  # reduction compute per byte; HCCL's selector leaves it out too


def ring_allreduce_seconds(ranks: int, message_bytes: float, gbps: float, links: LinkModel) -> float:
    """Ring all-reduce: 2(p-1) steps of alpha plus 2(p-1)/p of the message over the slowest link."""
    if ranks <= 1 or message_bytes <= 0:
        return 0.0
    share = (ranks - 1) / ranks * message_bytes
    return 2 * (ranks - 1) * links.alpha_s + 2 * share / (gbps * 1e9) + share * links.gamma_s_per_byte


def hierarchical_allreduce_seconds(
    servers: int, local: int, message_bytes: float, inter_gbps: float, links: LinkModel
) -> float:
    """In-server reduce-scatter over HCCS, one inter-server ring per local device on 1/local of the
    data (all `local` rings at once), then in-server all-gather."""
    if message_bytes <= 0:
        return 0.0
    in_server = 0.0
    if local > 1:
        share = (local - 1) / local * message_bytes
        in_server = (local - 1) * links.alpha_s + share / (links.hccs_gbps * 1e9)
        in_server += share * links.gamma_s_per_byte / 2
    inter = ring_allreduce_seconds(servers, message_bytes / max(local, 1), inter_gbps, links)
    return 2 * in_server + inter


@dataclass
class OrderMetrics:
    """What one rank order costs: ring crossings, the busiest uplink and the all-reduce estimate."""

    crossings_per_tier: list[int]  # tier 1 first; edges of the server ring crossing each tier
    max_uplink_flows: int  # most ring flows through one switch uplink (one direction)
    allreduce_seconds: float  # the estimate for the algorithm below
    algorithm: str  # "hierarchical" (equal device counts, >1 server and device) or "ring"
    ring_seconds: float  # flat ring over all ranks in rank order
    hierarchical_seconds: float | None
    inter_server_gbps: float  # per-NPU bandwidth of the slowest inter-server edge
    busiest_uplink: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Comparison:
    """The given order against the planned one for one message size."""

    given: OrderMetrics
    planned: OrderMetrics
    speedup: float  # given time / planned time
    message_bytes: int
    servers: int
    ranks: int
    tier_names: list[str] = field(default_factory=list)
    links: LinkModel = field(default_factory=LinkModel)

    def to_json(self) -> dict[str, Any]:
        return {
            "message_bytes": self.message_bytes,
            "servers": self.servers,
            "ranks": self.ranks,
            "tiers": self.tier_names,
            "given": self.given.to_json(),
            "planned": self.planned.to_json(),
            "speedup": self.speedup,
            "links": asdict(self.links),
        }


class _Fabric:
    """Integer codes for switches, per-tier ancestors of every leaf and uplink lanes, built once."""

    def __init__(self, topology: Topology, devices_per_server: int, links: LinkModel) -> None:
        self.tiers = max(topology.tier_count, 1)
        self.names = sorted(topology.switches)
        self.code = {name: i for i, name in enumerate(self.names)}
        count = len(self.names)
        # anc[k, s] = code of the tier-(k+1) switch above switch s (-1 if none); unknown leaf = index count
        self.anc = np.full((self.tiers, count + 1), -1, dtype=np.int64)
        for name, i in self.code.items():
            for k in range(self.tiers):
                above = topology.ancestor(name, k + 1)
                if above is not None:
                    self.anc[k, i] = self.code[above]
        self.lanes = self._lanes(topology, devices_per_server, links)

    def _lanes(self, topology: Topology, devices_per_server: int, links: LinkModel) -> np.ndarray:
        ports = np.zeros(len(self.names), dtype=np.float64)
        railed = {server for server, _ in topology.device_leaf}
        for (_, _), leaf in topology.device_leaf.items():
            if leaf in self.code:
                ports[self.code[leaf]] += 1
        for server, leaf in topology.server_leaf.items():
            if server not in railed and leaf in self.code:
                ports[self.code[leaf]] += devices_per_server
        lanes = np.zeros(len(self.names), dtype=np.float64)
        nic = links.roce_gbps
        by_tier = sorted(topology.switches.values(), key=lambda sw: sw.tier)
        down = ports.copy()
        for sw in by_tier:  # children before parents, so `down` of a parent is complete when reached
            i = self.code[sw.name]
            if sw.uplink_gbps:
                lanes[i] = sw.uplink_gbps / 8 / nic
            else:
                lanes[i] = down[i] / sw.oversubscription
            if sw.parent is not None and sw.parent in self.code:
                down[self.code[sw.parent]] += lanes[i]
        return np.maximum(lanes, 1e-9)

    def leaf_code(self, leaf: str | None) -> int:
        return self.code.get(leaf, len(self.names)) if leaf is not None else len(self.names)

    def flows(self, src: np.ndarray, dst: np.ndarray) -> tuple[float, int, str | None]:
        """For ring edges leaf `src` -> leaf `dst`: (slowest edge as a NIC fraction, most flows, where)."""
        if src.size == 0:
            return 1.0, 0, None
        factor = np.ones(src.size, dtype=np.float64)
        most, where = 0, None
        for k in range(self.tiers):
            a = self.anc[k, src]
            b = self.anc[k, dst]
            cross = (a != b) & (a >= 0) & (b >= 0)
            if not cross.any():
                continue
            up = np.bincount(a[cross], minlength=len(self.names))
            down = np.bincount(b[cross], minlength=len(self.names))
            load = np.maximum(up, down)
            busiest = int(load.argmax())
            if load[busiest] > most:
                most, where = int(load[busiest]), self.names[busiest]
            share = np.minimum(self.lanes / np.maximum(up, 1), self.lanes / np.maximum(down, 1))
            edge = np.minimum(share[a[cross]], share[b[cross]])
            factor[cross] = np.minimum(factor[cross], edge)
        return float(min(1.0, factor.min())), most, where


def _device_leaves(
    table: RankTable, placement: Placement, fabric: _Fabric, order: list[int]
) -> list[list[int]]:
    """Per server in ring order, the leaf code of each device in rank order."""
    rows: list[list[int]] = []
    for i in order:
        devices = table.servers[i].devices
        leaves = placement.device_leaf[i]
        if len(set(leaves)) <= 1:
            rows.append([fabric.leaf_code(leaves[0] if leaves else None)] * len(devices))
            continue
        by_rank = sorted(range(len(devices)), key=lambda j: devices[j].rank_id)
        rows.append([fabric.leaf_code(leaves[j]) for j in by_rank])
    return rows


def order_metrics(
    table: RankTable,
    topology: Topology,
    *,
    message_bytes: int = GIB,
    links: LinkModel | None = None,
    placement: Placement | None = None,
    fabric: _Fabric | None = None,
) -> OrderMetrics:
    """Metrics of the table's own rank order (servers ordered by their lowest rank)."""
    links = links or LinkModel()
    placement = placement or place(table, topology)
    counts = [len(s.devices) for s in table.servers]
    fabric = fabric or _Fabric(topology, max(counts, default=8), links)
    order = placement.rank_order
    crossings = ring_crossings(placement.tier_codes(), order)
    rows = _device_leaves(table, placement, fabric, order)
    ranks = sum(counts)
    servers = len(order)
    # Flat ring: inside a server over HCCS, between servers last device -> first device of the next.
    if servers > 1:
        src = np.array([row[-1] for row in rows if row], dtype=np.int64)
        dst = np.roll(np.array([row[0] for row in rows if row], dtype=np.int64), -1)
        flat_factor, flat_flows, flat_where = fabric.flows(src, dst)
    else:
        flat_factor, flat_flows, flat_where = 1.0, 0, None
    flat_gbps = links.roce_gbps * flat_factor
    slowest = min(flat_gbps, links.hccs_gbps) if max(counts, default=0) > 1 else flat_gbps
    ring = ring_allreduce_seconds(ranks, message_bytes, slowest, links)
    local = counts[0] if counts else 0
    hierarchical: float | None = None
    if servers > 1 and local > 1 and all(c == local for c in counts):
        matrix = np.array(rows, dtype=np.int64)  # [servers, local]
        src = matrix.ravel()
        dst = np.roll(matrix, -1, axis=0).ravel()
        factor, flows, where = fabric.flows(src, dst)
        inter = links.roce_gbps * factor
        hierarchical = hierarchical_allreduce_seconds(servers, local, message_bytes, inter, links)
        return OrderMetrics(crossings, flows, hierarchical, "hierarchical", ring, hierarchical, inter, where)
    return OrderMetrics(crossings, flat_flows, ring, "ring", ring, None, flat_gbps, flat_where)


def compare(
    given: RankTable,
    planned: RankTable,
    topology: Topology,
    message_bytes: int = GIB,
    links: LinkModel | None = None,
) -> Comparison:
    """Cost the given and the planned order on the same fabric and message size."""
    links = links or LinkModel()
    counts = [len(s.devices) for s in given.servers]
    with gc_paused():
        fabric = _Fabric(topology, max(counts, default=8), links)
        before = order_metrics(given, topology, message_bytes=message_bytes, links=links, fabric=fabric)
        after = order_metrics(planned, topology, message_bytes=message_bytes, links=links, fabric=fabric)
    speedup = before.allreduce_seconds / after.allreduce_seconds if after.allreduce_seconds > 0 else 1.0
    tiers = [topology.tier_name(k) for k in range(1, topology.tier_count + 1)]
    return Comparison(
        before, after, speedup, message_bytes, len(given.servers), given.rank_size, tiers, links
    )


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def _seconds(s: float) -> str:
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.3f} s"


def format_report(comparison: Comparison) -> str:
    """A short aligned text table: given vs planned, then the speed-up."""
    g, p = comparison.given, comparison.planned
    local = comparison.ranks // comparison.servers if comparison.servers else 0
    lines = [
        f"All-reduce of {_size(comparison.message_bytes)} on {comparison.servers} servers "
        f"({comparison.ranks} ranks, {local} per server), {p.algorithm} all-reduce model",
    ]
    rows: list[tuple[str, str, str]] = []
    for k, (a, b) in enumerate(zip(g.crossings_per_tier, p.crossings_per_tier, strict=True), 1):
        name = comparison.tier_names[k - 1] if k - 1 < len(comparison.tier_names) else f"tier {k}"
        rows.append((f"ring edges crossing tier {k} ({name})", str(a), str(b)))
    rows.append(("most flows on one uplink", str(g.max_uplink_flows), str(p.max_uplink_flows)))
    rows.append(
        ("slowest inter-server edge", f"{g.inter_server_gbps:.1f} GB/s", f"{p.inter_server_gbps:.1f} GB/s")
    )
    rows.append(("estimated all-reduce time", _seconds(g.allreduce_seconds), _seconds(p.allreduce_seconds)))
    width = max(len(r[0]) for r in rows)
    cols = [max(len("given"), *(len(r[1]) for r in rows)), max(len("planned"), *(len(r[2]) for r in rows))]
    lines.append(f"{'':<{width}}  {'given':>{cols[0]}}  {'planned':>{cols[1]}}")
    lines.extend(f"{a:<{width}}  {b:>{cols[0]}}  {c:>{cols[1]}}" for a, b, c in rows)
    lines.append(f"speed-up: {comparison.speedup:.2f}x")
    return "\n".join(lines)
