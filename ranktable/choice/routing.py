"""The order the launcher installs: the tree plan, then the per-algorithm / per-group order choice,
configured as the job is (its HCCL_ALGO and RANKTABLE_PARALLEL environment).

Every place that must agree with the launcher (`ranktable route` in the pod, `ranktable plan`, the node
ranks the cluster adapter reports) calls this one function, so they cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Mapping

from ranktable.errors import InputError
from ranktable.hccl.model import RankTable
from ranktable.plan.planner import PlanResult, plan_routes
from ranktable.topology.model import Topology

HCCL_ALGO_ENV = "HCCL_ALGO"
PARALLEL_ENV = "RANKTABLE_PARALLEL"
DEFAULT_MESSAGE_BYTES = 1 << 30


def routing_plan(table: RankTable, topology: Topology, env: Mapping[str, str] | None = None) -> PlanResult:
    """`plan_routes` plus the order choice for the job's HCCL_ALGO and parallel sizes. A value that does
    not parse is left out with a warning (HCCL reports its own errors; routing must not stop a start)."""
    from ranktable.choice.cost import CollectiveQuery
    from ranktable.choice.order_choice import choose_order
    from ranktable.collectives.choice import parse_hccl_algo
    from ranktable.collectives.groups import parse_parallel

    env = env or {}
    warnings: list[str] = []
    query = CollectiveQuery(source=HCCL_ALGO_ENV, parallel_where=PARALLEL_ENV)
    if env.get(HCCL_ALGO_ENV):
        try:
            query.settings = parse_hccl_algo(env[HCCL_ALGO_ENV], HCCL_ALGO_ENV)
        except InputError as exc:
            warnings.append(f"{exc.message}; planned with HCCL's default algorithm")
    if env.get(PARALLEL_ENV):
        try:
            query.parallel = parse_parallel(env[PARALLEL_ENV], PARALLEL_ENV).resolved(
                table.rank_size, PARALLEL_ENV
            )
        except InputError as exc:
            warnings.append(f"{exc.message}; planned without parallel groups")
    result = plan_routes(table, topology)
    result, _ = choose_order(table, topology, result, query, DEFAULT_MESSAGE_BYTES)
    result.warnings.extend(warnings)
    return result
