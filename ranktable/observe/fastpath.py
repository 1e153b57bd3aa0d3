"""Bulk template matching: a whole batch of one pod's lines matched and read with a few C-level passes.

The per-line regex of template.py costs about a microsecond a line; this reads a batch with bytes
operations instead, and proves each line fits its template exactly, so the result equals the line path:

* every line's *key* (its text with the digits deleted) picks a candidate template (with its ``[rankN]:``
  tag variant);
* the candidates of one template are split into runs of number characters (``[0-9.eE+-]``); rebuilding
  the joined lines from the template's other characters and those runs must give the same bytes, literal
  runs (the ``e`` of ``step``) must be equal, and each number run must have the template's shape (digits
  deleted: the same skeleton; digits right after the same skeleton characters).

That is exactly "the line fullmatches the template" (the template's regex is its text with every number
replaced by its shape), so the fields are read from the same numbers. Anything unusual (a line that fits no
template but may carry a metric, a failed proof, non-ASCII text, ANSI/tqdm clean-up) returns None: the
caller then takes the line path for the whole batch.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import is_

from ranktable.observe.template import _TOKEN, Template

DIGITS = b"0123456789"
_NUMBER_CHARS = frozenset(b"0123456789.eE+-")
_PIECES = bytes(c if c in _NUMBER_CHARS else 32 for c in range(256))  # other bytes -> space, then split()
_ZEROS = bytes(48 if 48 <= c <= 57 else c for c in range(256))  # every digit -> "0"
_RUN = re.compile(r"[0-9.eE+\-]+")
_DIGIT_RUN = re.compile(r"[0-9]+")
TAG_DIGITS = 17  # the line path strips "[rankN]:" only when "]:" ends within the first 24 characters
KEYWORDS = ("loss", "step", "iteration", "Loss")  # the line path's test for a possible metric line


@dataclass
class Number:
    """A run of number characters that must have one token's shape."""

    slot: int
    skeleton: bytes  # the run with its digits deleted
    checks: tuple[tuple[bytes, int], ...]  # (needle in the zeroed column, occurrences per line)


@dataclass(eq=False)  # compared and hashed by identity
class Shape:
    """One template with one tag variant ("" untagged, "[rank0]:" or "[rank0]: "), ready for bulk reads."""

    template: Template
    tagged: bool
    runs: int  # number-character runs per line
    layout: bytes  # the line with every run replaced by %b
    literals: tuple[tuple[int, bytes], ...]  # runs without digits: (slot, bytes)
    numbers: tuple[Number, ...]
    fields: tuple[tuple[str, int, str], ...]  # (name, slot, kind)


def _number(slot: int, run: str) -> Number | None:
    zeroed = _DIGIT_RUN.sub("0", run)
    skeleton = zeroed.replace("0", "")
    if len(set(skeleton)) != len(skeleton):
        return None
    if not skeleton:  # digits only: the skeleton test below proves it
        return Number(slot, b"", ())
    checks = [(b"\n0", 1 if zeroed.startswith("0") else 0)]
    for at, char in enumerate(zeroed):
        if char != "0":
            follows = at + 1 < len(zeroed) and zeroed[at + 1] == "0"
            checks.append(((char + "0").encode(), 1 if follows else 0))
    return Number(slot, skeleton.encode(), tuple(checks))


def shape(template: Template, prefix: str) -> Shape | None:
    """The bulk reader of `template` behind `prefix`, or None when its line cannot be proved in bulk."""
    line = prefix + template.text
    if not template.text or not line.isascii() or "\n" in line or "%" in line:
        return None
    spans = [m.span() for m in _RUN.finditer(line)]
    tokens = {m.span(): i + 1 for i, m in enumerate(_TOKEN.finditer(template.text))}
    offset = len(prefix)
    group_slot: dict[int, int] = {}
    literals: list[tuple[int, bytes]] = []
    numbers: list[Number] = []
    parts, at = [], 0
    for slot, (start, end) in enumerate(spans):
        parts.append(line[at:start])
        at = end
        run = line[start:end]
        if not any(c.isdigit() for c in run):
            literals.append((slot, run.encode()))
            continue
        if prefix and slot == 0:  # the tag's rank
            numbers.append(Number(0, b"", ()))
            continue
        group = tokens.get((start - offset, end - offset))
        number = _number(slot, run)
        if group is None or number is None:  # a sign or a letter glued to a number: not provable here
            return None
        group_slot[group] = slot
        numbers.append(number)
    parts.append(line[at:])
    fields = tuple((f.name, group_slot[f.group], f.kind) for f in template.fields or ())
    layout = "%b".join(parts).encode()
    return Shape(template, bool(prefix), len(spans), layout, tuple(literals), tuple(numbers), fields)


class PodShapes:
    """The bulk readers of one pod's templates, keyed by the digit-less line."""

    def __init__(self) -> None:
        self.known = 0
        self.by_key: dict[bytes, Shape] = {}

    def update(self, templates: Sequence[Template]) -> None:
        for template in templates[self.known :]:
            variants = ["[rank0]: "]
            if not template.text.startswith(" "):
                variants.append("[rank0]:")
            if not template.text.startswith("["):
                variants.append("")
            for prefix in variants:
                found = shape(template, prefix)
                if found is not None:
                    key = (prefix + template.text).encode().translate(None, DIGITS)
                    self.by_key.setdefault(key, found)
        self.known = len(templates)


@dataclass
class Group:
    """The lines of one batch that fit one shape: line indices, the runs' columns, tag ranks."""

    shape: Shape
    lines: list[int]
    columns: dict[int, list[bytes]]


def _proved(found: Shape, texts: list[str]) -> dict[int, list[bytes]] | None:
    count = len(texts)
    joined = "\n".join(texts).encode()
    runs = joined.translate(_PIECES).split()
    if len(runs) != count * found.runs:
        return None
    if b"\n".join([found.layout] * count) % tuple(runs) != joined:
        return None
    step = found.runs
    for slot, literal in found.literals:
        if runs[slot::step].count(literal) != count:
            return None
    columns: dict[int, list[bytes]] = {}
    for number in found.numbers:
        column = runs[number.slot :: step]
        if not _shaped(number, column[:1] if column.count(column[0]) == count else column):
            return None
        columns[number.slot] = column
    if found.tagged and max(map(len, columns[0])) > TAG_DIGITS:
        return None
    return columns


def _shaped(number: Number, column: list[bytes]) -> bool:
    """Whether every run in `column` has the number's shape (a constant column is tested once)."""
    count = len(column)
    text = b"\n".join(column)
    if text.translate(None, DIGITS) != b"\n".join([number.skeleton] * count):
        return False
    zeroed = b"\n" + text.translate(_ZEROS) + b"\n" if number.checks else b""
    return all(zeroed.count(needle) == per_line * count for needle, per_line in number.checks)


def match_batch(shapes: PodShapes, texts: list[str], joined: str) -> list[Group] | None:
    """The batch's template lines grouped by shape, each proved; None when the line path must decide."""
    if "\r" in joined or "\x1b" in joined or not joined.isascii() or joined.count("\n") != len(texts) - 1:
        return None
    keys = joined.encode().translate(None, DIGITS).split(b"\n")
    found = list(map(shapes.by_key.get, keys))
    candidates = dict.fromkeys(found)
    mixed = None in candidates
    if mixed:
        del candidates[None]
        rest = "\n".join(compress(texts, map(is_, found, repeat(None))))
        if any(word in rest for word in KEYWORDS):  # may be a metric line no template covers
            return None
    groups = []
    for candidate in candidates:
        if candidate is None:
            continue
        if len(candidates) == 1 and not mixed:
            lines = list(range(len(texts)))
        else:
            lines = list(compress(range(len(found)), map(is_, found, repeat(candidate))))
        columns = _proved(candidate, list(map(texts.__getitem__, lines)))
        if columns is None:
            return None
        groups.append(Group(candidate, lines, columns))
    return groups
