"""Kubernetes Node objects as ``kubectl get nodes -o json`` (or the Python client's
``sanitize_for_serialization``) gives them: names, addresses and labels.

A rank table names servers by IP (``server_id``), Volcano HyperNodes and labels by node name; the
addresses tie the two together, so loaders register them as aliases.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ranktable.limits import brief, read_text
from ranktable.topology._fields import Field, location, parse_document
from ranktable.topology.model import Topology

ALIAS_ADDRESS_TYPES = ("InternalIP", "Hostname", "InternalDNS")


@dataclass(frozen=True)
class NodeInfo:
    name: str
    addresses: tuple[str, ...]
    labels: dict[str, str]
    field: Field


def node_items(data: Any, source: str) -> list[dict[str, Any]]:
    """The Node dicts of a NodeList / List / plain list, checked to be Nodes."""
    root = Field(data, "", source)
    if isinstance(data, list):
        items = root
    else:
        kind = root.opt("kind")
        if kind is not None and kind.text() not in ("NodeList", "List"):
            raise kind.error(f"expected a NodeList (kubectl get nodes -o json), got {kind.value!r}")
        items = root.key("items")
    out: list[dict[str, Any]] = []
    for item in items.items():
        kind = item.opt("kind")
        if kind is not None and kind.text() != "Node":
            raise kind.error(f"expected a Node, got {brief(kind.value)}")
        out.append(item.mapping())
    return out


def read_nodes(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Read a NodeList file (JSON or YAML)."""
    name = os.fspath(path)
    text = read_text(path, what="node list file")
    return node_items(parse_document(text, name), name)


def node_infos(nodes: list[dict[str, Any]], source: str = "nodes") -> list[NodeInfo]:
    """Names, alias addresses and labels of each node; duplicate names are an error."""
    out: list[NodeInfo] = []
    seen: set[str] = set()
    for item in Field(nodes, "items", source).items():
        meta = item.key("metadata")
        name = meta.key("name").text()
        if name in seen:
            raise meta.child("name", name).error(f"node {name!r} is listed twice")
        seen.add(name)
        labels: dict[str, str] = {}
        found = meta.opt("labels")
        if found is not None:
            for key, value in found.entries():
                labels[key] = value.text(allow_empty=True)
        addresses: list[str] = []
        status = item.opt("status")
        listed = status.opt("addresses") if status is not None else None
        if listed is not None:
            for addr in listed.items():
                kind = addr.opt("type")
                if kind is not None and kind.text() in ALIAS_ADDRESS_TYPES:
                    address = addr.key("address").text()
                    if address != name and address not in addresses:
                        addresses.append(address)
        out.append(NodeInfo(name, tuple(addresses), labels, item))
    return out


def add_node_aliases(topology: Topology, nodes: list[dict[str, Any]], source: str = "nodes") -> int:
    """Register each node's name and addresses as aliases of the server any of them names.

    Lets a topology keyed by IP (tor_info, Slurm, our YAML) resolve node names and vice versa.
    Returns how many nodes matched a server.
    """
    matched = 0
    for node in node_infos(nodes, source):
        keys = (node.name, *node.addresses)
        found = {key: topology.resolve(key) for key in keys}
        servers = sorted({s for s in found.values() if s is not None})
        if not servers:
            continue
        if len(servers) > 1:
            detail = ", ".join(f"{key} -> {server}" for key, server in found.items() if server is not None)
            raise node.field.error(
                f"node {node.name!r} and its addresses name different servers ({detail})",
                fix="the node list and the topology disagree; use the current node list",
            )
        server = servers[0]
        matched += 1
        for key in keys:
            topology.register_alias(key, server, where=location(node.field.source, node.field.path))
    return matched
