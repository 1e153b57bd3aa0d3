"""Small text helpers shared by the log parsers: numbers, rank tags, ANSI/tqdm clean-up, timestamps.

Formats follow what trainers print (see docs/observability.md for the sources): numbers may be
``2.3E+00``, ``nan``, ``NAN`` or ``inf``; torchrun prefixes lines with ``[rank9]:`` or ``[default3]:``;
tqdm redraws with ``\\r`` and colours with ANSI escapes.
"""

from __future__ import annotations

import calendar
import math
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?i:nan|inf(?:inity)?)"
"""A number as trainers print it, including ``nan``/``NAN``/``inf`` (``{:.6E}`` prints upper case)."""

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def clean(text: str) -> str:
    """The text a human would see: ANSI colours removed, only the last tqdm redraw of a ``\\r`` line."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        parts = [p for p in text.split("\r") if p.strip()]
        text = parts[-1] if parts else ""
    return text


def rank_tag(text: str) -> tuple[str, int, str] | None:
    """(kind, number, rest) for a line starting with a torchrun tag; kind is "rank" (global) or "default"
    (local rank on the node)."""
    end = text.find("]:", 0, 24)
    if end < 0:
        return None
    head = text[1:end]
    for kind in ("rank", "default"):
        if head.startswith(kind) and head[len(kind) :].isdigit():
            rest = text[end + 2 :]
            return kind, int(head[len(kind) :]), rest[1:] if rest.startswith(" ") else rest
    return None


# Prefixes launchers and log collectors put before a trainer's own text, outermost first: Ray's
# ``(WorkerDict pid=1, ip=...)`` / ``(worker1, rank=1, ...)``, a host and stream (``node [stderr]``), a
# NeMo-run task (``i.pretrain/0``), srun -l's task number (``29: ``), torchrun's ``[rank9]:`` /
# ``[default3]:`` (the in-container launcher tags its children the same way).
_PREFIX = re.compile(
    r"\((?P<ray>[^()]*(?:\([^()]*\)[^()]*)*)\)\s+"
    r"|\[(?P<kind>rank|default)(?P<number>[0-9]{1,7})\]: ?"
    r"|[\w.-]+ \[std(?:out|err)\] "
    r"|[\w.-]+/[0-9]+ (?=\[)"
    r"|[0-9]{1,6}: (?=\[(?:rank|default)[0-9])"
)
_RAY_RANK = re.compile(r"\brank=([0-9]+)")
MAX_PREFIXES = 4


def line_prefix(text: str) -> tuple[str, int, str] | None:
    """(kind, number, rest) for a line with known prefixes: kind "rank" (global rank), "default" (local
    rank on the node) or "" (prefixes that name no rank); None when the line has none. A rank tag beats
    a local one; the innermost of each kind wins."""
    kind, number, at = "", -1, 0
    for _ in range(MAX_PREFIXES):
        match = _PREFIX.match(text, at)
        if match is None:
            break
        ray = match.group("ray")
        if ray is not None:
            if "pid=" not in ray and "rank=" not in ray:
                break
            found = _RAY_RANK.search(ray)
            if found is not None:
                kind, number = "rank", int(found.group(1))
        elif match.group("kind") is not None and (kind != "rank" or match.group("kind") == "rank"):
            kind, number = match.group("kind"), int(match.group("number"))
        at = match.end()
    if not at:
        return None
    return kind, number, text[at:]


@lru_cache(maxsize=4096)
def _minute_epoch(prefix: str) -> float:
    """Seconds since the epoch of ``YYYY-MM-DDTHH:MM`` (UTC); cached because lines share minutes."""
    year, month, day = int(prefix[0:4]), int(prefix[5:7]), int(prefix[8:10])
    hour, minute = int(prefix[11:13]), int(prefix[14:16])
    return float(calendar.timegm((year, month, day, hour, minute, 0, 0, 0, 0)))


_KUBE = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]00:?00)?$")


def kube_time(stamp: str) -> float | None:
    """Epoch seconds of a kubelet ``--timestamps`` stamp (RFC 3339 UTC, up to nanoseconds), else None."""
    if len(stamp) < 19 or stamp[4] != "-" or stamp[13] != ":":
        return None
    try:
        base = _minute_epoch(stamp[:16])
        seconds = stamp[17:-1] if stamp[-1] == "Z" else stamp[17:]
        value = base + float(seconds[:12])
    except ValueError:
        return None
    return value if math.isfinite(value) else None  # "nan" seconds: no time, not a NaN one


_STAMP = b"0000-00-00T00:00:00.000000000Z"  # "0": a digit
_SECOND_DIGITS = [17, 18, *range(20, 29)]  # SS.fffffffff as one 11-digit integer, over 1e9


@lru_cache(maxsize=1)
def _stamp_tables() -> dict[str, Any]:
    """The stamp's byte patterns as arrays, built on first use: numpy is imported only by the readers
    that use it, not by every importer of this module (a cold `ranktable job list`, #28)."""
    import numpy as np

    fixed = np.frombuffer(_STAMP, dtype=np.uint8) != ord("0")
    chars = np.frombuffer(_STAMP, dtype=np.uint8)
    line_fixed = np.append(fixed, True)  # the stamp, then its newline
    return {
        "chars": chars,
        "line_chars": np.append(chars, np.uint8(10)),
        # a byte is as expected when byte - LOW <= SPAN (uint8, wrapping): its fixed character, or a digit
        "span": np.where(fixed, 0, 9).astype(np.uint8),
        "line_span": np.where(line_fixed, 0, 9).astype(np.uint8),
        "second_weights": 10 ** np.arange(10, -1, -1, dtype=np.int64),
    }


def kube_times(stamps: list[str]) -> list[float | None]:
    """kube_time() of each stamp (see kube_time_array)."""
    return [None if value != value else value for value in kube_time_array(stamps).tolist()]


def kube_time_array(stamps: Sequence[str]) -> np.ndarray:
    """kube_time() of each stamp as an array (NaN: None); the usual ``2026-09-21T10:11:12.123456789Z``
    form read with array steps (the seconds are an 11-digit integer over 1e9: one exact division, as
    float() reads them), each run of stamps in one minute converted once."""
    import numpy as np

    count = len(stamps)
    out = np.full(count, math.nan)
    width = len(_STAMP) + 1
    joined = "\n".join(stamps)
    if count and len(joined) == width * count - 1 and joined.isascii() and joined.count("\n") == count - 1:
        # every newline is a separator; all at the usual places means every stamp has the usual length
        rows = np.frombuffer((joined + "\n").encode(), dtype=np.uint8).reshape(count, width)
        if (rows[:, -1] == 10).all():
            _usual_rows(stamps, rows, np.arange(count), out)
            return out
    usual = [i for i, stamp in enumerate(stamps) if len(stamp) == len(_STAMP)]
    slow = [i for i, stamp in enumerate(stamps) if stamp and len(stamp) != len(_STAMP)]
    data = "".join([stamps[i] for i in usual]).encode()
    if len(data) != len(usual) * len(_STAMP):  # not ASCII
        slow += usual
    elif usual:
        rows = np.frombuffer(data, dtype=np.uint8).reshape(len(usual), len(_STAMP))
        _usual_rows(stamps, rows, np.array(usual, dtype=np.int64), out)
    for index in slow:
        value = kube_time(stamps[index])
        out[index] = math.nan if value is None else value
    return out


def _usual_rows(stamps: Sequence[str], rows: np.ndarray, index: np.ndarray, out: np.ndarray) -> None:
    """Fill out[index] from the stamps' bytes (one row each: len(_STAMP) bytes, maybe then a newline)."""
    import numpy as np

    tables = _stamp_tables()
    chars, span = tables["chars"], tables["span"]
    if rows.shape[1] > len(_STAMP):
        chars, span = tables["line_chars"], tables["line_span"]
    bad = (rows - chars) > span  # elementwise: fast (a digit place's character is "0")
    good = ~bad.any(axis=1) if bad.any() else np.ones(len(rows), dtype=bool)
    for at in index[~good].tolist():
        value = kube_time(stamps[at])
        out[at] = math.nan if value is None else value
    if not good.any():
        return
    picked = np.ascontiguousarray(rows if good.all() else rows[good])
    count, width = picked.shape

    def words(offset: int) -> np.ndarray:  # each row's 8 bytes from `offset`, as a little-endian word
        return np.ndarray(shape=(count,), dtype="<u8", buffer=picked, offset=offset, strides=(width,))

    first, second = words(0), words(8)  # YYYY-MM-DDTHH:MM
    change = (first[1:] != first[:-1]) | (second[1:] != second[:-1])
    starts = np.concatenate([[0], np.flatnonzero(change) + 1]).astype(np.int64)  # a new minute's rows
    bases = []
    for start in starts.tolist():
        try:
            bases.append(_minute_epoch(picked[start, :16].tobytes().decode()))
        except ValueError:  # no such month: no time, as kube_time says
            bases.append(math.nan)
    base = np.repeat(np.array(bases), np.diff(np.append(starts, count)))
    # SS.fffffffff as one 11-digit integer: SS and the first fraction digit, then 8 digits as one word
    head = (picked[:, [17, 18, 20]].astype(np.int64) - 48) @ tables["second_weights"][:3]
    tail = words(21) - np.uint64(0x3030303030303030)
    tail = tail * np.uint64(10) + (tail >> np.uint64(8))
    pairs = np.uint64(0x000000FF000000FF)
    tail = (
        (tail & pairs) * np.uint64(100 + (1000000 << 32))
        + ((tail >> np.uint64(16)) & pairs) * np.uint64(1 + (10000 << 32))
    ) >> np.uint64(32)
    mantissa = head + tail.astype(np.int64)
    out[index[good]] = base + mantissa / 1e9


# Timestamps inside the line (node-local clocks, taken as UTC): Python logging ``2025-04-07 15:34:29,173``,
# Megatron ``[2024-08-01 09:44:56]``, CANN ``2025-04-08-18:07:20.444.436``.
_INLINE = re.compile(r"(\d{4})-(\d\d)-(\d\d)[ T-](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,6}))?")


def inline_time(text: str) -> float | None:
    """Epoch seconds of the first date-time printed in the first 80 characters of a line, else None."""
    match = _INLINE.search(text, 0, 80)
    if match is None:
        return None
    y, mo, d, h, mi, s, frac = match.groups()
    try:
        base = calendar.timegm((int(y), int(mo), int(d), int(h), int(mi), int(s), 0, 0, 0))
    except (ValueError, OverflowError):
        return None
    return base + (float("0." + frac) if frac else 0.0)
