"""Volcano HyperNodes resolved against a NodeList: selectors, nesting, aliases and every error."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ranktable.topology import load_topology, topology_from_hypernodes
from ranktable.topology._fields import Field
from ranktable.topology.bandwidth import give_tier_bandwidths
from ranktable.topology.hypernode import load_hypernodes_text
from ranktable.topology.label_selector import label_selector_matches
from tests.core.test_topology_helpers import DATA, raises_input_error


def hypernodes() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((DATA / "hypernodes.yaml").read_text()) if d]


def nodes() -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads((DATA / "nodes.json").read_text())["items"]
    return items


def leaf(name: str, members: list[dict[str, Any]], tier: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": name},
        "spec": {"tier": tier, "members": members},
    }


def exact(kind: str, name: str) -> dict[str, Any]:
    return {"type": kind, "selector": {"exactMatch": {"name": name}}}


def test_sample_resolves_every_selector_kind() -> None:
    topo = load_topology(DATA / "hypernodes.yaml", nodes=DATA / "nodes.json")
    assert topo.switches_at(2) == ["spine-1", "spine-2"]
    assert topo.switches_at(1) == ["leaf-a", "leaf-b", "leaf-c", "leaf-d"]
    assert topo.servers_of("leaf-a") == ["node-01", "node-02"]  # exactMatch
    assert topo.servers_of("leaf-b") == ["node-03", "node-04"]  # regexMatch
    assert topo.servers_of("leaf-c") == ["node-05", "node-06"]  # labelMatch matchLabels
    assert topo.servers_of("leaf-d") == ["node-07", "node-08"]  # labelMatch matchExpressions
    assert topo.switches["leaf-c"].parent == "spine-2"  # regexMatch on HyperNodes
    assert topo.switches["leaf-a"].uplink_gbps == 400.0
    assert topo.switches["leaf-a"].oversubscription == 2.0
    assert topo.tier_name(1) == "leaf" and topo.tier_name(2) == "spine"
    # a rank table's server_id is the node IP: it resolves to the node
    assert topo.resolve("192.168.0.17") == "node-07"
    assert topo.resolve("node-07") == "node-07"
    assert topo.leaf_of(topo.resolve("192.168.0.12") or "") == "leaf-a"


def test_list_form_and_in_memory_objects(tmp_path: Path) -> None:
    listed = {"apiVersion": "v1", "kind": "List", "items": hypernodes(), "metadata": {"resourceVersion": ""}}
    path = tmp_path / "hn.json"
    path.write_text(json.dumps(listed))
    from_file = load_topology(path, nodes=DATA / "nodes.json")
    in_memory = topology_from_hypernodes(hypernodes(), nodes())
    give_tier_bandwidths(in_memory)  # as every loader does
    assert from_file.server_leaf == in_memory.server_leaf
    assert from_file.switches == in_memory.switches


def test_exact_match_without_node_list_takes_names_as_given() -> None:
    objs = [leaf("l1", [exact("Node", "a"), exact("Node", "b")]), leaf("l2", [exact("Node", "c")])]
    topo = topology_from_hypernodes(objs)
    assert topo.server_leaf == {"a": "l1", "b": "l1", "c": "l2"}


def test_old_selector_type_field_is_accepted() -> None:
    member = {"type": "Node", "selector": {"type": "Regex", "regexMatch": {"pattern": "node-0[12]"}}}
    topo = topology_from_hypernodes([leaf("l1", [member])], nodes())
    assert topo.servers_of("l1") == ["node-01", "node-02"]


def mutated(change: Any) -> list[dict[str, Any]]:
    objs = copy.deepcopy(hypernodes())
    change(objs)
    return objs


BAD: list[tuple[Any, list[str]]] = [
    (
        lambda o: o[0]["spec"]["members"][0]["selector"].update(regexMatch={"pattern": "x"}),
        [
            "items[0].spec.members[0].selector",
            "exactly one of exactMatch, regexMatch, labelMatch is required",
        ],
    ),
    (
        lambda o: o[1]["spec"]["members"][0].update(selector={}),
        ["items[1].spec.members[0].selector", "exactly one of"],
    ),
    (
        lambda o: o[0]["spec"]["members"][0]["selector"]["exactMatch"].update(name="node-99"),
        ["items[0].spec.members[0].selector.exactMatch.name", "node 'node-99' is not in the node list"],
    ),
    (
        lambda o: o[0]["spec"]["members"][0]["selector"]["exactMatch"].update(name="192.168.0.11"),
        ["is not in the node list", "address of node 'node-01'"],
    ),
    (
        lambda o: o[1]["spec"]["members"].append(exact("Node", "node-01")),
        ["items[1].spec.members[1]", "node 'node-01' is in two tier-1 HyperNodes: 'leaf-a' and 'leaf-b'"],
    ),
    (
        lambda o: o[4]["spec"]["members"].append(exact("HyperNode", "leaf-c")),
        ["HyperNode 'leaf-c' is a member of both"],
    ),
    (
        lambda o: o[4]["spec"]["members"].append(exact("HyperNode", "spine-1")),
        ["items[4].spec.members[2]", "cycle: spine-1 -> spine-1"],
    ),
    (
        lambda o: o[4]["spec"].update(tier=3),
        ["items[4].spec.members[0]", "(tier 3) contains 'leaf-a' of tier 1", "exactly one tier lower"],
    ),
    (
        lambda o: o[4]["spec"]["members"].append(exact("Node", "node-01")),
        ["items[4].spec.members[2].type", "only tier-1 HyperNodes have Node members"],
    ),
    (
        lambda o: o[2]["spec"]["members"][0]["selector"]["labelMatch"]["matchLabels"].update(
            {"example.com/rack": "r9"}
        ),
        ["items[2].spec.members[0].selector.labelMatch", "label selector matches no node"],
    ),
    (
        lambda o: o[3]["spec"]["members"][0]["selector"]["labelMatch"]["matchExpressions"][0].update(
            values=[]
        ),
        ["labelMatch.matchExpressions[0]", "operator In needs a non-empty `values` list"],
    ),
    (
        lambda o: o[3]["spec"]["members"][0]["selector"]["labelMatch"]["matchExpressions"][0].update(
            operator="Gt"
        ),
        ["matchExpressions[0].operator", "unknown operator 'Gt'"],
    ),
    (
        lambda o: o[1]["spec"]["members"][0]["selector"]["regexMatch"].update(pattern="node-(["),
        ["items[1].spec.members[0].selector.regexMatch.pattern", "invalid regular expression"],
    ),
    (lambda o: o[0]["spec"].update(tier=0), ["items[0].spec.tier", "at least 1"]),
    (lambda o: o[0]["spec"].update(members=[]), ["items[0].spec.members", "at least one member"]),
    (lambda o: o[5]["metadata"].update(name="leaf-a"), ["items[5].metadata.name", "defined twice"]),
    (lambda o: o[0].update(kind="Node"), ["items[0].kind", "expected a HyperNode"]),
    (lambda o: o[0]["spec"]["members"][0].update(type="Rack"), ["members[0].type", "unknown member type"]),
    (
        lambda o: o[5]["spec"]["members"].append(
            {"type": "HyperNode", "selector": {"labelMatch": {"matchLabels": {"a": "b"}}}}
        ),
        ["items[5].spec.members[1].selector.labelMatch", "members of type Node only"],
    ),
]


@pytest.mark.parametrize(("change", "fragments"), BAD)
def test_malformed_hypernodes(change: Any, fragments: list[str]) -> None:
    objs = mutated(change)
    raises_input_error(
        lambda: topology_from_hypernodes(objs, nodes(), source="hn.yaml"), "hn.yaml: ", *fragments
    )


def test_regex_needs_node_list() -> None:
    raises_input_error(
        lambda: topology_from_hypernodes(hypernodes(), None, source="hn.yaml"),
        "items[1].spec.members[0].selector.regexMatch",
        "needs the cluster's node list",
        "--nodes",
    )


def test_multi_document_paths_and_yaml_errors() -> None:
    docs = (DATA / "hypernodes.yaml").read_text().split("\n---\n")
    docs[5] = docs[5].replace("tier: 2", "tier: x")
    text = "\n---\n".join(docs)
    raises_input_error(
        lambda: load_hypernodes_text(text, "hn.yaml", nodes()), "hn.yaml: documents[5].spec.tier", "integer"
    )
    raises_input_error(lambda: load_hypernodes_text("a: [1,\n", "hn.yaml"), "hn.yaml:", "not valid YAML")


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ({}, {"a": "1"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
        ({"matchLabels": {"a": "1"}}, {"a": "2"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {}, True),
        ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, {"a": "1"}, False),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]}, {"a": "2"}, True),
        ({"matchExpressions": [{"key": "a", "operator": "In", "values": ["1"]}]}, {}, False),
        ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, {"a": ""}, True),
        ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, {"a": ""}, False),
        (
            {"matchLabels": {"b": "x"}, "matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]},
            {"b": "x"},
            True,
        ),
    ],
)
def test_label_selector_semantics(selector: dict[str, Any], labels: dict[str, str], expected: bool) -> None:
    assert label_selector_matches(Field(selector, "labelMatch", "t"))(labels) is expected


def test_label_selector_rejects_values_with_exists() -> None:
    exprs = [{"key": "a", "operator": "Exists", "values": ["x"]}]
    bad = Field({"matchExpressions": exprs}, "labelMatch", "t")
    raises_input_error(
        lambda: label_selector_matches(bad), "t: labelMatch.matchExpressions[0]", "takes no `values`"
    )
