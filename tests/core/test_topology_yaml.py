"""ranktable's own YAML format: the sample, errors with field paths, generate, and dump/load round trips."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ranktable.topology import Switch, Topology, dump_topology_yaml, load_topology, topology_from_yaml
from tests.core.test_topology_helpers import DATA, raises_input_error


def sample() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((DATA / "topology.yaml").read_text())
    return data


def test_sample() -> None:
    topo = load_topology(DATA / "topology.yaml")
    assert topo.switches["leaf0"] == Switch("leaf0", 1, "spine0", 400.0, 2.0)
    assert topo.switches_at(2) == ["spine0", "spine1"]
    assert topo.leaf_of("192.168.0.13") == "leaf1"
    assert topo.resolve("node-02") == "192.168.0.12"
    assert topo.leaves_of("192.168.0.17") == ("leaf2", "leaf3")
    assert topo.leaf_of("192.168.0.17", 6) == "leaf3"
    assert topo.slice_ids == {"192.168.0.15": 0, "192.168.0.16": 1}
    assert topo.tier_name(2) == "spine"


def test_generate_compact_form() -> None:
    data = {
        "kind": "RanktableTopology",
        "generate": {"servers": 64, "leaves": 8, "spines": 2, "ip_base": "10.1.0.1"},
    }
    topo = topology_from_yaml(data, "gen.yaml")
    assert len(topo.server_leaf) == 64 and len(topo.switches_at(1)) == 8 and len(topo.switches_at(2)) == 2
    assert topo.leaf_of("10.1.0.1") == "leaf-00" and topo.leaf_of("10.1.0.64") == "leaf-07"
    assert topo.source == "gen.yaml"
    bad = {"generate": {"servers": 4, "leaves": 8}}
    raises_input_error(lambda: topology_from_yaml(bad, "g.yaml"), "g.yaml: generate", "leave leaves empty")


def mutate(fn: Any) -> dict[str, Any]:
    data = copy.deepcopy(sample())
    fn(data)
    return data


@pytest.mark.parametrize(
    ("fn", "fragments"),
    [
        (
            lambda d: d["switches"][2].update(parent="spine9"),
            ["switches[2].parent", "'spine9' is not listed"],
        ),
        (lambda d: d["switches"][3].update(tier=2), ["switches[3].parent", "parent 'spine0' is tier 2"]),
        (lambda d: d["servers"][1].update(leaf="leafX"), ["servers[1].leaf", "'leafX' is not listed"]),
        (lambda d: d["servers"][1].update(leaf="spine0"), ["servers[1].leaf", "servers attach to tier-1"]),
        (lambda d: d["servers"][2].pop("leaf"), ["servers[2]", "needs `leaf`"]),
        (lambda d: d["servers"][3].update(name="192.168.0.11"), ["servers[3].name", "listed twice"]),
        (lambda d: d["switches"][1].update(name="spine0"), ["switches[1].name", "listed twice"]),
        (lambda d: d["switches"][0].update(tier="two"), ["switches[0].tier", "expected an integer"]),
        (
            lambda d: d["switches"][2].update(oversubscription=0),
            ["switches[2].oversubscription", "greater than 0"],
        ),
        (lambda d: d["switches"][2].update(uplink="400"), ["switches[2].uplink", "unknown field"]),
        (
            lambda d: d["servers"][0].update(aliases=["node-02"]),
            ["servers[1].aliases[0]", "names two servers"],
        ),
        (
            lambda d: d["servers"][0].update(aliases=["192.168.0.12"]),
            ["servers[1].name", "already an alias of '192.168.0.11'"],
        ),
        (
            lambda d: d["servers"][6]["leaves"].update({"x": "leaf2"}),
            ["servers[6].leaves.x", "expected an integer, got 'x'"],
        ),
        (lambda d: d.update(kind="Topology"), ["kind", "expected 'RanktableTopology'"]),
        (lambda d: d.pop("switches"), ["switches", "required"]),
        (lambda d: d.update(generate={"servers": 2, "leaves": 1}), ["generate", "replaces `switches`"]),
    ],
)
def test_malformed_yaml(fn: Any, fragments: list[str]) -> None:
    data = mutate(fn)
    raises_input_error(lambda: topology_from_yaml(data, "topo.yaml"), "topo.yaml: ", *fragments)


def test_broken_yaml_text_names_the_line(tmp_path: Any) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("kind: RanktableTopology\nswitches:\n  - {name: a, tier: 1\nservers: []\n")
    raises_input_error(lambda: load_topology(path, "yaml"), f"{path}:", "not valid YAML")


# -- round trip ---------------------------------------------------------------------------------
NAME = st.one_of(
    st.from_regex(r"[a-z][a-z0-9.\-]{0,8}", fullmatch=True),
    st.sampled_from(["null", "yes", "on", "1.5", "010", "192.168.0.1", "true", "~"]),
)


@st.composite
def trees(draw: st.DrawFn) -> Topology:
    names = draw(st.lists(NAME, min_size=2, max_size=40, unique=True))
    tiers = draw(st.integers(1, 3))
    topo = Topology(source="hypothesis")
    pool = iter(names)
    above: list[str] = []
    for tier in range(tiers, 0, -1):
        count = draw(st.integers(1, 3))
        current: list[str] = []
        for _ in range(count):
            name = next(pool, None)
            if name is None:
                break
            parent = draw(st.sampled_from(above)) if above else None
            uplink = draw(st.one_of(st.none(), st.floats(1, 1000, allow_nan=False)))
            over = draw(st.sampled_from([1.0, 2.0, 1.5, 3.0]))
            topo.add_switch(Switch(name, tier, parent, uplink, over))
            current.append(name)
        if not current:
            break
        above = current
    leaves = topo.switches_at(1)
    if not leaves:
        return topo
    for name in pool:
        if draw(st.booleans()):
            topo.attach_server(name, draw(st.sampled_from(leaves)))
        else:
            for device in sorted(draw(st.sets(st.integers(0, 15), min_size=1, max_size=4))):
                topo.attach_device(name, device, draw(st.sampled_from(leaves)))
            if draw(st.booleans()):
                topo.server_leaf[name] = draw(st.sampled_from(leaves))
        if draw(st.booleans()):
            topo.aliases[f"alias-of-{name}"] = name
        if draw(st.booleans()):
            topo.slice_ids[name] = draw(st.integers(0, 64))
    if draw(st.booleans()):
        topo.tier_names = {t: f"tier-{t}-name" for t in draw(st.sets(st.integers(1, 4), max_size=3))}
    return topo


@settings(max_examples=40, deadline=None)
@given(trees())
def test_yaml_dump_load_round_trips(topo: Topology) -> None:
    topo.validate()
    text = dump_topology_yaml(topo)
    back = topology_from_yaml(yaml.safe_load(text), "again.yaml")
    assert back.switches == topo.switches
    assert back.server_leaf == topo.server_leaf
    assert back.device_leaf == topo.device_leaf
    assert back.aliases == topo.aliases
    assert back.slice_ids == topo.slice_ids
    assert back.tier_names == topo.tier_names


def test_model_extras_and_alias_checks() -> None:
    topo = load_topology(DATA / "topology.yaml")
    assert topo.aliases_of("192.168.0.11") == ["node-01"]
    assert topo.servers() == sorted(topo.server_leaf)
    by_leaf = topo.servers_by_leaf()
    assert by_leaf == {leaf: topo.servers_of(leaf) for leaf in topo.switches_at(1)}
    assert by_leaf["leaf3"] == ["192.168.0.17"]  # reached only through its devices
    assert topo.tier_name(3) == "core" and topo.tier_name(7) == "tier 7"
    raises_input_error(lambda: topo.register_alias("node-01", "192.168.0.12"), "names two servers")
    raises_input_error(lambda: topo.register_alias("192.168.0.13", "192.168.0.12"), "name of another server")
    topo.aliases["ghost"] = "10.9.9.9"
    raises_input_error(topo.validate, "alias 'ghost' points to unknown server '10.9.9.9'")
    data = topo.to_yaml_data()
    assert data["kind"] == "RanktableTopology" and data["tiers"] == ["leaf", "spine"]
    assert [s["name"] for s in data["switches"][:2]] == ["spine0", "spine1"]  # top tier first
