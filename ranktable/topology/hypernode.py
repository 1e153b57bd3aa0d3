"""Volcano HyperNodes (``topology.volcano.sh/v1alpha1``) resolved against the cluster's Nodes.

Each HyperNode is one switch: ``spec.tier`` is its tier (1 = the one nodes attach to), members of a
tier-1 HyperNode are Nodes, members of a tier-t HyperNode are HyperNodes of tier t-1. A member selects
by ``exactMatch`` (name), ``regexMatch`` (pattern, searched in the name) or ``labelMatch`` (a
Kubernetes LabelSelector; Nodes only). Regex and label matches need the NodeList (``--nodes``);
servers are named by node name with the nodes' InternalIP / Hostname as aliases, so a rank table's
``server_id`` (the node IP) resolves. Optional annotations ``topology.ranktable.io/uplink-gbps`` and
``topology.ranktable.io/oversubscription`` on a HyperNode give its uplink figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ranktable.limits import brief
from ranktable.topology._fields import Field, location, parse_documents
from ranktable.topology.k8s_nodes import NodeInfo, node_infos
from ranktable.topology.label_selector import label_selector_matches
from ranktable.topology.model import Switch, Topology

API_GROUP = "topology.volcano.sh"
SELECTORS = ("exactMatch", "regexMatch", "labelMatch")
UPLINK_ANNOTATION = "topology.ranktable.io/uplink-gbps"
OVERSUBSCRIPTION_ANNOTATION = "topology.ranktable.io/oversubscription"


@dataclass
class _HyperNode:
    name: str
    tier: int
    tier_name: str | None
    origin: Field
    uplink_gbps: float | None = None
    oversubscription: float = 1.0
    nodes: list[str] = field(default_factory=list)
    children: list[tuple[str, Field]] = field(default_factory=list)


# -- reading objects ----------------------------------------------------------------------------
def _read_hypernode(item: Field) -> _HyperNode:
    item.mapping()
    api = item.opt("apiVersion")
    if api is not None and api.text().split("/")[0] != API_GROUP:
        raise api.error(f"expected {API_GROUP}/v1alpha1, got {brief(api.value)}")
    kind = item.opt("kind")
    if kind is not None and kind.text() != "HyperNode":
        raise kind.error(f"expected a HyperNode, got {brief(kind.value)}")
    meta = item.key("metadata")
    name = meta.key("name").text()
    spec = item.key("spec")
    tier = spec.key("tier").integer(minimum=1)
    tier_name = spec.opt("tierName")
    hn = _HyperNode(name, tier, tier_name.text() if tier_name else None, item)
    annotations = meta.opt("annotations")
    if annotations is not None:
        uplink = annotations.opt(UPLINK_ANNOTATION)
        over = annotations.opt(OVERSUBSCRIPTION_ANNOTATION)
        hn.uplink_gbps = uplink.number() if uplink is not None else None
        hn.oversubscription = over.number() if over is not None else 1.0
    members = spec.key("members")
    if type(members.value) is not list:
        next(members.items())  # raises: not a list (no Field per member: a leaf has thousands)
    if not members.value:
        raise spec.child("members", []).error("must list at least one member")
    return hn


def _selector(member: Field) -> tuple[str, Field]:
    selector = member.key("selector")
    given = [key for key in SELECTORS if selector.has(key)]
    if len(given) != 1:
        raise selector.error(
            f"exactly one of {', '.join(SELECTORS)} is required"
            + (f" (found {', '.join(given)})" if given else "")
        )
    old_type = selector.opt("type")  # v1alpha1 before labelMatch: type Exact | Regex
    if (
        old_type is not None
        and {"Exact": "exactMatch", "Regex": "regexMatch"}.get(old_type.text()) != given[0]
    ):
        raise old_type.error(f"type {brief(old_type.value)} does not fit {given[0]}")
    return given[0], selector.key(given[0])


def _pattern(match: Field) -> Any:
    """A regexMatch pattern compiled with RE2, as Volcano does: linear time, so `^(a+)+$` cannot hang."""
    import re2  # google-re2 (not in the launcher's minimal install, which never reads HyperNodes)

    pattern = match.key("pattern")
    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern.text(), options)
    except re2.error as err:
        raise pattern.error(
            f"invalid regular expression (RE2 syntax, as Volcano uses): {brief(str(err))}"
        ) from None


class _Resolver:
    """Turns member selectors into node names / HyperNode names, with errors naming the member."""

    def __init__(self, hypernodes: dict[str, _HyperNode], nodes: list[NodeInfo] | None) -> None:
        self.hypernodes = hypernodes
        self.nodes = nodes
        self.by_name = {n.name: n for n in nodes or []}
        self.warnings: list[str] = []
        self.by_address = {a: n.name for n in nodes or [] for a in n.addresses}

    def node_members(self, how: str, match: Field, member: Field) -> list[str]:
        if how == "exactMatch":
            name = match.key("name").text()
            if self.nodes is None or name in self.by_name:
                return [name]
            hint = f" (it is an address of node {self.by_address[name]!r})" if name in self.by_address else ""
            raise match.child("name", name).error(
                f"node {name!r} is not in the node list{hint}",
                fix="name an existing node, or pass the current node list",
            )
        if self.nodes is None:
            raise match.error(
                f"{how} needs the cluster's node list", fix="pass --nodes (kubectl get nodes -o json)"
            )
        if how == "regexMatch":
            pattern = _pattern(match)
            found = [n.name for n in self.nodes if pattern.search(n.name)]
            what = f"pattern {pattern.pattern!r}"
        else:
            predicate = label_selector_matches(match)
            found = [n.name for n in self.nodes if predicate(n.labels)]
            what = "label selector"
        if not found:
            raise match.error(f"{what} matches no node in the node list")
        return found

    def hypernode_members(self, how: str, match: Field) -> list[str]:
        if how == "labelMatch":
            raise match.error("labelMatch applies to members of type Node only")
        # Volcano accepts a member that names no HyperNode (yet): it contributes nothing. So do we, saying so.
        if how == "exactMatch":
            name = match.key("name").text()
            if name not in self.hypernodes:
                self.warn(
                    match.child("name", name), f"HyperNode {name!r} is not defined; the member is empty"
                )
                return []
            return [name]
        pattern = _pattern(match)
        found = sorted(n for n in self.hypernodes if pattern.search(n))
        if not found:
            self.warn(match, f"pattern {brief(pattern.pattern)} matches no HyperNode; the member is empty")
        return found

    def warn(self, at: Field, message: str) -> None:
        self.warnings.append(f"{location(at.source, at.path)}: {message}")


def _find_cycle(hypernodes: dict[str, _HyperNode]) -> tuple[list[str], Field] | None:
    state: dict[str, int] = {}  # 1 = on the stack, 2 = done

    def visit(name: str, stack: list[str]) -> tuple[list[str], Field] | None:
        state[name] = 1
        stack.append(name)
        for child, member in hypernodes[name].children:
            if state.get(child) == 1:
                return [*stack[stack.index(child) :], child], member
            if child not in state:
                found = visit(child, stack)
                if found:
                    return found
        stack.pop()
        state[name] = 2
        return None

    for name in sorted(hypernodes):
        if name not in state:
            found = visit(name, [])
            if found:
                return found
    return None


def _read_members(by_name: dict[str, _HyperNode], resolver: _Resolver) -> None:
    """Fill each HyperNode's `nodes` (tier 1) and `children` from its members' selectors; a node in two
    tier-1 HyperNodes, a Node member above tier 1 or an unknown member type is an error."""
    node_leaf: dict[str, str] = {}
    known = resolver.by_name if resolver.nodes is not None else None
    for hn in by_name.values():
        members = hn.origin.key("spec").key("members")
        if type(members.value) is not list:
            list(members.items())  # raises: not a list
        for position, fast in enumerate(members.value):
            # `{selector: {exactMatch: {name: N}}, type: Node}`, the common case, read without Fields
            if hn.tier == 1 and type(fast) is dict and fast.get("type") == "Node":
                selector = fast.get("selector")
                exact = selector.get("exactMatch") if type(selector) is dict and len(selector) == 1 else None
                node = exact.get("name") if type(exact) is dict else None
                if (
                    type(node) is str
                    and node
                    and not node[0].isspace()
                    and not node[-1].isspace()
                    and (known is None or node in known)
                ):
                    other = node_leaf.get(node)
                    if other is None:
                        node_leaf[node] = hn.name
                        hn.nodes.append(node)
                        continue
                    if other == hn.name:
                        continue
            member = members.child(position, fast)
            kind = member.key("type").text()
            how, match = _selector(member)
            if kind == "Node":
                if hn.tier != 1:
                    raise member.child("type", kind).error(
                        f"HyperNode {hn.name!r} is tier {hn.tier}; only tier-1 HyperNodes have Node members"
                    )
                for node in resolver.node_members(how, match, member):
                    other = node_leaf.get(node)
                    if other is not None and other != hn.name:
                        raise member.error(
                            f"node {node!r} is in two tier-1 HyperNodes: {other!r} and {hn.name!r}"
                        )
                    if other is None:
                        node_leaf[node] = hn.name
                        hn.nodes.append(node)
            elif kind == "HyperNode":
                for child in resolver.hypernode_members(how, match):
                    hn.children.append((child, member))
            else:
                raise member.child("type", kind).error(
                    f"unknown member type {kind!r}", fix="use Node or HyperNode"
                )


def _parents(by_name: dict[str, _HyperNode]) -> dict[str, str]:
    """{HyperNode: its parent}, each child exactly one tier below its one parent."""
    parent_of: dict[str, str] = {}
    for hn in by_name.values():
        for child, member in hn.children:
            below = by_name[child]
            if below.tier != hn.tier - 1:
                raise member.error(
                    f"HyperNode {hn.name!r} (tier {hn.tier}) contains {child!r} of tier {below.tier}; "
                    f"members must be exactly one tier lower"
                )
            other = parent_of.get(child)
            if other is not None and other != hn.name:
                raise member.error(f"HyperNode {child!r} is a member of both {other!r} and {hn.name!r}")
            parent_of[child] = hn.name
    return parent_of


def topology_from_hypernodes(
    hypernodes: list[dict[str, Any]],
    nodes: list[dict[str, Any]] | None = None,
    source: str = "hypernodes",
    paths: list[str] | None = None,
    nodes_source: str = "nodes",
) -> Topology:
    """Build the tree from HyperNode objects (dicts) and, when given, the cluster's Node objects.

    ``paths`` names each object's place in its file for error messages (default ``items[i]``);
    ``nodes_source`` names the node list in them.
    """
    items = [Field(obj, paths[i] if paths else f"items[{i}]", source) for i, obj in enumerate(hypernodes)]
    if not items:
        raise Field(hypernodes, "", source).error("contains no HyperNode")
    by_name: dict[str, _HyperNode] = {}
    for item in items:
        hn = _read_hypernode(item)
        if hn.name in by_name:
            raise item.key("metadata").child("name", hn.name).error(f"HyperNode {hn.name!r} is defined twice")
        by_name[hn.name] = hn
    infos = node_infos(nodes, nodes_source) if nodes is not None else None
    resolver = _Resolver(by_name, infos)

    _read_members(by_name, resolver)
    cycle = _find_cycle(by_name)
    if cycle is not None:
        names, member = cycle
        raise member.error(f"HyperNode membership forms a cycle: {' -> '.join(names)}")
    parent_of = _parents(by_name)
    topo = Topology(source=source, warnings=list(resolver.warnings))
    for hn in sorted(by_name.values(), key=lambda h: (-h.tier, h.name)):
        topo.switches[hn.name] = Switch(
            hn.name, hn.tier, parent_of.get(hn.name), hn.uplink_gbps, hn.oversubscription
        )
        if hn.tier_name and hn.tier not in topo.tier_names:
            topo.tier_names[hn.tier] = hn.tier_name
    node_by_name = {n.name: n for n in infos or []}
    for hn in by_name.values():
        for node in hn.nodes:
            topo.attach_server(node, hn.name)
            info = node_by_name.get(node)
            if info is not None:
                for alias in info.addresses:
                    topo.register_alias(alias, node, where=location(info.field.source, info.field.path))
    if not topo.server_leaf:
        raise Field(hypernodes, "", source).error("no HyperNode has Node members, so no server is placed")
    topo.validate()
    return topo


def load_hypernodes_text(
    text: str, source: str = "", nodes: list[dict[str, Any]] | None = None, nodes_source: str = "nodes"
) -> Topology:
    """A multi-document YAML of HyperNodes, or a List / HyperNodeList (YAML or JSON)."""
    return load_hypernode_documents(parse_documents(text, source), source, nodes, nodes_source)


def load_hypernode_documents(
    docs: list[Any], source: str = "", nodes: list[dict[str, Any]] | None = None, nodes_source: str = "nodes"
) -> Topology:
    """The parsed documents: HyperNodes, or a List / HyperNodeList."""
    objects: list[dict[str, Any]] = []
    paths: list[str] = []
    for index, doc in enumerate(docs):
        if doc is None:
            continue
        prefix = f"documents[{index}]" if len(docs) > 1 else ""
        field_ = Field(doc, prefix, source)
        kind = doc.get("kind") if isinstance(doc, dict) else None
        if kind in ("List", "HyperNodeList"):
            for item in field_.key("items").items():
                objects.append(item.value)
                paths.append(item.path)
        else:
            field_.mapping()
            objects.append(doc)
            paths.append(prefix)
    return topology_from_hypernodes(objects, nodes, source, paths, nodes_source)
