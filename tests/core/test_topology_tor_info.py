"""MindCluster basic-tor-node-cm: tor_info JSON and tor_level, bare or as the whole ConfigMap."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from ranktable.topology import load_topology, topology_from_tor_configmap, topology_from_tor_info
from tests.core.test_topology_helpers import DATA, raises_input_error


def tor_info() -> dict[str, Any]:
    return json.loads((DATA / "tor_info.json").read_text())


def test_configmap_double_layer_sample() -> None:
    topo = load_topology(DATA / "basic-tor-node-cm.yaml")
    assert topo.source.endswith("basic-tor-node-cm.yaml")
    assert topo.switches_at(1) == ["10.200.0.1", "10.200.0.2", "10.200.0.3", "10.200.0.4"]
    assert topo.switches_at(2) == ["spine"]
    assert all(topo.switches[leaf].parent == "spine" for leaf in topo.switches_at(1))
    assert topo.leaf_of("192.168.0.13") == "10.200.0.2"
    assert topo.ancestor("10.200.0.4", 2) == "spine"
    assert topo.slice_ids["192.168.0.16"] == 1
    assert topo.tier_name(1) == "tor" and topo.tier_name(2) == "spine"


def test_bare_tor_info_is_single_layer() -> None:
    topo = load_topology(DATA / "tor_info.json")
    assert topo.tier_count == 1
    assert topo.servers_of("10.200.0.1") == ["192.168.0.11", "192.168.0.12", "192.168.0.13"]
    assert topo.resolve("192.168.0.15") == "192.168.0.15"
    assert topo.switches["10.200.0.2"].parent is None


def test_node_list_adds_node_names_as_aliases() -> None:
    topo = load_topology(DATA / "basic-tor-node-cm.yaml", nodes=DATA / "nodes.json")
    assert topo.resolve("node-03") == "192.168.0.13"
    assert topo.leaf_of(topo.resolve("node-08") or "") == "10.200.0.4"


def test_named_spines_extension() -> None:
    data = tor_info()
    data["server_list"][0]["spine_ip"] = "10.250.0.1"
    data["server_list"][1]["spine_ip"] = "10.250.0.2"
    topo = topology_from_tor_info(data, None)
    assert topo.switches["10.200.0.1"].parent == "10.250.0.1"
    assert topo.switches["10.200.0.2"].parent == "10.250.0.2"
    assert topo.tier_count == 2


def test_configmap_from_kubectl_json_and_in_memory() -> None:
    cm = yaml.safe_load((DATA / "basic-tor-node-cm.yaml").read_text())
    topo = topology_from_tor_configmap(cm)
    assert topo.source == "basic-tor-node-cm"
    assert len(topo.server_leaf) == 8
    single = copy.deepcopy(cm)
    single["data"]["tor_level"] = "single_layer"
    assert topology_from_tor_configmap(single).tier_count == 1
    # tor_info given as a string, as the ConfigMap data holds it
    text = json.dumps(tor_info())
    assert topology_from_tor_info(text, "double_layer").tier_count == 2


def test_tor_id_names_a_tor_without_ip() -> None:
    data = tor_info()
    del data["server_list"][1]["tor_ip"]
    topo = topology_from_tor_info(data)
    assert topo.leaf_of("192.168.0.14") == "tor-1"


@pytest.mark.parametrize(
    ("mutate", "fragments"),
    [
        (
            lambda d: d["server_list"][1]["server"][0].pop("server_ip"),
            ["server_list[1].server[0].server_ip", "required"],
        ),
        (lambda d: d.update(tor_count=0), ["tor_count", "must be at least 1"]),
        (
            lambda d: d["server_list"][1]["server"].append({"server_ip": "192.168.0.11"}),
            ["server_list[1].server[2].server_ip", "already under ToR '10.200.0.1'"],
        ),
        (
            lambda d: d["server_list"][0]["server"][1].update(npu_count="eight"),
            ["server[1].npu_count", "integer"],
        ),
        (lambda d: d["server_list"][1].update(tor_ip="10.200.0.1"), ["server_list[1]", "listed twice"]),
        (lambda d: d["server_list"][0].pop("server"), ["server_list[0].server", "required"]),
        (lambda d: d.update(server_list={}), ["server_list", "expected a list"]),
        (
            lambda d: d["server_list"][0].update(spine_ip="s1"),
            ["server_list[1]", "has no spine_ip while other ToRs name theirs"],
        ),
    ],
)
def test_malformed_tor_info(mutate: Any, fragments: list[str]) -> None:
    data = tor_info()
    mutate(data)
    raises_input_error(
        lambda: topology_from_tor_info(data, None, source="tor.json"), "tor.json: ", *fragments
    )


def test_bad_tor_level_and_broken_json(tmp_path: Any) -> None:
    cm = yaml.safe_load((DATA / "basic-tor-node-cm.yaml").read_text())
    cm["data"]["tor_level"] = "triple_layer"
    raises_input_error(
        lambda: topology_from_tor_configmap(cm, "cm.yaml"), "cm.yaml: data.tor_level", "triple_layer"
    )
    cm["data"]["tor_level"] = "double_layer"
    cm["data"]["tor_info"] = '{"server_list": [ '
    raises_input_error(
        lambda: topology_from_tor_configmap(cm, "cm.yaml"), "cm.yaml: data.tor_info", "not valid JSON"
    )
    del cm["data"]["tor_info"]
    raises_input_error(lambda: topology_from_tor_configmap(cm, "cm.yaml"), "data.tor_info", "required")
    spined = tor_info()
    for tor in spined["server_list"]:
        tor["spine_ip"] = "s"
    raises_input_error(
        lambda: topology_from_tor_info(spined, "single_layer"), "server_list[0]", "single_layer"
    )
    path = tmp_path / "tor.json"
    path.write_text('{"server_list": [1, 2}')
    raises_input_error(lambda: load_topology(path, "tor-json"), f"{path}:1", "not valid JSON")
