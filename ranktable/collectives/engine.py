"""Time an HCCL collective step by step on the switch tree.

A collective runs level by level (hicann/hccl `algo_intro.md`): all-reduce = in-server reduce-scatter,
then the inter-server algorithm on 1/d of the data in d "planes" (same-index NPUs, one NIC each) at once,
then in-server all-gather; all-gather goes up the levels (each plane gathers the whole server block
between servers), reduce-scatter down; A3 adds SuperPoDs as level 2. Each level's algorithm is a
list of explicit steps (`steps.py`); every step's flows from all planes are put on the tree together, so
crossings and uplink sharing are counted per step. A step takes alpha + bytes / (link GB/s x the slowest
flow's share); an algorithm takes the sum of its steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ranktable.collectives.fabric import Fabric, FlowLoad
from ranktable.collectives.steps import Step, algorithm_steps, partners


@dataclass(frozen=True)
class Timing:
    """The alpha-beta-gamma constants of one estimate."""

    alpha_s: float
    gamma_s_per_byte: float = 0.0
    sampled_steps: int = 64


@dataclass
class Level:
    """One level of the hierarchy: `size` ranks per communicator, `rows` [R, size] the leaf code of
    every position of each of R concurrent communicators (None = off the switch tree, e.g. HCCS)."""

    name: str
    size: int
    gbps: float
    algorithm: str
    rows: np.ndarray | None = None


@dataclass
class StepCost:
    level: str
    algorithm: str
    partners: str
    bytes: float  # per sender in one step
    repeat: int
    seconds: float  # all repeats together
    gbps: float  # the slowest flow's bandwidth
    crossings_per_tier: list[int] = field(default_factory=list)  # flows crossing each tier, one step
    max_uplink_flows: int = 0
    busiest_uplink: str | None = None
    superpod_crossings: int = 0  # flows between SuperPoDs, one step (A3; 0 without SuperPoDs)

    def to_json(self) -> dict[str, Any]:
        return {
            "level": self.level,
            "algorithm": self.algorithm,
            "partners": self.partners,
            "bytes": self.bytes,
            "repeat": self.repeat,
            "seconds": self.seconds,
            "gbps": self.gbps,
            "crossings_per_tier": self.crossings_per_tier,
            "flows_crossing_superpods": self.superpod_crossings,
            "max_uplink_flows": self.max_uplink_flows,
            "busiest_uplink": self.busiest_uplink,
        }


def _off_tree(tiers: int) -> FlowLoad:
    return FlowLoad(1.0, 0, None, [0] * tiers)


class StepTimer:
    """Loads memoised per (level rows, partner rule): a ring's p-1 identical steps cost one count."""

    def __init__(self, fabric: Fabric | None, timing: Timing) -> None:
        self.fabric = fabric
        self.timing = timing
        self.tiers = fabric.tiers if fabric is not None else 1
        # keyed by id(rows); the rows are kept in the value so an id is never reused while memoised
        self._memo: dict[tuple[int, str, int, int], tuple[np.ndarray, FlowLoad]] = {}
        self._distinct: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._pods: dict[int, tuple[np.ndarray, np.ndarray]] = {}  # id(rows) -> (rows, their SuperPoDs)

    def with_pods(self, rows: np.ndarray, pods: np.ndarray | None) -> np.ndarray:
        """`rows` (leaf codes), remembered with `pods` (same shape, SuperPoD of every position) so the
        loads on them also count the flows between SuperPoDs."""
        if pods is not None:
            self._pods[id(rows)] = (rows, pods)
        return rows

    def load(self, level: Level, step: Step) -> FlowLoad:
        if level.rows is None or self.fabric is None or step.pattern == "mesh":
            return _off_tree(self.tiers)
        distance = step.distance
        if step.pattern == "shift":
            # r -> r-d is r -> r+d with every flow reversed, and a load does not depend on direction
            # (uplink and downlink counted alike): NHR's all-gather reuses its reduce-scatter's loads
            distance = min(distance % level.size, -distance % level.size)
        key = (id(level.rows), step.pattern, distance, level.size)
        found = self._memo.get(key)
        if found is None:
            src, dst = partners(step, level.size)
            found = (level.rows, self.pairs(level.rows, src, dst))
            self._memo[key] = found
        return found[1]

    def distinct(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Identical communicators (every plane of a server on one leaf) load the tree identically:
        keep one of each with its count."""
        key = id(rows)
        found = self._distinct.get(key)
        if found is None:
            if rows.shape[0] > 1 and bool((rows == rows[:1]).all()):
                unique, counts = rows[:1], np.array([rows.shape[0]])
            elif rows.shape[0] > 1:
                unique, counts = np.unique(rows, axis=0, return_counts=True)
            else:
                unique, counts = rows, np.ones(1, dtype=np.int64)
            found = (rows, unique, counts)
            self._distinct[key] = found
        return found[1], found[2]

    def pairs(self, rows: np.ndarray, src: np.ndarray, dst: np.ndarray) -> FlowLoad:
        if self.fabric is None:
            return _off_tree(self.tiers)
        unique, counts = self.distinct(rows)
        if counts.size == 1 and counts[0] == 1:
            load = self.fabric.load(unique[:, src].ravel(), unique[:, dst].ravel())
        else:
            weight = np.repeat(counts, src.size).astype(np.float64)
            load = self.fabric.load(unique[:, src].ravel(), unique[:, dst].ravel(), weight)
        pods = self._pods.get(id(rows))
        if pods is None:
            return load
        return replace(load, superpod_crossings=int((pods[1][:, src] != pods[1][:, dst]).sum()))

    def cost(self, level: Level, step: Step, buffer: float, load: FlowLoad | None = None) -> StepCost:
        load = load or self.load(level, step)
        nbytes = step.fraction * buffer
        gbps = level.gbps * load.factor
        per = self.timing.alpha_s + nbytes / (gbps * 1e9)
        if step.reduce:
            per += nbytes * self.timing.gamma_s_per_byte
        return StepCost(
            level.name,
            level.algorithm,
            step.describe(),
            nbytes,
            step.repeat,
            per * step.repeat,
            gbps,
            list(load.crossings_per_tier),
            load.max_uplink_flows,
            load.busiest_uplink,
            load.superpod_crossings,
        )


def level_steps(timer: StepTimer, level: Level, op: str, buffer: float) -> list[StepCost]:
    """The steps of `level.algorithm` running `op` on `buffer` bytes."""
    if level.size <= 1 or buffer <= 0:
        return []
    if level.algorithm == "AHC" and level.rows is not None and op != "alltoall":
        return _ahc(timer, level, op, buffer)
    algorithm = "ring" if level.algorithm == "pipeline" else level.algorithm
    steps = algorithm_steps(algorithm, op, level.size, sampled=timer.timing.sampled_steps)
    return [timer.cost(level, step, buffer) for step in steps]


def _ahc(timer: StepTimer, level: Level, op: str, buffer: float) -> list[StepCost]:
    """AHC: groups = servers under one leaf (in position order); intra-group NB reduce-scatter, NB
    between same-index members of the groups on 1/(smallest group) of the data, intra-group all-gather.
    Unequal groups: member i pairs with member i mod size of the other group (AHC's LCM slicing
    spreads that load; this model does not)."""
    assert level.rows is not None
    codes = level.rows[0]
    _, first, gid = np.unique(codes, return_index=True, return_inverse=True)
    rank_of_group = np.argsort(np.argsort(first))  # groups numbered by first appearance
    gid = rank_of_group[gid]
    groups = len(first)
    order = np.lexsort((np.arange(level.size), gid))
    sizes = np.bincount(gid, minlength=groups)
    start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    index = np.empty(level.size, dtype=np.int64)
    index[order] = np.arange(level.size) - start[gid[order]]
    largest, smallest = int(sizes.max()), int(sizes.min())
    out: list[StepCost] = []
    positions = np.arange(level.size)

    def within(shift: int) -> np.ndarray:
        return np.asarray(order[start[gid] + (index + shift) % sizes[gid]])

    def across(shift: int) -> np.ndarray:
        other = (gid + shift) % groups
        return np.asarray(order[start[other] + index % sizes[other]])

    inner = Level(f"{level.name} (AHC in-group)", largest, level.gbps, "AHC", level.rows)
    outer = Level(f"{level.name} (AHC between groups)", groups, level.gbps, "AHC", level.rows)

    def phase(kind: str, sub: str, buffer_: float, count: int, lvl: Level) -> None:
        for step in algorithm_steps("NB", sub, count):
            dst = within(step.distance) if kind == "in" else across(step.distance)
            load = timer.pairs(level.rows, positions, dst) if level.rows is not None else None
            cost = timer.cost(lvl, step, buffer_, load)
            cost.partners = f"{cost.partners} {'within' if kind == 'in' else 'across'} leaf groups"
            out.append(cost)

    if op in ("allreduce", "reducescatter"):
        phase("in", "reducescatter", buffer, largest, inner)
    if groups > 1:
        phase("across", op, buffer / smallest, groups, outer)
    if op in ("allreduce", "allgather"):
        phase("in", "allgather", buffer, largest, inner)
    return out


def pipeline_steps(timer: StepTimer, inner: Level, outer: Level, op: str, total: float) -> list[StepCost]:
    """HCCL's pipeline (Pipeline.md): the inter-server ring and the in-server mesh overlap; each of the
    m-1 ring steps takes the slower of the two, plus one in-server step; all-reduce runs it twice."""
    ranks = inner.size * outer.size
    piece = total / ranks
    ring = Step("shift", 1, 0.0)
    load = timer.load(outer, ring)
    alpha = timer.timing.alpha_s
    inter = alpha + piece / (outer.gbps * load.factor * 1e9)
    intra = alpha + piece / (inner.gbps * 1e9)
    phases = 2 if op == "allreduce" else 1
    hops = outer.size - 1
    return [
        StepCost(
            f"{outer.name} + {inner.name}",
            "pipeline",
            "r -> r+1 between servers, forwarded over HCCS",
            piece,
            hops * phases,
            max(inter, intra) * hops * phases,
            outer.gbps * load.factor,
            list(load.crossings_per_tier),
            load.max_uplink_flows,
            load.busiest_uplink,
            load.superpod_crossings,
        ),
        StepCost(
            inner.name,
            "pipeline",
            "in-server mesh",
            piece,
            phases,
            intra * phases,
            inner.gbps,
            [0] * timer.tiers,
        ),
    ]


def hierarchy_steps(timer: StepTimer, levels: list[Level], op: str, nbytes: float) -> list[StepCost]:
    """`op` over levels (bottom first). nbytes: per-rank data (all-reduce, broadcast, all-to-all) or the
    whole gathered / scattered buffer (all-gather, reduce-scatter)."""
    levels = [lv for lv in levels if lv.size > 1]
    if not levels:
        return []
    if (
        len(levels) == 2
        and levels[1].algorithm == "pipeline"
        and op in ("allreduce", "allgather", "reducescatter")
    ):
        return pipeline_steps(timer, levels[0], levels[1], op, nbytes)
    sizes = [lv.size for lv in levels]
    out: list[StepCost] = []
    if op == "alltoall":
        for lv in levels:
            out += level_steps(timer, lv, "alltoall", nbytes)
        return out
    if op in ("allreduce", "broadcast"):
        below = 1
        buffers = []
        for lv in levels[:-1]:
            buffers.append(nbytes / below)
            down = level_steps(timer, lv, "reducescatter", nbytes / below)
            if op == "broadcast":
                for step in down:
                    step.partners += " (scatter)"
            out += down
            below *= lv.size
        out += level_steps(timer, levels[-1], op, nbytes / below)
        for lv, buffer in zip(reversed(levels[:-1]), reversed(buffers), strict=True):
            out += level_steps(timer, lv, "allgather", buffer)
        return out
    # HCCL's mesh executors (CollAllGatherMeshExecutor): all-gather in-server first, then every plane
    # gathers the whole server block between servers (no in-server step after it); reduce-scatter the
    # mirror, the whole buffer between servers first.
    above = [int(np.prod(sizes[i + 1 :])) for i in range(len(levels))]
    chain = list(zip(levels, above, strict=True))
    if op == "reducescatter":
        chain.reverse()
    for lv, factor in chain:
        out += level_steps(timer, lv, op, nbytes / factor)
    return out


def level0_algorithm(product_level0: str, per_server: int) -> str:
    """In-server: a mesh on A2/A3; the 910's 8P_RING runs a ring over 8, 4P_MESH a mesh."""
    if product_level0 == "ring" and per_server > 4:
        return "ring"
    return "mesh"
