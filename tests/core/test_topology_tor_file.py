"""ranktable_tor.json: gzip + base64 of per-device tor_ip; rail-optimised servers attach per device."""

from __future__ import annotations

import base64
import copy
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from ranktable.topology import decode_tor_file, encode_tor_file, load_topology, topology_from_tor_file
from ranktable.topology.tor_file import _fast_tor_topology, load_tor_file, tor_json_bytes
from tests.core.test_topology_helpers import DATA, raises_input_error


def plain() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / "ranktable_tor.plain.json").read_text())
    return data


def test_sample_decodes_to_the_plain_document() -> None:
    assert decode_tor_file((DATA / "ranktable_tor.json").read_text()) == plain()


def test_sample_rails_and_aliases() -> None:
    topo = load_topology(DATA / "ranktable_tor.json")
    assert topo.tier_count == 1
    assert topo.leaves_of("192.168.0.11") == ("10.201.0.1", "10.201.0.2")
    assert topo.leaf_of("192.168.0.11", 5) == "10.201.0.2"
    assert topo.leaf_of("192.168.0.13", 0) == "10.201.0.3"
    assert topo.leaves_of("192.168.0.14") == ("10.201.0.5",)  # one ToR: attached whole
    assert ("192.168.0.14", 0) not in topo.device_leaf
    assert topo.resolve("volcano-job-worker-2") == "192.168.0.13"


def test_raw_gzip_and_plain_json_files(tmp_path: Path) -> None:
    raw = tmp_path / "tor.gz"
    raw.write_bytes(gzip.compress(json.dumps(plain()).encode()))
    assert load_topology(raw).device_leaf == load_topology(DATA / "ranktable_tor.json").device_leaf
    assert (
        topology_from_tor_file(encode_tor_file(plain())).server_leaf
        == topology_from_tor_file(plain()).server_leaf
    )


@pytest.mark.parametrize(
    ("fn", "fragments"),
    [
        (
            lambda d: d["server_list"][2]["device"][3].pop("tor_ip"),
            ["server_list[2].device[3].tor_ip", "required"],
        ),
        (lambda d: d.update(server_count="5"), ["server_count", "says 5 but server_list has 4"]),
        (
            lambda d: d["server_list"][1]["device"][1].update(device_id="0"),
            ["server_list[1].device[1].device_id", "device 0 is listed twice"],
        ),
        (
            lambda d: d["server_list"][3].update(server_id="192.168.0.11"),
            ["server_list[3].server_id", "listed twice"],
        ),
        (lambda d: d["server_list"][0].update(device=[]), ["server_list[0].device", "lists no device"]),
        (lambda d: d["server_list"][0].update(device="x"), ["server_list[0].device", "expected a list"]),
        (
            lambda d: d["server_list"][0]["device"].__setitem__(2, "x"),
            ["server_list[0].device[2]", "expected a mapping"],
        ),
        (
            lambda d: d["server_list"][0]["device"][0].update(device_id="x"),
            ["device[0].device_id", "integer"],
        ),
        (lambda d: d.update(server_list=[], status="initializing"), ["status", "is initializing"]),
    ],
)
def test_malformed_tor_file(fn: Any, fragments: list[str]) -> None:
    data = copy.deepcopy(plain())
    fn(data)
    text = encode_tor_file(data)
    raises_input_error(lambda: topology_from_tor_file(text, "tor.json"), "tor.json: ", *fragments)
    # the fast (typed) reader declines each of these, so the careful reader's error is the one given
    assert _fast_tor_topology(tor_json_bytes(text), "tor.json") is None
    raises_input_error(lambda: load_tor_file(text, "tor.json"), "tor.json: ", *fragments)


def _same(a: Any, b: Any) -> bool:
    fields = ("server_leaf", "device_leaf", "aliases", "tier_names", "source", "warnings")
    return all(getattr(a, f) == getattr(b, f) for f in fields) and list(a.switches.items()) == list(
        b.switches.items()
    )


@pytest.mark.parametrize(
    "fn",
    [
        lambda d: None,
        lambda d: [s.pop("pod_name", None) for s in d["server_list"]],
        lambda d: d.pop("server_count"),
        lambda d: d["server_list"][0]["device"].reverse(),  # a rail-optimised server listed backwards
    ],
)
def test_the_fast_reader_builds_what_the_careful_one_builds(fn: Any) -> None:
    data = copy.deepcopy(plain())
    fn(data)
    text = encode_tor_file(data)
    fast = _fast_tor_topology(tor_json_bytes(text), "t")
    assert fast is not None
    assert _same(fast, topology_from_tor_file(data, "t"))


@pytest.mark.parametrize(
    "fn",
    [
        lambda d: d["server_list"][1]["device"][1].update(device_id="01"),  # 1 twice, written apart
        lambda d: d["server_list"][1]["device"][1].update(device_id=1),  # a JSON number: careful reader
        lambda d: d["server_list"][1].update(pod_name=d["server_list"][0]["pod_name"]),
        lambda d: d["server_list"][1]["device"][0].update(tor_ip=" 10.201.0.9 "),
    ],
)
def test_unusual_entries_go_to_the_careful_reader(fn: Any) -> None:
    data = copy.deepcopy(plain())
    fn(data)
    text = encode_tor_file(data)
    assert _fast_tor_topology(tor_json_bytes(text), "t") is None
    try:
        expected = topology_from_tor_file(data, "t")
    except Exception as exc:  # the same error from the entry point
        raises_input_error(lambda: load_tor_file(text, "t"), str(exc))
    else:
        assert _same(load_tor_file(text, "t"), expected)


def test_bad_encodings() -> None:
    raises_input_error(lambda: decode_tor_file("H4sI!!!!", "t"), "t: ", "neither JSON nor base64")
    raises_input_error(lambda: decode_tor_file("H4sIAAAA", "t"), "t: ", "cannot decompress")
    not_gzip = base64.b64encode(b"hello world").decode()
    raises_input_error(lambda: decode_tor_file(not_gzip, "t"), "t: ", "not gzip data")
    bad_json = base64.b64encode(gzip.compress(b"{nope")).decode()
    raises_input_error(lambda: decode_tor_file(bad_json, "t"), "t", "not valid JSON")
