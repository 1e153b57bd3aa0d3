"""Triage of one run: each rank's first error, the first failing rank, stragglers and hung ranks.

Follows the Ascend practice (docs/observability.md): a fault that starts a failure ("primary": OOM,
segfault, EJ0001, exceptions...) beats the timeouts other ranks report while waiting for it ("victim":
EI0006, EI0002, watchdog); among victims, a rank that a message names as the remote peer beats the
earliest reporter; otherwise the earliest error wins.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timezone
from statistics import median
from typing import Any

from ranktable.observe.catalogue import PRIMARY, Signature
from ranktable.observe.layout import RankLayout, RankPlace
from ranktable.observe.settings import ObserveSettings

UPGRADE_WINDOW_S = 30.0  # a more specific line this soon after a generic one tells what the error was
COMMON_WINDOW_S = 60.0  # every rank failing with the same error within this many seconds: one cause on all
MAX_LINE = 500


@dataclass
class ErrorEvent:
    rank: int
    node_rank: int
    pod: str
    time: float | None
    signature: Signature
    line: str
    peer: int | None = None

    def to_json(self, layout: RankLayout) -> dict[str, Any]:
        place = layout.place(self.rank)
        return {
            "rank": self.rank if self.rank >= 0 else None,
            "node_rank": self.node_rank,
            "pod": self.pod,
            "server": place.server if place else None,
            "device": place.device if place else None,
            "leaf": place.leaf if place else None,
            "time": iso(self.time),
            "code": self.signature.code,
            "role": self.signature.role,
            "title": self.signature.title,
            "line": self.line[:MAX_LINE],
            "explanation": self.signature.explanation,
            "fix": self.signature.fix,
            "source": self.signature.source,
            **({"peer": self.peer} if self.peer is not None else {}),
        }


def iso(when: float | None) -> str | None:
    if when is None:
        return None
    return datetime.fromtimestamp(when, timezone.utc).isoformat().replace("+00:00", "Z")


def better(current: ErrorEvent, new: ErrorEvent) -> bool:
    """Whether ``new`` (later on the same rank) names the error more precisely than ``current``."""
    if new.signature.specificity < current.signature.specificity:
        return False
    if new.signature.specificity == current.signature.specificity and not (
        new.signature.role == PRIMARY and current.signature.role != PRIMARY
    ):
        return False  # a cause printed after its wrapper (EE9999 after "HCCL function error") names it
    if current.time is None or new.time is None:
        return True
    return new.time - current.time <= UPGRADE_WINDOW_S


def earlier(current: ErrorEvent, new: ErrorEvent) -> bool:
    """Whether ``new`` (read after ``current`` on the same rank) was printed well before it: an older
    container's log read after the current one's (more than the upgrade window apart, so the lines of one
    message never reorder)."""
    if current.time is None or new.time is None:
        return False
    return new.time < current.time - UPGRADE_WINDOW_S


def first_failure(errors: dict[int, ErrorEvent], layout: RankLayout | None = None) -> ErrorEvent | None:
    """The earliest primary fault; else the rank the victims name (monitored barrier, remote rank), even
    one with no error of its own; else the earliest report."""
    if not errors:
        return None
    events = list(errors.values())
    key = lambda e: (e.time if e.time is not None else math.inf, e.rank)  # noqa: E731
    primaries = [e for e in events if e.signature.role == PRIMARY]
    if primaries:
        return min(primaries, key=key)
    named = Counter(e.peer for e in events if e.peer is not None and e.peer != e.rank)
    if named:
        peer, _ = named.most_common(1)[0]
        if peer in errors:
            return errors[peer]
        reporter = min((e for e in events if e.peer == peer), key=key)
        place = layout.place(peer) if layout is not None else None
        return ErrorEvent(
            peer,
            place.node_rank if place else reporter.node_rank,
            place.pod if place else reporter.pod,
            reporter.time,
            reporter.signature,
            f"named by rank {reporter.rank}: {reporter.line}",
        )
    return min(events, key=key)


def common_cause(errors: dict[int, ErrorEvent], layout: RankLayout) -> dict[str, Any] | None:
    """Every rank of the run failed with the same error within COMMON_WINDOW_S: one cause on all ranks
    (the same script, data, configuration or environment), not one failure and its victims."""
    if len(errors) < 2:
        return None
    events = list(errors.values())
    codes = {e.signature.code for e in events}
    if len(codes) != 1:
        return None
    if len(layout) and not set(layout.by_rank) <= set(errors):
        return None  # a rank with no error may be the one the others wait for
    times = [e.time for e in events if e.time is not None]
    spread = max(times) - min(times) if times else 0.0
    if spread > COMMON_WINDOW_S:
        return None
    signature = events[0].signature
    return {
        "code": signature.code,
        "title": signature.title,
        "ranks": len(events),
        "spread_s": round(spread, 3),
    }


def silent_ranks(errors: dict[int, ErrorEvent], layout: RankLayout) -> list[int]:
    """Ranks of the layout that reported nothing while every other one reported the same timeout."""
    if len(errors) < 2 or not len(layout):
        return []
    if len({e.signature.code for e in errors.values()}) != 1:
        return []
    if any(e.signature.role == PRIMARY for e in errors.values()):
        return []
    return sorted(set(layout.by_rank) - set(errors))


def advice(
    first: ErrorEvent | None,
    errors: dict[int, ErrorEvent],
    ranks: int,
    settings: ObserveSettings,
    common: dict[str, Any] | None = None,
    silent: list[int] | None = None,
) -> list[str]:
    """Hints that need the whole timeline, e.g. whether EI0006 calls for a longer HCCL_CONNECT_TIMEOUT."""
    if first is None:
        return []
    out: list[str] = []
    if common is not None:
        return [
            f"every rank ({common['ranks']}) failed with {common['code']} within {common['spread_s']:.0f} s: "
            "one cause common to all ranks (the same script, data, configuration or environment), "
            "not one failure and its victims"
        ]
    if silent:
        shown = ", ".join(map(str, silent[:8])) + (" ..." if len(silent) > 8 else "")
        return [
            f"every rank that reported an error reports {first.signature.code}; rank(s) {shown} reported "
            "nothing: look at them first (stuck, slow or dead before the collective)"
        ]
    same = [e for e in errors.values() if e.signature.code == first.signature.code and e.time is not None]
    others = len(errors) - 1
    if first.signature.code == "EI0006" and same:
        spread = max(e.time for e in same if e.time is not None) - min(
            e.time for e in same if e.time is not None
        )
        if len(same) >= ranks and spread > settings.connect_timeout_s:
            suggested = int(math.ceil((spread + settings.connect_timeout_s) / 60.0) * 60)
            out.append(
                f"every rank reports EI0006 and reports are {spread:.0f} s apart (> HCCL_CONNECT_TIMEOUT "
                f"{settings.connect_timeout_s:.0f} s): set HCCL_CONNECT_TIMEOUT={suggested} or more"
            )
        elif others:
            out.append(
                f"rank {first.rank} reported first; {others} other rank(s) failed after it and are "
                "probably waiting for it: fix rank "
                f"{first.rank} (node rank {first.node_rank}) first"
            )
    elif others:
        out.append(f"{others} other rank(s) failed later; they are probably victims of rank {first.rank}")
    return out


def stragglers(
    medians: dict[int, float], layout: RankLayout, factor: float
) -> tuple[float | None, list[dict[str, Any]]]:
    if len(medians) < 2:
        return None, []
    job = median(medians.values())
    if job <= 0:
        return job, []
    out = []
    for rank, value in sorted(medians.items()):
        ratio = value / job
        if ratio >= factor:
            out.append(
                {**_where(rank, layout), "ratio": round(ratio, 3), "median_step_time_s": round(value, 6)}
            )
    out.sort(key=lambda s: -s["ratio"])
    return job, out


def hung(
    last_progress: dict[int, tuple[float, int | None]],
    job_median: float | None,
    layout: RankLayout,
    settings: ObserveSettings,
    now: float | None,
    stopped: dict[int, float] | None = None,
) -> list[dict[str, Any]]:
    """Ranks silent longer than max(hang_factor x median step time, hang_floor_s) while another rank
    progressed within that time. A rank that failed or whose pod ended is silent only until then."""
    if len(last_progress) < 2:
        return []
    threshold = max(settings.hang_factor * (job_median or 0.0), settings.hang_floor_s)
    newest = max(t for t, _ in last_progress.values())
    clock = max(now or newest, newest)
    out = []
    stopped = stopped or {}
    for rank, (when, step) in sorted(last_progress.items()):
        until = min(newest, stopped.get(rank, newest))
        if until - when > threshold:
            out.append(
                {
                    **_where(rank, layout),
                    "silent_s": round(clock - when, 1),
                    "last_step": step,
                    "threshold_s": round(threshold, 1),
                }
            )
    return out


def shared_switch(slow: list[dict[str, Any]], silent: list[dict[str, Any]]) -> list[str]:
    """Several slow or hung ranks under one leaf switch (on different servers): suspect the switch."""
    by_leaf: dict[str, set[str]] = {}
    ranks: dict[str, list[int]] = {}
    for entry in [*slow, *silent]:
        if entry.get("leaf"):
            by_leaf.setdefault(entry["leaf"], set()).add(str(entry.get("server")))
            ranks.setdefault(entry["leaf"], []).append(entry["rank"])
    return [
        f"slow/hung ranks {', '.join(map(str, sorted(set(ranks[leaf]))))} on {len(servers)} servers "
        f"share leaf {leaf}: suspect that switch or its uplinks"
        for leaf, servers in sorted(by_leaf.items())
        if len(servers) >= 2
    ]


def _where(rank: int, layout: RankLayout) -> dict[str, Any]:
    place: RankPlace | None = layout.place(rank)
    return {
        "rank": rank,
        "node_rank": place.node_rank if place else None,
        "pod": place.pod if place else None,
        "server": place.server if place else None,
        "device": place.device if place else None,
        "leaf": place.leaf if place else None,
    }
