"""A byte pump between a local socket and a channel (an SSH channel, or a simulator's): both ways until
one end closes. Standard library only, so the SSH adapter and the simulated Notebook instance share it
without importing each other."""

from __future__ import annotations

import contextlib
import logging
import select
import socket
import struct
import threading
from typing import Protocol

log = logging.getLogger(__name__)

CHUNK = 65536


class ChannelLike(Protocol):
    """What the pump needs from a paramiko Channel."""

    def fileno(self) -> int: ...
    def recv(self, nbytes: int) -> bytes: ...
    def sendall(self, data: bytes) -> None: ...
    def close(self) -> None: ...
    def shutdown_write(self) -> None: ...


def pump(sock: socket.socket, chan: ChannelLike, stop: threading.Event | None = None) -> None:
    """Copy bytes both ways until the remote side ends (or ``stop`` is set); closes both ends.

    A local EOF is passed on as a half-close; a remote EOF ends the pair (ZMQ peers never half-close).
    A channel that breaks (the SSH connection cut) resets the local connection instead of closing it, so
    the client sees an error, not an end: a download cut in the middle is never taken for a complete one.
    """
    sock_open = True
    broken = False
    try:
        while True:
            if stop is not None and stop.is_set():
                return
            watch: list[socket.socket | ChannelLike] = [sock, chan] if sock_open else [chan]
            readable, _, _ = select.select(watch, [], [], 0.5)
            if sock in readable:
                data = sock.recv(CHUNK)
                if data:
                    chan.sendall(data)
                else:
                    sock_open = False
                    chan.shutdown_write()
            if chan in readable:
                data = chan.recv(CHUNK)
                if not data:
                    # The remote end closed: end the local connection too, so the client (ZMQ)
                    # notices and reconnects instead of waiting on a half-open socket.
                    broken = not getattr(chan, "eof_received", True)  # closed without an EOF: cut
                    return
                sock.sendall(data)
    except Exception as exc:  # OSError, EOFError, or paramiko's SSHException when the transport dies
        log.debug("forwarded connection ended: %s", exc)
        broken = True
    finally:
        with contextlib.suppress(Exception):
            chan.close()
        with contextlib.suppress(OSError):
            if broken:  # an RST, not a FIN: the client sees ECONNRESET
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()
