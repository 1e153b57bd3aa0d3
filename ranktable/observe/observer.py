"""RunObserver: feed a run's log lines (live or archived) and get metrics and a diagnosis at any time.

Cheap per line: a batch of lines from one pod is scanned once by the error automaton; each line costs a
few substring checks unless it carries a metric. State per rank is small and bounded (see series.py),
so a 1,024-rank run fits in a few tens of MB whatever its length.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from ranktable.observe.catalogue import Catalogue, catalogue, named_peer
from ranktable.observe.layout import RankLayout
from ranktable.observe.parsers import LineParser, compile_user_patterns
from ranktable.observe.series import Alerts, RankSeries
from ranktable.observe.settings import ObserveSettings
from ranktable.observe.template import MAX_TEMPLATES, Template, learn, match, parsed_by_plain
from ranktable.observe.text import clean, inline_time, kube_time, rank_tag
from ranktable.observe.triage import (
    ErrorEvent,
    advice,
    better,
    first_failure,
    hung,
    iso,
    shared_switch,
    stragglers,
)

# Error lines name their rank in several ways: torch_npu ``(PID:1, Device:0, RankID:13)``, DeepSpeed and
# the watchdog ``[Rank 5]``, plain prints ``rank 13 ...``.
_LINE_RANK = re.compile(r"RankID:\s*(\d+)|\[Rank (\d+)\]|^rank[\s:=]+(\d+)\b")


def line_time(stamp: str, text: str) -> float | None:
    """Wall time of a line: the kubelet's RFC 3339 stamp, else a date-time printed in the line."""
    when = kube_time(stamp) if stamp else None
    return when if when is not None else inline_time(text)


class RunObserver:
    def __init__(
        self,
        layout: RankLayout | None = None,
        settings: ObserveSettings | None = None,
        patterns: Sequence[str] = (),
        errors: Catalogue | None = None,
        templates: bool = True,
    ) -> None:
        self.layout = layout or RankLayout([])
        self.settings = settings or ObserveSettings()
        user = compile_user_patterns([*self.settings.patterns, *patterns])
        self.parser = LineParser(user)
        self._always_parse = bool(user)
        # learned line templates per pod (see template.py); off with user patterns, which come first
        self._templates: dict[str, list[Template]] | None = {} if templates and not user else None
        self.catalogue = errors or catalogue()
        self.series: dict[int, RankSeries] = {}
        self.alerts = Alerts(self.settings.spike_factor)
        self.errors: dict[int, ErrorEvent] = {}
        self.error_counts: dict[str, int] = {}
        self.progress: dict[int, tuple[float, int | None]] = {}
        self.clock: float | None = None  # the newest log time seen
        self.lines = 0
        self._named: dict[str, int] = {}  # pod -> the rank its last rank-naming metric line named
        self.pod_ends: dict[str, float] = {}  # pod -> when its container ended (any exit code)

    # -- feeding ------------------------------------------------------------------------------------
    def feed(self, pod: str, node_rank: int, lines: Sequence[tuple[str, str]]) -> None:
        """A batch of (kubelet timestamp or "", text) lines of one pod, in order."""
        if not lines:
            return
        self.lines += len(lines)
        has_errors = self.catalogue.any_error("\n".join(text for _, text in lines))
        default = self.layout.default_rank(pod, node_rank)
        always = self._always_parse
        known = self._templates.setdefault(pod, []) if self._templates is not None else None
        order = self.parser.order
        seen_stamp, seen_time = "", None  # lines of one step share a stamp: convert it once
        for stamp, text in lines:
            if "\r" in text or "\x1b" in text:
                text = clean(text)
            rank, tagged = default, False
            if text.startswith("["):
                end = text.find("]:", 0, 24)
                if text.startswith("[rank") and text[5:end].isdigit():  # rank_tag's common case, inline
                    rank, tagged, text = int(text[5:end]), True, text[end + 2 :]
                    if text.startswith(" "):
                        text = text[1:]
                elif (tag := rank_tag(text)) is not None:
                    kind, number, text = tag
                    tagged = True
                    rank = number if kind == "rank" else (self.layout.local_rank(pod, number) or default)
            if always or "loss" in text or "step" in text or "iteration" in text or "Loss" in text:
                parsed: tuple[str, Any] | None = None
                found = match(known, text) if known else None
                if found is not None and (found[0].fields is None or parsed_by_plain(order)):
                    template = found[0]
                    parsed = None if template.fields is None else ("plain", template.sample(found[1]))
                else:
                    parsed = self.parser.parse(text)
                    if known is not None and len(known) < MAX_TEMPLATES and found is None:
                        learned = learn(text, *(parsed or (None, None)))
                        if learned is not None:
                            known.append(learned)
                if parsed is not None:
                    if stamp != seen_stamp:
                        seen_stamp, seen_time = stamp, kube_time(stamp) if stamp else None
                    when = seen_time if seen_time is not None else inline_time(text)
                    sample = parsed[1]
                    if "rank" in sample:
                        rank = self._named[pod] = sample["rank"]
                    elif tagged:
                        self._named[pod] = rank
                    else:  # an untagged line continues the record of the rank named last in this pod
                        rank = self._named.get(pod, rank)
                    self._metric(sample, rank, when)
                    continue
            if has_errors:
                self._error(pod, node_rank, rank, stamp, text)
        last_stamp, last_text = lines[-1]
        when = line_time(last_stamp, last_text)
        if when is not None and (self.clock is None or when > self.clock):
            self.clock = when

    def feed_lines(self, lines: Iterable[Any]) -> None:
        """Objects with ``pod``, ``node_rank``, ``timestamp`` and ``text`` (the cluster's LogLine), batched
        per pod as they come."""
        batch: list[tuple[str, str]] = []
        current: tuple[str, int] | None = None
        for line in lines:
            key = (line.pod, line.node_rank)
            if key != current and batch and current is not None:
                self.feed(current[0], current[1], batch)
                batch = []
            current = key
            batch.append((line.timestamp, line.text))
        if batch and current is not None:
            self.feed(current[0], current[1], batch)

    def _metric(self, sample: dict[str, Any], rank: int, when: float | None) -> None:
        series = self.series.get(rank)
        if series is None:
            series = self.series[rank] = RankSeries(self.settings.max_points)
        step, _ = series.add(sample, when)
        loss = sample.get("loss")
        if loss is not None:
            self.alerts.check(rank, series, loss, step, when)
        if when is not None:
            self.progress[rank] = (when, step)

    def _error(self, pod: str, node_rank: int, rank: int, stamp: str, text: str) -> None:
        signature = self.catalogue.classify(text)
        if signature is None:
            return
        self.error_counts[signature.code] = self.error_counts.get(signature.code, 0) + 1
        match = _LINE_RANK.search(text)
        if match is not None:
            rank = int(next(g for g in match.groups() if g is not None))
        event = ErrorEvent(
            rank, node_rank, pod, line_time(stamp, text), signature, text.strip(), named_peer(text)
        )
        current = self.errors.get(rank)
        if current is None:
            self.errors[rank] = event
        elif better(current, event):
            event.time = current.time if current.time is not None else event.time
            self.errors[rank] = event

    def pod_ended(self, pod: str, when: float | None) -> None:
        """A pod's container ended (any exit code): its ranks are not hung after that."""
        if when is not None:
            self.pod_ends[pod] = min(when, self.pod_ends.get(pod, when))

    def _stopped(self) -> dict[int, float]:
        """When each rank stopped for a known reason: its first error, or its pod's end."""
        out = {rank: e.time for rank, e in self.errors.items() if e.time is not None}
        for pod, when in self.pod_ends.items():
            for place in self.layout.by_pod.get(pod, []):
                out[place.rank] = min(when, out.get(place.rank, when))
        return out

    def pod_exit(
        self, pod: str, node_rank: int, exit_code: int | None, reason: str | None, when: float | None
    ) -> None:
        """A container's last termination from the pod status (exit 137/OOMKilled, 139...)."""
        signature = self.catalogue.exit_signature(exit_code, reason)
        if signature is None:
            return
        if exit_code == 137 and reason != "OOMKilled":  # killed by a supervisor: usually a teardown
            signature = type(signature)(**{**signature.__dict__, "role": "victim"})
        rank = self.layout.default_rank(pod, node_rank)
        line = f"container exited with code {exit_code}" + (f" ({reason})" if reason else "")
        current = self.errors.get(rank)
        event = ErrorEvent(rank, node_rank, pod, when, signature, line)
        if current is None or (signature.role == "primary" and current.signature.role != "primary"):
            self.errors[rank] = event

    # -- results ------------------------------------------------------------------------------------
    def metrics_json(self) -> dict[str, Any]:
        return {
            "ranks": {str(rank): s.to_json() for rank, s in sorted(self.series.items())},
            "alerts": self.alerts.to_json(),
        }

    def diagnose(
        self, phase: str = "Unknown", now: float | None = None, pending: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        medians = {r: m for r, s in self.series.items() if (m := s.median_step_time()) is not None}
        job_median, slow = stragglers(medians, self.layout, self.settings.straggler_factor)
        silent = hung(self.progress, job_median, self.layout, self.settings, now, self._stopped())
        first = first_failure(self.errors)
        ranks = max(len(self.layout), len(self.series), len(self.errors))
        errors = sorted(
            self.errors.values(), key=lambda e: (e.time if e.time is not None else float("inf"), e.rank)
        )
        result = {
            "phase": phase,
            "first_failure": first.to_json(self.layout) if first else None,
            "errors": [e.to_json(self.layout) for e in errors],
            "stragglers": slow,
            "hung": silent,
            "pending": pending,
            "advice": advice(first, self.errors, ranks, self.settings) + shared_switch(slow, silent),
            "job_median_step_time_s": round(job_median, 6) if job_median is not None else None,
            "error_counts": dict(sorted(self.error_counts.items())),
            "log_time": iso(self.clock),
            "lines": self.lines,
        }
        result["summary"] = summary(result)
        return result


def summary(diagnosis: dict[str, Any]) -> str:
    """One line for notifications and tables."""
    first = diagnosis.get("first_failure")
    if first:
        where = ", ".join(f"{k} {first[k]}" for k in ("server", "leaf") if first.get(k))
        who = f"rank {first['rank']}" if first.get("rank") is not None else f"node rank {first['node_rank']}"
        place = first["pod"] + (", " + where if where else "")
        return f"{diagnosis['phase']}: {who} ({place}) failed first: {first['code']} - {first['title']}"
    parts = []
    if diagnosis.get("hung"):
        parts.append("hung rank(s) " + ", ".join(str(h["rank"]) for h in diagnosis["hung"][:5]))
    if diagnosis.get("stragglers"):
        parts.append(
            "straggler(s) "
            + ", ".join(f"{s['rank']} ({s['ratio']:.2f}x)" for s in diagnosis["stragglers"][:5])
        )
    pending = diagnosis.get("pending")
    if pending and pending.get("reason"):
        parts.append(str(pending["reason"]))
    return f"{diagnosis['phase']}: " + ("; ".join(parts) if parts else "no errors found")
