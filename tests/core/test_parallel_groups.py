"""Megatron parallel groups: rank order, per-group cost on the tree, the group-aware order, surfaces."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from ranktable.choice.cost import CollectiveQuery, compare, format_report
from ranktable.cli import main
from ranktable.collectives.choice import parse_hccl_algo
from ranktable.collectives.groups import ParallelSizes, group_ranks, parse_group_bytes, parse_parallel
from ranktable.errors import InputError
from ranktable.hccl import SuperPod, dump_rank_table
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
    assert tp["superpods_per_group"] == 0 and tp["flows_crossing_superpods"] == 0  # no SuperPoD tier (1.0)
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


# -- A3: the SuperPoD tier --------------------------------------------------------------------------------


def a3_pool(pods: list[list[str]] | None) -> tuple[object, object]:
    """Eight servers under two leaves (ranks in tree order) as an A3 rank table 1.2 with these SuperPoDs;
    None: the same table as 1.0 (no SuperPoD tier)."""
    ids = [f"s{leaf}-{n}" for leaf in (0, 1) for n in range(4)]
    table = make_table(ids)
    if pods is not None:
        table.version = "1.2"
        for server in table.servers:
            for device in server.devices:
                device.super_device_id = str(device.rank_id)
        table.super_pods = [SuperPod(str(n), members) for n, members in enumerate(pods)]
    return table, two_tier(leaves=2, per_leaf=4, oversubscription=4.0)


ACROSS_LEAVES = [["s0-0", "s0-1", "s1-0", "s1-1"], ["s0-2", "s0-3", "s1-2", "s1-3"]]


def group_rows(pods: list[list[str]] | None, sizes: ParallelSizes) -> dict[str, dict[str, object]]:
    """Each kind's cost on the table's own order (given = planned: no planner in the way)."""
    table, topo = a3_pool(pods)
    query = CollectiveQuery(parallel=sizes, product="A3")
    comparison = compare(table, table, topo, query=query)  # type: ignore[arg-type]
    return {row["kind"]: row["given"] for row in comparison.group_rows()}


def test_group_flows_between_superpods_are_counted_like_the_switch_tiers() -> None:
    rows = group_rows(ACROSS_LEAVES, ParallelSizes(tp=8))
    tp, dp = rows["tp"], rows["dp"]
    assert tp["superpods_per_group"] == 1 and tp["flows_crossing_superpods"] == 0  # inside a server
    # dp: 8 groups (one per NPU index) of 8 servers, 4 in each of 2 SuperPoDs; HCCL runs in-SuperPoD
    # first, then the j-th server of each SuperPoD with its peer: 8 x 4 pairs, H-D_R on 2 = one exchange
    # each way (2 flows) in the reduce-scatter and again in the all-gather: 8 x 4 x 2 x 2 = 128 flows
    assert dp["superpods_per_group"] == 2 and dp["flows_crossing_superpods"] == 128
    levels = [step["level"] for step in dp["steps"]]  # type: ignore[attr-defined]
    assert "in-SuperPoD" in levels and "between SuperPoDs" in levels
    between = [s for s in dp["steps"] if s["level"] == "between SuperPoDs"]  # type: ignore[attr-defined]
    on_tree = [sum(s["crossings_per_tier"][k] * s["repeat"] for s in between) for k in range(2)]
    assert dp["flows_crossing_per_tier"] == on_tree  # only the RoCE level touches the switch tree


def test_a_group_inside_one_superpod_stays_off_the_roce_tree() -> None:
    everyone = [[f"s{leaf}-{n}" for leaf in (0, 1) for n in range(4)]]
    inside = group_rows(everyone, ParallelSizes(tp=8, pp=2))
    flat = group_rows(None, ParallelSizes(tp=8, pp=2))
    for kind in ("dp", "pp"):
        assert inside[kind]["superpods_per_group"] == 1 and inside[kind]["flows_crossing_superpods"] == 0
        assert inside[kind]["flows_crossing_per_tier"] == [0, 0]  # switched HCCS, not the leaves
        assert {s["level"] for s in inside[kind]["steps"]} == {"in-SuperPoD"}  # type: ignore[attr-defined]
        assert flat[kind]["superpods_per_group"] == 0 and flat[kind]["flows_crossing_superpods"] == 0
    assert flat["pp"]["flows_crossing_per_tier"][0] > 0  # without the SuperPoD tier: RoCE over the leaves


def test_pipeline_sends_between_superpods_are_counted() -> None:
    by_leaf = [[f"s{leaf}-{n}" for n in range(4)] for leaf in (0, 1)]
    pp = group_rows(by_leaf, ParallelSizes(tp=8, pp=2))["pp"]
    # stage 0 = ranks 0-31 (leaf 0's SuperPoD), stage 1 = ranks 32-63: every one of the 32 sends crosses
    assert pp["superpods_per_group"] == 2 and pp["flows_crossing_superpods"] == 32
    assert pp["flows_crossing_per_tier"][0] == 32


def test_uneven_superpods_in_a_group_are_one_roce_level_with_a_note() -> None:
    uneven = [["s0-0", "s0-1", "s0-2"], ["s0-3", "s1-0", "s1-1", "s1-2", "s1-3"]]
    dp = group_rows(uneven, ParallelSizes(tp=8))["dp"]
    assert dp["superpods_per_group"] == 2 and dp["flows_crossing_superpods"] > 0
    assert {s["level"] for s in dp["steps"]} == {"inter-server"}  # type: ignore[attr-defined]
    assert any("different numbers" in note for note in dp["notes"])  # type: ignore[attr-defined]


# -- A3: the SuperPoD tier of the whole-job estimate ------------------------------------------------------


def whole_job(pods: list[list[str]] | None, algo: str | None = None) -> tuple[object, dict[str, object]]:
    """The comparison of the table's own order and its given side's JSON (whole job, no groups)."""
    table, topo = a3_pool(pods)
    settings = parse_hccl_algo(algo) if algo else None
    comparison = compare(table, table, topo, query=CollectiveQuery(product="A3", settings=settings))  # type: ignore[arg-type]
    return comparison, comparison.to_json()["given"]


def step_flows(collective: dict[str, object], key: str) -> int:
    steps = collective["steps"]
    assert isinstance(steps, list) and steps and all(key in s for s in steps)
    return sum(s[key] * s["repeat"] for s in steps)


def test_whole_job_flows_between_superpods_are_counted_per_step() -> None:
    _, given = whole_job(ACROSS_LEAVES, "level0:NA;level1:ring;level2:H-D_R")
    collective = given["collective"]
    assert isinstance(collective, dict)
    # 2 SuperPoDs of 4 servers: ring in each SuperPoD over HCCS (off the tree), then the j-th server of
    # each SuperPoD with its peer, 8 NPU planes: 4 x 8 pairs, H-D_R on 2 = 2 flows in the reduce-scatter
    # and 2 in the all-gather: 4 x 8 x 2 x 2 = 128 flows between SuperPoDs
    assert collective["superpods"] == 2 and collective["flows_crossing_superpods"] == 128
    assert step_flows(collective, "flows_crossing_superpods") == 128
    for step in collective["steps"]:  # type: ignore[attr-defined]
        assert (step["flows_crossing_superpods"] > 0) == (step["level"] == "between SuperPoDs")
    assert given["superpods"] == 2 and given["flows_crossing_superpods"] == 128
    # ring over servers s0-0 s0-1 s1-0 s1-1 | s0-2 ... (tree order): pods 0 0 1 1 0 0 1 1 -> 4 edges cross
    assert given["crossings_superpods"] == 4


def test_one_superpod_runs_over_hccs_off_the_roce_tree() -> None:
    everyone = [[f"s{leaf}-{n}" for leaf in (0, 1) for n in range(4)]]
    _, given = whole_job(everyone)
    collective = given["collective"]
    assert isinstance(collective, dict)
    assert collective["superpods"] == 1 and collective["flows_crossing_superpods"] == 0
    assert collective["flows_crossing_per_tier"] == [0, 0] and given["max_uplink_flows"] == 0
    assert {s["level"] for s in collective["steps"]} == {"in-server", "in-SuperPoD"}  # type: ignore[attr-defined]
    _, flat = whole_job(None)  # the same pool as 1.0: RoCE over the leaves
    assert flat["collective"]["flows_crossing_per_tier"][0] > 0  # type: ignore[index]


def test_uneven_superpods_count_their_flows_on_the_one_roce_level() -> None:
    uneven = [["s0-0", "s0-1", "s0-2"], ["s0-3", "s1-0", "s1-1", "s1-2", "s1-3"]]
    _, given = whole_job(uneven, "level0:NA;level1:ring")
    collective = given["collective"]
    assert isinstance(collective, dict)
    assert {s["level"] for s in collective["steps"]} == {"in-server", "inter-server"}  # type: ignore[attr-defined]
    # ring over 8 servers (8 planes): per step the edges s0-2 -> s0-3 and s1-3 -> s0-0 cross, 2 x 8 flows;
    # 2 x 7 ring steps (reduce-scatter, all-gather)
    assert collective["flows_crossing_superpods"] == 2 * 8 * 14
    assert step_flows(collective, "flows_crossing_superpods") == 2 * 8 * 14
    assert given["crossings_superpods"] == 2


def test_no_superpod_list_means_no_superpod_tier() -> None:
    comparison, given = whole_job(None)
    assert given["superpods"] == 0 and given["crossings_superpods"] == 0
    assert given["collective"]["flows_crossing_superpods"] == 0  # type: ignore[index]
    assert "SuperPoD" not in format_report(comparison)  # type: ignore[arg-type]


def test_plan_json_text_and_picture_show_the_superpod_tier(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    table, topo = a3_pool(ACROSS_LEAVES)
    paths = tmp_path / "jobstart_hccl.json", tmp_path / "topology.yaml", tmp_path / "layout.svg"
    paths[0].write_text(dump_rank_table(table))  # type: ignore[arg-type]
    paths[1].write_text(dump_topology_yaml(topo))  # type: ignore[arg-type]
    argv = ["plan", "--ranktable", str(paths[0]), "--topology", str(paths[1])]
    assert main([*argv, "--json", "--svg", str(paths[2]), "--parallel", "tp=8"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["product"] == "A3"
    for side in ("given", "planned"):
        figures = data[side]
        assert figures["superpods"] == 2
        assert figures["flows_crossing_superpods"] == figures["collective"]["flows_crossing_superpods"]
        assert figures["flows_crossing_superpods"] == step_flows(
            figures["collective"], "flows_crossing_superpods"
        )
    svg = paths[2].read_text()
    given_edges = data["given"]["crossings_superpods"]
    assert f'data-superpod-crossings="{given_edges}"' in svg and f"SuperPoDs {given_edges}" in svg
    assert main(argv) == 0
    text = capsys.readouterr().out
    row = next(line for line in text.splitlines() if line.startswith("ring edges crossing SuperPoDs (2)"))
    assert row.split()[-2:] == [str(given_edges), str(data["planned"]["crossings_superpods"])]
    assert "collective flows between SuperPoDs" in text
