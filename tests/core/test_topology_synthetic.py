"""synthetic_topology: even blocks, consecutive IPs, rails, and refusal of impossible shapes."""

from __future__ import annotations

from collections import Counter

import pytest

from ranktable.topology import synthetic_topology
from tests.core.test_topology_helpers import raises_input_error


def test_benchmark_shape() -> None:
    topo, ids = synthetic_topology(8192, 256, 16, uplink_gbps=400, oversubscription=2)
    assert len(ids) == len(set(ids)) == 8192
    assert ids[0] == "10.0.0.1" and ids[-1] == "10.0.32.0"
    assert Counter(topo.server_leaf.values()) == Counter({leaf: 32 for leaf in topo.switches_at(1)})
    assert Counter(topo.switches[leaf].parent for leaf in topo.switches_at(1)) == Counter(
        {spine: 16 for spine in topo.switches_at(2)}
    )
    assert topo.switches["leaf-000"].oversubscription == 2
    assert topo.resolve("node-08191") == ids[-1]
    # servers come leaf by leaf
    leaves = [topo.leaf_of(s) for s in ids]
    assert leaves == sorted(leaves)


def test_uneven_counts_and_cores() -> None:
    topo, ids = synthetic_topology(10, 3, 2, 1, ip_base="192.168.1.250", node_names=False)
    assert sorted(Counter(topo.server_leaf.values()).values()) == [3, 3, 4]
    assert ids[-1] == "192.168.2.3"
    assert topo.tier_count == 3 and topo.ancestor("leaf-02", 3) == "core-00"
    assert not topo.aliases


def test_rails() -> None:
    topo, ids = synthetic_topology(8, 8, 2, rails=4)
    assert topo.leaves_of(ids[0]) == ("leaf-00", "leaf-01", "leaf-02", "leaf-03")
    assert topo.leaves_of(ids[-1]) == ("leaf-04", "leaf-05", "leaf-06", "leaf-07")
    assert topo.leaf_of(ids[0], 5) == "leaf-01"
    assert topo.switches["leaf-03"].parent == "spine-00" and topo.switches["leaf-04"].parent == "spine-01"


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"servers": 0, "leaves": 1}, "at least 1"),
        ({"servers": 4, "leaves": 8}, "leave leaves empty"),
        ({"servers": 8, "leaves": 2, "spines": 4}, "at least as many switches"),
        ({"servers": 8, "leaves": 4, "cores": 1}, "cores need spines"),
        ({"servers": 8, "leaves": 6, "rails": 4}, "divisible"),
        ({"servers": 8, "leaves": 2, "ip_base": "300.0.0.1"}, "not an IPv4 address"),
        ({"servers": 8, "leaves": 2, "ip_base": "255.255.255.250"}, "run past"),
    ],
)
def test_rejects_impossible_shapes(kwargs: dict[str, object], reason: str) -> None:
    raises_input_error(lambda: synthetic_topology(**kwargs), "synthetic topology", reason)  # type: ignore[arg-type]
