"""Every loader gives each tier uplink figures (the file's, else the documented default, or
--tier-bandwidth), so one placement plans the same gain whatever file described the cluster (#28)."""

from __future__ import annotations

import contextlib
import io
import json
import random
from pathlib import Path

import pytest
import yaml

from ranktable.cli import main
from ranktable.hccl import write_rank_table
from ranktable.topology import load_topology
from ranktable.topology.bandwidth import DEFAULT_OVERSUBSCRIPTION, parse_tier_bandwidth
from ranktable.topology.export import to_hypernodes, to_node_labels, to_tor_configmap, to_tor_info
from ranktable.topology.tor_file import encode_tor_file
from ranktable.usecases.layout import plan_report
from tests.core.test_plan import make_table, two_tier


def every_format(tmp_path: Path) -> dict[str, Path]:
    """One tree (4 leaves of 4 servers, 4:1 leaf uplinks as the simulated pool's HyperNodes say) in
    every format: only the HyperNodes keep the figure."""
    tree = two_tier(4, 4, oversubscription=DEFAULT_OVERSUBSCRIPTION[1])
    info, level = to_tor_info(tree)
    nodes = [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": server, "labels": labels}}
        for server, labels in to_node_labels(tree).items()
    ]
    tor_file = {
        "status": "completed",
        "server_list": [
            {"server_id": server, "device": [{"device_id": str(d), "tor_ip": leaf} for d in range(8)]}
            for server, leaf in tree.server_leaf.items()
        ],
    }
    contents = {
        "hypernodes.yaml": yaml.safe_dump_all(to_hypernodes(tree)),
        "tor-cm.yaml": yaml.safe_dump(to_tor_configmap(tree)),
        "tor_info.json": json.dumps({**info}),
        "nodes.json": json.dumps({"apiVersion": "v1", "kind": "NodeList", "items": nodes}),
        "ranktable_tor.json": encode_tor_file(tor_file),
    }
    assert level == "double_layer"
    files = {}
    for name, text in contents.items():
        files[name] = tmp_path / name
        files[name].write_text(text)
    return files


def scattered_table(tmp_path: Path) -> Path:
    servers = [f"s{leaf}-{n}" for leaf in range(4) for n in range(4)]
    random.Random(3).shuffle(servers)
    path = tmp_path / "hccl.json"
    write_rank_table(make_table(servers), path)
    return path


def test_the_same_placement_plans_the_same_gain_from_every_format(tmp_path: Path) -> None:
    from ranktable.hccl import load_rank_table

    table = load_rank_table(scattered_table(tmp_path))
    gains = {}
    for name, path in every_format(tmp_path).items():
        topology = load_topology(path)
        gains[name] = round(plan_report(table, topology).comparison.speedup, 6)
        assumed = [w for w in topology.warnings if "assumed" in w]
        if name == "hypernodes.yaml":
            assert assumed == []  # the file says 4:1
        else:
            assert len(assumed) == 1 and "tier 1" in assumed[0] and "4:1 assumed" in assumed[0]
    assert len(set(gains.values())) == 1, gains
    assert next(iter(gains.values())) > 1.0  # crossing leaves costs: the plan gains


def test_tier_bandwidth_overrides_the_file_and_the_default(tmp_path: Path) -> None:
    files = every_format(tmp_path)
    table = scattered_table(tmp_path)
    reports = {}
    for name in ("hypernodes.yaml", "tor-cm.yaml"):
        out = io.StringIO()
        argv = ["plan", "--ranktable", str(table), "--topology", str(files[name]), "--json"]
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            assert main([*argv, "--tier-bandwidth", "1=1:1"]) == 0
        reports[name] = json.loads(out.getvalue())
    assert reports["hypernodes.yaml"]["speedup"] == pytest.approx(1.0)  # non-blocking: order is free
    assert reports["tor-cm.yaml"]["speedup"] == pytest.approx(1.0)
    assert "tier 1 uplinks: 1:1 (--tier-bandwidth)" in reports["tor-cm.yaml"]["warnings"]
    assert not any("assumed" in w for w in reports["tor-cm.yaml"]["warnings"])


@pytest.mark.parametrize("text", ["1", "x=4:1", "0=4:1", "1=0.5:1", "1=0", "1=4:2"])
def test_a_bad_tier_bandwidth_is_one_error_naming_the_flag(text: str) -> None:
    with pytest.raises(Exception) as caught:
        parse_tier_bandwidth(text)
    assert getattr(caught.value, "where", None) == "--tier-bandwidth"


def test_tier_bandwidth_forms() -> None:
    assert parse_tier_bandwidth("1=4:1") == (1, 4.0, None)
    assert parse_tier_bandwidth("2=400") == (2, None, 400.0)
    assert parse_tier_bandwidth("2=400Gbps") == (2, None, 400.0)
