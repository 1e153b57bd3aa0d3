"""HyperNodes resolved to nodes, as Volcano's hypernode controller and network-topology plugin do.

A member selects Nodes (tier-1 HyperNodes) or HyperNodes (higher tiers) by `exactMatch.name`,
`regexMatch.pattern` (RE2, searched in the name) or `labelMatch` (Nodes). `status.nodeCount` is the
number of nodes under a HyperNode, through every tier below it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ranktable.sim.controllers.common import Obj
from ranktable.sim.k8s.resources import HYPERNODES, NODES
from ranktable.sim.k8s.selectors import match_label_selector
from ranktable.sim.k8s.store import Store
from ranktable.sim.regex import search

MAX_TIERS = 16


@dataclass(frozen=True)
class HyperNode:
    name: str
    tier: int
    tier_name: str
    nodes: frozenset[str]


def _matches(selector: Obj, name: str, labels: dict[str, str]) -> bool:
    if "exactMatch" in selector:
        return bool((selector.get("exactMatch") or {}).get("name") == name)
    if "regexMatch" in selector:
        return search(str((selector.get("regexMatch") or {}).get("pattern") or ""), name)
    if "labelMatch" in selector:
        return match_label_selector(selector.get("labelMatch") or {}, labels)
    return False


def resolve(hypernodes: list[Obj], nodes: list[Obj]) -> dict[str, HyperNode]:
    """Every HyperNode with the node names under it (a cycle or a missing member adds nothing)."""
    specs = {h["metadata"]["name"]: h.get("spec") or {} for h in hypernodes}
    node_labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in nodes}
    done: dict[str, frozenset[str]] = {}

    def nodes_of(name: str, depth: int) -> frozenset[str]:
        if name in done:
            return done[name]
        if depth > MAX_TIERS:
            return frozenset()
        found: set[str] = set()
        for member in specs[name].get("members") or []:
            selector = member.get("selector") or {}
            if member.get("type", "Node") == "Node":
                found |= {n for n, labels in node_labels.items() if _matches(selector, n, labels)}
            else:
                for child in specs:
                    if child != name and _matches(selector, child, {}):
                        found |= nodes_of(child, depth + 1)
        done[name] = frozenset(found)
        return done[name]

    out = {}
    for name, spec in specs.items():
        try:
            tier = int(spec.get("tier", 1))
        except (TypeError, ValueError):
            tier = 1
        out[name] = HyperNode(name, tier, str(spec.get("tierName") or ""), nodes_of(name, 0))
    return out


def sync_status(store: Store) -> dict[str, HyperNode]:
    """Set `status.nodeCount` of every HyperNode; returns the resolution for the scheduler."""
    hypernodes, _ = store.list(HYPERNODES)
    resolved = resolve(hypernodes, store.list(NODES)[0])
    for hn in hypernodes:
        count = len(resolved[hn["metadata"]["name"]].nodes)
        if (hn.get("status") or {}).get("nodeCount") != count:

            def update(obj: Obj, count: int = count) -> None:
                obj.setdefault("status", {})["nodeCount"] = count

            store.mutate(HYPERNODES, None, hn["metadata"]["name"], update)
    return resolved
