"""The layout picture: valid SVG, rank numbers, ring edges whose classes add up to the cost model's counts."""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ranktable.choice.cost import Comparison, compare
from ranktable.hccl import Device, RankTable, Server
from ranktable.plan import plan_routes
from ranktable.render import layout_svg
from ranktable.topology import Switch, Topology, synthetic_topology

NS = "{http://www.w3.org/2000/svg}"


@dataclass
class Pool:
    given: RankTable
    planned: RankTable
    topology: Topology
    comparison: Comparison


def table_of(server_ids: list[str], devices: int = 8) -> RankTable:
    """A completed 1.0 table in the given (pod) order with sequential ranks, as the platform writes it."""
    servers = [
        Server(sid, [Device(d, i * devices + d, f"29.{i // 200}.{i % 200}.{d + 1}") for d in range(devices)])
        for i, sid in enumerate(server_ids)
    ]
    return RankTable("completed", "1.0", servers)


def pool(
    servers: int,
    leaves: int,
    spines: int = 0,
    cores: int = 0,
    *,
    seed: int = 1,
    rails: int = 0,
    extra: int = 0,
) -> Pool:
    """A synthetic tree, a shuffled pod order (plus `extra` servers the topology does not know), planned."""
    topology, ids = synthetic_topology(servers, leaves, spines, cores, rails=rails)
    order = ids + [f"10.99.0.{i + 1}" for i in range(extra)]
    random.Random(seed).shuffle(order)
    table = table_of(order)
    planned = plan_routes(table, topology).planned
    return Pool(table, planned, topology, compare(table, planned, topology))


def render(p: Pool, **kwargs: object) -> ET.Element:
    svg = layout_svg(p.given, p.planned, p.topology, p.comparison, **kwargs)  # type: ignore[arg-type]
    return ET.fromstring(svg)


def panel(root: ET.Element, name: str) -> ET.Element:
    found = root.find(f"{NS}g[@data-panel='{name}']")
    assert found is not None, f"no {name} panel"
    return found


def edges_by_tier(group: ET.Element, tag: str, cls: str) -> dict[int, int]:
    """Sum of ring edges per class: one per element, or its data-count when aggregated."""
    counts: dict[int, int] = {}
    for el in group.iter(f"{NS}{tag}"):
        if cls in el.get("class", "").split():
            tier = int(el.get("data-tier", "-1"))
            counts[tier] = counts.get(tier, 0) + int(el.get("data-count", "1"))
    return counts


def crossings(counts: dict[int, int], tiers: int) -> list[int]:
    return [sum(n for t, n in counts.items() if t >= k) for k in range(1, tiers + 1)]


def assert_edges_match(root: ET.Element, p: Pool, tag: str = "path", cls: str = "rt-edge") -> None:
    tiers = len(p.comparison.given.crossings_per_tier)
    for name, figures in (("given", p.comparison.given), ("planned", p.comparison.planned)):
        counts = edges_by_tier(panel(root, name), tag, cls)
        assert crossings(counts, tiers) == figures.crossings_per_tier, name
        servers = len(p.given.servers)
        assert sum(counts.values()) == (servers if servers > 1 else 0), name


def test_small_pool_is_valid_svg_with_size() -> None:
    root = render(pool(16, 4, 2))
    assert root.tag == f"{NS}svg"
    width, height = float(root.get("width", "0")), float(root.get("height", "0"))
    assert width > 0 and height > 0
    assert root.get("viewBox") == f"0 0 {root.get('width')} {root.get('height')}"
    assert root.get("data-aggregated") == "false"
    assert root.find(f"{NS}style") is not None and root.find(f"{NS}title") is not None


def test_every_rank_number_is_drawn_in_both_panels() -> None:
    p = pool(16, 4, 2)
    root = render(p)
    for name in ("given", "planned"):
        texts = [t.text for t in panel(root, name).iter(f"{NS}text") if t.get("class") == "rt-rank"]
        assert sorted(int(t or "-1") for t in texts) == list(range(128))


def test_planned_panel_shows_the_planned_ranks_per_server() -> None:
    p = pool(12, 3, 0, seed=5)
    root = render(p)
    planned_ranks = {s.server_id: [d.rank_id for d in s.devices] for s in p.planned.servers}
    servers = [g for g in panel(root, "planned").iter(f"{NS}g") if g.get("class") == "rt-server"]
    assert len(servers) == 12
    for group in servers:
        cells = [int(r.get("data-rank", "-1")) for r in group.iter(f"{NS}rect") if r.get("class") == "rt-npu"]
        assert cells == planned_ranks[group.get("data-server", "")]


def test_edge_classes_add_up_to_the_comparison_figures() -> None:
    p = pool(16, 4, 2)
    root = render(p)
    assert_edges_match(root, p)
    # the colour class follows the tier crossed
    for el in panel(root, "given").iter(f"{NS}path"):
        if "rt-edge" in el.get("class", ""):
            assert f"rt-t{el.get('data-tier')}" in el.get("class", "").split()


def test_planned_ring_beats_given_in_the_picture() -> None:
    p = pool(16, 4, 2)
    root = render(p)
    given_counts = edges_by_tier(panel(root, "given"), "path", "rt-edge")
    planned_counts = edges_by_tier(panel(root, "planned"), "path", "rt-edge")
    assert planned_counts.get(0, 0) > given_counts.get(0, 0)
    assert crossings(planned_counts, 2) == [4, 2]  # one crossing per leaf and per spine, wrapping


def test_servers_carry_hover_info() -> None:
    p = pool(8, 2, 0, seed=3)
    root = render(p)
    pod_index = {s.server_id: i for i, s in enumerate(p.given.servers)}
    planned_node = {s.server_id: i for i, s in enumerate(p.planned.servers)}
    for group in panel(root, "planned").iter(f"{NS}g"):
        if group.get("class") != "rt-server":
            continue
        sid = group.get("data-server", "")
        assert group.get("data-leaf") == p.topology.leaf_of(sid)
        assert group.get("data-pod-index") == str(pod_index[sid])
        assert group.get("data-node-rank") == str(planned_node[sid])
        title = group.find(f"{NS}title")
        assert title is not None and sid in (title.text or "") and "leaf-" in (title.text or "")
        first = planned_node[sid] * 8
        assert group.get("data-ranks") == f"{first}-{first + 7}"


def test_switches_are_drawn_top_tier_first() -> None:
    root = render(pool(16, 4, 2, 1))
    body = panel(root, "given")
    ys: dict[int, set[str]] = {}
    for group in body.iter(f"{NS}g"):
        if group.get("class") == "rt-switch":
            rect = group.find(f"{NS}rect")
            assert rect is not None
            ys.setdefault(int(group.get("data-tier", "0")), set()).add(rect.get("y", ""))
    assert set(ys) == {1, 2, 3}
    assert all(len(v) == 1 for v in ys.values())  # one row per tier
    assert float(ys[3].pop()) < float(ys[2].pop()) < float(ys[1].pop())


def test_user_values_are_escaped_not_injected() -> None:
    topology = Topology(source="test")
    topology.add_switch(Switch("leaf<&>", 1))
    ids = ['a"<b>&c', "</svg><script>x</script>", "ctrl\x01char"]
    for sid in ids:
        topology.attach_server(sid, "leaf<&>")
    table = table_of(ids, devices=2)
    planned = plan_routes(table, topology).planned
    p = Pool(table, planned, topology, compare(table, planned, topology))
    svg = layout_svg(p.given, p.planned, p.topology, p.comparison, title="<b>title & co</b>")
    root = ET.fromstring(svg)
    assert root.find(f".//{NS}script") is None
    shown = {g.get("data-server") for g in root.iter(f"{NS}g") if g.get("class") == "rt-server"}
    assert shown == {'a"<b>&c', "</svg><script>x</script>", "ctrl\ufffdchar"}
    texts = [t.text or "" for t in root.iter(f"{NS}text")]
    assert "<b>title & co</b>" in texts


def test_servers_missing_from_the_topology_get_their_own_column() -> None:
    p = pool(8, 2, 1, extra=2)
    root = render(p)
    unplaced = [g for g in root.iter(f"{NS}g") if g.get("class") == "rt-unplaced"]
    assert len(unplaced) == 2  # one per panel
    missing = [
        g
        for g in panel(root, "planned").iter(f"{NS}g")
        if g.get("class") == "rt-server" and g.get("data-path") == "not in topology"
    ]
    assert len(missing) == 2
    assert_edges_match(root, p)


def test_rail_optimised_pool_counts_like_the_cost_model() -> None:
    p = pool(8, 4, 1, rails=2)
    assert_edges_match(render(p), p)


def test_one_server_has_no_ring_edges() -> None:
    p = pool(1, 1)
    root = render(p)
    assert not [el for el in root.iter(f"{NS}path") if "rt-edge" in el.get("class", "")]
    assert p.comparison.planned.crossings_per_tier == [0]


def test_threshold_switches_to_aggregated_view() -> None:
    p = pool(16, 4, 2)
    root = render(p, aggregate_threshold=8)
    assert root.get("data-aggregated") == "true"
    assert not [t for t in root.iter(f"{NS}text") if t.get("class") == "rt-rank"]
    groups = [g for g in panel(root, "given").iter(f"{NS}g") if g.get("class") == "rt-leafgroup"]
    assert sorted(g.get("data-leaf") for g in groups) == ["leaf-00", "leaf-01", "leaf-02", "leaf-03"]
    assert sum(int(g.get("data-servers", "0")) for g in groups) == 16
    assert_edges_match(root, p, tag="rect", cls="rt-summary")


def test_aggregated_planned_leaves_hold_contiguous_rank_ranges() -> None:
    p = pool(32, 4, 2)
    root = render(p, aggregate_threshold=8)
    planned = [g for g in panel(root, "planned").iter(f"{NS}g") if g.get("class") == "rt-leafgroup"]
    assert all(g.get("data-rank-runs") == "1" for g in planned)
    given_runs = [
        int(g.get("data-rank-runs", "0"))
        for g in panel(root, "given").iter(f"{NS}g")
        if g.get("class") == "rt-leafgroup"
    ]
    assert max(given_runs) > 1  # the shuffled pod order scatters each leaf's ranks


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    servers=st.integers(1, 40),
    leaves=st.integers(1, 8),
    spines=st.integers(0, 4),
    seed=st.integers(0, 10_000),
    extra=st.integers(0, 2),
)
def test_edge_counts_match_cost_model_for_random_trees(
    servers: int, leaves: int, spines: int, seed: int, extra: int
) -> None:
    leaves = min(leaves, servers)
    spines = min(spines, leaves)
    p = pool(servers, leaves, spines, seed=seed, extra=extra)
    root = render(p)
    if root.get("data-aggregated") == "true":
        assert_edges_match(root, p, tag="rect", cls="rt-summary")
    else:
        assert_edges_match(root, p)


@pytest.mark.parametrize("threshold", [0, 1000])
def test_both_views_parse_for_a_three_tier_tree(threshold: int) -> None:
    p = pool(24, 6, 3, 2, seed=9)
    root = render(p, aggregate_threshold=threshold)
    assert root.get("data-aggregated") == ("true" if threshold == 0 else "false")
    if threshold == 0:
        assert_edges_match(root, p, tag="rect", cls="rt-summary")
    else:
        assert_edges_match(root, p)


def test_topology_without_switches_puts_everyone_in_the_unplaced_column() -> None:
    table = table_of(["10.1.0.1", "10.1.0.2", "10.1.0.3"], devices=16)
    topology = Topology(source="empty")
    planned = plan_routes(table, topology).planned
    p = Pool(table, planned, topology, compare(table, planned, topology))
    root = render(p)
    servers = [g for g in panel(root, "given").iter(f"{NS}g") if g.get("class") == "rt-server"]
    assert {g.get("data-path") for g in servers} == {"not in topology"}
    cells = [r for r in servers[0].iter(f"{NS}rect") if r.get("class") == "rt-npu"]
    assert len(cells) == 16
    assert_edges_match(root, p)


def test_key_figures_and_speedup_come_from_the_comparison() -> None:
    p = pool(16, 4, 2)
    root = render(p)
    speedup = [el for el in root.iter(f"{NS}tspan") if el.get("class") == "rt-speedup"]
    assert len(speedup) == 1 and float(speedup[0].get("data-speedup", "0")) == pytest.approx(
        p.comparison.speedup, rel=1e-5
    )
    for name, figures in (("given", p.comparison.given), ("planned", p.comparison.planned)):
        texts = list(panel(root, name).iter(f"{NS}text"))
        shown = [el.get("data-crossings") for el in texts if el.get("data-crossings")]
        assert shown == [",".join(str(n) for n in figures.crossings_per_tier)]
        flows = [el for el in panel(root, name).iter(f"{NS}text") if el.get("data-flows")]
        assert flows[0].get("data-flows") == str(figures.max_uplink_flows)


def test_style_is_scoped_so_inlining_cannot_restyle_the_host_page() -> None:
    root = render(pool(4, 2))
    style = root.find(f"{NS}style")
    assert style is not None and style.text
    rules = [r.strip() for r in style.text.split("}") if r.strip()]
    for rule in rules:
        selectors = rule.split("{")[0].split(",")
        assert all(sel.strip().startswith(".rt-layout") for sel in selectors), rule
    assert "var(--jp-layout-color0" in style.text and "var(--jp-ui-font-color1" in style.text
    assert root.get("class") == "rt-layout"
