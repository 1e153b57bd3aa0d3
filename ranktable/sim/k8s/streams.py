"""The streaming verbs: watch (chunked JSON events), pod logs (chunked text) and exec (a WebSocket).

A mixin of the request handler, so the plain verbs in `server.py` stay short.
"""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from ranktable.sim.k8s import errors, tables
from ranktable.sim.k8s.routes import Route, parse_bool
from ranktable.sim.k8s.selectors import parse_field_selector, parse_label_selector
from ranktable.sim.k8s.store import Obj
from ranktable.sim.k8s.websocket import upgrade

if TYPE_CHECKING:
    from ranktable.sim.k8s.server import ApiServer

DEFAULT_WATCH_SECONDS = 1800


class StreamingHandler(BaseHTTPRequestHandler):
    """Chunked responses and the three streaming verbs."""

    server_api: ApiServer

    def _start_stream(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _watch(self, route: Route, query: dict[str, str]) -> None:
        api = self.server_api
        store = api.store
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(query.get("fieldSelector"), route.rtype.plural)

        def visible(obj: Obj) -> bool:
            ns = obj["metadata"].get("namespace")
            return (route.namespace is None or ns == route.namespace) and labels(obj) and fields(obj)

        timeout = float(query.get("timeoutSeconds") or DEFAULT_WATCH_SECONDS)
        bookmarks = parse_bool(query.get("allowWatchBookmarks"))
        rv_text = query.get("resourceVersion") or ""
        initial: list[Obj] = []
        if rv_text in ("", "0"):
            initial, rv = store.list(route.rtype, route.namespace, visible)
        else:
            try:
                rv = int(rv_text)
            except ValueError as exc:
                raise errors.bad_request(f"invalid resource version {rv_text!r}") from exc
        self._start_stream("application/json")
        deadline = time.monotonic() + timeout
        last_bookmark = time.monotonic()
        as_table = tables.wants_table(self.headers.get("Accept") or "")
        first = [True]

        def encode(kind: str, obj: Obj) -> bytes:
            if as_table:  # `kubectl get -w`: each event carries a one-row Table, columns in the first only
                obj = tables.table(
                    route.rtype,
                    [obj],
                    int(obj["metadata"].get("resourceVersion") or 0),
                    query.get("includeObject", "Metadata"),
                )
                if not first[0]:
                    obj["columnDefinitions"] = []
                first[0] = False
            return json.dumps({"type": kind, "object": obj}).encode() + b"\n"

        try:
            for obj in initial:
                self._chunk(encode("ADDED", obj))
            while not api.stopping.is_set():
                try:
                    events, current = store.events_since(route.rtype.key, rv)
                except errors.ApiError as err:
                    self._chunk(json.dumps({"type": "ERROR", "object": err.status()}).encode() + b"\n")
                    break
                for event in events:
                    now_visible = visible(event.obj)
                    was_visible = visible(event.old) if event.old is not None else now_visible
                    if event.type == "MODIFIED" and now_visible != was_visible:
                        # like the watch cache: an object entering or leaving the selection
                        self._chunk(encode("ADDED" if now_visible else "DELETED", event.obj))
                    elif now_visible:
                        self._chunk(encode(event.type, event.obj))
                rv = current
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                if bookmarks and time.monotonic() - last_bookmark > 10:
                    last_bookmark = time.monotonic()
                    mark = {
                        "kind": route.rtype.kind,
                        "apiVersion": route.rtype.api_version,
                        "metadata": {"resourceVersion": str(rv)},
                    }
                    self._chunk(json.dumps({"type": "BOOKMARK", "object": mark}).encode() + b"\n")
                store.wait(rv, min(left, 1.0))
            if not api.stopping.is_set():
                self._end_stream()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _exec(self, route: Route) -> None:
        """`kubectl exec`: a WebSocket upgrade speaking v5/v4.channel.k8s.io (SPDY is not offered)."""
        api = self.server_api
        pod = api.store.get(route.rtype, route.namespace, route.name or "")
        query = parse_qs(urlsplit(self.path).query)
        if api.hooks.execute is None:
            raise errors.bad_request("this pool has no kubelet")
        ws, protocol = upgrade(self)
        api.hooks.execute(pod, query, ws, protocol)

    def _log(self, route: Route, query: dict[str, str]) -> None:
        api = self.server_api
        pod = api.store.get(route.rtype, route.namespace, route.name or "")
        if api.hooks.read_log is None:
            raise errors.bad_request("this pool has no kubelet")
        chunks = api.hooks.read_log(pod, query)  # raises ApiError (400) before any output when not started
        self._start_stream("text/plain")  # headers now: a follower sees the stream open before any line
        try:
            for data in chunks:
                if api.stopping.is_set():
                    break
                self._chunk(data)
            if not api.stopping.is_set():
                self._end_stream()  # the container ended; on shutdown the connection is cut instead
            else:
                self.close_connection = True
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            close = getattr(chunks, "close", None)
            if close is not None:
                close()
