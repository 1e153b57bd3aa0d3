"""Route planner: the ring bound on random trees and pod orders, device bookkeeping, stable mode."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ranktable.errors import InputError
from ranktable.hccl import Device, RankTable, Server, SuperPod, check_rank_table, validate_rank_table
from ranktable.plan import plan_routes
from ranktable.topology.model import Switch, Topology
from ranktable.usecases.layout import plan_report

# -- builders shared with test_cost / test_cli_core ----------------------------------------------------------


def make_table(
    server_ids: list[str], devices: int = 8, *, device_order: list[int] | None = None
) -> RankTable:
    """A completed 1.0 table in the given (pod) order, ranks sequential as the platform writes them."""
    order = device_order or list(range(devices))
    table = RankTable(status="completed", version="1.0")
    rank = 0
    for n, server_id in enumerate(server_ids):
        devs = []
        for d in order:
            devs.append(Device(d, rank, f"29.{n // 200}.{n % 200}.{d}"))
            rank += 1
        table.servers.append(Server(server_id, devs, host_ip=server_id))
    return table


def two_tier(leaves: int, per_leaf: int, spines: int = 1, oversubscription: float = 1.0) -> Topology:
    """`spines` spines, `leaves` leaves spread over them in blocks, servers s<leaf>-<n>."""
    topo = Topology(source="test")
    for s in range(spines):
        topo.add_switch(Switch(f"spine{s}", 2))
    for leaf in range(leaves):
        name = f"leaf{leaf}"
        topo.add_switch(Switch(name, 1, f"spine{leaf * spines // leaves}", oversubscription=oversubscription))
        for n in range(per_leaf):
            topo.attach_server(f"s{leaf}-{n}", name, aliases=[f"node-{leaf}-{n}"])
    return topo


def ancestor_ring_crossings(table: RankTable, topo: Topology, tier: int) -> tuple[int, int]:
    """Independent of the planner: (crossing edges, switches used) at `tier` for the table's ring."""
    order = sorted(table.servers, key=lambda s: min(d.rank_id for d in s.devices))
    keys = []
    for server in order:
        name = topo.resolve(server.server_id, server.host_ip)
        if name is None:  # unknown servers count as one more group at every tier
            keys.append(frozenset({"<unknown>"}))
            continue
        leaves = {topo.leaf_of(name, d.device_id) for d in server.devices}
        keys.append(frozenset(topo.ancestor(leaf, tier) for leaf in leaves if leaf))
    n = len(keys)
    crossings = sum(1 for i in range(n) if n > 1 and keys[i] != keys[(i + 1) % n])
    used = len(set(keys))
    return crossings, used if used > 1 else 0


def assert_well_formed(given: RankTable, planned: RankTable) -> None:
    """No device lost or duplicated, ids 0..N-1 contiguous per server, device order kept, table valid."""
    before = {(s.server_id, d.device_id, d.device_ip) for s in given.servers for d in s.devices}
    after = [(s.server_id, d.device_id, d.device_ip) for s in planned.servers for d in s.devices]
    assert len(after) == len(set(after)) == len(before)
    assert set(after) == before
    ranks = [d.rank_id for s in planned.servers for d in s.devices]
    assert ranks == list(range(len(ranks)))
    old = {s.server_id: [d.device_id for d in s.devices] for s in given.servers}
    for server in planned.servers:
        assert [d.device_id for d in server.devices] == old[server.server_id]
    assert validate_rank_table(planned) == []


# -- random fabrics ------------------------------------------------------------------------------------------


@st.composite
def fabrics(draw: st.DrawFn) -> tuple[Topology, RankTable, int]:
    """A random tree (1-3 tiers, fan-out 1-3, 1-4 servers per leaf), optionally rail-optimised, and a
    job on a random subset of its servers in a random pod order."""
    tiers = draw(st.integers(1, 3))
    rails = draw(st.sampled_from([0, 0, 2]))
    devices = draw(st.integers(2, 4)) if rails else draw(st.integers(1, 4))
    topo = Topology(source="random")
    level = [f"t{tiers}-{i}" for i in range(draw(st.integers(1, 3)))]
    for name in level:
        topo.add_switch(Switch(name, tiers))
    for tier in range(tiers - 1, 0, -1):
        below: list[str] = []
        for parent in level:
            fan = draw(st.integers(1, 3)) * (rails if tier == 1 and rails else 1)
            for _ in range(fan):
                name = f"t{tier}-{len(below)}"
                topo.add_switch(Switch(name, tier, parent))
                below.append(name)
        level = below
    servers: list[str] = []
    groups = (
        [level[i : i + rails] for i in range(0, len(level), rails)] if rails else [[leaf] for leaf in level]
    )
    for group in groups:
        for _ in range(draw(st.integers(1, 4))):
            sid = f"10.1.{len(servers) // 200}.{len(servers) % 200}"
            if len(group) > 1:
                for d in range(devices):
                    topo.attach_device(sid, d, group[d % len(group)])
            else:
                topo.attach_server(sid, group[0])
            servers.append(sid)
    topo.validate()
    used = draw(st.lists(st.sampled_from(servers), unique=True, min_size=1, max_size=len(servers)))
    ghosts = [f"ghost-{n}" for n in range(draw(st.integers(0, 2)))]  # not in the topology
    used = draw(st.permutations(used + ghosts))
    device_order = draw(st.permutations(list(range(devices))))
    return topo, make_table(list(used), devices, device_order=list(device_order)), tiers


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fabrics())
def test_planner_reaches_the_ring_bound_on_random_trees(case: tuple[Topology, RankTable, int]) -> None:
    topo, table, tiers = case
    result = plan_routes(table, topo)
    assert_well_formed(table, result.planned)
    ghosts = [s.server_id for s in table.servers if s.server_id.startswith("ghost-")]
    assert result.unknown_servers == ghosts
    assert [s.server_id for s in result.planned.servers][len(table.servers) - len(ghosts) :] == ghosts
    for tier in range(1, tiers + 1):
        crossings, bound = ancestor_ring_crossings(result.planned, topo, tier)
        assert crossings == bound, f"tier {tier}: {crossings} crossings, {bound} switches used"
        assert result.crossings_per_tier[tier - 1] == crossings
        assert result.switches_per_tier[tier - 1] == bound


@settings(max_examples=60, deadline=None)
@given(fabrics(), st.randoms(use_true_random=False))
def test_plan_is_deterministic_and_independent_of_pod_order(
    case: tuple[Topology, RankTable, int], rnd: random.Random
) -> None:
    topo, table, _ = case
    first = plan_routes(table, topo)
    again = plan_routes(table, topo)
    assert first.planned == again.planned and first.rank_mapping == again.rank_mapping
    ids = [s.server_id for s in table.servers]
    rnd.shuffle(ids)
    reshuffled = plan_routes(make_table(ids, len(table.servers[0].devices)), topo)
    # Same groups in the same order; only the order inside a leaf group may follow the pod order.
    assert reshuffled.crossings_per_tier == first.crossings_per_tier


def test_servers_sharing_a_leaf_are_contiguous_and_leaves_follow_spines() -> None:
    topo = two_tier(leaves=4, per_leaf=3, spines=2)
    pods = ["s3-0", "s0-1", "s2-2", "s1-0", "s0-0", "s3-1", "s2-0", "s1-2", "s0-2", "s2-1", "s1-1", "s3-2"]
    result = plan_routes(make_table(pods, 2), topo)
    order = [s.server_id for s in result.planned.servers]
    # leaf0/leaf1 under spine0 first, then leaf2/leaf3; pod order kept inside each leaf
    assert order == [
        "s0-1",
        "s0-0",
        "s0-2",
        "s1-0",
        "s1-2",
        "s1-1",
        "s2-2",
        "s2-0",
        "s2-1",
        "s3-0",
        "s3-1",
        "s3-2",
    ]
    assert result.server_order == [pods.index(s) for s in order]
    assert result.node_rank["s0-1"] == 0 and result.node_rank["s3-2"] == 11
    assert result.crossings_per_tier == [4, 2]
    assert result.given_crossings_per_tier[0] > 4
    pairs = dict(p.split("-") for p in result.rank_mapping.split(","))
    assert list(pairs) == [str(r) for r in range(24)]
    # new rank 0 is device 0 of s0-1, which was pod 1 (old ranks 2, 3)
    assert pairs["0"] == "2" and pairs["1"] == "3"


def test_leaf_names_sort_naturally() -> None:
    topo = two_tier(leaves=12, per_leaf=1)
    pods = [f"s{leaf}-0" for leaf in (11, 2, 10, 1, 0)]
    order = [s.server_id for s in plan_routes(make_table(pods, 1), topo).planned.servers]
    assert order == ["s0-0", "s1-0", "s2-0", "s10-0", "s11-0"]


def test_servers_resolve_by_alias_and_host_ip() -> None:
    topo = two_tier(leaves=2, per_leaf=2)
    table = make_table(["node-1-0", "x", "node-0-1", "node-1-1"], 1)
    table.servers[1].host_ip = "s0-0"  # server_id unknown, host_ip is the topology's name
    result = plan_routes(table, topo)
    assert [s.server_id for s in result.planned.servers] == ["x", "node-0-1", "node-1-0", "node-1-1"]


def test_unknown_servers_go_last_as_one_group_with_a_warning() -> None:
    topo = two_tier(leaves=2, per_leaf=2)
    table = make_table(["ghost-b", "s1-0", "ghost-a", "s0-0", "s1-1"], 2)
    result = plan_routes(table, topo)
    assert [s.server_id for s in result.planned.servers] == ["s0-0", "s1-0", "s1-1", "ghost-b", "ghost-a"]
    assert result.unknown_servers == ["ghost-b", "ghost-a"]
    assert any("2 server(s) are not in the topology" in w and "ghost-b" in w for w in result.warnings)
    assert_well_formed(table, result.planned)


def test_rail_optimised_servers_group_by_their_set_of_leaves() -> None:
    topo = Topology(source="rails")
    topo.add_switch(Switch("spine", 2))
    for leaf in ("rA0", "rA1", "rB0", "rB1"):
        topo.add_switch(Switch(leaf, 1, "spine"))
    for sid, group in (("a1", "A"), ("b1", "B"), ("a2", "A"), ("b2", "B")):
        for d in range(4):
            topo.attach_device(sid, d, f"r{group}{d % 2}")
    result = plan_routes(make_table(["a1", "b1", "a2", "b2"], 4), topo)
    assert [s.server_id for s in result.planned.servers] == ["a1", "a2", "b1", "b2"]
    assert result.crossings_per_tier == [2, 0]


def test_planning_refuses_unfinished_or_invalid_tables() -> None:
    topo = two_tier(2, 2)
    pending = make_table(["s0-0", "s1-0"], 1)
    pending.status = "initializing"
    with pytest.raises(InputError, match="initializing"):
        plan_routes(pending, topo)
    broken = make_table(["s0-0", "s0-0"], 1)
    with pytest.raises(InputError, match="duplicate server_id") as err:
        plan_routes(broken, topo)
    assert err.value.where == "server_list[1].server_id"


def test_plan_keeps_version_1_2_fields_and_super_pods() -> None:
    topo = two_tier(2, 1)
    table = make_table(["s1-0", "s0-0"], 2)
    table.version = "1.2"
    for server in table.servers:
        for dev in server.devices:
            dev.super_device_id = str(100 + dev.rank_id)
            dev.extra["backup_device_ip"] = "1.1.1.1"
    from ranktable.hccl import SuperPod

    table.super_pods = [SuperPod("0", ["s1-0", "s0-0"])]
    planned = plan_routes(table, topo).planned
    assert planned.servers[0].server_id == "s0-0"
    assert planned.servers[0].devices[0].super_device_id == "102"
    assert planned.servers[0].devices[0].extra == {"backup_device_ip": "1.1.1.1"}
    assert planned.super_pods == table.super_pods and check_rank_table(planned).status == "valid"


# -- stable mode ---------------------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 6), st.integers(1, 4), st.data())
def test_stable_mode_keeps_surviving_servers_ranks(leaves: int, per_leaf: int, data: st.DataObject) -> None:
    topo = two_tier(leaves, per_leaf + 1, spines=2 if leaves > 2 else 1)
    everyone = sorted(topo.server_leaf)
    job = data.draw(st.lists(st.sampled_from(everyone), unique=True, min_size=2, max_size=len(everyone) - 1))
    previous = plan_routes(make_table(job, 2), topo).planned
    spare = [s for s in everyone if s not in job]
    gone = data.draw(
        st.lists(st.sampled_from(job), unique=True, min_size=1, max_size=min(len(spare), len(job)))
    )
    replacements = spare[: len(gone)]
    now_ids = [replacements[gone.index(s)] if s in gone else s for s in job]
    now_ids = data.draw(st.permutations(now_ids))  # the platform's new table, any pod order
    current = make_table(list(now_ids), 2)
    result = plan_routes(current, topo, previous=previous, stable=True)
    assert_well_formed(current, result.planned)
    before = {s.server_id: [d.rank_id for d in s.devices] for s in previous.servers}
    for server in result.planned.servers:
        if server.server_id in before:
            assert [d.rank_id for d in server.devices] == before[server.server_id]
    assert result.replan is not None
    assert result.replan.moved_servers == []
    assert sorted(result.replan.new_servers) == sorted(replacements)
    assert result.replan.kept_servers == len(job) - len(gone)
    # the full replan reaches the bound, the stable plan can only be worse or equal
    for stable_n, full_n in zip(
        result.replan.crossings_per_tier, result.replan.full_crossings_per_tier, strict=True
    ):
        assert full_n <= stable_n


def test_stable_mode_puts_a_replacement_next_to_its_leaf_mates_and_reports_the_gain() -> None:
    topo = two_tier(leaves=3, per_leaf=3)
    previous = plan_routes(make_table(["s0-0", "s0-1", "s1-0", "s1-1", "s2-0", "s2-1"], 1), topo).planned
    # s1-0 fails; two spares are offered: s2-2 (leaf2) and s1-2 (leaf1); only one is used
    current = make_table(["s1-2", "s0-0", "s0-1", "s1-1", "s2-0", "s2-1"], 1)
    result = plan_routes(current, topo, previous=previous, stable=True)
    assert [s.server_id for s in result.planned.servers] == ["s0-0", "s0-1", "s1-2", "s1-1", "s2-0", "s2-1"]
    assert result.replan is not None and not result.replan.worthwhile
    assert "would not reduce" in result.replan.describe()


def test_stable_mode_after_shrinking_renumbers_and_says_so() -> None:
    topo = two_tier(leaves=2, per_leaf=2)
    previous = plan_routes(make_table(["s0-0", "s0-1", "s1-0", "s1-1"], 1), topo).planned
    current = make_table(["s1-1", "s0-0", "s1-0"], 1)
    result = plan_routes(current, topo, previous=previous, stable=True)
    assert [s.server_id for s in result.planned.servers] == ["s0-0", "s1-0", "s1-1"]
    assert result.replan is not None and result.replan.moved_servers == ["s1-0", "s1-1"]
    assert any("fewer servers" in w for w in result.warnings)


def test_stable_mode_needs_the_previous_table() -> None:
    with pytest.raises(InputError, match="previous"):
        plan_routes(make_table(["s0-0"], 1), two_tier(1, 1), stable=True)


def test_slice_ids_order_servers_inside_a_leaf_like_the_ascend_scheduler() -> None:
    topo = two_tier(leaves=2, per_leaf=3)
    topo.slice_ids.update({"s0-0": 2, "s0-1": 0, "s0-2": 1})  # leaf1 has none: pod order kept there
    pods = ["s1-2", "s0-0", "s1-0", "s0-2", "s0-1", "s1-1"]
    order = [s.server_id for s in plan_routes(make_table(pods, 1), topo).planned.servers]
    assert order == ["s0-1", "s0-2", "s0-0", "s1-2", "s1-0", "s1-1"]


# -- A3: the SuperPoD as the lowest tier above the server ---------------------------------------------------


def as_a3(table: RankTable, pods: list[list[str]]) -> RankTable:
    """The table as rank table 1.2 with these SuperPoDs (super_device_id set, as 1.2 requires)."""
    table.version = "1.2"
    for server in table.servers:
        for device in server.devices:
            device.super_device_id = str(device.rank_id)
    table.super_pods = [SuperPod(str(n), members) for n, members in enumerate(pods)]
    return table


def pod_crossings(table: RankTable) -> int:
    """Ring edges between servers of different SuperPoDs (the ring wraps), counted without the planner."""
    pod_of = {sid: n for n, pod in enumerate(table.super_pods or []) for sid in pod.server_ids}
    ids = [s.server_id for s in sorted(table.servers, key=lambda s: min(d.rank_id for d in s.devices))]
    n = len(ids)
    return sum(1 for i in range(n) if n > 1 and pod_of[ids[i]] != pod_of[ids[(i + 1) % n]])


@settings(max_examples=120, deadline=None)
@given(st.integers(1, 5), st.integers(1, 5), st.integers(1, 2), st.data())
def test_a3_plan_keeps_superpods_contiguous_without_more_switch_crossings(
    leaves: int, per_leaf: int, spines: int, data: st.DataObject
) -> None:
    """SuperPoDs as A3 builds them (consecutive racks; one may share a leaf with the next), their
    servers mixed inside a leaf and the servers in a random pod order: the plan crosses SuperPoDs only
    as often as there are SuperPoDs (the lower bound) and the switch tiers no more than without them."""
    spines = min(spines, leaves)
    topo = two_tier(leaves, per_leaf, spines)
    ids = [f"s{leaf}-{n}" for leaf in range(leaves) for n in range(per_leaf)]
    given_ids = data.draw(st.permutations(ids))
    flat = plan_routes(make_table(given_ids), topo)
    tree = [s.server_id for s in flat.planned.servers]  # the switch-tree order
    cuts = sorted(data.draw(st.sets(st.integers(1, len(tree) - 1), max_size=4))) if len(tree) > 1 else []
    labels = [sum(1 for c in cuts if c <= i) for i in range(len(tree))]  # pods: runs of the tree order
    mixed: list[int] = []
    for leaf in range(leaves):  # inside each leaf the pods' servers are mixed
        mixed += data.draw(st.permutations(labels[leaf * per_leaf : (leaf + 1) * per_leaf]))
    by_leaf = {sid: mixed[i] for i, sid in enumerate(tree)}
    pods = [[sid for sid in ids if by_leaf[sid] == n] for n in range(len(cuts) + 1)]
    result = plan_routes(as_a3(make_table(given_ids), pods), topo)
    assert_well_formed(as_a3(make_table(given_ids), pods), result.planned)
    assert pod_crossings(result.planned) == (len(pods) if len(pods) > 1 else 0)
    assert result.crossings_per_tier == flat.crossings_per_tier
    for tier in (1, 2):
        assert ancestor_ring_crossings(result.planned, topo, tier) == ancestor_ring_crossings(
            flat.planned, topo, tier
        )
    # the whole chain (HCCL's algorithm may pick another switch-optimal order) keeps the bound too
    report = plan_report(as_a3(make_table(given_ids), pods), topo)
    assert report.comparison.planned.superpod_crossings == pod_crossings(report.result.planned)
    assert report.comparison.planned.superpod_crossings == (len(pods) if len(pods) > 1 else 0)


def test_a3_superpods_sharing_a_leaf_meet_at_its_edges() -> None:
    # leaf0 holds pod 0 and part of pod 1, leaf1 the rest of pod 1 and pod 2, mixed by rank
    ids = [f"s{leaf}-{n}" for leaf in (0, 1) for n in range(4)]
    pods = [["s0-1", "s0-3"], ["s0-0", "s0-2", "s1-1"], ["s1-0", "s1-2", "s1-3"]]
    result = plan_routes(as_a3(make_table(ids), pods), two_tier(leaves=2, per_leaf=4))
    order = [s.server_id for s in result.planned.servers]
    # pod 1 meets itself where leaf0 ends and leaf1 starts; leaves stay contiguous
    assert order == ["s0-1", "s0-3", "s0-0", "s0-2", "s1-1", "s1-0", "s1-2", "s1-3"]
    assert pod_crossings(result.planned) == 3
    assert pod_crossings(as_a3(make_table(ids), pods)) == 7  # the given order alternates
