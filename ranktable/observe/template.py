"""Learned line templates: the batch path's shortcut past the format parsers for the lines a run repeats.

A trainer prints the same line with new numbers every step. The first time a line is parsed, its
skeleton is learned: the literal text with every number replaced by a group of the same shape (digits,
point, exponent). A later line that fully matches the skeleton has the same structure, so every parser
decides it the same way: either no parser takes it (a *silent* template: skip the parsers) or the plain
parser takes the same fields from the same numbers (read them straight from the groups). A template is
kept only when re-reading the learned line through it gives exactly the parser's sample.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ranktable.observe.parsers import _P_PAIR, _P_TPUT, Sample, plain_field

MAX_TEMPLATES = 8  # per pod; a pod that prints more shapes than this uses the parsers for the rest
MAX_TOKENS = 24
_TOKEN = re.compile(r"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Field:
    name: str
    group: int
    kind: str  # "int", "float" or "ms"


def _ms(value: str) -> float:
    return float(value) * 0.001


_CONVERT: dict[str, Callable[[str], Any]] = {"int": int, "float": float, "ms": _ms}


@dataclass
class Template:
    pattern: re.Pattern[str]
    fields: tuple[Field, ...] | None  # None: a line no parser takes
    unit: str | None = None
    text: str = ""  # the line it was learned from (fastpath.py reads its layout)

    def __post_init__(self) -> None:
        self._read = [(f.name, f.group - 1, _CONVERT[f.kind]) for f in self.fields or ()]

    def sample(self, match: re.Match[str]) -> Sample:
        values = match.groups()
        out: Sample = {name: convert(values[index]) for name, index, convert in self._read}
        if self.unit is not None:
            out["throughput_unit"] = self.unit
        return out


def _shape(token: str) -> str:
    return "(" + _DIGITS.sub(r"\\d+", re.escape(token)) + ")"


def _skeleton(text: str) -> tuple[str, list[tuple[int, int]]] | None:
    spans = [m.span() for m in _TOKEN.finditer(text)]
    if len(spans) > MAX_TOKENS:
        return None
    parts, at = [], 0
    for start, end in spans:
        parts.append(re.escape(text[at:start]))
        parts.append(_shape(text[start:end]))
        at = end
    parts.append(re.escape(text[at:]))
    return "".join(parts), spans


def learn(text: str, parser: str | None, sample: Sample | None) -> Template | None:
    """The template of `text`, given what the parsers made of it (`parser` None: nothing)."""
    shaped = _skeleton(text)
    if shaped is None:
        return None
    source, spans = shaped
    group_of = {span: i + 1 for i, span in enumerate(spans)}
    if parser is None:
        return Template(re.compile(source), None, text=text)
    if parser != "plain" or sample is None:
        return None
    fields: list[Field] = []
    seen: set[str] = set()
    for m in _P_PAIR.finditer(text):  # the plain parser's own walk, with positions
        field = plain_field(m.group(1), m.group(2), m.group(3))
        if field is None or field[0] in seen:
            continue
        name, kind = field
        group = group_of.get(m.span(2))
        if group is None:
            return None  # a sign, nan or inf: not a plain number token
        seen.add(name)
        fields.append(Field(name, group, kind))
    unit = None
    if "/s" in text:
        found = _P_TPUT.search(text)
        if found:
            group = group_of.get(found.span(1))
            if group is None:
                return None
            fields.append(Field("throughput", group, "float"))
            unit = f"{found.group(2)}/s"
    template = Template(re.compile(source), tuple(fields), unit, text)
    match = template.pattern.fullmatch(text)
    if match is None or template.sample(match) != sample:
        return None
    return template


def match(templates: list[Template], text: str) -> tuple[Template, re.Match[str]] | None:
    for template in templates:
        found = template.pattern.fullmatch(text)
        if found is not None:
            return template, found
    return None


def parsed_by_plain(order: list[tuple[str, Any]]) -> bool:
    """Plain templates stand for the parsers only while plain is tried first (formats move to front)."""
    return bool(order) and order[0][0] == "plain"
