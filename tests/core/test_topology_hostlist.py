"""Slurm hostlist expansion follows Slurm's rules: padding, ranges, lists, several bracket groups."""

from __future__ import annotations

import re

import pytest

from ranktable.topology.hostlist import HostlistError, expand_hostlist


@pytest.mark.parametrize(
    ("expr", "hosts"),
    [
        ("tux0", ["tux0"]),
        ("tux[0-3]", ["tux0", "tux1", "tux2", "tux3"]),
        ("n[08-11]", ["n08", "n09", "n10", "n11"]),
        ("tux[0-3,7]", ["tux0", "tux1", "tux2", "tux3", "tux7"]),
        ("tux[0-1],tux5", ["tux0", "tux1", "tux5"]),
        ("r[1-2]-n[01-02]", ["r1-n01", "r1-n02", "r2-n01", "r2-n02"]),
        ("a[1,3]b[7-8].x", ["a1b7.x", "a1b8.x", "a3b7.x", "a3b8.x"]),
        ("n[1-2],n[2-3]", ["n1", "n2", "n3"]),
        ("n[001-003]", ["n001", "n002", "n003"]),
        ("", []),
    ],
)
def test_expands(expr: str, hosts: list[str]) -> None:
    assert expand_hostlist(expr) == hosts


def test_large_range_keeps_order_and_width() -> None:
    hosts = expand_hostlist("node[0001-1024]")
    assert len(hosts) == 1024
    assert hosts[0] == "node0001" and hosts[-1] == "node1024"
    assert hosts == sorted(hosts)


@pytest.mark.parametrize(
    ("expr", "reason"),
    [
        ("tux[0-3", "'[' without ']'"),
        ("tux0-3]", "']' without '['"),
        ("tux[3-1]", "runs backwards"),
        ("tux[a-b]", "bad range"),
        ("tux[]", "empty brackets"),
        ("tux[[1]]", "nested"),
        ("tux1,,tux2", "empty name"),
    ],
)
def test_rejects_malformed(expr: str, reason: str) -> None:
    with pytest.raises(HostlistError, match=re.escape(reason)):
        expand_hostlist(expr)
