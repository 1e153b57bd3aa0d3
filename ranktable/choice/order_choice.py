"""Choosing among orders that all keep the ring optimal, by what HCCL's algorithm and the parallel
groups cost on the model.

The tree order (`plan_routes`) makes every switch's servers contiguous, which is what a ring needs. Any
reordering of whole switch blocks keeps that property, but the other algorithms care which servers end
up at which positions: H-D_R on a non-power-of-2 count folds positions (0,1), (2,3), ... first, so a
leaf block starting at an odd position splits a fold pair across leaves. With parallel groups, the
stage-interleaved order puts pipeline neighbours side by side under one leaf instead of keeping each
stage's data-parallel groups together. Each candidate is costed and the cheapest kept, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ranktable.choice.cost import CollectiveQuery, LinkModel, order_metrics
from ranktable.hccl.columns import columns_of
from ranktable.hccl.model import RankTable
from ranktable.plan.placement import Placement, place, ring_crossings
from ranktable.plan.planner import PlanResult, renumbered
from ranktable.topology.model import Topology

RELATIVE_GAIN = 1e-9  # a candidate must be cheaper than this fraction to replace the tree order


def stage_interleaved(order: list[int], stages: int) -> list[int] | None:
    """Logical server i of stage s goes to tree slot i*stages + s (None when servers don't split)."""
    count = len(order)
    if stages <= 1 or count % stages:
        return None
    per_stage = count // stages
    return [order[i * stages + s] for s in range(stages) for i in range(per_stage)]


def _blocks(order: list[int], placement: Placement, tier: int) -> list[list[int]]:
    """Consecutive runs of `order` under one tier-`tier` switch."""
    runs: list[list[int]] = []
    last: object = None
    for i in order:
        key = placement.keys[i][tier - 1]
        if not runs or key != last:
            runs.append([])
            last = key
        runs[-1].append(i)
    return runs


def leaf_blocks_sorted(
    order: list[int], placement: Placement, key: Callable[[list[int]], tuple[int, int]]
) -> list[int]:
    """Leaf blocks reordered by `key` inside every tier-2 block (the ring stays optimal)."""
    if placement.tiers < 1:
        return list(order)
    parents = _blocks(order, placement, 2) if placement.tiers >= 2 else [list(order)]
    out: list[int] = []
    for parent in parents:
        for block in sorted(_blocks(parent, placement, 1), key=key):
            out.extend(block)
    return out


def even_blocks_first(order: list[int], placement: Placement) -> list[int]:
    """Leaf blocks of even size first (larger first), then odd ones: H-D_R's fold pairs then start
    at even positions inside a leaf."""
    return leaf_blocks_sorted(order, placement, lambda block: (len(block) % 2, -len(block)))


def _candidates(order: list[int], placement: Placement, algorithm: str) -> list[tuple[str, list[int]]]:
    found: list[tuple[str, list[int]]] = []
    if algorithm == "H-D_R":
        found.append(
            (
                "even-sized leaf blocks first (H-D_R fold pairs inside a leaf)",
                even_blocks_first(order, placement),
            )
        )
        found.append(("tree order reversed", list(reversed(order))))
    return [(name, cand) for name, cand in found if cand != order]


def _expected_algorithm(table: RankTable, query: CollectiveQuery, message_bytes: int) -> str:
    """HCCL's level-1 choice for the whole job (the same whatever the order), without costing."""
    from ranktable.collectives.choice import choose, detect_product
    from ranktable.collectives.estimate import level_buffer

    columns = columns_of(table)
    counts = set(columns.counts().tolist())
    per_server = counts.pop() if len(counts) == 1 else 1
    servers = columns.servers if per_server > 1 or not counts else table.rank_size
    product = (
        query.product
        or detect_product(table.version, bool(table.super_pods), {h for h in columns.hardware_type if h})[0]
    )
    pods = len(table.super_pods or [])
    buffer = level_buffer(query.operation, message_bytes, table.rank_size)
    return choose(
        query.operation,
        product,
        servers // pods if pods > 1 else servers,
        per_server,
        buffer,
        settings=query.settings,
        pods=pods,
    ).algorithm


def choose_order(
    table: RankTable,
    topology: Topology,
    result: PlanResult,
    query: CollectiveQuery,
    message_bytes: int,
    links: LinkModel | None = None,
) -> tuple[PlanResult, str]:
    """The tree plan, or a cheaper ring-preserving / group-aware one; with the reason."""
    if result.stable or len(result.server_order) < 3:
        return result, ""

    def cost_of(order: list[int]) -> tuple[float, str]:
        planned, _, _ = renumbered(table, order)
        metrics = order_metrics(planned, topology, message_bytes=message_bytes, links=links, query=query)
        if query.parallel is not None:
            return metrics.groups_seconds, metrics.algorithm
        return metrics.seconds, metrics.algorithm

    placement = result.placement or place(table, topology)
    algorithm = _expected_algorithm(table, query, message_bytes)
    candidates = _candidates(result.server_order, placement, algorithm)
    if query.parallel is not None:
        sizes = query.parallel.resolved(table.rank_size, query.parallel_where)
        per_server = set(columns_of(table).counts().tolist())
        interleaved = stage_interleaved(result.server_order, sizes.pp)
        stage_ranks = table.rank_size // sizes.pp
        if interleaved is not None and len(per_server) == 1 and stage_ranks % next(iter(per_server)) == 0:
            candidates.append(("stage-interleaved (pipeline neighbours side by side)", interleaved))
    if not candidates:
        return result, ""
    tree_cost, algorithm = cost_of(result.server_order)
    what = "the parallel groups" if query.parallel is not None else f"the {query.operation} ({algorithm})"
    best_name, best_order, best_cost = "tree order", result.server_order, tree_cost
    tried = [f"tree order {tree_cost * 1e3:.3g} ms"]
    for name, order in candidates:
        cost, _ = cost_of(order)
        tried.append(f"{name} {cost * 1e3:.3g} ms")
        if cost < best_cost * (1 - RELATIVE_GAIN):
            best_name, best_order, best_cost = name, order, cost
    reason = f"cost of {what}: " + "; ".join(tried) + f"; chose {best_name}"
    if best_order is result.server_order:
        return result, reason
    return _with_order(table, topology, result, best_order), reason


def _with_order(table: RankTable, topology: Topology, result: PlanResult, order: list[int]) -> PlanResult:
    planned, node_rank, old_ranks = renumbered(table, order)
    codes = place(table, topology).tier_codes()
    return replace(
        result,
        planned=planned,
        server_order=order,
        node_rank=node_rank,
        old_ranks=old_ranks,
        crossings_per_tier=ring_crossings(codes, order),
    )
