"""Megatron parallel groups: rank order, per-group cost on the tree, the group-aware order, surfaces."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from ranktable.cli import main
from ranktable.collectives.choice import parse_hccl_algo
from ranktable.collectives.groups import ParallelSizes, group_ranks, parse_group_bytes, parse_parallel
from ranktable.cost import CollectiveQuery, compare
from ranktable.errors import InputError
from ranktable.hccl import dump_rank_table
from ranktable.plan import plan_routes
from ranktable.topology import dump_topology_yaml
from ranktable.usecases.layout import layout_json as preview_report
from ranktable.usecases.layout import plan_report, query_from_fields
from tests.core.test_plan import make_table, two_tier

MIB = 1 << 20
GIB = 1 << 30


def test_groups_follow_megatrons_default_order() -> None:
    # parallel_state.py docstring: 16 ranks, tp 2, pp 4 -> TP [0,1],[2,3]..; PP [0,4,8,12]..; DP [0,2],[1,3]
    groups = group_ranks(ParallelSizes(tp=2, pp=4), 16)
    assert groups["tp"][:2].tolist() == [[0, 1], [2, 3]]
    assert groups["pp"][:2].tolist() == [[0, 4, 8, 12], [1, 5, 9, 13]]
    assert groups["dp"][:3].tolist() == [[0, 2], [1, 3], [4, 6]]
    cp = group_ranks(ParallelSizes(tp=2, cp=2), 8)
    assert cp["cp"][:2].tolist() == [[0, 2], [1, 3]]  # CP strides tp
    assert cp["dp"][0].tolist() == [0, 2, 4, 6]  # the gradient group is dp x cp
    ep = group_ranks(ParallelSizes(tp=2, ep=2), 16)
    assert ep["ep"][:3].tolist() == [[0, 2], [1, 3], [4, 6]]  # blocks of ep strided by expert-TP
    assert set(group_ranks(ParallelSizes(tp=8), 64)) == {"tp", "dp"}  # size-1 kinds left out


def test_parallel_flags_are_checked_with_clear_errors() -> None:
    assert parse_parallel("tp=8,cp=1,ep=1,pp=4") == ParallelSizes(8, 1, 1, 4)
    assert ParallelSizes(8, 1, 1, 4).resolved(128).dp == 4
    for bad, words in (
        ("tp=8,tp=4", "each once"),
        ("xp=2", "not one of"),
        ("tp=0", "whole number"),
        ("tp=two", "whole number"),
        ("", "is empty"),
    ):
        with pytest.raises(InputError, match=words):
            parse_parallel(bad)
    with pytest.raises(InputError, match="does not divide"):
        ParallelSizes(tp=3).resolved(128)
    with pytest.raises(InputError, match="dp=5"):
        ParallelSizes(tp=8, dp=5).resolved(128)
    with pytest.raises(InputError, match="ep=3"):
        ParallelSizes(tp=8, ep=3).resolved(128)
    assert parse_group_bytes("tp=64MiB,dp=2GiB") == {"tp": 64 * MIB, "dp": 2 * GIB}
    with pytest.raises(InputError, match="not a size"):
        parse_group_bytes("tp=lots")


def pool(order: str = "interleaved") -> tuple[object, object]:
    topo = two_tier(leaves=2, per_leaf=4, oversubscription=4.0)
    if order == "interleaved":
        ids = [f"s{leaf}-{n}" for n in range(4) for leaf in (0, 1)]
    else:
        ids = [f"s{leaf}-{n}" for leaf in (0, 1) for n in range(4)]
    return make_table(ids), topo


def test_each_group_kind_is_costed_with_its_collective_and_crossings() -> None:
    table, topo = pool()
    query = CollectiveQuery(parallel=ParallelSizes(tp=8, pp=2), group_bytes={"tp": 64 * MIB})
    report = plan_report(table, topo, query=query)  # type: ignore[arg-type]
    rows = {row["kind"]: row for row in report.comparison.group_rows()}
    assert set(rows) == {"tp", "dp", "pp"}
    tp = rows["tp"]["planned"]
    assert tp["servers_per_group"] == 1 and tp["flows_crossing_per_tier"] == [0, 0]  # TP stays in a server
    assert rows["tp"]["algorithm"] == "mesh" and rows["tp"]["message_bytes"] == 64 * MIB
    assert rows["dp"]["operation"] == "allreduce" and rows["dp"]["size"] == 4
    assert rows["pp"]["operation"] == "p2p" and rows["pp"]["count"] == 32
    # the pod order interleaves leaves, so every DP group crosses the spine; the plan keeps them inside
    assert rows["dp"]["given"]["flows_crossing_per_tier"][0] > 0
    assert rows["dp"]["planned_seconds"] < rows["dp"]["given_seconds"]


def test_the_planner_moves_pipeline_neighbours_under_one_leaf_when_pp_dominates() -> None:
    table, topo = pool()
    heavy_pp = CollectiveQuery(parallel=ParallelSizes(tp=8, pp=2), group_bytes={"pp": GIB, "dp": MIB})
    report = plan_report(table, topo, query=heavy_pp)  # type: ignore[arg-type]
    assert "chose stage-interleaved" in report.comparison.order_reason
    pp = {r["kind"]: r for r in report.comparison.group_rows()}["pp"]["planned"]
    assert pp["flows_crossing_per_tier"] == [0, 0]  # every stage pair shares a leaf
    heavy_dp = CollectiveQuery(parallel=ParallelSizes(tp=8, pp=2), group_bytes={"pp": MIB, "dp": GIB})
    kept = plan_report(table, topo, query=heavy_dp)  # type: ignore[arg-type]
    assert kept.comparison.order_reason.endswith("chose tree order")
    dp = {r["kind"]: r for r in kept.comparison.group_rows()}["dp"]["planned"]
    assert dp["flows_crossing_per_tier"] == [0, 0]  # each DP group under one leaf
    tree = compare(table, plan_routes(table, topo).planned, topo, query=heavy_pp)  # type: ignore[arg-type]
    assert report.comparison.planned.groups_seconds < tree.planned.groups_seconds
    assert report.result.planned.rank_size == 64 and len(report.result.node_rank) == 8


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    table, topo = pool()
    paths = tmp_path / "jobstart_hccl.json", tmp_path / "topology.yaml"
    paths[0].write_text(dump_rank_table(table))  # type: ignore[arg-type]
    paths[1].write_text(dump_topology_yaml(topo))  # type: ignore[arg-type]
    return paths


def test_plan_json_says_which_algorithm_why_and_the_groups(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    svg = tmp_path / "layout.svg"
    argv = ["plan", "--ranktable", str(files[0]), "--topology", str(files[1]), "--json", "--svg", str(svg)]
    code = main([*argv, "--algo", "NHR", "--parallel", "tp=8,pp=2", "--group-bytes", "dp=256MiB"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert data["algorithm"] == "NHR" and "--algo sets level1:NHR" in data["algorithm_reason"]
    assert [g["kind"] for g in data["groups"]] == ["tp", "dp", "pp"]
    assert data["parallel"] == {"tp": 8, "cp": 1, "ep": 1, "pp": 2, "dp": 4}
    assert data["rank_order_convention"] == "tp-cp-ep-dp-pp"
    steps = data["planned"]["collective"]["steps"]
    wanted = {"partners", "bytes", "crossings_per_tier", "max_uplink_flows"}
    assert steps and all(wanted <= set(s) for s in steps)
    dp_steps = next(g for g in data["groups"] if g["kind"] == "dp")["planned"]["steps"]
    assert dp_steps and all(wanted <= set(s) for s in dp_steps)  # per group, per step, on the tree
    text = svg.read_text()
    assert 'data-algorithm="NHR"' in text and 'data-group="dp"' in text and "--algo sets" in text
    code = main([*argv[:-2], "--operation", "alltoall"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["algorithm"] == "pairwise" and data["operation"] == "alltoall"


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--algo", "level1:fastest"], "--algo: level1 algorithm 'fastest'"),
        (["--parallel", "tp=3"], "--parallel: tp*cp*pp = 3 does not divide the 64 ranks"),
        (["--group-bytes", "dp=1GiB"], "--group-bytes needs --parallel"),
    ],
)
def test_bad_plan_flags_exit_with_one_line(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str], flags: list[str], words: str
) -> None:
    code = main(["plan", "--ranktable", str(files[0]), "--topology", str(files[1]), *flags])
    _, err = capsys.readouterr()
    assert code != 0 and words in err and len(err.strip().splitlines()) == 1


def test_the_preview_answer_names_the_algorithm_and_the_groups_of_the_spec() -> None:
    table, topo = pool()
    spec = SimpleNamespace(
        hccl_algo="",
        env={"HCCL_ALGO": "level0:NA;level1:H-D_R"},
        parallel=SimpleNamespace(tp=8, cp=1, ep=1, pp=2),
    )
    answer = preview_report(table, topo, message_bytes=None, title="t", spec=spec)
    assert answer["algorithm"] == "H-D_R" and "HCCL_ALGO sets level1:H-D_R" in answer["algorithm_reason"]
    assert [g["kind"] for g in answer["groups"]] == ["tp", "dp", "pp"]
    assert 'data-algorithm="H-D_R"' in answer["svg"]
    assert parse_hccl_algo("H-D_R")["*"].level1 == "H-D_R"


def test_the_plan_request_fields_shape_the_answer_and_bad_ones_name_the_field() -> None:
    table, topo = pool()
    query = query_from_fields("allgather=level0:NA;level1:NB", "tp=8,pp=2", "allgather")
    answer = preview_report(table, topo, message_bytes=MIB, title="t", query=query)
    assert answer["algorithm"] == "NB" and answer["report"]["operation"] == "allgather"
    assert "algo sets level1:NB" in answer["algorithm_reason"]
    for fields, where in (
        (("level1:x", None, None), "algo"),
        ((None, "tp=2;pp=2", None), "parallel"),
        ((None, None, "allsum"), "operation"),
        ((3, None, None), "algo"),
    ):
        with pytest.raises(InputError) as info:
            query_from_fields(*fields)
        assert info.value.where == where
    misfit = query_from_fields(None, "tp=3", None)
    with pytest.raises(InputError, match="does not divide") as info:
        preview_report(table, topo, message_bytes=None, title="t", query=misfit)
    assert info.value.where == "parallel"


@pytest.mark.parametrize(
    ("env", "warning"),
    [
        ({"RANKTABLE_PARALLEL": "tp=8,pp=2"}, None),
        ({"HCCL_ALGO": "level0:NA;level1:H-D_R", "RANKTABLE_PARALLEL": "tp=8,pp=2"}, None),
        ({"HCCL_ALGO": "level1:warp"}, "planned with HCCL's default algorithm"),
        ({"RANKTABLE_PARALLEL": "tp=3"}, "planned without parallel groups"),
    ],
)
def test_the_launchers_route_agrees_with_plan_for_the_jobs_env(
    files: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    env: dict[str, str],
    warning: str | None,
) -> None:
    table, _ = pool()
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    query = query_from_fields(
        env.get("HCCL_ALGO") if warning is None else None,
        env.get("RANKTABLE_PARALLEL") if warning is None else None,
        None,
    )
    expected = plan_report(table, pool()[1], query=query).result.node_rank  # type: ignore[arg-type]
    for server_id, node in expected.items():
        code = main(
            [
                "route",
                "--ranktable",
                str(files[0]),
                "--topology",
                str(files[1]),
                "--server-id",
                server_id,
                "--out",
                str(tmp_path),
            ]
        )
        out, err = capsys.readouterr()
        assert code == 0 and f"export NODE_RANK={node}\n" in out
        assert warning is None or warning in err
