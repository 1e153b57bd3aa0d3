"""The layout engine: servers sit under their own leaf, tiers stack top-down, columns never overlap."""

from __future__ import annotations

import itertools

from ranktable.render.layout import UNPLACED, build_frame, choose_column_tier
from ranktable.render.ring import crossings_per_tier, place_servers, ring_edges
from tests.core.test_render import pool


def test_detailed_frame_puts_each_server_under_its_leaf() -> None:
    p = pool(16, 4, 2)
    placed = place_servers(p.planned, p.topology)
    frame = build_frame(placed, p.topology, aggregated=False)
    leaf_box = {n.name: n.rect for n in frame.switches if n.tier == 1}
    assert set(leaf_box) == {"leaf-00", "leaf-01", "leaf-02", "leaf-03"}
    for server in placed:
        slot = frame.slots[server.server_id]
        box = leaf_box[server.leaf or ""]
        assert box.x <= slot.cx <= box.right  # right below its leaf
        assert slot.y > box.bottom
    columns = sorted(frame.columns, key=lambda c: c.rect.x)
    assert all(a.rect.right < b.rect.x for a, b in itertools.pairwise(columns))
    spine_y = {n.rect.y for n in frame.switches if n.tier == 2}
    leaf_y = {n.rect.y for n in frame.switches if n.tier == 1}
    assert len(spine_y) == 1 and len(leaf_y) == 1 and spine_y.pop() < leaf_y.pop()


def test_planned_servers_of_a_leaf_stack_in_node_rank_order() -> None:
    p = pool(12, 3, 0, seed=4)
    placed = place_servers(p.planned, p.topology)
    frame = build_frame(placed, p.topology, aggregated=False)
    by_leaf: dict[str, list[float]] = {}
    for server in placed:  # ring (node rank) order
        by_leaf.setdefault(server.leaf or "", []).append(frame.slots[server.server_id].y)
    assert sum(map(len, by_leaf.values())) == 12 and len(by_leaf) == 3  # every server, under its leaf
    assert all(len(ys) >= 2 for ys in by_leaf.values())  # a stack to order in each leaf
    assert all(ys == sorted(set(ys)) for ys in by_leaf.values())  # strictly down the page, in ring order


def test_aggregated_frame_uses_the_lowest_tier_that_fits() -> None:
    p = pool(256, 32, 4)
    placed = place_servers(p.planned, p.topology)
    leaves = sorted({s.leaf or UNPLACED for s in placed})
    assert choose_column_tier(leaves, p.topology, 2, max_columns=32) == 1
    assert choose_column_tier(leaves, p.topology, 2, max_columns=12) == 2
    frame = build_frame(placed, p.topology, aggregated=True, max_columns=12)
    assert frame.column_tier == 2 and len(frame.columns) == 4
    assert set(frame.slots) == set(leaves)
    assert {frame.slot_of_server[s.server_id] for s in placed} == set(leaves)


def test_ring_classes_follow_the_tree() -> None:
    p = pool(16, 4, 2)
    placed = place_servers(p.planned, p.topology)
    edges = ring_edges(placed)
    assert [e.src for e in edges] == list(range(16)) and edges[-1].dst == 0
    assert crossings_per_tier(edges, 2) == [4, 2]
    given = ring_edges(place_servers(p.given, p.topology))
    assert crossings_per_tier(given, 2) == p.comparison.given.crossings_per_tier
