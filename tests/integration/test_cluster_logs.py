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
