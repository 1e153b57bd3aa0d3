"""`Hub.iterate`, the thread-to-event-loop bridge of the stream channels: a backlog goes out in full
batches without the batching wait, and a subscriber that does not keep up holds its producer back."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Iterator

from ranktable.server_ext.hub import HANDOVER_SLOTS, Hub, StopEvent


def test_a_backlog_goes_in_full_batches_without_the_batch_wait() -> None:
    """40 lists of 1,000 lines ready at once, batches of at most 5,000 lines every 0.5 s: the wait applies
    only to a batch that is not full, so the 40,000 lines take well under 8 x 0.5 s."""

    def make(stop: StopEvent) -> Iterator[list[int]]:
        for i in range(40):
            yield list(range(i * 1000, (i + 1) * 1000))

    async def run() -> tuple[list[list[int]], float]:
        hub = Hub()
        await asyncio.sleep(0)
        started = time.monotonic()
        got = [batch async for batch in hub.iterate(make, batch_seconds=0.5, max_batch=5000, lists=True)]
        return got, time.monotonic() - started

    batches, took = asyncio.run(run())
    assert list(itertools.chain.from_iterable(batches)) == list(range(40_000))
    assert all(len(b) <= 5000 for b in batches)
    assert took < 2.0, f"{took:.2f} s: the backlog waited between full batches"


def test_a_batch_is_capped_by_the_items_weight() -> None:
    """Groups of 500 lines (a pod's lines in the `logs` channel) weighed by their lines: a backlog of
    40 rounds of 2 groups goes in batches of at most 5,000 lines (10 groups), not 5,000 groups."""

    def make(stop: StopEvent) -> Iterator[list[list[int]]]:
        for i in range(80):
            yield [list(range(i * 1000, i * 1000 + 500)), list(range(i * 1000 + 500, (i + 1) * 1000))]

    async def run() -> list[list[list[int]]]:
        hub = Hub()
        return [batch async for batch in hub.iterate(make, max_batch=5000, lists=True, weight=len)]

    batches = asyncio.run(run())
    assert list(itertools.chain.from_iterable(itertools.chain.from_iterable(batches))) == list(range(80_000))
    assert max(sum(map(len, b)) for b in batches) <= 5000 + 1000  # a round may top the cap up once
    assert len(batches) >= 80_000 // 6000


def test_a_slow_subscriber_holds_the_producer_back() -> None:
    produced = 0
    ended = threading.Event()

    def make(stop: StopEvent) -> Iterator[list[int]]:
        nonlocal produced
        try:
            while not stop.is_set():
                produced += 1
                yield [produced]
        finally:
            ended.set()

    async def run() -> None:
        hub = Hub()
        source = hub.iterate(make, lists=True, max_batch=1)
        await source.__anext__()
        await asyncio.sleep(1.0)  # the subscriber is busy: the producer must wait, not run ahead
        assert produced <= HANDOVER_SLOTS + 2, produced
        for _ in range(10):
            await source.__anext__()
        await asyncio.sleep(0.3)
        assert produced <= HANDOVER_SLOTS + 13, produced
        await source.aclose()

    asyncio.run(run())
    assert ended.wait(2), "the producer did not stop with its subscriber"
