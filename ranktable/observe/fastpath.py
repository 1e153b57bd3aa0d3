"""Bulk template matching: a whole batch of one pod's lines proved and read with numpy passes.

The per-line regex of template.py costs about a microsecond a line; this reads a batch with a few array
operations instead, and proves each line fits its template exactly, so the result equals the line path.

A template's regex is its learned line with every maximal run of digits replaced by ``\\d+`` (every digit
of the line lies in a number token, see template.py). So a line fullmatches it exactly when the two agree
once each maximal digit run is collapsed to one ``0`` (the *canonical* form): the literal text around the
runs is the same, and the runs sit in the same places. The batch's canonical bytes are compared with the
template's, repeated, in one pass; the fields are then read from the digit runs:

* an integer is the run's value (at most 18 digits, int64);
* a number ``I.FeX`` is ``m = IF`` over or times ``10**k`` (``k = +-X - len(F)``): with ``m <= 2**53`` and
  ``|k| <= 22`` both operands are exact and one IEEE operation rounds correctly, so the value is exactly
  what ``float()`` of the text gives (Clinger's fast path); other numbers are read with ``float()``.

Anything unusual (a line that fits no template but may carry a metric, a failed proof, a digit run over
18 digits, non-ASCII text, ANSI/tqdm clean-up) returns None: the caller then takes the line path for the
whole batch.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import is_, itemgetter
from typing import Any

import numpy as np

from ranktable.observe.template import _TOKEN, Template

DIGITS = b"0123456789"
_DIGIT_RUN = re.compile(r"[0-9]+")
TAG_DIGITS = 17  # the line path strips "[rankN]:" only when "]:" ends within the first 24 characters
KEYWORDS = ("loss", "step", "iteration", "Loss", "PerSec")  # the line path's test for a possible metric line
MAX_RUN = 18  # digits of a run read as int64
_POW10_INT = 10 ** np.arange(MAX_RUN + 1, dtype=np.int64)
_POW10 = np.array([10.0**k for k in range(23)])  # exact doubles
_EXACT = 2**53
EXPECTED_KEPT = 1 << 17  # see Shape.expected (1 MB)
SWAR = 8  # digits of a run read as one 8-byte word
_SWAR_KEEP = np.array(
    [0] + [((1 << 8 * k) - 1) << 8 * (SWAR - k) for k in range(1, SWAR + 1)], dtype=np.uint64
)
_SWAR_ZEROS = np.uint64(0x3030303030303030)
_SWAR_PAIRS = np.uint64(0x000000FF000000FF)
_SWAR_LOW = np.uint64(100 + (1000000 << 32))
_SWAR_HIGH = np.uint64(1 + (10000 << 32))


@dataclass(frozen=True)
class Token:
    """Where one field's number sits among a line's digit runs: I[.F][e[-]X]."""

    name: str
    kind: str  # "int", "float" or "ms"
    whole: int  # digit run of the integer part
    fraction: int  # -1: none
    exponent: int  # -1: none
    negative: bool  # the exponent's sign


@dataclass(eq=False)  # compared and hashed by identity
class Shape:
    """One template with one tag variant ("" untagged, "[rank0]:" or "[rank0]: "), ready for bulk reads."""

    template: Template
    tagged: bool
    width: int  # characters per line other than digits, with the newline
    places: np.ndarray  # each digit run's place: the number of other characters before it
    runs: int  # digit runs per line
    tokens: tuple[Token, ...]
    _expected: np.ndarray = dataclasses.field(default_factory=lambda: np.empty(0, dtype=np.int64), repr=False)

    def expected(self, count: int) -> np.ndarray:
        """The digit runs' places in `count` lines of this shape read as one text (each line's `places`
        plus the other characters of the lines before it); the longest asked for is kept (up to
        EXPECTED_KEPT places), as every read of the shape asks for them."""
        size = count * self.runs
        have = self._expected
        if len(have) >= size:
            return have[:size]
        made = (self.places + np.arange(count, dtype=np.int64)[:, None] * self.width).ravel()
        if size <= EXPECTED_KEPT:
            self._expected = made
        return made


def shape(template: Template, prefix: str) -> Shape | None:
    """The bulk reader of `template` behind `prefix`, or None when its line cannot be read in bulk."""
    line = prefix + template.text
    if not template.text or not line.isascii() or "\n" in line:
        return None
    spans = [m.span() for m in _DIGIT_RUN.finditer(line)]
    run_at = {start: index for index, (start, _) in enumerate(spans)}
    offset = len(prefix)
    token_spans = [m.span() for m in _TOKEN.finditer(template.text)]
    tokens = []
    for field in template.fields or ():
        start, end = token_spans[field.group - 1]
        text = template.text[start:end]
        inside = [run_at[s] for s, _ in spans if start + offset <= s < end + offset]
        fraction = exponent = -1
        mantissa, _, power = text.lower().partition("e")
        if "." in mantissa:
            fraction = inside[1]
        if power:
            exponent = inside[-1]
        tokens.append(Token(field.name, field.kind, inside[0], fraction, exponent, power.startswith("-")))
    places = np.array([start - sum(e - s for s, e in spans[:i]) for i, (start, _) in enumerate(spans)])
    width = len(line) - sum(e - s for s, e in spans) + 1
    return Shape(template, bool(prefix), width, places.astype(np.int64), len(spans), tuple(tokens))


class PodShapes:
    """The bulk readers of one pod's templates, keyed by the digit-less line."""

    def __init__(self, shared: dict[tuple[Any, ...], Shape | None] | None = None) -> None:
        self.known = 0
        self.by_key: dict[bytes, Shape] = {}
        self.numbers: dict[bytes, int] = {}  # the digit-less line -> its shape's index in `table`
        self.table: list[Shape] = []
        self._index: dict[Shape, int] = {}
        # pods that learned the same template share its Shape, so their lines are read together
        self.shared = {} if shared is None else shared

    def update(self, templates: Sequence[Template]) -> None:
        for template in templates[self.known :]:
            variants = ["[rank0]: "]
            if not template.text.startswith(" "):
                variants.append("[rank0]:")
            if not template.text.startswith("["):
                variants.append("")
            for prefix in variants:
                same = (prefix, template.text, template.fields, template.unit)
                if same not in self.shared:
                    self.shared[same] = shape(template, prefix)
                found = self.shared[same]
                if found is not None:
                    key = (prefix + template.text).encode().translate(None, DIGITS)
                    if key not in self.by_key:
                        self.by_key[key] = found
                        if found not in self._index:
                            self._index[found] = len(self.table)
                            self.table.append(found)
                        self.numbers[key] = self._index[found]
        self.known = len(templates)


@dataclass
class Group:
    """The lines of one batch that fit one shape: line indices, the tag ranks (when tagged) and the
    fields' values (int64 or float64 arrays)."""

    shape: Shape
    lines: np.ndarray
    tag: np.ndarray | None
    values: dict[str, np.ndarray]


def _read(
    found: Shape, texts: Sequence[str], data: bytes | None = None
) -> tuple[np.ndarray | None, dict[str, np.ndarray]] | None:
    """Prove every line of `texts` (whose digit-less text is the shape's) fits the shape and read its tag
    rank and fields; None if one does not. `data`: the lines joined and encoded, each ending in a newline."""
    count = len(texts)
    if data is None:
        data = ("\n".join(texts) + "\n").encode()
    buf = np.frombuffer(data, dtype=np.uint8)
    digit = (buf - np.uint8(48)) < 10
    # where a digit run starts or ends: every run ends before the last byte (a newline)
    flips = np.flatnonzero(digit[1:] != digit[:-1])
    flips += 1
    if digit[0]:
        flips = np.concatenate([[0], flips])
    starts, ends = flips[0::2], flips[1::2]
    if len(starts) != count * found.runs:
        return None
    lengths = ends - starts
    through = np.cumsum(lengths)  # digits up to each run's end
    # the digit-less lines are equal, so the runs must sit at the shape's places in them: a run's place is
    # the number of other characters before it (its position minus the digits before it, which is its end
    # minus the digits up to its end)
    if found.runs and not np.array_equal(ends - through, found.expected(count)):
        return None
    if not (found.tagged or found.tokens):
        return None, {}
    if int(lengths.max()) > MAX_RUN:
        return None
    runs = _values(data, buf, digit, through, ends, lengths).reshape(count, found.runs)
    sizes = lengths.reshape(count, found.runs)
    tag = None
    if found.tagged:
        if int(sizes[:, 0].max()) > TAG_DIGITS:
            return None
        tag = runs[:, 0]
    values = {}
    for token in found.tokens:
        if token.kind == "int":
            values[token.name] = runs[:, token.whole]
            continue
        value = _number(token, runs, sizes)
        if value is None:  # a slow read for the rows the fast path cannot prove exact
            value = _slow(token, data, starts, ends, found.runs, runs, sizes)
        values[token.name] = value * 0.001 if token.kind == "ms" else value
    return tag, values


def _values(
    data: bytes,
    buf: np.ndarray,
    digit: np.ndarray,
    through: np.ndarray,
    ends: np.ndarray,
    lengths: np.ndarray,
) -> np.ndarray:
    """Each digit run's value (int64; runs of at most MAX_RUN digits; digit: which bytes are digits,
    through: the digits up to each run's end)."""
    if int(lengths.max(initial=0)) > SWAR:
        where = np.flatnonzero(digit)  # digit positions
        weighted = (buf[where].astype(np.int64) - 48) * _POW10_INT[np.repeat(ends, lengths) - where - 1]
        return np.add.reduceat(weighted, through - lengths)
    # at most 8 digits: the 8 bytes ending with the run, as one little-endian word (the first digit in the
    # lowest byte), other bytes cleared, read with the usual SWAR steps (8 digits -> 4 x 2 -> 2 x 4 -> 1)
    # (in place where it can: the same steps with fewer temporary arrays)
    padded = bytes(SWAR) + data
    words = np.ndarray(shape=(len(padded) - SWAR + 1,), dtype="<u8", buffer=padded, strides=(1,))
    keep = _SWAR_KEEP.take(lengths)
    value = words[ends]  # a gather by index: faster than take() on this unaligned view
    value &= keep
    keep &= _SWAR_ZEROS
    value -= keep
    high = value >> np.uint64(8)
    value *= np.uint64(10)
    value += high  # pairs of digits
    np.right_shift(value, np.uint64(16), out=high)
    high &= _SWAR_PAIRS
    high *= _SWAR_HIGH
    value &= _SWAR_PAIRS
    value *= _SWAR_LOW
    value += high
    value >>= np.uint64(32)
    return value.view(np.int64)


def _parts(token: Token, runs: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, ...]:
    """(mantissa digits, mantissa, decimal exponent) of each row's number."""
    mantissa = runs[:, token.whole]
    digits = sizes[:, token.whole]
    power = np.zeros(len(runs), dtype=np.int64)
    if token.fraction >= 0:
        fraction = sizes[:, token.fraction]
        digits = digits + fraction
        scale = _POW10_INT[np.minimum(fraction, MAX_RUN)]
        with np.errstate(over="ignore"):
            mantissa = mantissa * scale + runs[:, token.fraction]
        power -= fraction
    if token.exponent >= 0:
        power += -runs[:, token.exponent] if token.negative else runs[:, token.exponent]
    return digits, mantissa, power


def _number(token: Token, runs: np.ndarray, sizes: np.ndarray) -> np.ndarray | None:
    same = _uniform(token, runs, sizes)
    if same is not None:
        return same
    digits, mantissa, power = _parts(token, runs, sizes)
    if not ((digits <= MAX_RUN).all() and (mantissa <= _EXACT).all() and (np.abs(power) <= 22).all()):
        return None
    exact = mantissa.astype(np.float64)
    scale = _POW10[np.abs(power)]
    return np.where(power < 0, exact / scale, exact * scale)


def _uniform(token: Token, runs: np.ndarray, sizes: np.ndarray) -> np.ndarray | None:
    """_number when every row's fraction has as many digits and its exponent the same value (a logger's
    fixed format): the same operations with one power of ten for all rows; None when not so."""
    if not len(runs):
        return None
    fraction = 0
    if token.fraction >= 0:
        column = sizes[:, token.fraction]
        fraction = int(column[0])
        if int(column.min()) != fraction or int(column.max()) != fraction:
            return None
    power = -fraction
    if token.exponent >= 0:
        column = runs[:, token.exponent]
        exponent = int(column[0])
        if int(column.min()) != exponent or int(column.max()) != exponent:
            return None
        power += -exponent if token.negative else exponent
    if abs(power) > 22 or int(sizes[:, token.whole].max()) + fraction > MAX_RUN:
        return None
    mantissa = runs[:, token.whole]
    if token.fraction >= 0:
        mantissa = mantissa * _POW10_INT[fraction] + runs[:, token.fraction]
    if int(mantissa.max()) > _EXACT:
        return None
    exact = mantissa.astype(np.float64)
    return exact / _POW10[-power] if power < 0 else exact * _POW10[power]


def _slow(
    token: Token,
    data: bytes,
    starts: np.ndarray,
    ends: np.ndarray,
    per_line: int,
    runs: np.ndarray,
    sizes: np.ndarray,
) -> np.ndarray:
    digits, mantissa, power = _parts(token, runs, sizes)
    fast = (digits <= MAX_RUN) & (mantissa <= _EXACT) & (np.abs(power) <= 22)
    exact = mantissa.astype(np.float64)
    scale = _POW10[np.minimum(np.abs(power), 22)]
    out = np.where(power < 0, exact / scale, exact * scale)
    last = token.exponent if token.exponent >= 0 else max(token.whole, token.fraction)
    for row in np.flatnonzero(~fast).tolist():
        out[row] = float(data[starts[row * per_line + token.whole] : ends[row * per_line + last]])
    return out


def _plain(joined: str) -> bool:
    """Whether the lines can be read in bulk at all: ASCII, no tqdm/ANSI clean-up (a newline inside a text
    is found by _keys)."""
    return not ("\r" in joined or "\x1b" in joined or not joined.isascii())


def _keys(data: bytes, count: int) -> list[bytes] | None:
    """Each line's digit-less text (`data`: the `count` lines, each ending in a newline); None when a text
    holds a newline."""
    keys = data.translate(None, DIGITS).split(b"\n")
    if len(keys) != count + 1:
        return None
    keys.pop()
    return keys


def _keyed(texts: list[str], joined: str) -> tuple[bytes, list[bytes]] | None:
    """The batch's bytes and each line's key, or None when the batch cannot be read in bulk."""
    if not _plain(joined):
        return None
    data = (joined + "\n").encode()
    keys = _keys(data, len(texts))
    return None if keys is None else (data, keys)


def match_batch(shapes: PodShapes, texts: list[str], joined: str) -> list[Group] | None:
    """The batch's template lines grouped by shape, each proved and read; None when the line path must
    decide."""
    keyed = _keyed(texts, joined)
    if keyed is None:
        return None
    data, keys = keyed
    numbers = np.fromiter(map(shapes.numbers.get, keys, repeat(-1)), dtype=np.int64, count=len(keys))
    counts = np.bincount(numbers + 1, minlength=1)
    if counts[0]:
        rest = "\n".join([texts[i] for i in np.flatnonzero(numbers < 0).tolist()])
        if any(word in rest for word in KEYWORDS):  # may be a metric line no template covers
            return None
    present = np.flatnonzero(counts[1:]).tolist()
    groups = []
    alone = len(present) == 1 and not counts[0]
    for number in present:
        lines = np.arange(len(texts)) if alone else np.flatnonzero(numbers == number)
        group = _group(shapes.table[number], lines, texts, data if alone else None)
        if group is None:
            return None
        groups.append(group)
    return groups


def _group(candidate: Shape, lines: np.ndarray, texts: list[str], whole: bytes | None) -> Group | None:
    """The group of `lines` read through `candidate` (`whole`: the batch's bytes when it takes every line);
    None when a line does not read back exactly."""
    picked: Sequence[str] = texts
    if whole is None:
        picked = [texts[int(lines[0])]] if len(lines) == 1 else itemgetter(*lines.tolist())(texts)
    read: Any = _read(candidate, picked, whole)
    return None if read is None else Group(candidate, lines, *read)


def match_pods(
    shapes: list[PodShapes], owner: list[int], texts: list[str], joined: str
) -> list[Group] | None:
    """match_batch of lines from several pods (owner: each line's index in `shapes`)."""
    keyed = _keyed(texts, joined)
    if keyed is None:
        return None
    data, keys = keyed
    lookups = [pod.by_key.get for pod in shapes]
    return _groups([lookups[o](key) for o, key in zip(owner, keys, strict=True)], texts, data)


def _groups(found: list[Shape | None], texts: list[str], data: bytes) -> list[Group] | None:
    candidates = dict.fromkeys(found)
    mixed = None in candidates
    if mixed:
        del candidates[None]
        rest = "\n".join(compress(texts, map(is_, found, repeat(None))))
        if any(word in rest for word in KEYWORDS):  # may be a metric line no template covers
            return None
    groups = []
    alone = len(candidates) == 1 and not mixed
    for candidate in candidates:
        if candidate is None:
            continue
        if alone:
            lines = np.arange(len(texts))
        else:
            lines = np.array(list(compress(range(len(found)), map(is_, found, repeat(candidate)))))
        group = _group(candidate, lines, texts, data if alone else None)
        if group is None:
            return None
        groups.append(group)
    return groups
