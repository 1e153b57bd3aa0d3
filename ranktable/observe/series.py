"""Per-rank metric series with bounded memory, and NaN/Inf/spike alerts.

Every record feeds the statistics (step-time window, loss window, alerts); only every ``stride``-th
record is stored. When a series reaches ``max_points`` it drops every other point and doubles the
stride, so a long run keeps an evenly thinned curve of at most ``max_points`` points.
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from statistics import median
from typing import Any

import numpy as np

MISSING = math.nan
MAX_NAN_STEPS = 10_000
FIELDS = ("step", "time", "loss", "step_time_s", "throughput", "lr", "grad_norm")
MAX_ALERTS = 500
STEP_WINDOW = 64
LOSS_WEIGHT = 0.1  # exponential moving average of the loss: about the last 10-20 steps
SPIKE_AFTER = 1  # points before a loss can be a spike: a jump from the first logged loss counts too
DIVERGENCE = ("nan", "inf", "grad_nan", "grad_inf")  # alert kinds that mean training diverged


class RankSeries:
    __slots__ = (
        "_pending",
        "columns",
        "epoch_offset",
        "last_epoch",
        "last_step",
        "last_time",
        "loss_count",
        "loss_mean",
        "max_points",
        "nan_steps",
        "own_step_time",
        "records",
        "seen",
        "step_times",
        "stride",
        "throughput_unit",
    )

    def __init__(self, max_points: int) -> None:
        # 8 bytes per value (NaN = no value), so 1,024 ranks x 500 points x 7 fields stay near 30 MB
        self.columns: dict[str, array[float]] = {name: array("d") for name in FIELDS}
        self.nan_steps: set[int] = set()  # steps whose loss really was NaN (not just missing)
        self.stride = 1
        self.seen = 0
        self.max_points = max_points
        self.throughput_unit: str | None = None
        self.last_step: int | None = None
        self.last_time: float | None = None
        self.step_times: deque[float] = deque(maxlen=STEP_WINDOW)
        self.loss_mean = 0.0
        self.loss_count = 0
        self.epoch_offset = 0
        self.last_epoch: int | None = None
        self.records = 0
        self._pending = False  # the last stored row can still take fields of the same step
        self.own_step_time = False  # the log prints step times: none is derived from the clock any more

    def median_step_time(self) -> float | None:
        return median(self.step_times) if self.step_times else None

    def _store(self, step: int | None, when: float | None) -> None:
        cols = self.columns
        if len(cols["step"]) >= self.max_points:
            for values in cols.values():
                del values[1::2]
            self.stride *= 2
        for name in FIELDS:
            cols[name].append(MISSING)
        cols["step"][-1] = MISSING if step is None else float(step)
        cols["time"][-1] = MISSING if when is None else when

    def _next_step(self, step: int, when: float | None, derive: bool) -> None:
        """A new step: keep every stride-th one (with its step time derived from the clock when
        the line has none) and advance the counters."""
        derived = self._derive_step_time(step, when) if derive and not self.own_step_time else None
        self.seen += 1
        self._pending = (self.seen - 1) % self.stride == 0
        if self._pending:
            self._store(step, when)
            if derived is not None:
                self.columns["step_time_s"][-1] = derived
        self.last_step = step
        self.last_time = when
        self.records += 1

    def _derive_step_time(self, step: int, when: float | None) -> float | None:
        """Step time from the wall-time gap to the previous record, for formats that print none."""
        last_step, last_time = self.last_step, self.last_time
        if when is None or last_step is None or last_time is None:
            return None
        if step > last_step and when >= last_time:
            value = (when - last_time) / (step - last_step)
            self.step_times.append(value)
            return value
        return None

    def add(self, sample: dict[str, Any], when: float | None) -> tuple[int | None, bool]:
        """Merge one parsed sample; returns (step, new_step). A sample without a step (MindSpore's time
        line) completes the current step."""
        step = sample.get("step")
        epoch = sample.get("epoch")
        if step is not None and epoch is not None and "steps_per_epoch" not in sample:
            # MindSpore prints the step within the epoch: make it global
            if self.last_epoch is not None and epoch > self.last_epoch and self.last_step is not None:
                self.epoch_offset = self.last_step
            self.last_epoch = epoch
            step = step + self.epoch_offset
        if step is None and (self.last_step is None or "loss" in sample):
            step = (self.last_step or 0) + 1  # HF dicts and bare prints carry no step: count records
        new = False
        if step is not None and step != self.last_step:
            new = True
            self._next_step(step, when, derive="step_time_s" not in sample)
        step_time = sample.get("step_time_s")
        if step_time is not None and math.isfinite(step_time):
            self.own_step_time = True
        if step_time is not None and math.isfinite(step_time) and self.records > 1:
            self.step_times.append(step_time)  # the first step includes graph compilation: skip it
        if sample.get("throughput_unit"):
            self.throughput_unit = sample["throughput_unit"]
        if self._pending:
            cols = self.columns
            for name in ("loss", "step_time_s", "throughput", "lr", "grad_norm"):
                value = sample.get(name)
                if value is not None:
                    cols[name][-1] = value
            loss = sample.get("loss")
            if (
                loss is not None
                and loss != loss
                and self.last_step is not None
                and len(self.nan_steps) < MAX_NAN_STEPS
            ):
                self.nan_steps.add(self.last_step)
        return self.last_step, new

    def add_row(
        self,
        step: int | None,
        when: float | None,
        loss: float,
        step_time: float | None,
        throughput: float | None,
        lr: float | None,
        grad_norm: float | None,
        unit: str | None,
    ) -> int | None:
        """``add()`` of a sample with a loss and no epoch (a template row; None: the field is absent),
        without building the sample; returns the step."""
        if step is None:
            step = (self.last_step or 0) + 1
        if step != self.last_step:
            self._next_step(step, when, derive=step_time is None)
        if step_time is not None and math.isfinite(step_time):
            self.own_step_time = True
        if step_time is not None and math.isfinite(step_time) and self.records > 1:
            self.step_times.append(step_time)
        if unit:
            self.throughput_unit = unit
        if self._pending:
            cols = self.columns
            cols["loss"][-1] = loss
            if step_time is not None:
                cols["step_time_s"][-1] = step_time
            if throughput is not None:
                cols["throughput"][-1] = throughput
            if lr is not None:
                cols["lr"][-1] = lr
            if grad_norm is not None:
                cols["grad_norm"][-1] = grad_norm
            if loss != loss and self.last_step is not None and len(self.nan_steps) < MAX_NAN_STEPS:
                self.nan_steps.add(self.last_step)
        return self.last_step

    def extend(self, rows: Rows) -> np.ndarray:
        """``add()`` of every row in turn, done with whole-array steps; returns each row's step.

        For rows read through a plain template: every row has a finite or infinite loss (never NaN),
        ``when`` NaN means no time and a NaN metric means the row has none."""
        n = len(rows.loss)
        index = np.arange(n)
        steps = self._steps(rows.step, index)
        known = np.ones(n, dtype=bool)
        before = np.empty(n, dtype=np.int64)
        before[1:] = steps[:-1]
        before[0] = self.last_step if self.last_step is not None else -1
        known[0] = self.last_step is not None
        new = steps != before
        new[0] |= not known[0]
        records = self.records + np.cumsum(new)
        derived = self._derived(rows, steps, before, known, new, index)
        timed = np.flatnonzero(np.isfinite(rows.step_time))  # NaN: none; the log's own times
        if self.own_step_time:
            derived[:] = math.nan
        elif len(timed):
            derived[int(timed[0]) + 1 :] = math.nan  # none derived after the log printed its own
            self.own_step_time = True
        explicit = ~np.isnan(rows.step_time) & np.isfinite(rows.step_time) & (records > 1)
        appended = ~np.isnan(derived) | explicit
        if appended.any():
            values = np.where(explicit, rows.step_time, derived)[appended]
            self.step_times.extend(values[-STEP_WINDOW:].tolist())
        units = np.flatnonzero(rows.names.astype(bool)[rows.unit])  # a unit name (None or "": none)
        if len(units):
            self.throughput_unit = rows.names[rows.unit[units[-1]]]
        starts = np.flatnonzero(new)
        if self._pending:
            self._overwrite(rows, 0, int(starts[0]) - 1 if len(starts) else n - 1)
        if len(starts):
            self._store_rows(rows, steps, derived, starts, n)
            self.last_step = int(steps[-1])
            last_time = float(rows.when[starts[-1]])
            self.last_time = None if last_time != last_time else last_time
            self.records += len(starts)
        return steps

    def _steps(self, given: np.ndarray, index: np.ndarray) -> np.ndarray:
        """A row without a step is the step after the previous row's (every row has a loss)."""
        last_given = np.maximum.accumulate(np.where(given >= 0, index, -1))
        counted = (self.last_step or 0) + index + 1
        return np.where(last_given >= 0, given[np.maximum(last_given, 0)] + (index - last_given), counted)

    def _derived(
        self,
        rows: Rows,
        steps: np.ndarray,
        before: np.ndarray,
        known: np.ndarray,
        new: np.ndarray,
        index: np.ndarray,
    ) -> np.ndarray:
        """_derive_step_time at every new step of a row without a step time (NaN: none)."""
        last_new = np.maximum.accumulate(np.where(new, index, -1))
        prior = np.empty(len(index), dtype=np.int64)
        prior[0] = -1
        prior[1:] = last_new[:-1]
        start_time = math.nan if self.last_time is None else self.last_time
        last_time = np.where(prior >= 0, rows.when[np.maximum(prior, 0)], start_time)
        when = rows.when
        ok = new & known & np.isnan(rows.step_time) & (steps > before) & (when >= last_time)
        with np.errstate(invalid="ignore", divide="ignore"):
            gap = (when - last_time) / (steps - before).astype(np.float64)
        return np.where(ok, gap, math.nan)

    def _overwrite(self, rows: Rows, first: int, last: int) -> None:
        """Rows of the step stored last (still pending) fill its fields, the latest value winning."""
        if last < first:
            return
        at = np.array([first]), np.array([last])
        for name, values in self._latest(rows, *at, np.array([math.nan])).items():
            if values[0] == values[0]:
                self.columns[name][-1] = float(values[0])

    def _latest(
        self, rows: Rows, firsts: np.ndarray, lasts: np.ndarray, step_time: np.ndarray
    ) -> dict[str, np.ndarray]:
        """Per row group firsts[i]..lasts[i]: each field's last value in it (NaN: none; for the step
        time: `step_time`)."""
        index = np.arange(len(rows.loss))
        out = {"loss": rows.loss[lasts]}
        for name, present, values in rows.optional():
            latest = np.maximum.accumulate(np.where(present, index, -1))[lasts]
            found = latest >= firsts
            picked = np.where(found, values[np.maximum(latest, 0)], math.nan)
            out[name] = np.where(found, picked, step_time) if name == "step_time_s" else picked
        return out

    def _store_rows(
        self, rows: Rows, steps: np.ndarray, derived: np.ndarray, starts: np.ndarray, n: int
    ) -> None:
        """_store() of every new step whose turn it is, thinning as it goes, then the rows' fields."""
        seen0, count = self.seen, len(starts)
        ends = np.empty(count, dtype=np.int64)
        ends[:-1] = starts[1:] - 1
        ends[-1] = n - 1
        plan: list[tuple[bool, np.ndarray]] = []  # (thin first, new steps stored)
        length = len(self.columns["step"])
        stride = self.stride
        turn = _next_turn(seen0 + 1, stride)
        last_taken = -1
        while turn <= seen0 + count:
            thin = length >= self.max_points
            if thin:
                length -= length // 2
                stride *= 2
                taken = np.array([turn - seen0 - 1])
            else:
                room = min((seen0 + count - turn) // stride + 1, self.max_points - length)
                taken = np.arange(room) * stride + (turn - seen0 - 1)
            plan.append((thin, taken))
            length += len(taken)
            last_taken = int(taken[-1])
            turn = _next_turn(last_taken + seen0 + 2, stride)
        self.stride = stride
        self.seen = seen0 + count
        self._pending = last_taken == count - 1
        if not plan:
            return
        chosen = np.concatenate([taken for _, taken in plan])
        firsts, lasts = starts[chosen], ends[chosen]
        values = self._latest(rows, firsts, lasts, derived[firsts])
        values["step"] = steps[firsts].astype(np.float64)
        values["time"] = rows.when[firsts]
        at = 0
        for thin, taken in plan:
            if thin:
                for column in self.columns.values():
                    del column[1::2]
            for name, column in self.columns.items():
                column.frombytes(np.ascontiguousarray(values[name][at : at + len(taken)]).tobytes())
            at += len(taken)

    def to_json(self) -> dict[str, Any]:
        cols = self.columns
        steps = [None if v != v else int(v) for v in cols["step"]]
        out: dict[str, Any] = {"step": steps, "time": [None if v != v else v for v in cols["time"]]}
        for name in ("loss", "step_time_s", "throughput", "lr", "grad_norm"):
            values = cols[name]
            if all(v != v for v in values) and not (name == "loss" and self.nan_steps):
                continue
            if name == "loss":
                out[name] = [
                    ("nan" if step in self.nan_steps else None)
                    if v != v
                    else (v if v - v == 0 else _json_float(v))  # finite: as it is
                    for v, step in zip(values, steps, strict=True)
                ]
            else:
                out[name] = [None if v != v or v in (math.inf, -math.inf) else v for v in values]
        if self.throughput_unit:
            out["throughput_unit"] = self.throughput_unit
        if self.stride > 1:
            out["stride"] = self.stride
        return out


def moved_mean(mean: float, losses: list[float]) -> float:
    """The last of moving_means(mean, losses)."""
    weight = LOSS_WEIGHT
    for loss in losses:
        mean = mean + weight * (loss - mean)
    return mean


def moving_means(mean: float, losses: list[float]) -> np.ndarray:
    """`mean`, then the loss moving mean after each of `losses` in turn: check()'s update, the same float
    operations in the same order (a plain loop: cheaper than accumulate() with a function per step)."""
    weight = LOSS_WEIGHT
    out = [mean]
    append = out.append
    for loss in losses:
        mean = mean + weight * (loss - mean)
        append(mean)
    return np.array(out)


def _next_turn(seen: int, stride: int) -> int:
    """The first record number >= `seen` that is stored at this stride."""
    late = (seen - 1) % stride
    return seen if late == 0 else seen + stride - late


class Rows:
    """Rows of one rank read through plain templates, in log order (see RankSeries.extend)."""

    __slots__ = ("grad_norm", "loss", "lr", "names", "step", "step_time", "throughput", "unit", "when")

    def __init__(
        self,
        step: np.ndarray,
        when: np.ndarray,
        values: dict[str, np.ndarray],
        unit: np.ndarray,
        names: np.ndarray,
    ) -> None:
        """unit: each row's throughput unit as an index into `names` (None or "": none)."""
        self.step, self.when, self.unit, self.names = step, when, unit, names
        self.loss, self.step_time = values["loss"], values["step_time"]
        self.throughput, self.lr, self.grad_norm = values["throughput"], values["lr"], values["grad_norm"]

    def optional(self) -> list[tuple[str, np.ndarray, np.ndarray]]:
        """(field, present, values) of the fields a row may lack (NaN: absent; a template never reads NaN)."""
        return [
            (name, ~np.isnan(values), values)
            for name, values in (
                ("step_time_s", self.step_time),
                ("throughput", self.throughput),
                ("lr", self.lr),
                ("grad_norm", self.grad_norm),
            )
        ]


def _json_float(value: Any) -> Any:
    """JSON has no NaN/Inf: keep them visible as strings."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


class Alerts:
    """NaN, Inf and spike alerts on the loss, one entry per (rank, kind) with a count, at most 500."""

    def __init__(self, spike_factor: float) -> None:
        self.spike_factor = spike_factor
        self.items: dict[tuple[int, str], dict[str, Any]] = {}

    def check(self, rank: int, series: RankSeries, loss: float, step: int | None, when: float | None) -> None:
        if loss != loss or loss in (math.inf, -math.inf):
            kind = "nan" if loss != loss else "inf"
            message = f"rank {rank}: loss is {_json_float(loss)} at step {step}"
            self._raise(rank, kind, step, when, _json_float(loss), message)
            return
        typical = series.loss_mean
        if series.loss_count >= SPIKE_AFTER and typical > 0 and loss > self.spike_factor * typical:
            ratio = loss / typical
            message = (
                f"rank {rank}: loss {loss:.4g} at step {step} is {ratio:.1f}x its recent mean {typical:.4g}"
            )
            self._raise(rank, "spike", step, when, loss, message)
            return  # a spike does not move the baseline
        series.loss_count += 1
        series.loss_mean = loss if series.loss_count == 1 else typical + LOSS_WEIGHT * (loss - typical)

    def check_many(
        self, rank: int, series: RankSeries, loss: np.ndarray, steps: np.ndarray, when: np.ndarray
    ) -> None:
        """``check()`` of each row in turn: the moving mean runs in one pass up to the next alert."""
        values = loss.tolist()
        at, alerts = 0, 0
        while at < len(values):
            if series.loss_count < SPIKE_AFTER or alerts > 8:  # warming up, or alert after alert: row by row
                moment = float(when[at])
                self.check(rank, series, values[at], int(steps[at]), None if moment != moment else moment)
                at += 1
                continue
            rest = loss[at:]
            if self._calm(series.loss_mean, rest):  # no alert possible: only the last mean is needed
                series.loss_mean = moved_mean(series.loss_mean, values[at:])
                series.loss_count += len(rest)
                return
            means = moving_means(series.loss_mean, values[at:])
            before = means[:-1]
            with np.errstate(over="ignore"):  # mean x factor past float max is inf: no spike, as in `check`
                limit = self.spike_factor * before
            hit = np.flatnonzero(~np.isfinite(rest) | ((before > 0) & (rest > limit)))
            if not len(hit):
                series.loss_mean = float(means[-1])
                series.loss_count += len(rest)
                return
            skip = int(hit[0])
            series.loss_mean = float(means[skip])
            series.loss_count += skip
            at += skip
            alerts += 1
            moment = float(when[at])
            self.check(rank, series, values[at], int(steps[at]), None if moment != moment else moment)
            at += 1

    def _calm(self, mean: float, losses: np.ndarray) -> bool:
        """Whether none of `losses` can raise an alert after a moving mean `mean`: all are finite and each
        is below spike_factor x the lowest the moving mean can be before it (the mean stays at or above the
        lowest of `mean` and the losses so far)."""
        if not len(losses) or not np.isfinite(losses).all():
            return False
        lowest = np.empty(len(losses))
        lowest[0] = mean
        np.minimum(np.minimum.accumulate(losses[:-1]), mean, out=lowest[1:])
        with np.errstate(over="ignore"):
            return bool((lowest > 0).all() and (losses < self.spike_factor * lowest * (1 - 1e-9)).all())

    def check_grad(self, rank: int, norm: float, step: int | None, when: float | None) -> None:
        """A NaN/Inf gradient norm: training diverged even when the loss printed stays finite (HF prints
        0.0, Megatron drops the loss)."""
        if norm == norm and norm not in (math.inf, -math.inf):
            return
        kind = "grad_nan" if norm != norm else "grad_inf"
        message = f"rank {rank}: grad norm is {_json_float(norm)} at step {step}"
        self._raise(rank, kind, step, when, _json_float(norm), message)

    def divergence(self) -> list[dict[str, Any]]:
        """The alerts that mean training diverged, earliest first."""
        return [a for a in self.to_json() if a["kind"] in DIVERGENCE]

    def _raise(
        self, rank: int, kind: str, step: int | None, when: float | None, value: Any, message: str
    ) -> None:
        key = (rank, kind)
        alert = self.items.get(key)
        if alert is not None:
            alert["count"] += 1
            alert["last_step"] = step
            return
        if len(self.items) >= MAX_ALERTS:
            return
        self.items[key] = {
            "kind": kind,
            "rank": rank,
            "step": step,
            "time": when,
            "value": value,
            "message": message,
            "count": 1,
            "last_step": step,
        }

    def to_json(self) -> list[dict[str, Any]]:
        return sorted(self.items.values(), key=lambda a: (a["time"] or 0.0, a["rank"]))
