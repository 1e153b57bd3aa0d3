"""The column-wise rank table: read, validated, planned and costed exactly as the object form is."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ranktable.choice.cost import CollectiveQuery
from ranktable.hccl import (
    RankTable,
    dump_rank_table,
    parse_rank_table,
    rank_table_to_dict,
    validate_rank_table,
)
from ranktable.hccl.columns import lazy_columns
from ranktable.hccl.io import FieldReader, read_document
from ranktable.hccl.model import Device, Server, SuperPod
from ranktable.topology.synthetic import synthetic_topology
from ranktable.usecases.layout import plan_report


def object_read(doc: dict[str, Any]) -> RankTable:
    """The careful reader's table (objects, every field checked), for comparison."""
    table = read_document(doc, FieldReader(), None)
    assert table is not None and lazy_columns(table) is None
    return table


@st.composite
def pools(draw: st.DrawFn) -> tuple[dict[str, Any], int]:
    """A platform-form table of 1-40 servers in a random pod order, version 1.0 or 1.2, plus the
    leaf count of a tree that knows most of them (some servers may be unknown to it)."""
    servers = draw(st.integers(1, 40))
    per = draw(st.sampled_from([1, 2, 4, 8]))
    version = draw(st.sampled_from(["1.0", "1.2"]))
    seed = draw(st.integers(0, 10_000))
    ids = [f"10.0.{n // 250}.{n % 250 + 1}" for n in range(servers)]
    random.Random(seed).shuffle(ids)
    table = RankTable("completed", version)
    rank = 0
    for n, server_id in enumerate(ids):
        devices = []
        for d in range(per):
            super_id = str(rank) if version == "1.2" else None
            devices.append(Device(d, rank, f"29.0.{n}.{d}", None, super_id))
            rank += 1
        table.servers.append(Server(server_id, devices, host_ip=server_id))
    if version == "1.2":
        table.super_pods = [SuperPod("0", ids)]
    return rank_table_to_dict(table), draw(st.integers(1, max(1, min(8, servers))))


@settings(max_examples=40, deadline=None)
@given(pools())
def test_columns_read_the_same_table_as_the_careful_reader(case: tuple[dict[str, Any], int]) -> None:
    doc, _ = case
    table = parse_rank_table(json.dumps(doc))
    assert lazy_columns(table) is not None
    assert table.rank_size == sum(len(s["device"]) for s in doc["server_list"])
    assert table == object_read(doc)  # builds the objects on first use
    assert lazy_columns(table) is None


@settings(max_examples=25, deadline=None)
@given(pools(), st.sampled_from([None, "tp=2,pp=2"]), st.booleans())
def test_plan_and_cost_on_columns_equal_the_object_path(
    case: tuple[dict[str, Any], int], parallel: str | None, railed: bool
) -> None:
    doc, leaves = case
    servers = len(doc["server_list"])
    per = len(doc["server_list"][0]["device"])
    rails = 2 if railed and per >= 2 and servers >= 1 else 0
    topology, _ = synthetic_topology(
        servers, leaves * 2 if rails else leaves, oversubscription=2.0, devices_per_server=8, rails=rails
    )
    query = CollectiveQuery()
    ranks = sum(len(s["device"]) for s in doc["server_list"])
    if parallel and ranks % 4 == 0:
        from ranktable.collectives.groups import parse_parallel

        query = CollectiveQuery(parallel=parse_parallel(parallel, "parallel"))
    lazy = parse_rank_table(json.dumps(doc))
    fast = plan_report(lazy, topology, query=query)
    slow = plan_report(object_read(doc), topology, query=query)
    assert lazy_columns(lazy) is not None, "planning must not build the device objects"
    assert fast.comparison.to_json() == slow.comparison.to_json()
    assert fast.result.server_order == slow.result.server_order
    assert fast.result.node_rank == slow.result.node_rank
    assert fast.result.rank_mapping == slow.result.rank_mapping
    assert dump_rank_table(fast.result.planned) == dump_rank_table(slow.result.planned)


def platform_doc(servers: int = 4, per: int = 4) -> dict[str, Any]:
    table = RankTable("completed", "1.0")
    rank = 0
    for n in range(servers):
        devices = [Device(d, rank + d, f"29.0.{n}.{d}") for d in range(per)]
        rank += per
        table.servers.append(Server(f"10.0.0.{n + 1}", devices))
    return rank_table_to_dict(table)


def test_every_defect_is_found_in_a_table_read_column_wise() -> None:
    defects = {
        "duplicate server id": lambda d: d["server_list"][1].update(server_id="10.0.0.1"),
        "empty server id": lambda d: d["server_list"][2].update(server_id=""),
        "long server id": lambda d: d["server_list"][2].update(server_id="x" * 65),
        "device id out of range": lambda d: d["server_list"][0]["device"][1].update(device_id="16"),
        "device id twice": lambda d: d["server_list"][0]["device"][1].update(device_id="0"),
        "device ip twice": lambda d: d["server_list"][3]["device"][0].update(device_ip="29.0.0.0"),
        "device ip missing": lambda d: d["server_list"][3]["device"][0].pop("device_ip"),
        "rank gap": lambda d: d["server_list"][3]["device"][3].update(rank_id="99"),
        "ranks interleave": lambda d: (
            d["server_list"][0]["device"][0].update(rank_id="4"),
            d["server_list"][1]["device"][0].update(rank_id="0"),
        ),
        "uneven device counts": lambda d: d["server_list"][3]["device"].pop(),
        "1.2 without super pods": lambda d: d.update(version="1.2"),
    }
    for name, spoil in defects.items():
        doc = platform_doc()
        spoil(doc)
        table = parse_rank_table(json.dumps(doc))
        assert lazy_columns(table) is not None, name
        expected = validate_rank_table(object_read(doc))
        assert expected, name
        assert validate_rank_table(table) == expected, name


def test_objects_changed_after_first_use_are_what_counts() -> None:
    table = parse_rank_table(json.dumps(platform_doc()))
    assert validate_rank_table(table) == []
    table.servers[0].devices[0].rank_id = 3  # builds the objects; from now on they are the table
    assert lazy_columns(table) is None
    assert [p.path for p in validate_rank_table(table)] != []


def test_an_unusual_table_is_read_into_objects() -> None:
    doc = platform_doc()
    doc["server_list"][0]["device"][0]["backup_device_ip"] = "1.2.3.4"  # unknown field: kept as extra
    table = parse_rank_table(json.dumps(doc))
    assert lazy_columns(table) is None
    assert table.servers[0].devices[0].extra == {"backup_device_ip": "1.2.3.4"}
    doc = platform_doc()
    doc["server_list"][0]["device"][0]["rank_id"] = " 0"  # not the plain form: the careful reader takes it
    assert lazy_columns(parse_rank_table(json.dumps(doc))) is None


def test_depth_limit_still_applies_to_fields_next_to_the_server_list() -> None:
    import pytest

    from ranktable.errors import InputError

    doc = platform_doc()
    deep: Any = []
    for _ in range(120):
        deep = [deep]
    doc["note"] = deep
    with pytest.raises(InputError, match="nest"):
        parse_rank_table(json.dumps(doc))


@settings(max_examples=25, deadline=None)
@given(pools())
def test_both_fast_readers_agree_with_the_careful_reader(case: tuple[dict[str, Any], int]) -> None:
    """The msgspec reader takes the platform form; numbers written as JSON numbers go through json and
    the column reader; both give the careful reader's table."""
    from ranktable.hccl.fastread import read_platform_table

    doc, _ = case
    text = json.dumps(doc)
    found = read_platform_table(text)
    assert found is not None
    top, columns = found
    assert top == {k: v for k, v in doc.items() if k != "server_list"}
    assert RankTable.from_columns(doc["status"], doc["version"], columns).servers == object_read(doc).servers
    numeric = json.loads(text)
    for server in numeric["server_list"]:
        for device in server["device"]:
            device["rank_id"], device["device_id"] = int(device["rank_id"]), int(device["device_id"])
    assert read_platform_table(json.dumps(numeric)) is None
    table = parse_rank_table(json.dumps(numeric))
    assert lazy_columns(table) is not None
    assert table == object_read(doc)
