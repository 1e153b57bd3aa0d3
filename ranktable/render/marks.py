"""Ranks marked on the layout (the first failing rank, stragglers, hung ranks) and the switches they share.

A mark names a rank of the planned table (the rank the process trained as). It is drawn on the same
physical NPU (server, device) in both panels, so the given panel shows where that NPU sat in the
platform's order. A switch with two or more marked ranks below it is highlighted: a slow or silent
leaf shows up as the one switch several marks share.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ranktable.hccl.model import RankTable
from ranktable.render.ring import PlacedServer
from ranktable.topology.model import Topology

# Kinds, most important first: a rank with several kinds shows the first.
MARK_KINDS = ("first-failure", "hung", "straggler")
MARK_LABELS = {"first-failure": "first failing rank", "hung": "hung rank", "straggler": "straggler"}
MARK_COLOURS = {"first-failure": "#c92a2a", "hung": "#7048e8", "straggler": "#f08c00"}
MARK_DASHES = {"first-failure": "", "hung": "2 2", "straggler": "5 2"}


def check_marks(marks: Mapping[int, str]) -> dict[int, str]:
    """The marks as {rank: kind}; an unknown kind is a programming error, named with the allowed ones."""
    for rank, kind in marks.items():
        if kind not in MARK_KINDS:
            allowed = ", ".join(MARK_KINDS)
            raise ValueError(f"mark for rank {rank}: unknown kind {kind!r}; use one of {allowed}")
    return dict(marks)


def strongest(kinds: Iterable[str]) -> str:
    """The kind that wins when one NPU carries several marks."""
    return min(kinds, key=MARK_KINDS.index)


@dataclass
class PanelMarks:
    """Marks of one panel: rank id in that panel's table -> kind, and per server its marked ranks."""

    by_rank: dict[int, str] = field(default_factory=dict)

    def of_server(self, server: PlacedServer) -> dict[int, str]:
        return {r: self.by_rank[r] for r in server.ranks if r in self.by_rank}


def panel_marks(marks: Mapping[int, str], planned: RankTable, table: RankTable) -> PanelMarks:
    """`marks` (planned-table rank ids) moved onto `table`'s rank ids through the physical NPU."""
    if not marks:
        return PanelMarks()
    where = {
        device.rank_id: (server.server_id, device.device_id)
        for server in planned.servers
        for device in server.devices
        if device.rank_id in marks
    }
    rank_at = {(s.server_id, d.device_id): d.rank_id for s in table.servers for d in s.devices}
    out: dict[int, str] = {}
    for rank, kind in marks.items():
        here = rank_at.get(where[rank]) if rank in where else None
        if here is not None:
            out[here] = strongest([kind, out[here]]) if here in out else kind
    return PanelMarks(out)


def marks_per_switch(
    marks: PanelMarks, placed: list[PlacedServer], topology: Topology
) -> dict[str, dict[str, int]]:
    """Per switch, how many marked ranks of each kind sit below it (every tier up to the root)."""
    counts: dict[str, dict[str, int]] = {}
    for server in placed:
        marked = marks.of_server(server)
        if not marked or not server.leaf:
            continue
        for switch in topology.path(server.leaf):
            per_kind = counts.setdefault(switch, {})
            for kind in marked.values():
                per_kind[kind] = per_kind.get(kind, 0) + 1
    return counts


def shared_switches(counts: dict[str, dict[str, int]], topology: Topology) -> dict[str, dict[str, int]]:
    """The lowest switches that two or more marked ranks share: a switch counts when no switch below it
    carries all of its marks (so a spine is not reported again for marks that all sit on one leaf)."""
    total = {name: sum(kinds.values()) for name, kinds in counts.items()}
    covered: set[str] = set()
    for name in counts:
        switch = topology.switches.get(name)
        parent = switch.parent if switch is not None else None
        if parent and total.get(parent) == total[name]:
            covered.add(parent)
    return {name: kinds for name, kinds in counts.items() if total[name] >= 2 and name not in covered}


def format_kinds(kinds: Mapping[str, int]) -> str:
    """ "first-failure:1,straggler:2" in kind order."""
    return ",".join(f"{k}:{kinds[k]}" for k in MARK_KINDS if kinds.get(k))


def mark_style() -> str:
    """CSS for marked NPUs, leaf groups and switches (outline colour and dash per kind)."""
    rules = [
        ".rt-layout .rt-mark { fill: none; stroke-width: 2.4; }",
        ".rt-layout .rt-switch.rt-shared rect { stroke: #c92a2a; stroke-width: 2.4; }",
        ".rt-layout .rt-mark-swatch { fill: none; stroke-width: 2.4; }",
    ]
    for kind in MARK_KINDS:
        dash = f" stroke-dasharray: {MARK_DASHES[kind]};" if MARK_DASHES[kind] else ""
        rules.append(f".rt-layout .rt-mark-{kind} {{ stroke: {MARK_COLOURS[kind]};{dash} }}")
    return "\n".join(rules) + "\n"
