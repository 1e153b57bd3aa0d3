"""Real-world topology and rank-table files (tests/data/realworld, sources in SOURCES.md) are read right."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from ranktable.cli import main
from ranktable.errors import InputError
from ranktable.hccl import Device, RankTable, Server, parse_rank_table
from ranktable.hccl.io import load_rank_table, write_rank_table
from ranktable.plan import plan_routes
from ranktable.topology import load_topology
from ranktable.topology.export import to_tor_info
from ranktable.topology.synthetic import synthetic_topology
from ranktable.topology.tor_info import topology_from_tor_info

DATA = Path(__file__).parents[1] / "data" / "realworld"


# -- MindCluster basic-tor-node-cm --------------------------------------------------------------------------
def test_the_configmap_lld_to_cm_writes_is_read_with_warnings() -> None:
    topo = load_topology(DATA / "basic-tor-node-cm.lld_to_cm.yaml")
    assert [topo.leaf_of(f"192.168.10.{i}") for i in (1, 5, 6, 12)] == [
        "10.90.0.1",
        "10.90.0.1",
        "10.90.0.2",
        "10.90.0.3",
    ]
    assert topo.slice_ids["192.168.10.5"] == 4 and topo.slice_ids["192.168.10.6"] == 0
    text = "\n".join(topo.warnings)
    assert "trailing comma" in text or "Expecting property name" in text  # not strict JSON
    assert "remove the trailing commas" in text
    # tor_count (4) is servers per ToR: the ToR listing 5 is reported, the ones with 4 and 3 are not
    assert "ToR 10.90.0.1 lists 5 servers but tor_count (servers per ToR) is 4" in text
    assert "10.90.0.2 lists" not in text and "10.90.0.3 lists" not in text


def test_the_guide_configmap_is_read_without_warnings() -> None:
    topo = load_topology(DATA / "basic-tor-node-cm.guide.yaml")
    assert [w for w in topo.warnings if "assumed" not in w] == []  # only the uplink figure it lacks
    assert len([s for s in topo.switches.values() if s.tier == 1]) == 2
    assert len(topo.server_leaf) == 8


def test_tor_count_is_servers_per_tor_not_the_number_of_tors() -> None:
    info = {
        "version": "1.0",
        "tor_count": 2,  # two servers under each ToR; there are three ToRs
        "server_list": [
            {
                "tor_id": t,
                "tor_ip": f"10.9.0.{t}",
                "server": [{"server_ip": f"10.1.{t}.{s}", "npu_count": 8, "slice_id": s} for s in range(2)],
            }
            for t in range(3)
        ],
    }
    topo = topology_from_tor_info(info)
    assert topo.warnings == [] and len(topo.server_leaf) == 6


def test_export_writes_servers_per_tor_as_tor_count() -> None:
    topo, _ids = synthetic_topology(12, 3, 1)
    info, _level = to_tor_info(topo)
    assert len(info["server_list"]) == 3 and info["tor_count"] == 4


def test_topology_warnings_reach_the_plan() -> None:
    topo = load_topology(DATA / "basic-tor-node-cm.lld_to_cm.yaml")
    servers = [
        Server(server_id=f"192.168.10.{i}", devices=[Device(0, i - 1, device_ip=f"29.0.0.{i}")])
        for i in range(1, 13)
    ]
    result = plan_routes(RankTable("completed", "1.0", servers), topo)
    assert any("tor_count (servers per ToR) is 4" in w for w in result.warnings)


# -- Slurm fat trees ---------------------------------------------------------------------------------------
def test_a_slurm_fat_tree_merges_parallel_spines() -> None:
    topo = load_topology(DATA / "topology.fat-tree.conf")
    assert topo.leaf_of("npu05") == "leaf1"
    assert topo.switches["leaf1"].parent == "spine0+spine1"
    assert topo.switches["spine0+spine1"].tier == 2
    assert any("spine0, spine1 share the switches below them" in w for w in topo.warnings)


def test_a_partial_fat_tree_merges_transitively(tmp_path: Path) -> None:
    conf = tmp_path / "topology.conf"
    conf.write_text(
        "SwitchName=l0 Nodes=a[0-1]\nSwitchName=l1 Nodes=b[0-1]\nSwitchName=l2 Nodes=c[0-1]\n"
        "SwitchName=s0 Switches=l0,l1\nSwitchName=s1 Switches=l1,l2\nSwitchName=s2 Switches=l2\n"
        "SwitchName=core Switches=s0,s2\n"
    )
    topo = load_topology(conf)
    assert {topo.switches[leaf].parent for leaf in ("l0", "l1", "l2")} == {"s0+s1+s2"}
    assert topo.switches["s0+s1+s2"].parent == "core"


def test_a_switch_cycle_is_still_refused(tmp_path: Path) -> None:
    conf = tmp_path / "topology.conf"
    conf.write_text("SwitchName=l0 Nodes=a0\nSwitchName=s0 Switches=l0,s1\nSwitchName=s1 Switches=s0\n")
    with pytest.raises(InputError, match=r"cycle|different tiers"):
        load_topology(conf)


# -- HyperNodes ---------------------------------------------------------------------------------------------
def test_a_hypernode_naming_an_undefined_member_is_a_warning() -> None:
    topo = load_topology(DATA / "hypernodes.dangling-member.yaml")
    assert topo.switches["leaf-a"].parent == "spine-0" and topo.switches["leaf-b"].parent == "spine-0"
    assert topo.leaf_of("node-03") == "leaf-b"
    warnings = [w for w in topo.warnings if "assumed" not in w]  # not the uplink figure it lacks
    assert len(warnings) == 1
    assert "members[2].selector.exactMatch.name" in warnings[0]
    assert "HyperNode 'leaf-c' is not defined; the member is empty" in warnings[0]


# -- legacy group_list -------------------------------------------------------------------------------------
def test_legacy_group_list_keeps_the_listed_order_and_takes_instances_without_pod_name(
    tmp_path: Path,
) -> None:
    table = load_rank_table(DATA / "legacy-group-list.json")
    assert [s.server_id for s in table.servers] == ["10.0.3.7", "10.0.3.2", "10.0.3.9"]
    assert [d.rank_id for s in table.servers for d in s.devices] == list(range(6))
    assert table.servers[0].extra == {"pod_name": "bert-worker-7d9f8c6b5-x2k41"}
    assert table.servers[2].extra == {}
    written = json.loads(write_rank_table(table, tmp_path / "t.json").read_text())
    assert [s["server_id"] for s in written["server_list"]] == ["10.0.3.7", "10.0.3.2", "10.0.3.9"]


def test_lab_group_list_of_one_instance_per_device_is_one_server_per_machine(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The ModelZoo / HCCL-stub "lab" form: instances of one server_id are that machine's devices."""
    table = load_rank_table(DATA / "lab-group-list.json")
    assert [s.server_id for s in table.servers] == ["10.155.111.140", "10.155.111.141"]
    assert [[(d.device_id, d.rank_id) for d in s.devices] for s in table.servers] == [
        [(0, 0), (1, 1)],
        [(0, 2), (1, 3)],
    ]
    assert main(["validate", str(DATA / "lab-group-list.json")]) == 0
    assert "valid, status completed (2 servers, 4 ranks)" in capsys.readouterr().out


def test_lab_group_list_takes_each_instance_rank_id() -> None:
    doc = json.loads((DATA / "lab-group-list.json").read_text())
    instances = doc["group_list"][0]["instance_list"]
    instances[0]["rank_id"], instances[1]["rank_id"] = "1", "0"
    table = parse_rank_table(doc)
    assert [(d.device_id, d.rank_id) for d in table.servers[0].devices] == [(0, 1), (1, 0)]


# -- plan --format labels --label-keys -----------------------------------------------------------------------
def test_plan_takes_label_keys_for_the_labels_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    servers = [  # pod order alternates the ToRs: tor-a, tor-b, tor-a, tor-b
        Server(
            server_id=f"npu-{i}", devices=[Device(d, k * 2 + d, device_ip=f"29.0.{i}.{d}") for d in range(2)]
        )
        for k, i in enumerate((1, 3, 2, 4))
    ]
    table = write_rank_table(RankTable("completed", "1.0", servers), tmp_path / "t.json")
    nodes = DATA / "nodes-custom-labels.yaml"
    argv = ["plan", "--ranktable", str(table), "--topology", str(nodes), "--format", "labels", "--json"]
    assert main([*argv, "--label-keys", "net.example.com/tor,net.example.com/pod"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["planned"]["crossings_per_tier"][0] < report["given"]["crossings_per_tier"][0]
    # without the keys the known label sets do not match: the nodes are not in any fabric
    assert main(argv) != 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as usage:
        main(["plan", "--ranktable", str(table), "--topology", str(nodes), "--label-keys", "a,a"])
    assert usage.value.code == 2
    assert "distinct comma-separated label keys" in capsys.readouterr().err


def test_label_keys_with_another_format_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="label keys apply to the labels format"):
        load_topology(DATA / "topology.fat-tree.conf", label_keys=["a"])


def test_a_backtracking_regex_match_is_linear_time_as_in_volcano() -> None:
    from ranktable.topology import topology_from_hypernodes

    leaf = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "leaf"},
        "spec": {
            "tier": 1,
            "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "^(a+)+$"}}}],
        },
    }
    nodes = [{"metadata": {"name": "a" * 40 + "b"}}, {"metadata": {"name": "aaa"}}]
    started = time.monotonic()
    topo = topology_from_hypernodes([leaf], nodes)
    assert time.monotonic() - started < 1  # Python's re takes minutes on the first name
    assert list(topo.server_leaf) == ["aaa"]
    with pytest.raises(InputError, match="RE2 syntax"):
        topology_from_hypernodes(
            [
                {
                    **leaf,
                    "spec": {
                        **leaf["spec"],
                        "members": [{"type": "Node", "selector": {"regexMatch": {"pattern": "(a)\\1"}}}],
                    },
                }
            ],
            nodes,
        )
