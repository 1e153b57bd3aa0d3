"""Slurm hostlist expressions (``n[01-16]``, ``tux[0-3,7]``, ``r[1-2]n[1-4]``) expanded to host names.

Slurm's own ``scontrol show hostnames`` is not available here, so this follows its rules: ranges keep
the zero padding of their lower bound, several bracket groups expand as a cartesian product (leftmost
varies slowest), and commas outside brackets separate expressions.
"""

from __future__ import annotations

import itertools
import re

_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")
MAX_HOSTS = 1_000_000


class HostlistError(ValueError):
    """A malformed hostlist expression; the message says which part and why."""


def split_top_level(expr: str) -> list[str]:
    """Split on commas that are not inside brackets."""
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(expr):
        if ch == "[":
            if depth:
                raise HostlistError(f"nested '[' in {expr!r}")
            depth = 1
        elif ch == "]":
            if not depth:
                raise HostlistError(f"']' without '[' in {expr!r}")
            depth = 0
        elif ch == "," and not depth:
            parts.append(expr[start:i])
            start = i + 1
    if depth:
        raise HostlistError(f"'[' without ']' in {expr!r}")
    parts.append(expr[start:])
    return parts


def _expand_bracket(body: str, whole: str) -> list[str]:
    values: list[str] = []
    if not body:
        raise HostlistError(f"empty brackets in {whole!r}")
    for item in body.split(","):
        m = _RANGE.match(item.strip())
        if not m:
            raise HostlistError(f"bad range {item!r} in {whole!r}; use N or N-M with digits")
        low_text, high_text = m.group(1), m.group(2)
        if high_text is None:
            values.append(low_text)
            continue
        low, high = int(low_text), int(high_text)
        if high < low:
            raise HostlistError(f"range {item!r} in {whole!r} runs backwards")
        if high - low >= MAX_HOSTS:
            raise HostlistError(f"range {item!r} in {whole!r} is too large")
        width = len(low_text)
        values.extend(str(n).zfill(width) for n in range(low, high + 1))
    return values


def expand_one(expr: str) -> list[str]:
    """Expand one expression without top-level commas, e.g. ``rack[1-2]-n[01-04]``."""
    pieces: list[list[str]] = []
    pos = 0
    for m in re.finditer(r"\[([^\]]*)\]", expr):
        pieces.append([expr[pos : m.start()]])
        pieces.append(_expand_bracket(m.group(1), expr))
        pos = m.end()
    pieces.append([expr[pos:]])
    if any(ch in piece[0] for piece in pieces[::2] for ch in "[]"):
        raise HostlistError(f"unbalanced brackets in {expr!r}")
    total = 1
    for piece in pieces:
        total *= len(piece)
    if total > MAX_HOSTS:
        raise HostlistError(f"{expr!r} expands to more than {MAX_HOSTS} hosts")
    return ["".join(combo) for combo in itertools.product(*pieces)]


def expand_hostlist(expr: str) -> list[str]:
    """All host names of a hostlist expression, in order, duplicates removed."""
    expr = expr.strip()
    if not expr:
        return []
    if "[" not in expr and "]" not in expr:  # plain names (how tools write 8,192 IPs): no per-char scan
        names = [part.strip() for part in expr.split(",")]
        if "" in names:
            raise HostlistError(f"empty name in {expr!r} (two commas in a row?)")
        return list(dict.fromkeys(names))
    out: dict[str, None] = {}
    for part in split_top_level(expr):
        part = part.strip()
        if not part:
            raise HostlistError(f"empty name in {expr!r} (two commas in a row?)")
        for host in expand_one(part):
            out[host] = None
    return list(out)
