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
