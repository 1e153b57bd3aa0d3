"""Local port forwarding over an SSH transport: 127.0.0.1 (or Unix socket) listeners whose connections become
``direct-tcpip`` channels to ports on the remote's loopback.

Why not ``ssh -L``: no subprocesses to leak, one authenticated, host-key-verified transport shared with the
rest of the profile, and nothing opened on any remote interface. Each accepted connection gets one thread
that shuttles bytes both ways; a channel that cannot be opened (transport down) closes the local socket so
the client (ZMQ) reconnects, and the next connection asks ``open_channel`` again, which reconnects.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import selectors
import socket
import threading
import time
from collections.abc import Callable

import paramiko

from ranktable.pump import ChannelLike, pump

log = logging.getLogger(__name__)

REFUSED_BACKOFF = 1.0  # seconds during which a refused target is not retried


OpenChannel = Callable[[tuple[str, int], tuple[str, int]], ChannelLike]


class PortForwarder:
    """A set of 127.0.0.1 listeners, each forwarding to one remote (host, port) through ``open_channel``.

    A listener may be a Unix socket instead (``listen_unix``): only its owner can connect (mode 600). It is
    named by a negative key where a TCP listener is named by its port."""

    def __init__(self, open_channel: OpenChannel, *, name: str = "ranktable-forward") -> None:
        self._open_channel = open_channel
        self._name = name
        self._lock = threading.Lock()
        self._targets: dict[int, tuple[str, int] | None] = {}
        self._refused_until: dict[tuple[str, int], float] = {}
        self._listeners: dict[int, socket.socket] = {}
        self._selector = selectors.DefaultSelector()
        self._stop = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._conns: set[tuple[socket.socket, ChannelLike]] = set()
        self._thread: threading.Thread | None = None
        self._unix_paths: dict[int, str] = {}
        self._unix_keys = itertools.count(-1, -1)

    # -- configuration ------------------------------------------------------------------------------
    def listen(self, local_port: int = 0) -> int:
        """Open a listener on 127.0.0.1 (0 = any free port); returns the port. Target set by ``point``."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", local_port))
        except OSError:
            sock.close()
            raise
        sock.listen(16)
        sock.setblocking(False)
        port = int(sock.getsockname()[1])
        self._add_listener(port, sock)
        return port

    def listen_unix(self, path: str) -> int:
        """Open a listener on the Unix socket ``path`` (mode 600; its folder should be the owner's alone);
        returns the listener's key (negative) for ``point``. The socket file is removed on ``close``."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.bind(path)
            os.chmod(path, 0o600)  # before listen(): nobody could connect in between
            sock.listen(16)
        except OSError:
            sock.close()
            with contextlib.suppress(OSError):
                os.unlink(path)
            raise
        sock.setblocking(False)
        key = next(self._unix_keys)
        with self._lock:
            self._unix_paths[key] = path
        self._add_listener(key, sock)
        return key

    def _add_listener(self, key: int, sock: socket.socket) -> None:
        with self._lock:
            self._listeners[key] = sock
        self._selector.register(sock, selectors.EVENT_READ, key)
        self._wake()

    def point(self, local_port: int, target: tuple[str, int] | None) -> None:
        """(Re)direct a listener to a remote target; existing connections to the old target are closed.

        ``None`` parks the listener: connections are accepted and closed at once (no kernel behind it).
        """
        with self._lock:
            if local_port not in self._listeners:
                raise KeyError(local_port)
            old = self._targets.get(local_port)
            self._targets[local_port] = target
        if old is not None and old != target:
            self.drop_connections()

    @property
    def ports(self) -> list[int]:
        with self._lock:
            return sorted(key for key in self._listeners if key > 0)

    def start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._accept_loop, name=self._name, daemon=True)
            self._thread.start()

    def drop_connections(self) -> None:
        """Close every forwarded connection (clients reconnect and get fresh channels)."""
        with self._lock:
            conns = list(self._conns)
            self._conns.clear()
        for sock, chan in conns:
            with contextlib.suppress(Exception):
                chan.close()
            with contextlib.suppress(OSError):
                sock.close()

    def close(self) -> None:
        self._stop.set()
        self._wake()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(5)
        self.drop_connections()
        with self._lock:
            listeners = list(self._listeners.values())
            self._listeners.clear()
            paths = list(self._unix_paths.values())
            self._unix_paths.clear()
        for sock in listeners:
            with contextlib.suppress(Exception):
                self._selector.unregister(sock)
            sock.close()
        for path in paths:
            with contextlib.suppress(OSError):
                os.unlink(path)
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()

    # -- internals ----------------------------------------------------------------------------------
    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")

    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            for key, _ in self._selector.select(timeout=1.0):
                if key.fileobj is self._wake_r:
                    with contextlib.suppress(OSError):
                        self._wake_r.recv(512)
                    continue
                listener = key.fileobj
                assert isinstance(listener, socket.socket)
                try:
                    client, peer = listener.accept()
                except OSError:
                    continue
                client.setblocking(True)
                threading.Thread(
                    target=self._serve, args=(client, peer, key.data), name=f"{self._name}-conn", daemon=True
                ).start()

    def _serve(self, client: socket.socket, peer: object, local_port: int) -> None:
        with self._lock:
            target = self._targets.get(local_port)
            backing_off = target is not None and time.monotonic() < self._refused_until.get(target, 0.0)
        if target is None or backing_off:
            # ZMQ retries every 100 ms while a kernel is down: refusing locally for a moment spares the
            # remote a storm of doomed channel opens.
            client.close()
            return
        # a Unix socket's peer has no address: the channel's originator is then the loopback
        origin = (str(peer[0]), int(peer[1])) if isinstance(peer, tuple) else ("127.0.0.1", 0)
        try:
            chan = self._open_channel(target, origin)
        except Exception as exc:
            log.debug("cannot forward 127.0.0.1:%s to remote %s:%s: %s", local_port, *target, exc)
            if isinstance(exc, paramiko.ChannelException):  # nothing listens there (kernel down)
                with self._lock:
                    self._refused_until[target] = time.monotonic() + REFUSED_BACKOFF
            client.close()
            return
        pair = (client, chan)
        with self._lock:
            self._conns.add(pair)
        try:
            pump(client, chan, self._stop)
        finally:
            with self._lock:
                self._conns.discard(pair)
