"""`/ranktable/forwards/ID/proxy/PATH`: HTTP to a private forward (a Unix socket only this user reaches)
through the Jupyter server's authenticated URL, so a web app on an instance (TensorBoard, a dashboard) is
reachable by its owner only, never by other local users or processes.

Each request becomes one HTTP/1.1 request on a fresh connection to the forward's socket (tornado's own
HTTP/1 client side): method, path, query string and body kept; hop-by-hop headers and the Jupyter
server's own credentials (its token, its login and XSRF cookies) dropped; the response's status and
headers relayed and its body streamed as it comes (flow-controlled by the client's pace). A WebSocket
(`Upgrade: websocket`, same origin only) is tunnelled: the handshake goes to the app, then bytes both ways.
"""

from __future__ import annotations

import asyncio
import re
import socket
from typing import Any

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import JupyterHandler
from tornado import httputil, iostream, web
from tornado.http1connection import HTTP1Connection, HTTP1ConnectionParameters

from ranktable import limits
from ranktable.server_ext.base import RanktableHandler

PROXY_MAX_BODY_BYTES = 16 << 20  # a request body larger than this is refused (413), never buffered twice
PROXY_MAX_HEADER_BYTES = 64 << 10  # the proxied app's response headers
PROXY_MAX_RESPONSE_BYTES = 1 << 40  # streamed, never held: only a bound on one response
HOP_BY_HOP = frozenset(
    h.lower()
    for h in (
        "Connection",
        "Keep-Alive",
        "Proxy-Authenticate",
        "Proxy-Authorization",
        "TE",
        "Trailer",
        "Transfer-Encoding",
        "Upgrade",
    )
)
# headers of Jupyter's own response the proxied app's replace; its Content-Security-Policy is kept (both
# apply: the app's page can only be more restricted, never less)
_REPLACED = frozenset(("content-type", "server", "date"))


_PREFIX = re.compile(r"/ranktable/forwards/[^/]+/proxy/")


def _hop_by_hop(headers: httputil.HTTPHeaders) -> set[str]:
    named = {h.strip().lower() for h in headers.get("Connection", "").split(",") if h.strip()}
    return set(HOP_BY_HOP) | named


class ForwardProxyHandler(RanktableHandler):
    """Every method goes to the forward: authenticated, and authorized as opening one is (`execute`)."""

    _proxied = False  # the app's response has begun: its headers, not ours

    @property
    def content_security_policy(self) -> str:
        """Jupyter's page policy, not the API's `default-src 'none'`: the proxied app is a web page."""
        return str(JupyterHandler.content_security_policy.fget(self))  # type: ignore[attr-defined]

    def compute_etag(self) -> str | None:
        return None  # the app's ETag (if any) is relayed; tornado adds none of its own

    def finish(self, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, "_proxied", False):  # keep the app's Content-Type (APIHandler would set JSON's)
            return JupyterHandler.finish(self, *args, **kwargs)
        return super().finish(*args, **kwargs)

    @web.authenticated
    @authorized("execute")
    async def get(self, forward: str, path: str) -> None:
        if self.request.headers.get("Upgrade", "").lower() == "websocket":
            await self._tunnel(forward)
        else:
            await self._proxy(forward)

    @web.authenticated
    @authorized("execute")
    async def _relay(self, forward: str, path: str) -> None:
        """Every method but GET (which may open a WebSocket) goes to the app as it came."""
        await self._proxy(forward)

    head = post = put = patch = delete = options = _relay  # type: ignore[assignment]  # APIHandler's options

    # -- the relay ------------------------------------------------------------------------------------
    async def _proxy(self, forward: str) -> None:
        if len(self.request.body) > PROXY_MAX_BODY_BYTES:
            raise web.HTTPError(
                413, "request body larger than the %s limit", limits.size_text(PROXY_MAX_BODY_BYTES)
            )
        stream, remote_port = await self._connect(forward)
        params = HTTP1ConnectionParameters(
            no_keep_alive=True,
            max_header_size=PROXY_MAX_HEADER_BYTES,
            max_body_size=PROXY_MAX_RESPONSE_BYTES,
            decompress=False,
        )
        conn = HTTP1Connection(stream, True, params)
        relay = _Relay(self)
        try:
            start = httputil.RequestStartLine(self.request.method or "GET", self._target(), "HTTP/1.1")
            await conn.write_headers(start, self._upstream_headers(remote_port), self.request.body or None)
            conn.finish()
            await conn.read_response(relay)
        except (iostream.StreamClosedError, httputil.HTTPInputError) as exc:  # gone, or not HTTP
            if not relay.started:
                raise web.HTTPError(502, "the forwarded app closed or answered no HTTP") from exc
            self.request.connection.close()  # type: ignore[union-attr]  # cut mid-body: so is the client's
            return
        finally:
            conn.close()
        self.finish()

    async def _connect(self, forward: str) -> tuple[iostream.IOStream, int]:
        """A connection to the forward's socket, and the remote port behind it."""
        sock_path, remote_port = await self.blocking(self.services.remote.forward_socket, forward)
        stream = iostream.IOStream(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))
        try:
            await stream.connect(sock_path)
        except OSError as exc:
            stream.close()
            raise web.HTTPError(502, "the forward is not reachable") from exc
        return stream, remote_port

    async def _tunnel(self, forward: str) -> None:
        """A WebSocket: the handshake goes to the app as is (less the server's credentials), its answer
        (101 or a refusal) comes back, then bytes flow both ways until either side closes."""
        if not self.check_origin():  # a page of another site must not ride the user's cookie
            raise web.HTTPError(403, "cross-origin websocket refused")
        upstream, remote_port = await self._connect(forward)
        headers = self._upstream_headers(remote_port, upgrade=True)
        head = [f"GET {self._target()} HTTP/1.1", *(f"{k}: {v}" for k, v in headers.get_all())]
        try:
            await upstream.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
        except iostream.StreamClosedError as exc:
            raise web.HTTPError(502, "the forwarded app closed the connection") from exc
        client = self.detach()
        await asyncio.gather(_splice(client, upstream), _splice(upstream, client))

    def _target(self) -> str:
        """The raw path after `.../proxy` (percent-encoding kept) and the query (the server's token out)."""
        prefix = _PREFIX.search(self.request.path)  # the route's own match: the first such segment
        target = "/" + (self.request.path[prefix.end() :] if prefix else "")
        query = self.request.query
        if query and self.token_authenticated and "token" in self.request.query_arguments:
            query = "&".join(p for p in query.split("&") if p.split("=", 1)[0] != "token")
        return target + ("?" + query if query else "")

    def _upstream_headers(self, remote_port: int, *, upgrade: bool = False) -> httputil.HTTPHeaders:
        dropped = _hop_by_hop(self.request.headers) | {"host", "content-length", "cookie", "expect"}
        if upgrade:
            dropped -= {"upgrade"}
        if self.token_authenticated:
            dropped.add("authorization")  # the Jupyter token is not the app's business
        headers = httputil.HTTPHeaders()
        for name, value in self.request.headers.get_all():
            if name.lower() not in dropped:
                headers.add(name, value)
        headers["Host"] = f"127.0.0.1:{remote_port}"
        headers["Connection"] = "Upgrade" if upgrade else "close"
        if self.request.body or self.request.method in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = str(len(self.request.body))
        cookies = self._app_cookies()
        if cookies:
            headers["Cookie"] = cookies
        return headers

    def _app_cookies(self) -> str:
        """The request's cookies but Jupyter's login and XSRF ones."""
        ours = {self.identity_provider.get_cookie_name(self), "_xsrf"}
        kept = [
            part.strip()
            for header in self.request.headers.get_list("Cookie")
            for part in header.split(";")
            if part.strip() and part.split("=", 1)[0].strip() not in ours
        ]
        return "; ".join(kept)


async def _splice(source: iostream.IOStream, sink: iostream.IOStream) -> None:
    """Bytes from ``source`` to ``sink`` until one closes; then both are closed."""
    try:
        while True:
            await sink.write(await source.read_bytes(1 << 16, partial=True))
    except iostream.StreamClosedError:
        pass
    finally:
        source.close()
        sink.close()


class _Relay(httputil.HTTPMessageDelegate):
    """The proxied app's response, relayed to the handler's client as it is read."""

    def __init__(self, handler: ForwardProxyHandler) -> None:
        self.handler = handler
        self.started = False

    def headers_received(
        self,
        start_line: httputil.RequestStartLine | httputil.ResponseStartLine,
        headers: httputil.HTTPHeaders,
    ) -> None:
        assert isinstance(start_line, httputil.ResponseStartLine)
        handler = self.handler
        handler._proxied = True
        self.started = True
        handler.set_status(start_line.code, start_line.reason or None)
        dropped = _hop_by_hop(headers)
        if "transfer-encoding" in {k.lower() for k in headers}:
            dropped.add("content-length")  # tornado re-frames the body
        names = {name.lower() for name, _ in headers.get_all()}
        for name in names & _REPLACED:
            handler.clear_header(name)
        for name, value in headers.get_all():
            if name.lower() not in dropped:
                handler.add_header(name, value)

    async def data_received(self, chunk: bytes) -> None:
        self.handler.write(chunk)
        await self.handler.flush()

    def finish(self) -> None:
        pass

    def on_connection_close(self) -> None:
        pass
