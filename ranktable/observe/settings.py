"""Tunables of metrics and triage, from the user's settings (and the job spec for patterns), checked."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from ranktable.errors import InputError

_LIMITS: dict[str, tuple[float, float]] = {
    "straggler_factor": (1.01, 10.0),
    "hang_factor": (1.0, 1000.0),
    "hang_floor_s": (1.0, 86400.0),
    "spike_factor": (1.1, 100.0),
    "max_points": (10, 20000),
    "connect_timeout_s": (1.0, 7200.0),
}


@dataclass(frozen=True)
class ObserveSettings:
    straggler_factor: float = 1.2  # a rank whose median step time is >= this x the job's median
    hang_factor: float = 10.0  # silent for more than this x the median step time ...
    hang_floor_s: float = 60.0  # ... and at least this many seconds (10 x a 0.5 s step is 5 s: too eager)
    spike_factor: float = 3.0  # a loss above this x the median of the rank's recent losses
    max_points: int = 500  # kept per rank and metric (older points thinned), so memory stays bounded
    connect_timeout_s: float = 120.0  # HCCL_CONNECT_TIMEOUT the job runs with (for EI0006 advice)
    patterns: tuple[str, ...] = ()  # user regexes with named groups (see parsers.compile_user_patterns)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any] | None, where: str = "observe") -> ObserveSettings:
        """Settings from JSON-like data; unknown keys and out-of-range values are errors naming the key."""
        if not data:
            return cls()
        if not isinstance(data, Mapping):
            raise InputError("expected an object of settings", where=where)
        known = {f.name for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known:
                raise InputError(
                    f"unknown setting {key!r}", where=where, fix=f"use {', '.join(sorted(known))}"
                )
            if key == "patterns":
                if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
                    raise InputError("expected a list of regex strings", where=f"{where}.patterns")
                values[key] = tuple(value)
                continue
            low, high = _LIMITS[key]
            if isinstance(value, bool) or not isinstance(value, int | float) or not low <= value <= high:
                raise InputError(f"{value!r} is not a number in [{low:g}, {high:g}]", where=f"{where}.{key}")
            values[key] = int(value) if key == "max_points" else float(value)
        return replace(cls(), **values)
