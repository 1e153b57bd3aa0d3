"""Where a cluster publishes its switch tree: Volcano HyperNodes, MindCluster's ``basic-tor-node-cm``, or
per-node switch labels. The first source that exists and parses wins; node names and IPs become aliases
so rank-table ``server_id``s (host IPs) resolve.
"""

from __future__ import annotations

from typing import Any

from ranktable.cluster.kube import Kube
from ranktable.errors import NotFoundError, RanktableError
from ranktable.topology import (
    Topology,
    add_node_aliases,
    topology_from_hypernodes,
    topology_from_node_labels,
    topology_from_tor_configmap,
)
from ranktable.topology.bandwidth import give_tier_bandwidths

TOR_CONFIGMAP = ("kube-system", "basic-tor-node-cm")


def _hypernodes(kube: Kube, nodes: list[dict[str, Any]]) -> Topology | None:
    items = kube.call(
        kube.custom.list_cluster_custom_object,
        "topology.volcano.sh",
        "v1alpha1",
        "hypernodes",
        what="HyperNodes",
    ).get("items")
    return topology_from_hypernodes(items, nodes) if items else None


def _tor_configmap(kube: Kube, nodes: list[dict[str, Any]]) -> Topology | None:
    namespace, name = TOR_CONFIGMAP
    cm = kube.call(
        kube.core.read_namespaced_config_map, name, namespace, what=f"ConfigMap {namespace}/{name}"
    )
    return topology_from_tor_configmap(cm)


def _node_labels(kube: Kube, nodes: list[dict[str, Any]]) -> Topology | None:
    return topology_from_node_labels(nodes) if nodes else None


SOURCES = (("HyperNodes", _hypernodes), ("basic-tor-node-cm", _tor_configmap), ("node labels", _node_labels))


def cluster_topology(kube: Kube, nodes: list[dict[str, Any]]) -> Topology:
    """The cluster's switch tree from the first source that has one."""
    tried: list[str] = []
    for label, source in SOURCES:
        try:
            topo = source(kube, nodes)
        except RanktableError as exc:
            tried.append(f"{label}: {exc.reason}")
            continue
        if topo is not None:
            add_node_aliases(topo, nodes)
            topo.source = topo.source or label
            give_tier_bandwidths(topo)  # the same figures, whichever source the cluster publishes
            return topo
        tried.append(f"{label}: none")
    raise NotFoundError(
        "the cluster publishes no switch topology (" + "; ".join(tried) + ")",
        fix="pass --topology FILE",
    )
