"""Node labels that name the switch of each tier, read from a NodeList.

Keys are given tier 1 first. By default the loader looks for the NVIDIA topology labels
(``network.topology.nvidia.com/{leaf,spine,core}``, as topograph writes them) and, failing those, the
labels the ranktable simulator writes (``topology.ranktable.io/{leaf,spine,core}``); there is no
documented Huawei label. Nodes without the tier-1 label are not in the fabric and are skipped.
Servers are named by node name, with InternalIP / Hostname addresses as aliases.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ranktable.errors import InputError
from ranktable.topology._fields import Field, location, parse_document
from ranktable.topology.k8s_nodes import NodeInfo, node_infos, node_items
from ranktable.topology.model import Switch, Topology

NVIDIA_LABEL_KEYS = (
    "network.topology.nvidia.com/leaf",
    "network.topology.nvidia.com/spine",
    "network.topology.nvidia.com/core",
)
RANKTABLE_LABEL_KEYS = (
    "topology.ranktable.io/leaf",
    "topology.ranktable.io/spine",
    "topology.ranktable.io/core",
)
DEFAULT_LABEL_KEYS = NVIDIA_LABEL_KEYS
KNOWN_LABEL_SETS = (NVIDIA_LABEL_KEYS, RANKTABLE_LABEL_KEYS)


def _choose_keys(labelled: list[dict[str, str]], label_keys: Sequence[str] | None) -> tuple[str, ...]:
    if label_keys is not None:
        keys = tuple(label_keys)
        if not keys or any(not k for k in keys):
            raise InputError("label keys must be a non-empty list of non-empty keys", where="label keys")
        if len(set(keys)) != len(keys):
            raise InputError(f"label keys repeat: {', '.join(keys)}", where="label keys")
        return keys
    for keys in KNOWN_LABEL_SETS:
        if any(keys[0] in labels for labels in labelled):
            return keys
    return KNOWN_LABEL_SETS[0]


def topology_from_node_labels(
    nodes: list[dict[str, Any]],
    label_keys: Sequence[str] | None = None,
    source: str = "nodes",
) -> Topology:
    """Build the tree from per-tier switch labels (``label_keys`` tier 1 first; None = known sets)."""
    infos = node_infos(nodes, source)
    keys = _choose_keys([n.labels for n in infos], label_keys)
    topo = Topology(source=source)
    for tier, key in enumerate(keys, start=1):
        topo.tier_names[tier] = key.rsplit("/", 1)[-1] or key
    declared_by: dict[str, str] = {}  # switch -> where its parent was first stated
    for node in infos:
        if not node.labels.get(keys[0]):
            continue
        chain: list[str] = []
        for key in keys:
            value = node.labels.get(key, "")
            if not value:
                break
            chain.append(value)
        for key in keys[len(chain) :]:
            if node.labels.get(key):
                raise (
                    _labels_field(node)
                    .child(key, node.labels[key])
                    .error(
                        f"names a tier-{keys.index(key) + 1} switch but the label of a lower tier is missing",
                        fix=f"label node {node.name!r} with {keys[len(chain)]}",
                    )
                )
        for tier, switch in enumerate(chain, start=1):
            parent = chain[tier] if tier < len(chain) else None
            existing = topo.switches.get(switch)
            if existing is not None and existing.tier != tier:
                raise (
                    _labels_field(node)
                    .child(keys[tier - 1], switch)
                    .error(
                        f"switch {switch!r} is tier {tier} here but tier {existing.tier} on other nodes",
                        fix="switch names must be unique across tiers",
                    )
                )
            if existing is not None and existing.parent != parent:
                if existing.parent is not None and parent is not None:
                    raise (
                        _labels_field(node)
                        .child(keys[tier], parent)
                        .error(
                            f"puts {switch!r} under {parent!r}, but {declared_by[switch]} puts it under "
                            f"{existing.parent!r}",
                            fix="a switch has one parent; fix the labels",
                        )
                    )
                parent = parent or existing.parent
            if existing is None or existing.parent != parent:
                topo.switches[switch] = Switch(switch, tier, parent)
                declared_by[switch] = _where(node) or source
        topo.attach_server(node.name, chain[0])
        for alias in node.addresses:
            try:
                topo.register_alias(alias, node.name)
            except InputError as err:  # its place, written only now (8,192 nodes)
                raise InputError(err.reason, where=_where(node), fix=err.fix) from None
    if not topo.server_leaf:
        raise InputError(
            f"no node carries the tier-1 label {keys[0]!r}",
            where=source or None,
            fix="pass the label keys your cluster uses (tier 1 first), or label the nodes",
        )
    for tier in [t for t in topo.tier_names if t > topo.tier_count]:
        del topo.tier_names[tier]
    topo.validate()
    return topo


def _labels_field(node: NodeInfo) -> Field:
    return node.field.key("metadata").key("labels")


def _where(node: NodeInfo) -> str | None:
    path = _labels_field(node)
    return location(path.source, path.path)


def load_labels_text(text: str, source: str = "", label_keys: Sequence[str] | None = None) -> Topology:
    return load_labels_document(parse_document(text, source), source, label_keys)


def load_labels_document(doc: Any, source: str = "", label_keys: Sequence[str] | None = None) -> Topology:
    """The parsed NodeList (``kubectl get nodes -o json``, or YAML)."""
    return topology_from_node_labels(node_items(doc, source), label_keys, source)
