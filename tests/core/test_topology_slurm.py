"""Slurm topology.conf: tiers from Switches=, hostlists, continuations, and errors naming file:line."""

from __future__ import annotations

import pytest

from ranktable.topology import load_topology, topology_from_slurm
from tests.core.test_topology_helpers import DATA, raises_input_error


def test_sample_builds_three_tiers() -> None:
    topo = load_topology(DATA / "topology.conf")
    assert topo.switches_at(1) == ["leaf01", "leaf02", "leaf03", "leaf04"]
    assert topo.switches_at(2) == ["spine1", "spine2"]
    assert topo.switches_at(3) == ["core"]
    assert topo.switches["leaf03"].parent == "spine2"
    assert topo.switches["spine1"].parent == "core"
    assert topo.servers_of("leaf04") == ["node-07", "node-08"]  # continued line
    assert topo.servers_of("leaf03") == ["node-05", "node-06"]  # lower-case keys, trailing comment
    assert topo.switches["leaf01"].uplink_gbps == 400.0
    assert topo.ancestor("leaf01", 3) == "core"


def test_node_list_makes_ips_resolve() -> None:
    topo = load_topology(DATA / "topology.conf", nodes=DATA / "nodes.json")
    assert topo.resolve("192.168.0.15") == "node-05"


def test_unbalanced_tree_and_single_tier() -> None:
    topo = topology_from_slurm("SwitchName=s0 Nodes=tux[0-3]\nSwitchName=s1 Nodes=tux[4-7]\n")
    assert topo.tier_count == 1 and len(topo.server_leaf) == 8


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        (
            "SwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=n[2-3]\n",
            ["t.conf:2", "node 'n2' is under both 's0' and 's1'"],
        ),
        (
            "SwitchName=s0 Nodes=n1\n\n# c\nSwitchName=top Switches=s[0-1]\n",
            ["t.conf:4", "lists 's1', which is not defined"],
        ),
        ("SwitchName=s0 Nodes=n[1-\n", ["t.conf:1", "bad hostlist", "'[' without ']'"]),
        ("SwitchName=s0 Nodes=n1 Speed=3\n", ["t.conf:1", "unknown key 'Speed'"]),
        ("SwitchName=s0 Nodes=n1\nSwitchName=s0 Nodes=n2\n", ["t.conf:2", "already defined on line 1"]),
        ("Nodes=n1\n", ["t.conf:1", "SwitchName= is missing"]),
        ("SwitchName=s0 Nodes=n1 LinkSpeed=fast\n", ["t.conf:1", "LinkSpeed 'fast' is not a number"]),
        (
            "SwitchName=s0 Nodes=n1 Switches=s1\nSwitchName=s1 Nodes=n2\n",
            ["t.conf:1", "both Nodes= and Switches="],
        ),
        ("SwitchName=a Switches=b\nSwitchName=b Switches=a\n", ["t.conf:", "cycle"]),
        (
            "SwitchName=l0 Nodes=n1\nSwitchName=l1 Nodes=n2\nSwitchName=s0 Switches=l0\n"
            "SwitchName=top Switches=s0,l1\n",
            ["t.conf:4", "joins switches of different tiers (l1 tier 1, s0 tier 2)"],
        ),
        ("BlockName=b1 Nodes=n[1-4]\n", ["t.conf:1", "block topology"]),
        ("SwitchName=s0 Nodes\n", ["t.conf:1", "expected Key=Value"]),
        ("# only comments\n\n", ["t.conf", "defines no switch"]),
        ("SwitchName=s0 \\\n  Nodes=n1 \\\n  Nodes=n2\n", ["t.conf:1", "Nodes is given twice"]),
    ],
)
def test_malformed_topology_conf(text: str, fragments: list[str]) -> None:
    raises_input_error(lambda: topology_from_slurm(text, "t.conf"), *fragments)
