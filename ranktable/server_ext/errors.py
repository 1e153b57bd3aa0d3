"""Mapping of the product's errors to HTTP statuses and JSON bodies, in one place."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from http.client import responses
from typing import Any

from tornado import web

from ranktable.errors import (
    ConflictError,
    ContentError,
    InputError,
    NotFoundError,
    PermissionDenied,
    RanktableError,
    Unavailable,
)

INTERNAL_MESSAGE = "Internal error in the Ranktable extension (details are in the Jupyter server log)."


# The first class an error is an instance of gives its status: subclasses stand before their bases.
STATUSES: tuple[tuple[type[RanktableError], int], ...] = (
    (NotFoundError, 404),
    (PermissionDenied, 403),
    (Unavailable, 503),
    (ConflictError, 409),
    (ContentError, 422),
    (InputError, 400),
    (RanktableError, 400),
)


def status_for(error: BaseException) -> int:
    """HTTP status for an exception: the product's errors are the user's (4xx), anything else is ours."""
    for kind, status in STATUSES:
        if isinstance(error, kind):
            return status
    if isinstance(error, web.HTTPError):
        return error.status_code
    return 500


def body_for(error: BaseException) -> dict[str, Any]:
    """`{message, reason, field, fix}` for a client; never a traceback or a secret."""
    if isinstance(error, RanktableError):
        return error.to_json()
    if isinstance(error, web.HTTPError):
        phrase = error.reason or responses.get(error.status_code, "")
        message = error.log_message % error.args if error.log_message else phrase
        return {"message": message, "reason": phrase or message, "field": None, "fix": None}
    return {"message": INTERNAL_MESSAGE, "reason": "internal", "field": None, "fix": None}


@contextmanager
def content_checks() -> Iterator[None]:
    """The checks of what a request means, once its shape is what openapi.yaml says: their InputErrors
    become 422 (`ContentError`), so 400 is left to what the schema states. Not-found stays 404."""
    try:
        yield
    except InputError as exc:
        if isinstance(exc, ContentError | NotFoundError):
            raise
        raise ContentError(exc.reason, where=exc.where, fix=exc.fix) from exc
