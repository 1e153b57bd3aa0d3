"""A job's runs as one lineage, and what its faults cost: goodput and the time lost per fault.

Run 1 -> fault on node-5 NPU 3 at step 1,240 -> run 2 from checkpoint 1,200 -> ... Each run is what its
logs and its record say (`RunFacts`); a run joins the lineage through the run it resumed (`resumed_from`).
Per fault, at the step the failing rank had reached: detection (the fault to the run's end), restart (the
run's end to the first step of the next run) and the replayed steps (trained again after the checkpoint), as
steps and as time at the lineage's median step time. Goodput: the training steps kept per second of wall
time, from the first step of run 1 to the last step (or now, while the last run trains), and that rate as a
share of the rate at the median step time (1.0: no time lost).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import pairwise
from statistics import median
from typing import Any

LINEAGE_LABEL = "ranktable.io/lineage"  # the uid of the lineage's first run
RESUMED_FROM_LABEL = "ranktable.io/resumed-from"  # the uid of the run this one resumes
RESUMED_BY_LABEL = "ranktable.io/resumed-by"  # "auto" (the server's policy) or "hand"
RESUMED_STEP_LABEL = "ranktable.io/resumed-step"  # the checkpoint step the run started from


def resumed_labels(labels: dict[str, Any]) -> dict[str, Any] | None:
    """What a job's labels say of the run it resumed (None: a first run)."""
    if not labels.get(RESUMED_FROM_LABEL):
        return None
    step = str(labels.get(RESUMED_STEP_LABEL) or "")
    return {
        "from": labels[RESUMED_FROM_LABEL],
        "by": labels.get(RESUMED_BY_LABEL) or "hand",
        "step": int(step) if step.isdigit() else None,
        "lineage": labels.get(LINEAGE_LABEL) or labels[RESUMED_FROM_LABEL],
    }


@dataclass(frozen=True)
class RunFacts:
    """One run, as its logs and its record say."""

    uid: str
    created: float
    ended: float | None = None
    phase: str | None = None
    first_step: int | None = None
    first_step_time: float | None = None
    last_step: int | None = None
    last_step_time: float | None = None
    step_time_s: float | None = None  # the run's median step time
    resumed_from: str | None = None  # the uid of the run this one resumed
    from_step: int | None = None  # the checkpoint step it started from (None: from scratch)
    resumed_by: str | None = None  # "auto" (the server's policy) or "hand"
    fault: dict[str, Any] = field(default_factory=dict)  # node, device, rank, code, time of its fault
    last_checkpoint: int | None = None  # the last finished save it logged


def chain(runs: list[RunFacts]) -> list[RunFacts]:
    """The lineage of the newest run, oldest first: it, the run it resumed, that run's, ..."""
    if not runs:
        return []
    by_uid = {r.uid: r for r in runs}
    run: RunFacts | None = max(runs, key=lambda r: r.created)
    out: list[RunFacts] = []
    while run is not None and run not in out:
        out.append(run)
        run = by_uid.get(run.resumed_from or "")
    return out[::-1]


def _fault_text(run: RunFacts) -> str:
    fault = run.fault
    if not fault:
        return f"{run.phase or 'ended'} (no hardware fault blamed)"
    where = str(fault.get("node") or "?")
    if fault.get("device") not in (None, ""):
        where += f" NPU {fault['device']}"
    code = f" ({fault['code']})" if fault.get("code") else ""
    return f"fault on {where}{code}"


def lineage_report(runs: list[RunFacts], now: float) -> dict[str, Any]:
    """The lineage of the newest of `runs`: its runs, its faults with their cost, goodput, one text line."""
    line = chain(runs)
    if not line:
        return {"runs": [], "faults": [], "goodput": None, "text": "no runs"}
    medians = [r.step_time_s for r in line if r.step_time_s]
    step_s = median(medians) if medians else None
    faults = [_fault_cost(prev, nxt, step_s) for prev, nxt in pairwise(line)]
    first, last = line[0], line[-1]
    kept = None
    if last.last_step is not None:
        kept = last.last_step - ((first.first_step or 1) - 1)
    end = last.last_step_time if last.ended is not None else now
    if last.ended is not None and end is None:
        end = last.ended
    wall = None if first.first_step_time is None or end is None else max(0.0, end - first.first_step_time)
    goodput: dict[str, Any] | None = None
    if kept is not None and wall:
        rate = kept / wall
        share = min(1.0, rate * step_s) if step_s else None
        goodput = {
            "steps_kept": kept,
            "wall_s": round(wall, 3),
            "steps_per_s": round(rate, 4),
            "share": None if share is None else round(share, 4),
            "step_time_s": step_s,
            "lost_s": round(sum(f["lost_s"] or 0.0 for f in faults), 3),
        }
    return {
        "runs": [_run_json(i + 1, r) for i, r in enumerate(line)],
        "faults": faults,
        "goodput": goodput,
        "text": lineage_text(line, goodput),
    }


def _fault_cost(prev: RunFacts, nxt: RunFacts, step_s: float | None) -> dict[str, Any]:
    at = prev.fault.get("time") if prev.fault else None
    fault_time = at if isinstance(at, (int, float)) else prev.last_step_time
    detection = _span(fault_time, prev.ended)
    restart = _span(prev.ended, nxt.first_step_time)
    at_step = prev.fault.get("step") if prev.fault else None
    if not isinstance(at_step, int):
        at_step = prev.last_step
    replayed = None
    if at_step is not None:
        replayed = max(0, at_step - (nxt.from_step or 0))
    replay_s = None if replayed is None or step_s is None else replayed * step_s
    gap = _span(prev.last_step_time, nxt.first_step_time)
    lost = None if gap is None else gap + (replay_s or 0.0)
    return {
        "run": prev.uid,
        "next_run": nxt.uid,
        "at_step": at_step,
        "node": prev.fault.get("node") if prev.fault else None,
        "device": prev.fault.get("device") if prev.fault else None,
        "code": prev.fault.get("code") if prev.fault else None,
        "from_step": nxt.from_step,
        "resumed_by": nxt.resumed_by,
        "detection_s": _round(detection),
        "restart_s": _round(restart),
        "fault_to_first_step_s": _round(_span(fault_time, nxt.first_step_time)),
        "replayed_steps": replayed,
        "replay_s": _round(replay_s),
        "lost_s": _round(lost),
        "text": _fault_text(prev),
    }


def _span(start: float | None, end: float | None) -> float | None:
    return None if start is None or end is None else max(0.0, end - start)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _run_json(number: int, run: RunFacts) -> dict[str, Any]:
    return {
        "number": number,
        "uid": run.uid,
        "phase": run.phase,
        "created": run.created,
        "ended": run.ended,
        "first_step": run.first_step,
        "last_step": run.last_step,
        "from_step": run.from_step,
        "resumed_from": run.resumed_from,
        "resumed_by": run.resumed_by,
        "last_checkpoint": run.last_checkpoint,
        "fault": run.fault or None,
    }


def lineage_text(line: list[RunFacts], goodput: dict[str, Any] | None) -> str:
    """run 1 (abc12345) steps 1-1,240 -> fault on node-5 NPU 3 (CODE) at step 1,240 -> run 2 ..."""
    parts = []
    for i, run in enumerate(line):
        start = "from scratch" if run.from_step is None else f"from checkpoint {run.from_step:,}"
        steps = "" if run.last_step is None else f" steps {run.first_step or 1:,}-{run.last_step:,}"
        head = f"run {i + 1} ({run.uid[:8]})" + (f" {start}" if i else "") + steps
        if run.resumed_by == "auto":
            head += " [auto-resumed]"
        parts.append(head)
        if i + 1 < len(line):
            step = run.fault.get("step") if isinstance(run.fault.get("step"), int) else run.last_step
            at = "" if step is None else f" at step {step:,}"
            parts.append(_fault_text(run) + at)
    text = " -> ".join(parts)
    if goodput is not None:
        share = "" if goodput["share"] is None else f" ({goodput['share']:.0%} of the fault-free rate)"
        text += (
            f"; goodput {goodput['steps_kept']:,} steps kept in {goodput['wall_s']:.0f} s{share}, "
            f"{goodput['lost_s']:.0f} s lost to {len(line) - 1} fault(s)"
        )
    return text
