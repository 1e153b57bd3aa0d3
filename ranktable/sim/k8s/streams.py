"""The streaming verbs: watch (chunked JSON events), pod logs (chunked text) and exec (a WebSocket).

A mixin of the request handler, so the plain verbs in `server.py` stay short.
"""

from __future__ import annotations

import contextlib
import json
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable
from urllib.parse import parse_qs, urlsplit

from ranktable import probe
from ranktable.sim.k8s import errors, tables
from ranktable.sim.k8s.routes import Route, parse_bool
from ranktable.sim.k8s.selectors import parse_field_selector, parse_label_selector
from ranktable.sim.k8s.store import Obj
from ranktable.sim.k8s.websocket import upgrade

if TYPE_CHECKING:
    from ranktable.sim.k8s.server import ApiServer

DEFAULT_WATCH_SECONDS = 1800
POLL_SECONDS = 0.1  # how often the shared writer polls each `PolledLog` (a synthetic log: 0.1 s of lines)
POLLS_PER_ROUND = 8  # a backlog's batches sent to one stream per round before the next stream's turn


@runtime_checkable
class PolledLog(Protocol):
    """A log body that says what is due now instead of blocking (the kubelet's synthetic logs):
    `poll()` gives bytes (b"": nothing yet) or None once the log ended."""

    def poll(self) -> bytes | None: ...


@dataclass(eq=False)  # found by identity in the writer's list
class _Polled:
    log: PolledLog
    sock: Any
    done: threading.Event = field(default_factory=threading.Event)
    pending: bytes = b""  # framed bytes the socket did not take yet (a TLS write is retried with them)
    ending: bool = False  # the final chunk is in `pending`
    clean: bool = False


class PolledWriter:
    """One thread writing every `PolledLog` response: a poll of each every `POLL_SECONDS`, written without
    blocking (a socket that does not take its bytes is skipped, and not polled, until it does).

    The request threads of these responses wait on an event instead of waking 10 times a second each:
    1,024 synthetic followers in their own threads cost the pool more CPU than the Jupyter server spent
    reading them.
    """

    def __init__(self, stopping: threading.Event, interval: float = POLL_SECONDS) -> None:
        self.stopping, self.interval = stopping, interval
        self._lock = threading.Lock()
        self._streams: list[_Polled] = []
        self._fresh: list[_Polled] = []  # added since the last pass: served at once, not at the next round
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None

    def serve(self, log: PolledLog, sock: Any) -> bool:
        """Send `log` as the chunked body on `sock` (headers already sent); blocks the calling request
        thread until it ended. True when the body ended with its final chunk (the connection is reusable)."""
        stream = _Polled(log, sock)
        timeout = sock.gettimeout()
        sock.setblocking(False)
        try:
            with self._lock:
                self._streams.append(stream)
                self._fresh.append(stream)
                if self._thread is None:
                    self._thread = threading.Thread(target=self._run, name="sim-log-writer", daemon=True)
                    self._thread.start()
                    probe.gauge("pool.backlog", self.backlog)
            self._wake.set()
            stream.done.wait()
        finally:
            with contextlib.suppress(OSError):
                sock.settimeout(timeout)
        return stream.clean

    def backlog(self) -> int:
        """Lines due now but not yet polled, over every stream whose log can tell (`behind()`)."""
        with self._lock:
            streams = list(self._streams)
        return sum(behind() for s in streams if callable(behind := getattr(s.log, "behind", None)))

    def _run(self) -> None:
        next_round = 0.0
        while True:
            self._wake.clear()
            with self._lock:
                if not self._streams:
                    self._thread = None
                    return
                fresh, self._fresh = self._fresh, []
                streams = list(self._streams) if time.monotonic() >= next_round else []
            if streams:
                next_round = time.monotonic() + self.interval
            busy = False
            for stream in fresh + streams:  # a new stream's first lines go at once (a Job view opening)
                if stream.done.is_set():
                    continue  # ended earlier in this pass: its socket is its request thread's again
                try:
                    busy |= self._step(stream)
                except Exception:  # a broken socket, a failing source: that stream ends alone
                    self._finish(stream, clean=False)
            if busy:
                next_round = 0.0  # a backlog: the next round at once
            else:
                self._wake.wait(max(0.0, next_round - time.monotonic()))

    def _step(self, stream: _Polled) -> bool:
        """Poll and send one stream's due bytes; True when it has more ready now (a backlog)."""
        if self.stopping.is_set():  # as a dying server: the connection is cut, no final chunk
            self._finish(stream, clean=False)
            return False
        for _ in range(POLLS_PER_ROUND):
            if stream.pending and not self._send(stream):
                probe.count("pool.socket_full")
                return False  # the socket is full: its reader is slow; try again next round
            if stream.ending:
                self._finish(stream, clean=True)
                return False
            data = stream.log.poll()
            if data is None:
                stream.pending, stream.ending = b"0\r\n\r\n", True
            elif data:
                stream.pending = f"{len(data):x}\r\n".encode() + data + b"\r\n"
                probe.count("pool.lines", data.count(b"\n"))
            else:
                return False
        return True

    @staticmethod
    def _send(stream: _Polled) -> bool:
        """Write what is pending without blocking; True when all of it went."""
        try:
            sent = stream.sock.send(stream.pending)
        except (ssl.SSLWantWriteError, ssl.SSLWantReadError, BlockingIOError):
            return False  # TLS: retried with the same bytes once the socket has room
        stream.pending = stream.pending[sent:]
        return not stream.pending

    def _finish(self, stream: _Polled, clean: bool) -> None:
        with self._lock:
            if stream in self._streams:
                self._streams.remove(stream)
        stream.clean = clean
        close = getattr(stream.log, "close", None)
        if callable(close):
            with contextlib.suppress(Exception):
                close()
        stream.done.set()


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
        if isinstance(chunks, PolledLog):  # the shared writer thread sends it; this thread waits
            if not api.polled_writer.serve(chunks, self.connection):
                self.close_connection = True
            return
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
