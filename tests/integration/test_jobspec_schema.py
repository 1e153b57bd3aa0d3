"""JobSpec is the single source: one JSON Schema generated from the dataclass drives the CLI flags, the
OpenAPI document, the TypeScript form (its generated copy) and the ipywidgets JobComposer. Each surface
must offer every field the schema declares."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from ranktable.cli import build_parser
from ranktable.compose.field_info import GROUPS, info
from ranktable.compose.spec import JobSpec
from ranktable.compose.spec_flags import add_spec_flags, spec_from_args
from ranktable.compose.spec_schema import (
    DOCS_FILE,
    JOBSPEC_SCHEMA_FILE,
    OPENAPI_FILE,
    field_table,
    job_spec_schema,
    openapi_schemas,
    schema_text,
    update_docs,
    update_openapi,
)
from ranktable.errors import InputError
from ranktable.widgets import JobComposer

FIELDS = [f.name for f in dataclasses.fields(JobSpec)]

#: per field: CLI arguments that set it and the value they give (a new JobSpec field fails here until
#: its flag exists)
CLI_EXAMPLES: dict[str, tuple[list[str], Any]] = {
    "name": (["--name", "bert"], "bert"),
    "image": (["--image", "img:v2"], "img:v2"),
    "namespace": (["-n", "team-a"], "team-a"),
    "framework": (["--framework", "pytorch"], "pytorch"),
    "command": (["--command", "python train.py --lr 0.1"], ["python", "train.py", "--lr", "0.1"]),
    "entry": (
        [
            "--script",
            "train.py",
            "--script-args",
            "--epochs 3",
            "--master-port",
            "29600",
            "--python",
            "python3",
        ],
        {"script": "train.py", "args": ["--epochs", "3"], "master_port": 29600, "python": "python3"},
    ),
    "nodes": (["--nodes", "4"], 4),
    "npus_per_node": (["--npus", "4"], 4),
    "cpu": (["--cpu", "180"], "180"),
    "memory": (["--memory", "1400Gi"], "1400Gi"),
    "env": (["--env", "A=1"], {"A": "1"}),
    "secret_env": (["--secret-env", "TOKEN=hub:token"], {"TOKEN": {"secret": "hub", "key": "token"}}),
    "volumes": (
        ["--pvc", "data:claim-1:/data"],
        [
            {
                "name": "data",
                "kind": "pvc",
                "mount_path": "/data",
                "path": "",
                "claim": "claim-1",
                "server": "",
                "read_only": False,
            }
        ],
    ),
    "queue": (["--queue", "research"], "research"),
    "max_retry": (["--max-retry", "5"], 5),
    "labels": (["--label", "team=nlp"], {"team": "nlp"}),
    "routing": (["--routing"], True),
    "rank_table_version": (["--rank-table-version", "v1"], "v1"),
    "node_selector": (["--node-selector", "pool=a"], {"pool": "a"}),
    "flavour": (["--flavour", "Big"], "Big"),
    "task_name": (["--task-name", "worker"], "worker"),
    "hccl_algo": (["--hccl-algo", "level0:NA;level1:NHR"], "level0:NA;level1:NHR"),
    "parallel": (["--parallel", "tp=8,pp=2"], {"tp": 8, "cp": 1, "ep": 1, "pp": 2}),
    "metric_patterns": (["--metric-pattern", r"loss=(?P<loss>\S+)"], [r"loss=(?P<loss>\S+)"]),
    "on_fault": (["--on-fault", "resume"], "resume"),
    "resume_args": (["--resume-args", "--load {path}"], "--load {path}"),
    "network_topology": (["--network-topology", "hard:1"], "hard:1"),
    "avoid_nodes": (["--avoid-node", "node-1", "--avoid-node", "node-2"], ["node-1", "node-2"]),
}

#: per field: how a user sets it in the widget, and the value the spec gets
WIDGET_EXAMPLES: dict[str, tuple[Any, Any]] = {
    "name": ("bert", "bert"),
    "image": ("img:v2", "img:v2"),
    "namespace": ("team-a", "team-a"),
    "framework": ("pytorch", "pytorch"),
    "command": ("python train.py", ["/bin/bash", "-c", "python train.py"]),
    "entry": (
        {"script": "train.py", "args": "--epochs 3", "master_port": 29600, "python": "python3"},
        {"script": "train.py", "args": ["--epochs", "3"], "master_port": 29600, "python": "python3"},
    ),
    "nodes": (4, 4),
    "npus_per_node": (4, 4),
    "cpu": ("180", "180"),
    "memory": ("1400Gi", "1400Gi"),
    "env": ("A=1", {"A": "1"}),
    "secret_env": ("TOKEN=hub:token", {"TOKEN": {"secret": "hub", "key": "token"}}),
    "volumes": (
        "pvc:data:claim-1:/data",
        [{"kind": "pvc", "name": "data", "claim": "claim-1", "mount_path": "/data"}],
    ),
    "queue": ("research", "research"),
    "max_retry": (5, 5),
    "labels": ("team=nlp", {"team": "nlp"}),
    "routing": (True, True),
    "rank_table_version": ("v1", "v1"),
    "node_selector": ("pool=a", {"pool": "a"}),
    "flavour": ("Big", "Big"),
    "task_name": ("worker", "worker"),
    "hccl_algo": ("level0:NA;level1:NHR", "level0:NA;level1:NHR"),
    "parallel": ({"tp": 8, "pp": 2}, {"tp": 8, "cp": 1, "ep": 1, "pp": 2}),
    "metric_patterns": (r"loss=(?P<loss>\S+)", [r"loss=(?P<loss>\S+)"]),
    "on_fault": ("restart", "restart"),
    "resume_args": ("--load {path}", "--load {path}"),
    "network_topology": ("soft:2", "soft:2"),
    "avoid_nodes": ("node-1", ["node-1"]),
}


def test_the_schema_declares_every_jobspec_field_and_accepts_what_to_dict_writes() -> None:
    schema = job_spec_schema()
    assert list(schema["properties"]) == FIELDS
    assert schema["required"] == ["name", "image"]
    validator = Draft202012Validator(schema)
    spec = JobSpec.from_dict({"name": "bert", "image": "img", **{k: v for k, (_, v) in CLI_EXAMPLES.items()}})
    validator.validate(spec.to_dict())
    errors = {e.path[0] for e in validator.iter_errors({"name": "Bad_Name", "image": "i", "nodes": 0})}
    assert errors == {"name", "nodes"}


def test_generated_copies_are_current() -> None:
    """The TS form's copy and the OpenAPI block: regenerate with `python -m ranktable.compose.spec_schema`."""
    assert JOBSPEC_SCHEMA_FILE.read_text() == schema_text()
    text = OPENAPI_FILE.read_text()
    assert update_openapi(text) == text


def test_openapi_uses_the_jobspec_schema_for_every_spec_body() -> None:
    doc = yaml.safe_load(OPENAPI_FILE.read_text())
    schemas = doc["components"]["schemas"]
    for name, schema in openapi_schemas().items():
        assert schemas[name] == schema
    assert list(schemas["JobSpec"]["properties"]) == FIELDS
    ref = {"$ref": "#/components/schemas/JobSpec"}

    def spec_body(path: str) -> dict[str, Any]:
        body = doc["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
        return dict(body["properties"]["spec"])

    for path in ("/ranktable/jobs", "/ranktable/layout/preview"):
        assert spec_body(path) == ref, path
    # compose reads a draft: whatever is not yet a JobSpec is an issue of its 200 answer, not a 400
    draft = spec_body("/ranktable/jobs/compose")
    assert draft["type"] == "object" and draft["additionalProperties"] is True
    assert "components/schemas/JobSpec" in draft["description"]


def cli_spec(argv: list[str]) -> dict[str, Any]:
    args = build_parser().parse_args(["job", "compose", *argv])
    return spec_from_args(args).to_dict()


@pytest.mark.parametrize("field", FIELDS)
def test_the_cli_sets_every_field(field: str) -> None:
    assert set(CLI_EXAMPLES) == set(FIELDS), "a JobSpec field without a CLI flag"
    argv, expected = CLI_EXAMPLES[field]
    base = [a for a in ("--name", "bert", "--image", "img") if field not in ("name", "image")]
    spec = cli_spec(
        [*base, *argv] if field not in ("name", "image") else ["--name", "bert", "--image", "img", *argv]
    )
    assert spec[field] == expected
    flag = argv[0]
    documented = job_spec_schema()["properties"][field]["x-cli"]
    assert flag.lstrip("-") in documented or flag == "-n", (flag, documented)


def test_cli_help_and_choices_come_from_the_schema() -> None:
    sub = build_parser()._subparsers._group_actions[0]  # type: ignore[union-attr]
    compose = sub.choices["job"]._subparsers._group_actions[0].choices["compose"]
    assert "--framework" in compose.format_help()  # the JobSpec's flags are added when first needed
    actions = {a.dest: a for a in compose._actions if isinstance(a, argparse.Action)}
    props = job_spec_schema()["properties"]
    assert actions["spec_framework"].choices == props["framework"]["enum"]
    assert actions["spec_rank_table_version"].choices == props["rank_table_version"]["enum"]
    assert actions["spec_name"].help == props["name"]["description"]


@pytest.mark.parametrize("field", FIELDS)
def test_the_widget_offers_every_field(field: str) -> None:
    assert set(WIDGET_EXAMPLES) == set(FIELDS), "a JobSpec field without a widget"
    form = JobComposer()
    assert list(form.fields) == FIELDS
    value, expected = WIDGET_EXAMPLES[field]
    if field in ("entry", "parallel"):
        for part, v in value.items():
            form.fields[field].parts[part].value = v
    else:
        getattr(form, field).value = value
    assert form.spec_dict()[field] == expected
    # what the widget produces is valid JobSpec input that keeps the value
    data = {"name": "bert", "image": "img", **{k: v for k, v in form.spec_dict().items() if v != ""}}
    assert field in JobSpec.from_dict(data).to_dict()


def test_the_docs_field_table_is_current() -> None:
    """docs/jobs.md's table of fields: regenerate with `python -m ranktable.compose.spec_schema`."""
    text = DOCS_FILE.read_text()
    assert update_docs(text) == text
    for name in FIELDS:
        assert f"| `{name}` |" in text, name


def test_every_field_has_a_form_section_and_the_sections_are_ordered() -> None:
    schema = job_spec_schema()
    assert schema["x-groups"] == list(GROUPS)
    groups = {name: prop["x-group"] for name, prop in schema["properties"].items()}
    assert set(groups) == set(FIELDS) and set(groups.values()) <= set(GROUPS)
    assert (
        groups["name"] == "Basics"
        and groups["volumes"] == "Storage"
        and groups["on_fault"] == ("Scheduling and faults")
    )


@dataclasses.dataclass
class SpecWithGangMode(JobSpec):
    """JobSpec plus one field declared the way every field is: one edit, the metadata beside it."""

    gang_mode: str = dataclasses.field(
        default="",
        metadata=info(
            "Network topology",
            help="how tightly Volcano packs the pods",
            group="Scheduling and faults",
            flag="--gang-mode",
            choices=("", "hard", "soft"),
        ),
    )


def test_a_field_declared_once_reaches_the_schema_flags_openapi_form_widget_and_docs() -> None:
    prop = job_spec_schema(SpecWithGangMode)["properties"]["gang_mode"]
    assert prop["enum"] == ["", "hard", "soft"] and prop["x-cli"] == "--gang-mode"
    assert prop["x-group"] == "Scheduling and faults" and prop["default"] == ""
    assert openapi_schemas(SpecWithGangMode)["JobSpec"]["properties"]["gang_mode"] == prop
    # the CLI: the flag exists with its help and choices, and sets the field
    parser = argparse.ArgumentParser()
    add_spec_flags(parser, required=True, spec_class=SpecWithGangMode)
    args = parser.parse_args(["--name", "bert", "--image", "img", "--gang-mode", "hard"])
    spec = spec_from_args(args, SpecWithGangMode)
    assert isinstance(spec, SpecWithGangMode) and spec.gang_mode == "hard"
    with pytest.raises(SystemExit):
        parser.parse_args(["--name", "bert", "--image", "img", "--gang-mode", "loose"])
    # to_dict/from_dict carry it and name it in errors
    assert SpecWithGangMode.from_dict(spec.to_dict()) == spec
    with pytest.raises(InputError) as err:
        SpecWithGangMode.from_dict({"name": "b", "image": "i", "gang_mode": "loose"})
    assert err.value.where == "spec.gang_mode" and "hard" in (err.value.fix or "")
    # the widget offers it, in the schema's order, and reads it back
    form = JobComposer(spec_class=SpecWithGangMode)
    assert list(form.fields) == [*FIELDS, "gang_mode"]
    form.fields["gang_mode"].widget.value = "soft"
    assert form.spec_dict()["gang_mode"] == "soft"
    # the docs table lists it in its section
    assert "| Scheduling and faults | `gang_mode` | `--gang-mode` |" in field_table(SpecWithGangMode)
