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

MISSING = math.nan
MAX_NAN_STEPS = 10_000
FIELDS = ("step", "time", "loss", "step_time_s", "throughput", "lr", "grad_norm")
MAX_ALERTS = 500
STEP_WINDOW = 64
LOSS_WEIGHT = 0.1  # exponential moving average of the loss: about the last 10-20 steps


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
            derived = None if "step_time_s" in sample else self._derive_step_time(step, when)
            self.seen += 1
            self._pending = (self.seen - 1) % self.stride == 0
            if self._pending:
                self._store(step, when)
                if derived is not None:
                    self.columns["step_time_s"][-1] = derived
            self.last_step = step
            self.last_time = when
            self.records += 1
        step_time = sample.get("step_time_s")
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
                    ("nan" if step in self.nan_steps else None) if v != v else _json_float(v)
                    for v, step in zip(values, steps, strict=True)
                ]
            else:
                out[name] = [None if v != v or v in (math.inf, -math.inf) else v for v in values]
        if self.throughput_unit:
            out["throughput_unit"] = self.throughput_unit
        if self.stride > 1:
            out["stride"] = self.stride
        return out


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
        if series.loss_count >= 8 and typical > 0 and loss > self.spike_factor * typical:
            ratio = loss / typical
            message = (
                f"rank {rank}: loss {loss:.4g} at step {step} is {ratio:.1f}x its recent mean {typical:.4g}"
            )
            self._raise(rank, "spike", step, when, loss, message)
            return  # a spike does not move the baseline
        series.loss_count += 1
        series.loss_mean = loss if series.loss_count == 1 else typical + LOSS_WEIGHT * (loss - typical)

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
