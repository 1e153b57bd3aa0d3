"""A small example pool shipped inside the package, so `ranktable demo` works with no cluster at all.

16 Atlas 800T A2 servers (8 NPUs each) under 4 leaves (uplinks oversubscribed 2:1) and 2 spines. The
rank table is in pod-index order as the platform fills it: the scheduler spread the pods over the
leaves, so the default ring crosses a leaf on every edge, which is what route planning fixes.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

from ranktable.hccl import RankTable, parse_rank_table
from ranktable.topology import Topology
from ranktable.topology.yaml_format import load_yaml_topology

RANKTABLE_FILE = "jobstart_hccl.json"
TOPOLOGY_FILE = "topology.yaml"


@dataclass(frozen=True)
class ExamplePool:
    """The example's rank table and topology, with the file names they came from."""

    table: RankTable
    topology: Topology
    ranktable_source: str
    topology_source: str


def example_text(name: str) -> str:
    """The text of one shipped example file (`jobstart_hccl.json` or `topology.yaml`)."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def load_example_pool() -> ExamplePool:
    """Parse the shipped example: the platform's rank table and the pool's topology."""
    rank_source = f"{__package__}/{RANKTABLE_FILE}"
    topo_source = f"{__package__}/{TOPOLOGY_FILE}"
    table = parse_rank_table(example_text(RANKTABLE_FILE), rank_source)
    topology = load_yaml_topology(example_text(TOPOLOGY_FILE), topo_source)
    return ExamplePool(table, topology, rank_source, topo_source)
