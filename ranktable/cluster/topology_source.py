"""Where a cluster publishes its switch tree: Volcano HyperNodes, MindCluster's ``basic-tor-node-cm``, or
per-node switch labels. The first source that exists and parses wins; node names and IPs become aliases
so rank-table ``server_id``s (host IPs) resolve.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ranktable.cluster.kube import Kube
from ranktable.errors import NotFoundError, RanktableError

if TYPE_CHECKING:  # each reader is imported by its source, when that source is tried (#28: `job describe`)
    from ranktable.topology import Topology

TOR_CONFIGMAP = ("kube-system", "basic-tor-node-cm")


def list_hypernodes(kube: Kube) -> list[dict[str, Any]]:
    return (
        kube.call(
            kube.custom.list_cluster_custom_object,
            "topology.volcano.sh",
            "v1alpha1",
            "hypernodes",
            what="HyperNodes",
        ).get("items")
        or []
    )


def _hypernodes(kube: Kube, nodes: list[dict[str, Any]]) -> Topology | None:
    return _from_hypernodes(list_hypernodes(kube), nodes)


def _from_hypernodes(items: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> Topology | None:
    if not items:
        return None
    from ranktable.topology import topology_from_hypernodes

    return topology_from_hypernodes(items, nodes)


def _tor_configmap(kube: Kube, nodes: list[dict[str, Any]]) -> Topology | None:
    namespace, name = TOR_CONFIGMAP
    cm = kube.call(
        kube.core.read_namespaced_config_map, name, namespace, what=f"ConfigMap {namespace}/{name}"
    )
    from ranktable.topology import topology_from_tor_configmap

    return topology_from_tor_configmap(cm)


def _node_labels(kube: Kube, nodes: list[dict[str, Any]]) -> Topology | None:
    if not nodes:
        return None
    from ranktable.topology import topology_from_node_labels

    return topology_from_node_labels(nodes)


SOURCES = (("HyperNodes", _hypernodes), ("basic-tor-node-cm", _tor_configmap), ("node labels", _node_labels))


def cluster_topology(
    kube: Kube, nodes: list[dict[str, Any]], hypernodes: list[dict[str, Any]] | RanktableError | None = None
) -> Topology:
    """The cluster's switch tree from the first source that has one. ``hypernodes``: their listing (or
    the error reading it), when the caller read it beside the nodes (`job describe`: one round trip less)."""
    from ranktable.topology import add_node_aliases
    from ranktable.topology.bandwidth import give_tier_bandwidths

    tried: list[str] = []
    for label, source in SOURCES:
        try:
            if source is _hypernodes and hypernodes is not None:
                if isinstance(hypernodes, RanktableError):
                    raise hypernodes
                topo = _from_hypernodes(hypernodes, nodes)
            else:
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
