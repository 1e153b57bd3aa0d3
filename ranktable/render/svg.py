"""The layout picture: given and planned rank orders side by side, as one standalone SVG document.

Built as an ElementTree (every user value goes through the XML serialiser, never into markup by hand).
Colours come from a scoped `<style>`: JupyterLab theme variables when the SVG is inlined in the page,
light neutral fallbacks otherwise, so it reads on light and dark themes alike. Every server (or leaf,
when aggregated) carries `data-*` attributes and a `<title>` so a frontend can show a tooltip.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ranktable.hccl.model import RankTable
from ranktable.render.layout import (
    CELL_H,
    CELL_W,
    CELLS_PER_ROW,
    COL_GAP,
    SERVER_HEAD,
    SERVER_PAD,
    UNPLACED,
    Frame,
    Rect,
    build_frame,
)
from ranktable.render.marks import (
    MARK_KINDS,
    MARK_LABELS,
    PanelMarks,
    check_marks,
    format_kinds,
    mark_style,
    marks_per_switch,
    panel_marks,
    shared_switches,
)
from ranktable.render.ring import (
    PlacedServer,
    RingEdge,
    place_servers,
    plural_tier_name,
    ring_edges,
)
from ranktable.topology.model import Topology

SVG_NS = "http://www.w3.org/2000/svg"
DEFAULT_AGGREGATE_THRESHOLD = 64
MAX_DETAIL_COLUMNS = 12
MAX_LINKS = 400
MARGIN = 20.0
PANEL_GAP = 56.0
HEADER_H = 56.0
NOTE_H = 16.0
PORT_INSET = 3.0
RIGHT_ARROW = "\u2192"
PANEL_HEAD_H = 84.0
GROUP_ROW_H = 15.0
OPERATION_NAMES = {
    "allreduce": "all-reduce",
    "allgather": "all-gather",
    "reducescatter": "reduce-scatter",
    "broadcast": "broadcast",
    "alltoall": "all-to-all",
}
LEGEND_H = 56.0
MARK_LEGEND_H = 34.0
MIN_PANEL_W = 330.0
# Characters XML 1.0 forbids (controls other than tab/newline/CR, lone surrogates, U+FFFE/FFFF).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
TIMES = "\u00d7"
PATH_SEP = " \u203a "
EN_DASH = "\u2013"
TIER_COLOURS = ("#2f9e44", "#e8a317", "#e03131", "#9c36b5", "#1c7ed6")

STYLE = """
.rt-layout { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; }
.rt-layout text { fill: var(--jp-ui-font-color1, #1f2328); }
.rt-layout .rt-bg { fill: var(--jp-layout-color0, #ffffff); }
.rt-layout .rt-muted { fill: var(--jp-ui-font-color2, #59636e); }
.rt-layout .rt-title { font-size: 16px; font-weight: 600; }
.rt-layout .rt-headline { font-size: 13px; }
.rt-layout .rt-panel-title { font-size: 14px; font-weight: 600; }
.rt-layout .rt-figure { font-size: 11.5px; }
.rt-layout .rt-small { font-size: 10px; }
.rt-layout .rt-column { fill: var(--jp-layout-color2, #eef1f4); }
.rt-layout .rt-box { fill: var(--jp-layout-color1, #ffffff); stroke: var(--jp-border-color1, #8c959f); }
.rt-layout .rt-switch rect { fill: var(--jp-layout-color3, #d9dee4);
  stroke: var(--jp-border-color1, #8c959f); }
.rt-layout .rt-switch text, .rt-layout .rt-unplaced text { font-size: 11px; }
.rt-layout .rt-unplaced rect { fill: none; stroke: var(--jp-border-color1, #8c959f); stroke-dasharray: 4 3; }
.rt-layout .rt-tree { stroke: var(--jp-border-color1, #8c959f); stroke-width: 1.2; }
.rt-layout .rt-npu { fill: var(--jp-layout-color2, #eef1f4); stroke: var(--jp-border-color2, #c9d1d9); }
.rt-layout .rt-rank { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace;
  font-size: 10px; text-anchor: middle; }
.rt-layout .rt-server-label { font-size: 9.5px; }
.rt-layout .rt-node { font-weight: 700; }
.rt-layout .rt-leaf-label { font-size: 10px; }
.rt-layout .rt-edge, .rt-layout .rt-link, .rt-layout .rt-swatch { fill: none; stroke-linecap: round; }
.rt-layout .rt-edge { stroke-width: 1.6; stroke-opacity: 0.75; }
.rt-layout .rt-link { stroke-opacity: 0.55; }
.rt-layout .rt-swatch { stroke-width: 3; }
.rt-layout circle.rt-port { stroke: none; }
.rt-layout .rt-speedup { font-weight: 700; }
""" + "\n".join(
    f".rt-layout .rt-t{i} {{ stroke: {c}; }}\n"
    f".rt-layout rect.rt-t{i}, .rt-layout circle.rt-t{i} {{ fill: {c}; }}"
    for i, c in enumerate(TIER_COLOURS)
)


class OrderFigures(Protocol):
    """The key figures of one server order (see `ranktable.choice.cost.OrderMetrics`)."""

    @property
    def crossings_per_tier(self) -> list[int]: ...
    @property
    def max_uplink_flows(self) -> int: ...
    @property
    def allreduce_seconds(self) -> float: ...


class ComparisonFigures(Protocol):
    """Given against planned (see `ranktable.choice.cost.Comparison`)."""

    @property
    def given(self) -> OrderFigures: ...
    @property
    def planned(self) -> OrderFigures: ...
    @property
    def speedup(self) -> float: ...


@dataclass
class _Panel:
    title: str
    subtitle: str
    placed: list[PlacedServer]
    edges: list[RingEdge]
    figures: OrderFigures
    pod_index: dict[str, int]
    pod_name: dict[str, str]
    marks: PanelMarks


def layout_svg(
    given: RankTable,
    planned: RankTable,
    topology: Topology,
    comparison: ComparisonFigures,
    *,
    title: str | None = None,
    aggregate_threshold: int = DEFAULT_AGGREGATE_THRESHOLD,
    marks: Mapping[int, str] | None = None,
) -> str:
    """The given and planned rank layouts side by side, with the ring coloured by tier crossed.

    `marks` ({planned rank id: "first-failure" | "straggler" | "hung"}) outlines those NPUs in both panels
    and highlights the switches several of them share.
    """
    wanted = check_marks(marks or {})
    given_placed = place_servers(given, topology)
    planned_placed = place_servers(planned, topology)
    leaves = {s.leaf for s in planned_placed + given_placed}
    aggregated = len(planned_placed) > aggregate_threshold or len(leaves) > MAX_DETAIL_COLUMNS
    known = {s.server_id for s in planned_placed}
    everyone = planned_placed + [s for s in given_placed if s.server_id not in known]
    frame = build_frame(everyone, topology, aggregated=aggregated, max_columns=MAX_DETAIL_COLUMNS)

    panels = _panels(given, planned, given_placed, planned_placed, comparison, wanted)
    panel_w = max(frame.width, MIN_PANEL_W)
    width = 2 * MARGIN + 2 * panel_w + PANEL_GAP
    algorithm = _algorithm_line(comparison)
    group_rows = _group_rows(comparison)
    header_h = HEADER_H + (NOTE_H if aggregated else 0.0) + (NOTE_H if algorithm else 0.0)
    head_h = PANEL_HEAD_H + (GROUP_ROW_H * len(group_rows) + 6 if group_rows else 0)
    legend_h = LEGEND_H + (MARK_LEGEND_H if wanted else 0.0)
    height = MARGIN + header_h + head_h + frame.height + legend_h + MARGIN
    heading = title or f"Rank layout: {len(planned_placed)} servers, {planned.rank_size} ranks"
    root = _svg_root(width, height, heading, aggregated, len(planned_placed), wanted)
    _header(root, heading, comparison, frame, aggregated, aggregate_threshold, len(planned_placed))
    if algorithm:
        y = MARGIN + 52 + (NOTE_H if aggregated else 0.0)
        attrs = {"class": "rt-small", "x": _n(MARGIN), "y": _n(y), "data-algorithm": algorithm[0]}
        _el(root, "text", attrs, algorithm[1])
    for index, panel in enumerate(panels):
        x = MARGIN + index * (panel_w + PANEL_GAP) + (panel_w - frame.width) / 2
        group = _el(root, "g", {"class": "rt-panel", "data-panel": ("given", "planned")[index]})
        group.set("transform", f"translate({_n(x)},{_n(MARGIN + header_h)})")
        _panel_head(group, panel, frame, topology, (frame.width - panel_w) / 2)
        _group_lines(group, group_rows, ("given", "planned")[index], (frame.width - panel_w) / 2)
        body = _el(group, "g", {"transform": f"translate(0,{_n(head_h)})"})
        _draw_panel_body(body, panel, frame, topology, aggregated)
    _legend(root, topology, frame.top_tier, MARGIN, height - MARGIN - legend_h + 18, aggregated)
    if wanted:
        _mark_legend(root, wanted, MARGIN, height - MARGIN - MARK_LEGEND_H + 14)
    return ET.tostring(root, encoding="unicode")


def _panels(
    given: RankTable,
    planned: RankTable,
    given_placed: list[PlacedServer],
    planned_placed: list[PlacedServer],
    comparison: ComparisonFigures,
    wanted: Mapping[int, str],
) -> list[_Panel]:
    """The given order's panel and the planned order's, both naming servers by the given table's pods."""
    pod_index = {s.server_id: i for i, s in enumerate(given.servers)}
    pod_name = {s.server_id: str(s.extra["pod_name"]) for s in given.servers if s.extra.get("pod_name")}
    return [
        _Panel(
            "Given order",
            "pod index, as the platform fills the table",
            given_placed,
            ring_edges(given_placed),
            comparison.given,
            pod_index,
            pod_name,
            panel_marks(wanted, planned, given),
        ),
        _Panel(
            "Planned order",
            "ranktable routing: switch by switch",
            planned_placed,
            ring_edges(planned_placed),
            comparison.planned,
            pod_index,
            pod_name,
            panel_marks(wanted, planned, planned),
        ),
    ]


def _svg_root(
    width: float, height: float, heading: str, aggregated: bool, servers: int, wanted: Mapping[int, str]
) -> ET.Element:
    """The <svg> element with its title, style sheet and background."""
    root = ET.Element(
        "svg",
        {
            "xmlns": SVG_NS,
            "class": "rt-layout",
            "width": _n(width),
            "height": _n(height),
            "viewBox": f"0 0 {_n(width)} {_n(height)}",
            "role": "img",
            "data-aggregated": "true" if aggregated else "false",
            "data-servers": str(servers),
        },
    )
    if wanted:
        root.set("data-marks", format_kinds(_count_kinds(wanted.values())))
    _el(root, "title", text=heading)
    _el(root, "style", text=STYLE + (mark_style() if wanted else ""))
    _el(root, "rect", {"class": "rt-bg", "x": "0", "y": "0", "width": _n(width), "height": _n(height)})
    return root


def _draw_panel_body(
    body: ET.Element, panel: _Panel, frame: Frame, topology: Topology, aggregated: bool
) -> None:
    """The switch frame under a panel, then its servers (or, aggregated, its leaf groups)."""
    shared = shared_switches(marks_per_switch(panel.marks, panel.placed, topology), topology)
    underlay = _draw_frame(body, frame, topology, shared)
    if aggregated:
        _draw_leaf_groups(body, underlay, panel, frame, topology)
    else:
        _draw_servers(body, panel, frame, topology)


# -- pieces ----------------------------------------------------------------------------------------


def _header(
    root: ET.Element,
    heading: str,
    comparison: ComparisonFigures,
    frame: Frame,
    aggregated: bool,
    threshold: int,
    servers: int,
) -> None:
    _el(root, "text", {"class": "rt-title", "x": _n(MARGIN), "y": _n(MARGIN + 14)}, heading)
    line = _el(root, "text", {"class": "rt-headline", "x": _n(MARGIN), "y": _n(MARGIN + 36)})
    speedup = comparison.speedup
    verdict = "faster" if speedup >= 1 else "slower"
    message = getattr(comparison, "message_bytes", None)
    size = f" of {_bytes(message)}" if isinstance(message, int) else ""
    before = _seconds(comparison.given.allreduce_seconds)
    after = _seconds(comparison.planned.allreduce_seconds)
    _el(line, "tspan", text="Planned order: ")
    _el(line, "tspan", {"class": "rt-speedup", "data-speedup": f"{speedup:.6g}"}, f"{speedup:.2f}{TIMES}")
    if abs(speedup - 1) < 0.005:
        tail = (
            f" {_operation(comparison.planned)}{size}: no estimated change ({before} {RIGHT_ARROW} {after})"
        )
    else:
        tail = f" {verdict} {_operation(comparison.planned)}{size} (estimated {before} {RIGHT_ARROW} {after})"
    _el(line, "tspan", text=tail)
    if aggregated:
        note = (
            f"{servers} servers: aggregated per leaf (more than {threshold} servers or "
            f"{MAX_DETAIL_COLUMNS} leaves). Bars: ring edges leaving each leaf, by class. "
            "Lines: ring edges between leaves, width by count."
        )
        _el(root, "text", {"class": "rt-small rt-muted", "x": _n(MARGIN), "y": _n(MARGIN + 52)}, note)


def _operation(figures: OrderFigures) -> str:
    return OPERATION_NAMES.get(str(getattr(figures, "operation", "allreduce")), "all-reduce")


def _algorithm_line(comparison: ComparisonFigures) -> tuple[str, str] | None:
    """(algorithm, sentence) when the comparison says which HCCL algorithm its estimate assumes."""
    algorithm = getattr(comparison, "algorithm", None)
    if not isinstance(algorithm, str):
        return None
    reason = str(getattr(comparison, "algorithm_reason", "") or "")
    text = f"HCCL algorithm assumed: {algorithm}" + (f" ({reason})" if reason else "")
    return algorithm, _fit(text, 1400, 6.2)


def _group_rows(comparison: ComparisonFigures) -> list[dict[str, Any]]:
    rows = getattr(comparison, "group_rows", None)
    return list(rows()) if callable(rows) else []


def _group_lines(group: ET.Element, rows: list[dict[str, Any]], side: str, x: float) -> None:
    """One line per parallel group kind: its collective, HCCL's algorithm and the estimated time."""
    for row_index, row in enumerate(rows):
        seconds = row[f"{side}_seconds"]
        how = (
            row["operation"]
            if row["operation"] == row["algorithm"]
            else f"{row['operation']}, {row['algorithm']}"
        )
        text = f"{row['kind']} groups ({row['count']} x {row['size']}, {how}): {_seconds(seconds)}"
        attrs = {
            "class": "rt-figure rt-group",
            "x": _n(x),
            "y": _n(PANEL_HEAD_H + 8 + GROUP_ROW_H * row_index),
            "data-group": str(row["kind"]),
            "data-seconds": f"{seconds:.6g}",
        }
        _el(group, "text", attrs, text)


def _panel_head(group: ET.Element, panel: _Panel, frame: Frame, topology: Topology, x: float) -> None:
    _el(group, "text", {"class": "rt-panel-title", "x": _n(x), "y": "14"}, panel.title)
    _el(group, "text", {"class": "rt-small rt-muted", "x": _n(x), "y": "29"}, panel.subtitle)
    crossings = list(panel.figures.crossings_per_tier)
    parts = [f"{plural_tier_name(topology, t + 1)} {n}" for t, n in enumerate(crossings)] or ["none"]
    pods = int(getattr(panel.figures, "superpods", 0) or 0)  # A3: the SuperPoD tier beside the switches
    pod_edges = int(getattr(panel.figures, "superpod_crossings", 0) or 0)
    if pods:
        parts.append(f"SuperPoDs {pod_edges}")
    lines = [
        ("crossings", "ring edges crossing: " + " · ".join(parts)),
        ("flows", f"most flows on one uplink: {panel.figures.max_uplink_flows}"),
        (
            "seconds",
            f"estimated {_operation(panel.figures)} time: {_seconds(panel.figures.allreduce_seconds)}",
        ),
    ]
    for row, (key, text) in enumerate(lines):
        attrs = {"class": "rt-figure", "x": _n(x), "y": _n(47 + 15 * row), f"data-{key}": text.split(": ")[1]}
        if key == "crossings":
            attrs["data-crossings"] = ",".join(str(n) for n in crossings)
            if pods:
                attrs["data-superpod-crossings"] = str(pod_edges)
                attrs["data-superpod-flows"] = str(int(getattr(panel.figures, "superpod_flows", 0) or 0))
        _el(group, "text", attrs, text)


def _draw_frame(
    body: ET.Element, frame: Frame, topology: Topology, shared: dict[str, dict[str, int]] | None = None
) -> ET.Element:
    """Columns, switch boxes and the tree lines between them; returns an empty layer between the column
    backgrounds and everything else, for drawing the aggregated ring under switches and boxes."""
    by_name = {(node.band, node.name): node for node in frame.switches}
    columns = _el(body, "g", {"class": "rt-columns"})
    underlay = _el(body, "g", {"class": "rt-ring"})
    tree = _el(body, "g", {"class": "rt-tree-lines"})
    for node in frame.switches:
        parent = by_name.get((node.band, node.parent)) if node.parent else None
        if parent is not None:
            _line(tree, node.rect.cx, node.rect.y, parent.rect.cx, parent.rect.bottom)
        if node.column_top is not None:
            _line(tree, node.rect.cx, node.rect.bottom, node.rect.cx, node.column_top)
    for column in frame.columns:
        attrs = _box_attrs(column.rect, "rt-column", 6) | {"data-column": _leaf_label(column.key)}
        _el(columns, "rect", attrs)
        if column.key == UNPLACED:
            box = Rect(column.rect.x + 4, column.rect.y - 30, column.rect.w - 8, 24)
            group = _el(body, "g", {"class": "rt-unplaced"})
            _el(group, "title", text="servers the topology does not know; they go last, as one group")
            _rect(group, box, "")
            attrs = {"x": _n(box.cx), "y": _n(box.y + 16), "text-anchor": "middle"}
            _el(group, "text", attrs, "not in topology")
    for node in frame.switches:
        group = _el(body, "g", {"class": "rt-switch", "data-switch": node.name, "data-tier": str(node.tier)})
        switch = topology.switches[node.name]
        info = f"{topology.tier_name(node.tier)} switch {node.name} (tier {node.tier})"
        if shared and node.name in shared:
            group.set("class", "rt-switch rt-shared")
            group.set("data-marks", format_kinds(shared[node.name]))
            info += f"\nshared by marked ranks: {_kinds_text(shared[node.name])}"
        if switch.oversubscription != 1.0:
            info += f", uplinks oversubscribed {switch.oversubscription:g}:1"
        if switch.uplink_gbps:
            info += f", uplink {switch.uplink_gbps:g} Gb/s"
        _el(group, "title", text=info)
        _rect(group, node.rect, "", rx=4)
        label = _fit(node.name, node.rect.w - 8, 6.2)
        attrs = {"x": _n(node.rect.cx), "y": _n(node.rect.y + 16), "text-anchor": "middle"}
        _el(group, "text", attrs, label)
    return underlay


def _draw_servers(body: ET.Element, panel: _Panel, frame: Frame, topology: Topology) -> None:
    """Detailed mode: each server with its NPUs and rank numbers, then the ring drawn over them."""
    for server in panel.placed:
        node_rank = server.node_rank
        rect = frame.slots[server.server_id]
        info = _server_info(server, node_rank, panel, topology)
        group = _el(body, "g", {"class": "rt-server"} | {f"data-{k}": v for k, v in info.items()})
        _el(group, "title", text=_server_title(info))
        _rect(group, rect, "rt-box", rx=3)
        label_at = {"x": _n(rect.x + SERVER_PAD), "y": _n(rect.y + 11)}
        label = _el(group, "text", {"class": "rt-server-label"} | label_at)
        _el(label, "tspan", {"class": "rt-node"}, f"n{node_rank}")
        _el(label, "tspan", text=" " + _fit(server.server_id, rect.w - 2 * SERVER_PAD - 24, 5.3))
        for i, rank in enumerate(server.ranks):
            cx = rect.x + SERVER_PAD + (i % CELLS_PER_ROW) * CELL_W
            cy = rect.y + SERVER_HEAD + (i // CELLS_PER_ROW) * CELL_H
            cell = Rect(cx + 1, cy, CELL_W - 2, CELL_H - 2)
            _el(group, "rect", _box_attrs(cell, "rt-npu", 2) | {"data-rank": str(rank)})
            _el(group, "text", {"class": "rt-rank", "x": _n(cell.cx), "y": _n(cell.y + 10.5)}, str(rank))
            kind = panel.marks.by_rank.get(rank)
            if kind is not None:
                outline = Rect(cell.x - 1, cell.y - 1, cell.w + 2, cell.h + 2)
                mark = _el(group, "rect", _box_attrs(outline, f"rt-mark rt-mark-{kind}", 3))
                mark.set("data-rank", str(rank))
                mark.set("data-mark", kind)
                _el(mark, "title", text=f"rank {rank}: {MARK_LABELS[kind]}")
    ring = _el(body, "g", {"class": "rt-ring"})
    for edge in panel.edges:
        src, dst = panel.placed[edge.src], panel.placed[edge.dst]
        a, b = frame.slots[src.server_id], frame.slots[dst.server_id]
        same = frame.slot_column[src.server_id] == frame.slot_column[dst.server_id]
        # Ports sit in the boxes' bottom padding: lines between boxes of one row never cover rank numbers.
        ya, yb = a.bottom - PORT_INSET, b.bottom - PORT_INSET
        path = _edge_path(a, b, same, ya, yb)
        attrs = {"class": f"rt-edge rt-t{_tier_class(edge.tier)}", "d": path, "data-tier": str(edge.tier)}
        _el(ring, "path", attrs | {"data-from": src.server_id, "data-to": dst.server_id})
        x1, x2 = _edge_ends(a, b, same)
        for x, y in ((x1, ya), (x2, yb)):
            port = {"class": f"rt-port rt-t{_tier_class(edge.tier)}", "cx": _n(x), "cy": _n(y), "r": "2"}
            _el(ring, "circle", port)


def _draw_leaf_groups(
    body: ET.Element, ring: ET.Element, panel: _Panel, frame: Frame, topology: Topology
) -> None:
    """Aggregated mode: per-leaf boxes with server count, rank range and the ring summarised per leaf."""
    servers_in: dict[str, list[tuple[int, PlacedServer]]] = {}
    for server in panel.placed:
        servers_in.setdefault(frame.slot_of_server[server.server_id], []).append((server.node_rank, server))
    leaving, links = _leaf_traffic(panel, frame)
    _draw_leaf_links(ring, frame, links)
    for slot, rect in frame.slots.items():
        _draw_leaf_group(body, slot, rect, servers_in.get(slot, []), leaving.get(slot, {}), panel, topology)


def _leaf_traffic(
    panel: _Panel, frame: Frame
) -> tuple[dict[str, dict[int, int]], dict[tuple[str, str], list[int]]]:
    """The ring per leaf: {leaf: {tier: edges leaving it}} and {(leaf, leaf): [edges between, tier]}."""
    leaving: dict[str, dict[int, int]] = {}
    links: dict[tuple[str, str], list[int]] = {}
    for edge in panel.edges:
        a = frame.slot_of_server[panel.placed[edge.src].server_id]
        b = frame.slot_of_server[panel.placed[edge.dst].server_id]
        counts = leaving.setdefault(a, {})
        counts[edge.tier] = counts.get(edge.tier, 0) + 1
        if a != b:
            key = (a, b) if a < b else (b, a)
            links.setdefault(key, [0, edge.tier])[0] += 1
    return leaving, links


def _draw_leaf_links(ring: ET.Element, frame: Frame, links: dict[tuple[str, str], list[int]]) -> None:
    """The MAX_LINKS busiest leaf-to-leaf links, thicker the more ring edges they carry."""
    heaviest = sorted(links.items(), key=lambda item: (-item[1][0], item[0]))
    for (a, b), (count, tier) in heaviest[:MAX_LINKS]:
        ra, rb = frame.slots[a], frame.slots[b]
        same = frame.slot_column[a] == frame.slot_column[b]
        attrs = {
            "class": f"rt-link rt-t{_tier_class(tier)}",
            "d": _edge_path(ra, rb, same, ra.cy, rb.cy),
            "stroke-width": _n(min(1.0 + math.log2(count), 8.0)),
            "data-count": str(count),
            "data-tier": str(tier),
        }
        _el(ring, "path", attrs | {"data-from-leaf": _leaf_label(a), "data-to-leaf": _leaf_label(b)})
    if len(heaviest) > MAX_LINKS:
        ring.set("data-links-omitted", str(len(heaviest) - MAX_LINKS))


def _draw_leaf_group(
    body: ET.Element,
    slot: str,
    rect: Rect,
    members: list[tuple[int, PlacedServer]],
    counts: dict[int, int],
    panel: _Panel,
    topology: Topology,
) -> None:
    """One leaf's box: its servers and rank runs, its marks, a bar of the ring edges leaving it by tier."""
    ranks = sorted(r for _, s in members for r in s.ranks)
    runs = _runs(ranks)
    path = PATH_SEP.join(topology.path(slot)) if slot != UNPLACED else "not in topology"
    attrs = {
        "class": "rt-leafgroup",
        "data-leaf": _leaf_label(slot),
        "data-path": path,
        "data-servers": str(len(members)),
        "data-ranks": _format_runs(runs),
        "data-rank-runs": str(len(runs)),
        "data-node-ranks": _format_runs(_runs(sorted(n for n, _ in members))),
    }
    group = _el(body, "g", attrs)
    leaving_text = ", ".join(f"{_class_label(topology, t)} {counts[t]}" for t in sorted(counts)) or "none"
    servers_text = ", ".join(f"n{n} {s.server_id}" for n, s in members)
    _el(
        group,
        "title",
        text=f"{path}\n{len(members)} servers, ranks {attrs['data-ranks']}\n"
        f"ring edges leaving: {leaving_text}\nservers: {servers_text}",
    )
    _rect(group, rect, "rt-box", rx=3)
    _mark_leaf_group(group, rect, {r: panel.marks.by_rank[r] for r in ranks if r in panel.marks.by_rank})
    _el(
        group,
        "text",
        {"class": "rt-leaf-label", "x": _n(rect.x + 5), "y": _n(rect.y + 12)},
        _fit(_leaf_label(slot), rect.w - 10, 5.6),
    )
    if not ranks:
        span = "no ranks"
    elif len(runs) == 1:
        span = f"r {ranks[0]}{EN_DASH}{ranks[-1]}"
    else:
        span = f"{len(runs)} rank runs"
    _el(
        group,
        "text",
        {"class": "rt-small rt-muted", "x": _n(rect.x + 5), "y": _n(rect.y + 25)},
        f"{len(members)} srv · {span}",
    )
    _tier_bar(group, rect, counts)


def _mark_leaf_group(group: ET.Element, rect: Rect, marked: dict[int, str]) -> None:
    """Outline a leaf's box in its most serious mark's colour and name its marked ranks."""
    if not marked:
        return
    kinds = _count_kinds(marked.values())
    group.set("data-marks", format_kinds(kinds))
    group.set("data-marked-ranks", _format_runs(_runs(sorted(marked))))
    top = next(k for k in MARK_KINDS if k in kinds)
    outline = Rect(rect.x - 2, rect.y - 2, rect.w + 4, rect.h + 4)
    mark = _el(group, "rect", _box_attrs(outline, f"rt-mark rt-mark-{top}", 4) | {"data-mark": top})
    _el(mark, "title", text=f"marked ranks: {_kinds_text(kinds)} ({group.get('data-marked-ranks')})")


def _tier_bar(group: ET.Element, rect: Rect, counts: dict[int, int]) -> None:
    """A bar along the box's bottom, one segment per tier, as long as its share of the leaving edges."""
    total = sum(counts.values())
    x = rect.x + 5
    bar_w = rect.w - 10
    for tier in sorted(counts):
        w = bar_w * counts[tier] / total
        seg = Rect(x, rect.bottom - 15, w, 9)
        seg_attrs = _box_attrs(seg, f"rt-summary rt-t{_tier_class(tier)}", 0)
        _el(group, "rect", seg_attrs | {"data-tier": str(tier), "data-count": str(counts[tier])})
        x += w


def _legend(root: ET.Element, topology: Topology, top: int, x: float, y: float, aggregated: bool) -> None:
    group = _el(root, "g", {"class": "rt-legend"})
    _el(group, "text", {"class": "rt-figure", "x": _n(x), "y": _n(y + 4)}, "Ring edge:")
    cursor = x + 70
    for tier in range(0, top + 1):
        label = _class_label(topology, tier)
        _el(group, "path", {"class": f"rt-swatch rt-t{_tier_class(tier)}", "d": f"M{_n(cursor)},{_n(y)}h22"})
        _el(group, "text", {"class": "rt-figure", "x": _n(cursor + 28), "y": _n(y + 4)}, label)
        cursor += 40 + 6.5 * len(label)
    note = (
        "n = node rank (RANK_AFTER_ACC / NODE_RANK); cells = NPUs with their rank ids. The ring runs in rank "
        "order and wraps around."
        if not aggregated
        else "Hover a leaf for its servers. The ring runs in rank order and wraps around."
    )
    _el(group, "text", {"class": "rt-small rt-muted", "x": _n(x), "y": _n(y + 24)}, note)


def _mark_legend(root: ET.Element, marks: dict[int, str], x: float, y: float) -> None:
    """One swatch per mark kind in use, with the ranks it marks."""
    group = _el(root, "g", {"class": "rt-legend rt-mark-legend"})
    _el(group, "text", {"class": "rt-figure", "x": _n(x), "y": _n(y + 4)}, "Marked:")
    cursor = x + 56
    for kind in MARK_KINDS:
        ranks = sorted(r for r, k in marks.items() if k == kind)
        if not ranks:
            continue
        box = Rect(cursor, y - 6, 18, 12)
        _el(group, "rect", _box_attrs(box, f"rt-mark-swatch rt-mark-{kind}", 2) | {"data-mark": kind})
        label = _fit(f"{MARK_LABELS[kind]}: rank {_format_runs(_runs(ranks))}", 260, 6.2)
        _el(group, "text", {"class": "rt-figure", "x": _n(cursor + 24), "y": _n(y + 4)}, label)
        cursor += 40 + 6.2 * len(label)
    note = "A red switch outline: two or more marked ranks sit below it."
    _el(group, "text", {"class": "rt-small rt-muted", "x": _n(x), "y": _n(y + 20)}, note)


def _count_kinds(kinds: Iterable[str]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for kind in kinds:
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def _kinds_text(kinds: Mapping[str, int]) -> str:
    return ", ".join(f"{kinds[k]} {MARK_LABELS[k]}" for k in MARK_KINDS if kinds.get(k))


# -- helpers -----------------------------------------------------------------------------------------


def _server_info(server: PlacedServer, node_rank: int, panel: _Panel, topology: Topology) -> dict[str, str]:
    info = {
        "server": server.server_id,
        "node-rank": str(node_rank),
        "pod-index": str(panel.pod_index.get(server.server_id, "")),
        "leaf": server.leaf or "",
        "leaves": ",".join(server.leaves),
        "path": PATH_SEP.join(topology.path(server.leaf)) if server.leaf else "not in topology",
        "ranks": _format_runs(_runs(list(server.ranks))),
    }
    if server.server_id in panel.pod_name:
        info["pod"] = panel.pod_name[server.server_id]
    if server.name and server.name != server.server_id:
        info["node"] = server.name
    return info


def _server_title(info: dict[str, str]) -> str:
    lines = [f"server {info['server']}" + (f" (node {info['node']})" if "node" in info else "")]
    lines.append(f"node rank {info['node-rank']} · ranks {info['ranks']}")
    pod = info.get("pod", "")
    lines.append(f"pod index {info['pod-index']}" + (f" ({pod})" if pod else ""))
    lines.append(f"switches: {info['path']}")
    if "," in info["leaves"]:
        lines.append(f"rails on leaves: {info['leaves']}")
    return "\n".join(lines)


def _edge_path(a: Rect, b: Rect, same_column: bool, ya: float, yb: float) -> str:
    """A curve from box `a` to box `b`: along the column's left side, or across to the facing side."""
    x1, x2 = _edge_ends(a, b, same_column)
    if same_column:
        bulge = min(6.0 + abs(yb - ya) * 0.08, COL_GAP * 0.6)
        return f"M{_n(x1)},{_n(ya)}C{_n(x1 - bulge)},{_n(ya)} {_n(x2 - bulge)},{_n(yb)} {_n(x2)},{_n(yb)}"
    reach = max(abs(x2 - x1) * 0.4, 24.0) * (1 if x2 > x1 else -1)
    # Longer edges sag further into the gap below the row, so parallel edges along one row stay apart.
    sag = min(4.0 + abs(x2 - x1) * 0.03, 12.0)
    c1, c2 = f"{_n(x1 + reach)},{_n(ya + sag)}", f"{_n(x2 - reach)},{_n(yb + sag)}"
    return f"M{_n(x1)},{_n(ya)}C{c1} {c2} {_n(x2)},{_n(yb)}"


def _edge_ends(a: Rect, b: Rect, same_column: bool) -> tuple[float, float]:
    """Where an edge leaves `a` and enters `b`: both left sides within a column, else facing sides."""
    if same_column:
        return a.x, b.x
    return (a.right, b.x) if b.cx > a.cx else (a.x, b.right)


def _tier_class(tier: int) -> int:
    return min(tier, len(TIER_COLOURS) - 1)


def _class_label(topology: Topology, tier: int) -> str:
    if tier == 0:
        return f"within one {topology.tier_name(1)}"
    return f"crosses {plural_tier_name(topology, tier)}"


def _leaf_label(slot: str) -> str:
    return "not in topology" if slot == UNPLACED else slot


def _runs(values: list[int]) -> list[tuple[int, int]]:
    """Consecutive runs of sorted integers: [0,1,2,5] -> [(0,2),(5,5)]."""
    runs: list[tuple[int, int]] = []
    for value in values:
        if runs and value == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], value)
        else:
            runs.append((value, value))
    return runs


def _format_runs(runs: list[tuple[int, int]]) -> str:
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in runs)


def _fit(text: str, width: float, char_w: float) -> str:
    """Cut `text` to about `width` pixels at `char_w` per character, marking the cut with an ellipsis."""
    room = max(int(width / char_w), 4)
    return text if len(text) <= room else text[: room - 1] + "…"


def _seconds(value: float) -> str:
    if value >= 1:
        return f"{value:.3g} s"
    if value >= 1e-3:
        return f"{value * 1e3:.3g} ms"
    return f"{value * 1e6:.3g} µs"


def _bytes(value: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= size and value % size == 0:
            return f"{value // size} {unit}"
    return f"{value} B"


def _n(value: float) -> str:
    """Compact coordinates: one decimal at most, no trailing zeros (keeps 4,096-server SVGs small)."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _box_attrs(rect: Rect, cls: str, rx: float) -> dict[str, str]:
    attrs = {"x": _n(rect.x), "y": _n(rect.y), "width": _n(rect.w), "height": _n(rect.h)}
    if cls:
        attrs["class"] = cls
    if rx:
        attrs["rx"] = _n(rx)
    return attrs


def _rect(parent: ET.Element, rect: Rect, cls: str, rx: float = 0) -> ET.Element:
    return _el(parent, "rect", _box_attrs(rect, cls, rx))


def _line(parent: ET.Element, x1: float, y1: float, x2: float, y2: float) -> None:
    _el(parent, "line", {"class": "rt-tree", "x1": _n(x1), "y1": _n(y1), "x2": _n(x2), "y2": _n(y2)})


def _el(
    parent: ET.Element, tag: str, attrs: dict[str, str] | None = None, text: str | None = None
) -> ET.Element:
    """A child element; values are cleaned of characters XML 1.0 cannot carry (ET would write them raw)."""
    element = ET.SubElement(parent, tag, {k: _xml_safe(v) for k, v in (attrs or {}).items()})
    if text is not None:
        element.text = _xml_safe(text)
    return element


def _xml_safe(value: str) -> str:
    return _NOT_XML.sub("\ufffd", value)
