"""Megatron / MindSpeed parallel groups: which ranks form each group, and what each group's collective
costs on the tree.

Rank order (NVIDIA/Megatron-LM `parallel_state.py`, order "tp-cp-ep-dp-pp"; MindSpeed wraps the same
call): the first token varies fastest, rank = tp_i + tp*(cp_i + cp*(dp_i + dp*pp_i)). So tensor-parallel
groups are blocks of `tp` consecutive ranks, context-parallel groups stride tp, the gradient (dp-cp)
group strides tp, pipeline groups stride W/pp. Expert groups come from the expert generator
(tp-ep-dp-pp with expert-TP = TP): blocks of `ep` ranks strided by tp.

Per group kind, all groups of that kind run their collective at the same time, so their flows share the
uplinks; that is how they are costed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ranktable.collectives.choice import Choice, LevelSetting, choose
from ranktable.collectives.constants import ProductLinks, product_links
from ranktable.collectives.engine import Level, StepCost, StepTimer, hierarchy_steps, level0_algorithm
from ranktable.collectives.estimate import MAX_STEPS_SHOWN, level_buffer
from ranktable.collectives.setting_text import setting_items
from ranktable.errors import InputError

KINDS = ("tp", "cp", "ep", "dp", "pp")
RANK_ORDER = "tp-cp-ep-dp-pp"
OPERATION = {"tp": "allreduce", "cp": "allgather", "ep": "alltoall", "dp": "allreduce", "pp": "p2p"}
WHAT = {
    "tp": "tensor parallel: all-reduce of activations per layer",
    "cp": "context parallel: KV blocks passed around a ring (point-to-point)",
    "ep": "expert parallel: all-to-all dispatch / combine per MoE layer",
    "dp": "data parallel (dp x cp gradient group): gradient all-reduce once per step",
    "pp": "pipeline parallel: activations sent to the next stage per micro-batch",
}
MAX_SIZE = 1 << 20
_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?i?B?)?\s*$", re.IGNORECASE)
_UNITS = {
    "": 1,
    "b": 1,
    "k": 1e3,
    "kb": 1e3,
    "kib": 1 << 10,
    "m": 1e6,
    "mb": 1e6,
    "mib": 1 << 20,
    "g": 1e9,
    "gb": 1e9,
    "gib": 1 << 30,
    "t": 1e12,
    "tb": 1e12,
    "tib": 1 << 40,
}


@dataclass(frozen=True)
class ParallelSizes:
    """Group sizes; dp is derived from the world size when not given."""

    tp: int = 1
    cp: int = 1
    ep: int = 1
    pp: int = 1
    dp: int | None = None

    def resolved(self, world: int, where: str = "--parallel") -> ParallelSizes:
        """With dp filled in; every size checked against the world size."""
        model = self.tp * self.cp * self.pp
        if world % model:
            raise InputError(
                f"tp*cp*pp = {model} does not divide the {world} ranks",
                where=where,
                fix="choose sizes whose product divides the rank count",
            )
        dp = world // model
        if self.dp is not None and self.dp != dp:
            raise InputError(
                f"dp={self.dp} but {world} ranks / (tp*cp*pp = {model}) = {dp}",
                where=where,
                fix="leave dp out (it is derived) or make the product equal the rank count",
            )
        if (world // (self.tp * self.pp)) % self.ep:
            raise InputError(
                f"ep={self.ep} does not divide the expert data-parallel size {world // (self.tp * self.pp)}",
                where=where,
                fix="ep must divide W/(tp*pp) (Megatron's expert generator)",
            )
        return ParallelSizes(self.tp, self.cp, self.ep, self.pp, dp)

    def to_json(self) -> dict[str, int | None]:
        return {"tp": self.tp, "cp": self.cp, "ep": self.ep, "pp": self.pp, "dp": self.dp}

    def describe(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.to_json().items() if v is not None)


def parse_parallel(text: str, where: str = "--parallel") -> ParallelSizes:
    """`tp=8,cp=1,ep=1,pp=4` (any subset; dp optional and derived)."""
    if len(text) > 200:
        raise InputError("longer than 200 characters", where=where)
    found: dict[str, int] = {}
    for part, key, sep, value in setting_items(text, ",", "="):
        if not sep or key not in (*KINDS, "dp") or key in found:
            raise InputError(
                f"{part!r} is not one of tp=, cp=, ep=, pp=, dp= (each once)",
                where=where,
                fix="write e.g. tp=8,pp=4",
            )
        if not value.strip().isdigit() or not 1 <= int(value) <= MAX_SIZE:
            raise InputError(
                f"{key} must be a whole number from 1 to {MAX_SIZE}; got {value.strip()!r}", where=where
            )
        found[key] = int(value)
    if not found:
        raise InputError("is empty", where=where, fix="write e.g. tp=8,pp=4")
    return ParallelSizes(
        found.get("tp", 1), found.get("cp", 1), found.get("ep", 1), found.get("pp", 1), found.get("dp")
    )


def parse_size(text: str, where: str) -> int:
    match = _SIZE.match(text)
    if not match or (match.group(2) or "").lower() not in _UNITS:
        raise InputError(f"{text.strip()!r} is not a size", where=where, fix="write e.g. 64MiB or 1048576")
    value = int(float(match.group(1)) * _UNITS[(match.group(2) or "").lower()])
    if value < 1 or value > 1 << 50:
        raise InputError(f"{text.strip()!r} is out of range (1 B to 1 PiB)", where=where)
    return value


def parse_group_bytes(text: str, where: str = "--group-bytes") -> dict[str, int]:
    """`tp=64MiB,dp=2GiB`: bytes each group kind moves per collective call."""
    out: dict[str, int] = {}
    for part, key, sep, value in setting_items(text, ",", "="):
        if not sep or key not in KINDS:
            raise InputError(
                f"{part!r} is not <kind>=<size> with kind one of {', '.join(KINDS)}", where=where
            )
        out[key] = parse_size(value, where)
    return out


def group_ranks(sizes: ParallelSizes, world: int) -> dict[str, np.ndarray]:
    """Kind -> [groups, size] rank ids, in Megatron's default order; kinds of size 1 left out."""
    s = sizes.resolved(world)
    dp = s.dp or 1
    grid = np.arange(world, dtype=np.int64).reshape(s.pp, dp, s.cp, s.tp)
    out = {
        "tp": grid.reshape(-1, s.tp),
        "cp": grid.transpose(0, 1, 3, 2).reshape(-1, s.cp),
        "dp": grid.transpose(0, 3, 1, 2).reshape(-1, dp * s.cp),
        "pp": grid.transpose(1, 2, 3, 0).reshape(-1, s.pp),
    }
    if s.ep > 1:
        expert = np.arange(world, dtype=np.int64).reshape(s.pp, world // (s.tp * s.ep * s.pp), s.ep, s.tp)
        out["ep"] = expert.transpose(0, 1, 3, 2).reshape(-1, s.ep)
    return {k: v for k, v in out.items() if v.shape[1] > 1}


@dataclass
class GroupCost:
    kind: str
    size: int
    count: int
    operation: str
    algorithm: str
    reason: str
    message_bytes: float
    seconds: float
    servers_per_group: int
    crossings_per_tier: list[int]  # flows crossing each tier, all groups of the kind, whole collective
    max_uplink_flows: int
    busiest_uplink: str | None
    steps: list[StepCost] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    superpods_per_group: int = 0  # A3: most SuperPoDs one group spans (0 = no SuperPoDs in the table)
    superpod_crossings: int = 0  # A3: flows between SuperPoDs, all groups of the kind, whole collective

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "what": WHAT[self.kind],
            "size": self.size,
            "count": self.count,
            "operation": self.operation,
            "algorithm": self.algorithm,
            "algorithm_reason": self.reason,
            "message_bytes": self.message_bytes,
            "seconds": self.seconds,
            "servers_per_group": self.servers_per_group,
            "flows_crossing_per_tier": self.crossings_per_tier,
            "superpods_per_group": self.superpods_per_group,
            "flows_crossing_superpods": self.superpod_crossings,
            "max_uplink_flows": self.max_uplink_flows,
            "busiest_uplink": self.busiest_uplink,
            "steps": [step.to_json() for step in self.steps[:MAX_STEPS_SHOWN]],
            "steps_omitted": max(0, len(self.steps) - MAX_STEPS_SHOWN),
            "notes": self.notes,
        }


@dataclass
class RankPlaces:
    """Per global rank id: the position of its server in rank order, its leaf code and (A3) the index
    of its SuperPoD."""

    server: np.ndarray
    leaf: np.ndarray
    pod: np.ndarray | None = None


def _summary(steps: list[StepCost], tiers: int) -> tuple[list[int], int, str | None]:
    total = [0] * tiers
    for s in steps:
        for k, n in enumerate(s.crossings_per_tier[:tiers]):
            total[k] += n * s.repeat
    busiest = max(steps, key=lambda s: s.max_uplink_flows, default=None)
    most = busiest.max_uplink_flows if busiest else 0
    return total, most, busiest.busiest_uplink if busiest and most else None


def _most_superpods(pods: np.ndarray) -> int:
    """The most SuperPoDs any one group ([groups, members]) spans."""
    ordered = np.sort(pods, axis=1)
    return int((np.diff(ordered, axis=1) != 0).sum(axis=1).max()) + 1


def _pod_split(pods: np.ndarray) -> tuple[int, np.ndarray] | None:
    """(SuperPoDs per communicator, each row's positions ordered by SuperPoD) when every row of `pods`
    ([R, servers]) spans equally many SuperPoDs with equally many servers in each; else None (HCCL's
    NHR-HCF case, modelled as one level)."""
    order = np.argsort(pods, axis=1, kind="stable")
    ordered = np.take_along_axis(pods, order, axis=1)
    count = len(np.unique(ordered[0]))
    if pods.shape[1] % count:
        return None
    grid = ordered.reshape(pods.shape[0], count, pods.shape[1] // count)
    if not (grid == grid[:, :, :1]).all() or not (grid[:, 1:, 0] != grid[:, :-1, 0]).all():
        return None
    return count, order


def _superpod_levels(
    timer: StepTimer,
    rows: np.ndarray,
    pods: np.ndarray,
    split: tuple[int, np.ndarray],
    level1: str,
    level2: str | None,
    links: ProductLinks,
) -> list[Level]:
    """A3 above the server: servers of one SuperPoD over switched HCCS (off the RoCE tree), then the
    j-th server of every SuperPoD over RoCE, as the whole-job estimate models it."""
    count, order = split
    per_pod = rows.shape[1] // count

    def across(values: np.ndarray) -> np.ndarray:
        grid = np.take_along_axis(values, order, axis=1).reshape(rows.shape[0], count, per_pod)
        return grid.transpose(0, 2, 1).reshape(rows.shape[0] * per_pod, count)

    between = timer.with_pods(across(rows), across(pods))
    return [
        Level("in-SuperPoD", per_pod, links.hccs_l2_gbps, "ring" if level1 == "pipeline" else level1),
        Level("between SuperPoDs", count, links.roce_gbps, level2 or "H-D_R", between),
    ]


def group_cost(
    kind: str,
    ranks: np.ndarray,
    places: RankPlaces,
    product: str,
    timer: StepTimer,
    nbytes: float,
    settings: dict[str, LevelSetting] | None,
    source: str = "HCCL_ALGO",
    links: ProductLinks | None = None,
) -> GroupCost:
    """All `ranks.shape[0]` groups of one kind running their collective at once."""
    links = links or product_links(product)
    count, size = ranks.shape
    servers = places.server[ranks]
    leaves = places.leaf[ranks]
    pods = None if places.pod is None else places.pod[ranks]
    notes: list[str] = []
    first = np.unique(servers[0])
    spread = len(first)
    per_server = size // spread if size % spread == 0 else 0
    regular = per_server > 0 and bool(
        (
            servers.reshape(count, spread, per_server) == servers.reshape(count, spread, per_server)[:, :, :1]
        ).all()
    )
    if not regular:
        notes.append("members are not spread evenly over servers; costed as one flat level over the tree")
        per_server, spread = 1, size
    if OPERATION[kind] == "p2p":
        cost = _p2p_cost(kind, size, count, spread, leaves, pods, timer, nbytes, links)
    else:
        cost = _collective_cost(
            kind,
            (count, size, spread, per_server),
            leaves,
            pods,
            product,
            timer,
            nbytes,
            settings,
            source,
            links,
        )
    cost.notes[:0] = notes
    cost.superpods_per_group = 0 if pods is None else _most_superpods(pods)
    cost.superpod_crossings = sum(step.superpod_crossings * step.repeat for step in cost.steps)
    return cost


def _p2p_cost(
    kind: str,
    size: int,
    count: int,
    spread: int,
    leaves: np.ndarray,
    pods: np.ndarray | None,
    timer: StepTimer,
    nbytes: float,
    links: ProductLinks,
) -> GroupCost:
    """Pipeline stages send to the next stage: over RoCE on the tree, or over switched HCCS when every
    stage pair shares a SuperPoD (A3)."""
    in_pod = pods is not None and spread > 1 and not bool((pods[:, :-1] != pods[:, 1:]).any())
    load = None
    if spread > 1 and not in_pod:
        load = timer.pairs(timer.with_pods(leaves, pods), np.arange(size - 1), np.arange(1, size))
    if load is not None:
        gbps, level = links.roce_gbps * load.factor, "inter-server"
    else:
        gbps, level = (links.hccs_l2_gbps, "in-SuperPoD") if in_pod else (links.hccs_gbps, "in-server")
    seconds = timer.timing.alpha_s + nbytes / (gbps * 1e9)
    step = StepCost(
        level,
        "p2p",
        "stage s -> s+1",
        nbytes,
        1,
        seconds,
        gbps,
        list(load.crossings_per_tier) if load else [0] * timer.tiers,
        load.max_uplink_flows if load else 0,
        load.busiest_uplink if load else None,
        load.superpod_crossings if load else 0,
    )
    crossings, most, where = _summary([step], timer.tiers)
    return GroupCost(
        kind,
        size,
        count,
        "p2p",
        "p2p",
        "pipeline stages exchange activations point-to-point",
        nbytes,
        seconds,
        spread,
        crossings,
        most,
        where,
        [step],
        [],
    )


def _collective_cost(
    kind: str,
    shape: tuple[int, int, int, int],
    leaves: np.ndarray,
    pods: np.ndarray | None,
    product: str,
    timer: StepTimer,
    nbytes: float,
    settings: dict[str, LevelSetting] | None,
    source: str,
    links: ProductLinks,
) -> GroupCost:
    """The group's collective level by level: in-server, then between servers (A3: in-SuperPoD and
    between SuperPoDs when the members' SuperPoDs hold equally many of their servers)."""
    count, size, spread, per_server = shape
    op = OPERATION[kind]
    notes: list[str] = []

    def planes(values: np.ndarray) -> np.ndarray:  # [groups x NPUs per server, servers of the group]
        return (
            values.reshape(count, spread, per_server).transpose(0, 2, 1).reshape(count * per_server, spread)
        )

    inner = Level("in-server", per_server, links.hccs_gbps, level0_algorithm(links.level0, per_server))
    rows = planes(leaves)
    pod_rows = None if pods is None else planes(pods)
    split = _pod_split(pod_rows) if pod_rows is not None and spread > 1 else None
    if pod_rows is not None and spread > 1 and split is None:
        notes.append(
            "the group's SuperPoDs hold different numbers of its servers; modelled as one inter-server "
            "level over RoCE"
        )
    buffer = level_buffer(op, nbytes, size)
    pod_count = split[0] if split is not None else 0
    level_servers = spread // pod_count if pod_count else spread
    if kind == "cp":
        choice = Choice(
            "ring", "Megatron context parallel runs ring point-to-point exchanges, not an HCCL collective"
        )
    else:
        choice = choose(
            op, product, level_servers, per_server, buffer, settings=settings, pods=pod_count, source=source
        )
    algorithm = choice.algorithm if spread > 1 else inner.algorithm
    if split is not None and pod_rows is not None:
        levels = [
            inner,
            *_superpod_levels(timer, rows, pod_rows, split, choice.algorithm, choice.level2, links),
        ]
    else:
        rows = timer.with_pods(rows, pod_rows)
        levels = [inner, Level("inter-server", spread, links.roce_gbps, choice.algorithm, rows)]
    steps = hierarchy_steps(timer, levels, op, buffer)
    crossings, most, where = _summary(steps, timer.tiers)
    return GroupCost(
        kind,
        size,
        count,
        op,
        algorithm,
        choice.reason,
        nbytes,
        sum(s.seconds for s in steps),
        spread,
        crossings,
        most,
        where,
        steps,
        notes,
    )


def group_costs(
    sizes: ParallelSizes,
    places: RankPlaces,
    product: str,
    timer: StepTimer,
    group_bytes: dict[str, int],
    default_bytes: float,
    settings: dict[str, LevelSetting] | None = None,
    source: str = "HCCL_ALGO",
    links: ProductLinks | None = None,
) -> list[GroupCost]:
    world = len(places.server)
    return [
        group_cost(
            kind, ranks, places, product, timer, group_bytes.get(kind, default_bytes), settings, source, links
        )
        for kind, ranks in group_ranks(sizes, world).items()
    ]
