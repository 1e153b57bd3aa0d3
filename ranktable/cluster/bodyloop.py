"""One thread reading the bodies of many streaming HTTP responses (log follows), instead of a thread each.

A thread per response blocked in urllib3's chunked read cost ~60 µs of CPU per log line at 1,024 pods
(10,240 wake-ups a second, each through urllib3, a queue and the GIL hand-over). Here the request is
still made through urllib3 (`Kube.get_raw`); once its headers are in, the response's
socket is handed to a `BodyLoop`: one selector over every open body, the HTTP/1.1 framing (chunked,
Content-Length or until close) decoded here, TLS included. Each round of reads is handed on at once
(`emit`), so the consumer gets one list per round across pods, not one per pod chunk.
"""

from __future__ import annotations

import contextlib
import io
import operator
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import Any

from urllib3.exceptions import ProtocolError

from ranktable import probe

READ_BYTES = 65536  # per body and round (a TLS recv returns one record, at most 16 KiB: read until this)
HELD_BYTES = io.DEFAULT_BUFFER_SIZE  # all http.client's buffer can hold, or one raw read that small
BUFFERED_BYTES = 65536  # more than http.client's read buffer (io.DEFAULT_BUFFER_SIZE, 8 KiB) can hold
# a round stops reading more bodies past this: bounds one emitted round. 1,024 pods x 100 lines/s are
# ~9.5 MB/s of chunked, stamped lines, and on two busy cores the loop makes ~30 rounds a second: 256
# KiB a round capped the read below the rate (2% piled up in the sockets)
ROUND_BYTES = 1 << 20
ROUND_SECONDS = 0.01  # at most one round per this: rounds gather ~100 pods' chunks, not one or two
MAX_SIZE_LINE = 4096  # a chunk-size line (with extensions) longer than this is not HTTP


class ChunkDecoder:
    """Incremental decoder of an HTTP/1.1 body: ``chunked``, a Content-Length, or until the connection closes.

    `feed` takes bytes as they arrive (split anywhere) and returns the body bytes they completed;
    `done` once the body ended (the terminating 0-chunk and its trailers, or the length reached).
    """

    SIZE, DATA, DATA_END, TRAILER, DONE = range(5)

    def __init__(self, chunked: bool, length: int | None = None) -> None:
        self.chunked = chunked
        self.left = length  # Content-Length body: bytes still to come (None: until the connection closes)
        self.state = self.SIZE if chunked else self.DATA
        if not chunked and length == 0:
            self.state = self.DONE
        self._buf = b""
        self._chunk_left = 0

    @property
    def done(self) -> bool:
        return self.state == self.DONE

    def feed(self, data: bytes) -> bytes:
        if not self.chunked:
            return self._feed_plain(data)
        buf = self._buf + data if self._buf else data
        out: list[bytes] = []
        pos, end = 0, len(buf)
        while pos < end or self.state == self.DONE:
            if self.state == self.DATA:
                take = min(self._chunk_left, end - pos)
                out.append(buf[pos : pos + take])
                pos += take
                self._chunk_left -= take
                if self._chunk_left == 0:
                    self.state = self.DATA_END
                continue
            if self.state == self.DONE:
                pos = end  # anything after the body is not ours (the connection is closed after it)
                break
            nl = buf.find(b"\n", pos)
            if nl < 0:
                if end - pos > MAX_SIZE_LINE:
                    raise ProtocolError(f"HTTP chunked body: no line end in {end - pos} bytes")
                break
            line = buf[pos:nl]
            pos = nl + 1
            if self.state == self.SIZE:
                size_text = line.split(b";", 1)[0].strip()
                try:
                    size = int(size_text, 16)
                except ValueError:
                    raise ProtocolError(f"HTTP chunked body: bad chunk size {line[:40]!r}") from None
                if size < 0:
                    raise ProtocolError(f"HTTP chunked body: bad chunk size {line[:40]!r}")
                if size == 0:
                    self.state = self.TRAILER
                else:
                    self._chunk_left, self.state = size, self.DATA
            elif self.state == self.DATA_END:
                if line not in (b"", b"\r"):
                    raise ProtocolError("HTTP chunked body: no CRLF after a chunk's data")
                self.state = self.SIZE
            elif line in (b"", b"\r"):  # TRAILER: the empty line ends the body
                self.state = self.DONE
        self._buf = buf[pos:] if pos < end else b""
        return out[0] if len(out) == 1 else b"".join(out)

    def _feed_plain(self, data: bytes) -> bytes:
        if self.left is None:
            return data
        if self.state == self.DONE:
            return b""
        data = data[: self.left]
        self.left -= len(data)
        if self.left == 0:
            self.state = self.DONE
        return data

    def eof(self) -> None:
        """The connection closed: fine after a complete body (or for a body that runs until close)."""
        if self.state != self.DONE and (self.chunked or self.left is not None):
            raise ProtocolError("connection dropped before the end of the HTTP body")
        self.state = self.DONE


class Body:
    """One streaming response's body, read by a `BodyLoop`.

    `on_data(bytes)` is called in the loop's thread with the body bytes of each read and returns what to
    put in the round (or None); `done` is set once the body ended (`error` None), failed (`error`: a
    `ProtocolError` for a dropped connection, `TimeoutError` after `read_timeout` s without a byte) or
    the loop stopped (`error` None, `stopped` True). The response is closed by then.
    """

    def __init__(self, resp: Any, on_data: Callable[[bytes], Any], read_timeout: float) -> None:
        self.resp = resp
        self.on_data = on_data
        self.read_timeout = read_timeout
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.stopped = False
        self.sock = body_socket(resp)
        headers = resp.headers
        chunked = "chunked" in str(headers.get("transfer-encoding", "")).lower()
        length = headers.get("content-length")
        self.decoder = ChunkDecoder(chunked, None if chunked or length is None else int(length))
        self.last_read = time.monotonic()
        self.started = False  # http.client's buffer not read yet
        self.fd = -1
        self._ended = False

    def _finish(self, error: BaseException | None = None, stopped: bool = False) -> None:
        self.error, self.stopped = error, stopped
        with contextlib.suppress(Exception):  # the connection is not reused: we read it behind urllib3
            self.resp.close()

    def buffered(self, limit: int = BUFFERED_BYTES) -> bytes:
        """What http.client read past the headers into its buffer (the socket is non-blocking by now)."""
        fp = getattr(getattr(self.resp, "_fp", None), "fp", None)
        if fp is None:
            return b""
        try:  # what is buffered (8 KiB at most), or else one raw read: not the socket's whole backlog
            return bytes(fp.read1(limit) or b"")
        except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
            return b""


def body_socket(resp: Any) -> socket.socket | None:
    """The socket under a urllib3 response whose body may be read directly, or None (then read it the
    ordinary way): not when the body is compressed or the response not a plain urllib3 one."""
    encoding = str(resp.headers.get("content-encoding", "identity")).lower()
    if encoding not in ("", "identity"):
        return None
    conn = getattr(resp, "connection", None) or getattr(resp, "_connection", None)
    sock = getattr(conn, "sock", None)
    if not isinstance(sock, socket.socket) or getattr(getattr(resp, "_fp", None), "fp", None) is None:
        return None
    return sock


_last_read = operator.attrgetter("last_read")


class BodyLoop:
    """A thread reading every added `Body` with one selector; `emit(round)` gets what a round's
    `on_data` calls returned, in read order, before the bodies that ended in that round are marked done
    (so their consumer sees all their lines before it opens the next request).

    `emit` may block (a bounded queue): the loop then reads nothing, which holds every stream back.
    """

    def __init__(self, emit: Callable[[list[Any]], None], stop: threading.Event, name: str) -> None:
        self._emit = emit
        self._stop = stop
        self._name = name
        self._lock = threading.Lock()
        self._added: list[Body] = []
        self._bodies: dict[int, Body] = {}  # fd -> body
        self._thread: threading.Thread | None = None
        self._closed = False
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)

    def add(self, body: Body) -> None:
        """Read `body` from now on (starts the loop's thread on first use)."""
        with self._lock:
            if self._closed:
                body._finish(stopped=True)
                body.done.set()
                return
            self._added.append(body)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self._name, daemon=True)
                self._thread.start()
        self.wake()

    def wake(self) -> None:
        with contextlib.suppress(OSError):  # full: a wake-up is already pending
            self._wake_w.send(b"x")

    def close(self, timeout: float = 2.0) -> None:
        """Stop reading: every open body is closed and marked done (``stopped``) at once."""
        with self._lock:
            self._closed = True
            thread = self._thread
        self.wake()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)
        if thread is None:
            self._close_all()

    # -- the loop's thread ----------------------------------------------------------------------------
    def _run(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self._wake_r, selectors.EVENT_READ)
        next_check = time.monotonic() + 1.0
        try:
            while not self._stop.is_set() and not self._closed:
                started = time.monotonic()
                fresh = self._take_added(selector)
                ready: list[Body] = []
                for key, _ in selector.select(timeout=0 if fresh else 1.0):
                    if key.fileobj is self._wake_r:
                        with contextlib.suppress(OSError):
                            self._wake_r.recv(4096)
                    else:
                        ready.append(key.data)
                fresh += self._take_added(selector)
                self._round(selector, fresh, ready)
                now = time.monotonic()
                if now >= next_check:
                    next_check = now + 1.0
                    self._timeouts(selector, now)
                pause = ROUND_SECONDS - (time.monotonic() - started)
                if pause > 0 and not self._closed:
                    self._stop.wait(pause)
        except BaseException as exc:  # the loop must not die silently: fail every body it holds
            for body in list(self._bodies.values()):
                body.error = exc
            raise
        finally:
            with self._lock:
                self._closed = True
            self._close_all(selector)
            selector.close()

    def _take_added(self, selector: selectors.BaseSelector) -> list[Body]:
        """Register the bodies added since the last round; returns them (read in this round whatever
        select says: it does not see bytes already in http.client's or TLS's buffer)."""
        with self._lock:
            added, self._added = self._added, []
        taken: list[Body] = []
        for body in added:
            assert body.sock is not None
            try:
                body.sock.setblocking(False)
                body.fd = body.sock.fileno()
                selector.register(body.sock, selectors.EVENT_READ, body)
            except (OSError, ValueError) as exc:  # closed under us (a reset): this body fails, not the loop
                body._ended = True
                body._finish(exc)
                body.done.set()
                continue
            self._bodies[body.fd] = body
            taken.append(body)
        return taken

    def _round(self, selector: selectors.BaseSelector, fresh: list[Body], ready: list[Body]) -> None:
        out: list[Any] = []
        ended: list[Body] = []
        size = 0
        # least recently read first: epoll returns level-triggered fds in the same order every time, so
        # with the round's byte cap the first few bodies would be read again and again and the rest
        # starve (the pool drops a stream it cannot write to for 30 s: 524 reconnects in one run)
        ready.sort(key=_last_read)
        for i, body in enumerate(fresh + ready):
            if body._ended:
                continue
            over = size > ROUND_BYTES
            if over and i >= len(fresh):
                break  # level-triggered: the rest is still readable next round
            try:
                # a fresh body past the cap gives only what select cannot see (its first read of 1,024
                # pods' history made one round of ~650,000 lines, ~1 GiB held until every reader had it)
                data, eof = self._read(body, held_only=over)
                if data:
                    body.last_read = time.monotonic()
                    size += len(data)
                    piece = body.decoder.feed(data)
                    got = body.on_data(piece) if piece else None
                    if got:
                        out.append(got)
                if eof:
                    body.decoder.eof()  # a ProtocolError unless the body was complete
                if body.decoder.done:
                    ended.append(body)
            except BaseException as exc:  # a body's failure (a reset, TLS, its framing) is its own
                body.error = exc
                ended.append(body)
        if out:
            probe.count("server.loop_rounds")
            waited = time.monotonic()
            self._emit(out)
            probe.count("server.loop_emit_wait_s", time.monotonic() - waited)
        for body in ended:
            self._end(selector, body, body.error)

    def _read(self, body: Body, held_only: bool = False) -> tuple[bytes, bool]:
        """What the body's socket has now, and whether the connection closed after it. ``held_only``: only
        the bytes select does not see (http.client's buffer, TLS's decrypted ones); the socket's are read
        in a later round."""
        sock = body.sock
        assert sock is not None
        parts: list[bytes] = []
        if not body.started:
            body.started = True
            parts.append(body.buffered(HELD_BYTES if held_only else BUFFERED_BYTES))
        eof = False
        tls = isinstance(sock, ssl.SSLSocket)
        if held_only:
            if isinstance(sock, ssl.SSLSocket) and sock.pending():
                with contextlib.suppress(BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError):
                    parts.append(sock.recv(sock.pending()))
            return b"".join(parts), False
        size = 0
        while True:
            try:
                data = sock.recv(READ_BYTES)
            except (BlockingIOError, ssl.SSLWantReadError, ssl.SSLWantWriteError, InterruptedError):
                break
            if not data:
                eof = True
                break
            parts.append(data)
            size += len(data)
            # a plain socket's recv takes all there is (up to READ_BYTES); a TLS recv one record, and the
            # pool writes a record per pod every 0.1 s: one a round read each pod's 0.1 s of lines per round,
            # so a loop slowed below 10 rounds a second (two busy cores) fell behind for good (~75% kept)
            if not tls or size >= READ_BYTES:
                break
        return (parts[0] if len(parts) == 1 else b"".join(parts)), eof

    def _timeouts(self, selector: selectors.BaseSelector, now: float) -> None:
        for body in list(self._bodies.values()):
            if now - body.last_read > body.read_timeout:
                self._end(selector, body, TimeoutError(f"no log data for {body.read_timeout:g} s"))

    def _end(self, selector: selectors.BaseSelector, body: Body, error: BaseException | None) -> None:
        if body._ended:
            return
        body._ended = True
        assert body.sock is not None
        with contextlib.suppress(KeyError, ValueError, OSError):
            selector.unregister(body.sock)
        self._bodies.pop(body.fd, None)
        body._finish(error)
        body.done.set()

    def _close_all(self, selector: selectors.BaseSelector | None = None) -> None:
        with self._lock:
            bodies = list(self._bodies.values()) + self._added
            self._bodies, self._added = {}, []
        for body in bodies:
            if body._ended:
                continue
            body._ended = True
            if selector is not None:
                with contextlib.suppress(KeyError, ValueError, OSError):
                    selector.unregister(body.sock)  # type: ignore[arg-type]
            body._finish(body.error, stopped=body.error is None)
            body.done.set()
        for sock in (self._wake_r, self._wake_w):
            with contextlib.suppress(OSError):
                sock.close()
