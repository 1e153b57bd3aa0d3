"""The diagnosis as HTML (notebook output): the first failure on top, then timeline, stragglers, hangs."""

from __future__ import annotations

from html import escape
from typing import Any

MAX_ROWS = 64


PLACE_FIELDS = (
    ("node_rank", "node rank"),
    ("pod", "pod"),
    ("server", "server"),
    ("device", "NPU"),
    ("leaf", "leaf"),
)


def place_text(entry: dict[str, Any]) -> str:
    """``node rank 5, pod p-5, server 10.0.0.5, NPU 1, leaf leaf-b`` for whatever the entry knows."""
    return ", ".join(f"{label} {entry[key]}" for key, label in PLACE_FIELDS if entry.get(key) is not None)


def _where(entry: dict[str, Any]) -> str:
    return escape(place_text(entry))


def diagnosis_html(result: dict[str, Any]) -> str:
    out = [f"<div class='ranktable-diagnosis'><p><b>{escape(str(result.get('summary', '')))}</b></p>"]
    first = result.get("first_failure")
    if first:
        out.append(
            "<div style='border-left:4px solid #d62728;padding:4px 8px;margin:4px 0'>"
            f"<div><b>First failure: rank {escape(str(first.get('rank')))}</b> ({_where(first)}) "
            f"at {escape(str(first.get('time')))}</div>"
            f"<div><code>{escape(first['code'])}</code> {escape(first.get('title', ''))}</div>"
            f"<pre style='white-space:pre-wrap;margin:2px 0'>{escape(first['line'])}</pre>"
            f"<div><b>Why:</b> {escape(first['explanation'])}</div>"
            f"<div><b>Fix:</b> {escape(first['fix'])}</div>"
            f"<div style='color:#777;font-size:smaller'>source: {escape(first.get('source', ''))}</div></div>"
        )
    for hint in result.get("advice") or []:
        out.append(f"<p>&#9658; {escape(hint)}</p>")
    errors = result.get("errors") or []
    if errors:
        rows = "".join(
            f"<tr><td>{escape(str(e.get('rank')))}</td><td>{escape(str(e['node_rank']))}</td>"
            f"<td>{escape(str(e.get('leaf') or '-'))}</td><td>{escape(str(e.get('time') or '-'))}</td>"
            f"<td><code>{escape(e['code'])}</code></td></tr>"
            for e in errors[:MAX_ROWS]
        )
        more = f"<p>... {len(errors) - MAX_ROWS} more</p>" if len(errors) > MAX_ROWS else ""
        out.append(
            "<details><summary>First error per rank "
            f"({len(errors)})</summary><table><thead><tr><th>Rank</th><th>Node rank</th><th>Leaf</th>"
            f"<th>Time</th><th>Code</th></tr></thead><tbody>{rows}</tbody></table>{more}</details>"
        )
    for s in result.get("stragglers") or []:
        out.append(
            f"<p>Straggler: rank {s['rank']} ({_where(s)}) {s['ratio']:.2f}x the job's median step time</p>"
        )
    for h in result.get("hung") or []:
        out.append(
            f"<p>Hung: rank {h['rank']} ({_where(h)}) silent {h['silent_s']:.0f} s "
            f"after step {h.get('last_step')}</p>"
        )
    pending = result.get("pending")
    if pending:
        out.append(f"<p>Pending: {escape(str(pending.get('reason')))}</p>")
    out.append("</div>")
    return "".join(out)
