"""A `jobs` stream subscription holds a thread only while subscribed, and API connections stay bounded.

The `jobs` channel's subscribers of a namespace share one `JobTable` (three watches: jobs, pods, rank-table
ConfigMaps), so connections never grow with the number of subscriptions, and the watches and their
connections end when the last subscription does. The pool runs in a subprocess, so the threads and sockets
counted here are the extension's alone.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import psutil
import pytest

from ranktable.cluster.kube import POOL_SIZE
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.server_helpers import extension_on_pool

SUBSCRIPTIONS = 200


@pytest.fixture
def jp_server_config(sim_pool_process: SimPoolHandle, tmp_path: Path) -> dict[str, Any]:
    return extension_on_pool(sim_pool_process, tmp_path)


def api_connections(pool: SimPoolHandle) -> int:
    port = urlparse(pool.url).port
    return sum(
        1
        for c in psutil.Process().net_connections(kind="tcp")
        if c.raddr and c.raddr.port == port and c.status == psutil.CONN_ESTABLISHED
    )


def stream_threads() -> int:
    return sum(1 for t in threading.enumerate() if t.name == "ranktable-stream")


def unpooled_threads() -> int:
    """Every thread but the extension's bounded worker pool (`ranktable_N`, at most `workers`)."""
    return sum(1 for t in threading.enumerate() if not t.name.startswith("ranktable_"))


async def settle(check: Any, timeout: float, pool: SimPoolHandle | None = None) -> float:
    """Seconds until check() holds (polling), or fail after timeout naming what is still held."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            names = sorted(t.name for t in threading.enumerate() if not t.name.startswith("ranktable_"))
            held = f"{stream_threads()} stream threads, other threads: {names}"
            if pool is not None:
                held += f", {api_connections(pool)} API connections"
            raise AssertionError(f"not released within {timeout} s: {held}")
        await asyncio.sleep(0.05)
    return time.monotonic() - started


async def snapshots(ws: Any, ids: list[str]) -> None:
    pending = set(ids)
    while pending:
        msg = json.loads(await asyncio.wait_for(ws.read_message(), 60))
        assert msg["type"] == "data", msg
        if msg["data"].get("event") == "snapshot":
            pending.discard(msg["id"])


def subscribe(ws: Any, ids: list[str]) -> None:
    for sub in ids:
        ws.write_message(json.dumps({"op": "subscribe", "id": sub, "channel": "jobs"}))


async def test_closing_the_socket_releases_every_subscription_within_a_second(
    jp_ws_fetch: Any, sim_pool_process: SimPoolHandle
) -> None:
    ws = await jp_ws_fetch("ranktable", "stream")
    subscribe(ws, ["warm"])  # the client, its executor threads and pool exist from here on
    await snapshots(ws, ["warm"])
    ws.write_message(json.dumps({"op": "unsubscribe", "id": "warm"}))
    await settle(lambda: stream_threads() == 0, 5)
    baseline_threads = unpooled_threads()

    ids = [f"j{i}" for i in range(SUBSCRIPTIONS)]
    subscribe(ws, ids)
    await snapshots(ws, ids)
    assert stream_threads() == SUBSCRIPTIONS
    assert unpooled_threads() >= baseline_threads + SUBSCRIPTIONS
    assert api_connections(sim_pool_process) <= POOL_SIZE < SUBSCRIPTIONS  # shared, not one each

    ws.close()
    took = await settle(
        lambda: stream_threads() == 0 and unpooled_threads() <= baseline_threads,
        1.5,
        sim_pool_process,
    )
    assert took <= 1.0, f"released after {took:.2f} s"
    assert api_connections(sim_pool_process) <= POOL_SIZE


async def test_unsubscribing_releases_that_watch_only(
    jp_ws_fetch: Any, sim_pool_process: SimPoolHandle
) -> None:
    ws = await jp_ws_fetch("ranktable", "stream")
    try:
        subscribe(ws, ["a", "b"])
        await snapshots(ws, ["a", "b"])
        await settle(lambda: stream_threads() == 2, 30)
        ws.write_message(json.dumps({"op": "unsubscribe", "id": "a"}))
        await settle(lambda: stream_threads() == 1, 1.0)
    finally:
        ws.close()
    await settle(lambda: stream_threads() == 0, 1.0)
