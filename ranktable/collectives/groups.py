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
    for part in text.split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or key not in (*KINDS, "dp") or key in found:
            raise InputError(
                f"{part.strip()!r} is not one of tp=, cp=, ep=, pp=, dp= (each once)",
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
    for part in text.split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or key not in KINDS:
            raise InputError(
                f"{part.strip()!r} is not <kind>=<size> with kind one of {', '.join(KINDS)}", where=where
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
            "max_uplink_flows": self.max_uplink_flows,
            "busiest_uplink": self.busiest_uplink,
            "steps": [step.to_json() for step in self.steps[:MAX_STEPS_SHOWN]],
            "steps_omitted": max(0, len(self.steps) - MAX_STEPS_SHOWN),
            "notes": self.notes,
        }


@dataclass
class RankPlaces:
    """Per global rank id: the position of its server in rank order and its leaf code."""

    server: np.ndarray
    leaf: np.ndarray


def _summary(steps: list[StepCost], tiers: int) -> tuple[list[int], int, str | None]:
    total = [0] * tiers
    for s in steps:
        for k, n in enumerate(s.crossings_per_tier[:tiers]):
            total[k] += n * s.repeat
    busiest = max(steps, key=lambda s: s.max_uplink_flows, default=None)
    most = busiest.max_uplink_flows if busiest else 0
    return total, most, busiest.busiest_uplink if busiest and most else None


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
    op = OPERATION[kind]
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
    inner = Level("in-server", per_server, links.hccs_gbps, level0_algorithm(links.level0, per_server))
    rows = leaves.reshape(count, spread, per_server).transpose(0, 2, 1).reshape(count * per_server, spread)
    if op == "p2p":
        load = timer.pairs(leaves, np.arange(size - 1), np.arange(1, size)) if spread > 1 else None
        gbps = links.roce_gbps * load.factor if load is not None else links.hccs_gbps
        seconds = timer.timing.alpha_s + nbytes / (gbps * 1e9)
        step = StepCost(
            "inter-server" if spread > 1 else "in-server",
            "p2p",
            "stage s -> s+1",
            nbytes,
            1,
            seconds,
            gbps,
            list(load.crossings_per_tier) if load else [0] * timer.tiers,
            load.max_uplink_flows if load else 0,
            load.busiest_uplink if load else None,
        )
        crossings, most, where = _summary([step], timer.tiers)
        return GroupCost(
            kind,
            size,
            count,
            op,
            "p2p",
            "pipeline stages exchange activations point-to-point",
            nbytes,
            seconds,
            spread,
            crossings,
            most,
            where,
            [step],
            notes,
        )
    buffer = level_buffer(op, nbytes, size)
    if kind == "cp":
        choice = Choice(
            "ring", "Megatron context parallel runs ring point-to-point exchanges, not an HCCL collective"
        )
    else:
        choice = choose(op, product, spread, per_server, buffer, settings=settings, source=source)
    algorithm = choice.algorithm if spread > 1 else inner.algorithm
    outer = Level("inter-server", spread, links.roce_gbps, choice.algorithm, rows)
    steps = hierarchy_steps(timer, [inner, outer], op, buffer)
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
