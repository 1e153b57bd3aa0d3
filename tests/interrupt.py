"""Ctrl-C for a test's child process, as a terminal user's Ctrl-C reaches a command.

A runner started as a background job of a non-interactive shell (`make test &`, CI scripts) has SIGINT
ignored, and its children inherit that: Python then never installs its KeyboardInterrupt handler, and a
SIGINT sent by the test is lost (a `job logs -f` followed on until the test's timeout)."""

from __future__ import annotations

import signal
from typing import Any


def _take_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def interruptible() -> dict[str, Any]:
    """`Popen` keyword arguments: the child starts with SIGINT at its default, whatever the runner's."""
    return {"preexec_fn": _take_sigint}
