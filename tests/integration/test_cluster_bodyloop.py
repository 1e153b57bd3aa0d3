"""The log reader loop: one thread reads every pod's log response (HTTP chunked framing decoded by us, TLS
included) with no line lost, repeated or reordered, a dropped connection's cut line resumed whole,
`close()` and the read timeout ending reads at once. Against a scripted HTTP server on 127.0.0.1."""

from __future__ import annotations

import random
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import urllib3
from urllib3.exceptions import ProtocolError

from ranktable.cluster import bodyloop
from ranktable.cluster import logs as logs_module
from ranktable.cluster.bodyloop import Body, BodyLoop, ChunkDecoder
from ranktable.cluster.logs import LogStream
from ranktable.sim.tls import ensure_certificate
from tests.integration.http_helpers import recv_head

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


END = b"0\r\n\r\n"

# -- the decoder ---------------------------------------------------------------------------------------


def test_chunked_body_split_at_every_byte_boundary_decodes_the_same() -> None:
    sized_with_extension = b"1A;ext=1\r\n" + b"x" * 26 + b"\r\n"
    body = chunk(b"first line\n") + sized_with_extension + chunk(b"last\n") + b"0\r\nT: v\r\n\r\n"
    want = b"first line\n" + b"x" * 26 + b"last\n"
    for cut in range(len(body) + 1):
        for cut2 in (cut, min(len(body), cut + 3)):
            decoder = ChunkDecoder(chunked=True)
            got = decoder.feed(body[:cut]) + decoder.feed(body[cut:cut2]) + decoder.feed(body[cut2:])
            assert got == want and decoder.done, (cut, cut2)
    decoder = ChunkDecoder(chunked=True)
    assert b"".join(decoder.feed(body[i : i + 1]) for i in range(len(body))) == want and decoder.done


def test_decoder_refuses_bad_framing_and_an_early_end() -> None:
    with pytest.raises(ProtocolError, match="chunk size"):
        ChunkDecoder(chunked=True).feed(b"zz\r\nabc")
    with pytest.raises(ProtocolError, match="CRLF"):
        ChunkDecoder(chunked=True).feed(b"3\r\nabcXY\r\n")
    decoder = ChunkDecoder(chunked=True)
    assert decoder.feed(b"5\r\nab") == b"ab"
    with pytest.raises(ProtocolError, match="dropped"):
        decoder.eof()
    sized = ChunkDecoder(chunked=False, length=4)
    assert sized.feed(b"ab") == b"ab" and not sized.done
    assert sized.feed(b"cdEXTRA") == b"cd" and sized.done
    until_close = ChunkDecoder(chunked=False)
    assert until_close.feed(b"abc") == b"abc"
    until_close.eof()
    assert until_close.done


# -- a scripted server ---------------------------------------------------------------------------------


class Server:
    """Accepts connections; `script(conn, path, query)` writes the whole raw response (TLS optional)."""

    def __init__(self, script: Callable[[socket.socket, str, dict[str, list[str]]], None], tls: Path | None):
        self.script = script
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.context: ssl.SSLContext | None = None
        if tls is not None:
            cert, key = ensure_certificate(tls)
            self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self.context.load_cert_chain(cert, key)
            self.ca = str(cert)
        self.requests: list[str] = []
        self.closing = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"{'https' if self.context else 'http'}://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        while not self.closing.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            if self.context is not None:
                conn = self.context.wrap_socket(conn, server_side=True)
            head = recv_head(conn, 4096)
            if b"\r\n\r\n" not in head:
                return
            target = head.split(b" ", 2)[1].decode()
            self.requests.append(target)
            parts = urlsplit(target)
            self.script(conn, parts.path, parse_qs(parts.query))
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.closing.set()
        self.listener.close()


@pytest.fixture(params=["plain", "tls"])
def tls_dir(request: pytest.FixtureRequest, tmp_path: Path) -> Path | None:
    return tmp_path if request.param == "tls" else None


def pool_for(server: Server) -> urllib3.PoolManager:
    if server.context is None:
        return urllib3.PoolManager(maxsize=256)
    return urllib3.PoolManager(maxsize=256, cert_reqs="CERT_REQUIRED", ca_certs=server.ca)


def open_response(server: Server, path: str = "/log") -> Any:
    return pool_for(server).request(
        "GET", server.url + path, preload_content=False, timeout=urllib3.Timeout(connect=5, read=5)
    )


def collecting_loop() -> tuple[BodyLoop, list[list[Any]], threading.Event]:
    rounds: list[list[Any]] = []
    stop = threading.Event()
    return BodyLoop(rounds.append, stop, name="test-body-loop"), rounds, stop


@contextmanager
def looping(
    script: Callable[[socket.socket, str, dict[str, list[str]]], None], tls_dir: Path | None
) -> Iterator[tuple[Server, BodyLoop, list[list[Any]]]]:
    """A server playing `script` and a loop collecting its rounds; both closed afterwards."""
    server = Server(script, tls_dir)
    loop, rounds, _ = collecting_loop()
    try:
        yield server, loop, rounds
    finally:
        loop.close()
        server.close()


# -- the loop ------------------------------------------------------------------------------------------


def test_loop_reads_a_chunked_body_to_its_end_split_anywhere(tls_dir: Path | None) -> None:
    """Bytes sent with the headers (in http.client's buffer), a size line and a chunk's data split across
    packets, many chunks: the body comes whole and ends at the 0-chunk (plain and TLS)."""
    pieces = [f"line {i}\n".encode() for i in range(200)]

    def script(conn: socket.socket, path: str, query: dict[str, list[str]]) -> None:
        conn.sendall(HEAD + chunk(pieces[0]) + b"1")  # the next size line starts in the headers' packet
        time.sleep(0.05)
        rest = b"".join(chunk(p) for p in pieces[1:]) + END
        rest = rest[1:]  # its first byte went above
        for at in range(0, len(rest), 37):
            conn.sendall(rest[at : at + 37])
            time.sleep(0.001)

    pieces[1] = b"1" * 16 + b"\n"  # a chunk of 0x11 bytes: its size line "11" was split by the packets
    with looping(script, tls_dir) as (server, loop, rounds):
        body = Body(open_response(server), lambda data: data, read_timeout=10)
        assert body.sock is not None
        loop.add(body)
        assert body.done.wait(10)
        assert body.error is None and not body.stopped
        assert b"".join(b"".join(r) for r in rounds) == b"".join(pieces)


def test_a_connection_dropped_mid_chunk_is_a_protocol_error(tls_dir: Path | None) -> None:
    def script(conn: socket.socket, path: str, query: dict[str, list[str]]) -> None:
        conn.sendall(HEAD + chunk(b"whole\n") + b"10\r\ncut li")
        time.sleep(0.1)

    with looping(script, tls_dir) as (server, loop, rounds):
        body = Body(open_response(server), lambda data: data, read_timeout=10)
        loop.add(body)
        assert body.done.wait(10)
        assert isinstance(body.error, ProtocolError)
        assert b"".join(b"".join(r) for r in rounds) == b"whole\ncut li"  # the line layer drops the cut


def test_close_ends_blocked_reads_at_once_and_the_read_timeout_a_silent_one(tls_dir: Path | None) -> None:
    hold = threading.Event()

    def script(conn: socket.socket, path: str, query: dict[str, list[str]]) -> None:
        conn.sendall(HEAD + chunk(b"hello\n"))
        hold.wait(30)

    server = Server(script, tls_dir)
    loop, _, _ = collecting_loop()
    try:
        silent = Body(open_response(server), lambda data: data, read_timeout=0.5)
        loop.add(silent)
        assert silent.done.wait(5), "the read timeout did not end a silent body"
        assert isinstance(silent.error, TimeoutError)
        blocked = [Body(open_response(server), lambda data: data, read_timeout=60) for _ in range(5)]
        for body in blocked:
            loop.add(body)
        time.sleep(0.3)
        assert not any(b.done.is_set() for b in blocked)
        loop.close()
        # One generous bound (load-proof) that still proves the interruption: left alone, a blocked read
        # ends only when the server lets go (30 s) or the read timeout passes (60 s).
        deadline = time.monotonic() + 15
        assert all(b.done.wait(max(0.0, deadline - time.monotonic())) for b in blocked)
        assert all(b.stopped and b.error is None for b in blocked)
        late = Body(open_response(server), lambda data: data, read_timeout=60)
        loop.add(late)  # added after close: ends at once
        assert late.done.is_set() and late.stopped
    finally:
        hold.set()
        server.close()


def test_every_busy_body_gets_its_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    """20 bodies with more ready than a round takes (one body a round here): each is read within the
    first rounds, least recently read first, not the same few again and again."""
    monkeypatch.setattr(bodyloop, "ROUND_BYTES", 0)
    monkeypatch.setattr(bodyloop, "READ_BYTES", 1024)
    hold = threading.Event()

    def script(conn: socket.socket, path: str, query: dict[str, list[str]]) -> None:
        conn.sendall(HEAD + chunk(path.encode() + b"\n" + b"x" * 200_000))
        hold.wait(30)

    order: list[int] = []
    with looping(script, None) as (server, loop, _):
        try:
            bodies = []
            for n in range(20):
                resp = open_response(server, f"/b{n}")
                body = Body(resp, lambda data, n=n: order.append(n), read_timeout=60)
                bodies.append(body)
            for body in bodies:
                loop.add(body)
            deadline = time.monotonic() + 10
            while len(order) < 80 and time.monotonic() < deadline:
                time.sleep(0.02)
            assert set(order[20:60]) == set(range(20)), order[:80]
        finally:
            hold.set()


def test_records_waiting_on_a_tls_socket_are_read_in_one_round(tls_dir: Path | None) -> None:
    """A pod's backlog (here 40 small chunks, a TLS record each, as the pool writes them) is read in one
    round, not a record a round: read a record a round, a loop slowed below the pool's 10 writes a second
    per pod (two busy cores) fell behind for good and kept ~75% of the rate."""
    pieces = [f"line {i} ".encode() + b"x" * 100 + b"\n" for i in range(40)]
    sent = threading.Event()
    hold = threading.Event()

    def script(conn: socket.socket, path: str, query: dict[str, list[str]]) -> None:
        conn.sendall(HEAD)
        for piece in pieces:
            conn.sendall(chunk(piece))
        sent.set()
        hold.wait(30)

    with looping(script, tls_dir) as (server, loop, rounds):
        try:
            body = Body(open_response(server), lambda data: data, read_timeout=10)
            assert sent.wait(5)
            time.sleep(0.2)  # every record in the client's socket before the loop looks
            loop.add(body)
            deadline = time.monotonic() + 5
            while not rounds and time.monotonic() < deadline:
                time.sleep(0.01)
            assert rounds and b"".join(rounds[0]) == b"".join(pieces), f"{len(rounds[0])} pieces in round one"
        finally:
            hold.set()


def test_one_round_holds_what_1024_pods_send_between_30_rounds_a_second() -> None:
    """What 1,024 pods x 100 lines/s send in 1/30 s (the loop's round rate on two busy cores) fits in one
    round: with 256 KiB a round the loop read ~98% of the rate and the rest piled up in the sockets."""
    stamped = len("2026-12-02T18:55:05.123456789Z step 123456 loss 0.000008 throughput 1234.5 samples/s\n")
    per_round = 1024 * 100 * (stamped + 8) / 30  # + the chunk framing of a 0.1 s chunk per pod, shared
    assert per_round < bodyloop.ROUND_BYTES


# -- LogStream through the loop --------------------------------------------------------------------------


def stamp(i: int) -> str:
    return f"2026-12-02T10:{i // 6000 % 60:02d}:{i // 100 % 60:02d}.{i % 100:02d}0000000Z"


class FakeKube:
    """What LogStream asks of `Kube`, the log requests going to a scripted server through urllib3."""

    def __init__(self, server: Server, phases: Callable[[str], str] | None = None) -> None:
        self.server = server
        self.pool = pool_for(server)
        self.timeout = (5.0, 5.0)
        self.phases = phases or (lambda pod: "Running")
        self.core = self
        self.custom = self

    def call(self, fn: Callable[..., Any], *args: Any, what: str, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    def read_namespaced_pod(self, pod: str, namespace: str) -> dict[str, Any]:
        phase = self.phases(pod)
        state = {"running": {}} if phase == "Running" else {"terminated": {"exitCode": 0}}
        return {
            "metadata": {"uid": f"uid-{pod}"},
            "status": {"phase": phase, "containerStatuses": [{"state": state, "restartCount": 0}]},
        }

    def get_namespaced_custom_object(self, *args: Any) -> dict[str, Any]:
        return {"status": {"state": {"phase": "Running"}}}

    def get_raw(self, path: str, query: list[tuple[str, Any]], timeout: tuple[float, float]) -> Any:
        q = "&".join(f"{k}={v}" for k, v in query)
        return self.pool.request(
            "GET",
            f"{self.server.url}{path}?{q}",
            preload_content=False,
            timeout=urllib3.Timeout(connect=timeout[0], read=timeout[1]),
        )


def pod_of(path: str) -> str:
    return path.split("/")[-2]


def lines_of(stream: LogStream) -> Iterator[tuple[str, str, str]]:
    for line in stream:
        yield line.pod, line.timestamp, line.text


def test_many_pods_interleaved_arrive_whole_in_order_once(tls_dir: Path | None) -> None:
    """200 pods, each response sent in random pieces (lines split anywhere) interleaved with the others':
    every pod's lines exactly once, in order, tagged with the pod's rank; one reader thread, not 200."""
    pods, per_pod = 200, 60

    def script(conn: socket.socket, path: str, query: dict[str, list[str]]) -> None:
        pod = pod_of(path)
        rng = random.Random(pod)
        text = "".join(f"{stamp(i)} {pod} step {i} é\n" for i in range(per_pod)).encode()
        conn.sendall(HEAD)
        at = 0
        while at < len(text):
            n = rng.randint(1, 300)
            conn.sendall(chunk(text[at : at + n]))
            at += n
            time.sleep(rng.random() * 0.004)
        conn.sendall(END)

    server = Server(script, tls_dir)
    names = [(f"job-w-{i}", i) for i in range(pods)]
    stream = LogStream(FakeKube(server), "default", "job", names, follow=False)  # type: ignore[arg-type]
    try:
        stream.start()
        got = list(stream)
    finally:
        stream.close()
        server.close()
    by_pod: dict[str, list[tuple[str, str]]] = {}
    for line in got:
        by_pod.setdefault(line.pod, []).append((line.timestamp, line.text))
        assert line.node_rank == int(line.pod.rsplit("-", 1)[1])
    assert len(by_pod) == pods
    for pod, _ in names:
        assert by_pod[pod] == [(stamp(i), f"{pod} step {i} é") for i in range(per_pod)], pod
    assert stream.stats.lines == pods * per_pod and not stream.stats.problems
    assert not any(t.name.startswith("log-read-") for t in threading.enumerate() if t.is_alive())


def test_a_dropped_connection_s_cut_line_comes_whole_on_resume(tls_dir: Path | None) -> None:
    """The first response drops mid-line: the cut line is not delivered; the stream resumes with sinceTime
    and delivers it whole, and nothing twice (lines at the resume stamp are counted off)."""
    served: dict[str, int] = {}
    lines = [f"{stamp(i // 2)} step {i}\n".encode() for i in range(10)]  # two lines per stamp

    def script(conn: socket.socket, path: str, query: dict[str, list[str]]) -> None:
        pod = pod_of(path)
        served[pod] = served.get(pod, 0) + 1
        since = query.get("sinceTime", [""])[0]
        start = next(i for i in range(10) if not since or stamp(i // 2) >= since)
        conn.sendall(HEAD)
        if served[pod] == 1:
            conn.sendall(chunk(b"".join(lines[:5])) + b"20\r\n" + lines[5][:7])  # line 5 cut mid-chunk
            time.sleep(0.05)
            return  # the connection drops
        conn.sendall(chunk(b"".join(lines[start:])) + END)

    server = Server(script, tls_dir)
    kube = FakeKube(server, phases=lambda pod: "Running" if served.get(pod, 0) < 2 else "Succeeded")
    stream = LogStream(kube, "default", "job", [("job-d-0", 0)], follow=True)  # type: ignore[arg-type]
    try:
        stream.start()
        got = [text for _, _, text in lines_of(stream)]
    finally:
        stream.close()
        server.close()
    assert got == [f"step {i}" for i in range(10)]
    assert stream.stats.reconnects >= 1 and stream.stats.duplicates_dropped >= 1
    assert any("sinceTime" in r for r in server.requests[1:])


def test_log_stream_close_ends_followed_pods_at_once(tls_dir: Path | None) -> None:
    hold = threading.Event()

    def script(conn: socket.socket, path: str, query: dict[str, list[str]]) -> None:
        conn.sendall(HEAD + chunk(f"{stamp(0)} hello\n".encode()))
        hold.wait(30)

    server = Server(script, tls_dir)
    names = [(f"job-c-{i}", i) for i in range(20)]
    stream = LogStream(FakeKube(server), "default", "job", names, follow=True)  # type: ignore[arg-type]
    got: list[Any] = []
    reader = threading.Thread(target=lambda: got.extend(stream), daemon=True)
    try:
        stream.start()
        reader.start()
        deadline = time.monotonic() + 10
        while len(got) < 20 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(got) == 20
        started = time.monotonic()
        stream.close()
        reader.join(2)
        assert not reader.is_alive() and time.monotonic() - started < 2.0
    finally:
        hold.set()
        server.close()


def test_a_silent_stream_times_out_and_resumes(tls_dir: Path | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logs_module, "LOG_READ_TIMEOUT", 0.5)
    served: list[int] = []

    def script(conn: socket.socket, path: str, query: dict[str, list[str]]) -> None:
        served.append(1)
        if len(served) == 1:
            conn.sendall(HEAD + chunk(f"{stamp(0)} before\n".encode()))
            time.sleep(5)  # silent past the read timeout
            return
        conn.sendall(HEAD + chunk(f"{stamp(0)} before\n{stamp(1)} after\n".encode()) + END)

    server = Server(script, tls_dir)
    kube = FakeKube(server, phases=lambda pod: "Running" if len(served) < 2 else "Succeeded")
    stream = LogStream(kube, "default", "job", [("job-t-0", 0)], follow=True)  # type: ignore[arg-type]
    try:
        stream.start()
        started = time.monotonic()
        got = [text for _, _, text in lines_of(stream)]
        took = time.monotonic() - started
    finally:
        stream.close()
        server.close()
    assert got == ["before", "after"]
    assert stream.stats.reconnects >= 1 and took < 4.5


def test_fresh_bodies_with_a_backlog_keep_to_the_round_cap_and_arrive_whole(
    tls_dir: Path | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """32 bodies added at once, each with a 200 KB backlog (a Job view opened on pods that have run a
    while): a fresh body past the round's cap gives only what select cannot see, so no round is much over
    the cap (1,024 pods' history in one round was ~650,000 lines, ~1 GiB held), and each body's bytes
    still all arrive, in order."""
    monkeypatch.setattr(bodyloop, "ROUND_BYTES", 64 * 1024)
    backlog = {
        n: b"".join(f"b{n} line {i} ".encode() + b"x" * 90 + b"\n" for i in range(2000)) for n in range(32)
    }
    hold = threading.Event()

    def script(conn: socket.socket, path: str, query: dict[str, list[str]]) -> None:
        conn.sendall(HEAD + chunk(backlog[int(path[2:])]))
        hold.wait(30)

    got: dict[int, list[bytes]] = {n: [] for n in backlog}
    with looping(script, tls_dir) as (server, loop, rounds):
        try:
            responses = [open_response(server, f"/b{n}") for n in backlog]
            time.sleep(0.3)  # every backlog in the client's sockets before the loop looks
            for n, resp in enumerate(responses):
                loop.add(Body(resp, lambda data, n=n: got[n].append(data) or data, read_timeout=30))
            deadline = time.monotonic() + 20
            while (
                any(len(b"".join(v)) < len(backlog[n]) for n, v in got.items())
                and time.monotonic() < deadline
            ):
                time.sleep(0.02)
            assert all(b"".join(got[n]) == backlog[n] for n in backlog)
            # the body read when the cap is reached, then what each other one holds: a buffer, a TLS record
            held = 8192 + 16 * 1024
            slack = bodyloop.READ_BYTES + bodyloop.BUFFERED_BYTES + len(backlog) * held
            sizes = [sum(map(len, r)) for r in rounds]
            assert max(sizes) <= bodyloop.ROUND_BYTES + slack, sizes[:5]
            assert sum(sizes) == sum(map(len, backlog.values()))
        finally:
            hold.set()


def test_a_consumer_that_falls_behind_holds_the_reading_not_memory(
    tls_dir: Path | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With nobody taking its rounds, the stream reads at most QUEUED_LINES (plus a round) and then
    waits: the rest stays in the sockets. Once read, every line comes, in order."""
    monkeypatch.setattr(logs_module, "QUEUED_LINES", 2000)
    monkeypatch.setattr(bodyloop, "ROUND_BYTES", 16 * 1024)
    lines = 5000
    hold = threading.Event()

    def script(conn: socket.socket, path: str, query: dict[str, list[str]]) -> None:
        pod = path.split("/")[-2]
        conn.sendall(HEAD + chunk(b"".join(f"{stamp(i)} {pod} {i}\n".encode() for i in range(lines))))
        hold.wait(30)

    server = Server(script, tls_dir)
    names = [(f"job-q-{i}", i) for i in range(10)]
    stream = LogStream(FakeKube(server), "default", "job", names, follow=True)  # type: ignore[arg-type]
    try:
        stream.start()
        time.sleep(1.5)  # nobody reads the stream meanwhile
        read_ahead = stream.stats.lines
        assert 0 < read_ahead <= 2000 + 16 * 1024 // 20 + 10 * 8192 // 20, read_ahead
        got: dict[str, list[str]] = {}
        deadline = time.monotonic() + 20
        for batch in stream.batches(idle=0.5):
            for line in batch:
                got.setdefault(line.pod, []).append(line.text)
            if sum(map(len, got.values())) == lines * len(names) or time.monotonic() > deadline:
                break
        assert all(got[pod] == [f"{pod} {i}" for i in range(lines)] for pod, _ in names)
    finally:
        hold.set()
        stream.close()
        server.close()
