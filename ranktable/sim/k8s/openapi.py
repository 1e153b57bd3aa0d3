"""A minimal OpenAPI v3: an index and one document per group/version.

kubectl's `apply` checks that the PATCH operation of the object's kind declares a `fieldValidation`
query parameter; when it does, kubectl sends `fieldValidation=Strict` and leaves checking to the
server (see `QueryParamVerifierV3` in k8s.io/cli-runtime). For `kubectl explain`, Volcano's kinds carry
the schemas Volcano publishes (crds/) and the built-in kinds those of the official client's models
(core_schemas); the rest are open objects.
"""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

from ranktable.sim.k8s.core_schemas import builtin_schemas, component_name, model_name
from ranktable.sim.k8s.discovery import SERVER_VERSION
from ranktable.sim.k8s.resources import RESOURCES, ResourceType

CRD_DIR = Path(__file__).with_name("crds")


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def v2_protobuf() -> bytes:
    """An empty OpenAPI v2 document in gnostic's protobuf form (`swagger`, `info`, `paths`).

    kubectl fetches `/openapi/v2` (protobuf only) before any `apply`; with no definitions in it, its
    client-side validation has nothing to check and, because the v3 documents declare
    `fieldValidation`, it leaves validation to the server.
    """
    info = _field(1, b"Kubernetes") + _field(2, str(SERVER_VERSION["gitVersion"]).encode())
    return _field(1, b"2.0") + _field(2, info) + _field(8, b"")


@functools.cache
def _crd_file(group: str, plural: str) -> dict[str, Any] | None:
    path = CRD_DIR / f"{group}_{plural}.json"
    return dict(json.loads(path.read_text())) if path.is_file() else None


def crd_schema(r: ResourceType) -> dict[str, Any] | None:
    """Volcano's published OpenAPI v3 schema of a custom resource (see crds/SOURCE.md), if we have it."""
    if r.builtin:
        return None
    crd = _crd_file(r.group, r.plural)
    schema = (crd or {}).get("versions", {}).get(r.version)
    return dict(schema) if isinstance(schema, dict) else None


def _path_prefix(group_version: str) -> str:
    return "api/v1" if group_version == "v1" else f"apis/{group_version}"


def _hash(group_version: str) -> str:
    return hashlib.sha256(group_version.encode()).hexdigest()[:16].upper()


def index() -> dict[str, Any]:
    gvs = sorted({r.group_version for r in RESOURCES})
    return {
        "paths": {
            _path_prefix(gv): {"serverRelativeURL": f"/openapi/v3/{_path_prefix(gv)}?hash={_hash(gv)}"}
            for gv in gvs
        }
    }


def _schema_name(r: ResourceType) -> str:
    group = r.group or "core"
    return f"io.ranktable.sim.{group}.{r.version}.{r.kind}"


def _gvk(r: ResourceType) -> dict[str, str]:
    return {"group": r.group, "version": r.version, "kind": r.kind}


def _operation(r: ResourceType, action: str, params: list[str], schema: str) -> dict[str, Any]:
    return {
        "operationId": f"{action}{r.kind}",
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(r),
        "parameters": [
            {"name": p, "in": "query", "schema": {"type": "string", "uniqueItems": True}} for p in params
        ],
        "responses": {
            "200": {
                "description": "OK",
                "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}},
            }
        },
    }


def document(path: str) -> dict[str, Any] | None:
    """The document for `api/v1` or `apis/<group>/<version>`, or None."""
    gv = "v1" if path == "api/v1" else path.removeprefix("apis/")
    found = [r for r in RESOURCES if r.group_version == gv]
    if not found:
        return None
    write_params = ["dryRun", "fieldManager", "fieldValidation", "pretty"]
    paths: dict[str, Any] = {}
    schemas: dict[str, Any] = dict(builtin_schemas(tuple(r for r in found if r.builtin)))
    for r in found:
        builtin = component_name(model_name(r)) if r.builtin else ""
        name = builtin if builtin in schemas else _schema_name(r)
        base = f"/{_path_prefix(gv)}/" + (
            f"namespaces/{{namespace}}/{r.plural}" if r.namespaced else r.plural
        )
        paths[base] = {
            "get": _operation(
                r, "list", ["labelSelector", "fieldSelector", "watch", "resourceVersion"], name
            ),
            "post": _operation(r, "post", write_params, name),
        }
        paths[base + "/{name}"] = {
            "get": _operation(r, "get", [], name),
            "put": _operation(r, "put", write_params, name),
            "patch": _operation(r, "patch", [*write_params, "force"], name),
            "delete": _operation(r, "delete", ["gracePeriodSeconds", "propagationPolicy"], name),
        }
        if name in schemas:
            continue
        published = crd_schema(r)
        if published is not None:
            schemas[_schema_name(r)] = {**published, "x-kubernetes-group-version-kind": [_gvk(r)]}
            continue
        schemas[_schema_name(r)] = {
            "type": "object",
            "description": f"{r.kind} ({r.api_version}) as served by the ranktable simulated pool.",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
            "x-kubernetes-preserve-unknown-fields": True,
            "x-kubernetes-group-version-kind": [_gvk(r)],
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": SERVER_VERSION["gitVersion"]},
        "paths": paths,
        "components": {"schemas": schemas},
    }
