"""Raw HTTP/1.1 over a socket, for the tests that must see the wire (a fake API server, a websocket
upgrade, a hand-written request to the simulator's TLS port): reading a message's head."""

from __future__ import annotations

import socket


def recv_head(sock: socket.socket, chunk: int = 65536) -> bytes:
    """Bytes received until the blank line that ends an HTTP head (and whatever came with it in the
    same receive); what arrived so far if the peer closes first. `chunk` 1 reads nothing past the head."""
    data = b""
    while b"\r\n\r\n" not in data:
        part = sock.recv(chunk)
        if not part:
            break
        data += part
    return data
