"""4,096 servers: the picture aggregates per leaf, stays under 5 MB and still adds up to the cost figures."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from ranktable.render import layout_svg
from tests.core.test_render import NS, assert_edges_match, panel, pool


def test_4096_servers_render_small_aggregated_and_consistent() -> None:
    p = pool(4096, 128, 8, seed=11)
    svg = layout_svg(p.given, p.planned, p.topology, p.comparison)
    assert len(svg.encode()) < 5 * 1024 * 1024
    root = ET.fromstring(svg)
    assert root.tag == f"{NS}svg" and root.get("data-aggregated") == "true"
    assert float(root.get("width", "0")) < 4000  # leaves stack inside spine columns, not one long row
    assert not [t for t in root.iter(f"{NS}text") if t.get("class") == "rt-rank"]
    for name in ("given", "planned"):
        groups = [g for g in panel(root, name).iter(f"{NS}g") if g.get("class") == "rt-leafgroup"]
        assert len(groups) == 128
        assert sum(int(g.get("data-servers", "0")) for g in groups) == 4096
        switches = [g for g in panel(root, name).iter(f"{NS}g") if g.get("class") == "rt-switch"]
        assert {g.get("data-tier") for g in switches} == {"2"}  # columns are the 8 spines
        assert len(switches) == 8
    assert_edges_match(root, p, tag="rect", cls="rt-summary")
    links = [el for el in panel(root, "given").iter(f"{NS}path") if "rt-link" in el.get("class", "")]
    assert 0 < len(links) <= 400
