"""HCCL rank tables: reading, writing in platform conventions, legacy conversion, every validation defect."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ranktable.errors import InputError, NotFoundError
from ranktable.hccl import (
    Device,
    RankTable,
    Server,
    SuperPod,
    check_document,
    check_file,
    check_rank_table,
    dump_rank_table,
    load_rank_table,
    parse_rank_table,
    validate_rank_table,
    write_rank_table,
)

PLATFORM_10 = {
    "status": "completed",
    "version": "1.0",
    "server_count": "2",
    "server_list": [
        {
            "server_id": "192.168.0.11",
            "host_ip": "192.168.0.11",
            "container_ip": "172.16.0.5",
            "hardware_type": "800T-A2",
            "device": [
                {"device_id": "0", "device_ip": "29.1.1.1", "device_port": "16667", "rank_id": "0"},
                {"device_id": "1", "device_ip": "29.1.1.2", "rank_id": "1"},
            ],
            "host_nic_ip": "reserve",
        },
        {
            "server_id": "192.168.0.12",
            "device": [
                {"device_id": "0", "device_ip": "29.1.2.1", "rank_id": "2"},
                {"device_id": "1", "device_ip": "29.1.2.2", "rank_id": "3"},
            ],
        },
    ],
}

PLATFORM_12 = {
    "status": "completed",
    "version": "1.2",
    "server_count": "1",
    "server_list": [
        {
            "server_id": "node_0",
            "device": [
                {
                    "device_id": "0",
                    "device_ip": "29.1.1.1",
                    "super_device_id": "37748736",
                    "rank_id": "0",
                    "backup_device_ip": "29.1.1.9",
                },
                {"device_id": "1", "device_ip": "29.1.1.2", "super_device_id": "37748737", "rank_id": "1"},
            ],
        }
    ],
    "super_pod_list": [{"super_pod_id": "0", "server_list": [{"server_id": "node_0"}]}],
}


def doc(**changes: Any) -> dict[str, Any]:
    return copy.deepcopy(PLATFORM_10) | changes


def paths(data: dict[str, Any] | str) -> list[str]:
    return [p.path for p in check_document(data).problems]


# -- reading and writing -------------------------------------------------------------------------------------


def test_reads_the_platform_1_0_form_into_ints_and_keeps_extras() -> None:
    table = parse_rank_table(json.dumps(PLATFORM_10), "jobstart_hccl.json")
    assert table.completed and table.version == "1.0" and table.rank_size == 4
    first = table.servers[0]
    assert (first.host_ip, first.container_ip, first.hardware_type) == (
        "192.168.0.11",
        "172.16.0.5",
        "800T-A2",
    )
    assert first.extra == {"host_nic_ip": "reserve"}
    assert first.devices[0] == Device(0, 0, "29.1.1.1", "16667")
    assert table.declared_server_count == 2


def test_writes_platform_conventions_string_numbers_and_field_order() -> None:
    table = parse_rank_table(PLATFORM_10)
    text = dump_rank_table(table)
    data = json.loads(text)
    assert list(data) == ["status", "version", "server_count", "server_list"]
    assert data["server_count"] == "2"
    assert list(data["server_list"][0]) == [
        "server_id",
        "host_ip",
        "container_ip",
        "hardware_type",
        "device",
        "host_nic_ip",
    ]
    assert list(data["server_list"][0]["device"][0]) == ["device_id", "device_ip", "device_port", "rank_id"]
    assert data == PLATFORM_10  # nothing lost, nothing added, every number a string


def test_round_trips_version_1_2_with_super_pods() -> None:
    table = parse_rank_table(PLATFORM_12)
    assert table.super_pods == [SuperPod("0", ["node_0"])]
    assert table.servers[0].devices[0].extra == {"backup_device_ip": "29.1.1.9"}
    data = json.loads(dump_rank_table(table))
    assert list(data) == ["status", "version", "server_count", "server_list", "super_pod_list"]
    assert list(data["server_list"][0]["device"][0]) == [
        "device_id",
        "device_ip",
        "super_device_id",
        "rank_id",
        "backup_device_ip",
    ]
    assert data == PLATFORM_12
    assert check_rank_table(table).status == "valid"


@st.composite
def tables(draw: st.DrawFn) -> RankTable:
    version = draw(st.sampled_from(["1.0", "1.2"]))
    n_servers = draw(st.integers(1, 5))
    per = draw(st.integers(1, 8))
    text = st.text(alphabet="abcdefghij0123456789.-_", min_size=1, max_size=12)
    table = RankTable("completed", version, extra=draw(st.dictionaries(st.sampled_from(["note", "x"]), text)))
    rank = 0
    for s in range(n_servers):
        server = Server(
            f"srv-{s}",
            host_ip=draw(st.none() | text),
            hardware_type=draw(st.none() | text),
            extra=draw(st.dictionaries(st.sampled_from(["host_nic_ip", "pod_name"]), text)),
        )
        for d in range(per):
            server.devices.append(
                Device(
                    d,
                    rank,
                    f"29.0.{s}.{d}",
                    draw(st.none() | st.just("16667")),
                    str(1000 + rank) if version == "1.2" else None,
                )
            )
            rank += 1
        table.servers.append(server)
    if version == "1.2":
        table.super_pods = [SuperPod("0", [s.server_id for s in table.servers])]
    return table


@settings(max_examples=60, deadline=None)
@given(tables())
def test_write_then_read_round_trips(table: RankTable) -> None:
    text = dump_rank_table(table)
    again = parse_rank_table(text)
    assert again == table
    assert dump_rank_table(again) == text
    assert check_rank_table(again).status == "valid"


def test_initializing_stub_reads_and_writes_as_the_configmap_starts() -> None:
    table = parse_rank_table('{"status": "initializing"}')
    assert table.status == "initializing" and table.servers == []
    assert json.loads(dump_rank_table(table)) == {"status": "initializing"}
    report = check_rank_table(table)
    assert report.status == "initializing" and not report.completed and not report.ok
    assert "initializing" in report.summary()


def test_load_and_atomic_write(tmp_path: Path) -> None:
    table = parse_rank_table(PLATFORM_10)
    target = write_rank_table(table, tmp_path / "jobstart_routeplan.json")
    assert load_rank_table(target) == table
    assert [p.name for p in tmp_path.iterdir()] == ["jobstart_routeplan.json"]  # no temp file left
    with pytest.raises(NotFoundError) as err:
        load_rank_table(tmp_path / "missing.json")
    assert "missing.json" in err.value.message


def test_numbers_may_also_be_plain_json_numbers() -> None:
    data = doc()
    data["server_list"][1]["device"][0]["rank_id"] = 2
    assert parse_rank_table(data).servers[1].devices[0].rank_id == 2


# -- strict parse errors -------------------------------------------------------------------------------------


def test_not_json_names_the_source_line_and_column() -> None:
    with pytest.raises(InputError) as err:
        parse_rank_table('{"status": "completed",', "cm/jobstart_hccl.json")
    assert err.value.where == "cm/jobstart_hccl.json"
    assert "not valid JSON" in err.value.reason and "line 1" in err.value.reason
    report = check_document('{"status": ', "x.json")
    assert report.status == "invalid" and report.problems[0].path == ""


def test_bad_shape_names_the_json_path() -> None:
    data = doc()
    data["server_list"][1]["device"][1]["rank_id"] = "three"
    with pytest.raises(InputError) as err:
        parse_rank_table(data, "t.json")
    assert err.value.where == "t.json: server_list[1].device[1].rank_id"
    assert "number written as a string" in err.value.reason


def test_unknown_version_is_rejected_with_its_path() -> None:
    with pytest.raises(InputError) as err:
        parse_rank_table(doc(version="2.0"), "t.json")
    assert err.value.where == "t.json: version" and "unknown version '2.0'" in err.value.reason
    assert paths(doc(version="2.0")) == ["version"]


def test_shape_problems_are_all_listed() -> None:
    data = doc()
    del data["server_list"][0]["device"][0]["device_id"]
    data["server_list"][1]["device"][1]["rank_id"] = []
    data["server_list"].append("nonsense")
    found = paths(data)
    assert "server_list[0].device[0].device_id" in found
    assert "server_list[1].device[1].rank_id" in found
    assert "server_list[2]" in found
    with pytest.raises(InputError, match="more problems"):
        parse_rank_table(data)


def test_top_level_must_be_an_object() -> None:
    assert paths("[1, 2]") == [""]


# -- validation: one test per defect, each with its path --------------------------------------------------


def test_valid_table_has_no_problems() -> None:
    report = check_document(PLATFORM_10, "t.json")
    assert report.status == "valid" and report.ok and report.problems == ()
    assert report.summary() == "t.json: valid, status completed (2 servers, 4 ranks)"


def test_duplicate_server_id() -> None:
    data = doc()
    data["server_list"][1]["server_id"] = "192.168.0.11"
    problems = check_document(data).problems
    assert [p.path for p in problems] == ["server_list[1].server_id"]
    assert "duplicate server_id" in problems[0].message and "server_list[0]" in problems[0].message


def test_server_id_longer_than_64_characters() -> None:
    data = doc()
    data["server_list"][1]["server_id"] = "x" * 65
    assert paths(data) == ["server_list[1].server_id"]


def test_duplicate_device_ip() -> None:
    data = doc()
    data["server_list"][1]["device"][1]["device_ip"] = "29.1.1.1"
    problems = check_document(data).problems
    assert [p.path for p in problems] == ["server_list[1].device[1].device_ip"]
    assert "server_list[0].device[0].device_ip" in problems[0].message


def test_rank_ids_not_exactly_0_to_n_minus_1() -> None:
    data = doc()
    data["server_list"][1]["device"][1]["rank_id"] = "9"
    problems = check_document(data).problems
    assert [p.path for p in problems] == ["server_list[1].device[1].rank_id", "server_list"]
    assert "outside 0..3" in problems[0].message and "rank ids 3 are missing" in problems[1].message


def test_duplicate_rank_id() -> None:
    data = doc()
    data["server_list"][1]["device"][1]["rank_id"] = "2"
    found = paths(data)
    assert found[0] == "server_list[1].device[1].rank_id"
    assert "server_list" in found


def test_ranks_interleaving_across_servers() -> None:
    # {0, 3} and {1, 2}: every rank present once, but server 0 is not one block
    data = doc()
    data["server_list"][0]["device"][1]["rank_id"] = "3"
    data["server_list"][1]["device"][1]["rank_id"] = "1"
    problems = check_document(data).problems
    assert [p.path for p in problems] == ["server_list[0].device"]
    assert "interleave with server_list[1]" in problems[0].message


def test_server_count_mismatch() -> None:
    problems = check_document(doc(server_count="3")).problems
    assert [p.path for p in problems] == ["server_count"]
    assert problems[0].message == "says 3 but server_list has 2 servers"


def test_device_id_out_of_range_and_duplicated_within_a_server() -> None:
    data = doc()
    data["server_list"][0]["device"][1]["device_id"] = "16"
    data["server_list"][1]["device"][1]["device_id"] = "0"
    problems = check_document(data).problems
    assert [p.path for p in problems] == [
        "server_list[0].device[1].device_id",
        "server_list[1].device[1].device_id",
    ]
    assert "outside 0..15" in problems[0].message and "appears twice" in problems[1].message


def test_unequal_device_counts_per_server() -> None:
    data = doc()
    data["server_list"].append(
        {
            "server_id": "192.168.0.13",
            "device": [
                {"device_id": "0", "device_ip": "29.1.3.1", "rank_id": "4"},
                {"device_id": "1", "device_ip": "29.1.3.2", "rank_id": "5"},
            ],
        }
    )
    data["server_count"] = "3"
    data["server_list"][1]["device"].pop()
    data["server_list"][2]["device"][0]["rank_id"] = "3"
    data["server_list"][2]["device"][1]["rank_id"] = "4"
    problems = check_document(data).problems
    assert [p.path for p in problems] == ["server_list[1].device"]
    assert "has 1 devices but most servers have 2" in problems[0].message


def test_missing_device_ip_with_more_than_one_server() -> None:
    data = doc()
    del data["server_list"][1]["device"][0]["device_ip"]
    assert paths(data) == ["server_list[1].device[0].device_ip"]
    single = doc(server_count="1", server_list=[copy.deepcopy(PLATFORM_10["server_list"][0])])
    for dev in single["server_list"][0]["device"]:
        del dev["device_ip"]
    assert paths(single) == []  # one server needs no device_ip


def test_version_1_2_without_super_device_id() -> None:
    data = copy.deepcopy(PLATFORM_12)
    data["server_list"][0]["device"][1]["super_device_id"] = ""
    assert paths(data) == ["server_list[0].device[1].super_device_id"]
    del data["super_pod_list"]
    data["server_list"][0]["device"][1]["super_device_id"] = "5"
    assert paths(data) == ["super_pod_list"]


def test_super_pod_naming_an_unknown_server() -> None:
    data = copy.deepcopy(PLATFORM_12)
    data["super_pod_list"][0]["server_list"].append({"server_id": "node_9"})
    assert paths(data) == ["super_pod_list[0].server_list[1].server_id"]


def test_unknown_status_and_empty_completed_table() -> None:
    assert paths(doc(status="done")) == ["status"]
    assert paths({"status": "completed", "version": "1.0", "server_count": "0", "server_list": []}) == [
        "server_list"
    ]


def test_every_problem_is_reported_not_just_the_first() -> None:
    data = doc(server_count="5")
    data["server_list"][1]["server_id"] = "192.168.0.11"
    data["server_list"][1]["device"][0]["device_ip"] = "29.1.1.1"
    data["server_list"][1]["device"][1]["device_id"] = "99"
    found = set(paths(data))
    assert found == {
        "server_count",
        "server_list[1].server_id",
        "server_list[1].device[0].device_ip",
        "server_list[1].device[1].device_id",
    }


def test_initializing_table_is_reported_as_initializing_not_invalid() -> None:
    data = doc(status="initializing", server_count="7")  # a completed table fell back; list is stale
    report = check_document(data)
    assert report.status == "initializing"
    assert [p.path for p in report.problems] == ["server_count"]  # kept as a hint
    assert validate_rank_table(parse_rank_table(doc(status="initializing"))) == []


# -- legacy CCE group_list -----------------------------------------------------------------------------------

LEGACY = {
    "status": "completed",
    "group_count": "1",
    "group_list": [
        {
            "group_name": "job",
            "device_count": "6",
            "instance_count": "3",
            "instance_list": [
                {
                    "pod_name": "job-worker-10",
                    "server_id": "10.0.0.10",
                    "devices": [
                        {"device_id": "0", "device_ip": "29.0.10.0"},
                        {"device_id": "1", "device_ip": "29.0.10.1"},
                    ],
                },
                {
                    "pod_name": "job-worker-2",
                    "server_id": "10.0.0.2",
                    "devices": [
                        {"device_id": "0", "device_ip": "29.0.2.0"},
                        {"device_id": "1", "device_ip": "29.0.2.1"},
                    ],
                },
                {
                    "pod_name": "job-worker-9",
                    "server_id": "10.0.0.9",
                    "devices": [
                        {"device_id": "0", "device_ip": "29.0.9.0"},
                        {"device_id": "1", "device_ip": "29.0.9.1"},
                    ],
                },
            ],
        }
    ],
}


def test_legacy_group_list_converts_to_1_0_in_the_listed_order() -> None:
    table = parse_rank_table(LEGACY, "v0.json")
    assert table.version == "1.0" and table.completed
    # HCCL numbers ranks in the listed order: no re-sort by the pod names' trailing digits
    assert [s.server_id for s in table.servers] == ["10.0.0.10", "10.0.0.2", "10.0.0.9"]
    assert [[d.rank_id for d in s.devices] for s in table.servers] == [[0, 1], [2, 3], [4, 5]]
    assert table.servers[0].devices[1].device_ip == "29.0.10.1"
    assert table.servers[1].extra == {"pod_name": "job-worker-2"}
    out = json.loads(dump_rank_table(table))
    assert out["version"] == "1.0" and out["server_count"] == "3"
    assert out["server_list"][0]["device"][0] == {"device_id": "0", "device_ip": "29.0.10.0", "rank_id": "0"}
    assert check_rank_table(table).status == "valid"


def test_legacy_shape_problems_have_paths() -> None:
    data = copy.deepcopy(LEGACY)
    del data["group_list"][0]["instance_list"][1]["server_id"]
    assert paths(data) == ["group_list[0].instance_list[1].server_id"]


def test_check_file_reads_from_disk(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps(PLATFORM_10))
    assert check_file(path).ok
    with pytest.raises(NotFoundError):
        check_file(tmp_path / "nope.json")


@settings(max_examples=40, deadline=None)
@given(st.permutations(list(range(12))))
def test_legacy_conversion_keeps_any_listed_order(order: list[int]) -> None:
    instances = [
        {
            "pod_name": f"train-worker-{i}",
            "server_id": f"10.0.1.{i}",
            "devices": [{"device_id": "0", "device_ip": f"29.1.{i}.0"}],
        }
        for i in order
    ]
    data = {
        "status": "completed",
        "group_count": "1",
        "group_list": [{"group_name": "g", "instance_list": instances}],
    }
    table = parse_rank_table(data)
    assert [s.server_id for s in table.servers] == [f"10.0.1.{i}" for i in order]
    assert [s.devices[0].rank_id for s in table.servers] == list(range(12))
