"""HyperNode `regexMatch` patterns as Volcano evaluates them: RE2 (Go's `regexp`), linear time.

The pattern is user input; Python's `re` backtracks exponentially on patterns such as `^(a+)+$`, so the
patterns are compiled with Google's RE2 instead (as the topology loader does in `topology/hypernode.py`).
"""

from __future__ import annotations

import functools
from typing import Any

import re2

MAX_PATTERN_CHARS = 1024


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # errors are raised, not printed
    return options


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> Any:
    """An RE2 pattern; ValueError (with the reason) if it is too long or not valid RE2 syntax."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(f"the pattern is {len(pattern)} characters; the limit is {MAX_PATTERN_CHARS}")
    try:
        return re2.compile(pattern, _options())
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(f"invalid RE2 pattern {pattern!r}: {reason}") from None


def search(pattern: str, text: str) -> bool:
    """Go's `regexp.MatchString`: the pattern found anywhere in `text`; an invalid pattern matches nothing."""
    try:
        return compile_pattern(pattern).search(text) is not None
    except ValueError:
        return False
