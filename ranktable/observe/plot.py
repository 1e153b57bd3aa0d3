"""Loss, step-time and throughput charts as self-contained SVG (no plotting library needed).

Used by ``%ranktable metrics`` and ``ranktable job metrics --svg``: per-rank lines (thin, translucent),
the mean over ranks (bold), axes with round ticks, a legend. Points are binned by step to at most
``MAX_POINTS`` per line, so a 1,024-rank run still draws quickly.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any

MAX_POINTS = 300
MAX_RANK_LINES = 256
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#bcbd22", "#9467bd", "#8c564b", "#e377c2", "#17becf")
PANELS = (
    ("loss", "loss", "loss vs step (mean bold, ranks thin)"),
    ("step_time_s", "step time (s)", "step time per rank"),
    ("throughput", "throughput", "throughput"),
)


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and math.isfinite(value)


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering [low, high] (1, 2, 5 x 10^n steps)."""
    if high <= low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / max(1, count)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(low / step) * step
    ticks = [round(first, 12)]
    while ticks[-1] < high - step * 1e-9:
        ticks.append(round(ticks[-1] + step, 12))
    if len(ticks) == 1:
        ticks.append(round(first + step, 12))
    return ticks


def _label(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1e4 or abs(value) < 1e-3:
        return f"{value:.1e}"
    return f"{value:.4g}"


def _binned(points: list[tuple[float, float]], limit: int) -> list[tuple[float, float]]:
    if len(points) <= limit:
        return points
    size = math.ceil(len(points) / limit)
    return [
        (sum(x for x, _ in chunk) / len(chunk), sum(y for _, y in chunk) / len(chunk))
        for chunk in (points[i : i + size] for i in range(0, len(points), size))
    ]


def rank_points(metrics: dict[str, Any], field: str) -> dict[str, list[tuple[float, float]]]:
    out = {}
    for rank, data in (metrics.get("ranks") or {}).items():
        values = data.get(field) or []
        steps = data.get("step") or []
        points = [
            (float(s), float(v)) for s, v in zip(steps, values, strict=False) if _finite(s) and _finite(v)
        ]
        if points:
            out[rank] = points
    return out


def mean_points(
    per_rank: dict[str, list[tuple[float, float]]], limit: int = MAX_POINTS
) -> list[tuple[float, float]]:
    """The mean over ranks, by step bins (ranks may store different steps after thinning)."""
    every = [p for points in per_rank.values() for p in points]
    if not every:
        return []
    low = min(x for x, _ in every)
    high = max(x for x, _ in every)
    bins = max(1, min(limit, int(high - low) + 1))
    width = (high - low) / bins or 1.0
    sums = [0.0] * bins
    counts = [0] * bins
    for x, y in every:
        index = min(bins - 1, int((x - low) / width))
        sums[index] += y
        counts[index] += 1
    return [(low + (i + 0.5) * width, sums[i] / counts[i]) for i in range(bins) if counts[i]]


def line_chart(
    per_rank: dict[str, list[tuple[float, float]]],
    title: str,
    y_label: str,
    mean: bool = True,
    width: int = 640,
    height: int = 220,
    highlight: frozenset[str] = frozenset(),
) -> str:
    """One chart: every rank thin, the mean bold, highlighted ranks (stragglers) in red."""
    left, right, top, bottom = 64, 12, 38, 34
    plot_w, plot_h = width - left - right, height - top - bottom
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11" role="img">'
        f"<title>{escape(title)}</title>"
        f'<text x="{left}" y="15" font-weight="bold">{escape(title)}</text>'
    )
    if not per_rank:
        return head + f'<text x="{left}" y="{top + plot_h / 2}" fill="#777">no data yet</text></svg>'
    lines = {rank: _binned(points, MAX_POINTS) for rank, points in per_rank.items()}
    average = mean_points(per_rank) if mean and len(per_rank) > 1 else []
    xs = [x for points in lines.values() for x, _ in points]
    ys = [y for points in lines.values() for _, y in points]
    x_ticks = nice_ticks(min(xs), max(xs))
    y_ticks = nice_ticks(min(ys), max(ys))
    x0, x1, y0, y1 = x_ticks[0], x_ticks[-1], y_ticks[0], y_ticks[-1]

    def px(x: float) -> float:
        return left + (x - x0) / ((x1 - x0) or 1) * plot_w

    def py(y: float) -> float:
        return top + plot_h - (y - y0) / ((y1 - y0) or 1) * plot_h

    parts = [head, '<g stroke="#ddd">']
    for t in y_ticks:
        parts.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{py(t):.1f}" y2="{py(t):.1f}"/>')
    parts.append("</g>")
    parts.append('<g fill="#444" text-anchor="end">')
    parts.extend(f'<text x="{left - 4}" y="{py(t) + 4:.1f}">{_label(t)}</text>' for t in y_ticks)
    parts.append('</g><g fill="#444" text-anchor="middle">')
    parts.extend(f'<text x="{px(t):.1f}" y="{top + plot_h + 14}">{_label(t)}</text>' for t in x_ticks)
    parts.append("</g>")
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{height - 4}" text-anchor="middle" fill="#444">step</text>'
        f'<text transform="translate(12 {top + plot_h / 2}) rotate(-90)" text-anchor="middle" '
        f'fill="#444">{escape(y_label)}</text>'
    )
    opacity = 0.9 if len(lines) <= 8 else max(0.15, 4 / len(lines))
    drawn = sorted(lines, key=lambda r: (r not in highlight, _rank_key(r)))[:MAX_RANK_LINES]
    for index, rank in enumerate(drawn):
        color = "#d62728" if rank in highlight else PALETTE[index % len(PALETTE)]
        width_px = 1.6 if rank in highlight else 1.0
        alpha = 1 if rank in highlight else opacity
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in lines[rank])
        parts.append(
            f'<polyline fill="none" stroke="{color}" stroke-width="{width_px}" stroke-opacity="{alpha}" '
            f'points="{path}"><title>rank {escape(rank)}</title></polyline>'
        )
    if average:
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in average)
        parts.append(
            f'<polyline fill="none" stroke="#000" stroke-width="2.4" points="{path}">'
            "<title>mean</title></polyline>"
        )
    parts.extend(_legend(drawn, len(lines), highlight, bool(average), float(left)))
    parts.append("</svg>")
    return "".join(parts)


def _legend(drawn: list[str], ranks: int, highlight: frozenset[str], average: bool, x: float) -> list[str]:
    """The key above the plot: the mean, then each drawn rank (or, with many, the count and stragglers)."""
    items: list[tuple[str, str]] = [("#000", "mean")] if average else []
    if len(drawn) <= 8:
        colors = {
            r: ("#d62728" if r in highlight else PALETTE[i % len(PALETTE)]) for i, r in enumerate(drawn)
        }
        items += [(colors[r], f"rank {r}") for r in sorted(drawn, key=_rank_key)]
    else:
        items.append(("#999", f"{ranks} ranks"))
        if highlight:
            items.append(("#d62728", "straggler " + ", ".join(sorted(highlight, key=_rank_key)[:4])))
    parts = []
    for color, text in items:
        parts.append(
            f'<line x1="{x:.0f}" x2="{x + 14:.0f}" y1="26" y2="26" stroke="{color}" stroke-width="2"/>'
            f'<text x="{x + 17:.0f}" y="30" fill="#444" font-size="10">{escape(text)}</text>'
        )
        x += 24 + 5.6 * len(text)
    return parts


def _rank_key(rank: str) -> tuple[int, str]:
    try:
        return int(rank), ""
    except ValueError:
        return 1 << 30, rank


def metrics_svg(metrics: dict[str, Any], stragglers: list[int] | None = None, width: int = 640) -> str:
    """The three panels (loss, step time, throughput) stacked in one SVG document."""
    highlight = frozenset(str(r) for r in stragglers or [])
    charts = []
    for field, label, title in PANELS:
        points = rank_points(metrics, field)
        if not points and field == "throughput":
            continue
        units = {d.get("throughput_unit") for d in (metrics.get("ranks") or {}).values()} - {None}
        if field == "throughput" and units:
            label = f"throughput ({', '.join(sorted(str(u) for u in units))})"
        charts.append(
            line_chart(points, title, label, mean=field == "loss", width=width, highlight=highlight)
        )
    height = 220 * len(charts)
    inner = "".join(chart.replace("<svg ", f'<svg y="{220 * i}" ', 1) for i, chart in enumerate(charts))
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">{inner}</svg>'
    )
