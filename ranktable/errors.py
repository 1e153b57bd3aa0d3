"""Errors every layer raises for bad input, so interfaces can turn them into one clear message.

Each carries where the problem is (a file, a field path or a line), what is wrong and how to fix it.
The CLI prints ``str(err)`` on one line and exits non-zero; the server extension returns it as a
4xx JSON body ``{message, reason, field}``.
"""

from __future__ import annotations


class RanktableError(Exception):
    """Base class: a user-facing problem with a location, a reason and (optionally) a fix."""

    def __init__(self, reason: str, *, where: str | None = None, fix: str | None = None) -> None:
        self.reason = reason
        self.where = where
        self.fix = fix
        super().__init__(self.message)

    @property
    def message(self) -> str:
        text = f"{self.where}: {self.reason}" if self.where else self.reason
        if self.fix:
            text += f" ({self.fix})"
        return text

    def to_json(self) -> dict[str, str | None]:
        return {"message": self.message, "reason": self.reason, "field": self.where, "fix": self.fix}


class InputError(RanktableError):
    """A file, field or argument the user gave is malformed or inconsistent."""


class ContentError(InputError):
    """Well-formed input whose content fails a check no schema can state (a rank table that is not one, a
    regular expression that does not compile, a spec whose fields contradict each other): a 422 to the API."""


class NotFoundError(RanktableError):
    """A named thing (profile, job, file) does not exist."""


class PermissionDenied(RanktableError):
    """The user may not do this (a 403 to the API), e.g. name a file without permission to read files."""


class Unavailable(RanktableError):
    """A service we depend on does not answer now (the cluster is down or restarting): a 503, not the
    user's error."""


class ConflictError(RanktableError):
    """The action would overwrite or duplicate something that already exists."""


class NotReady(ConflictError):
    """What is asked for is still being made (a rank table the controller is still filling in): a 409,
    and a client asks again shortly instead of showing a final error."""


class MissingFileError(NotFoundError, InputError):
    """A file the user named does not exist (a 404 to the API, bad input to the loaders)."""
