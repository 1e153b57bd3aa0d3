"""Two runs of one job side by side: did the fix work, and what did it cost?

The journey's last step (docs/first-hour.md): after a failed run and its fixed resubmit, the user wants
one table, not two metric dumps: each run's outcome, duration, how far it got, its final loss, step time
and throughput, and its diagnosis; then what changed from the earlier run (A) to the later one (B).
Pure: it reads the JSON that `RunObserver.metrics_json` and `diagnose` return and the run's record.
"""

from __future__ import annotations

import math
from statistics import median
from typing import Any

METRICS = ("loss", "step_time_s", "throughput")  # the figures compared, each one number per run


def _finite(values: Any) -> list[float]:
    out = []
    for v in values or []:
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
            out.append(float(v))
    return out


def _rounded(value: float | None, digits: int = 6) -> float | None:
    return None if value is None else round(value, digits)


def run_summary(
    metrics: dict[str, Any],
    diagnosis: dict[str, Any],
    *,
    created: float | None = None,
    ended: float | None = None,
) -> dict[str, Any]:
    """One run in a few numbers: the final loss is the mean over ranks of each rank's last loss, step time
    and throughput the median over every rank's steps (one slow first step moves neither)."""
    ranks = metrics.get("ranks") or {}
    last_steps = [max(s) for r in ranks.values() if (s := [v for v in r.get("step") or [] if v is not None])]
    last_losses = [values[-1] for r in ranks.values() if (values := _finite(r.get("loss")))]
    step_times = [v for r in ranks.values() for v in _finite(r.get("step_time_s"))]
    throughputs = [v for r in ranks.values() for v in _finite(r.get("throughput"))]
    unit = next((r["throughput_unit"] for r in ranks.values() if r.get("throughput_unit")), None)
    first = diagnosis.get("first_failure")
    duration = ended - created if created and ended and ended >= created else None
    return {
        "run": metrics.get("run"),
        "outcome": diagnosis.get("phase"),
        "created": created,
        "ended": ended,
        "duration_s": _rounded(duration, 3),
        "ranks": len(ranks),
        "last_step": max(last_steps) if last_steps else None,
        "least_step": min(last_steps) if last_steps else None,  # the rank that got least far
        "loss": _rounded(sum(last_losses) / len(last_losses)) if last_losses else None,
        "step_time_s": _rounded(median(step_times)) if step_times else None,
        "throughput": _rounded(median(throughputs)) if throughputs else None,
        "throughput_unit": unit,
        "diagnosis": diagnosis.get("summary"),
        "first_failure": (
            {k: first.get(k) for k in ("rank", "node_rank", "pod", "code", "title", "line")}
            if first
            else None
        ),
        "errors": len(diagnosis.get("errors") or []),
    }


def _change(a: float | None, b: float | None) -> dict[str, float | None]:
    delta = b - a if a is not None and b is not None else None
    ratio = b / a if a is not None and b is not None and a != 0 else None
    return {"a": a, "b": b, "delta": _rounded(delta), "ratio": _rounded(ratio, 4)}


def compare_summaries(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """A (the earlier run) against B: per figure its two values, B - A and B / A, plus one line per
    difference worth saying (outcome, how far each got, the figures)."""
    changes = {key: _change(a.get(key), b.get(key)) for key in (*METRICS, "duration_s", "last_step")}
    return {"a": a, "b": b, "changes": changes, "notes": _notes(a, b, changes)}


def _notes(a: dict[str, Any], b: dict[str, Any], changes: dict[str, dict[str, Any]]) -> list[str]:
    notes = []
    if a.get("outcome") != b.get("outcome"):
        notes.append(f"outcome: {a.get('outcome') or '?'} -> {b.get('outcome') or '?'}")
    if a.get("first_failure") and not b.get("first_failure"):
        notes.append(f"the failure of A ({_failure(a)}) is gone in B")
    elif b.get("first_failure") and not a.get("first_failure"):
        notes.append(f"B fails where A did not: {_failure(b)}")
    elif a.get("first_failure") and b.get("first_failure"):
        notes.append(f"both fail: A {_failure(a)}; B {_failure(b)}")
    if a.get("least_step") != b.get("least_step"):
        notes.append(f"every rank reached step {a.get('least_step')} in A, {b.get('least_step')} in B")
    for key, label, better in (
        ("step_time_s", "step time", "lower"),
        ("throughput", "throughput", "higher"),
        ("loss", "final loss", "lower"),
    ):
        ratio = changes[key]["ratio"]
        if ratio is not None and abs(ratio - 1) >= 0.05:
            notes.append(f"{label} {ratio:.2f}x of A's ({better} is better)")
    return notes


def _failure(summary: dict[str, Any]) -> str:
    first = summary["first_failure"]
    return f"rank {first.get('rank')} {first.get('code') or 'error'}"


def compare_text(result: dict[str, Any]) -> str:
    """The comparison as a terminal table: one row per figure, A and B side by side, then the notes."""
    a, b = result["a"], result["b"]
    rows = [
        ["", f"A {str(a.get('run'))[:8]}", f"B {str(b.get('run'))[:8]}", "B vs A"],
        ["outcome", str(a.get("outcome")), str(b.get("outcome")), ""],
        ["duration (s)", *_pair(result, "duration_s")],
        ["last step", *_pair(result, "last_step")],
        ["final loss", *_pair(result, "loss")],
        ["step time (s)", *_pair(result, "step_time_s")],
        [
            f"throughput{' (' + a['throughput_unit'] + ')' if a.get('throughput_unit') else ''}",
            *_pair(result, "throughput"),
        ],
        ["diagnosis", _short(a.get("diagnosis")), _short(b.get("diagnosis")), ""],
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    return "\n".join(lines + [f"- {note}" for note in result["notes"]])


def _pair(result: dict[str, Any], key: str) -> list[str]:
    change = result["changes"][key]
    versus = f"{change['ratio']:.2f}x" if change["ratio"] is not None else "-"
    return [_num(change["a"]), _num(change["b"]), versus]


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _short(text: str | None, width: int = 60) -> str:
    text = text or "-"
    return text if len(text) <= width else text[: width - 3] + "..."
