"""#26.1: one reader that stops reading never slows another. A websocket that subscribes to a job's logs
and never reads (a hung tab) stopped every other viewer of the job at 0 lines for 70 s; now it is skipped
(its queue is bounded) and caught up from the archive when it reads again."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.server_helpers import call, extension_on_pool, log_lines, stalled_reader, submit_bash

PODS = 2
LINES = 1500  # per pod, ~4 KB each: 12 MB in all, far past what the stalled socket's buffers take


@pytest.fixture
def jp_server_config(sim_pool_factory: Callable[..., SimPoolHandle], tmp_path: Path) -> dict[str, Any]:
    pool = sim_pool_factory(nodes=2, leaves=1)
    return extension_on_pool(pool, tmp_path, log_batch_seconds=0.05)


async def test_a_reader_that_never_reads_does_not_slow_another_viewer(
    jp_fetch: Any, jp_ws_fetch: Any, jp_http_port: int, jp_base_url: str, jp_auth_header: dict[str, str]
) -> None:
    script = (
        "printf -v pad '%4000s' ''; pad=${pad// /x}; "
        f'for i in $(seq 1 {LINES}); do echo "line $i $pad"; sleep 0.005; done; sleep 600'
    )
    await submit_bash(jp_fetch, "chatty", script, PODS, image="img:v1")
    url = f"{jp_base_url}ranktable/stream"  # from a thread: the server answers on this event loop
    stalled = await asyncio.to_thread(stalled_reader, jp_http_port, url, jp_auth_header, "chatty")
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
