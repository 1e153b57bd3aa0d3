"""Server order for a job with parallel groups: try the orders that keep each heavy group low in the
tree and keep the one whose groups cost least on the model.

The tree order (`plan_routes`) makes every switch's servers contiguous, so with Megatron's rank order
(tp fastest, pp slowest) TP stays in a server and each pipeline stage's data-parallel groups fill
consecutive leaves. The stage-interleaved order puts the servers of pipeline neighbours side by side
under one leaf instead, at the price of spreading each data-parallel group over more leaves. Which wins
depends on the sizes, the message sizes and the oversubscription, so both are costed.
"""

from __future__ import annotations

from dataclasses import replace

from ranktable.cost import CollectiveQuery, LinkModel, order_metrics
from ranktable.hccl.model import RankTable
from ranktable.plan.placement import place, ring_crossings
from ranktable.plan.planner import PlanResult, renumber
from ranktable.topology.model import Topology


def stage_interleaved(order: list[int], stages: int) -> list[int] | None:
    """Logical server i of stage s goes to tree slot i*stages + s (None when servers don't split)."""
    count = len(order)
    if stages <= 1 or count % stages:
        return None
    per_stage = count // stages
    return [order[i * stages + s] for s in range(stages) for i in range(per_stage)]


def _groups_seconds(
    table: RankTable,
    order: list[int],
    topology: Topology,
    message_bytes: int,
    query: CollectiveQuery,
    links: LinkModel | None,
) -> tuple[float, RankTable, dict[str, int], str]:
    planned, node_rank, mapping = renumber(table, order)
    metrics = order_metrics(planned, topology, message_bytes=message_bytes, links=links, query=query)
    return metrics.groups_seconds, planned, node_rank, mapping


def order_for_groups(
    table: RankTable,
    topology: Topology,
    result: PlanResult,
    query: CollectiveQuery,
    message_bytes: int,
    links: LinkModel | None = None,
) -> tuple[PlanResult, str]:
    """The tree plan, or the stage-interleaved one when its groups cost less; with the reason."""
    if query.parallel is None or result.stable:
        return result, ""
    sizes = query.parallel.resolved(table.rank_size)
    per_server = {len(s.devices) for s in table.servers}
    tree_cost, *_ = _groups_seconds(table, result.server_order, topology, message_bytes, query, links)
    tree_text = (
        f"tree order (pipeline stages in consecutive blocks) costs the groups {tree_cost * 1e3:.1f} ms"
    )
    stage_ranks = table.rank_size // sizes.pp
    candidate = stage_interleaved(result.server_order, sizes.pp)
    if candidate is None or len(per_server) != 1 or stage_ranks % next(iter(per_server)):
        return result, tree_text + "; no other order applies (pp=1 or stages are not whole servers)"
    cost, planned, node_rank, mapping = _groups_seconds(
        table, candidate, topology, message_bytes, query, links
    )
    other = f"stage-interleaved (pipeline neighbours side by side) {cost * 1e3:.1f} ms"
    if cost >= tree_cost * (1 - 1e-9):
        return result, f"{tree_text}; {other}; kept the tree order"
    codes = place(table, topology).tier_codes()
    chosen = replace(
        result,
        planned=planned,
        server_order=candidate,
        node_rank=node_rank,
        rank_mapping=mapping,
        crossings_per_tier=ring_crossings(codes, candidate),
    )
    return chosen, f"{other}; {tree_text}; chose stage-interleaved"
