"""The fast block-YAML reader gives what PyYAML's SafeLoader gives, or declines (issue 28)."""

from __future__ import annotations

import random
import string
from typing import Any

import pytest
import yaml

from ranktable.block_yaml import load_block_yaml
from ranktable.errors import InputError
from ranktable.limits import load_yaml_all
from ranktable.topology.export import to_hypernodes, to_tor_configmap
from ranktable.topology.synthetic import synthetic_topology


def pyyaml(text: str) -> list[Any]:
    return list(yaml.load_all(text, Loader=yaml.CSafeLoader))


READ = [
    "",
    "---\n",
    "a: 1\n---\n",
    "---\na: 1\n---\nb: [ ]\n".replace("[ ]", "[]"),
    "a: 1\nb: -7\nc: 0\nd: leaf-000\ne: 10.0.0.1\nf: yes\ng: Off\nh: null\ni:\nj: ~x\n".replace("~x", "'~'"),
    'on: 1\nNULL: 2\n\'x y\': 3\n"q": "it\'s"\n',
    "items:\n- a\n- b: 1\n  c: 2\n-\n- - x\n  - y\n- {}\nrest: []\n",
    "spec:\n  members:\n  - selector:\n      exactMatch:\n        name: n1\n    type: Node\n  tier: 1\n",
    "a:\n    - 1\n    - 2\nb: 3\n",
    "s: 'one\n  two\n\n  three  ''q''\n   four'\nafter: x\n",
    "- 'a'': b'\n- \"a: b\"\n- /path/x\n- a b c\n- C(1)=2\n",
    "key: value   \nother:   \n  x: 1\n",
    "server: https://127.0.0.1:6443\nurl: a:b:c\nwhen: t:1\n",
    "octal_in_yaml_1_2_only: 0o7\ntoken: 3f9a0c\naddress: 10.0.0.1\n",
]

DECLINED = [
    "a: 1 # comment\n",
    "a: &x 1\nb: *x\n",
    "a: !!str 1\n",
    "a: {b: 1}\n",
    "a: |\n  text\n",
    "a: 1.5\n",
    "a: 012\n",
    "a: 2024-01-01\n",
    "a: .inf\n",
    "a: 1_000\n",
    "a: 1:20\n",
    "a: 10:20:30\n",  # sexagesimal in YAML 1.1
    "a: b: c\n",
    "a: x\n  b: 1\n",  # invalid: PyYAML reports it
    "a:\tb\n",
    "a: 'open\nb: 1\n",
    "- a\nb: 1\n",
    "%YAML 1.1\n---\na: 1\n",
    "a: b\n...\n",
    'a: "esc\\n"\n',
    "a: plain\n  continued\n",
    "a: é\n",
]


@pytest.mark.parametrize("text", READ)
def test_the_subset_reads_as_pyyaml_reads_it(text: str) -> None:
    assert load_block_yaml(text) == pyyaml(text)
    assert load_block_yaml(text) is not None


@pytest.mark.parametrize("text", DECLINED)
def test_anything_else_is_left_to_pyyaml(text: str) -> None:
    assert load_block_yaml(text) is None


def test_invalid_yaml_still_gets_pyyamls_error_with_its_line() -> None:
    with pytest.raises(InputError) as err:
        load_yaml_all("a: 1\nb: [unclosed\n", "t.yaml", line_in_where=True)
    assert "not valid YAML" in str(err.value) and "t.yaml:" in str(err.value)


def test_nesting_beyond_the_limit_is_declined_and_refused_by_the_checked_path() -> None:
    deep = "".join(f"{'  ' * i}k:\n" for i in range(120)) + f"{'  ' * 120}k: 1\n"
    assert load_block_yaml(deep, 99) is None
    with pytest.raises(InputError, match="nest"):
        load_yaml_all(deep, "deep.yaml")


def _random_value(rng: random.Random, depth: int) -> Any:
    words = ["leaf-001", "Node", "yes", "no", "on", "null", "x y", "a'b", "it: is", "", "-", "0", "17", "-3"]
    words += [
        "10.1.2.3",
        "a - b",
        "/",
        "C(1)",
        "1.5",
        "0x1f",
        "2024-01-01",
        "~",
        "#not",
    ]  # the last 5: declined
    pick = rng.random()
    if depth > 3 or pick < 0.4:
        if rng.random() < 0.3:
            return rng.randint(-1000, 10**6)
        if rng.random() < 0.1:
            return rng.choice([True, False, None])
        if rng.random() < 0.1:
            return "'" + " ".join(rng.choice(string.ascii_letters) * rng.randint(1, 30) for _ in range(12))
        return rng.choice(words if rng.random() < 0.02 else words[:-5])
    if pick < 0.7:
        return {
            rng.choice(["name", "type", "on", "a b", "1", "tier", "x.y/z"]) + str(i): _random_value(
                rng, depth + 1
            )
            for i in range(rng.randint(0, 4))
        }
    return [_random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]


def test_random_documents_dumped_by_pyyaml_read_back_the_same() -> None:
    rng = random.Random(28)
    read = 0
    for _ in range(400):
        docs = [{"root": _random_value(rng, 0)} for _ in range(rng.randint(1, 3))]
        text = yaml.safe_dump_all(docs, width=rng.choice([20, 40, 80, 110]), default_flow_style=False)
        found = load_block_yaml(text)
        if found is not None:
            read += 1
            assert found == pyyaml(text), text
    assert read > 150  # most such texts take the fast path, so the comparison means something


def test_the_files_the_exporters_write_take_the_fast_path() -> None:
    topology, _ids = synthetic_topology(256, 16, 2, oversubscription=3.0)
    for text in (yaml.safe_dump_all(to_hypernodes(topology)), yaml.safe_dump(to_tor_configmap(topology))):
        found = load_block_yaml(text)
        assert found is not None and found == pyyaml(text)


def test_scalars_starting_with_a_digit_resolve_as_pyyaml_resolves_them() -> None:
    """Numbers, floats, sexagesimals, timestamps, addresses and hex tokens: read as PyYAML reads them,
    or left to it."""
    rng = random.Random(11)
    chars = "0123456789.-+_:eExabfT Z"
    read = 0
    for _ in range(3000):
        word = (
            rng.choice("0123456789.") + "".join(rng.choice(chars) for _ in range(rng.randint(0, 10)))
        ).strip()
        text = f"k: {word}\n"
        found = load_block_yaml(text)
        if found is not None:
            read += 1
            assert found == pyyaml(text), text
    assert read > 1000
    assert load_block_yaml("a: 10.0.0.1\nb: 3f9a0c\nc: 1.5\n") is None  # the float: PyYAML's
    assert load_block_yaml("a: 10.0.0.1\nb: 3f9a0c\n") == [{"a": "10.0.0.1", "b": "3f9a0c"}]


# sequences whose items repeat one shape, and every way a later item can differ from the first
REPEATED = [
    "m:\n" + "".join(f"- selector:\n    exactMatch:\n      name: n{i}\n  type: Node\n" for i in range(6)),
    "m:\n" + "".join(f"  - a: {v}\n    b: x\n" for v in ("1", "x", "yes", "null", "'q'", '"d"', "{}", "[]")),
    "m:\n- a: 1\n  b: 2\n- a: 3\n  b: 4\n- a: 5\n  b: 6\n  c: 7\n- a: 8\n  b: 9\n",  # a longer item
    "m:\n- a: 1\n  b: 2\n- a: 3\n  b: 4\n- a: 5\n  b:\n    c: 7\n- a: 8\n  b: 9\nz: 1\n",  # a value below
    "m:\n- a: 1\n  a: 2\n- a: 3\n  a: 4\n- a: 5\n  a: 6\n",  # a key given twice: PyYAML keeps the last
    "m:\n- a: null\n  a: null\n  b:\n- a: 1\n  a: 2\n  b:\n- a: 3\n  a: 4\n  b:\n",
    "m:\n- a: 1\n  b:\n- a: 2\n  b:\n- a: 3\n  b:\n",  # an empty value
    "m:\n- x\n- y\n- k: v\n- z\n- - w\n- 'q'\n- 7\n",  # a scalar list, then items of other shapes
    "m:\n- a: 'one\n    two'\n- a: x\n- a: 'three\n    four'\n- a: y\n- a: z\n",  # a quote that goes on below
    "m:\n- - 1\n  - 2\n- - 3\n  - 4\n- - 5\n  - 6\n",
    "m:\n- a:\n  - 1\n  - 2\n- a:\n  - 3\n  - 4\n- a:\n  - 5\n  - 6\nb: 1\n",
    "m:\n  - a: 1\n  - a: 2\n\n  - a: 3\n  - a: 4\n",  # a blank line between items
    "m:\n- a: 1\n- a: 2\n- a: 3\n---\nm:\n- a: 4\n- a: 5\n- a: 6\n",  # the same shape in two documents
    "m:\n- a: 1\n- a: 2\n- a: 3\n---\n- a: 4\n",
    "m:\n- a: 1\n- a:   2\n- a: 3  \n- a: 4\n",  # other spacing
    "a:\n- k: 1\n- k: 2\nb:\n- k: 3\n- k: 4\n",  # a sequence at its key's indent ends at the next key
]


@pytest.mark.parametrize("text", REPEATED)
def test_repeated_items_read_as_pyyaml_reads_them(text: str) -> None:
    assert load_block_yaml(text) == pyyaml(text), text


def test_repeated_items_are_not_read_line_by_line(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 2,000-member HyperNode's members after the first two are built from one template each."""
    from ranktable import block_yaml

    lines: list[int] = []
    entry = block_yaml._Document.entry
    monkeypatch.setattr(
        block_yaml._Document, "entry", lambda self, *args: lines.append(1) or entry(self, *args)
    )
    members = "".join(
        f"  - selector:\n      exactMatch:\n        name: node-{i}\n    type: Node\n" for i in range(2000)
    )
    text = f"kind: HyperNode\nspec:\n  members:\n{members}  tier: 1\n"
    docs = load_block_yaml(text)
    assert docs == pyyaml(text)
    assert len(lines) < 20  # line by line: 8,000 lines


def test_random_repeated_items_read_back_as_pyyaml_reads_them() -> None:
    """Items of one shape with random values, a few of them changed in shape or value kind."""
    rng = random.Random(2028)
    values = ["a", "node-1", "7", "0", "yes", "null", "'q'", '"d"', "{}", "[]", "10.0.0.1", "x y", "-3"]
    odd = ["k: v", "- z", "-", "", "'open", "1.5", "a: b", "~"]
    read = 0
    for _ in range(300):
        shape = rng.choice(
            [
                ["- selector:", "    exactMatch:", "      name: {v}", "  type: {v}"],
                ["- {v}"],
                ["- a: {v}", "  b: {v}"],
                ["- - {v}", "  - {v}"],
                ["- a:", "  - {v}", "  - {v}"],
            ]
        )
        indent = " " * rng.choice([0, 2])
        body = []
        for _ in range(rng.randint(2, 9)):
            for line in shape:
                value = rng.choice(odd if rng.random() < 0.03 else values)
                body.append(indent + line.replace("{v}", value))
            if rng.random() < 0.05:
                body.append(indent + " " * rng.choice([0, 2, 4]) + "extra: 1")
        text = "m:\n" + "\n".join(body) + rng.choice(["\n", "\nz: 1\n", "\n---\nm: []\n"])
        found = load_block_yaml(text)
        if found is not None:
            read += 1
            assert found == pyyaml(text), text
    assert read > 150


def test_a_template_is_reused_only_at_its_own_depth() -> None:
    """A later document's sequence of the same shape is taken by the template learnt before, but only
    where as many containers are open (the depth limit was checked there)."""
    items = "".join(f"  - a: {i}\n    b: x\n" for i in range(4))
    shallow = f"m:\n{items}"  # the items 3 levels down: the document, m's list, the item
    deep = f"n:\n  m:\n{items}z: 1\n"  # the same lines 4 levels down (m's list at its key's indent)
    for text in (f"{shallow}---\n{shallow}", f"{shallow}---\n{deep}", f"{deep}---\n{shallow}"):
        assert load_block_yaml(text) == pyyaml(text)
    assert load_block_yaml(f"{shallow}---\n{shallow}", max_depth=3) == pyyaml(f"{shallow}---\n{shallow}")
    assert load_block_yaml(f"{shallow}---\n{deep}", max_depth=3) is None
