"""The base REST handler: JSON in and out, errors as `{message, reason, field}`, slow work off the loop."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from jupyter_server.base.handlers import APIHandler

from ranktable.errors import InputError, RanktableError
from ranktable.server_ext.errors import body_for, status_for

if TYPE_CHECKING:
    from ranktable.server_ext.services import Services

T = TypeVar("T")

_MISSING = object()


class RanktableHandler(APIHandler):
    """Every `/ranktable/...` REST handler derives from this."""

    @property
    def services(self) -> Services:
        return self.settings["ranktable_services"]

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Product errors become 4xx with their field; anything unexpected a 500 without internals."""
        exc_info = kwargs.get("exc_info")
        error = exc_info[1] if exc_info else None
        if error is None:
            super().write_error(status_code, **kwargs)
            return
        self.set_status(status_for(error))
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(body_for(error)))

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        """User errors are routine (one line); only unexpected ones deserve a traceback."""
        if isinstance(value, RanktableError):
            self.log.info("ranktable: %s %s -> %s", self.request.method, self.request.path, value.message)
            return
        super().log_exception(typ, value, tb)

    def json_body(self) -> dict[str, Any]:
        """The request body as a JSON object, or a 400 naming what is wrong."""
        raw = self.request.body
        if not raw:
            return {}
        try:
            body = json.loads(raw)
        except ValueError as exc:
            raise InputError(
                f"request body is not JSON: {exc}", where="body", fix="send a JSON object"
            ) from exc
        if not isinstance(body, dict):
            raise InputError("request body must be a JSON object", where="body")
        return body

    def reply(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(data))

    async def blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """Run cluster/SSH/planning work on the extension's thread pool, never on the event loop."""
        return await self.services.run_blocking(fn, *args)


def field(body: dict[str, Any], name: str, kind: type | tuple[type, ...], default: Any = _MISSING) -> Any:
    """`body[name]` checked against `kind`; a missing or mistyped field is a 400 naming it."""
    if name not in body or body[name] is None:
        if default is _MISSING:
            raise InputError("is required", where=name, fix=f"add `{name}` to the request")
        return default
    value = body[name]
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise InputError(f"must be a number, not {value!r}", where=name)
    if not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise InputError(f"must be {names}, got {type(value).__name__}", where=name)
    return value
