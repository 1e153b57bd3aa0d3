"""A server-side policy that runs a pass every few seconds on a daemon thread (the run archiver's sweep,
auto-resume's check): one loop, so each outlives a failing pass the same way and stops at once."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable


def poll_in_background(
    name: str,
    stop: threading.Event,
    seconds: float,
    one_pass: Callable[[], object],
    log: logging.Logger,
    failed: str,
) -> threading.Thread:
    """Start daemon thread `name` running `one_pass` now, then every `seconds`, until `stop` is set. A pass
    that raises is logged (`failed`) and the next one still runs: an API hiccup, a half-deleted job or a
    bug must not end the policy for the server's lifetime."""

    def loop() -> None:
        while not stop.is_set():
            try:
                one_pass()
            except Exception:
                log.exception(failed)
            stop.wait(seconds)

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    return thread
