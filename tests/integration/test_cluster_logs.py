"""Log line timestamps order like time (the cluster adapter's resume key)."""

from __future__ import annotations


def test_timestamp_keys_order_like_time() -> None:
    from ranktable.cluster.logs import timestamp_key

    stamps = [
        "2026-11-30T02:00:00Z",
        "2026-11-30T02:00:00.000000001Z",
        "2026-11-30T02:00:00.1Z",  # Go trims trailing zeros: .1 is after .000000001
        "2026-11-30T02:00:00.123456789Z",
        "2026-11-30T10:00:01.5+08:00",  # an offset is normalised to UTC (02:00:01.5Z)
        "2026-11-30T02:00:02Z",
    ]
    assert sorted(stamps, key=timestamp_key) == stamps
    assert timestamp_key("2026-11-30T02:00:00.1Z") == timestamp_key("2026-11-30T02:00:00.100Z")


def test_the_kubelets_stamps_take_the_fast_path_with_the_same_keys() -> None:
    """Full nanosecond `Z` stamps skip the regex once their seconds were matched; the keys are the same,
    and what is not a stamp is still refused."""
    import pytest

    from ranktable.cluster.logs import _HEADS, timestamp_key

    _HEADS.clear()
    stamp = "2026-11-30T02:00:00.123456789Z"
    first = timestamp_key(stamp)  # the regex, which remembers the seconds
    assert "2026-11-30T02:00:00" in _HEADS
    assert timestamp_key(stamp) == first == ("2026-11-30T02:00:00", 123456789)
    assert timestamp_key("2026-11-30T02:00:00.000000001Z") == ("2026-11-30T02:00:00", 1)
    for bad in (
        "2026-11-30T02:00:00.12345678xZ",
        "2026-11-30T02:00:00.1234567890",
        "step 1 loss 0.5 abcdefghijk",
    ):
        with pytest.raises(ValueError):
            timestamp_key(bad)


def test_a_chunk_at_a_time_agrees_with_line_by_line() -> None:
    """The fast path (every line with the kubelet's fixed-width stamp, all past the resume point) gives the
    same lines and cursor as the exact path, repeated stamps across chunks included; anything else (an
    odd stamp, a CR, the resume window) goes line by line."""
    from ranktable.cluster.logs import Cursor, StreamStats, _Reading

    class Stream:  # what a reading uses of its LogStream
        def __init__(self) -> None:
            self.stats = StreamStats()

        def node_rank(self, pod: str) -> int:
            return 7

    stamps = [f"2026-12-02T10:00:{i // 3:02d}.000000000Z" for i in range(30)]  # runs of 3 equal stamps
    body = "".join(f"{s} step {i}\n" for i, s in enumerate(stamps)).encode()
    chunks = [body[i : i + 97] for i in range(0, len(body), 97)]
    fast = _Reading(Stream(), "p", 7, Cursor())  # type: ignore[arg-type]
    got = [line for c in chunks for line in fast.take(c) or []]
    exact_cursor = Cursor()
    exact = _Reading(Stream(), "p", 7, exact_cursor)  # type: ignore[arg-type]
    want = exact._each_line(body.decode().rstrip("\n").split("\n"))
    assert got == want and len(got) == 30
    assert fast.cursor == exact_cursor
    # resumed at stamps[10] (lines 9-11 carry it), 2 of them seen: the window goes line by line
    resumed = Cursor(stamps[10], ("2026-12-02T10:00:03", 0), 2)
    again = _Reading(Stream(), "p", 7, resumed)  # type: ignore[arg-type]
    after = [line for c in chunks for line in again.take(c) or []]
    assert [line.text for line in after] == [f"step {i}" for i in range(11, 30)]
    assert again.stream.stats.duplicates_dropped == 11
    odd = _Reading(Stream(), "p", 7, Cursor())  # type: ignore[arg-type]
    assert [line.text for line in odd.take(b"2026-12-02T10:00:00Z short\r\nno stamp\n") or []] == [
        "short",
        "no stamp",
    ]
