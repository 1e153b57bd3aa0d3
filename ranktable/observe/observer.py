"""RunObserver: feed a run's log lines (live or archived) and get metrics and a diagnosis at any time.

Cheap per line: a batch of lines from one pod is scanned once by the error automaton; each line costs a
few substring checks unless it carries a metric. State per rank is small and bounded (see series.py),
so a 1,024-rank run fits in a few tens of MB whatever its length.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from ranktable.observe.catalogue import Catalogue, catalogue, named_peer
from ranktable.observe.fastpath import Group, PodShapes, match_batch
from ranktable.observe.layout import RankLayout
from ranktable.observe.parsers import LineParser, compile_user_patterns
from ranktable.observe.series import MAX_ALERTS, Alerts, RankSeries, Rows
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
FLUSH_ROWS = 1 << 16  # template rows held before they are merged into the series (about 6 MB)
OPTIONAL = ("throughput", "lr", "grad_norm")
FEW_ROWS = 32  # a rank with fewer held rows is merged row by row
HELD: dict[str, Any] = {  # held row columns: rank, step (-1: none), time and step time (NaN: none), ...
    "rank": np.int64,
    "step": np.int64,
    "when": np.float64,
    "loss": np.float64,
    "step_time": np.float64,
    "unit": object,
    **{name: np.float64 for name in OPTIONAL},
}


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
        self._series: dict[int, RankSeries] = {}
        self._alerts = Alerts(self.settings.spike_factor)
        self.errors: dict[int, ErrorEvent] = {}
        self.error_counts: dict[str, int] = {}
        self._progress: dict[int, tuple[float, int | None]] = {}
        self._shapes: dict[str, PodShapes] = {}
        self._held: dict[str, list[Any]] = {name: [] for name in HELD}  # rows not merged yet (see _flush)
        self._held_rows = 0
        self.clock: float | None = None  # the newest log time seen
        self.lines = 0
        self._named: dict[str, int] = {}  # pod -> the rank its last rank-naming metric line named
        self.pod_ends: dict[str, float] = {}  # pod -> when its container ended (any exit code)

    # -- state, with held template rows merged first ------------------------------------------------
    @property
    def series(self) -> dict[int, RankSeries]:
        self._flush()
        return self._series

    @property
    def alerts(self) -> Alerts:
        self._flush()
        return self._alerts

    @property
    def progress(self) -> dict[int, tuple[float, int | None]]:
        self._flush()
        return self._progress

    # -- feeding ------------------------------------------------------------------------------------
    def feed(self, pod: str, node_rank: int, lines: Sequence[tuple[str, str]]) -> None:
        """A batch of (kubelet timestamp or "", text) lines of one pod, in order."""
        if not lines:
            return
        self.lines += len(lines)
        texts = [text for _, text in lines]
        joined = "\n".join(texts)
        has_errors = self.catalogue.any_error(joined)
        stamps = [stamp for stamp, _ in lines]
        times = {stamp: kube_time(stamp) if stamp else None for stamp in dict.fromkeys(stamps)}
        if not self._feed_bulk(pod, node_rank, lines, texts, joined, has_errors, stamps, times):
            self._flush()
            self._feed_lines(pod, node_rank, lines, has_errors)
        self._advance_clock(times, lines)

    def _advance_clock(self, times: dict[str, float | None], lines: Sequence[tuple[str, str]]) -> None:
        """The newest time of any line (out-of-order lines too), as if they came one by one."""
        known = [t for t in times.values() if t is not None]
        if len(known) < len(times):
            known += [t for s, text in lines if times[s] is None and (t := inline_time(text)) is not None]
        if known and (self.clock is None or max(known) > self.clock):
            self.clock = max(known)

    def _feed_lines(
        self, pod: str, node_rank: int, lines: Sequence[tuple[str, str]], has_errors: bool
    ) -> None:
        """The line path: each line's tag, template or parsers, metric or error, in turn."""
        default = self.layout.default_rank(pod, node_rank)
        always = self._always_parse
        known = self._templates.setdefault(pod, []) if self._templates is not None else None
        order = self.parser.order
        seen_stamp, seen_time = "", None  # lines of one step share a stamp: convert it once
        for stamp, text in lines:
            if "\r" in text or "\x1b" in text:
                text = clean(text)
            rank, tagged, text = self._tag(pod, default, text)
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

    # -- the bulk path: whole batches of template lines -----------------------------------------------
    def _feed_bulk(
        self,
        pod: str,
        node_rank: int,
        lines: Sequence[tuple[str, str]],
        texts: list[str],
        joined: str,
        has_errors: bool,
        stamps: list[str],
        times: dict[str, float | None],
    ) -> bool:
        """Read a batch whose every possible metric line fits a learned template (fastpath.py) and hold its
        rows; False (nothing changed) when the line path must read it."""
        if self._templates is None:
            return False
        known = self._templates.get(pod)
        if not known:
            return False
        shapes = self._shapes.setdefault(pod, PodShapes())
        if shapes.known != len(known):
            shapes.update(known)
        groups = match_batch(shapes, texts, joined)
        if groups is None:
            return False
        metric = [g for g in groups if g.shape.template.fields is not None]
        if metric and not parsed_by_plain(self.parser.order):
            return False
        if metric:
            rows = self._rows(pod, node_rank, stamps, texts, metric, times)
            for name, values in rows.items():
                self._held[name].extend(values)
            self._held_rows += len(rows["rank"])
        if has_errors:
            taken = {i for g in metric for i in g.lines}
            default = self.layout.default_rank(pod, node_rank)
            for index, (stamp, text) in enumerate(lines):
                if index not in taken:
                    rank, _, text = self._tag(pod, default, text)
                    self._error(pod, node_rank, rank, stamp, text)
        if self._held_rows >= FLUSH_ROWS:
            self._flush()
        return True

    def _tag(self, pod: str, default: int, text: str) -> tuple[int, bool, str]:
        """The rank a line's torchrun tag names (else `default`), whether it had one, and the rest."""
        if not text.startswith("["):
            return default, False, text
        end = text.find("]:", 0, 24)
        if text.startswith("[rank") and text[5:end].isdigit():  # rank_tag's common case, inline
            rank, text = int(text[5:end]), text[end + 2 :]
            return rank, True, text[1:] if text.startswith(" ") else text
        tag = rank_tag(text)
        if tag is None:
            return default, False, text
        kind, number, text = tag
        return number if kind == "rank" else (self.layout.local_rank(pod, number) or default), True, text

    def _rows(
        self,
        pod: str,
        node_rank: int,
        stamps: list[str],
        texts: list[str],
        groups: list[Group],
        times: dict[str, float | None],
    ) -> dict[str, Any]:
        """The batch's template rows in log order: rank, step (-1: none), time (NaN: none), fields."""
        parts = [_group_rows(group) for group in groups]
        rows = parts[0]
        if len(parts) > 1:
            lines = [line for part in parts for line in part["line"]]
            order = sorted(range(len(lines)), key=lines.__getitem__)
            rows = {name: [v for part in parts for v in part[name]] for name in rows}
            rows = {name: [values[i] for i in order] for name, values in rows.items()}
        rows["when"] = self._times(stamps, texts, rows.pop("line"), times)
        default = self.layout.default_rank(pod, node_rank)
        rows["rank"] = self._ranks(pod, default, rows.pop("tag"), rows.pop("named"))
        return rows

    def _times(
        self, stamps: list[str], texts: list[str], lines: list[int], times: dict[str, float | None]
    ) -> list[float]:
        """Each row's time from its stamp's (NaN: none), else from the text."""
        when: list[Any] = list(map(times.__getitem__, map(stamps.__getitem__, lines)))
        if None in times.values():
            for at, value in enumerate(when):
                if value is None:
                    _, _, text = self._tag("", -1, texts[lines[at]])
                    found = inline_time(text)
                    when[at] = math.nan if found is None else found
        return when

    def _ranks(self, pod: str, default: int, tags: list[int], named: list[int]) -> list[int]:
        """Rows' ranks as the line path assigns them: a rank field, else the tag, else the last one named
        (-1 in `tags` and `named`: none)."""
        if named.count(-1) == len(named) and -1 not in tags:
            if tags:
                self._named[pod] = tags[-1]
            return tags
        out = []
        for tag, name in zip(tags, named, strict=True):
            if name >= 0:
                rank = self._named[pod] = name
            elif tag >= 0:
                rank = self._named[pod] = tag
            else:
                rank = self._named.get(pod, default)
            out.append(rank)
        return out

    def _flush(self) -> None:
        """Merge the held template rows into the series, rank by rank, as add() would have row by row."""
        if not self._held_rows:
            return
        held, self._held_rows = self._held, 0
        self._held = {name: [] for name in HELD}
        rows = {name: np.array(held[name], dtype=HELD[name]) for name in HELD}
        ranks = rows["rank"]
        order = np.argsort(ranks, kind="stable")
        bounds = np.flatnonzero(np.diff(ranks[order])) + 1
        if len(self._alerts.items) + 3 * (len(bounds) + 1) > MAX_ALERTS:  # which alerts fit depends on order
            self._replay(rows, np.arange(len(ranks)))
            return
        for part in np.split(order, bounds):
            if len(part) < FEW_ROWS:  # array steps cost more than they save
                self._replay(rows, part)
            else:
                self._extend(int(ranks[part[0]]), rows, part)

    def _extend(self, rank: int, rows: dict[str, np.ndarray], part: np.ndarray) -> None:
        series = self._series.get(rank)
        if series is None:
            series = self._series[rank] = RankSeries(self.settings.max_points)
        picked = Rows(
            rows["step"][part],
            rows["when"][part],
            {name: rows[name][part] for name in ("loss", "step_time", *OPTIONAL)},
            rows["unit"][part],
        )
        steps = series.extend(picked)
        self._alerts.check_many(rank, series, picked.loss, steps, picked.when)
        timed = np.flatnonzero(~np.isnan(picked.when))
        if len(timed):
            self._progress[rank] = (float(picked.when[timed[-1]]), int(steps[timed[-1]]))

    def _replay(self, rows: dict[str, np.ndarray], part: np.ndarray) -> None:
        """Held rows one by one through _metric, in the order given."""
        names = ("rank", "step", "when", "loss", "step_time", "unit", *OPTIONAL)
        picked = {name: rows[name][part].tolist() for name in names}
        for at in range(len(part)):
            sample: dict[str, Any] = {"loss": picked["loss"][at]}
            if picked["step"][at] >= 0:
                sample["step"] = picked["step"][at]
            if picked["step_time"][at] == picked["step_time"][at]:
                sample["step_time_s"] = picked["step_time"][at]
            for name in OPTIONAL:
                if picked[name][at] == picked[name][at]:
                    sample[name] = picked[name][at]
            if picked["unit"][at]:
                sample["throughput_unit"] = picked["unit"][at]
            when = picked["when"][at]
            self._metric(sample, picked["rank"][at], None if when != when else when)

    def _metric(self, sample: dict[str, Any], rank: int, when: float | None) -> None:
        series = self._series.get(rank)
        if series is None:
            series = self._series[rank] = RankSeries(self.settings.max_points)
        step, _ = series.add(sample, when)
        loss = sample.get("loss")
        if loss is not None:
            self._alerts.check(rank, series, loss, step, when)
        if when is not None:
            self._progress[rank] = (when, step)

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


def _ints(values: list[bytes]) -> list[int]:
    """int() of each value, once per distinct value (tags and steps repeat)."""
    read = {value: int(value) for value in dict.fromkeys(values)}
    return list(map(read.__getitem__, values))


def _floats(values: list[bytes]) -> list[float]:
    """float() of each value, once per distinct value (learning rates and norms often repeat)."""
    read = {value: float(value) for value in dict.fromkeys(values)}
    return list(map(read.__getitem__, values))


def _group_rows(group: Group) -> dict[str, list[Any]]:
    """One shape's rows (see HELD), with their line numbers and tag and named ranks (-1: none)."""
    count = len(group.lines)
    read = {name: (group.columns[slot], kind) for name, slot, kind in group.shape.fields}
    missing = [-1] * count
    out: dict[str, list[Any]] = {
        "line": group.lines,
        "tag": _ints(group.columns[0]) if group.shape.tagged else missing,
        "named": _ints(read["rank"][0]) if "rank" in read else missing,
        "step": _ints(read["step"][0]) if "step" in read else missing,
        "loss": list(map(float, read["loss"][0])),
        "step_time": [math.nan] * count,
        "unit": [group.shape.template.unit] * count,
    }
    if "step_time_s" in read:
        column, kind = read["step_time_s"]
        values = list(map(float, column))
        out["step_time"] = [v * 0.001 for v in values] if kind == "ms" else values
    for name in OPTIONAL:
        out[name] = _floats(read[name][0]) if name in read else [math.nan] * count
    return out


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
