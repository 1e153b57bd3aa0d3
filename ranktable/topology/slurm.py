"""Slurm ``topology.conf`` (tree plugin): ``SwitchName=... Nodes=... | Switches=... [LinkSpeed=...]``.

Switches with ``Nodes=`` are tier 1; a switch with ``Switches=`` sits one tier above its children,
which must all be of one tier (ranktable needs a levelled tree). Keys are case-insensitive, ``#``
starts a comment, a trailing backslash continues a line, names take hostlist expressions.
``LinkSpeed`` is read as the switch's uplink in Gb/s (Slurm itself treats its unit as arbitrary).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ranktable.errors import InputError
from ranktable.topology.hostlist import HostlistError, expand_hostlist
from ranktable.topology.model import Switch, Topology

KEYS = {"switchname": "SwitchName", "nodes": "Nodes", "switches": "Switches", "linkspeed": "LinkSpeed"}
BLOCK_KEYS = {"blockname", "blocksizes"}


@dataclass
class _Line:
    number: int
    switch: str
    nodes: list[str] = field(default_factory=list)
    switches: list[str] = field(default_factory=list)
    link_speed: float | None = None


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) with comments removed and continuations joined."""
    out: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].rstrip()
        if not pending:
            start = number
        if line.endswith("\\"):
            pending.append(line[:-1])
            continue
        pending.append(line)
        joined = " ".join(pending).strip()
        pending = []
        if joined:
            out.append((start, joined))
    if pending and " ".join(pending).strip():
        out.append((start, " ".join(pending).strip()))
    return out


def _parse_line(number: int, text: str, where: str) -> _Line:
    fields: dict[str, str] = {}
    for token in text.split():
        key, sep, value = token.partition("=")
        low = key.lower()
        if not sep:
            raise InputError(f"expected Key=Value, got {token!r}", where=where)
        if low in BLOCK_KEYS:
            raise InputError(
                "block topology (BlockName=) is not supported",
                where=where,
                fix="use the tree form (SwitchName=)",
            )
        if low not in KEYS:
            raise InputError(f"unknown key {key!r}", where=where, fix=f"use {', '.join(KEYS.values())}")
        if low in fields:
            raise InputError(f"{KEYS[low]} is given twice", where=where)
        if not value:
            raise InputError(f"{KEYS[low]} has no value", where=where)
        fields[low] = value
    if "switchname" not in fields:
        raise InputError("line does not start a switch (SwitchName= is missing)", where=where)
    try:
        names = expand_hostlist(fields["switchname"])
        if len(names) != 1:
            raise InputError(
                f"SwitchName must name one switch, {fields['switchname']!r} names {len(names)}", where=where
            )
        line = _Line(number, names[0])
        if "nodes" in fields:
            line.nodes = expand_hostlist(fields["nodes"])
        if "switches" in fields:
            line.switches = expand_hostlist(fields["switches"])
    except HostlistError as err:
        raise InputError(f"bad hostlist: {err}", where=where) from None
    if line.nodes and line.switches:
        raise InputError(
            f"switch {line.switch!r} has both Nodes= and Switches=",
            where=where,
            fix="ranktable needs servers on tier-1 switches only; put the nodes under a switch of their own",
        )
    if not line.nodes and not line.switches:
        raise InputError(f"switch {line.switch!r} has neither Nodes= nor Switches=", where=where)
    if "linkspeed" in fields:
        try:
            speed = float(fields["linkspeed"])
        except ValueError:
            raise InputError(f"LinkSpeed {fields['linkspeed']!r} is not a number", where=where) from None
        if not speed > 0:
            raise InputError("LinkSpeed must be greater than 0", where=where)
        line.link_speed = speed
    return line


def topology_from_slurm(text: str, source: str = "topology.conf") -> Topology:
    """Parse ``topology.conf`` text; errors name ``source:line``."""
    lines: dict[str, _Line] = {}
    for number, content in _logical_lines(text):
        where = f"{source}:{number}"
        line = _parse_line(number, content, where)
        if line.switch in lines:
            raise InputError(
                f"switch {line.switch!r} is already defined on line {lines[line.switch].number}", where=where
            )
        lines[line.switch] = line
    if not lines:
        raise InputError("defines no switch (expected lines like SwitchName=s0 Nodes=n[01-16])", where=source)

    parents: dict[str, list[str]] = {}
    node_leaf: dict[str, str] = {}
    for line in lines.values():
        where = f"{source}:{line.number}"
        for child in line.switches:
            if child not in lines:
                raise InputError(f"switch {line.switch!r} lists {child!r}, which is not defined", where=where)
            if line.switch not in parents.setdefault(child, []):
                parents[child].append(line.switch)  # several parents: a fat tree, merged below
        for node in line.nodes:
            if node in node_leaf and node_leaf[node] != line.switch:
                raise InputError(
                    f"node {node!r} is under both {node_leaf[node]!r} and {line.switch!r}", where=where
                )
            node_leaf[node] = line.switch
        if line.switch in line.switches:
            raise InputError(f"switch {line.switch!r} lists itself", where=where)

    tiers: dict[str, int] = {}

    def tier_of(name: str, path: list[str]) -> int:
        if name in tiers:
            return tiers[name]
        line = lines[name]
        where = f"{source}:{line.number}"
        if name in path:
            cycle = " -> ".join([*path[path.index(name) :], name])
            raise InputError(f"switches form a cycle: {cycle}", where=where)
        if line.nodes:
            tiers[name] = 1
            return 1
        below = {child: tier_of(child, [*path, name]) for child in line.switches}
        if len(set(below.values())) != 1:
            detail = ", ".join(f"{c} tier {t}" for c, t in sorted(below.items()))
            raise InputError(
                f"switch {name!r} joins switches of different tiers ({detail})",
                where=where,
                fix="ranktable needs a levelled tree: every switch's children at one tier",
            )
        tiers[name] = next(iter(below.values())) + 1
        return tiers[name]

    for name in lines:
        tier_of(name, [])
    group = _merge_parallel_switches(parents, tiers)
    topo = Topology(source=source)
    for members in sorted(set(group.values())):
        name = "+".join(members)
        above = {group[p] for m in members for p in parents.get(m, [])}
        speeds = {lines[m].link_speed for m in members}
        parent = "+".join(next(iter(above))) if above else None
        topo.switches[name] = Switch(
            name, tiers[members[0]], parent, speeds.pop() if len(speeds) == 1 else None
        )
        if len(members) > 1:
            topo.warnings.append(
                f"{source}: switches {', '.join(members)} share the switches below them (a fat tree); "
                f"planned as one logical switch {name}"
            )
    for node, leaf in node_leaf.items():
        topo.attach_server(node, "+".join(group[leaf]))
    topo.validate()
    return topo


def _merge_parallel_switches(
    parents: dict[str, list[str]], tiers: dict[str, int]
) -> dict[str, tuple[str, ...]]:
    """Each switch's group: switches that share a child (a fat tree's parallel spines) become one.

    Merging goes tier by tier upwards, so the parents of merged spines are merged in turn; the result
    is the tree the planner needs, with one logical switch per group of parallel switches.
    """
    root = {name: name for name in tiers}

    def find(name: str) -> str:
        while root[name] != name:
            root[name] = root[root[name]]
            name = root[name]
        return name

    for tier in sorted(set(tiers.values())):
        groups: dict[str, set[str]] = {}
        for child in (n for n, t in tiers.items() if t == tier):
            groups.setdefault(find(child), set()).update(find(p) for p in parents.get(child, []))
        for above in groups.values():
            first, *rest = sorted(above) or [""]
            for other in rest:
                root[find(other)] = find(first)
    members: dict[str, list[str]] = {}
    for name in tiers:
        members.setdefault(find(name), []).append(name)
    return {name: tuple(sorted(members[find(name)])) for name in tiers}
