"""openapi.yaml declares what the server requires: every field a `{}` body is refused for is `required`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.server_helpers import extension_without_cluster

OPENAPI = Path(__file__).parents[2] / "ranktable" / "server_ext" / "openapi.yaml"
DOC = yaml.safe_load(OPENAPI.read_text())


@pytest.fixture
def jp_server_config(tmp_path: Path) -> dict[str, Any]:
    return extension_without_cluster(tmp_path)


def resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = DOC["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def required_sets(schema: dict[str, Any]) -> list[set[str]]:
    """The alternative sets of required top-level fields (allOf merges, anyOf/oneOf alternatives)."""
    schema = resolve(schema)
    base = set(schema.get("required", []))
    for part in schema.get("allOf", []):
        for alternative in required_sets(part):
            base |= alternative
    alternatives = schema.get("anyOf") or schema.get("oneOf")
    if alternatives:
        return [base | extra for option in alternatives for extra in required_sets(option)]
    return [base]


def body_operations() -> list[tuple[str, str]]:
    out = []
    for path, item in DOC["paths"].items():
        for method, op in item.items():
            if method in ("post", "patch") and "requestBody" in op:
                out.append((method.upper(), path))
    return out


def concrete(path: str) -> list[str]:
    for name, value in (("{namespace}", "default"), ("{name}", "x"), ("{profile}", "x"), ("{run}", "r")):
        path = path.replace(name, value)
    for name in ("{operation}", "{forward}", "{kernel_id}"):
        path = path.replace(name, "x")
    return path.strip("/").split("/")


@pytest.mark.parametrize(("method", "path"), body_operations())
async def test_a_field_the_server_requires_is_declared_required(
    jp_fetch: Any, method: str, path: str
) -> None:
    op = DOC["paths"][path][method.lower()]
    schema = op["requestBody"]["content"]["application/json"]["schema"]
    response = await jp_fetch(*concrete(path), method=method, body="{}", raise_error=False)
    reply = json.loads(response.body)
    if response.code == 400 and "is required" in (reply.get("reason") or ""):
        field = reply["field"]
        assert any(field in s for s in required_sets(schema)), (
            f"{method} {path}: the server requires `{field}` but openapi.yaml does not declare it required"
        )
        assert op["requestBody"].get("required") is True, f"{method} {path}: requestBody is required"


@pytest.mark.parametrize(("method", "path"), body_operations())
def test_declared_required_fields_exist_in_the_properties(method: str, path: str) -> None:
    schema = DOC["paths"][path][method.lower()]["requestBody"]["content"]["application/json"]["schema"]
    properties: set[str] = set()

    def collect(s: dict[str, Any]) -> None:
        s = resolve(s)
        properties.update(s.get("properties", {}))
        for key in ("allOf", "anyOf", "oneOf"):
            for part in s.get(key, []):
                collect(part)

    collect(schema)
    for required in required_sets(schema):
        assert required <= properties, f"{method} {path}: required {required - properties} not in properties"
