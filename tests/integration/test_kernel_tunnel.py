"""The port forwarder on its own, over a real sshd: data integrity, parking, reconnect after a drop."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ranktable.remote import manager as manager_module
from ranktable.remote.kernel_link import open_link
from ranktable.remote.kernel_tunnel import PortForwarder
from ranktable.remote.profiles import ProfileStore
from tests.integration.fixtures.sshd import SshServer


@pytest.fixture
def echo_server() -> Iterator[int]:
    """A loopback echo server (the 'remote' service behind the tunnel)."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve(conn: socket.socket) -> None:
        with conn:
            while data := conn.recv(65536):
                conn.sendall(data)

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # closed at teardown
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(2)
    server.close()


@pytest.fixture
def forwarder(sshd: SshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PortForwarder]:
    monkeypatch.setenv("RANKTABLE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RANKTABLE_USER_KNOWN_HOSTS", str(tmp_path / "none"))
    monkeypatch.setenv("RANKTABLE_SSH_CONFIG", str(tmp_path / "none"))
    monkeypatch.setattr(manager_module, "_default", None)
    sshd.write_known_hosts(tmp_path / "home" / "known_hosts")
    ProfileStore().add(sshd.profile("box"))
    link = open_link("box")
    fwd = PortForwarder(link.open_forward)
    fwd.start()
    yield fwd
    fwd.close()
    manager_module.default_manager().close()


def roundtrip(port: int, payload: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        received = bytearray()
        sender = threading.Thread(target=sock.sendall, args=(payload,))
        sender.start()
        while len(received) < len(payload):
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
        sender.join()
        return bytes(received)


def test_parallel_connections_carry_data_intact(forwarder: PortForwarder, echo_server: int) -> None:
    port = forwarder.listen()
    forwarder.point(port, ("127.0.0.1", echo_server))
    payloads = [os.urandom(1_000_000) for _ in range(3)]
    results: list[bytes] = [b""] * 3

    def run(i: int) -> None:
        results[i] = roundtrip(port, payloads[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert results == payloads


def test_parked_listener_closes_connections(forwarder: PortForwarder, echo_server: int) -> None:
    port = forwarder.listen()
    forwarder.point(port, None)
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        assert sock.recv(10) == b""  # closed at once, nothing forwarded
    forwarder.point(port, ("127.0.0.1", echo_server))
    assert roundtrip(port, b"hello") == b"hello"


@pytest.mark.fault
def test_tunnel_comes_back_after_the_connection_drops(
    forwarder: PortForwarder, echo_server: int, sshd: SshServer
) -> None:
    port = forwarder.listen()
    forwarder.point(port, ("127.0.0.1", echo_server))
    assert roundtrip(port, b"before") == b"before"
    assert sshd.kill_connections() >= 1
    assert roundtrip(port, b"after") == b"after"  # a new channel on a re-established transport
    assert forwarder.ports == [port]
