"""Metrics as CSV: one row per stored record (rank, step, time, loss, step time, throughput, lr, norm).

Quote character ``"`` and escape character ``\\`` (the platform's export convention), numbers as printed
by ``repr`` so no precision is lost; NaN/Inf stay visible as ``nan``/``inf``.
"""

from __future__ import annotations

import csv
import io
from typing import Any

from ranktable.observe.series import FIELDS

COLUMNS = ("rank", *FIELDS)


def metrics_csv(metrics: dict[str, Any]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, quotechar='"', escapechar="\\", doublequote=False, lineterminator="\n")
    writer.writerow(COLUMNS)
    for rank, data in (metrics.get("ranks") or {}).items():
        steps = data.get("step") or []
        columns = [data.get(name) or [None] * len(steps) for name in FIELDS]
        for row in zip(*columns, strict=False):
            writer.writerow([rank, *("" if v is None else v for v in row)])
    return out.getvalue()
