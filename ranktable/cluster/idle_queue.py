"""A queue read in short polls that also says when the queue has been quiet for a while.

Log followers hand lines over through a queue and must wake regularly (to notice a close) and tell
their reader after ``idle`` quiet seconds (the panel's "no new lines" tick), both with one rule.
"""

from __future__ import annotations

import queue
from typing import Any

POLL_SECONDS = 0.5
QUIET = object()  #: a poll found nothing, and the queue has not been quiet for ``idle`` seconds yet
IDLE = object()  #: the queue has been quiet for ``idle`` seconds (then the count starts again)


class IdleQueue:
    """``get()`` returns the next item, ``QUIET`` after an empty poll, or ``IDLE`` every ``idle`` quiet
    seconds (never with ``idle`` None)."""

    def __init__(self, items: queue.Queue[Any], idle: float | None) -> None:
        self.items = items
        self.idle = idle
        self.quiet = 0.0

    def get(self) -> Any:
        try:
            item = self.items.get(timeout=POLL_SECONDS)
        except queue.Empty:
            self.quiet += POLL_SECONDS
            if self.idle is not None and self.quiet >= self.idle:
                self.quiet = 0.0
                return IDLE
            return QUIET
        self.quiet = 0.0
        return item
