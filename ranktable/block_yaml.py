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
A sequence's items that repeat the shape of the one before (a HyperNode's thousands of members) are
matched by one regex each and built in one call (`_Repeats`), not read line by line.
"""

from __future__ import annotations

import re
from itertools import accumulate
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
_MARKER = re.compile(r"\n(?:---|\.\.\.|%)")  # a line that starts or ends a document, or a directive


class _NotSimple(Exception):
    """The text is outside the subset: read it with PyYAML."""


def load_block_yaml(text: str, max_depth: int = 100) -> list[Any] | None:
    """Every document of `text` as PyYAML's ``safe_load_all`` gives them, or None when the text is
    outside the subset this reader knows (see the module doc) or nested deeper than `max_depth`."""
    if "#" in text or "&" in text or "*" in text or "!" in text or not _SAFE_TEXT.fullmatch(text):
        return None
    lines = text.split("\n")
    repeats = _Repeats(text, lines)
    try:
        docs: list[Any] = []
        start, marker = 0, False
        index = searched = 0
        first = [0] if text.startswith(("---", "...", "%")) else []
        for at in first + [found.start() + 1 for found in _MARKER.finditer(text)]:  # (in C: 37,000 lines)
            index += text.count("\n", searched, at)
            searched = at
            if lines[index].rstrip(" ") != "---":
                return None
            if marker or _has_content(lines, start, index):
                docs.append(_document(repeats, start, index, max_depth))
            start, marker = index + 1, True
        if marker or _has_content(lines, start, len(lines)):
            docs.append(_document(repeats, start, len(lines), max_depth))
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


def _document(repeats: _Repeats, start: int, end: int, max_depth: int) -> Any:
    """One document from lines[start:end] (no markers inside)."""
    lines = repeats.lines
    doc = _Document(lines, end, max_depth)
    repeats.document(end, doc.values)
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
        container = doc.container(col, dash)
        if dash and type(container) is list:
            after = repeats.items(container, index, len(doc.frames))
            if after != index:
                index = after
                continue
        index = doc.entry(container, rest, col, dash, index)
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


# a line of an item, split: indentation and `- ` dashes, then a `key:` (with or without its value) or a value
_ITEM_LINE = re.compile(r"( *)((?:-(?: +|$))*)(.*)")
_VALUE_GROUP = r"([^ \n][^\n]*?) *"
_MAX_ITEM_LINES = 64
_MAX_MISSES = 3


class _Template:
    """The shape of one sequence item (its lines with their values cut out): the next items of the same
    shape are matched by one regex each and built by one call, not read line by line."""

    def __init__(self, pattern: re.Pattern[str], item: Any, bare: list[bool], size: int) -> None:
        self.pattern, self.bare, self.size = pattern, bare, size  # size: the item's lines
        self.depth = 0  # the containers open where its first item was read
        self.keys: list[Any] = []
        # a lambda of `K[i]` and `v[j]` only (K: the item's keys, v: an item's values): the source holds
        # no text of the document, and one call builds an item's dicts and lists in C
        source = _source(item, self.keys, [0])
        self.build = eval(f"lambda v, K=K: {source}", {"K": self.keys})  # noqa: S307 - indexes only


def _source(value: Any, keys: list[Any], leaves: list[int]) -> str:
    """The expression that builds `value` anew from its leaves (scalars and empty containers, in
    document order) `v[j]` and its keys `K[i]`."""
    if type(value) is dict and value:
        parts = []
        for key, child in value.items():
            keys.append(key)
            parts.append(f"K[{len(keys) - 1}]: {_source(child, keys, leaves)}")
        return "{" + ", ".join(parts) + "}"
    if type(value) is list and value:
        return "[" + ", ".join(_source(child, keys, leaves) for child in value) + "]"
    leaves[0] += 1
    return f"v[{leaves[0] - 1}]"


def _leaves(value: Any, out: list[Any]) -> list[Any]:
    """`value`'s scalars and empty containers in document order."""
    if type(value) is dict and value:
        for child in value.values():
            _leaves(child, out)
    elif type(value) is list and value:
        for child in value:
            _leaves(child, out)
    else:
        out.append(value)
    return out


def _count(value: Any) -> int:
    """Entries (keys and sequence items) in `value`, nested ones included."""
    if type(value) is dict:
        return len(value) + sum(_count(child) for child in value.values())
    if type(value) is list:
        return len(value) + sum(_count(child) for child in value)
    return 0


class _Repeats:
    """Sequences whose items repeat one shape (a HyperNode's 8,192 `- selector: ... type: Node` members,
    a NodeList's nodes): the item read first becomes a `_Template`, and each next item of its shape is
    one regex match and one build, where reading it line by line cost ~10 us an item (issue 28).

    Exact by construction: a template is made only when the first item's entries, its values and the
    values its pattern captures agree one to one, and an item is taken only when its pattern matches
    its whole lines and the line after it starts a sibling, a parent's entry or nothing.
    """

    def __init__(self, text: str, lines: list[str]) -> None:
        self.text, self.lines = text, lines
        self._offsets: list[int] | None = None  # each line's start in `text`, once one is needed
        self.templates: dict[tuple[str, int], _Template] = {}  # by pattern and depth: documents share them
        self.recent: _Template | None = None  # the last template that took items
        self.document(len(lines), {})

    def document(self, end: int, cache: dict[str, Any]) -> None:
        """Start the document that ends before line `end` (`cache`: its plain values read so far)."""
        self.end, self.values = end, cache
        self.last: dict[int, tuple[list[Any], int, int]] = {}  # id(list) -> (list, start line, length)
        self.misses: dict[int, int] = {}

    def offset(self, index: int) -> int:
        if self._offsets is None:
            self._offsets = [0, *accumulate(map(len, self.lines))]
        return self._offsets[index] + index  # + the newlines

    def items(self, seq: list[Any], index: int, depth: int) -> int:
        """The line after the items of `seq` read by template from line `index` on (`index`: none);
        `depth`: the containers open (the sequence's included), as `_Document.frames` counts them."""
        key = id(seq)
        last = self.last.get(key)
        self.last[key] = (seq, index, len(seq))
        if last is None or last[0] is not seq:  # a new sequence: its items may have the last one's shape
            recent = self.recent  # (taken at the same depth only: `max_depth` was checked at that one)
            return self.taken(seq, recent, index) if recent and recent.depth == depth and not seq else index
        if len(seq) != last[2] + 1 or index - last[1] > _MAX_ITEM_LINES:
            return index
        misses = self.misses.get(key, 0)
        template = self.template(seq[-1], last[1], index, depth) if misses < _MAX_MISSES else None
        taken = index if template is None else self.taken(seq, template, index)
        if taken == index:
            self.misses[key] = misses + 1
        return taken

    def taken(self, seq: list[Any], template: _Template, index: int) -> int:
        """`take`, noting where the last item taken starts (a template that took items is the one
        tried first on the next sequence: a HyperNode file's 272 member lists share one shape)."""
        taken = self.take(template, seq, index, template.size)
        if taken != index:
            self.last[id(seq)] = (seq, taken - template.size, len(seq) - 1)
            self.recent = template
        return taken

    def take(self, template: _Template, seq: list[Any], index: int, size: int) -> int:
        """Append the items of `template`'s shape from line `index` on; the line after them."""
        match, build, bare, end = template.pattern.match, template.build, template.bare, self.end
        text, get, resolve = self.text, self.values.get, self.resolve
        taken, pos = index, self.offset(index)
        while taken + size <= end:
            found = match(text, pos)
            if found is None:
                break
            values = []
            for value_text, after_dash in zip(found.groups(), bare, strict=True):
                value = get(value_text, _NO_VALUE)
                if value is _NO_VALUE or after_dash:
                    value = resolve(value_text, after_dash, taken)
                    if value is _NO_VALUE:
                        break
                values.append(value)
            else:
                seq.append(build(values))
                taken += size
                pos = found.end()
                continue
            break
        if taken != index and not self.ends_item(taken, seq, size):
            taken -= size
        return taken

    def ends_item(self, index: int, seq: list[Any], size: int) -> bool:
        """Line `index` cannot continue the item above it (indented no deeper than its `- `, or none);
        else that item is dropped, to be read line by line."""
        if index >= self.end:
            return True
        line, dash = self.lines[index], self.lines[index - size]
        rest = line.lstrip(" ")
        if rest and len(line) - len(rest) <= len(dash) - len(dash.lstrip(" ")):
            return True
        seq.pop()
        return False

    def resolve(self, text: str, after_dash: bool, index: int) -> Any:
        """The value of a captured text as `_value` reads it; _NO_VALUE for one it would read otherwise
        (a `key: value` or `- ` after a `- `, a quote that goes on below)."""
        if after_dash and (_KEY.match(text) is not None or text[0] == "-"):
            return _NO_VALUE
        value = self.values.get(text, _NO_VALUE)
        if value is _NO_VALUE:
            try:
                value, after = _value(text, self.lines, index, self.end, 0)
            except _NotSimple:
                return _NO_VALUE
            if after != index + 1:
                return _NO_VALUE
            if type(value) is not dict and type(value) is not list:
                self.values[text] = value
        return value

    def template(self, item: Any, start: int, end: int, depth: int) -> _Template | None:
        """The template of the item read from lines[start:end], or None if it would not be exact."""
        parts: list[str] = []
        bare: list[bool] = []
        entries = 0
        for line in self.lines[start:end]:
            found = _ITEM_LINE.fullmatch(line.rstrip(" "))
            if found is None or not found.group(3):
                return None
            lead, dashes, rest = found.groups()
            entries += dashes.count("-")
            pair = _KEY.match(rest)
            if pair is not None:
                entries += 1
                if pair.group(4) is None:
                    parts.append(re.escape(lead + dashes + rest) + " *")
                    continue
                parts.append(re.escape(lead + dashes + rest[: pair.start(4)]) + _VALUE_GROUP)
                bare.append(False)
            elif dashes:
                parts.append(re.escape(lead + dashes) + _VALUE_GROUP)
                bare.append(True)
            else:
                return None
        leaves = _leaves(item, [])
        if entries != 1 + _count(item) or len(leaves) != len(bare):
            return None
        pattern = re.compile("\n".join(parts) + r"(?:\n|\Z)")
        found = pattern.match(self.text, self.offset(start))
        if found is None:
            return None
        values = [self.resolve(text, b, start) for text, b in zip(found.groups(), bare, strict=True)]
        if any(type(a) is not type(b) or a != b for a, b in zip(values, leaves, strict=True)):
            return None  # (a text read otherwise is _NO_VALUE, of its own type)
        template = self.templates.get((pattern.pattern, depth))
        if template is None:
            template = self.templates[pattern.pattern, depth] = _Template(pattern, item, bare, end - start)
            template.depth = depth
        return template if template.build(values) == item else None
