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


LOGS_FIELDS = ("files", "paths", "rank_from")
MAX_LOG_NAME = limits.MAX_PATH
MAX_LOGS_JSON_BYTES = 32 * limits.MiB
"""Logs sent as a JSON body (text in strings); multipart uploads may carry MAX_UPLOAD_BYTES."""


def logs_request(request: Any) -> tuple[list[tuple[str, bytes]], list[str], str | None]:
    """`POST /ranktable/logs`'s (uploads, paths, rank_from): multipart `files` parts, or a JSON object
    ``{"files": [{"name", "text"}], "paths": [...], "rank_from": ...}``; anything else is one 400."""
    raw: bytes = request.body
    if len(raw) > limits.MAX_UPLOAD_BYTES + limits.MiB:
        raise InputError(
            f"is larger than the {limits.size_text(limits.MAX_UPLOAD_BYTES)} limit for logs in one request"
            " (MAX_UPLOAD_BYTES)",
            where="body",
            fix="send fewer or shorter logs, or name them with `paths` in the Jupyter root",
        )
    if request.headers.get("Content-Type", "").startswith("multipart/form-data"):
        fields = set(request.files) | set(request.body_arguments)
        unknown = sorted(fields - {"files", "rank_from"})  # `paths` only in a JSON body
        if unknown:
            raise InputError(f"unknown form field {unknown[0]!r}", where=unknown[0], fix=_LOGS_FIX)
        if "files" in request.body_arguments or "rank_from" in request.files:
            field = "files" if "files" in request.body_arguments else "rank_from"
            raise InputError(
                "must be file parts (files) and one text field (rank_from)", where=field, fix=_LOGS_FIX
            )
        if len(request.body_arguments.get("rank_from", [])) > 1:
            raise InputError("is given more than once", where="rank_from", fix="send one regular expression")
        uploads = [
            (_log_name(part.filename, f"files[{i}]"), part.body)
            for i, part in enumerate(request.files.get("files", []))
        ]
        values = request.body_arguments.get("rank_from") or [b""]
        rank_from = values[0].decode("utf-8", errors="replace") or None
        return uploads, [], rank_from
    if len(raw) > MAX_LOGS_JSON_BYTES:  # json.loads holds the GIL: large logs come as multipart bytes
        raise InputError(
            f"is larger than the {limits.size_text(MAX_LOGS_JSON_BYTES)} limit for logs sent as JSON",
            where="body",
            fix="send the files as multipart/form-data `files` parts (up to "
            f"{limits.size_text(limits.MAX_UPLOAD_BYTES)})",
        )
    body = limits.load_json(raw or b"{}", "body", fix=_LOGS_FIX)
    if not isinstance(body, dict):
        raise InputError("request body must be a JSON object", where="body", fix=_LOGS_FIX)
    unknown = sorted(set(body) - set(LOGS_FIELDS))
    if unknown:
        raise InputError(f"unknown field {unknown[0]!r}", where=unknown[0], fix=_LOGS_FIX)
    bad = bad_text_path({k: v for k, v in body.items() if k != "files"})
    if bad is not None:
        raise InputError(bad[1], where=bad[0], fix="no path or pattern may contain NUL or invalid text")
    files, paths, rank_from = body.get("files") or [], body.get("paths") or [], body.get("rank_from")
    if not isinstance(files, list):
        raise InputError("must be a list of {name, text}", where="files", fix=_LOGS_FIX)
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise InputError("must be a list of paths relative to the Jupyter root", where="paths")
    if len(paths) > limits.MAX_LOG_FILES or len(files) > limits.MAX_LOG_FILES:
        raise InputError(
            f"more than {limits.MAX_LOG_FILES} entries (MAX_LOG_FILES)", where="files" if files else "paths"
        )
    if rank_from is not None and not isinstance(rank_from, str):
        raise InputError(
            "must be a regular expression (a string)", where="rank_from", fix=r"e.g. 'rank_(\d+)'"
        )
    uploads = []
    for i, entry in enumerate(files):
        where = f"files[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("text"), str):
            raise InputError("must be an object with `name` and `text` strings", where=where, fix=_LOGS_FIX)
        text: str = entry["text"]
        uploads.append((_log_name(entry.get("name"), f"{where}.name"), text.encode("utf-8", "replace")))
    return uploads, list(paths), rank_from or None


_LOGS_FIX = (
    'send multipart `files`, or {"files": [{"name": "rank_0.log", "text": "..."}]} or {"paths": [...]}'
)


def _log_name(name: Any, where: str) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InputError("is required (the file's name gives its rank)", where=where, fix="e.g. rank_0.log")
    problem = _problem(name)
    if problem is not None:
        raise InputError(problem, where=where, fix="rename the file")
    if len(name) > MAX_LOG_NAME:
        raise InputError(f"is longer than {MAX_LOG_NAME} characters (MAX_PATH)", where=where)
    return name
