"""Write a topology in the cluster formats (HyperNodes, node labels, tor_info, Slurm), as data.

The simulator uses these to stand up a pool whose Kubernetes objects describe a known tree, and the
tests use them to check every loader reads back exactly the tree that was written. Rail-optimised
servers (devices on different leaves) exist only in the tor file and our YAML, so these refuse them.
"""

from __future__ import annotations

import json
from typing import Any

from ranktable.errors import InputError
from ranktable.topology.hypernode import API_GROUP, OVERSUBSCRIPTION_ANNOTATION, UPLINK_ANNOTATION
from ranktable.topology.labels import RANKTABLE_LABEL_KEYS
from ranktable.topology.model import Topology


def _whole_servers(topology: Topology, fmt: str) -> dict[str, list[str]]:
    """Leaf -> servers, refusing servers whose devices span several leaves."""
    by_leaf: dict[str, list[str]] = {leaf: [] for leaf in topology.switches_at(1)}
    for server in topology.servers():
        leaves = topology.leaves_of(server)
        if len(leaves) != 1:
            raise InputError(
                f"server {server!r} spans leaves {', '.join(leaves)}; {fmt} cannot express per-device leaves",
                where=topology.source or None,
                fix="use the YAML or tor-file format for rail-optimised fabrics",
            )
        by_leaf[leaves[0]].append(server)
    return by_leaf


def _members(topology: Topology, by_leaf: dict[str, list[str]]) -> dict[str, list[str]]:
    """Switch -> its servers (tier 1) or child switches, leaving out switches with no server below
    (formats such as HyperNodes and Slurm cannot declare an empty switch)."""
    members: dict[str, list[str]] = {}
    for tier in range(1, topology.tier_count + 1):
        for name in topology.switches_at(tier):
            below = by_leaf[name] if tier == 1 else [c for c in topology.children(name) if c in members]
            if below:
                members[name] = below
    return members


def _num(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def to_hypernodes(topology: Topology) -> list[dict[str, Any]]:
    """One HyperNode per switch: leaves list their servers (as node names) by exactMatch."""
    members_of = _members(topology, _whole_servers(topology, "HyperNodes"))
    out: list[dict[str, Any]] = []
    for sw in sorted(topology.switches.values(), key=lambda s: (-s.tier, s.name)):
        if sw.name not in members_of:
            continue
        kind = "Node" if sw.tier == 1 else "HyperNode"
        members = [{"type": kind, "selector": {"exactMatch": {"name": m}}} for m in members_of[sw.name]]
        metadata: dict[str, Any] = {"name": sw.name}
        annotations = {}
        if sw.uplink_gbps is not None:
            annotations[UPLINK_ANNOTATION] = _num(sw.uplink_gbps)
        if sw.oversubscription != 1.0:
            annotations[OVERSUBSCRIPTION_ANNOTATION] = _num(sw.oversubscription)
        if annotations:
            metadata["annotations"] = annotations
        spec: dict[str, Any] = {"tier": sw.tier}
        if sw.tier in topology.tier_names:
            spec["tierName"] = topology.tier_names[sw.tier]
        spec["members"] = members
        out.append(
            {"apiVersion": f"{API_GROUP}/v1alpha1", "kind": "HyperNode", "metadata": metadata, "spec": spec}
        )
    return out


def to_node_labels(
    topology: Topology, label_keys: tuple[str, ...] = RANKTABLE_LABEL_KEYS
) -> dict[str, dict[str, str]]:
    """Server -> {label key: switch name} for every tier the keys cover (tier 1 first)."""
    if topology.tier_count > len(label_keys):
        raise InputError(
            f"the tree has {topology.tier_count} tiers but only {len(label_keys)} label keys were given",
            where=topology.source or None,
        )
    by_leaf = _whole_servers(topology, "node labels")
    out: dict[str, dict[str, str]] = {}
    for leaf, servers in by_leaf.items():
        path = topology.path(leaf)
        labels = {label_keys[i]: name for i, name in enumerate(path)}
        for server in servers:
            out[server] = dict(labels)
    return out


def to_tor_info(topology: Topology) -> tuple[dict[str, Any], str]:
    """(tor_info, tor_level) for a tree of at most two tiers; named spines use the ``spine_ip`` field."""
    if topology.tier_count > 2:
        raise InputError(
            "tor_info describes at most two tiers (ToR and spine)", where=topology.source or None
        )
    by_leaf = _whole_servers(topology, "tor_info")
    level = "double_layer" if topology.tier_count == 2 else "single_layer"
    tors: list[dict[str, Any]] = []
    for tor_id, leaf in enumerate(sorted(by_leaf)):
        servers = sorted(by_leaf[leaf], key=lambda s: (topology.slice_ids.get(s, 0), s))
        entry: dict[str, Any] = {"tor_id": tor_id, "tor_ip": leaf}
        parent = topology.switches[leaf].parent
        if level == "double_layer":
            if parent is None:
                raise InputError(
                    f"leaf {leaf!r} has no spine in a two-tier tree", where=topology.source or None
                )
            entry["spine_ip"] = parent
        entry["server"] = [
            {"server_ip": s, "npu_count": 8, "slice_id": topology.slice_ids.get(s, i)}
            for i, s in enumerate(servers)
        ]
        tors.append(entry)
    # tor_count is MindCluster's servers per ToR (its slice count), not the number of ToRs
    per_tor = max((len(t["server"]) for t in tors), default=0)
    return {"version": "1.0", "tor_count": per_tor, "server_list": tors}, level


def to_tor_configmap(topology: Topology) -> dict[str, Any]:
    """The MindCluster ConfigMap ``basic-tor-node-cm`` (namespace kube-system) for this tree."""
    info, level = to_tor_info(topology)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "basic-tor-node-cm", "namespace": "kube-system"},
        "data": {"tor_info": json.dumps(info), "tor_level": level},
    }


def to_slurm(topology: Topology) -> str:
    """``topology.conf`` text: one ``SwitchName=`` line per switch, leaves first."""
    members_of = _members(topology, _whole_servers(topology, "Slurm topology.conf"))
    lines = ["# written by ranktable"]
    for sw in sorted(topology.switches.values(), key=lambda s: (s.tier, s.name)):
        if sw.name not in members_of:
            continue
        key = "Nodes" if sw.tier == 1 else "Switches"
        line = f"SwitchName={sw.name} {key}={','.join(members_of[sw.name])}"
        if sw.uplink_gbps is not None:
            line += f" LinkSpeed={_num(sw.uplink_gbps)}"
        lines.append(line)
    return "\n".join(lines) + "\n"
