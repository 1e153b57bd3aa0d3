"""load_topology: format detection from content for every format, --format, --nodes, file errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from ranktable.errors import InputError
from ranktable.topology import FORMATS, detect_format, dump_topology_yaml, load_topology, synthetic_topology
from tests.core.test_topology_helpers import DATA, raises_input_error

SAMPLES = {
    "basic-tor-node-cm.yaml": "tor-json",
    "tor_info.json": "tor-json",
    "hypernodes.yaml": "hypernode",
    "topology.conf": "slurm",
    "nodes.json": "labels",
    "nodes-ranktable-labels.yaml": "labels",
    "ranktable_tor.json": "tor-file",
    "ranktable_tor.plain.json": "tor-file",
    "topology.yaml": "yaml",
}


def test_formats_are_the_documented_names() -> None:
    assert list(FORMATS) == ["tor-json", "hypernode", "slurm", "labels", "tor-file", "yaml"]


@pytest.mark.parametrize(("name", "fmt"), sorted(SAMPLES.items()))
def test_detects_each_sample(name: str, fmt: str) -> None:
    assert detect_format((DATA / name).read_text()) == fmt


@pytest.mark.parametrize(("name", "fmt"), sorted(SAMPLES.items()))
def test_detected_load_equals_explicit_format(name: str, fmt: str) -> None:
    nodes = DATA / "nodes.json" if fmt == "hypernode" else None
    detected = load_topology(DATA / name, nodes=nodes)
    explicit = load_topology(str(DATA / name), fmt, nodes=nodes)
    assert detected.source == str(DATA / name)
    assert detected.switches == explicit.switches and detected.server_leaf == explicit.server_leaf
    assert detected.server_leaf, "every sample places servers"


def test_detects_configmap_json_and_rejects_other_configmaps() -> None:
    cm = yaml.safe_load((DATA / "basic-tor-node-cm.yaml").read_text())
    assert detect_format(json.dumps(cm, indent=2)) == "tor-json"
    job_cm = {"kind": "ConfigMap", "data": {"jobstart_hccl.json": '{"status": "initializing"}'}}
    with pytest.raises(InputError, match="cannot tell the topology format"):
        detect_format(json.dumps(job_cm))


def test_detects_shapes_without_kind() -> None:
    assert detect_format(json.dumps({"server_list": [{"tor_ip": "1.0.0.0", "server": []}]})) == "tor-json"
    assert detect_format(json.dumps({"server_list": [{"server_id": "a", "device": []}]})) == "tor-file"
    assert detect_format("switches: []\nservers: []\n") == "yaml"
    assert detect_format(json.dumps({"items": [{"metadata": {"name": "n"}, "status": {}}]})) == "labels"
    assert detect_format("spec:\n  tier: 1\n  members: []\n") == "hypernode"


@pytest.mark.parametrize("text", ["hello: world\n", "just some words", "[1, 2, 3]", "   \n"])
def test_undetectable_content_lists_formats(tmp_path: Path, text: str) -> None:
    path = tmp_path / "mystery.txt"
    path.write_text(text)
    err = raises_input_error(lambda: load_topology(path), f"{path}: ")
    assert all(name in str(err) for name in FORMATS)
    assert "--format" in str(err) or err.reason == "is empty"


def test_unknown_format_and_missing_files(tmp_path: Path) -> None:
    raises_input_error(
        lambda: load_topology(DATA / "topology.yaml", "xml"),
        "--format",
        "unknown topology format 'xml'",
        "tor-json, hypernode, slurm, labels, tor-file, yaml",
    )
    raises_input_error(lambda: load_topology(tmp_path / "nope.yaml"), "nope.yaml", "not found")
    raises_input_error(lambda: load_topology(tmp_path), "is a directory")
    raises_input_error(
        lambda: load_topology(DATA / "topology.yaml", nodes=tmp_path / "n.json"),
        "n.json",
        "node list file not found",
    )
    binary = tmp_path / "bin"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    raises_input_error(lambda: load_topology(binary), "not UTF-8")


def test_wrong_explicit_format_is_an_error_not_a_guess() -> None:
    with pytest.raises(InputError) as info:
        load_topology(DATA / "topology.conf", "yaml")
    assert str(DATA / "topology.conf") in str(info.value)


def test_nodes_conflicting_with_aliases_is_reported(tmp_path: Path) -> None:
    # the YAML sample says node-02 is 192.168.0.12; a node list claiming node-02 has .11's address conflicts
    nodes = {
        "kind": "List",
        "items": [
            {
                "metadata": {"name": "node-02"},
                "status": {"addresses": [{"type": "InternalIP", "address": "192.168.0.11"}]},
            }
        ],
    }
    path = tmp_path / "nodes.json"
    path.write_text(json.dumps(nodes))
    raises_input_error(
        lambda: load_topology(DATA / "topology.yaml", nodes=path),
        "nodes.json: items[0]",
        "node 'node-02' and its addresses name different servers",
        "node-02 -> 192.168.0.12, 192.168.0.11 -> 192.168.0.11",
    )


def test_big_synthetic_yaml_file_loads(tmp_path: Path) -> None:
    topo, ids = synthetic_topology(1024, 32, 4)
    path = tmp_path / "big.yaml"
    path.write_text(dump_topology_yaml(topo))
    back = load_topology(path)
    assert back.server_leaf == topo.server_leaf and back.resolve("node-01023") == ids[-1]


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("basic-tor-node-cm.yaml", "tor-json"),
        ("tor_info.json", "tor-json"),
        ("nodes.json", "labels"),
        ("nodes-ranktable-labels.yaml", "labels"),
        ("ranktable_tor.plain.json", "tor-file"),
        ("topology.yaml", "yaml"),
    ],
)
def test_detects_minified_json(name: str, fmt: str) -> None:
    text = json.dumps(yaml.safe_load((DATA / name).read_text()), separators=(",", ":"))
    assert "\n" not in text
    assert detect_format(text) == fmt


def test_detects_minified_hypernode_list() -> None:
    items = [d for d in yaml.safe_load_all((DATA / "hypernodes.yaml").read_text()) if d]
    assert detect_format(json.dumps({"apiVersion": "v1", "items": items, "kind": "List"})) == "hypernode"
    assert detect_format(json.dumps(items[0])) == "hypernode"


@pytest.mark.parametrize(
    ("name", "fmt"),
    [("tor_info.json", "tor-json"), ("nodes.json", "labels"), ("ranktable_tor.plain.json", "tor-file")],
)
def test_json_files_are_detected_and_read_without_the_yaml_reader(
    name: str, fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """JSON is read as JSON, once: the YAML reader (~10x slower on JSON) is never called, and the
    document detection parsed is the one the format's reader uses."""
    minified = tmp_path / name
    minified.write_text(json.dumps(yaml.safe_load((DATA / name).read_text()), separators=(",", ":")))
    expected = load_topology(minified, fmt)
    parsed: list[str] = []

    def no_yaml(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the YAML reader was called on a JSON file")

    import ranktable.limits
    import ranktable.topology._fields as fields

    real_load_json = fields.load_json

    def counted(*args: object, **kwargs: object) -> object:
        parsed.append(name)
        return real_load_json(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(ranktable.limits, "load_yaml_all", no_yaml)
    monkeypatch.setattr(fields, "load_yaml_all", no_yaml)
    monkeypatch.setattr(fields, "load_json", counted)
    loaded = load_topology(minified)
    assert loaded.server_leaf == expected.server_leaf
    assert len(parsed) <= 1


def test_reading_a_slurm_file_imports_no_yaml_and_no_other_reader() -> None:
    """Each reader is imported when its format is read: `plan` on a Slurm file pays for no YAML library."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from ranktable.topology import load_topology\n"
        f"load_topology({str(DATA / 'topology.conf')!r})\n"
        "print(sorted(m for m in sys.modules if m == 'yaml' or m.startswith('ranktable.topology.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    loaded = out.strip()
    assert "'yaml'" not in loaded
    for reader in ("hypernode", "labels", "tor_info", "yaml_format", "export"):
        assert f"ranktable.topology.{reader}'" not in loaded
    assert "ranktable.topology.slurm'" in loaded


@pytest.mark.parametrize(
    "text",
    [
        "apiVersion: v1\nkind: HyperNode\n---\nkind: HyperNode\n",
        "items:\n- kind: Node\n  metadata: {name: a}\n  - 'kind': \"List\"\n",
        '{"kind": "NodeList", "items": [{"kind": "Node"}]}',
        "data:\n  note: the kind: Foo is not a key here\n\n\n   kind:   ConfigMap\n",
        "x: 1\n" * 1000 + "{kind: Node}\n",
    ],
)
def test_kinds_are_the_line_starting_kind_keys(text: str) -> None:
    """Issue 28: the `kind:` scan finds the word, then checks its line's start; the same kinds as the
    pattern anchored at every line start that it replaced."""
    import re

    from ranktable.topology.load import _kinds

    anchored = re.compile(r"""(?m)^[\s\-{,]*["']?kind["']?\s*:\s*["']?([A-Za-z]+)""")
    assert _kinds(text) == set(anchored.findall(text))
