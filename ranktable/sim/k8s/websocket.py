"""Server side of RFC 6455 WebSockets, enough for Kubernetes' `channel.k8s.io` streams (kubectl exec).

Each binary message starts with a channel byte: 0 stdin, 1 stdout, 2 stderr, 3 error (a Status),
4 resize (terminal size JSON), and in v5 255 "close this channel".
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import struct
import threading
import time
from typing import Any

from ranktable.sim.k8s import errors

GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io")
OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0x1, 0x2, 0x8, 0x9, 0xA
# kubectl <= 1.32 (client-go's wsStreamCreator) starts reading the connection *before* it registers its
# streams and drops any frame for a stream it does not know yet ("Unknown stream id 1, discarding
# message"): output sent right after the handshake is lost when kubectl is slow to get there (under load).
# So channel data waits until the client has sent a frame of its own (it only writes on streams it has
# registered) or, for a client that sends nothing (no stdin, no tty), until this grace has passed.
CLIENT_SETUP_GRACE = 0.25


def accept_key(key: str) -> str:
    return base64.b64encode(hashlib.sha1((key + GUID).encode(), usedforsecurity=False).digest()).decode()


def choose_protocol(offered: str) -> str | None:
    names = [p.strip() for p in offered.split(",")]
    return next((p for p in PROTOCOLS if p in names), None)


class WebSocket:
    """Frames over an upgraded connection; `send` is safe from several threads."""

    def __init__(self, rfile: Any, wfile: Any, setup_grace: float = CLIENT_SETUP_GRACE) -> None:
        self.rfile, self.wfile = rfile, wfile
        self._lock = threading.Lock()
        self.closed = False
        self._client_ready = threading.Event()
        self._ready_by = time.monotonic() + setup_grace

    def send(self, payload: bytes, opcode: int = OP_BINARY) -> None:
        size = len(payload)
        if size < 126:
            header = struct.pack("!BB", 0x80 | opcode, size)
        elif size < 1 << 16:
            header = struct.pack("!BBH", 0x80 | opcode, 126, size)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 127, size)
        with self._lock:
            if self.closed:
                return
            self.wfile.write(header + payload)
            self.wfile.flush()

    def send_channel(self, channel: int, data: bytes) -> None:
        """One message on `channel`, held back until the client can route it (see CLIENT_SETUP_GRACE)."""
        if not self._client_ready.is_set():
            self._client_ready.wait(max(0.0, self._ready_by - time.monotonic()))
        self.send(bytes([channel]) + data)

    def close(self, code: int = 1000) -> None:
        """Send the Close frame; the client's reply ends `receive` with EOFError."""
        with contextlib.suppress(OSError):
            self.send(struct.pack("!H", code), OP_CLOSE)
        self.closed = True

    def _read_exact(self, n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = self.rfile.read(n - len(data))
            if not chunk:
                raise EOFError
            data += chunk
        return data

    def receive(self) -> tuple[int, bytes]:
        """The next data message (opcode, payload); answers pings; EOFError when the peer closes."""
        message = b""
        while True:
            first, second = self._read_exact(2)
            opcode, fin = first & 0x0F, first & 0x80
            size = second & 0x7F
            if size == 126:
                size = struct.unpack("!H", self._read_exact(2))[0]
            elif size == 127:
                size = struct.unpack("!Q", self._read_exact(8))[0]
            mask = self._read_exact(4) if second & 0x80 else b""
            payload = self._read_exact(size)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == OP_CLOSE:
                raise EOFError
            if opcode == OP_PING:
                self.send(payload, OP_PONG)
                continue
            if opcode == OP_PONG:
                continue
            self._client_ready.set()
            message += payload
            if fin:
                return opcode, message


def upgrade(handler: Any) -> tuple[WebSocket, str]:
    """Answer an exec request's WebSocket upgrade (101) on a `BaseHTTPRequestHandler`; 400 if it is not one.

    Shared by the Python pool's API server and the real control plane's kubelet API.
    """
    protocol = choose_protocol(handler.headers.get("Sec-WebSocket-Protocol") or "")
    key = handler.headers.get("Sec-WebSocket-Key")
    if (handler.headers.get("Upgrade") or "").lower() != "websocket" or not key or protocol is None:
        raise errors.bad_request(
            "exec needs a WebSocket upgrade with protocol v5.channel.k8s.io or "
            "v4.channel.k8s.io (this server does not speak SPDY)"
        )
    handler.send_response(101)
    handler.send_header("Upgrade", "websocket")
    handler.send_header("Connection", "Upgrade")
    handler.send_header("Sec-WebSocket-Accept", accept_key(key))
    handler.send_header("Sec-WebSocket-Protocol", protocol)
    handler.end_headers()
    handler.wfile.flush()
    handler.close_connection = True
    handler.connection.settimeout(None)  # an interactive session may sit idle as long as it likes
    return WebSocket(handler.rfile, handler.wfile), protocol
