"""The JSON Schema of ``JobSpec``, derived from its dataclasses: the one description of a job spec.

The CLI flags, the OpenAPI document (``components/schemas/JobSpec``), the web form and the ipywidgets
composer are all built from (and tested against) this schema, so a new ``JobSpec`` field appears on every
surface once it is declared here with a title; fields without an entry in ``FIELD_TEXT`` still appear,
titled after their name. ``JOBSPEC_SCHEMA_FILE`` is the generated copy the TypeScript form imports.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any

from ranktable.compose.fault_policy import ON_FAULT_PRESETS, ON_FAULT_TEXT
from ranktable.compose.spec import (
    FRAMEWORKS,
    MAX_PARALLEL_SIZE,
    RANK_TABLE_VERSIONS,
    VOLUME_KINDS,
    EntryPoint,
    JobSpec,
    ParallelSpec,
    SecretRef,
    VolumeSpec,
)
from ranktable.compose.validate import DNS1035_LABEL, DNS1123_LABEL, DNS1123_SUBDOMAIN, POD_NAME_MAX

SCHEMA_ID = "https://jupyter-ranktable.dev/schemas/jobspec.json"
#: the generated copy the TypeScript form imports (a test checks it is current; regenerate with
#: ``python -m ranktable.compose.spec_schema``)
_PACKAGE = Path(__file__).resolve().parents[1]  # ranktable/
JOBSPEC_SCHEMA_FILE = _PACKAGE.parent / "src" / "spec" / "jobspec.schema.json"
#: the REST API's document, whose ``components/schemas/JobSpec`` is generated from here
OPENAPI_FILE = _PACKAGE / "server_ext" / "openapi.yaml"

#: per-field title, help text and UI hints (``x-ui``); ``x-cli`` is the CLI flag that sets the field
FIELD_TEXT: dict[str, dict[str, Any]] = {
    "name": {
        "title": "Job name",
        "description": "DNS-1035 label: lower-case letters, digits and '-', starting with a letter",
        "pattern": DNS1035_LABEL.pattern,
        "maxLength": POD_NAME_MAX,
        "x-cli": "--name",
    },
    "image": {"title": "Image", "description": "the training container image", "x-cli": "--image"},
    "namespace": {
        "title": "Namespace",
        "pattern": DNS1123_LABEL.pattern,
        "maxLength": POD_NAME_MAX,
        "x-cli": "--namespace",
    },
    "framework": {"title": "Framework", "enum": list(FRAMEWORKS), "x-cli": "--framework"},
    "command": {
        "title": "Command",
        "description": "the container command as a list (empty when an entry point is given)",
        "x-cli": "--command",
    },
    "entry": {
        "title": "Entry point",
        "description": "a training script the framework launcher starts (instead of a command)",
        "x-cli": "--script",
    },
    "nodes": {"title": "Nodes", "minimum": 1, "maximum": 4096, "x-cli": "--nodes"},
    "npus_per_node": {"title": "NPUs per node", "minimum": 1, "maximum": 16, "x-cli": "--npus"},
    "cpu": {"title": "CPU per pod", "description": "a Kubernetes quantity, e.g. 180", "x-cli": "--cpu"},
    "memory": {"title": "Memory per pod", "description": "e.g. 1400Gi", "x-cli": "--memory"},
    "env": {"title": "Environment", "x-cli": "--env"},
    "secret_env": {
        "title": "Environment from Secrets",
        "description": "NAME -> {secret, key}; the value never appears in the manifest",
        "x-cli": "--secret-env",
    },
    "volumes": {"title": "Volumes", "x-cli": "--hostpath/--pvc/--nfs"},
    "queue": {"title": "Volcano queue", "pattern": DNS1123_SUBDOMAIN.pattern, "x-cli": "--queue"},
    "max_retry": {"title": "Max retries", "minimum": 0, "maximum": 100, "x-cli": "--max-retry"},
    "labels": {"title": "Labels", "x-cli": "--label"},
    "routing": {
        "title": "Route plan",
        "description": "renumber ranks after the planned layout (3+ nodes)",
        "x-cli": "--routing",
    },
    "rank_table_version": {
        "title": "Rank table version",
        "enum": list(RANK_TABLE_VERSIONS),
        "x-cli": "--rank-table-version",
    },
    "node_selector": {"title": "Node selector", "x-cli": "--node-selector"},
    "flavour": {"title": "Node flavour", "x-cli": "--flavour"},
    "task_name": {
        "title": "Task name",
        "description": "the Volcano task name (empty: <job>-1)",
        "pattern": f"^$|{DNS1123_LABEL.pattern}",
        "x-cli": "--task-name",
    },
    "hccl_algo": {
        "title": "HCCL algorithm",
        "description": "HCCL_ALGO for the job, e.g. level0:NA;level1:NHR (empty: HCCL decides)",
        "x-cli": "--hccl-algo",
    },
    "metric_patterns": {
        "title": "Metric patterns",
        "description": "regexes with named groups (step, loss, step_time_s, lr, ...) for the job's metrics",
        "x-cli": "--metric-pattern",
    },
    "on_fault": {
        "title": "On fault",
        "description": ON_FAULT_TEXT,
        "enum": list(ON_FAULT_PRESETS),
        "x-cli": "--on-fault",
    },
    "resume_args": {
        "title": "Resume arguments",
        "description": "appended to the script's arguments to resume from a checkpoint, {path} and {step} "
        "filled, e.g. --load {path} (empty: the framework's own)",
        "x-cli": "--resume-args",
    },
    "avoid_nodes": {
        "title": "Nodes to avoid",
        "description": "node names the job must not run on (resume adds the nodes a fault was blamed on)",
        "x-cli": "--avoid-node",
    },
    "parallel": {
        "title": "Parallel sizes",
        "description": "tensor/context/expert/pipeline parallel sizes; the layout preview costs each group",
        "x-cli": "--parallel",
    },
}

#: nested records: text per field
NESTED_TEXT: dict[str, dict[str, dict[str, Any]]] = {
    "EntryPoint": {
        "script": {"title": "Script", "minLength": 1},
        "args": {
            "title": "Arguments",
            "type": ["array", "string"],
            "description": "a list, or one line split as a shell does: --steps 300 is two arguments",
        },
        "master_port": {"title": "Master port", "minimum": 1, "maximum": 65535},
        "python": {"title": "Python", "description": "training interpreter (empty: the launcher's own)"},
    },
    "SecretRef": {"secret": {"title": "Secret"}, "key": {"title": "Key"}},
    "ParallelSpec": {
        kind: {"title": f"{kind.upper()} size", "minimum": 1, "maximum": MAX_PARALLEL_SIZE}
        for kind in ("tp", "cp", "ep", "pp")
    },
    "VolumeSpec": {
        "name": {"title": "Name"},
        "kind": {"title": "Kind", "enum": list(VOLUME_KINDS)},
        "mount_path": {"title": "Mount path"},
        "path": {"title": "Path (hostPath, nfs)"},
        "claim": {"title": "Claim (pvc)"},
        "server": {"title": "Server (nfs)"},
        "read_only": {"title": "Read only"},
    },
}

_RECORDS: tuple[type, ...] = (EntryPoint, SecretRef, VolumeSpec, ParallelSpec)
_SCALARS: dict[Any, str] = {str: "string", int: "integer", bool: "boolean", float: "number"}


def _type_schema(tp: Any) -> dict[str, Any]:
    """JSON Schema for one annotation (scalars, lists, str-keyed dicts, our records, ``X | None``)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) != 1:
            raise TypeError(f"unsupported union {tp!r}")
        inner = _type_schema(args[0])
        if "$ref" in inner:
            return {"anyOf": [inner, {"type": "null"}]}
        return {**inner, "type": [inner["type"], "null"]}
    if origin is list:
        return {"type": "array", "items": _type_schema(typing.get_args(tp)[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": _type_schema(typing.get_args(tp)[1])}
    if tp in _RECORDS:
        return {"$ref": f"#/$defs/{tp.__name__}"}
    if tp in _SCALARS:
        return {"type": _SCALARS[tp]}
    raise TypeError(f"unsupported field type {tp!r}")


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _record_schema(cls: type, text: dict[str, dict[str, Any]]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for f in dataclasses.fields(cls):
        prop = {"title": f.name.replace("_", " ").capitalize(), **_type_schema(hints[f.name])}
        prop.update(text.get(f.name, {}))
        default = _default(f)
        if default is dataclasses.MISSING:
            required.append(f.name)
        elif not dataclasses.is_dataclass(default):
            prop["default"] = default
        properties[f.name] = prop
    return {
        "type": "object",
        "title": cls.__name__,
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def job_spec_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of ``JobSpec.to_dict()`` / ``JobSpec.from_dict`` input."""
    schema = _record_schema(JobSpec, FIELD_TEXT)
    for name in ("name", "image"):
        schema["properties"][name]["minLength"] = 1
    schema["description"] = (JobSpec.__doc__ or "").strip() or "A ranktable job: what to run, where, how."
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        **schema,
        "$defs": {cls.__name__: _record_schema(cls, NESTED_TEXT.get(cls.__name__, {})) for cls in _RECORDS},
    }


def schema_text() -> str:
    return json.dumps(job_spec_schema(), indent=2, sort_keys=False) + "\n"


def openapi_schemas() -> dict[str, Any]:
    """The same schema as OpenAPI ``components/schemas`` entries (``$defs`` become sibling components)."""
    schema = job_spec_schema()
    defs = schema.pop("$defs")
    for key in ("$schema", "$id"):
        schema.pop(key)
    text = json.dumps({"JobSpec": schema, **defs}).replace('"#/$defs/', '"#/components/schemas/')
    return dict(json.loads(text))


OPENAPI_BEGIN = (
    "    # -- generated from JobSpec by `python -m ranktable.compose.spec_schema`; do not edit --\n"
)
OPENAPI_END = "    # -- end of the generated JobSpec schemas --\n"


def openapi_block() -> str:
    import yaml

    body = yaml.safe_dump(openapi_schemas(), sort_keys=False, width=110, allow_unicode=True)
    return OPENAPI_BEGIN + "".join(f"    {line}\n" for line in body.splitlines()) + OPENAPI_END


def update_openapi(text: str) -> str:
    """The OpenAPI document with its generated JobSpec block replaced (or added under ``schemas:``)."""
    if OPENAPI_BEGIN in text:
        head, rest = text.split(OPENAPI_BEGIN, 1)
        _, tail = rest.split(OPENAPI_END, 1)
        return head + openapi_block() + tail
    head, tail = text.split("\n  schemas:\n", 1)
    return head + "\n  schemas:\n" + openapi_block() + tail


def main() -> None:
    """Regenerate the TypeScript copy and the OpenAPI components (``jlpm build:schema`` runs this)."""
    JOBSPEC_SCHEMA_FILE.write_text(schema_text())
    path = OPENAPI_FILE
    path.write_text(update_openapi(path.read_text()))
    print(f"wrote {JOBSPEC_SCHEMA_FILE} and the JobSpec schemas in {path}")


if __name__ == "__main__":
    main()
