"""Kubernetes Node objects as ``kubectl get nodes -o json`` (or the Python client's
``sanitize_for_serialization``) gives them: names, addresses and labels.

A rank table names servers by IP (``server_id``), Volcano HyperNodes and labels by node name; the
addresses tie the two together, so loaders register them as aliases.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from ranktable.limits import brief, read_text
from ranktable.topology._fields import Field, location, parse_document
from ranktable.topology.model import Topology

ALIAS_ADDRESS_TYPES = ("InternalIP", "Hostname", "InternalDNS")
_EDGE_SPACE = re.compile(r"^\s|\s$|\s\x00|\x00\s")


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
    if type(items.value) is list and all(
        type(i) is dict and i.get("kind", "Node") == "Node" for i in items.value
    ):
        return list(items.value)  # the usual list of Nodes, without a `Field` per node
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
        plain = _plain_node(item.value)
        if plain is not None and plain[0] not in seen:
            seen.add(plain[0])
            out.append(NodeInfo(*plain, item))
            continue
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


def _trimmed(value: Any) -> bool:
    return type(value) is str and value == value.strip()


def _plain_node(item: Any) -> tuple[str, tuple[str, ...], dict[str, str]] | None:
    """(name, alias addresses, labels) of a Node written as kubectl writes one (strings, no stray
    whitespace), read without a `Field` per value (8,192 nodes: ~0.09 -> ~0.02 s, issue 28); None for
    anything else, which the checked path reads (and reports)."""
    meta = item.get("metadata") if type(item) is dict else None
    if type(meta) is not dict:
        return None
    name, labels = meta.get("name"), meta.get("labels")
    if not name or not _trimmed(name):
        return None
    if labels is None:
        labels = {}
    elif type(labels) is not dict:
        return None
    else:
        try:  # every key and value a string (join refuses others), no value with whitespace at an end
            if _EDGE_SPACE.search("\x00".join(labels.values())) or not isinstance("".join(labels), str):
                return None
        except TypeError:
            return None
    addresses: list[str] = []
    status = item.get("status")
    listed = status.get("addresses") if type(status) is dict else None if status is None else False
    if listed is False or (listed is not None and type(listed) is not list):
        return None
    for addr in listed or ():
        kind = addr.get("type") if type(addr) is dict else False
        if kind is None:
            continue
        if not _trimmed(kind):
            return None
        if kind in ALIAS_ADDRESS_TYPES:
            address = addr.get("address")
            if not address or not _trimmed(address):
                return None
            if address != name and address not in addresses:
                addresses.append(address)
    return name, tuple(addresses), dict(labels)


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
