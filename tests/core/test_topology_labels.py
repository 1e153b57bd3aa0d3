"""Node labels naming the switch per tier (NVIDIA keys, the simulator's keys, or configured keys)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from ranktable.topology import RANKTABLE_LABEL_KEYS, load_topology, topology_from_node_labels
from tests.core.test_topology_helpers import DATA, raises_input_error

NV = "network.topology.nvidia.com"


def nodes() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((DATA / "nodes.json").read_text())["items"]
    return items


def test_nvidia_labels_sample() -> None:
    topo = load_topology(DATA / "nodes.json")
    assert topo.switches_at(3) == ["core-0"]
    assert topo.switches_at(2) == ["spine-1", "spine-2"]
    assert topo.switches["leaf-c"].parent == "spine-2"
    assert topo.servers_of("leaf-b") == ["node-03", "node-04"]
    assert topo.resolve("192.168.0.14") == "node-04"
    assert [topo.tier_name(t) for t in (1, 2, 3)] == ["leaf", "spine", "core"]


def test_simulator_labels_are_found_without_configuration() -> None:
    topo = load_topology(DATA / "nodes-ranktable-labels.yaml")
    assert topo.tier_count == 2
    assert topo.server_leaf == {
        "10.0.0.1": "tor-1",
        "10.0.0.2": "tor-1",
        "10.0.0.3": "tor-2",
    }  # cpu-0 skipped
    assert topo.resolve("npu-b1") == "10.0.0.3"
    assert topo.switches["tor-2"].parent == "spine-1"


def test_configured_keys() -> None:
    items = nodes()
    topo = topology_from_node_labels(items, ["example.com/rack", f"{NV}/core"])
    assert topo.switches_at(1) == ["r1", "r2", "r3", "r4"]
    assert topo.switches["r2"].parent == "core-0"
    raises_input_error(
        lambda: topology_from_node_labels(items, RANKTABLE_LABEL_KEYS, "x"),
        "x: no node carries the tier-1 label 'topology.ranktable.io/leaf'",
    )


def test_missing_upper_label_is_filled_by_other_nodes() -> None:
    items = nodes()
    del items[0]["metadata"]["labels"][f"{NV}/core"]
    del items[0]["metadata"]["labels"][f"{NV}/spine"]
    topo = topology_from_node_labels(items)
    assert topo.switches["leaf-a"].parent == "spine-1"


def change(fn: Any) -> list[dict[str, Any]]:
    items = copy.deepcopy(nodes())
    fn(items)
    return items


@pytest.mark.parametrize(
    ("fn", "fragments"),
    [
        (
            lambda n: n[1]["metadata"]["labels"].update({f"{NV}/spine": "spine-2"}),
            [
                'items[1].metadata.labels["network.topology.nvidia.com/spine"]',
                "puts 'leaf-a' under 'spine-2'",
                "items[0].metadata.labels puts it under 'spine-1'",
            ],
        ),
        (
            lambda n: n[2]["metadata"]["labels"].update({f"{NV}/leaf": "spine-1"}),
            ["items[2].metadata.labels", "switch 'spine-1' is tier 1 here but tier 2 on other nodes"],
        ),
        (
            lambda n: n[3]["metadata"]["labels"].pop(f"{NV}/spine"),
            [
                'items[3].metadata.labels["network.topology.nvidia.com/core"]',
                "label of a lower tier is missing",
            ],
        ),
        (
            lambda n: [x["metadata"]["labels"].pop(f"{NV}/leaf") for x in n],
            ["no node carries the tier-1 label"],
        ),
        (lambda n: n[4]["metadata"].update(name="node-01"), ["items[4].metadata.name", "listed twice"]),
        (lambda n: n[4]["metadata"].update(labels=["a"]), ["items[4].metadata.labels", "expected a mapping"]),
        (lambda n: n[5].pop("metadata"), ["items[5].metadata", "required"]),
    ],
)
def test_malformed_labels(fn: Any, fragments: list[str]) -> None:
    items = change(fn)
    raises_input_error(
        lambda: topology_from_node_labels(items, source="nodes.json"), "nodes.json", *fragments
    )


def test_bad_label_keys_and_wrong_kind(tmp_path: Any) -> None:
    raises_input_error(lambda: topology_from_node_labels(nodes(), ["a", "a"]), "label keys repeat")
    path = tmp_path / "pods.json"
    path.write_text(json.dumps({"kind": "PodList", "items": []}))
    raises_input_error(lambda: load_topology(path, "labels"), f"{path}: kind", "expected a NodeList")


def _same_topology(a: Any, b: Any) -> bool:
    fields = ("server_leaf", "device_leaf", "aliases", "tier_names", "source", "warnings")
    same = all(getattr(a, f) == getattr(b, f) for f in fields)
    return same and list(a.switches.items()) == list(b.switches.items())


@pytest.mark.parametrize(
    "fn",
    [
        lambda n: None,
        lambda n: n[1]["metadata"]["labels"].update(
            {f"{NV}/leaf": " leaf-a "}
        ),  # trimmed by the checked path
        lambda n: n[2]["metadata"]["labels"].update({"rank": 3}),  # a number: the checked path's text
        lambda n: n[3]["status"]["addresses"].append({"type": "InternalIP", "address": " 10.9.9.9"}),
        lambda n: n[3].pop("status"),
        lambda n: n[4]["metadata"].pop("labels"),
    ],
)
def test_plain_nodes_are_read_fast_and_as_the_checked_path_reads_them(
    fn: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 28: nodes as kubectl writes them skip the per-value `Field`s; the result is the same."""
    from ranktable.topology import k8s_nodes

    items = change(fn)
    fast = topology_from_node_labels(copy.deepcopy(items), source="nodes.json")
    monkeypatch.setattr(k8s_nodes, "_plain_node", lambda item: None)
    assert _same_topology(fast, topology_from_node_labels(items, source="nodes.json"))


def test_a_plain_node_list_takes_the_fast_path() -> None:
    from ranktable.topology.k8s_nodes import _plain_node

    assert all(_plain_node(item) is not None for item in nodes())
