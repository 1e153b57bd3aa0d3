"""Request bodies: JSON objects within `ranktable.limits`, every string valid text (no NUL, no lone
surrogate), or one 400 naming what is wrong. Light on imports: the body worker process loads it too."""

from __future__ import annotations

from typing import Any

from ranktable import limits
from ranktable.errors import InputError

SMALL_BODY_BYTES = 256 * 1024
"""Bodies above this are parsed in the worker process (`offload`), never on the event loop."""
MAX_BODY_BYTES = 2 * 2**20
"""Requests not offloaded (job specs, manifests, profiles, settings) carry at most this much; Kubernetes
itself stores no object above 1.5 MiB."""


def parse_body(raw: bytes) -> dict[str, Any]:
    """The request body as a JSON object, or an `InputError` naming the field."""
    if not raw:
        return {}
    if len(raw) > limits.MAX_FILE_BYTES:
        raise InputError(
            f"is larger than the {limits.size_text(limits.MAX_FILE_BYTES)} limit for a request",
            where="body",
            fix="send a file path in the Jupyter root instead of the content",
        )
    body = limits.load_json(raw, "body", fix="send a JSON object")
    if not isinstance(body, dict):
        raise InputError("request body must be a JSON object", where="body")
    bad = bad_text_path(body)
    if bad is not None:
        where, problem = bad
        raise InputError(problem, where=where, fix="no name, path or command may contain NUL or invalid text")
    return body


def _problem(text: str) -> str | None:
    if "\0" in text:
        return "contains a null byte"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as err:
            return f"contains a lone surrogate (\\u{ord(text[err.start]):04x}), which is not valid text"
    return None


def bad_text_path(doc: Any) -> tuple[str, str] | None:
    """(JSON path, problem) of the first string (key or value) in `doc` with NUL or a lone surrogate."""
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            problem = _problem(value)
            if problem:
                return path or "body", problem
        elif isinstance(value, dict):
            for key, child in value.items():
                name = f"{path}.{key}" if path else str(key)
                problem = _problem(str(key))
                if problem:
                    return _printable(name), problem
                stack.append((child, name))
        elif isinstance(value, list):
            stack.extend((child, f"{path}[{i}]") for i, child in enumerate(value))
    return None


def _printable(name: str) -> str:
    return name.replace("\0", "\\0").encode("utf-8", "backslashreplace").decode("utf-8")
