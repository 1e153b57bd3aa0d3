"""Marked ranks on the layout: the first failing rank, stragglers and hung ranks outlined on their own NPU
in both panels, a legend entry per kind, and the switch several marked ranks share highlighted."""

from __future__ import annotations

import pytest

from ranktable.render import layout_svg
from tests.core.test_render import NS, pool, render


def _cells(root, panel: str) -> dict[int, str]:  # type: ignore[no-untyped-def]
    group = root.find(f".//{NS}g[@data-panel='{panel}']")
    return {
        int(r.get("data-rank")): r.get("data-mark") for r in group.iter(f"{NS}rect") if r.get("data-mark")
    }


def _server_of(table, rank: int) -> tuple[str, int]:  # type: ignore[no-untyped-def]
    return next((s.server_id, d.device_id) for s in table.servers for d in s.devices if d.rank_id == rank)


def test_marks_outline_the_same_npu_in_both_panels_with_a_legend() -> None:
    p = pool(16, 4, 2)
    marks = {5: "first-failure", 40: "straggler", 77: "hung"}
    root = render(p, marks=marks)
    assert _cells(root, "planned") == marks
    given = _cells(root, "given")
    assert sorted(given.values()) == sorted(marks.values())
    for rank, kind in marks.items():  # the given panel marks the same physical NPU under its own rank id
        where = _server_of(p.planned, rank)
        given_rank = next(r for r, k in given.items() if k == kind)
        assert _server_of(p.given, given_rank) == where
    legend = root.find(f".//{NS}g[@class='rt-legend rt-mark-legend']")
    texts = " ".join(t.text or "" for t in legend.iter(f"{NS}text"))
    assert (
        "first failing rank: rank 5" in texts
        and "straggler: rank 40" in texts
        and "hung rank: rank 77" in texts
    )
    assert root.get("data-marks") == "first-failure:1,hung:1,straggler:1"


def test_the_leaf_several_marked_ranks_share_is_highlighted() -> None:
    p = pool(16, 4, 2)
    server = p.planned.servers[3]
    other = next(
        s
        for s in p.planned.servers
        if p.topology.leaf_of(s.server_id) != p.topology.leaf_of(server.server_id)
    )
    marks = {server.devices[0].rank_id: "straggler", server.devices[1].rank_id: "hung"}
    marks[other.devices[0].rank_id] = "first-failure"
    root = render(p, marks=marks)
    planned = root.find(f".//{NS}g[@data-panel='planned']")
    shared = {
        g.get("data-switch"): g.get("data-marks")
        for g in planned.iter(f"{NS}g")
        if "rt-shared" in (g.get("class") or "")
    }
    leaf = p.topology.leaf_of(server.server_id)
    assert shared.get(leaf) == "hung:1,straggler:1"
    assert p.topology.leaf_of(other.server_id) not in shared  # one mark alone is not "shared"
    lowest_common = [name for name in shared if name != leaf]  # the switch all three sit under, once
    assert len(lowest_common) == 1 and shared[lowest_common[0]] == "first-failure:1,hung:1,straggler:1"


def test_aggregated_leaf_groups_carry_their_marks() -> None:
    p = pool(96, 8, 2)
    rank = p.planned.servers[10].devices[2].rank_id
    root = render(p, marks={rank: "first-failure"})
    assert root.get("data-aggregated") == "true"
    marked = [g for g in root.iter(f"{NS}g") if g.get("class") == "rt-leafgroup" and g.get("data-marks")]
    planned_leaf = p.topology.leaf_of(p.planned.servers[10].server_id)
    assert {g.get("data-leaf") for g in marked} == {planned_leaf}
    assert all(g.get("data-marks") == "first-failure:1" for g in marked) and len(marked) == 2


def test_no_marks_draws_no_mark_and_an_unknown_kind_is_refused() -> None:
    p = pool(8, 2, 1)
    svg = layout_svg(p.given, p.planned, p.topology, p.comparison)
    assert "rt-mark" not in svg and "data-marks" not in svg
    with pytest.raises(ValueError, match="unknown kind 'slow'"):
        layout_svg(p.given, p.planned, p.topology, p.comparison, marks={1: "slow"})
