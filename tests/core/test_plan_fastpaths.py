"""The planning fast paths (issue 13) against straightforward reference versions of the same step:
digit columns, plain hostlists, per-key tier codes and tree order, device leaf codes, flow loads."""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ranktable.choice.cost import _device_codes
from ranktable.collectives.fabric import Fabric
from ranktable.hccl import dump_rank_table, parse_rank_table, rank_table_to_dict, write_rank_table
from ranktable.hccl.columns import lazy_columns
from ranktable.hccl.fastread import MAX_PLAIN_DIGITS, digits_column
from ranktable.hccl.fastwrite import server_list_chunks
from ranktable.plan.placement import Placement, natural_key, place
from ranktable.plan.planner import topology_order
from ranktable.topology.hostlist import HostlistError, expand_hostlist, expand_one, split_top_level
from ranktable.topology.synthetic import synthetic_topology
from tests.core.test_plan import make_table


def reference_digits(values: list[str]) -> np.ndarray | None:
    """The rule spelled out value by value."""
    ok = all(v and len(v) <= MAX_PLAIN_DIGITS and v.isascii() and v.isdigit() for v in values)
    return np.array([int(v) for v in values], dtype=np.int64) if ok else None


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="0123456789,-+ x\u0663", max_size=20), max_size=12))
def test_digit_columns_follow_the_value_by_value_rule(values: list[str]) -> None:
    got, want = digits_column(values), reference_digits(values)
    assert (got is None) == (want is None)
    if want is not None and got is not None:
        assert got.dtype == np.int64 and got.tolist() == want.tolist()


def test_digit_columns_refuse_long_empty_and_comma_values() -> None:
    assert digits_column(["1" * 18, "0"]).tolist() == [int("1" * 18), 0]  # type: ignore[union-attr]
    for bad in (["1" * 19], ["", "1"], ["1", ""], ["1,2"], ["1", "2,"], ["٣"]):
        assert digits_column(bad) is None


def reference_hostlist(expr: str) -> list[str]:
    """The general bracket-aware path, used for every expression."""
    out: dict[str, None] = {}
    for part in split_top_level(expr.strip()):
        if not part.strip():
            raise HostlistError(f"empty name in {expr.strip()!r} (two commas in a row?)")
        out.update(dict.fromkeys(expand_one(part.strip())))
    return list(out)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab1., -", max_size=30))
def test_plain_hostlists_expand_as_the_general_path_does(expr: str) -> None:
    if not expr.strip():
        assert expand_hostlist(expr) == []
        return
    try:
        want: list[str] | str = reference_hostlist(expr)
    except HostlistError as err:
        want = str(err)
    try:
        got: list[str] | str = expand_hostlist(expr)
    except HostlistError as err:
        got = str(err)
    assert got == want


def reference_codes(placement: Placement) -> np.ndarray:
    """Tier codes numbered per server key (the per-server pass the groups replace)."""
    codes = np.zeros((placement.tiers, len(placement.keys)), dtype=np.int64)
    for k in range(placement.tiers):
        seen: dict[tuple[str, ...], int] = {}
        codes[k] = [seen.setdefault(key[k], len(seen)) for key in placement.keys]
    return codes


def reference_order(placement: Placement) -> list[int]:
    """Servers by switch path (top tier first, natural names), then rank order; unknown ones last."""
    position = {server: n for n, server in enumerate(placement.rank_order)}

    def key(i: int) -> tuple[object, ...]:
        name, keys = placement.names[i], placement.keys[i]
        if name is None:
            return (1, (), position[i])
        return (0, tuple(tuple(natural_key(n) for n in k) for k in reversed(keys)), position[i])

    return sorted(range(len(placement.names)), key=key)


def same_partition(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal codes in `a` exactly where equal in `b` (the numbering itself may differ)."""
    return all(
        len(set(zip(x.tolist(), y.tolist(), strict=True))) == len(set(x.tolist())) == len(set(y.tolist()))
        for x, y in zip(a, b, strict=True)
    )


def reference_device_codes(placement: Placement, fabric: Fabric) -> list[int]:
    return [fabric.leaf_code(leaf) for leaves in placement.device_leaf for leaf in leaves]


@st.composite
def fabrics(draw: st.DrawFn) -> tuple[Placement, Fabric]:
    """A 1-3 tier tree (rail-optimised or not), a table in random order with some unknown servers."""
    leaves = draw(st.integers(1, 8))
    spines = draw(st.integers(0, leaves))
    cores = draw(st.integers(0, spines)) if spines else 0
    rails = draw(st.sampled_from([0, 1, 2])) if leaves % 2 == 0 else 0
    servers = draw(st.integers(max(1, leaves // max(rails, 1)), 30))
    topo, ids = synthetic_topology(servers, leaves, spines, cores, rails=rails)
    ids += [f"192.168.9.{n}" for n in range(draw(st.integers(0, 3)))]
    random.Random(draw(st.integers(0, 1000))).shuffle(ids)
    table = make_table(ids)
    return place(table, topo), Fabric(topo, 8, 20.0)


@settings(max_examples=60, deadline=None)
@given(fabrics())
def test_grouped_passes_equal_the_per_server_references(case: tuple[Placement, Fabric]) -> None:
    placement, fabric = case
    assert same_partition(placement.tier_codes(), reference_codes(placement))
    assert topology_order(placement) == reference_order(placement)
    assert _device_codes(placement, fabric).tolist() == reference_device_codes(placement, fabric)
    derived = Placement(
        placement.tiers, placement.names, placement.leaves, placement.keys, placement.rank_order
    )
    assert topology_order(derived) == topology_order(placement)  # groups derived from keys when not given
    assert same_partition(derived.tier_codes(), placement.tier_codes())


def reference_factor(fabric: Fabric, src: np.ndarray, dst: np.ndarray, weight: np.ndarray | None) -> float:
    """The slowest flow's share, flow by flow (the per-flow array the load no longer builds)."""
    factor = np.ones(src.size)
    for k in range(fabric.tiers):
        a, b = fabric.anc[k, src], fabric.anc[k, dst]
        cross = (a != b) & (a >= 0) & (b >= 0)
        if not cross.any():
            continue
        w = None if weight is None else weight[cross]
        up = np.bincount(a[cross], weights=w, minlength=len(fabric.names))
        down = np.bincount(b[cross], weights=w, minlength=len(fabric.names))
        share = np.minimum(fabric.lanes / np.maximum(up, 1), fabric.lanes / np.maximum(down, 1))
        factor[cross] = np.minimum(factor[cross], np.minimum(share[a[cross]], share[b[cross]]))
    return float(min(1.0, factor.min()))


@pytest.mark.parametrize("seed", range(20))
def test_the_slowest_flow_equals_the_flow_by_flow_minimum(seed: int) -> None:
    rnd = np.random.default_rng(seed)
    topo, _ = synthetic_topology(40, 8, 3, 1, oversubscription=float(rnd.choice([1.0, 2.0, 3.5])))
    fabric = Fabric(topo, 8, 20.0)
    count = int(rnd.integers(1, 200))
    codes = len(fabric.names) + 1  # the last code is the unknown leaf
    src, dst = rnd.integers(0, codes, count), rnd.integers(0, codes, count)
    weight = None if seed % 2 else rnd.integers(1, 9, count).astype(np.float64)
    assert fabric.load(src, dst, weight).factor == reference_factor(fabric, src, dst, weight)


TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)


ASCII = st.text(alphabet=st.characters(codec="ascii"), max_size=6)  # quotes, backslashes, controls too


@st.composite
def platform_docs(draw: st.DrawFn, regular: bool = False) -> dict[str, Any]:
    """Platform-form tables (read column-wise) with optional fields present, absent or mixed, any text
    (quotes, control characters, non-ASCII), servers without devices, SuperPoDs and unknown top fields.
    `regular`: every server holds the same number (1-4) of devices, ids and ranks of any width, text
    mostly ASCII (the byte-matrix writer's case)."""
    servers = []
    rank = draw(st.integers(0, 10**7)) if regular else 0
    per = draw(st.integers(1, 4))
    text = st.one_of(ASCII, ASCII, TEXT) if regular else TEXT
    for n in range(draw(st.integers(1, 5))):
        server: dict[str, Any] = {"server_id": draw(text) + str(n)}
        for key in ("host_ip", "container_ip", "hardware_type"):
            if draw(st.booleans()):
                server[key] = draw(text)
        devices = []
        for d in range(per if regular else draw(st.integers(0, 3))):
            device: dict[str, Any] = {"device_id": str(draw(st.integers(0, 20_000)) if regular else d)}
            for key in ("device_ip", "device_port", "super_device_id"):
                if draw(st.booleans()):
                    device[key] = draw(text)
            device["rank_id"] = str(rank)
            rank += 1
            devices.append(device)
        server["device"] = devices
        servers.append(server)
    doc: dict[str, Any] = {"status": draw(st.sampled_from(["completed", "initializing"]))}
    doc["version"] = draw(st.sampled_from(["1.0", "1.2"]))
    doc["server_count"] = str(len(servers))
    doc["server_list"] = servers
    if draw(st.booleans()):
        doc["super_pod_list"] = [
            {"super_pod_id": "0", "server_list": [{"server_id": servers[0]["server_id"]}]}
        ]
    return doc


@settings(max_examples=150, deadline=None)
@given(platform_docs())
def test_a_column_wise_table_is_written_as_json_dumps_writes_its_objects(doc: dict[str, Any]) -> None:
    table = parse_rank_table(json.dumps(doc))
    assert lazy_columns(table) is not None
    fast = dump_rank_table(table)
    reference = json.dumps(rank_table_to_dict(table), indent=4, ensure_ascii=False) + "\n"  # objects now
    assert lazy_columns(table) is None
    assert fast == reference


@settings(max_examples=200, deadline=None)
@given(platform_docs(regular=True), st.integers(1, 3))
def test_a_regular_table_is_written_byte_for_byte_in_blocks_and_to_a_file(
    doc: dict[str, Any], block: int
) -> None:
    table = parse_rank_table(json.dumps(doc))
    columns = lazy_columns(table)
    assert columns is not None
    reference = json.dumps(
        rank_table_to_dict(parse_rank_table(json.dumps(doc))), indent=4, ensure_ascii=False
    )
    listed = json.dumps(json.loads(reference)["server_list"], indent=4, ensure_ascii=False)
    chunks = list(server_list_chunks(columns, block))  # blocks of 1-3 servers: the joins at block edges
    # ASCII tables take the byte-matrix path (one chunk per block), others the %-format one (one chunk)
    assert len(chunks) == (-(-len(doc["server_list"]) // block) if reference.isascii() else 1)
    assert b"".join(chunks).decode() == listed.replace("\n", "\n    ")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp, "planned.json")
        write_rank_table(table, path)
        assert path.read_bytes() == (reference + "\n").encode()
    assert dump_rank_table(table) == reference + "\n"


@pytest.mark.parametrize("rails", [0, 2])
def test_uplink_lanes_count_ports_as_the_server_by_server_sum(rails: int) -> None:
    topo, _ = synthetic_topology(30, 8, 2, rails=rails, oversubscription=3.0)
    topo.attach_server("10.9.9.9", "leaf-00")  # a whole server next to the rails
    fabric = Fabric(topo, 8, 20.0)
    ports = np.zeros(len(fabric.names))
    railed = {server for server, _ in topo.device_leaf}
    for leaf in topo.device_leaf.values():
        ports[fabric.code[leaf]] += 1
    for server, leaf in topo.server_leaf.items():
        if server not in railed:
            ports[fabric.code[leaf]] += 8
    leaves = [fabric.code[name] for name in topo.switches_at(1)]
    assert fabric.lanes[leaves].tolist() == (ports[leaves] / 3.0).tolist()
