"""`/ranktable/stream`: one websocket multiplexing logs, job events, sync progress and remote-run output.

Client -> server: `{"op": "subscribe", "id": "s1", "channel": "logs"|"jobs"|"operation", ...params}` and
`{"op": "unsubscribe", "id": "s1"}`. Server -> client: `{"id": "s1", "type": "data", "data": ...}`, then
`{"id": "s1", "type": "end"}` or `{"id": "s1", "type": "error", "error": {message, reason, field}}`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections import Counter
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any, ClassVar

from jupyter_server.auth.decorator import authorized, ws_authenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from tornado import websocket

from ranktable import limits
from ranktable.errors import InputError, RanktableError
from ranktable.limits import load_json
from ranktable.server_ext.base import AUTH_RESOURCE
from ranktable.server_ext.errors import body_for, status_for

if TYPE_CHECKING:
    from ranktable.server_ext.services import Services


_WS_KEY = re.compile(r"^[A-Za-z0-9+/]{22}==$")
_WS_FIX = "open it with a websocket client (GET with Upgrade: websocket), as the panel does"


def _handshake_problem(headers: Any) -> InputError | None:
    """What is wrong with a websocket handshake's headers (RFC 6455 4.1), before tornado answers in text."""
    if headers.get("Upgrade", "").lower() != "websocket":
        return InputError("only a websocket may open this URL", where="Upgrade", fix=_WS_FIX)
    if "upgrade" not in [p.strip().lower() for p in headers.get("Connection", "").split(",")]:
        return InputError("must include Upgrade", where="Connection", fix=_WS_FIX)
    if not _WS_KEY.match(headers.get("Sec-WebSocket-Key", "")):
        return InputError("must be 16 random bytes in base64", where="Sec-WebSocket-Key", fix=_WS_FIX)
    if headers.get("Sec-WebSocket-Version") != "13":
        return InputError("must be 13", where="Sec-WebSocket-Version", fix=_WS_FIX)
    return None


class StreamHandler(WebSocketMixin, websocket.WebSocketHandler, JupyterHandler):
    """The multiplexed stream websocket; following logs, jobs and operations needs `read` on `ranktable`."""

    auth_resource = AUTH_RESOURCE
    per_user: ClassVar[Counter[str]] = Counter()  # active subscriptions by user, across sockets

    @property
    def services(self) -> Services:
        return self.settings["ranktable_services"]

    @ws_authenticated
    @authorized("read")
    async def get(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[override]
        refused = _handshake_problem(self.request.headers)  # tornado's own refusals are text
        if refused is not None:
            version = "Sec-WebSocket-Version"
            wrong_version = refused.where == version and version in self.request.headers
            if wrong_version:
                self.set_header(version, "13")  # RFC 6455 4.4: the version this server speaks
            self._refuse(426 if wrong_version else 400, refused)
            return
        res = super().get(*args, **kwargs)
        if res is not None:
            await res

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """An undeclared method (405, with `Allow`) or a refused handshake: JSON like every other route."""
        if status_code == 405:
            self.set_header("Allow", "GET")
        exc_info = kwargs.get("exc_info")
        error = exc_info[1] if exc_info else None
        self._refuse(status_code, error)

    def _refuse(self, status: int, error: BaseException | None) -> None:
        self.set_status(status)
        self.set_header("Content-Type", "application/json")
        if error is None:
            body = {"message": self._reason, "reason": self._reason, "field": None, "fix": None}
        else:
            body = body_for(error)
        self.finish(json.dumps(body))

    def open(self, *args: Any, **kwargs: Any) -> None:
        self.subscriptions: dict[str, asyncio.Task[None]] = {}
        super().open(*args, **kwargs)

    def on_message(self, message: str | bytes) -> None:
        try:
            msg = load_json(message, "message")
            if not isinstance(msg, dict):
                raise InputError("a message must be a JSON object", where="message")
            sub_id = msg.get("id")
            if not isinstance(sub_id, str) or not sub_id:
                raise InputError("is required (a string naming the subscription)", where="id")
        except (ValueError, InputError) as exc:
            err = exc if isinstance(exc, InputError) else InputError(f"not JSON: {exc}", where="message")
            self._send({"id": None, "type": "error", "error": body_for(err)})
            return
        op = msg.get("op")
        if op == "unsubscribe":
            task = self.subscriptions.pop(sub_id, None)
            if task is not None:
                task.cancel()
                self._release_user_slot()
            return
        if op != "subscribe":
            err = InputError(f"unknown op {op!r}", where="op", fix="use subscribe or unsubscribe")
            self._send({"id": sub_id, "type": "error", "error": body_for(err)})
            return
        if sub_id in self.subscriptions:
            err = InputError("a subscription with this id is active", where="id", fix="unsubscribe first")
            self._send({"id": sub_id, "type": "error", "error": body_for(err)})
            return
        over = self._over_cap()
        if over is not None:
            self._send({"id": sub_id, "type": "error", "error": body_for(over)})
            return
        task = asyncio.ensure_future(self._pump(sub_id, msg))
        self.subscriptions[sub_id] = task
        StreamHandler.per_user[self._user_key()] += 1
        self.services.hub.track(task)

    async def _pump(self, sub_id: str, msg: dict[str, Any]) -> None:
        try:
            source: AsyncIterator[Any] = self.services.open_stream(msg)
            async for data in source:  # each sent before the next is taken: a slow browser holds back
                await self._deliver({"id": sub_id, "type": "data", "data": data})
            self._send({"id": sub_id, "type": "end"})
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if status_for(exc) >= 500 and not isinstance(exc, RanktableError):  # an outage is no bug
                self.log.exception("ranktable stream %s failed", msg.get("channel"))
            self._send({"id": sub_id, "type": "error", "error": body_for(exc)})
        finally:
            if self.subscriptions.pop(sub_id, None) is not None:
                self._release_user_slot()

    def _user_key(self) -> str:
        user = self.current_user
        return str(getattr(user, "username", None) or user)

    def _release_user_slot(self) -> None:
        key = self._user_key()
        StreamHandler.per_user[key] -= 1
        if StreamHandler.per_user[key] <= 0:
            del StreamHandler.per_user[key]

    def _over_cap(self) -> InputError | None:
        """One socket, or one user's sockets together, may not follow without bound (#26.1)."""
        if len(self.subscriptions) >= limits.MAX_SUBSCRIPTIONS_PER_SOCKET:
            return InputError(
                f"this connection already has {limits.MAX_SUBSCRIPTIONS_PER_SOCKET} active subscriptions "
                "(the limit)",
                where="op",
                fix="unsubscribe from one first",
            )
        if StreamHandler.per_user[self._user_key()] >= limits.MAX_SUBSCRIPTIONS_PER_USER:
            return InputError(
                f"you already have {limits.MAX_SUBSCRIPTIONS_PER_USER} active subscriptions on this server "
                "(the limit)",
                where="op",
                fix="close other tabs or unsubscribe first",
            )
        return None

    async def _deliver(self, payload: dict[str, Any]) -> None:
        """Send and wait until tornado handed it to the socket (its buffer would grow without bound)."""
        if self.ws_connection is None:
            return
        with contextlib.suppress(websocket.WebSocketClosedError):
            await self.write_message(json.dumps(payload))

    def _send(self, payload: dict[str, Any]) -> None:
        if self.ws_connection is None:
            return
        with contextlib.suppress(websocket.WebSocketClosedError):
            self.write_message(json.dumps(payload))

    def on_close(self) -> None:
        for task in getattr(self, "subscriptions", {}).values():
            task.cancel()
            self._release_user_slot()
        self.subscriptions = {}
