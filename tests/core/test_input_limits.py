"""Every untrusted file has a limit named in its error: size, decompressed size, nesting, aliases, counts."""

from __future__ import annotations

import gzip
import io
import json
import os
import time
import zlib
from pathlib import Path

import pytest

from ranktable.errors import InputError, RanktableError
from ranktable.hccl.io import load_rank_table, parse_rank_table
from ranktable.hccl.validate import check_file
from ranktable.limits import (
    MAX_NESTING,
    brief,
    check_expanded,
    gunzip,
    load_yaml_all,
    read_bytes,
    read_stream,
)
from ranktable.topology import load_topology
from ranktable.topology.synthetic import synthetic_topology
from ranktable.topology.tor_file import decode_tor_file, encode_tor_file


def laughs(levels: int = 9, kind: str = "RanktableTopology") -> str:
    """A 'billion laughs' YAML: each level lists the previous one 10 times (10**levels strings)."""
    lines = [f"kind: {kind}", 'l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        refs = ",".join([f"*l{i - 1}"] * 10)
        lines.append(f"l{i}: &l{i} [{refs}]")
    lines.append(f"servers: *l{levels - 1}")
    return "\n".join(lines) + "\n"


def test_an_alias_bomb_is_refused_quickly_with_a_short_message(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(laughs())
    assert bomb.stat().st_size < 600
    started = time.monotonic()
    with pytest.raises(InputError) as err:
        load_topology(bomb, "yaml")
    assert time.monotonic() - started < 2
    message = str(err.value)
    assert len(message) < 400
    assert "bomb.yaml" in message and "5,000,000 values" in message and "alias" in message


def test_a_value_shared_by_aliases_is_quoted_briefly_in_an_error(tmp_path: Path) -> None:
    doc = tmp_path / "topo.yaml"
    inner = '&l0 ["' + "lol" * 50 + '", "lol", "lol", "lol", "lol", "lol"]'
    doc.write_text(
        "kind: RanktableTopology\ngenerate:\n  leaves: 1\n"
        f"  servers: [&l1 [{inner}, *l0, *l0, *l0], *l1, *l1, *l1, *l1]\n"
    )
    with pytest.raises(InputError) as err:
        load_topology(doc, "yaml")
    assert "generate.servers: expected an integer" in str(err.value)
    assert len(str(err.value)) < 300


def test_a_self_referencing_alias_is_refused() -> None:
    with pytest.raises(InputError, match="refers to a value that contains it"):
        load_yaml_all("a: &a [1, *a]\n", "cycle.yaml")


def test_yaml_without_aliases_skips_the_alias_walk_but_not_the_depth_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No `*` in the text: nothing is shared, so only the depth is checked (the cheaper walk, #28)."""

    def walked(*args: object, **kwargs: object) -> None:
        raise AssertionError("the alias walk ran on a document without aliases")

    monkeypatch.setattr("ranktable.limits.check_expanded", walked)
    assert load_yaml_all("a: [1, {b: 2}]\n---\nc: d\n", "plain.yaml") == [{"a": [1, {"b": 2}]}, {"c": "d"}]
    deep = "[" * (MAX_NESTING + 1) + "]" * (MAX_NESTING + 1)
    with pytest.raises(InputError, match=f"limit of {MAX_NESTING} levels"):
        load_yaml_all(deep, "deep.yaml")
    with pytest.raises(AssertionError, match="alias walk"):
        load_yaml_all("a: &x [1]\nb: *x\n", "aliased.yaml")  # an alias still takes the full walk


def test_generated_topologies_are_bounded(tmp_path: Path) -> None:
    doc = tmp_path / "huge.yaml"
    doc.write_text("kind: RanktableTopology\ngenerate: {servers: 100000000, leaves: 1000}\n")
    started = time.monotonic()
    with pytest.raises(InputError) as err:
        load_topology(doc)
    assert time.monotonic() - started < 1
    assert "generate.servers" in str(err.value) and "65,536" in str(err.value)
    with pytest.raises(InputError, match="65,536"):
        synthetic_topology(100_000_000, 1000)
    _topology, ids = synthetic_topology(65_536, 256, 16, node_names=False)
    assert len(ids) == 65_536


def test_a_gzip_bomb_tor_file_is_refused_by_decompressed_size() -> None:
    packer = zlib.compressobj(9, zlib.DEFLATED, 31, 9, zlib.Z_RLE)  # 31: a gzip header
    chunk = b" " * (1024 * 1024)
    bomb = b"".join(packer.compress(chunk) for _ in range(300)) + packer.flush()
    assert len(bomb) < 400_000
    with pytest.raises(InputError, match="decompresses to more than the 256 MiB limit"):
        decode_tor_file(bomb, "ranktable_tor.json")
    with pytest.raises(InputError, match="more than the 1,000 bytes limit"):
        gunzip(gzip.compress(b"x" * 2000), "t", limit=1000)
    # a real one still decodes
    doc = {"status": "completed", "version": "1.0", "server_count": "0", "server_list": []}
    assert decode_tor_file(encode_tor_file(doc)) == doc


@pytest.mark.parametrize("loader", [load_rank_table, check_file, load_topology])
def test_an_endless_file_is_refused_by_size(loader: object) -> None:
    with pytest.raises(RanktableError) as err:
        loader("/dev/zero")  # type: ignore[operator]
    assert "/dev/zero" in str(err.value) and "256 MiB limit" in str(err.value)


def test_read_bytes_names_the_limit_and_the_file(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    big.write_bytes(b"{}" * 600)
    with pytest.raises(InputError, match=r"big.json: is larger than the 1,000 bytes limit for a job spec"):
        read_bytes(big, limit=1000, what="job spec")
    assert read_bytes(big, limit=1200, what="job spec") == b"{}" * 600


def test_read_stream_sizes_a_file_and_still_refuses_pipes_and_streams_over_the_limit(tmp_path: Path) -> None:
    exact = tmp_path / "exact.json"
    exact.write_bytes(b"x" * 1000)
    assert read_bytes(exact, limit=1000) == b"x" * 1000
    assert read_bytes(tmp_path / "exact.json", limit=5000) == b"x" * 1000
    (tmp_path / "empty.json").write_bytes(b"")
    assert read_bytes(tmp_path / "empty.json", limit=10) == b""
    with pytest.raises(InputError, match="1,000 bytes limit"):
        read_stream(io.BytesIO(b"y" * 1001), "stdin", limit=1000)
    assert read_stream(io.BytesIO(b"y" * 1000), "stdin", limit=1000) == b"y" * 1000
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "wb") as writer:
        writer.write(b"z" * 3000)
    with os.fdopen(read_end, "rb") as pipe, pytest.raises(InputError, match="2,000 bytes limit"):
        read_stream(pipe, "a pipe", limit=2000)


def test_deep_json_and_huge_integers_in_a_rank_table_name_the_limit() -> None:
    with pytest.raises(InputError) as err:
        parse_rank_table("[" * 100_000, "deep.json")
    assert f"limit of {MAX_NESTING} levels" in str(err.value) and "deep.json" in str(err.value)
    with pytest.raises(InputError) as err:
        parse_rank_table("[" * 150 + "]" * 150, "nested.json")
    assert f"limit of {MAX_NESTING} levels" in str(err.value)
    table = '{"status": "completed", "version": "1.0", "server_count": ' + "9" * 5000 + "}"
    with pytest.raises(InputError) as err:
        parse_rank_table(table, "big.json")
    assert "4300 digits" in str(err.value) and "big.json" in str(err.value)


def test_a_non_utf8_rank_table_names_the_byte() -> None:
    with pytest.raises(InputError) as err:
        parse_rank_table(b'{"status": "\xff"}', "latin.json")
    assert "latin.json" in str(err.value) and "byte 12 is 0xff" in str(err.value)


def test_huge_values_are_quoted_briefly_in_errors() -> None:
    table = {
        "status": "completed",
        "version": "1.0",
        "server_list": [{"server_id": "a", "device": "x" * 10**6}],
    }
    with pytest.raises(InputError) as err:
        parse_rank_table(json.dumps(table), "t.json")
    assert len(str(err.value)) < 500
    assert len(brief(list(range(10**6)))) < 100


def test_check_expanded_counts_shared_values_each_time() -> None:
    shared = list(range(1000))
    check_expanded([shared] * 10, "ok")
    with pytest.raises(InputError, match="more than 5,000 values"):
        check_expanded([shared] * 10, "x", nodes=5000)


@pytest.mark.parametrize("nodes", [10**20, "100000000000000000000", 65_537])
def test_a_job_of_more_than_65536_nodes_is_refused(nodes: object) -> None:
    from ranktable.compose.spec import JobSpec

    with pytest.raises(InputError) as err:
        JobSpec.from_dict({"name": "a", "image": "i", "nodes": nodes, "command": ["x"]})
    assert err.value.where == "spec.nodes"
    assert "at most 65,536" in str(err.value) or "whole number" in str(err.value)
    assert len(str(err.value)) < 200
    assert JobSpec.from_dict({"name": "a", "image": "i", "nodes": 65_536, "command": ["x"]}).nodes == 65_536


def test_manifests_refuse_alias_bombs() -> None:
    from ranktable.compose.manifests import load_manifests

    with pytest.raises(InputError, match="5,000,000 values"):
        load_manifests(laughs(kind="ConfigMap"), "job.yaml")
