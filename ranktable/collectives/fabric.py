"""The switch tree as integer arrays: per-tier ancestors of every leaf and the uplink lanes of every
switch, so a step's flows are counted and shared out with a few numpy passes.

A switch whose uplinks are oversubscribed r:1 has (NPU ports below it) / r uplink "lanes", each as fast
as one NPU NIC (or `uplink_gbps` of capacity when the topology says). Every flow that leaves a switch's
subtree takes one lane-share of its uplink; when flows outnumber lanes each gets lanes/flows of a NIC.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ranktable.topology.model import Topology


@dataclass
class FlowLoad:
    """One step's flows on the tree."""

    factor: float  # the slowest flow's share of a NIC (1 = full speed)
    max_uplink_flows: int  # most flows through one switch uplink (one direction)
    busiest_uplink: str | None
    crossings_per_tier: list[int]  # flows whose endpoints sit under different tier-k switches
    superpod_crossings: int = 0  # flows between SuperPoDs (A3), when the caller knows them


class Fabric:
    """Integer codes for switches, per-tier ancestors of every leaf and uplink lanes, built once."""

    def __init__(self, topology: Topology, devices_per_server: int, nic_gbps: float) -> None:
        self.tiers = max(topology.tier_count, 1)
        self.names = sorted(topology.switches)
        self.code = {name: i for i, name in enumerate(self.names)}
        count = len(self.names)
        # anc[k, s] = code of the tier-(k+1) switch above switch s (-1 if none); unknown leaf = index count
        self.anc = np.full((self.tiers, count + 1), -1, dtype=np.int64)
        for name, i in self.code.items():
            for k in range(self.tiers):
                above = topology.ancestor(name, k + 1)
                if above is not None:
                    self.anc[k, i] = self.code[above]
        self.lanes = self._lanes(topology, devices_per_server, nic_gbps)

    def _lanes(self, topology: Topology, devices_per_server: int, nic_gbps: float) -> np.ndarray:
        ports = np.zeros(len(self.names), dtype=np.float64)
        railed = {server for server, _ in topology.device_leaf}
        whole = (
            topology.server_leaf.values()
            if not railed
            else (leaf for server, leaf in topology.server_leaf.items() if server not in railed)
        )
        # ports per leaf counted per leaf, not added one server at a time (whole numbers: sums are exact)
        for leaf, count in Counter(topology.device_leaf.values()).items():
            if leaf in self.code:
                ports[self.code[leaf]] += count
        for leaf, count in Counter(whole).items():
            if leaf in self.code:
                ports[self.code[leaf]] += count * devices_per_server
        lanes = np.zeros(len(self.names), dtype=np.float64)
        by_tier = sorted(topology.switches.values(), key=lambda sw: sw.tier)
        down = ports.copy()
        for sw in by_tier:  # children before parents, so `down` of a parent is complete when reached
            i = self.code[sw.name]
            if sw.uplink_gbps:
                lanes[i] = sw.uplink_gbps / 8 / nic_gbps
            else:
                lanes[i] = down[i] / sw.oversubscription
            if sw.parent is not None and sw.parent in self.code:
                down[self.code[sw.parent]] += lanes[i]
        return np.maximum(lanes, 1e-9)

    def leaf_code(self, leaf: str | None) -> int:
        return self.code.get(leaf, len(self.names)) if leaf is not None else len(self.names)

    def load(self, src: np.ndarray, dst: np.ndarray, weight: np.ndarray | None = None) -> FlowLoad:
        """Flows leaf `src[i]` -> leaf `dst[i]`, all at once; `weight[i]` (> 0) identical flows each."""
        if src.size == 0:
            return FlowLoad(1.0, 0, None, [0] * self.tiers)
        factor = 1.0
        most, where = 0, None
        crossings: list[int] = []
        for k in range(self.tiers):
            a = self.anc[k, src]
            b = self.anc[k, dst]
            cross = (a != b) & (a >= 0) & (b >= 0)
            if not cross.any():
                crossings.append(0)
                continue
            ac, bc = a[cross], b[cross]
            w = None if weight is None else weight[cross]
            crossings.append(int(ac.size if w is None else w.sum()))
            up = np.bincount(ac, weights=w, minlength=len(self.names))
            down = np.bincount(bc, weights=w, minlength=len(self.names))
            load = np.maximum(up, down)
            busiest = int(load.argmax())
            if load[busiest] > most:
                most, where = int(load[busiest]), self.names[busiest]
            share = np.minimum(self.lanes / np.maximum(up, 1), self.lanes / np.maximum(down, 1))
            # the slowest flow: min over flows of min(share[src], share[dst]) = min over used switches
            factor = min(factor, float(share[up > 0].min()), float(share[down > 0].min()))
        return FlowLoad(min(1.0, factor), most, where, crossings)

    def flows(self, src: np.ndarray, dst: np.ndarray) -> tuple[float, int, str | None]:
        """(slowest flow as a NIC fraction, most flows on one uplink, where) — the ring view."""
        found = self.load(src, dst)
        return found.factor, found.max_uplink_flows, found.busiest_uplink
