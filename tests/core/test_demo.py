"""`ranktable demo` and the example pool shipped inside the package."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ranktable.cli import main
from ranktable.examples import RANKTABLE_FILE, example_text, load_example_pool
from ranktable.hccl import check_file, check_rank_table, parse_rank_table
from ranktable.plan import plan_routes


def test_example_pool_is_a_valid_completed_table_in_pod_order() -> None:
    pool = load_example_pool()
    report = check_rank_table(pool.table)
    assert report.problems == () and pool.table.completed and pool.table.version == "1.0"
    assert len(pool.table.servers) == 16 and all(len(s.devices) == 8 for s in pool.table.servers)
    assert all(d.device_ip for s in pool.table.servers for d in s.devices)
    # every server is known to the topology, and consecutive pods mostly sit on different leaves
    leaves = [pool.topology.leaf_of(pool.topology.resolve(s.server_id) or "") for s in pool.table.servers]
    assert None not in leaves and len(set(leaves)) == 4
    assert sum(a != b for a, b in zip(leaves, leaves[1:] + leaves[:1], strict=True)) >= 12
    assert len(pool.topology.switches_at(2)) == 2
    # the file keeps the platform's conventions (string numbers)
    raw = json.loads(example_text(RANKTABLE_FILE))
    assert raw["server_count"] == "16" and raw["server_list"][0]["device"][0]["rank_id"] == "0"
    assert parse_rank_table(raw).servers[0].server_id == pool.table.servers[0].server_id


def test_demo_writes_picture_plan_and_reports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "demo"
    assert main(["demo", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    for name in ("layout.svg", "jobstart_routeplan.json", "report.txt", "report.json"):
        assert (out / name).is_file()
        assert str(out / name) in printed
    report = json.loads((out / "report.json").read_text())
    assert report["speedup"] > 1
    assert report["planned"]["crossings_per_tier"] == [4, 2]
    assert report["given"]["crossings_per_tier"][0] > report["planned"]["crossings_per_tier"][0]
    assert "speed-up" in printed and (out / "report.txt").read_text().strip() in printed
    planned = check_file(out / "jobstart_routeplan.json")
    assert planned.problems == ()
    svg = ET.parse(out / "layout.svg").getroot()
    assert svg.tag == "{http://www.w3.org/2000/svg}svg" and svg.get("data-aggregated") == "false"
    # the written plan is what planning the shipped table gives, and the JSON's node ranks match it
    pool = load_example_pool()
    result = plan_routes(pool.table, pool.topology)
    written = json.loads((out / "jobstart_routeplan.json").read_text())
    assert [s["server_id"] for s in written["server_list"]] == [s.server_id for s in result.planned.servers]
    assert report["node_rank"] == result.node_rank


def test_demo_rejects_an_out_path_that_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    assert main(["demo", "--out", str(target)]) == 2
    err = capsys.readouterr().err
    assert "--out" in err and "not a directory" in err and "Traceback" not in err


def test_demo_rejects_a_non_positive_message_size(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--message-bytes", "0"]) == 2
    assert "--message-bytes" in capsys.readouterr().err
