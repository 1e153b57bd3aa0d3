"""RunObserver: feed a run's log lines (live or archived) and get metrics and a diagnosis at any time.

Cheap per line: fed batches are read later and together (see feed), lines that fit a learned template in
bulk with numpy (fastpath.py), the rest one by one; the error automaton scans each read once. State per
rank is small and bounded (see series.py), so a 1,024-rank run fits in a few tens of MB whatever its
length; unread batches and held rows are capped too (PENDING_LINES, FLUSH_ROWS).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from itertools import accumulate, pairwise
from operator import itemgetter
from typing import Any

import numpy as np

from ranktable.observe.catalogue import CONTEXT, Catalogue, catalogue, named_peer, refine
from ranktable.observe.checkpoints import Checkpoint, checkpoint_saved
from ranktable.observe.fastpath import Group, PodShapes, match_batch, match_pods
from ranktable.observe.layout import RankLayout
from ranktable.observe.parsers import LineParser, compile_user_patterns
from ranktable.observe.series import MAX_ALERTS, Alerts, RankSeries, Rows
from ranktable.observe.settings import ObserveSettings
from ranktable.observe.template import MAX_TEMPLATES, Template, learn, match, parsed_by_plain
from ranktable.observe.text import clean, inline_time, kube_time, kube_time_array, line_prefix
from ranktable.observe.triage import (
    UPGRADE_WINDOW_S,
    ErrorEvent,
    advice,
    better,
    common_cause,
    earlier,
    first_failure,
    hung,
    iso,
    shared_switch,
    silent_ranks,
    stragglers,
)

# Error lines name their rank in several ways: torch_npu ``(PID:1, Device:0, RankID:13)``, DeepSpeed and
# the watchdog ``[Rank 5]`` / ``[PG 1 Rank 5]``, Megatron ``Rank 11: found NaN`` / ``Rank 2, node ...``,
# plain prints ``rank 13 ...``; torchrun's ``failed (exitcode: -11) local_rank: 2`` names a local rank and
# an OOM message its NPU (``(NPU 3; ...``).
_LINE_RANK = re.compile(r"RankID:\s*(\d+)|\bRank (\d+)[\]:,]|^rank[\s:=]+(\d+)\b")
_LOCAL_RANK = re.compile(r"\(exitcode: -?\d+\) local_rank: (\d+)")
_NPU_INDEX = re.compile(r"\(NPU (\d+);")
_SUMMARY_RANK = re.compile(r"^\s*rank\s*:\s*(\d+)")
_first, _second = itemgetter(0), itemgetter(1)
# the torchrun tags _tag strips from an ASCII line (a "]:" ending within its first 24 characters)
_TAGS = re.compile(
    r"\n\[(?:rank[0-9]{1,17}|default[0-9]{1,14})\]: ?"
)  # after a newline: a literal to look for
FLUSH_ROWS = 1 << 17  # template rows held before they are merged into the series (about 9 MB)
CHUNK_LINES = 8192  # a pod's batches are read together once they hold this many lines (see feed) ...
PENDING_LINES = 1 << 16  # ... or when all pods' unread batches hold this many
OPTIONAL = ("throughput", "lr", "grad_norm")
FEW_ROWS = 32  # a rank with fewer held rows is merged row by row
HELD = ("rank", "step", "when", "loss", "step_time", "unit", *OPTIONAL)
"""Held row columns (arrays): rank, step (-1: none), time and step time (NaN: none), the optional fields
(NaN: none), unit (an index into the observer's unit names; 0: none)."""


def stable_order(values: np.ndarray) -> np.ndarray:
    """np.argsort(values, kind="stable"), as a radix sort when the values fit 16 bits (ranks, a read's
    line numbers): the same order, faster than the timsort numpy uses for int64."""
    if len(values) and int(values.min()) >= 0 and int(values.max()) < 1 << 15:
        return np.argsort(values.astype(np.int16), kind="stable")
    return np.argsort(values, kind="stable")


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
        self._errors: dict[int, ErrorEvent] = {}
        self._error_counts: dict[str, int] = {}
        self._progress: dict[int, tuple[float, int | None]] = {}
        self.last_checkpoint: Checkpoint | None = None  # the last finished save fed (lineage, resume)
        self._shapes: dict[str, PodShapes] = {}
        self._shared_shapes: dict[tuple[Any, ...], Any] = {}  # see PodShapes
        self._held: dict[str, list[np.ndarray]] = {name: [] for name in HELD}  # rows not merged (see _flush)
        self._held_rows = 0
        self._units: dict[str | None, int] = {None: 0}  # throughput unit names of held rows
        self._pending: dict[tuple[str, int], list[Sequence[tuple[str, str]]]] = {}  # unread batches
        self._pending_lines = 0
        self._clock: float | None = None  # the newest log time seen
        self.lines = 0
        self._named: dict[str, int] = {}  # pod -> the rank its last rank-naming metric line named
        # pod -> (rank, time) an error line named (torch_npu RankID, torchrun summary): the untagged error
        # lines right after it (the CANN code, the exit code) belong to that rank
        self._error_rank: dict[str, tuple[int, float | None]] = {}
        self._unnamed: dict[str, ErrorEvent] = {}  # pod -> its last error line filed under no named rank
        self.mounts: tuple[str, ...] = ()  # the pods' volume mount paths, when known (for advice)
        self.script: str | None = None  # the training script the job gave, when known (for advice)
        self.pod_ends: dict[str, float] = {}  # pod -> when its container ended (any exit code)

    # -- state, with held template rows merged first ------------------------------------------------
    @property
    def series(self) -> dict[int, RankSeries]:
        self._flush()
        return self._series

    @property
    def errors(self) -> dict[int, ErrorEvent]:
        """Each rank's first (or most telling) error."""
        self._drain()
        return self._errors

    @property
    def error_counts(self) -> dict[str, int]:
        self._drain()
        return self._error_counts

    @property
    def clock(self) -> float | None:
        """The newest log time seen."""
        self._drain()
        return self._clock

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
        """A batch of (kubelet timestamp or "", text) lines of one pod, in order.

        The batch is kept (not copied) and read with the pod's next batches once they hold CHUNK_LINES
        lines, or when a result is asked for: many small batches then cost what one big one does. The
        results are those of reading each batch at once, pod by pod."""
        if not lines:
            return
        self.lines += len(lines)
        joined = "\n".join(map(_second, lines))  # a save is rare: one scan of the batch says there is none
        if "ckpt" in joined or "checkpoint" in joined:
            for _, text in lines:
                self.last_checkpoint = checkpoint_saved(text) or self.last_checkpoint
        batches = self._pending.setdefault((pod, node_rank), [])
        batches.append(lines)
        self._pending_lines += len(lines)
        if self._pending_lines >= PENDING_LINES:
            self._drain()
        elif sum(map(len, batches)) >= CHUNK_LINES:
            self._drain_pod(pod, node_rank)

    def _drain(self) -> None:
        """Read every pod's unread batches: all at once on the bulk path when it takes them (many pods
        with a few lines each: a live stream), else pod by pod in the order they first came."""
        if len(self._pending) > 1 and self._templates is not None:
            for (pod, node_rank), batches in list(self._pending.items()):
                if not self._templates.get(pod):  # a new pod: its first batch teaches its templates
                    first = batches.pop(0)
                    self._pending_lines -= len(first)
                    if not batches:
                        del self._pending[(pod, node_rank)]
                    self._read(pod, node_rank, first)
        if len(self._pending) > 1 and self._read_pods():
            self._pending, self._pending_lines = {}, 0
            return
        while self._pending:
            self._drain_pod(*next(iter(self._pending)))

    def _drain_pod(self, pod: str, node_rank: int) -> None:
        """Read one pod's unread batches: all at once on the bulk path when it takes them, else one by one."""
        pending = self._pending.pop((pod, node_rank))
        self._pending_lines -= sum(map(len, pending))
        if len(pending) > 1 and self._read_together(pod, node_rank, pending):
            return
        if len(pending) > 2:  # e.g. a new pod: its first batch teaches the templates the others need
            self._read(pod, node_rank, pending[0])
            if self._read_together(pod, node_rank, pending[1:]):
                return
            pending = pending[1:]
        for batch in pending:
            self._read(pod, node_rank, batch)

    def _read_together(self, pod: str, node_rank: int, batches: list[Sequence[tuple[str, str]]]) -> bool:
        """Several batches of one pod read at once on the bulk path (False: nothing changed)."""
        stamps = [stamp for batch in batches for stamp, _ in batch]
        texts = [text for batch in batches for _, text in batch]
        return self._read(pod, node_rank, (), list(accumulate(map(len, batches))), (stamps, texts))

    def _read(
        self,
        pod: str,
        node_rank: int,
        lines: Sequence[tuple[str, str]],
        bounds: list[int] | None = None,
        columns: tuple[list[str], list[str]] | None = None,
    ) -> bool:
        """Read one batch, or with `bounds` (where each fed batch ends) several batches only if the bulk
        path takes them all (False when it did not; `lines` is then not used, `columns` holds the stamps
        and the texts)."""
        stamps, texts = columns or (list(map(_first, lines)), list(map(_second, lines)))
        joined = "\n".join(texts)
        times = kube_time_array(stamps)
        ends = bounds or [len(texts)]
        if not self._feed_bulk(pod, node_rank, texts, joined, ends, stamps, times):
            if bounds is not None:
                return False
            has_errors = self.catalogue.any_error(joined)
            self._merge()
            self._feed_lines(pod, node_rank, lines, has_errors)
        self._advance_clock(times, texts)
        return True

    def _advance_clock(self, times: np.ndarray, texts: Sequence[str]) -> None:
        """The newest time of any line (out-of-order lines too), as if they came one by one (times: each
        line's stamp time, NaN: none)."""
        missing = np.isnan(times)
        known = [float(times[~missing].max())] if not missing.all() else []
        if missing.any():
            known += [
                t for at in np.flatnonzero(missing).tolist() if (t := inline_time(texts[at])) is not None
            ]
        if known and (self._clock is None or max(known) > self._clock):
            self._clock = max(known)

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
            if (
                always
                or "loss" in text
                or "step" in text
                or "iteration" in text
                or "Loss" in text
                or "PerSec" in text
            ):
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
                self._error(pod, node_rank, rank, stamp, text, tagged)

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
        texts: list[str],
        joined: str,
        bounds: list[int],
        stamps: list[str],
        times: np.ndarray,
    ) -> bool:
        """Read a batch whose every possible metric line fits a learned template (fastpath.py) and hold its
        rows; False (nothing changed) when the line path must read it."""
        if self._templates is None:
            return False
        known = self._templates.get(pod)
        if not known:
            return False
        groups = match_batch(self._pod_shapes(pod, known), texts, joined)
        if groups is None:
            return False
        metric = [g for g in groups if g.shape.template.fields is not None]
        if metric and not parsed_by_plain(self.parser.order):
            return False
        if metric:
            rows = self._rows(pod, node_rank, texts, metric, times)
            for name, values in rows.items():
                self._held[name].append(values)
            self._held_rows += len(rows["rank"])
        self._bulk_errors(pod, node_rank, texts, joined, stamps, metric, bounds)
        if self._held_rows >= FLUSH_ROWS:
            self._merge()
        return True

    def _bulk_errors(
        self,
        pod: str,
        node_rank: int,
        texts: list[str],
        joined: str,
        stamps: list[str],
        metric: list[Group],
        bounds: list[int],
    ) -> None:
        """The error lines among those no metric template took, as the line path finds them: in a fed batch
        the catalogue's combined pattern hits, each line (its tag stripped) is classified. The lines no
        metric template took are searched first: most batches end there (the metric lines not read)."""
        untaken = np.ones(len(texts), dtype=bool)
        for group in metric:
            untaken[group.lines] = False
        if self._no_error_lines([texts[index] for index in np.flatnonzero(untaken).tolist()]):
            return
        if not self.catalogue.any_error(joined):
            return
        rest = np.zeros(len(texts), dtype=bool)
        start = 0
        for end in bounds:
            if self.catalogue.any_error("\n".join(texts[start:end])):
                rest[start:end] = True
            start = end
        for group in metric:
            rest[group.lines] = False
        others = np.flatnonzero(rest).tolist()
        default = self.layout.default_rank(pod, node_rank)
        tagged = [self._tag(pod, default, texts[index]) for index in others]
        for hit in self.catalogue.error_lines([text for _, _, text in tagged]):
            rank, is_tagged, text = tagged[hit]
            self._error(pod, node_rank, rank, stamps[others[hit]], text, is_tagged)

    def _no_error_lines(self, texts: list[str]) -> bool:
        """Whether no line of `texts` is an error once its tag is stripped (see _tag): True only when the
        combined pattern hits nowhere in them, tags stripped in one pass. False when unsure: a line starts
        with "[" but not with a tag _TAGS strips as _tag does."""
        if not texts:
            return True
        joined = "\n" + "\n".join(texts)
        stripped, tags = _TAGS.subn("\n", joined)
        if tags != joined.count("\n["):
            return False
        return not self.catalogue.any_error(stripped)

    def _tag(self, pod: str, default: int, text: str) -> tuple[int, bool, str]:
        """The rank a line's prefixes name (torchrun or launcher tag, Ray worker; else `default`), whether
        they named one, and the text after them (see text.line_prefix)."""
        first = text[:1]
        if first == "[":
            end = text.find("]:", 0, 24)
            if text.startswith("[rank") and text[5:end].isdigit():  # the common case, inline
                rank, rest = int(text[5:end]), text[end + 2 :]
                return rank, True, rest[1:] if rest.startswith(" ") else rest
        elif first != "(" and not first.isdigit() and "] " not in text[:48] and "]:" not in text[:48]:
            return default, False, text
        tag = line_prefix(text)
        if tag is None:
            return default, False, text
        kind, number, text = tag
        if kind == "rank":
            return number, True, text
        if kind == "default":
            local = self.layout.local_rank(pod, number)
            return (local, True, text) if local is not None else (default, False, text)
        return default, False, text

    def _pod_shapes(self, pod: str, known: list[Template]) -> PodShapes:
        shapes = self._shapes.get(pod)
        if shapes is None:
            shapes = self._shapes[pod] = PodShapes(self._shared_shapes)
        if shapes.known != len(known):
            shapes.update(known)
        return shapes

    def _read_pods(self) -> bool:
        """The unread batches of every pod read at once on the bulk path; False (nothing changed) unless
        they all fit learned templates and carry no error."""
        if self._templates is None or not parsed_by_plain(self.parser.order):
            return False
        pods: list[tuple[str, int]] = list(self._pending)
        shapes = []
        for pod, _ in pods:
            known = self._templates.get(pod)
            if not known:
                return False
            shapes.append(self._pod_shapes(pod, known))
        lines: list[tuple[str, str]] = []
        owner: list[int] = []
        for index, batches in enumerate(self._pending.values()):
            for batch in batches:
                lines += batch
                owner += [index] * len(batch)
        stamps, texts = list(map(_first, lines)), list(map(_second, lines))
        joined = "\n".join(texts)
        if self.catalogue.any_error(joined):
            return False
        groups = match_pods(shapes, owner, texts, joined)
        if groups is None:
            return False
        times = kube_time_array(stamps)
        metric = [g for g in groups if g.shape.template.fields is not None]
        if metric:
            rows = self._rows_of([self._group_rows(group) for group in metric])
            rows["when"] = self._times(texts, line := rows.pop("line"), times)
            rows["rank"] = self._pod_ranks(pods, np.array(owner)[line], rows.pop("tag"), rows.pop("named"))
            for name, values in rows.items():
                self._held[name].append(values)
            self._held_rows += len(rows["rank"])
        self._advance_clock(times, texts)
        if self._held_rows >= FLUSH_ROWS:
            self._merge()
        return True

    def _pod_ranks(
        self, pods: list[tuple[str, int]], owner: np.ndarray, tags: np.ndarray, named: np.ndarray
    ) -> np.ndarray:
        """_ranks of rows from several pods (owner: each row's index in `pods`), in log order per pod."""
        if len(tags) and (named < 0).all() and (tags >= 0).all():
            seen, last = np.unique(owner[::-1], return_index=True)
            for index, at in zip(seen.tolist(), (len(owner) - 1 - last).tolist(), strict=True):
                self._named[pods[index][0]] = int(tags[at])
            return tags
        out = np.empty(len(tags), dtype=np.int64)
        for index, (pod, node_rank) in enumerate(pods):
            mine = np.flatnonzero(owner == index)
            if len(mine):
                default = self.layout.default_rank(pod, node_rank)
                out[mine] = self._ranks(pod, default, tags[mine], named[mine])
        return out

    @staticmethod
    def _rows_of(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        """Groups' rows in log order."""
        rows = parts[0]
        if len(parts) > 1:
            rows = {name: np.concatenate([part[name] for part in parts]) for name in rows}
            order = stable_order(rows["line"])
            rows = {name: values[order] for name, values in rows.items()}
        return rows

    def _rows(
        self,
        pod: str,
        node_rank: int,
        texts: list[str],
        groups: list[Group],
        times: np.ndarray,
    ) -> dict[str, np.ndarray]:
        """The batch's template rows in log order (see HELD)."""
        rows = self._rows_of([self._group_rows(group) for group in groups])
        rows["when"] = self._times(texts, rows.pop("line"), times)
        default = self.layout.default_rank(pod, node_rank)
        rows["rank"] = self._ranks(pod, default, rows.pop("tag"), rows.pop("named"))
        return rows

    def _group_rows(self, group: Group) -> dict[str, np.ndarray]:
        """One shape's rows (see HELD), with their line numbers and tag and named ranks (-1: none)."""
        count = len(group.lines)
        values = group.values
        missing = np.full(count, -1, dtype=np.int64)
        absent = np.full(count, math.nan)
        unit = self._units.setdefault(group.shape.template.unit, len(self._units))
        out = {
            "line": np.array(group.lines, dtype=np.int64),
            "tag": group.tag if group.tag is not None else missing,
            "named": values.get("rank", missing),
            "step": values.get("step", missing),
            "loss": values["loss"],
            "step_time": values.get("step_time_s", absent),
            "unit": np.full(count, unit, dtype=np.int16),
        }
        for name in OPTIONAL:
            out[name] = values.get(name, absent)
        return out

    def _times(self, texts: list[str], lines: np.ndarray, times: np.ndarray) -> np.ndarray:
        """Each row's time from its stamp's (times: each line's, NaN: none), else from the text."""
        when = times.copy() if len(lines) == len(times) else times[lines]
        for at in np.flatnonzero(np.isnan(when)).tolist():
            _, _, text = self._tag("", -1, texts[int(lines[at])])
            found = inline_time(text)
            when[at] = math.nan if found is None else found
        return when

    def _ranks(self, pod: str, default: int, tags: np.ndarray, named: np.ndarray) -> np.ndarray:
        """Rows' ranks as the line path assigns them: a rank field, else the tag, else the last one named
        (-1 in `tags` and `named`: none)."""
        if len(tags) and (named < 0).all() and (tags >= 0).all():
            self._named[pod] = int(tags[-1])
            return tags
        out = []
        for tag, name in zip(tags.tolist(), named.tolist(), strict=True):
            if name >= 0:
                rank = self._named[pod] = name
            elif tag >= 0:
                rank = self._named[pod] = tag
            else:
                rank = self._named.get(pod, default)
            out.append(rank)
        return np.array(out, dtype=np.int64)

    def _flush(self) -> None:
        """Read the unread batches and merge the held rows."""
        self._drain()
        self._merge()

    def _merge(self) -> None:
        """Merge the held template rows into the series, rank by rank, as add() would have row by row."""
        if not self._held_rows:
            return
        held, self._held_rows = self._held, 0
        self._held = {name: [] for name in HELD}
        rows = {name: np.concatenate(held[name]) for name in HELD}
        # units stay indices into their names (a name per row costs more than the rest of the merge)
        names = np.array(sorted(self._units, key=self._units.__getitem__), dtype=object)
        ranks = rows["rank"]
        order = stable_order(ranks)
        bounds = np.flatnonzero(np.diff(ranks[order])) + 1
        if (
            len(self._alerts.items) + 3 * self._may_alert(rows["loss"][order], ranks[order], bounds)
            > MAX_ALERTS
        ):
            # which alerts fit under the cap depends on the order
            self._replay(rows, np.arange(len(ranks)), names)
            return
        few = []
        by_rank = {name: values[order] for name, values in rows.items()}  # each rank's rows: one slice
        edges = [0, *bounds.tolist(), len(order)]
        for start, end in pairwise(edges):
            if end - start < FEW_ROWS:  # array steps cost more than they save
                few.append(np.arange(start, end))
            else:
                self._extend(int(by_rank["rank"][start]), by_rank, slice(start, end), names)
        if few:  # ranks do not share state (the alert cap cannot be reached): one pass, rank by rank
            self._replay(by_rank, np.concatenate(few), names)

    def _may_alert(self, loss: np.ndarray, ranks: np.ndarray, bounds: np.ndarray) -> int:
        """How many ranks (rows sorted by rank, split at `bounds`) may raise an alert: a non-finite loss,
        or a loss above spike_factor x the lowest its moving mean can be (the mean before, or the
        lowest loss: a moving mean stays between them)."""
        starts = np.concatenate([[0], bounds]).astype(np.int64)
        finite = np.isfinite(loss)
        values = np.where(finite, loss, np.nan)
        with np.errstate(invalid="ignore"):
            low, high = np.fmin.reduceat(values, starts), np.fmax.reduceat(values, starts)
        before = []
        for rank in ranks[starts].tolist():
            series = self._series.get(rank)
            before.append(series.loss_mean if series is not None and series.loss_count else math.inf)
        floor = np.minimum(low, np.array(before))
        with np.errstate(invalid="ignore"):
            calm = (floor > 0) & (high < self.settings.spike_factor * floor * (1 - 1e-9))
        return int(np.count_nonzero(~calm | ~np.logical_and.reduceat(finite, starts)))

    def _extend(self, rank: int, rows: dict[str, np.ndarray], part: slice, units: np.ndarray) -> None:
        series = self._series.get(rank)
        if series is None:
            series = self._series[rank] = RankSeries(self.settings.max_points)
        picked = Rows(
            rows["step"][part],
            rows["when"][part],
            {name: rows[name][part] for name in ("loss", "step_time", *OPTIONAL)},
            rows["unit"][part],
            units,
        )
        steps = series.extend(picked)
        self._alerts.check_many(rank, series, picked.loss, steps, picked.when)
        timed = np.flatnonzero(~np.isnan(picked.when))
        if len(timed):
            self._progress[rank] = (float(picked.when[timed[-1]]), int(steps[timed[-1]]))

    def _replay(self, rows: dict[str, np.ndarray], part: np.ndarray, units: np.ndarray) -> None:
        """Held rows one by one, in the order given, as _metric would take them (RankSeries.add_row;
        units: the unit names of the rows' unit indices)."""
        names = ("rank", "step", "when", "loss", "step_time", "unit", *OPTIONAL)
        columns = [
            (units[rows[name][part]] if name == "unit" else rows[name][part]).tolist() for name in names
        ]
        check, progress, known = self._alerts.check, self._progress, self._series
        for rank, step, when, loss, took, unit, throughput, lr, norm in zip(*columns, strict=True):
            series = known.get(rank)
            if series is None:
                series = known[rank] = RankSeries(self.settings.max_points)
            moment = None if when != when else when
            at = series.add_row(
                step if step >= 0 else None,
                moment,
                loss,
                None if took != took else took,
                None if throughput != throughput else throughput,
                None if lr != lr else lr,
                None if norm != norm else norm,
                unit,
            )
            check(rank, series, loss, at, moment)
            if moment is not None:
                progress[rank] = (moment, at)

    def _metric(self, sample: dict[str, Any], rank: int, when: float | None) -> None:
        series = self._series.get(rank)
        if series is None:
            series = self._series[rank] = RankSeries(self.settings.max_points)
        step, _ = series.add(sample, when)
        loss = sample.get("loss")
        if loss is not None:
            self._alerts.check(rank, series, loss, step, when)
        norm = sample.get("grad_norm")
        if norm is not None:
            self._alerts.check_grad(rank, norm, step, when)
        if when is not None:
            self._progress[rank] = (when, step)

    def _error(
        self, pod: str, node_rank: int, rank: int, stamp: str, text: str, tagged: bool = False
    ) -> None:
        signature = self.catalogue.classify(text)
        if signature is None:
            return
        when = line_time(stamp, text)
        if signature.role == CONTEXT:
            found = _SUMMARY_RANK.match(text)
            if found is not None:
                self._error_rank[pod] = (int(found.group(1)), when)
            return
        self._error_counts[signature.code] = self._error_counts.get(signature.code, 0) + 1
        rank, how = self._line_rank(pod, rank, text, tagged, when)
        signature = refine(signature, text, self.mounts, self.script)
        event = ErrorEvent(rank, node_rank, pod, when, signature, text.strip(), named_peer(text))
        unnamed = self._unnamed.pop(pod, None)
        if how == "named" and unnamed is not None:
            self._claim(unnamed, rank, when)
        elif how == "default":
            self._unnamed[pod] = event
        current = self._errors.get(rank)
        if current is None:
            self._errors[rank] = event
        elif earlier(current, event):
            # read later but printed earlier: a restarted pod's previous container, read after the
            # current one; its error is this rank's first
            self._errors[rank] = event
        elif better(current, event):
            event.time = current.time if current.time is not None else event.time
            self._errors[rank] = event

    def _line_rank(self, pod: str, rank: int, text: str, tagged: bool, when: float | None) -> tuple[int, str]:
        """The rank an error line belongs to and how it is known: the rank it names (RankID, [Rank N],
        Rank N:), a local rank it names, its tag, the rank an error line of this pod named just before,
        the NPU it names, else the pod's default rank."""
        match = _LINE_RANK.search(text)
        if match is not None:
            named = int(next(g for g in match.groups() if g is not None))
            self._error_rank[pod] = (named, when)
            return named, "named"
        found = _LOCAL_RANK.search(text)
        if found is not None:
            local = self.layout.local_rank(pod, int(found.group(1)))
            if local is not None:
                return local, "local"
        if tagged:
            return rank, "tag"
        context = self._error_rank.get(pod)
        if context is not None and (
            when is None or context[1] is None or when - context[1] <= UPGRADE_WINDOW_S
        ):
            return context[0], "context"
        found = _NPU_INDEX.search(text)
        if found is not None:
            device = int(found.group(1))
            place = next((p for p in self.layout.by_pod.get(pod, []) if p.device == device), None)
            if place is not None:
                return place.rank, "npu"
        return rank, "default"

    def _claim(self, event: ErrorEvent, rank: int, when: float | None) -> None:
        """An untagged error line followed at once by a line naming its rank (torch_npu prints the
        exception, then ``[ERROR] ... RankID:N``, then the CANN code) belongs to that rank."""
        if event.rank == rank or self._errors.get(event.rank) is not event:
            return
        if when is not None and event.time is not None and when - event.time > UPGRADE_WINDOW_S:
            return
        del self._errors[event.rank]
        event.rank = rank
        current = self._errors.get(rank)
        if current is None or (
            current.time is not None and event.time is not None and event.time < current.time
        ):
            self._errors[rank] = event

    def pod_ended(self, pod: str, when: float | None) -> None:
        """A pod's container ended (any exit code): its ranks are not hung after that."""
        self._drain()
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
        current = self.errors.get(rank)  # batches fed before come first
        event = ErrorEvent(rank, node_rank, pod, when, signature, line)
        if current is None or (signature.role == "primary" and current.signature.role != "primary"):
            self._errors[rank] = event

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
        first = first_failure(self.errors, self.layout)
        ranks = max(len(self.layout), len(self.series), len(self.errors))
        common = common_cause(self.errors, self.layout)
        silent_quiet = silent_ranks(self.errors, self.layout)
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
            "common_cause": common,
            "divergence": self.alerts.divergence(),
            "advice": advice(first, self.errors, ranks, self.settings, common, silent_quiet)
            + shared_switch(slow, silent),
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
    common = diagnosis.get("common_cause")
    if common:
        return (
            f"{diagnosis['phase']}: every rank ({common['ranks']}) failed with {common['code']} - "
            f"{common['title']}: one cause on all ranks"
        )
    if first:
        where = ", ".join(f"{k} {first[k]}" for k in ("server", "leaf") if first.get(k))
        who = f"rank {first['rank']}" if first.get("rank") is not None else f"node rank {first['node_rank']}"
        place = first["pod"] + (", " + where if where else "")
        return f"{diagnosis['phase']}: {who} ({place}) failed first: {first['code']} - {first['title']}"
    parts = []
    diverged = diagnosis.get("divergence") or []
    if diverged:
        ranks = sorted({a["rank"] for a in diverged})
        parts.append(
            f"training diverged ({diverged[0]['kind'].replace('_', ' ')} at step {diverged[0]['step']}) on "
            f"rank(s) {', '.join(map(str, ranks[:5]))}"
        )
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
