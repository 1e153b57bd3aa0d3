"""The base REST handler: JSON in and out, errors as `{message, reason, field}`, slow work off the loop."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from jupyter_server.base.handlers import APIHandler
from tornado.web import RequestHandler

from ranktable import limits
from ranktable.compose.k8s_names import DNS1123_LABEL, DNS1123_SUBDOMAIN
from ranktable.errors import InputError, RanktableError
from ranktable.server_ext.bodies import MAX_BODY_BYTES, SMALL_BODY_BYTES, parse_body
from ranktable.server_ext.errors import body_for, status_for
from ranktable.server_ext.offload import layout_call

if TYPE_CHECKING:
    from ranktable.server_ext.services import Services

T = TypeVar("T")

_JOB_PATH_NAMES = {
    "namespace": (DNS1123_LABEL, 63, "a namespace (lower-case letters, digits and '-', at most 63)"),
    "name": (DNS1123_SUBDOMAIN, 253, "a job name (lower-case letters, digits, '-' and '.', at most 253)"),
    "run": (re.compile(r"^[A-Za-z0-9-]{1,64}$"), 64, "a run (its job uid or a prefix of it)"),
}

_MISSING = object()

AUTH_RESOURCE = "ranktable"
"""The resource name our handlers pass to the server's Authorizer (jupyter_server's own are `contents`...)."""


class RanktableHandler(APIHandler):
    """Every `/ranktable/...` REST handler derives from this."""

    auth_resource = AUTH_RESOURCE

    @property
    def services(self) -> Services:
        return self.settings["ranktable_services"]

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Product errors become 4xx with their field; anything unexpected a 500 without internals."""
        if status_code == 405:
            self.set_header("Allow", ", ".join(allowed_methods(type(self))))
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

    async def prepare(self) -> None:  # type: ignore[override]
        await super().prepare()
        if self.current_user:  # an anonymous request gets its 403 from @authenticated, not a 400 from here
            self._refuse_null_bytes()
            self._check_path_names()

    def _check_path_names(self) -> None:
        """A job route's namespace, name and run have the patterns openapi.yaml gives them (else 400)."""
        if "namespace" not in self.path_kwargs:
            return
        for key, (pattern, limit, what) in _JOB_PATH_NAMES.items():
            value = self.path_kwargs.get(key)
            if value is not None and (len(value) > limit or not pattern.match(value)):
                fix = "use the name `job list` shows"
                raise InputError(f"{value[:80]!r} is not {what}", where=key, fix=fix)

    def _refuse_null_bytes(self) -> None:
        """No name, namespace or path of ours may contain NUL; say so before it reaches a filesystem call."""
        named: list[tuple[str, str]] = [
            *self.path_kwargs.items(),
            *((str(i), a) for i, a in enumerate(self.path_args)),
        ]
        for name, value in named:
            if "\0" in value:
                raise InputError("contains a null byte", where=name, fix="remove the %00 from the URL")
        for name, values in self.request.query_arguments.items():
            if "\0" in name or any(b"\0" in v for v in values):
                raise InputError("contains a null byte", where=name.replace("\0", ""), fix="remove the %00")

    def json_body(self) -> dict[str, Any]:
        """The request body as a JSON object within `ranktable.limits`, or a 400 naming what is wrong.

        Only small bodies are parsed here, on the event loop (`json.loads` holds the GIL: 3.6 s for a
        60 MB body on a busy machine, a thread would stall the loop as well); larger ones are refused
        unless the handler sends them to the body worker (`offload`)."""
        raw = self.request.body
        if len(raw) > MAX_BODY_BYTES:
            raise InputError(
                f"is larger than the {limits.size_text(MAX_BODY_BYTES)} limit for this request",
                where="body",
                fix="send a smaller document (a rank table or topology may be given as a file path)",
            )
        return parse_body(raw)

    def reply(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        self.finish(json.dumps(data))

    async def layout(self, method: str) -> Any:
        """`LayoutService.<method>` on the body: in the body worker process when the body is large."""
        raw = self.request.body
        context = self.services.layout_context(may_read_files=self.may_read_files())
        if len(raw) <= SMALL_BODY_BYTES:
            return await self.blocking(layout_call, context, method, parse_body(raw))
        return await self.services.body_worker.layout(context, method, raw)

    def may_read_files(self) -> bool:
        """May this user read files of the Jupyter root (what `*_path` fields name)?"""
        return bool(self.authorizer.is_authorized(self, self.current_user, "read", "contents"))

    async def blocking(self, fn: Callable[..., T], *args: Any) -> T:
        """Run cluster/SSH/planning work on the extension's thread pool, never on the event loop."""
        return await self.services.run_blocking(fn, *args)


def allowed_methods(handler: type[RequestHandler]) -> list[str]:
    """The HTTP methods a handler class implements (a 405's `Allow` header)."""
    return [
        m
        for m in ("GET", "POST", "PUT", "PATCH", "DELETE")
        if getattr(handler, m.lower()) is not getattr(RequestHandler, m.lower())
    ]


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
