"""#26.1: one reader that stops reading never slows another. A websocket that subscribes to a job's logs
and never reads (a hung tab) stopped every other viewer of the job at 0 lines for 70 s; now it is skipped
(its queue is bounded) and caught up from the archive when it reads again."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.server_helpers import call, log_lines

PODS = 2
LINES = 1500  # per pod, ~4 KB each: 12 MB in all, far past what the stalled socket's buffers take


@pytest.fixture
def jp_server_config(sim_pool_factory: Callable[..., SimPoolHandle], tmp_path: Path) -> dict[str, Any]:
    pool = sim_pool_factory(nodes=2, leaves=1)
    return {
        "ServerApp": {"jpserver_extensions": {"ranktable": True}},
        "Ranktable": {
            "kubeconfig": str(pool.kubeconfig),
            "context": pool.context,
            "state_dir": str(tmp_path / "state"),
            "log_batch_seconds": 0.05,
        },
    }


def _stalled_reader(port: int, path: str, headers: dict[str, str], job: str) -> socket.socket:
    """A websocket that subscribes to the job's logs, then never reads (a tiny receive buffer)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    sock.sendall(
        (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n"
        ).encode()
    )
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += sock.recv(1)
    assert answer.startswith(b"HTTP/1.1 101"), answer
    payload = json.dumps({"op": "subscribe", "id": "stalled", "channel": "logs", "job": job}).encode()
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    assert len(payload) < 126
    sock.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + masked)
    return sock  # and nothing is ever read from it


async def test_a_reader_that_never_reads_does_not_slow_another_viewer(
    jp_fetch: Any, jp_ws_fetch: Any, jp_http_port: int, jp_base_url: str, jp_auth_header: dict[str, str]
) -> None:
    script = (
        "printf -v pad '%4000s' ''; pad=${pad// /x}; "
        f'for i in $(seq 1 {LINES}); do echo "line $i $pad"; sleep 0.005; done; sleep 600'
    )
    spec = {
        "name": "chatty",
        "image": "img:v1",
        "nodes": PODS,
        "npus_per_node": 8,
        "command": ["/bin/bash", "-c", script],
    }
    await call(jp_fetch, "ranktable", "jobs", method="POST", body={"spec": spec}, expect=201)
    url = f"{jp_base_url}ranktable/stream"  # from a thread: the server answers on this event loop
    stalled = await asyncio.to_thread(_stalled_reader, jp_http_port, url, jp_auth_header, "chatty")
    ws = await jp_ws_fetch("ranktable", "stream")
    try:
        ws.write_message(json.dumps({"op": "subscribe", "id": "v", "channel": "logs", "job": "chatty"}))
        seen: dict[str, set[str]] = {}
        deadline = time.monotonic() + 120
        while sum(len(s) for s in seen.values()) < PODS * LINES:
            assert time.monotonic() < deadline, {p: len(s) for p, s in seen.items()}
            msg = json.loads(await asyncio.wait_for(ws.read_message(), 60))
            assert msg["id"] == "v" and msg["type"] == "data", msg
            for line in log_lines(msg["data"]):
                seen.setdefault(line["pod"], set()).add(line["text"].split(" ", 2)[1])
        assert all(len(s) == LINES for s in seen.values()) and len(seen) == PODS  # each line, once
    finally:
        ws.close()
        stalled.close()
        await call(jp_fetch, "ranktable", "jobs", "default", "chatty", method="DELETE")
