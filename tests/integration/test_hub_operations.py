"""`Hub.follow`, the `operation` stream channel (sync, download, remote run): each follower reads from its
own cursor into the operation's one bounded buffer, so one that stops reading neither slows the others nor
holds memory; when it reads again it is told how many events it missed (#26.1)."""

from __future__ import annotations

import asyncio
import threading
import time
import tracemalloc
from typing import Any

from ranktable.server_ext.hub import Hub

EVENTS = 20_000
BUFFER = 100


async def _follow_all(hub: Hub, op_id: str) -> list[dict[str, Any]]:
    return [event async for event in hub.follow(op_id)]


async def _follow_in_order(hub: Hub, op_id: str, seen: list[int]) -> dict[str, Any]:
    """Checks each progress event is the next one (keeps nothing: its memory is not the hub's); the last."""
    last: dict[str, Any] = {}
    async for event in hub.follow(op_id):
        if event["type"] == "progress":
            assert event["i"] == seen[0], f"got event {event['i']} after {seen[0] - 1}"
            seen[0] += 1
        last = event
    return last


def test_a_follower_that_never_reads_slows_no_other_and_is_told_what_it_missed() -> None:
    async def run() -> tuple[dict[str, Any], int, list[dict[str, Any]], list[dict[str, Any]], int]:
        hub = Hub(buffer=BUFFER)
        release = threading.Event()
        seen = [0]  # events the healthy follower took: the producer keeps within its buffer of it

        def produce(emit: Any, cancel: threading.Event) -> str:
            emit({"type": "progress", "i": 0})
            release.wait(30)
            for i in range(1, EVENTS):
                while i - seen[0] > BUFFER // 2:
                    time.sleep(0.001)
                emit({"type": "progress", "i": i})
            return "ok"

        op = hub.start("sync", "a sync", produce)
        stalled = hub.follow(op.id)
        first = await stalled.__anext__()  # subscribed, then it never asks for more while the op runs
        healthy = asyncio.ensure_future(_follow_in_order(hub, op.id, seen))
        await asyncio.sleep(0.05)
        tracemalloc.start()
        release.set()
        last = await asyncio.wait_for(healthy, 60)  # the healthy follower finishes while the other waits
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        rest = [event async for event in stalled]
        return last, seen[0], [first], rest, peak

    last, count, first, rest, peak = asyncio.run(run())
    assert count == EVENTS, "the healthy follower missed events"
    assert last == {"type": "done", "result": "ok", "error": None}
    # the stalled one: its first event, then how many it missed, then the buffer's last events in order
    assert first == [{"type": "progress", "i": 0}]
    dropped = [e for e in rest if e["type"] == "dropped"]
    assert len(dropped) == 1 and dropped[0]["count"] > 0, rest[:3]
    tail = [e["i"] for e in rest if e["type"] == "progress"]
    assert tail == list(range(EVENTS - len(tail), EVENTS)) and len(tail) < BUFFER
    assert rest[-1]["type"] == "done"
    # what the stalled follower cost: nothing beyond the shared buffer (a queue of its own held 4 MB)
    assert peak < 1_000_000, f"{peak} bytes traced while a follower stalled"


def test_a_late_follower_of_a_finished_operation_gets_the_buffer_and_the_count() -> None:
    async def run() -> list[dict[str, Any]]:
        hub = Hub(buffer=10)
        op = hub.start(
            "sync", "short", lambda emit, cancel: [emit({"type": "progress", "i": i}) for i in range(25)]
        )
        while not op.done:
            await asyncio.sleep(0.01)
        return await _follow_all(hub, op.id)

    events = asyncio.run(run())
    assert events[0] == {"type": "dropped", "count": 16}
    assert [e.get("i") for e in events[1:-1]] == list(range(16, 25))
    assert events[-1]["type"] == "done"
