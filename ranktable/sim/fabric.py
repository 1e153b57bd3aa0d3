"""The simulated pool's machines: which nodes exist, their addresses and the switch each hangs off.

One description feeds every topology source the product reads (node labels, HyperNodes, the
MindCluster `basic-tor-node-cm`, the rank table's tor file) so they always agree.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from pathlib import Path

from ranktable.errors import InputError

LEAF_LABEL = "topology.ranktable.io/leaf"
SPINE_LABEL = "topology.ranktable.io/spine"
NPU_LABEL = "accelerator/huawei-npu"
NPU_RESOURCE = "huawei.com/ascend-1980"


@dataclass(frozen=True)
class Flavour:
    """A node flavour; the default is the Snt9B bare-metal server."""

    name: str = "Snt9B"
    npus: int = 8
    cpu: int = 192
    memory_gi: int = 1536


@dataclass(frozen=True)
class SimNode:
    name: str
    ip: str
    leaf: str
    spine: str | None
    index: int
    leaf_index: int
    slot: int  # position under its leaf (the tor file's slice_id)
    flavour: Flavour = Flavour()

    @property
    def tor_ip(self) -> str:
        return f"10.0.{self.leaf_index // 250}.{self.leaf_index % 250 + 1}"

    def device_ip(self, device: int) -> str:
        """The NPU's RoCE address (`/etc/hccn.conf` address_N on a real server)."""
        return f"29.{1 + self.index // 250}.{self.index % 250}.{device + 1}"

    def super_device_id(self, device: int) -> int:
        return self.index * self.flavour.npus + device


def _dns(name: str) -> str:
    text = re.sub(r"[^a-z0-9.-]+", "-", name.lower()).strip("-.")
    return text or "node"


def _node_ip(index: int) -> str:
    return f"192.168.{index // 240}.{11 + index % 240}"


def default_fabric(nodes: int = 8, leaves: int = 2, flavour: Flavour | None = None) -> list[SimNode]:
    """`nodes` servers spread over `leaves` leaves in contiguous blocks, one spine above them."""
    if nodes < 1:
        raise InputError(
            f"--nodes {nodes}: a pool needs at least 1 node", where="--nodes", fix="use 1 or more"
        )
    if leaves < 1 or leaves > nodes:
        raise InputError(
            f"--leaves {leaves}: must be between 1 and the node count ({nodes})",
            where="--leaves",
            fix=f"use 1..{nodes}",
        )
    flav = flavour or Flavour()
    spine = "spine-0" if leaves > 1 else None
    out: list[SimNode] = []
    slots: dict[int, int] = {}
    for i in range(nodes):
        leaf_index = i * leaves // nodes
        slot = slots.get(leaf_index, 0)
        slots[leaf_index] = slot + 1
        out.append(SimNode(f"node-{i}", _node_ip(i), f"leaf-{leaf_index}", spine, i, leaf_index, slot, flav))
    return out


def fabric_from_topology(path: Path, flavour: Flavour | None = None) -> list[SimNode]:
    """Nodes from a topology file in any format `ranktable.topology.load_topology` reads."""
    try:
        from ranktable.topology import load_topology
    except ImportError as exc:
        raise InputError("this build cannot read topology files", where=str(path)) from exc
    topo = load_topology(path)
    flav = flavour or Flavour()
    leaves = sorted({leaf for leaf in topo.server_leaf.values()})
    by_server_aliases: dict[str, list[str]] = {}
    for alias, server in topo.aliases.items():
        by_server_aliases.setdefault(server, []).append(alias)
    out: list[SimNode] = []
    slots: dict[str, int] = {}
    used_names: set[str] = set()
    for index, server in enumerate(
        sorted(topo.server_leaf, key=lambda s: (leaves.index(topo.server_leaf[s]), s))
    ):
        leaf = topo.server_leaf[server]
        candidates = [server, *sorted(by_server_aliases.get(server, []))]
        ip = next((c for c in candidates if _is_ipv4(c)), _node_ip(index))
        name = next((_dns(c) for c in candidates if not _is_ipv4(c)), f"node-{index}")
        if name in used_names:
            name = f"{name}-{index}"
        used_names.add(name)
        spine = topo.ancestor(leaf, 2)
        slot = slots.get(leaf, 0)
        slots[leaf] = slot + 1
        out.append(
            SimNode(
                name, ip, _dns(leaf), _dns(spine) if spine else None, index, leaves.index(leaf), slot, flav
            )
        )
    if not out:
        raise InputError("the topology has no servers", where=str(path))
    return out


def _is_ipv4(text: str) -> bool:
    try:
        ipaddress.IPv4Address(text)
    except ValueError:
        return False
    return True
