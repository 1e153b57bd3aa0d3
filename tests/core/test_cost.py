"""Cost model: the alpha-beta formulas, uplink oversubscription, and the comparison report."""

from __future__ import annotations

import json

import pytest

from ranktable.choice.cost import (
    LinkModel,
    compare,
    format_report,
    hierarchical_allreduce_seconds,
    order_metrics,
    ring_allreduce_seconds,
)
from ranktable.plan import plan_routes
from ranktable.topology.model import Switch, Topology
from tests.core.test_plan import make_table, two_tier

GIB = 1 << 30
LINKS = LinkModel()


def test_ring_formula_matches_the_reference() -> None:
    # 2(p-1)alpha + 2(p-1)/p * n / bw
    assert ring_allreduce_seconds(4, 1e9, 20.0, LINKS) == pytest.approx(6 * 60e-6 + 1.5 * 1e9 / 20e9)
    assert ring_allreduce_seconds(1, 1e9, 20.0, LINKS) == 0.0
    slower = LinkModel(alpha_s=1e-3, roce_gbps=10.0)
    assert ring_allreduce_seconds(2, 2e9, 10.0, slower) == pytest.approx(2e-3 + 2e9 / 10e9)


def test_hierarchical_formula_is_reduce_scatter_rings_all_gather() -> None:
    n, servers, local = 8e9, 4, 8
    in_server = 7 * 60e-6 + 7 / 8 * n / 18.3e9
    inter = 2 * 3 * 60e-6 + 2 * 3 / 4 * (n / 8) / 20e9
    assert hierarchical_allreduce_seconds(servers, local, n, 20.0, LINKS) == pytest.approx(
        2 * in_server + inter
    )
    assert hierarchical_allreduce_seconds(1, 8, n, 20.0, LINKS) == pytest.approx(2 * in_server)


def interleaved() -> tuple[Topology, list[str], list[str]]:
    """Two leaves of four 8-NPU servers, uplinks 4:1; the pod order alternates leaves."""
    topo = two_tier(leaves=2, per_leaf=4, oversubscription=4.0)
    pods = [f"s{leaf}-{n}" for n in range(4) for leaf in (0, 1)]
    planned = [f"s{leaf}-{n}" for leaf in (0, 1) for n in range(4)]
    return topo, pods, planned


def test_oversubscribed_uplinks_slow_the_interleaved_order() -> None:
    topo, pods, planned_ids = interleaved()
    given = order_metrics(make_table(pods), topo)
    planned = order_metrics(make_table(planned_ids), topo)
    # every edge of each of the 8 per-device rings leaves its leaf: 4 exits x 8 rings = 32 flows per
    # uplink; 32 ports / 4 = 8 lanes, so each flow gets 8/32 of a 20 GB/s NIC
    assert given.crossings_per_tier == [8, 0] and planned.crossings_per_tier == [2, 0]
    assert given.max_uplink_flows == 32 and planned.max_uplink_flows == 8
    assert given.inter_server_gbps == pytest.approx(5.0) and planned.inter_server_gbps == pytest.approx(20.0)
    # 1 GiB / 64 ranks = 16 MiB per slice >= 1 MiB: the A2 selector picks pipeline (Pipeline.md formula:
    # 2 x [max(inter, intra) x (servers - 1) + intra], each term alpha + slice / bandwidth)
    assert given.algorithm == planned.algorithm == "pipeline"
    assert "pipeline" in planned.algorithm_reason and "16 MiB" in planned.algorithm_reason

    def pipeline(inter_gbps: float) -> float:
        piece = GIB / 64
        inter, intra = 60e-6 + piece / (inter_gbps * 1e9), 60e-6 + piece / 18.3e9
        return 2 * (max(inter, intra) * 7 + intra)

    assert given.allreduce_seconds == pytest.approx(pipeline(5.0))
    assert planned.allreduce_seconds == pytest.approx(pipeline(20.0))
    assert given.busiest_uplink in ("leaf0", "leaf1")


def test_without_oversubscription_the_order_costs_the_same() -> None:
    topo = two_tier(leaves=2, per_leaf=4)
    _, pods, planned_ids = interleaved()
    given = order_metrics(make_table(pods), topo)
    planned = order_metrics(make_table(planned_ids), topo)
    assert given.max_uplink_flows == 32  # 32 flows over 32 lanes: still full speed
    assert given.allreduce_seconds == pytest.approx(planned.allreduce_seconds)


def test_uplink_capacity_from_the_topology_overrides_the_ratio() -> None:
    topo = Topology(source="t")
    topo.add_switch(Switch("spine", 2))
    for leaf in (0, 1):
        topo.add_switch(Switch(f"leaf{leaf}", 1, "spine", uplink_gbps=160.0))  # 20 GB/s = one NIC
        for n in range(4):
            topo.attach_server(f"s{leaf}-{n}", f"leaf{leaf}")
    _, pods, _ = interleaved()
    metrics = order_metrics(make_table(pods), topo)
    assert metrics.inter_server_gbps == pytest.approx(20.0 / 32)


def test_link_model_overrides_change_the_estimate() -> None:
    topo, pods, _ = interleaved()
    fast = order_metrics(make_table(pods), topo, links=LinkModel(roce_gbps=40.0))
    assert fast.inter_server_gbps == pytest.approx(10.0)
    small = order_metrics(make_table(pods), topo, message_bytes=1 << 20)
    assert small.allreduce_seconds < order_metrics(make_table(pods), topo).allreduce_seconds


def test_flat_ring_is_used_when_device_counts_differ() -> None:
    topo = two_tier(leaves=2, per_leaf=1)
    table = make_table(["s0-0", "s1-0"], 2)
    table.servers[1].devices.pop()
    metrics = order_metrics(table, topo)
    assert metrics.algorithm == "ring" and metrics.hierarchical_seconds is None
    assert metrics.estimate is not None and "different NPU counts" in metrics.estimate.notes[0]
    # one flat level over the 3 ranks; the selector's ring and NHR tie at 2 steps and ties prefer ring
    assert metrics.allreduce_seconds == pytest.approx(ring_allreduce_seconds(3, GIB, 20.0, LINKS))


def test_rail_optimised_rings_stay_on_their_rail() -> None:
    topo = Topology(source="rails")
    topo.add_switch(Switch("spine", 2))
    for leaf in ("r0", "r1"):
        topo.add_switch(Switch(leaf, 1, "spine", oversubscription=8.0))
    for sid in ("a", "b", "c"):
        for d in range(2):
            topo.attach_device(sid, d, f"r{d}")
    metrics = order_metrics(make_table(["a", "b", "c"], 2), topo)
    assert metrics.crossings_per_tier == [0, 0] and metrics.max_uplink_flows == 0
    assert metrics.inter_server_gbps == pytest.approx(20.0)


def test_comparison_json_has_the_documented_keys_and_speedup() -> None:
    topo, pods, _ = interleaved()
    table = make_table(pods)
    result = plan_routes(table, topo)
    comparison = compare(table, result.planned, topo)
    data = json.loads(json.dumps(comparison.to_json()))
    for side in ("given", "planned"):
        assert {"crossings_per_tier", "max_uplink_flows", "allreduce_seconds"} <= set(data[side])
        assert isinstance(data[side]["crossings_per_tier"], list)
    assert data["given"]["crossings_per_tier"] == [8, 0] and data["planned"]["crossings_per_tier"] == [2, 0]
    assert data["message_bytes"] == GIB
    assert data["speedup"] == pytest.approx(
        data["given"]["allreduce_seconds"] / data["planned"]["allreduce_seconds"]
    )
    assert data["speedup"] > 1.0


def test_format_report_lists_tiers_flows_times_and_speedup() -> None:
    topo, pods, _ = interleaved()
    table = make_table(pods)
    comparison = compare(table, plan_routes(table, topo).planned, topo, message_bytes=256 << 20)
    text = format_report(comparison)
    assert "All-reduce of 256 MiB on 8 servers (64 ranks, 8 per server)" in text
    assert "ring edges crossing tier 1 (leaf)" in text and "ring edges crossing tier 2 (spine)" in text
    line = next(row for row in text.splitlines() if row.startswith("most flows on one uplink"))
    assert line.split()[-2:] == ["32", "8"]
    assert text.splitlines()[-1] == f"speed-up: {comparison.speedup:.2f}x"


def test_the_ring_follows_rank_ids_not_the_server_list_order() -> None:
    topo, pods, planned_ids = interleaved()
    table = make_table(planned_ids)  # listed leaf by leaf ...
    by_id = {s.server_id: s for s in table.servers}
    rank = 0
    for server_id in pods:  # ... but ranked in the interleaved pod order
        for device in by_id[server_id].devices:
            device.rank_id = rank
            rank += 1
    metrics = order_metrics(table, topo)
    assert metrics.crossings_per_tier == [8, 0] and metrics.max_uplink_flows == 32
