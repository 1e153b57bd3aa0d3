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

from ranktable.collectives.choice import LevelSetting, detect_product
from ranktable.collectives.constants import ProductLinks, product_links
from ranktable.collectives.engine import StepTimer
from ranktable.collectives.estimate import Estimate, JobShape, default_timing, estimate_job
from ranktable.collectives.fabric import Fabric
from ranktable.collectives.groups import RANK_ORDER, GroupCost, ParallelSizes, RankPlaces, group_costs
from ranktable.errors import InputError
from ranktable.hccl.bulk import gc_paused
from ranktable.hccl.columns import RankColumns, columns_of
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
    """What one rank order costs: ring crossings, the busiest uplink and HCCL's collective estimate."""

    crossings_per_tier: list[int]  # tier 1 first; edges of the server ring crossing each tier
    max_uplink_flows: int  # most flows through one switch uplink (one direction) in any step
    allreduce_seconds: float  # the estimate of `operation` with HCCL's algorithm (name kept for readers)
    algorithm: str  # the level-1 algorithm HCCL runs (ring, H-D_R, NHR, NB, AHC, pipeline, pairwise, ...)
    ring_seconds: float  # flat ring over all ranks in rank order (for reference)
    hierarchical_seconds: float | None  # in-server RS + inter-server ring + in-server AG (for reference)
    inter_server_gbps: float  # per-NPU bandwidth of the slowest inter-server step
    busiest_uplink: str | None = None
    algorithm_reason: str = ""
    operation: str = "allreduce"
    product: str = "A2"
    estimate: Estimate | None = None
    groups: list[GroupCost] = field(default_factory=list)
    tiers: int = 1
    superpods: int = 0  # A3: SuperPoDs the job spans (0 = the table has no super_pod_list)
    superpod_crossings: int = 0  # A3: ring edges between servers of different SuperPoDs

    @property
    def superpod_flows(self) -> int:
        """A3: the collective's flows between SuperPoDs, every step (0 without SuperPoDs)."""
        return self.estimate.superpod_crossings if self.estimate else 0

    @property
    def seconds(self) -> float:
        return self.allreduce_seconds

    @property
    def groups_seconds(self) -> float:
        """Sum of one collective call of every parallel group kind (the planner's objective)."""
        return sum(g.seconds for g in self.groups)

    def to_json(self) -> dict[str, Any]:
        return {
            "crossings_per_tier": self.crossings_per_tier,
            "superpods": self.superpods,
            "crossings_superpods": self.superpod_crossings,
            "flows_crossing_superpods": self.superpod_flows,
            "max_uplink_flows": self.max_uplink_flows,
            "allreduce_seconds": self.allreduce_seconds,
            "seconds": self.allreduce_seconds,
            "operation": self.operation,
            "algorithm": self.algorithm,
            "algorithm_reason": self.algorithm_reason,
            "product": self.product,
            "ring_seconds": self.ring_seconds,
            "hierarchical_seconds": self.hierarchical_seconds,
            "inter_server_gbps": self.inter_server_gbps,
            "busiest_uplink": self.busiest_uplink,
            "collective": self.estimate.to_json(self.tiers) if self.estimate else None,
            "groups": [g.to_json() for g in self.groups],
        }


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
    parallel: ParallelSizes | None = None
    order_reason: str = ""

    @property
    def algorithm(self) -> str:
        return self.planned.algorithm

    @property
    def algorithm_reason(self) -> str:
        return self.planned.algorithm_reason

    def group_rows(self) -> list[dict[str, Any]]:
        """Per group kind: given vs planned cost side by side."""
        rows = []
        for g, p in zip(self.given.groups, self.planned.groups, strict=True):
            rows.append(
                {
                    "kind": p.kind,
                    "size": p.size,
                    "count": p.count,
                    "operation": p.operation,
                    "algorithm": p.algorithm,
                    "algorithm_reason": p.reason,
                    "message_bytes": p.message_bytes,
                    "given_seconds": g.seconds,
                    "planned_seconds": p.seconds,
                    "speedup": g.seconds / p.seconds if p.seconds > 0 else 1.0,
                    "given": g.to_json(),
                    "planned": p.to_json(),
                }
            )
        return rows

    def to_json(self) -> dict[str, Any]:
        return {
            "message_bytes": self.message_bytes,
            "servers": self.servers,
            "ranks": self.ranks,
            "tiers": self.tier_names,
            "operation": self.planned.operation,
            "product": self.planned.product,
            "algorithm": self.planned.algorithm,
            "algorithm_reason": self.planned.algorithm_reason,
            "given": self.given.to_json(),
            "planned": self.planned.to_json(),
            "speedup": self.speedup,
            "parallel": self.parallel.to_json() if self.parallel else None,
            "rank_order_convention": RANK_ORDER if self.parallel else None,
            "order_reason": self.order_reason,
            "groups": self.group_rows(),
            "links": asdict(self.links),
        }


_Fabric = Fabric  # the tree arrays live in ranktable.collectives.fabric


@dataclass
class RingDevices:
    """Every device with servers in ring order and each server's devices by rank id: its leaf code and
    rank id, and how many devices each server holds."""

    leaf: np.ndarray
    rank: np.ndarray
    counts: np.ndarray

    def first_and_last(self) -> tuple[np.ndarray, np.ndarray]:
        """Per server holding devices, the leaf of its first and of its last device."""
        ends = np.cumsum(self.counts)
        held = self.counts > 0
        return self.leaf[(ends - self.counts)[held]], self.leaf[ends[held] - 1]


def _device_codes(placement: Placement, fabric: _Fabric) -> np.ndarray:
    """The leaf code of every device in table order (one code per server unless rail-optimised)."""
    unknown = len(fabric.names)
    code = fabric.code
    counts = list(map(len, placement.device_leaf))
    if not placement.rails and placement.group_leaf:  # one leaf per server: one lookup per leaf
        per_leaf = np.array(
            [unknown if leaf is None else code.get(leaf, unknown) for leaf in placement.group_leaf]
        )
        return np.repeat(per_leaf[placement.groups()], counts)
    per_server: list[int] = []
    mixed: dict[int, list[str | None]] = {}
    for i, leaves in enumerate(placement.device_leaf):
        first = leaves[0] if leaves else None
        if placement.rails and len(leaves) > 1 and leaves.count(first) != len(leaves):
            mixed[i] = leaves
        per_server.append(code.get(first, unknown) if first is not None else unknown)
    codes = np.repeat(np.array(per_server, dtype=np.int64), counts)
    if mixed:
        starts = np.cumsum(counts) - counts
        for i, leaves in mixed.items():
            codes[starts[i] : starts[i] + len(leaves)] = [fabric.leaf_code(leaf) for leaf in leaves]
    return codes


def ring_devices(
    columns: RankColumns, placement: Placement, fabric: _Fabric, order: list[int]
) -> RingDevices:
    """The devices of the servers in `order` (see `RingDevices`)."""
    index = np.asarray(order, dtype=np.int64)
    counts = columns.counts()[index]
    start = np.zeros(len(index) + 1, dtype=np.int64)
    np.cumsum(counts, out=start[1:])
    rows = np.repeat(columns.start[:-1][index] - start[:-1], counts) + np.arange(start[-1], dtype=np.int64)
    leaf, rank = _device_codes(placement, fabric)[rows], columns.rank_id[rows]
    position = np.repeat(np.arange(len(index), dtype=np.int64), counts)
    if len(rank) > 1 and not bool(((np.diff(rank) > 0) | (np.diff(position) > 0)).all()):
        by_rank = np.lexsort((rank, position))  # stable, as each server's devices are sorted by rank
        leaf, rank = leaf[by_rank], rank[by_rank]
    return RingDevices(leaf, rank, counts)


@dataclass
class CollectiveQuery:
    """What to estimate besides the ring: the operation, HCCL_ALGO / --algo, and the parallel groups."""

    operation: str = "allreduce"
    settings: dict[str, LevelSetting] | None = None
    source: str = "HCCL_ALGO"
    parallel: ParallelSizes | None = None
    group_bytes: dict[str, int] = field(default_factory=dict)
    product: str | None = None  # None = from the rank table
    parallel_where: str = "--parallel"  # the field named when the sizes don't fit the table


def _links_for(product: str, links: LinkModel) -> ProductLinks:
    """The product's figures, unless the caller changed the link model from its defaults."""
    base = product_links(product)
    if links == LinkModel():
        return base
    return ProductLinks(
        base.product, base.label, base.level0, links.hccs_gbps, links.roce_gbps, links.hccs_gbps
    )


def _shape(
    table: RankTable, columns: RankColumns, order: list[int], ring: RingDevices, product: str, why: str
) -> tuple[JobShape, list[str]]:
    notes: list[str] = []
    counts = ring.counts
    if len(counts) and counts.min() == counts.max():
        matrix = ring.leaf.reshape(len(counts), int(counts[0]))
    else:
        notes.append("servers hold different NPU counts: costed as one flat level over every rank")
        return JobShape(ring.leaf.reshape(-1, 1), product, why), notes
    pods = None
    if table.super_pods:
        pod_of = {sid: n for n, pod in enumerate(table.super_pods) for sid in pod.server_ids}
        found = [pod_of.get(columns.server_id[i], -1) for i in order]
        if -1 in found:
            notes.append("some servers are in no super_pod_list entry; SuperPoDs ignored")
        else:
            pods = np.array(found, dtype=np.int64)
    return JobShape(matrix, product, why, pods), notes


def _rank_places(ring: RingDevices, pods: np.ndarray | None = None) -> RankPlaces | None:
    """Per rank id its server, leaf and (A3, `pods` per server in ring order) SuperPoD."""
    world = len(ring.rank)
    index = ring.rank
    if world == 0 or index.min() < 0 or index.max() >= world or len(np.unique(index)) != world:
        return None
    server = np.empty(world, dtype=np.int64)
    leaf = np.empty(world, dtype=np.int64)
    server[index] = np.repeat(np.arange(len(ring.counts), dtype=np.int64), ring.counts)
    leaf[index] = ring.leaf
    pod = None
    if pods is not None:
        pod = np.empty(world, dtype=np.int64)
        pod[index] = np.repeat(pods, ring.counts)
    return RankPlaces(server, leaf, pod)


def _reference_figures(
    devices: RingDevices,
    fabric: _Fabric,
    servers: int,
    counts: list[int],
    message_bytes: int,
    links: LinkModel,
) -> tuple[float, float, float | None]:
    """The earlier model's figures, kept for reference: the flat ring's slowest Gbit/s and its seconds,
    and the hierarchical ring's seconds (None unless every server has the same several ranks)."""
    if servers > 1:
        first, last = devices.first_and_last()
        flat_factor = fabric.flows(last, np.roll(first, -1))[0]
    else:
        flat_factor = 1.0
    flat_gbps = links.roce_gbps * flat_factor
    slowest = min(flat_gbps, links.hccs_gbps) if max(counts, default=0) > 1 else flat_gbps
    ring = ring_allreduce_seconds(sum(counts), message_bytes, slowest, links)
    local = counts[0] if counts else 0
    if not (servers > 1 and local > 1 and min(counts) == max(counts)):
        return flat_gbps, ring, None
    matrix = devices.leaf.reshape(servers, local)
    if bool((matrix == matrix[:, :1]).all()):  # each server under one leaf: its rings' flows coincide
        column = matrix[:, 0]
        factor = fabric.load(column, np.roll(column, -1), np.full(servers, float(local))).factor
    else:
        factor = fabric.flows(matrix.ravel(), np.roll(matrix, -1, axis=0).ravel())[0]
    hierarchical = hierarchical_allreduce_seconds(
        servers, local, message_bytes, links.roce_gbps * factor, links
    )
    return flat_gbps, ring, hierarchical


def _product(table: RankTable, columns: RankColumns, query: CollectiveQuery) -> tuple[str, str]:
    """The product the table runs on and why it is thought so: the query's, else detected from the table."""
    if query.product:
        return query.product, "given"
    return detect_product(table.version, bool(table.super_pods), {h for h in columns.hardware_type if h})


def _parallel_groups(
    query: CollectiveQuery,
    parallel: ParallelSizes,
    devices: RingDevices,
    pods: np.ndarray | None,
    product: str,
    timer: StepTimer,
    message_bytes: int,
    links: ProductLinks,
) -> list[GroupCost]:
    """The cost of the `parallel` groups (tensor, pipeline, data...) on these devices."""
    places = _rank_places(devices, pods)
    if places is None:
        raise InputError(
            "rank ids are not 0..N-1 without gaps, so parallel groups cannot be formed",
            where="--parallel",
            fix="validate the rank table (`ranktable validate FILE`)",
        )
    return group_costs(
        parallel,
        places,
        product,
        timer,
        query.group_bytes,
        message_bytes,
        query.settings,
        query.source,
        links,
    )


def order_metrics(
    table: RankTable,
    topology: Topology,
    *,
    message_bytes: int = GIB,
    links: LinkModel | None = None,
    placement: Placement | None = None,
    fabric: _Fabric | None = None,
    query: CollectiveQuery | None = None,
) -> OrderMetrics:
    """Metrics of the table's own rank order (servers ordered by their lowest rank)."""
    links = links or LinkModel()
    query = query or CollectiveQuery()
    placement = placement or place(table, topology)
    columns = columns_of(table)
    counts = columns.counts().tolist()
    fabric = fabric or _Fabric(topology, max(counts, default=8), links.roce_gbps)
    order = placement.rank_order
    crossings = ring_crossings(placement.tier_codes(), order)
    devices = ring_devices(columns, placement, fabric, order)
    ranks = sum(counts)
    servers = len(order)
    flat_gbps, ring, hierarchical = _reference_figures(devices, fabric, servers, counts, message_bytes, links)
    product, why = _product(table, columns, query)
    shape, notes = _shape(table, columns, order, devices, product, why)
    product_figures = _links_for(product, links)
    timing = default_timing()
    timing = type(timing)(links.alpha_s, links.gamma_s_per_byte, timing.sampled_steps)
    timer = StepTimer(fabric, timing)
    estimate = estimate_job(
        shape,
        fabric,
        query.operation,
        message_bytes,
        settings=query.settings,
        timing=timing,
        source=query.source,
        timer=timer,
        links=product_figures,
    )
    estimate.notes[:0] = notes
    groups: list[GroupCost] = []
    if query.parallel is not None:
        resolved = query.parallel.resolved(ranks, query.parallel_where)
        groups = _parallel_groups(
            query, resolved, devices, shape.pods, product, timer, message_bytes, product_figures
        )
    inter = estimate.slowest_gbps("inter-server") or estimate.slowest_gbps("between") or flat_gbps
    pod_edges = 0
    if shape.pods is not None and servers > 1:
        pod_edges = int((shape.pods != np.roll(shape.pods, -1)).sum())
    return OrderMetrics(
        crossings,
        estimate.max_uplink_flows,
        estimate.seconds,
        estimate.algorithm,
        ring,
        hierarchical,
        inter,
        estimate.busiest_uplink,
        algorithm_reason=estimate.reason,
        operation=query.operation,
        product=product,
        estimate=estimate,
        groups=groups,
        tiers=fabric.tiers,
        superpods=estimate.superpods,
        superpod_crossings=pod_edges,
    )


def compare(
    given: RankTable,
    planned: RankTable,
    topology: Topology,
    message_bytes: int = GIB,
    links: LinkModel | None = None,
    query: CollectiveQuery | None = None,
    order_reason: str = "",
    placements: tuple[Placement, list[int]] | None = None,
) -> Comparison:
    """Cost the given and the planned order on the same fabric and message size. `placements`: the
    given table's placement and the planned server order, when the caller has them (saves placing)."""
    links = links or LinkModel()
    query = query or CollectiveQuery()
    counts = columns_of(given).counts().tolist()
    given_place = placements[0] if placements else None
    planned_place = placements[0].reordered(placements[1]) if placements else None
    with gc_paused():
        fabric = _Fabric(topology, max(counts, default=8), links.roce_gbps)
        before = order_metrics(
            given,
            topology,
            message_bytes=message_bytes,
            links=links,
            fabric=fabric,
            query=query,
            placement=given_place,
        )
        after = order_metrics(
            planned,
            topology,
            message_bytes=message_bytes,
            links=links,
            fabric=fabric,
            query=query,
            placement=planned_place,
        )
    speedup = before.allreduce_seconds / after.allreduce_seconds if after.allreduce_seconds > 0 else 1.0
    tiers = [topology.tier_name(k) for k in range(1, topology.tier_count + 1)]
    return Comparison(
        before,
        after,
        speedup,
        message_bytes,
        given.server_count,
        given.rank_size,
        tiers,
        links,
        query.parallel.resolved(given.rank_size, query.parallel_where) if query.parallel else None,
        order_reason,
    )


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:g} {unit}"
    return f"{n} B"


def _seconds(s: float) -> str:
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.3f} s"


OPERATION_TITLE = {
    "allreduce": "All-reduce",
    "allgather": "All-gather",
    "reducescatter": "Reduce-scatter",
    "broadcast": "Broadcast",
    "alltoall": "All-to-all",
}


def format_report(comparison: Comparison) -> str:
    """A short aligned text table: given vs planned, the algorithm and why, groups, then the speed-up."""
    g, p = comparison.given, comparison.planned
    local = comparison.ranks // comparison.servers if comparison.servers else 0
    title = OPERATION_TITLE.get(p.operation, p.operation)
    lines = [
        f"{title} of {_size(comparison.message_bytes)} on {comparison.servers} servers "
        f"({comparison.ranks} ranks, {local} per server), HCCL algorithm {p.algorithm} ({p.product})",
        f"why {p.algorithm}: {p.algorithm_reason}",
    ]
    rows: list[tuple[str, str, str]] = []
    for k, (a, b) in enumerate(zip(g.crossings_per_tier, p.crossings_per_tier, strict=True), 1):
        name = comparison.tier_names[k - 1] if k - 1 < len(comparison.tier_names) else f"tier {k}"
        rows.append((f"ring edges crossing tier {k} ({name})", str(a), str(b)))
    if p.superpods:
        rows.append(
            (
                f"ring edges crossing SuperPoDs ({p.superpods})",
                str(g.superpod_crossings),
                str(p.superpod_crossings),
            )
        )
        rows.append(("collective flows between SuperPoDs", str(g.superpod_flows), str(p.superpod_flows)))
    rows.append(("most flows on one uplink", str(g.max_uplink_flows), str(p.max_uplink_flows)))
    rows.append(
        ("slowest inter-server edge", f"{g.inter_server_gbps:.1f} GB/s", f"{p.inter_server_gbps:.1f} GB/s")
    )
    rows.append((f"estimated {title.lower()} time", _seconds(g.seconds), _seconds(p.seconds)))
    for row in comparison.group_rows():
        rows.append(
            (
                f"{row['kind']} groups ({row['count']} x {row['size']}, {row['operation']} "
                f"{_size(int(row['message_bytes']))}"
                + (")" if row["algorithm"] == row["operation"] else f", {row['algorithm']})"),
                _seconds(row["given_seconds"]),
                _seconds(row["planned_seconds"]),
            )
        )
    width = max(len(r[0]) for r in rows)
    cols = [max(len("given"), *(len(r[1]) for r in rows)), max(len("planned"), *(len(r[2]) for r in rows))]
    lines.append(f"{'':<{width}}  {'given':>{cols[0]}}  {'planned':>{cols[1]}}")
    lines.extend(f"{a:<{width}}  {b:>{cols[0]}}  {c:>{cols[1]}}" for a, b, c in rows)
    if comparison.parallel is not None:
        lines.append(
            f"parallel groups {comparison.parallel.describe()}, rank order {RANK_ORDER} (Megatron default)"
        )
    if comparison.order_reason:
        lines.append(f"server order: {comparison.order_reason}")
    for note in p.estimate.notes if p.estimate else []:
        lines.append(f"note: {note}")
    lines.append(f"speed-up: {comparison.speedup:.2f}x")
    return "\n".join(lines)
