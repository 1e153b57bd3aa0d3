"""Each cluster format written by ranktable.topology.export reads back as the same tree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ranktable.topology import (
    RANKTABLE_LABEL_KEYS,
    Topology,
    load_topology,
    synthetic_topology,
    to_hypernodes,
    to_node_labels,
    to_slurm,
    to_tor_configmap,
    to_tor_info,
    topology_from_hypernodes,
    topology_from_node_labels,
    topology_from_slurm,
    topology_from_tor_configmap,
    topology_from_tor_info,
)
from tests.core.test_topology_helpers import raises_input_error


def shape(topo: Topology) -> tuple[set[tuple[str, int, str | None]], dict[str, str]]:
    return {(s.name, s.tier, s.parent) for s in topo.switches.values()}, dict(topo.server_leaf)


def node_list(topo: Topology, labels: dict[str, dict[str, str]] | None = None) -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": server, "labels": (labels or {}).get(server, {})},
            "status": {"addresses": [{"type": "Hostname", "address": f"host-{server}"}]},
        }
        for server in topo.servers()
    ]


TREES = st.builds(
    lambda leaves, per_leaf, spines, cores: synthetic_topology(
        leaves * per_leaf,
        leaves,
        min(spines, leaves),
        min(cores, spines, leaves) if spines else 0,
        uplink_gbps=100.0,
        oversubscription=2.0,
    )[0],
    st.integers(1, 12),
    st.integers(1, 4),
    st.integers(0, 4),
    st.integers(0, 2),
)


@settings(max_examples=25, deadline=None)
@given(TREES)
def test_hypernodes_labels_and_slurm_round_trip(topo: Topology) -> None:
    from_hn = topology_from_hypernodes(to_hypernodes(topo), node_list(topo))
    assert shape(from_hn) == shape(topo)
    assert from_hn.switches == topo.switches  # uplink annotations included
    assert from_hn.resolve(f"host-{topo.servers()[0]}") == topo.servers()[0]
    from_labels = topology_from_node_labels(node_list(topo, to_node_labels(topo)))
    assert shape(from_labels) == shape(topo)
    from_slurm = topology_from_slurm(to_slurm(topo))
    assert shape(from_slurm) == shape(topo)


@settings(max_examples=25, deadline=None)
@given(TREES.filter(lambda t: t.tier_count <= 2))
def test_tor_info_round_trips(topo: Topology) -> None:
    info, level = to_tor_info(topo)
    assert shape(topology_from_tor_info(json.dumps(info), level)) == shape(topo)
    assert shape(topology_from_tor_configmap(to_tor_configmap(topo))) == shape(topo)


def test_written_files_are_detected_and_loaded(tmp_path: Path) -> None:
    topo, _ = synthetic_topology(24, 6, 2)
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({"kind": "List", "items": node_list(topo, to_node_labels(topo))}))
    files = {
        "hn.yaml": yaml.safe_dump_all(to_hypernodes(topo)),
        "cm.yaml": yaml.safe_dump(to_tor_configmap(topo)),
        "topology.conf": to_slurm(topo),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
        assert shape(load_topology(tmp_path / name, nodes=nodes)) == shape(topo), name
    assert shape(load_topology(nodes)) == shape(topo)


def test_exporters_refuse_what_the_format_cannot_say() -> None:
    rails, _ = synthetic_topology(4, 4, 1, rails=2)
    for export in (to_hypernodes, to_slurm, to_tor_info, to_node_labels):
        raises_input_error(lambda export=export: export(rails), "spans leaves", "rail-optimised")
    three, _ = synthetic_topology(8, 4, 2, 1)
    raises_input_error(lambda: to_tor_info(three), "at most two tiers")
    raises_input_error(
        lambda: to_node_labels(three, RANKTABLE_LABEL_KEYS[:2]), "3 tiers but only 2 label keys"
    )


@pytest.mark.parametrize("spines", [0, 1, 3])
def test_empty_switches_are_left_out(spines: int) -> None:
    topo, _ = synthetic_topology(6, 3, spines)
    topo.add_switch(type(topo.switches["leaf-00"])("lonely-leaf", 1, "spine-00" if spines else None))
    assert "lonely-leaf" not in topology_from_slurm(to_slurm(topo)).switches
    assert "lonely-leaf" not in topology_from_hypernodes(to_hypernodes(topo)).switches
