"""OpenAPI v3 schemas of the built-in kinds, from the official client's models (for `kubectl explain`).

The kubernetes package's models are pydantic classes generated from Kubernetes' own OpenAPI document,
field descriptions included, so pydantic's JSON schema of `V1Pod` is the published schema in another
dialect. Two differences are undone: optional fields come as `anyOf: [X, null]` (Kubernetes writes X,
and a reference with a description as `allOf: [$ref]`), and class docstrings carry the generator's
"Attributes:" note after the description.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from ranktable.sim.k8s.resources import ResourceType

REF_PREFIX = "#/components/schemas/"
_VERSIONED = re.compile(r"^(V\d+(?:alpha\d+|beta\d+)?)([A-Z]\w*)$")


def model_name(r: ResourceType) -> str:
    """The client's class for a built-in kind: `V1Pod`, `V1SelfSubjectAccessReview`."""
    return f"{r.version.capitalize()}{r.kind}"


def component_name(model: str) -> str:
    """`V1Container` -> `io.ranktable.sim.v1.Container`: kubectl shows the part after the last dot."""
    found = _VERSIONED.match(model)
    return f"io.ranktable.sim.{found[1].lower()}.{found[2]}" if found else f"io.ranktable.sim.{model}"


def _description(text: str) -> str:
    return text.split("\n\nAttributes:", 1)[0].split("Attributes:\n", 1)[0].strip()


def _clean(node: Any) -> Any:
    """Kubernetes' dialect of a pydantic schema node (see the module docstring)."""
    if isinstance(node, list):
        return [_clean(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {k: _clean(v) for k, v in node.items() if k not in ("title", "default")}
    if isinstance(out.get("$ref"), str):
        out["$ref"] = REF_PREFIX + component_name(out["$ref"].removeprefix(REF_PREFIX))
    options = out.get("anyOf")
    if isinstance(options, list):
        kept = [o for o in options if o != {"type": "null"}]
        if len(kept) == 1:
            out.pop("anyOf")
            only = kept[0]
            if "$ref" in only and len(only) == 1:
                out["allOf"] = [only]
            else:
                out.update(only)
    if isinstance(out.get("description"), str):
        out["description"] = _description(out["description"])
    return out


@functools.cache
def builtin_schemas(resources: tuple[ResourceType, ...]) -> dict[str, dict[str, Any]]:
    """{component name: schema} for the kinds the client has models of, with everything they reference."""
    from kubernetes import client

    schemas: dict[str, dict[str, Any]] = {}
    for r in resources:
        model = getattr(client, model_name(r), None)
        if model is None or not hasattr(model, "model_json_schema"):
            continue
        schema = model.model_json_schema(by_alias=True, ref_template=REF_PREFIX + "{model}")
        for name, sub in (schema.pop("$defs", None) or {}).items():
            schemas.setdefault(component_name(name), _clean(sub))
        gvk = {"group": r.group, "version": r.version, "kind": r.kind}
        schemas[component_name(model_name(r))] = {**_clean(schema), "x-kubernetes-group-version-kind": [gvk]}
    return schemas
