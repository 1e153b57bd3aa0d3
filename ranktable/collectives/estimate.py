"""The whole job's collective on one rank order: HCCL's algorithm choice plus the step-by-step cost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ranktable.collectives.choice import Choice, LevelSetting, choose
from ranktable.collectives.constants import (
    ProductLinks,
    alpha_seconds,
    constants,
    pairwise_sampled_steps,
    product_links,
)
from ranktable.collectives.engine import Level, StepCost, StepTimer, Timing, hierarchy_steps, level0_algorithm
from ranktable.collectives.fabric import Fabric

MAX_STEPS_SHOWN = 64


def default_timing() -> Timing:
    return Timing(alpha_seconds(), float(constants()["gamma_s_per_byte"]["value"]), pairwise_sampled_steps())


@dataclass
class JobShape:
    """Where every rank sits: `rows[i, j]` = leaf code of local rank j of the i-th server in rank order;
    `pods[i]` = its SuperPoD index (A3) or None."""

    rows: np.ndarray
    product: str
    product_reason: str
    pods: np.ndarray | None = None

    @property
    def servers(self) -> int:
        return int(self.rows.shape[0])

    @property
    def per_server(self) -> int:
        return int(self.rows.shape[1]) if self.rows.ndim == 2 else 0

    def pod_count(self) -> int:
        return 0 if self.pods is None else len(np.unique(self.pods))


@dataclass
class Estimate:
    """One collective on one order: which algorithm, why, and each step's cost on the tree."""

    operation: str
    product: str
    algorithm: str
    reason: str
    message_bytes: float
    seconds: float
    steps: list[StepCost] = field(default_factory=list)
    level2_algorithm: str | None = None
    notes: list[str] = field(default_factory=list)
    superpods: int = 0  # A3: SuperPoDs the job spans (0 = no super_pod_list in the table)

    @property
    def superpod_crossings(self) -> int:
        """Flows between SuperPoDs over the whole collective (each step counted `repeat` times)."""
        return sum(s.superpod_crossings * s.repeat for s in self.steps)

    @property
    def max_uplink_flows(self) -> int:
        return max((s.max_uplink_flows for s in self.steps), default=0)

    @property
    def busiest_uplink(self) -> str | None:
        busiest = max(self.steps, key=lambda s: s.max_uplink_flows, default=None)
        return busiest.busiest_uplink if busiest is not None and busiest.max_uplink_flows else None

    def slowest_gbps(self, level_prefix: str = "inter-server") -> float | None:
        found = [s.gbps for s in self.steps if s.level.startswith(level_prefix)]
        return min(found) if found else None

    def crossings_per_tier(self, tiers: int) -> list[int]:
        """Flows crossing each tier over the whole collective (each step counted `repeat` times)."""
        total = [0] * tiers
        for step in self.steps:
            for k, n in enumerate(step.crossings_per_tier[:tiers]):
                total[k] += n * step.repeat
        return total

    def to_json(self, tiers: int) -> dict[str, Any]:
        shown = self.steps[:MAX_STEPS_SHOWN]
        return {
            "operation": self.operation,
            "product": self.product,
            "algorithm": self.algorithm,
            "level2_algorithm": self.level2_algorithm,
            "algorithm_reason": self.reason,
            "message_bytes": self.message_bytes,
            "seconds": self.seconds,
            "flows_crossing_per_tier": self.crossings_per_tier(tiers),
            "superpods": self.superpods,
            "flows_crossing_superpods": self.superpod_crossings,
            "max_uplink_flows": self.max_uplink_flows,
            "busiest_uplink": self.busiest_uplink,
            "steps": [s.to_json() for s in shown],
            "steps_omitted": len(self.steps) - len(shown),
            "notes": self.notes,
        }


def _levels(
    shape: JobShape, choice: Choice, notes: list[str], links: ProductLinks, timer: StepTimer
) -> list[Level]:
    """The levels above the NPU: in-server, then (A3) in-SuperPoD over switched HCCS and between
    SuperPoDs over RoCE, else one inter-server level over RoCE. Levels on the tree carry their SuperPoD
    indexes (`timer.with_pods`), so every step also counts its flows between SuperPoDs."""
    m, d = shape.servers, shape.per_server
    inner = Level("in-server", d, links.hccs_gbps, level0_algorithm(links.level0, d))
    pods = shape.pod_count()
    level1 = "ring" if choice.algorithm == "pipeline" else choice.algorithm
    in_pod_note = "pipeline overlaps RoCE with in-server HCCS; inside a SuperPoD it is costed as ring"
    if pods == 1:  # one SuperPoD: its servers talk over switched HCCS, off the RoCE tree
        if choice.algorithm == "pipeline":
            notes.append(in_pod_note)
        return [inner, Level("in-SuperPoD", m, links.hccs_l2_gbps, level1)]
    if pods > 1 and shape.pods is not None:
        counts = np.bincount(np.unique(shape.pods, return_inverse=True)[1])
        if counts.min() == counts.max():
            k = int(counts[0])
            order = np.argsort(shape.pods, kind="stable")
            grid = shape.rows[order].reshape(pods, k, d)
            pod_grid = np.repeat(shape.pods[order].reshape(pods, k, 1), d, axis=2)
            between = grid.transpose(1, 2, 0).reshape(k * d, pods)
            if choice.algorithm == "pipeline":
                notes.append(in_pod_note)
            return [
                inner,
                Level("in-SuperPoD", k, links.hccs_l2_gbps, level1),
                Level(
                    "between SuperPoDs",
                    pods,
                    links.roce_gbps,
                    choice.level2 or "H-D_R",
                    timer.with_pods(between, pod_grid.transpose(1, 2, 0).reshape(k * d, pods)),
                ),
            ]
        notes.append(
            "SuperPoDs hold different server counts (HCCL splits them into GCD-sized logical SuperPoDs, "
            "NHR-HCF); modelled as one inter-server level over RoCE"
        )
    rows = shape.rows.T
    if shape.pods is not None:
        rows = timer.with_pods(rows, np.repeat(shape.pods.reshape(1, m), d, axis=0))
    return [inner, Level("inter-server", m, links.roce_gbps, choice.algorithm, rows)]


def level_buffer(op: str, nbytes: float, ranks: int) -> float:
    """All-gather / reduce-scatter levels work on the whole buffer: per-rank bytes x ranks."""
    return nbytes * ranks if op in ("allgather", "reducescatter") else nbytes


def estimate_job(
    shape: JobShape,
    fabric: Fabric | None,
    op: str,
    nbytes: float,
    *,
    settings: dict[str, LevelSetting] | None = None,
    timing: Timing | None = None,
    source: str = "HCCL_ALGO",
    timer: StepTimer | None = None,
    links: ProductLinks | None = None,
) -> Estimate:
    """HCCL's choice and the step costs of `op` with `nbytes` per rank (the input of all-reduce,
    broadcast, all-gather and all-to-all; the output of reduce-scatter)."""
    timing = timing or default_timing()
    m, d = shape.servers, shape.per_server
    buffer = level_buffer(op, nbytes, m * d)
    notes: list[str] = []
    pods = shape.pod_count()
    level_servers = m // pods if pods > 1 else m
    choice = choose(op, shape.product, level_servers, d, buffer, settings=settings, pods=pods, source=source)
    timer = timer or StepTimer(fabric, timing)
    levels = _levels(shape, choice, notes, links or product_links(shape.product), timer)
    steps = hierarchy_steps(timer, levels, op, buffer)
    if choice.algorithm == "NHR_V1":
        notes.append("NHR_V1's step pattern is not documented; it is costed as NHR")
    if op == "alltoall" and m - 1 > timing.sampled_steps:
        notes.append(
            f"pairwise all-to-all: {timing.sampled_steps} evenly spaced steps costed, each for its band"
        )
    return Estimate(
        op,
        shape.product,
        choice.algorithm,
        choice.reason,
        nbytes,
        sum(s.seconds for s in steps),
        steps,
        choice.level2,
        notes,
        pods,
    )
