"""Exhaustive search over server orders on small trees: the least cost any order reaches on the model,
to measure how far the planner's order is from it (tests/core/test_plan_optimality.py, bench)."""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

import numpy as np

from ranktable.choice.cost import CollectiveQuery
from ranktable.choice.order_choice import choose_order
from ranktable.collectives.choice import parse_hccl_algo
from ranktable.collectives.estimate import JobShape, estimate_job
from ranktable.collectives.fabric import Fabric
from ranktable.hccl.model import RankTable
from ranktable.plan import plan_routes
from ranktable.topology.model import Switch, Topology
from tests.core.test_plan import make_table

ALGORITHMS = ("ring", "H-D_R", "NHR", "NB", "AHC", "pipeline")


@dataclass(frozen=True)
class Pool:
    """A small tree: servers per leaf, leaves per spine, uplink oversubscription, NPUs per server."""

    per_leaf: tuple[int, ...]
    spines: int
    oversubscription: float
    devices: int

    def build(self) -> tuple[RankTable, Topology]:
        topo = Topology(source="pool")
        for s in range(self.spines):
            topo.add_switch(Switch(f"spine{s}", 2, None, oversubscription=self.oversubscription))
        ids = []
        for leaf, count in enumerate(self.per_leaf):
            parent = f"spine{leaf * self.spines // len(self.per_leaf)}"
            topo.add_switch(Switch(f"leaf{leaf}", 1, parent, oversubscription=self.oversubscription))
            for n in range(count):
                topo.attach_server(f"s{leaf}-{n}", f"leaf{leaf}")
                ids.append(f"s{leaf}-{n}")
        if self.spines > 1:
            topo.add_switch(Switch("core", 3))
            for s in range(self.spines):
                topo.switches[f"spine{s}"] = Switch(
                    f"spine{s}", 2, "core", oversubscription=self.oversubscription
                )
        random.Random(len(ids)).shuffle(ids)  # the platform's pod order knows nothing of switches
        return make_table(ids, self.devices), topo


def order_cost(
    rows: np.ndarray, order: tuple[int, ...] | list[int], fabric: Fabric, algorithm: str, nbytes: float
) -> float:
    shape = JobShape(rows[list(order)], "A2", "search")
    settings = parse_hccl_algo(algorithm) if algorithm != "default" else None
    return estimate_job(shape, fabric, "allreduce", nbytes, settings=settings).seconds


def planner_and_best(
    pool: Pool, algorithm: str, nbytes: float = 256 << 20, *, choose: bool = True
) -> tuple[float, float]:
    """(the planner's cost, the least cost of any server order) for one algorithm; `choose=False`
    takes the plain tree order without the per-algorithm order choice."""
    table, topo = pool.build()
    fabric = Fabric(topo, pool.devices, 20.0)
    rows = np.array(
        [[fabric.leaf_code(topo.server_leaf[s.server_id])] * pool.devices for s in table.servers],
        dtype=np.int64,
    )
    settings = parse_hccl_algo(algorithm) if algorithm != "default" else None
    query = CollectiveQuery(settings=settings)
    tree = plan_routes(table, topo)
    planned = (
        choose_order(table, topo, tree, query, int(nbytes))[0].server_order if choose else tree.server_order
    )
    mine = order_cost(rows, planned, fabric, algorithm, nbytes)
    m = len(table.servers)
    best = min(
        order_cost(rows, (0, *rest), fabric, algorithm, nbytes)
        for rest in itertools.permutations(range(1, m))
    )
    return mine, best
