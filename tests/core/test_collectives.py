"""HCCL algorithms: step patterns, closed forms, counting on the tree, HCCL_ALGO and HCCL's defaults."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ranktable.choice.cost import CollectiveQuery, order_metrics
from ranktable.collectives.choice import choose, default_level2, detect_product, parse_hccl_algo
from ranktable.collectives.engine import Level, StepTimer, Timing, level_steps
from ranktable.collectives.estimate import JobShape, estimate_job
from ranktable.collectives.fabric import Fabric
from ranktable.collectives.steps import algorithm_steps, partners
from ranktable.errors import InputError
from ranktable.hccl.model import SuperPod
from tests.core.test_plan import make_table, two_tier

ALPHA = 60e-6
TIMING = Timing(ALPHA)
N = float(1 << 30)
B = 20e9


def off_tree(algorithm: str, op: str, p: int, nbytes: float = N) -> float:
    level = Level("inter-server", p, 20.0, algorithm)
    return sum(s.seconds for s in level_steps(StepTimer(None, TIMING), level, op, nbytes))


@pytest.mark.parametrize("p", [2, 3, 5, 8, 12, 16, 1000, 8192])
@pytest.mark.parametrize("algorithm", ["ring", "NHR", "NB", "H-D_R"])
def test_every_algorithm_moves_the_volume_hccl_documents(algorithm: str, p: int) -> None:
    for op, volume in (("reducescatter", (p - 1) / p), ("allgather", (p - 1) / p)):
        steps = algorithm_steps(algorithm, op, p)
        moved = sum(s.fraction * s.repeat for s in steps)
        if algorithm == "H-D_R" and p & (p - 1):  # fold n, HD on the 2^k core, unfold n/p (RHD.md)
            core = 1 << int(math.log2(p))
            volume = 1 + (core - 1) / core + 1 / p
        assert moved == pytest.approx(volume)
    allreduce = algorithm_steps(algorithm, "allreduce", p)
    count = sum(s.repeat for s in allreduce)
    if algorithm == "ring":
        assert count == 2 * (p - 1)
    elif algorithm == "H-D_R":
        assert count == 2 * int(math.log2(p)) + (2 if p & (p - 1) else 0)
    else:
        assert count == 2 * math.ceil(math.log2(p))


@pytest.mark.parametrize("p", [4, 6, 8, 13, 64])
def test_step_costs_add_up_to_the_closed_forms(p: int) -> None:
    volume = 2 * (p - 1) / p * N / B
    assert off_tree("ring", "allreduce", p) == pytest.approx(2 * (p - 1) * ALPHA + volume)
    assert off_tree("NHR", "allreduce", p) == pytest.approx(2 * math.ceil(math.log2(p)) * ALPHA + volume)
    assert off_tree("NB", "allreduce", p) == pytest.approx(2 * math.ceil(math.log2(p)) * ALPHA + volume)
    core = 1 << int(math.log2(p))
    if core == p:
        expected_hd = 2 * math.log2(p) * ALPHA + volume
    else:  # (2 floor(log p) + 2) alpha + (2 (p'-1)/p' + 2) n beta  (RHD.md)
        expected_hd = (2 * math.log2(core) + 2) * ALPHA + (2 * (core - 1) / core + 2) * N / B
    assert off_tree("H-D_R", "allreduce", p) == pytest.approx(expected_hd)
    assert off_tree("ring", "alltoall", p) == pytest.approx((p - 1) * (ALPHA + N / p / B))


def test_pairwise_all_to_all_samples_large_step_counts_without_losing_steps() -> None:
    steps = algorithm_steps("pairwise", "alltoall", 8192, sampled=64)
    assert len(steps) == 64 and sum(s.repeat for s in steps) == 8191
    assert off_tree("pairwise", "alltoall", 8192) == pytest.approx(8191 * (ALPHA + N / 8192 / B))


def test_partner_rules_follow_the_hccl_templates() -> None:
    nhr = algorithm_steps("NHR", "reducescatter", 8)
    src, dst = partners(nhr[1], 8)
    assert list(dst) == [(r - 2) % 8 for r in src]  # step s sends to r - 2^s
    assert nhr[0].fraction == pytest.approx(0.5)  # about n/2 to the ring neighbour first
    ag = algorithm_steps("NHR", "allgather", 8)
    assert [s.distance for s in ag] == [4, 2, 1] and ag[-1].fraction == pytest.approx(0.5)
    hd = algorithm_steps("H-D_R", "allreduce", 6)  # 6 = 4 + 2: ranks 0,1 and 2,3 fold first
    fold_src, fold_dst = partners(hd[0], 6)
    assert list(fold_src) == [1, 3] and list(fold_dst) == [0, 2]
    src, dst = partners(hd[1], 6)  # the power-of-2 core is ranks 0, 2, 4, 5
    assert list(src) == [0, 2, 4, 5] and list(dst) == [2, 0, 5, 4]


def test_each_step_is_counted_on_the_real_tree() -> None:
    """Eight 2-NPU servers, four per leaf, in leaf order: H-D_R's xor-1 and xor-2 steps stay in the
    leaf, xor-4 sends every plane of every server across the spine."""
    topo = two_tier(leaves=2, per_leaf=4, oversubscription=4.0)
    ids = [f"s{leaf}-{n}" for leaf in (0, 1) for n in range(4)]
    table = make_table(ids, 2)
    metrics = order_metrics(
        table, topo, message_bytes=1 << 20, query=CollectiveQuery(settings=parse_hccl_algo("H-D_R"))
    )
    assert metrics.algorithm == "H-D_R" and "--algo" not in metrics.algorithm_reason
    inter = [s for s in metrics.estimate.steps if s.level == "inter-server"] if metrics.estimate else []
    assert [s.partners for s in inter[:3]] == ["r -> r xor 1", "r -> r xor 2", "r -> r xor 4"]
    assert [s.crossings_per_tier[0] for s in inter[:3]] == [0, 0, 16]
    # 4 servers x 2 NPUs = 8 ports under a leaf, 4:1 -> 2 lanes for 8 flows: a quarter of a NIC
    assert inter[2].max_uplink_flows == 8 and inter[2].gbps == pytest.approx(5.0)
    assert inter[0].gbps == pytest.approx(20.0)


def test_hccl_algo_strings_parse_as_hccl_reads_them() -> None:
    assert parse_hccl_algo("level0:NA;level1:H-D_R")["*"].level1 == "H-D_R"
    assert parse_hccl_algo("nhr")["*"].level1 == "NHR"
    per_op = parse_hccl_algo("allreduce=level0:NA;level1:ring/alltoallv=level0:NA;level1:pairwise")
    assert per_op["allreduce"].level1 == "ring" and per_op["alltoall"].level1 == "pairwise"
    assert "*" not in per_op  # unlisted operators stay automatic
    both = parse_hccl_algo("level0:NA;level1:AHC")["*"]
    assert both.level2 == "AHC"  # level1:AHC forces AHC at level2 too
    assert parse_hccl_algo("level0:NA;level1:NB;level2:ring")["*"].level2 == "ring"
    for bad, words in (
        ("level1:fast", "not one HCCL knows"),
        ("level0:ring;level1:NHR", "level0 accepts only NA"),
        ("level1:NHR;level1:ring", "given twice"),
        ("allsum=level1:ring", "not an operator"),
        ("level3:ring", "level0:NA, level1"),
        ("level2:pairwise", "not one HCCL knows"),
        ("x" * 2000, "longer than"),
    ):
        with pytest.raises(InputError, match=words) as info:
            parse_hccl_algo(bad, "HCCL_ALGO")
        assert info.value.where == "HCCL_ALGO"


def test_default_selection_follows_the_documented_rules() -> None:
    assert choose("allreduce", "910", 8, 8, N).algorithm == "H-D_R"
    assert choose("allreduce", "910", 6, 8, N).algorithm == "ring"
    big = choose("allreduce", "A2", 16, 8, N)  # 1 GiB / 128 = 8 MiB slices >= 1 MiB
    assert big.algorithm == "pipeline" and "8 MiB" in big.reason
    many = choose("allreduce", "A2", 8192, 8, N)  # 16 KiB slices: alpha-beta; NHR ties H-D_R, wins
    assert many.algorithm == "NHR" and "ring" in many.reason
    small = choose("allreduce", "A2", 2, 8, 1 << 20)  # ring, NHR and H-D_R all take 2 steps: ring
    assert small.algorithm == "ring"
    assert choose("allreduce", "A2", 3, 1, N).algorithm == "ring"  # no pipeline with 1 NPU; 4 steps each
    assert choose("allreduce", "A2", 64, 1, 64 << 10).algorithm == "NHR"
    assert choose("alltoall", "A2", 8, 8, N).algorithm == "pairwise"
    assert choose("allreduce", "A2", 1, 8, N).algorithm == "mesh"
    assert default_level2(3)[0] == "ring" and default_level2(4)[0] == "H-D_R"
    assert default_level2(12)[0] == "H-D_R"


def test_forced_algorithms_and_hccls_fallbacks() -> None:
    forced = choose("allreduce", "A2", 8192, 8, N, settings=parse_hccl_algo("ring"), source="--algo")
    assert forced.algorithm == "ring" and forced.forced and "--algo sets level1:ring" in forced.reason
    wrong = choose("allreduce", "A2", 8192, 8, N, settings=parse_hccl_algo("pairwise"))
    assert wrong.algorithm == "NHR" and "does not run for allreduce" in wrong.reason
    a2a = choose("alltoall", "A2", 16, 8, N, settings=parse_hccl_algo("AHC"))
    assert a2a.algorithm == "pairwise" and "falls back" in a2a.reason
    only_ag = parse_hccl_algo("allgather=level0:NA;level1:NB")
    assert choose("allreduce", "A2", 8192, 8, N, settings=only_ag).algorithm == "NHR"
    assert choose("allgather", "A2", 8192, 8, N, settings=only_ag).algorithm == "NB"
    single = choose("allreduce", "A2", 16, 1, N, settings=parse_hccl_algo("pipeline"))
    assert single.algorithm != "pipeline" and "needs a mesh" in single.reason


def test_product_comes_from_the_rank_table() -> None:
    assert detect_product("1.2", True, set())[0] == "A3"
    assert detect_product("1.0", False, {"Atlas 800 9000"})[0] == "910"
    assert detect_product("1.0", False, set())[0] == "A2"


def test_a3_super_pods_add_a_level_between_super_pods() -> None:
    topo = two_tier(leaves=2, per_leaf=4)
    ids = [f"s{leaf}-{n}" for leaf in (0, 1) for n in range(4)]
    table = make_table(ids, 16)
    table.version = "1.2"
    table.super_pods = [SuperPod(str(k), ids[2 * k : 2 * k + 2]) for k in range(4)]
    metrics = order_metrics(table, topo, message_bytes=64 << 20)
    assert metrics.product == "A3" and metrics.estimate is not None
    levels = [s.level for s in metrics.estimate.steps]
    assert {"in-server", "in-SuperPoD", "between SuperPoDs"} <= set(levels)
    assert metrics.estimate.level2_algorithm == "H-D_R"  # 4 SuperPoDs: a power of 2
    between = [s for s in metrics.estimate.steps if s.level == "between SuperPoDs"]
    # 2 servers x 16 dies per SuperPoD: 32 planes; xor 2 moves from pods 0,1 (leaf0) to 2,3 (leaf1)
    assert between[1].crossings_per_tier[0] == 4 * 32


def test_all_operations_have_estimates_and_all_to_all_is_pairwise() -> None:
    topo = two_tier(leaves=2, per_leaf=4, oversubscription=2.0)
    table = make_table([f"s{leaf}-{n}" for n in range(4) for leaf in (0, 1)])
    shape = JobShape(np.zeros((8, 8), dtype=np.int64), "A2", "test")
    fabric = Fabric(topo, 8, 20.0)
    seen = {}
    for op in ("allreduce", "allgather", "reducescatter", "broadcast", "alltoall"):
        estimate = estimate_job(shape, fabric, op, 1 << 20)
        assert estimate.seconds > 0 and estimate.steps
        seen[op] = estimate.algorithm
    assert seen["alltoall"] == "pairwise"
    metrics = order_metrics(table, topo, query=CollectiveQuery(operation="alltoall"))
    assert metrics.operation == "alltoall" and metrics.max_uplink_flows > 0


def test_ahc_keeps_its_group_steps_inside_a_leaf_and_crosses_only_between_groups() -> None:
    topo = two_tier(leaves=2, per_leaf=4, oversubscription=4.0)
    table = make_table([f"s{leaf}-{n}" for leaf in (0, 1) for n in range(4)], 2)
    metrics = order_metrics(
        table, topo, message_bytes=64 << 20, query=CollectiveQuery(settings=parse_hccl_algo("AHC"))
    )
    assert metrics.algorithm == "AHC" and metrics.estimate is not None
    inside = [s for s in metrics.estimate.steps if "within leaf groups" in s.partners]
    across = [s for s in metrics.estimate.steps if "across leaf groups" in s.partners]
    assert inside and across
    assert all(s.crossings_per_tier == [0, 0] for s in inside)
    # between the 2 groups: every one of 4 members x 2 planes per group crosses, in both directions
    assert all(s.crossings_per_tier[0] == 16 for s in across)
    # the groups exchange 1/4 of the data (smallest group of 4) while the in-group steps move 3/4
    assert sum(s.bytes for s in across) < sum(s.bytes for s in inside)


def test_the_atlas_training_series_uses_its_ring_inside_a_server_and_its_default() -> None:
    topo = two_tier(leaves=2, per_leaf=3)
    table = make_table([f"s{leaf}-{n}" for leaf in (0, 1) for n in range(3)], 8)
    for server in table.servers:
        server.hardware_type = "Atlas 800 9000"
    metrics = order_metrics(table, topo, message_bytes=1 << 20)
    assert metrics.product == "910" and metrics.algorithm == "ring"  # 6 servers: not a power of 2
    assert metrics.estimate is not None
    in_server = [s for s in metrics.estimate.steps if s.level == "in-server"]
    assert in_server and all(s.algorithm == "ring" and s.repeat == 7 for s in in_server)
    assert "Atlas training series" in metrics.algorithm_reason
