"""Arguments are argv: one way to split a line of text into words, shared by every surface.

The form, the CLI's `--script-args`/`--command`, the ipywidgets composer and the `%%ranktable job` cell all
split text as a shell does (quotes group, backslashes escape, nothing is expanded or run), so
``--steps 300`` is two arguments wherever it is typed.
"""

from __future__ import annotations

import re
import shlex

from ranktable.errors import InputError
from ranktable.limits import brief

# a Python interpreter as the first word of a training command: python, python3, python3.9, /usr/bin/python3
_PYTHON = re.compile(r"^(?:.*/)?python(?:\d+(?:\.\d+)?)?$")


def shell_words(text: str, where: str, *, comments: bool = False) -> list[str]:
    """`text` split like a shell does (not run by one); an unterminated quote names `where`.
    `comments`: a ``#`` word and the rest of its line are dropped (a notebook cell's remarks)."""
    try:
        return shlex.split(text, comments=comments)
    except ValueError as exc:
        raise InputError(
            f"cannot split {brief(text)} into words: {str(exc).lower()}",
            where=where,
            fix="close the quote, or escape it with a backslash",
        ) from None


def python_script(words: list[str]) -> tuple[str, str, list[str]] | None:
    """(interpreter, script, args) when `words` start a Python script (``python3 train.py --steps 3``);
    None for anything else (``python -m x``, ``bash run.sh``, two commands)."""
    if len(words) < 2 or not _PYTHON.match(words[0]) or words[1].startswith("-"):
        return None
    if any(word in (";", "&&", "||", "|", "&") for word in words):
        return None
    return words[0], words[1], words[2:]
