"""The `logs` channel's messages: a read round's per-pod groups, in order, at most ~5,000 lines a message."""

from __future__ import annotations

from ranktable.cluster.logs import LogLine
from ranktable.usecases.logs import MESSAGE_LINES, round_messages


def stamp(i: int) -> str:
    return f"2026-12-02T19:00:{i // 1000:02d}.{i % 1000:09d}Z"


def test_a_big_round_goes_as_several_messages_each_line_once_in_order() -> None:
    """1,024 pods x 13 lines (a round of the loop at 8 rounds a second) went as one 13,312-line message, one
    long task for the page; now messages of about MESSAGE_LINES, every line once, in order."""
    got = [[LogLine(f"p-{pod}", pod, stamp(i), f"{pod} {i}") for i in range(13)] for pod in range(1024)]
    since = {"p-3": ("2026-12-02T19:00:00", 5)}  # shown before a reconnect: lines 0-4 of p-3 left out
    messages = list(round_messages(got, since))
    sizes = [sum(g["n"] for g in m) for m in messages]
    assert len(messages) == 3 and max(sizes) < MESSAGE_LINES + 13
    texts = [t for m in messages for g in m for t in g["text"].split("\n")]
    expected = [f"{pod} {i}" for pod in range(1024) for i in range(13) if pod != 3 or i >= 5]
    assert texts == expected
