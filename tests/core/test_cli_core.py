"""`ranktable validate | plan | wait | route`: exit codes, output, files written."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ranktable.cli import core, main
from ranktable.hccl import dump_rank_table, load_rank_table, validate_rank_table
from ranktable.topology import dump_topology_yaml, encode_tor_file
from tests.core.test_plan import make_table, two_tier

PODS = [f"s{leaf}-{n}" for n in range(3) for leaf in range(4)]  # leaves interleaved, as pods come


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    table = tmp_path / "jobstart_hccl.json"
    table.write_text(dump_rank_table(make_table(PODS, 8)))
    topo = tmp_path / "topology.yaml"
    topo.write_text(dump_topology_yaml(two_tier(leaves=4, per_leaf=3, spines=2, oversubscription=3.0)))
    return table, topo


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# -- validate ------------------------------------------------------------------------------------------------


def test_validate_valid_table(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", str(files[0]))
    assert code == 0
    assert out.strip() == f"{files[0]}: valid, status completed (12 servers, 96 ranks)"


def test_validate_lists_every_problem_with_its_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(dump_rank_table(make_table(["a", "b"], 2)))
    data["server_list"][1]["server_id"] = "a"
    data["server_list"][1]["device"][0]["rank_id"] = "7"
    data["server_count"] = "4"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    code, out, err = run(capsys, "validate", str(path))
    assert code == 1
    lines = out.splitlines()
    assert "server_count: says 4 but server_list has 2 servers" in lines
    assert any(line.startswith("server_list[1].server_id: duplicate server_id 'a'") for line in lines)
    assert any(line.startswith("server_list[1].device[0].rank_id: 7 is outside 0..3") for line in lines)
    assert err.strip() == f"{path}: invalid, {len(lines)} problems"


def test_validate_initializing_says_so_and_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"status": "initializing"}')
    code, out, _ = run(capsys, "validate", str(path))
    assert code == 0 and "status initializing (not usable yet" in out


def test_validate_not_json_and_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"status": "compl')
    code, out, _ = run(capsys, "validate", str(path))
    assert code == 1 and out.startswith("(document): not valid JSON: Unterminated string")
    code, out, err = run(capsys, "validate", str(tmp_path / "none.json"))
    assert code == 1 and out == ""
    missing = tmp_path / "none.json"
    assert err.strip() == f"ranktable validate: {missing}: rank-table file not found (check the path)"


# -- plan ----------------------------------------------------------------------------------------------------


def test_plan_prints_the_report_and_writes_the_planned_table(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table, topo = files
    out_file = tmp_path / "planned.json"
    code, out, _ = run(
        capsys, "plan", "--ranktable", str(table), "--topology", str(topo), "-o", str(out_file)
    )
    assert code == 0
    assert "ring edges crossing tier 1 (leaf)" in out and "speed-up:" in out
    assert f"planned rank table written to {out_file}" in out
    planned = load_rank_table(out_file)
    assert validate_rank_table(planned) == []
    assert [s.server_id for s in planned.servers][:3] == ["s0-0", "s0-1", "s0-2"]


def test_plan_json_has_the_documented_keys(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    table, topo = files
    code, out, _ = run(
        capsys, "plan", "--ranktable", str(table), "--topology", str(topo), "--format", "yaml", "--json",
        "--message-bytes", "256MiB",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["message_bytes"] == 256 << 20
    for side in ("given", "planned"):
        assert set(data[side]) >= {"crossings_per_tier", "max_uplink_flows", "allreduce_seconds"}
    assert data["given"]["crossings_per_tier"] == [12, 6]  # leaves 0,1 | 2,3 under two spines
    assert data["planned"]["crossings_per_tier"] == [4, 2]
    assert data["speedup"] > 1


def test_plan_writes_the_layout_picture(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table, topo = files
    svg = tmp_path / "layout.svg"
    code, out, _ = run(capsys, "plan", "--ranktable", str(table), "--topology", str(topo), "--svg", str(svg))
    assert code == 0 and f"layout picture written to {svg}" in out
    assert svg.read_text().lstrip().startswith(("<svg", "<?xml"))


def test_plan_bad_input_is_one_line_and_exit_1(
    files: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table, _ = files
    bad = tmp_path / "topo.yaml"
    bad.write_text("kind: RanktableTopology\nswitches: 7\n")
    code, out, err = run(capsys, "plan", "--ranktable", str(table), "--topology", str(bad))
    assert code == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and err.startswith("ranktable plan: ") and "topo.yaml" in err
    pending = tmp_path / "pending.json"
    pending.write_text('{"status": "initializing"}')
    code, _, err = run(capsys, "plan", "--ranktable", str(pending), "--topology", str(files[1]))
    assert code == 1 and "status is 'initializing', not completed" in err


def test_plan_rejects_a_bad_message_size(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    table, topo = files
    with pytest.raises(SystemExit) as exit_:
        main(["plan", "--ranktable", str(table), "--topology", str(topo), "--message-bytes", "lots"])
    assert exit_.value.code == 2
    assert "'lots' is not a size" in capsys.readouterr().err


def test_message_size_units() -> None:
    assert core.message_size("1GiB") == 1 << 30
    assert core.message_size("4k") == 4096
    assert core.message_size("1000") == 1000


# -- plan --stable -------------------------------------------------------------------------------------------


@pytest.fixture
def replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path, Path]:
    """(current table with s1-1 replaced by the spare s3-3, topology, the plan in force before)."""
    topo = tmp_path / "topology.yaml"
    topo.write_text(dump_topology_yaml(two_tier(leaves=4, per_leaf=4, spines=2, oversubscription=3.0)))
    before = tmp_path / "before.json"
    before.write_text(dump_rank_table(make_table(PODS, 8)))
    previous = tmp_path / "previous.json"
    code, _, _ = run(capsys, "plan", "--ranktable", str(before), "--topology", str(topo), "-o", str(previous))
    assert code == 0
    current = tmp_path / "jobstart_hccl.json"
    current.write_text(dump_rank_table(make_table(["s3-3" if p == "s1-1" else p for p in PODS], 8)))
    return current, topo, previous


def test_plan_stable_keeps_the_survivors_ranks_and_reports_the_replan_gain(
    replaced: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    current, topo, previous = replaced
    out_file = tmp_path / "stable.json"
    argv = ["plan", "--ranktable", str(current), "--topology", str(topo), "--stable", "--previous"]
    code, out, _ = run(capsys, *argv, str(previous), "-o", str(out_file))
    assert code == 0
    before = {s.server_id: [d.rank_id for d in s.devices] for s in load_rank_table(previous).servers}
    planned = load_rank_table(out_file)
    assert validate_rank_table(planned) == []
    after = {s.server_id: [d.rank_id for d in s.devices] for s in planned.servers}
    survivors = set(before) - {"s1-1"}
    assert len(survivors) == 11 and all(after[sid] == before[sid] for sid in survivors)
    assert after["s3-3"] == before["s1-1"]  # the spare takes the freed slot
    assert f"stable mode against {previous}:" in out
    assert "kept their ranks: 11 server(s)" in out and "replaced/placed: s3-3" in out
    assert "gone since the previous plan: s1-1" in out
    # s3-3 sits on another leaf than s1-1's neighbours, so a full replan crosses fewer switches
    assert "a full replan would change ring crossings (tier 1: 6 -> 4, tier 2: 4 -> 2)" in out
    stable_part = out[out.index("stable mode against") :]
    assert re.search(r"estimated all-reduce time +[\d.]+ ms +[\d.]+ ms", stable_part)
    assert re.search(r"full replan gain: 1\.\d\dx", stable_part)

    code, out, _ = run(capsys, *argv, str(previous), "--json")
    assert code == 0
    stable = json.loads(out)["stable"]
    assert stable["placed"] == ["s3-3"] and stable["removed"] == ["s1-1"] and stable["moved"] == []
    assert sorted(stable["kept"]) == sorted(survivors)
    assert stable["stable_plan"]["crossings_per_tier"] == [6, 4]
    assert stable["full_replan"]["crossings_per_tier"] == [4, 2]
    assert stable["worthwhile"] is True
    assert stable["full_replan"]["allreduce_seconds"] < stable["stable_plan"]["allreduce_seconds"]
    assert stable["full_replan_speedup"] > 1.0


def test_plan_without_stable_has_no_stable_key(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "plan", "--ranktable", str(files[0]), "--topology", str(files[1]), "--json")
    assert code == 0 and "stable" not in json.loads(out)


def test_plan_stable_without_previous_is_a_usage_error(
    replaced: tuple[Path, Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    current, topo, previous = replaced
    code, out, err = run(capsys, "plan", "--ranktable", str(current), "--topology", str(topo), "--stable")
    assert code == 2 and out == ""
    assert err.splitlines() == [
        "ranktable plan: --stable needs --previous PLANNED.json "
        "(pass the planned rank table that was in force before the table changed)"
    ]
    argv = ["plan", "--ranktable", str(current), "--topology", str(topo), "--previous", str(previous)]
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "only used with --stable" in err


@pytest.mark.parametrize(
    "content",
    ['{"hello": 1}', "[1, 2]", "kind: RanktableTopology\n", '{"status": "initializing"}'],
    ids=["no-fields", "not-an-object", "not-json", "initializing"],
)
def test_plan_stable_previous_not_a_rank_table_names_the_file(
    content: str, replaced: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    current, topo, _ = replaced
    bad = tmp_path / "old-plan.json"
    bad.write_text(content)
    argv = ["plan", "--ranktable", str(current), "--topology", str(topo), "--stable", "--previous", str(bad)]
    code, out, err = run(capsys, *argv)
    assert code == 1 and out == ""
    assert len(err.splitlines()) == 1 and err.startswith("ranktable plan: ") and str(bad) in err


# -- wait ----------------------------------------------------------------------------------------------------


@pytest.fixture
def fast_poll(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(core, "POLL_SECONDS", 0.05)


def test_wait_returns_at_once_for_a_completed_valid_table(
    files: tuple[Path, Path], fast_poll: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "wait", str(files[0]), "--timeout", "5")
    assert code == 0 and out == "" and "completed and valid (12 servers, 96 ranks)" in err


def test_wait_follows_missing_partial_initializing_then_completed(
    tmp_path: Path, fast_poll: None, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "jobstart_hccl.json"
    final = dump_rank_table(make_table(["a", "b"], 2))

    def platform() -> None:
        time.sleep(0.15)
        path.write_text(final[:20])  # half written
        time.sleep(0.15)
        path.write_text('{"status": "initializing"}')
        time.sleep(0.15)
        path.write_text(final)

    writer = threading.Thread(target=platform)
    writer.start()
    code, _, err = run(capsys, "wait", str(path), "--timeout", "10")
    writer.join()
    assert code == 0
    assert "file does not exist yet" in err
    assert "status is initializing" in err
    assert "completed and valid" in err.splitlines()[-1]


def test_wait_times_out_with_the_reason(
    tmp_path: Path, fast_poll: None, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"status": "initializing"}')
    started = time.monotonic()
    code, _, err = run(capsys, "wait", str(path), "--timeout", "0.3")
    assert code == core.EXIT_TIMEOUT
    assert time.monotonic() - started < 3
    assert "timed out after 0.3s; last seen: status is initializing" in err


def test_wait_fails_on_a_completed_but_invalid_table(
    tmp_path: Path, fast_poll: None, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(dump_rank_table(make_table(["a", "b"], 2)))
    data["server_list"][1]["server_id"] = "a"
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data))
    code, _, err = run(capsys, "wait", str(path), "--timeout", "5")
    assert code == 1
    assert "completed but invalid" in err and "server_list[1].server_id: duplicate server_id" in err


# -- route ---------------------------------------------------------------------------------------------------


def route(
    capsys: pytest.CaptureFixture[str], table: Path, topology: Path, server_id: str, *more: str
) -> tuple[int, str, str]:
    """`ranktable route` for one server of the table: (exit code, stdout, stderr)."""
    argv = ("--ranktable", str(table), "--topology", str(topology), "--server-id", server_id, *more)
    return run(capsys, "route", *argv)


def exports(out: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for line in out.splitlines():
        words = shlex.split(line)
        assert words[0] == "export"
        name, _, value = words[1].partition("=")
        values[name] = value
    return values


def test_route_writes_the_plan_beside_the_input_and_prints_exports(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    table, topo = files
    code, out, _ = route(capsys, table, topo, "s1-2")
    assert code == 0
    target = table.parent / "jobstart_routeplan.json"
    values = exports(out)
    assert values == {
        "RANK_TABLE_FILE": str(target.resolve()),
        "RANK_AFTER_ACC": "5",  # leaf0: s0-0..2, leaf1: s1-0..2 -> s1-2 is node 5
        "NODE_RANK": "5",
        "RANK_SIZE": "96",
        "RANK_ID": "40",
    }
    planned = load_rank_table(target)
    assert planned.servers[5].server_id == "s1-2" and planned.servers[5].devices[0].rank_id == 40


def test_route_reads_the_platform_tor_file_and_honours_out_dir(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    table = make_table(["10.0.0.1", "10.0.0.3", "10.0.0.2", "10.0.0.4"], 2)
    tor_of = {"10.0.0.1": "1.0.0.0", "10.0.0.2": "1.0.0.0", "10.0.0.3": "1.0.0.1", "10.0.0.4": "1.0.0.1"}
    doc = json.loads(dump_rank_table(table))
    for n, server in enumerate(doc["server_list"]):
        server["pod_name"] = f"job-worker-{n}"
        for device in server["device"]:
            device["tor_ip"] = tor_of[server["server_id"]]
            device["tor_port"] = "1"
    (tmp_path / "jobstart_hccl.json").write_text(dump_rank_table(table))
    (tmp_path / "ranktable_tor.json").write_text(encode_tor_file(doc))
    out_dir = tmp_path / "work"
    table_file, tor_file = tmp_path / "jobstart_hccl.json", tmp_path / "ranktable_tor.json"
    code, out, _ = route(capsys, table_file, tor_file, "10.0.0.2", "--out", str(out_dir))
    assert code == 0
    values = exports(out)
    assert values["RANK_TABLE_FILE"] == str((out_dir / "jobstart_routeplan.json").resolve())
    assert (values["NODE_RANK"], values["RANK_ID"], values["RANK_SIZE"]) == ("1", "2", "8")
    assert not (tmp_path / "jobstart_routeplan.json").exists()


def test_route_unknown_server_is_a_clear_error(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    table, topo = files
    code, out, err = route(capsys, table, topo, "zz")
    assert code == 1 and out == ""
    assert err.startswith("ranktable route: --server-id: server 'zz' is not in ")


# -- the installed command -----------------------------------------------------------------------------------


def test_installed_command_help_and_exit_codes(files: tuple[Path, Path], tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "ranktable"
    for command in ("validate", "plan", "wait", "route"):
        shown = subprocess.run([str(exe), command, "--help"], capture_output=True, text=True, timeout=60)
        assert shown.returncode == 0 and f"usage: ranktable {command}" in shown.stdout
    ok = subprocess.run([str(exe), "validate", str(files[0])], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "valid, status completed" in ok.stdout
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    failed = subprocess.run([str(exe), "validate", str(bad)], capture_output=True, text=True, timeout=60)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr


def test_plan_on_volcano_hypernodes_resolved_through_the_node_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = Path(__file__).parents[1] / "data" / "topology"
    ips = [f"192.168.0.{n}" for n in (11, 13, 15, 17, 12, 14, 16, 18)]  # leaves a b c d a b c d
    table = tmp_path / "jobstart_hccl.json"
    table.write_text(dump_rank_table(make_table(ips, 8)))
    planned_file = tmp_path / "planned.json"
    code, out, err = run(
        capsys, "plan", "--ranktable", str(table), "--topology", str(data / "hypernodes.yaml"),
        "--nodes", str(data / "nodes.json"), "--json", "-o", str(planned_file),
    )  # fmt: skip
    assert code == 0, err
    result = json.loads(out)
    assert result["given"]["crossings_per_tier"] == [8, 4]
    assert result["planned"]["crossings_per_tier"] == [4, 2]
    assert result["unknown_servers"] == []
    planned = load_rank_table(planned_file)
    assert [s.server_id for s in planned.servers] == sorted(ips)


def test_wait_names_a_json_file_that_is_not_a_rank_table(
    tmp_path: Path, fast_poll: None, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "t.json"
    path.write_text("[1, 2]")
    code, _, err = run(capsys, "wait", str(path), "--timeout", "0.2")
    assert code == core.EXIT_TIMEOUT and "not a rank table" in err


def test_a_sync_command_line_loads_neither_numpy_nor_the_rank_table_core() -> None:
    """`ranktable sync` runs on every save through the agent: importing numpy (via ranktable.hccl) cost
    0.2-0.3 s per run, more than the sync itself."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from ranktable.cli import main\n"
        "try:\n"
        "    main(['sync', '--help'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in ('numpy', 'ranktable.hccl', 'paramiko') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"
