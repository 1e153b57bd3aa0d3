"""A fast reader for the plain block YAML that tools write (``yaml.safe_dump``, ``kubectl -o yaml``).

PyYAML builds a Python node for every value, even with libyaml's C parser, so a 65,536-rank HyperNode
file (37,000 lines) took ~0.35 s to load against ~0.05 s for this reader (issue 28). It reads only a
strict subset: block mappings and sequences, keys that are plain words or quoted, values that are
plain words, decimal integers, ``{}``/``[]``, or single-/double-quoted strings (single-quoted ones may
span lines). Anything else (comments, anchors, tags, flow collections, block scalars, tabs, a scalar
PyYAML would read as a float, a timestamp or an octal) makes :func:`load_block_yaml` return None, and
the caller reads the text with PyYAML, which also gives the error for a text that is not valid YAML.
For the texts it accepts, the values are the ones PyYAML's SafeLoader gives (YAML 1.1 resolution:
``yes``/``on`` are booleans, ``~``/``null`` are None); ``tests/core/test_block_yaml.py`` compares the two.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["load_block_yaml"]

# printable ASCII and newlines only: no tab, CR, BOM, control or non-ASCII character (PyYAML decides those)
_SAFE_TEXT = re.compile(r"[\n\x20-\x7e]*")
_KEY = re.compile(r"""(?:([A-Za-z0-9_./][A-Za-z0-9_./-]*)|'((?:[^']|'')*)'|"([^"\\]*)"):(?: +(.*))?$""")
# a plain scalar: no indicator first, `:` only inside and never before a space (`https://h:6443` is one)
_PLAIN = re.compile(r"(?!.*: )[A-Za-z0-9_./]([A-Za-z0-9_./()=+ :-]*[A-Za-z0-9_./()=+-])?$|-[A-Za-z0-9_./]+$")
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)$")
# what YAML 1.1 (PyYAML's resolver, patterns as there) reads as an int, a float or a timestamp: a plain
# scalar starting with a digit, a dot or a sign that matches none of these is a string
_NUMBER_OR_TIME = re.compile(
    r"""(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
    |[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)
    |[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
    |[0-9][0-9][0-9][0-9]\ -[0-9][0-9]?\ -[0-9][0-9]?(?:[Tt]|[\ \t]+)[0-9][0-9]?
     :[0-9][0-9]\ :[0-9][0-9]\ (?:\.[0-9]*)?(?:[\ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$""",
    re.X,
)
_SINGLE = re.compile(r"'((?:[^']|'')*)'$")
_SINGLE_OPEN = re.compile(r"'((?:[^']|'')*)$")
_SINGLE_CLOSE = re.compile(r"((?:[^']|'')*)'$")
_SINGLE_MIDDLE = re.compile(r"(?:[^']|'')*$")
_DOUBLE = re.compile(r'"([^"\\]*)"$')
_WORDS: dict[str, Any] = {
    **{w: True for w in ("yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON")},
    **{w: False for w in ("no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF")},
    **{w: None for w in ("~", "null", "Null", "NULL")},
}
_NO_VALUE = object()


class _NotSimple(Exception):
    """The text is outside the subset: read it with PyYAML."""


def load_block_yaml(text: str, max_depth: int = 100) -> list[Any] | None:
    """Every document of `text` as PyYAML's ``safe_load_all`` gives them, or None when the text is
    outside the subset this reader knows (see the module doc) or nested deeper than `max_depth`."""
    if "#" in text or "&" in text or "*" in text or "!" in text or not _SAFE_TEXT.fullmatch(text):
        return None
    lines = text.split("\n")
    try:
        docs: list[Any] = []
        start, marker = 0, False
        for index, line in enumerate(lines):
            if line.startswith(("---", "...", "%")):
                if line.rstrip(" ") != "---":
                    return None
                if marker or _has_content(lines, start, index):
                    docs.append(_document(lines, start, index, max_depth))
                start, marker = index + 1, True
        if marker or _has_content(lines, start, len(lines)):
            docs.append(_document(lines, start, len(lines), max_depth))
        return docs
    except _NotSimple:
        return None


def _has_content(lines: list[str], start: int, end: int) -> bool:
    return any(lines[i].strip(" ") for i in range(start, end))


def _scalar(text: str) -> Any:
    """A plain scalar as YAML 1.1 resolves it, or _NotSimple."""
    if _PLAIN.match(text) is None:
        raise _NotSimple
    first = text[0]
    if first.isalpha() or first == "_" or first == "/":
        return _WORDS.get(text, text) if len(text) <= 5 else text
    if _DECIMAL.match(text):
        return int(text)
    if _NUMBER_OR_TIME.match(text):
        raise _NotSimple  # a float, an octal, a sexagesimal, a timestamp...: PyYAML converts it
    return text  # `10.0.0.1`, a hex token


def _value(text: str, lines: list[str], index: int, end: int, indent: int) -> tuple[Any, int]:
    """The value written as `text` on line `index` (a single-quoted one may go on below lines indented
    more than `indent`); returns it and the index of the line after it."""
    first = text[0]
    if first == "'":
        found = _SINGLE.match(text)
        if found is not None:
            return found.group(1).replace("''", "'"), index + 1
        opened = _SINGLE_OPEN.match(text)
        if opened is None:
            raise _NotSimple
        return _multiline_single(opened.group(1), lines, index + 1, end, indent)
    if first == '"':
        found = _DOUBLE.match(text)
        if found is None:
            raise _NotSimple
        return found.group(1), index + 1
    if text == "{}":
        return {}, index + 1
    if text == "[]":
        return [], index + 1
    return _scalar(text), index + 1


def _multiline_single(head: str, lines: list[str], index: int, end: int, indent: int) -> tuple[str, int]:
    """A single-quoted scalar folded over lines (a break is a space, each empty line a newline)."""
    chunks = [head.rstrip(" ")]
    breaks = 0
    while index < end:
        raw = lines[index]
        line = raw.strip(" ")
        if not line:
            breaks += 1
            index += 1
            continue
        if len(raw) - len(raw.lstrip(" ")) <= indent:
            raise _NotSimple
        chunks.append("\n" * breaks if breaks else " ")
        breaks = 0
        if "'" not in line:
            chunks.append(line)
            index += 1
            continue
        closed = _SINGLE_CLOSE.match(line)
        if closed is not None:
            chunks.append(closed.group(1))
            return "".join(chunks).replace("''", "'"), index + 1
        if _SINGLE_MIDDLE.match(line) is None:
            raise _NotSimple
        chunks.append(line)
        index += 1
    raise _NotSimple


def _document(lines: list[str], start: int, end: int, max_depth: int) -> Any:
    """One document from lines[start:end] (no markers inside)."""
    doc = _Document(lines, end, max_depth)
    index = start
    while index < end:
        raw = lines[index]
        if raw[-1:] == " ":
            raw = raw.rstrip(" ")
        if not raw:
            index += 1
            continue
        rest = raw.lstrip(" ")
        col = len(raw) - len(rest)
        dash = rest[0] == "-" and (len(rest) == 1 or rest[1] == " ")
        index = doc.entry(doc.container(col, dash), rest, col, dash, index)
    return doc.root


class _Document:
    """The state of one document being read: the open containers and a `key:` awaiting its value."""

    def __init__(self, lines: list[str], end: int, max_depth: int) -> None:
        self.lines, self.end, self.max_depth = lines, end, max_depth
        self.frames: list[tuple[int, Any]] = []  # (indent, dict or list) from the root down
        self.pending: tuple[Any, Any, int] | None = None  # (container, key or index, indent)
        self.root: Any = None
        self.keys: dict[str, Any] = {}  # key text -> key, and plain value text -> value, as read before
        self.values: dict[str, Any] = {}

    def push(self, col: int, child: Any) -> None:
        self.frames.append((col, child))
        if len(self.frames) > self.max_depth:
            raise _NotSimple

    def container(self, col: int, dash: bool) -> Any:
        """The open container a line at `col` belongs to (opening the one a `key:` line awaits)."""
        frames = self.frames
        if self.pending is not None:
            parent, slot, parent_indent = self.pending
            self.pending = None
            if col > parent_indent or (col == parent_indent and dash and type(parent) is dict):
                child: Any = [] if dash else {}
                parent[slot] = child
                self.push(col, child)
        elif not frames:
            if self.root is not None:
                raise _NotSimple
            self.root = [] if dash else {}
            frames.append((col, self.root))
        top = frames[-1]
        if top[0] != col or (not dash and type(top[1]) is list):
            while frames and frames[-1][0] > col:
                frames.pop()
            if frames and frames[-1][0] == col and not dash and type(frames[-1][1]) is list:
                frames.pop()  # a sequence written at its key's indent ends at the next key
            if not frames or frames[-1][0] != col:
                raise _NotSimple
            top = frames[-1]
        return top[1]

    def entry(self, container: Any, rest: str, col: int, dash: bool, index: int) -> int:
        """Read the line `rest` (at `col`) into `container`; the index of the next line to read."""
        found = None
        while dash:  # `- ...`: an item, maybe itself `- ...` or `key: ...`
            if type(container) is not list:
                raise _NotSimple
            after = rest[1:]
            item = after.lstrip(" ")
            if not item:
                container.append(None)
                self.pending = (container, len(container) - 1, col)
                return index + 1
            col += 1 + len(after) - len(item)
            rest = item
            dash = rest[0] == "-" and (len(rest) == 1 or rest[1] == " ")
            found = None if dash else _KEY.match(rest)
            if not dash and found is None:
                value, index = _value(rest, self.lines, index, self.end, col - 2)
                container.append(value)
                return index
            child: Any = [] if dash else {}
            container.append(child)
            self.push(col, child)
            container = child
        if type(container) is not dict:
            raise _NotSimple
        if found is None:
            found = _KEY.match(rest)
            if found is None:
                raise _NotSimple
        plain, single, double, text = found.groups()
        if plain is not None:
            key = self.keys.get(plain, _NO_VALUE)
            if key is _NO_VALUE:
                key = self.keys[plain] = _scalar(plain)
        else:
            key = single.replace("''", "'") if single is not None else double
        if text is None:
            container[key] = None
            self.pending = (container, key, col)
            return index + 1
        value = self.values.get(text, _NO_VALUE)
        if value is not _NO_VALUE:
            container[key] = value
            return index + 1
        container[key], after_value = _value(text, self.lines, index, self.end, col)
        if after_value == index + 1 and type(container[key]) not in (dict, list):
            self.values[text] = container[key]
        return after_value
