"""The simulated API server's shared writer for polled log bodies (the synthetic logs): every stream is
sent as a chunked body by one thread, and a reader that stops reading holds back only its own stream."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from ranktable.sim.k8s.streams import PolledWriter


class Counting:
    """A polled log of `total` chunks of `size` bytes, all due at once (a backlog)."""

    def __init__(self, total: int, size: int) -> None:
        self.left, self.size, self.closed = total, size, False

    def poll(self) -> bytes | None:
        if not self.left:
            return None
        self.left -= 1
        return b"x" * self.size

    def close(self) -> None:
        self.closed = True


def read_body(sock: socket.socket) -> bytes:
    """A chunked body up to its final chunk (the writer frames each poll as one chunk)."""
    data = b""
    while not data.endswith(b"0\r\n\r\n"):
        got = sock.recv(1 << 16)
        assert got, "closed before the final chunk"
        data += got
    return data


def test_a_stalled_reader_holds_back_only_its_own_stream() -> None:
    writer = PolledWriter(threading.Event(), interval=0.02)
    stalled_server, stalled_client = socket.socketpair()
    live_server, live_client = socket.socketpair()
    stalled_log, live_log = Counting(10_000, 65536), Counting(50, 1000)
    results: dict[str, bool] = {}

    def serve(name: str, log: Counting, sock: socket.socket) -> None:
        results[name] = writer.serve(log, sock)

    threads = [
        threading.Thread(target=serve, args=("stalled", stalled_log, stalled_server)),
        threading.Thread(target=serve, args=("live", live_log, live_server)),
    ]
    for thread in threads:
        thread.start()
    body = read_body(live_client)  # while the other socket is full and never read
    assert body == (b"3e8\r\n" + b"x" * 1000 + b"\r\n") * 50 + b"0\r\n\r\n"
    threads[1].join(5)
    assert results["live"] is True and live_log.closed
    assert live_server.gettimeout() is None  # the request thread's socket is as it was (blocking)
    assert threads[0].is_alive() and stalled_log.left > 9_000  # held back: its backlog is not polled ahead
    stalled_client.close()  # the reader goes away: its stream ends without the final chunk
    threads[0].join(10)
    assert results["stalled"] is False and stalled_log.closed


def test_stopping_cuts_every_stream_without_the_final_chunk() -> None:
    stopping = threading.Event()
    writer = PolledWriter(stopping, interval=0.02)

    class Endless:
        def poll(self) -> bytes:
            return b""

    server, client = socket.socketpair()
    result: list[bool] = []
    thread = threading.Thread(target=lambda: result.append(writer.serve(Endless(), server)))
    thread.start()
    time.sleep(0.1)
    stopping.set()
    thread.join(5)
    assert result == [False]
    client.settimeout(0.2)
    with pytest.raises(TimeoutError):  # nothing was sent: no final chunk (the server then hangs up)
        client.recv(100)
