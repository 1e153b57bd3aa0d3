"""IdleQueue: the log followers' one rule for polling a queue and telling their reader it went quiet."""

from __future__ import annotations

import queue
from typing import Any

from ranktable.cluster.idle_queue import IDLE, POLL_SECONDS, QUIET, IdleQueue


def test_quiet_polls_add_up_to_one_idle_tick_and_an_item_starts_the_count_again() -> None:
    items: queue.Queue[Any] = queue.Queue()
    polls = IdleQueue(items, idle=2 * POLL_SECONDS)
    assert polls.get() is QUIET
    assert polls.get() is IDLE
    assert polls.get() is QUIET  # the count starts again after a tick
    items.put("line")
    assert polls.get() == "line"
    assert polls.get() is QUIET  # an item reset the quiet time
    assert polls.get() is IDLE


def test_without_idle_an_empty_queue_is_only_ever_quiet() -> None:
    polls = IdleQueue(queue.Queue(), idle=None)
    assert [polls.get() for _ in range(3)] == [QUIET, QUIET, QUIET]
