"""The three PATCH flavours: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge.

Strategic merge is what kubectl and the Python client send for core types: like a merge patch, but
lists of named things (containers, env, volumes, ...) merge by their key instead of being replaced.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch

from ranktable.sim.k8s import errors

# Lists that merge by a key in core types (the `patchMergeKey` tags of k8s.io/api), by field name.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "imagePullSecrets": "name",
    "tolerations": "key",
    "hostAliases": "ip",
    "conditions": "type",
    "ownerReferences": "uid",
    "finalizers": "",  # merged as a set of scalars
    "addresses": "type",
}


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: Any, operations: Any) -> Any:
    if not isinstance(operations, list):
        raise errors.bad_request("json patch must be a list of operations")
    try:
        return jsonpatch.apply_patch(target, operations)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
        raise errors.ApiError(
            422, "Invalid", f"the server rejected our request due to an error in our request: {exc}"
        ) from exc


def _merge_list(field: str, target: list[Any], patch: list[Any]) -> list[Any]:
    key = MERGE_KEYS.get(field)
    if key is None:
        return copy.deepcopy([p for p in patch if not (isinstance(p, dict) and "$patch" in p)])
    if key == "":
        out = list(target)
        out.extend(p for p in patch if p not in out)
        return out
    out = copy.deepcopy(target)
    for item in patch:
        if not isinstance(item, dict):
            continue
        directive = item.get("$patch")
        if directive == "replace":
            return copy.deepcopy([p for p in patch if not (isinstance(p, dict) and "$patch" in p)])
        index = next(
            (i for i, t in enumerate(out) if isinstance(t, dict) and t.get(key) == item.get(key)), None
        )
        if directive == "delete":
            if index is not None:
                del out[index]
        elif index is None:
            out.append(strategic_merge({}, item))
        else:
            out[index] = strategic_merge(out[index], item)
    return out


def strategic_merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            name = key.split("/", 1)[1]
            result[name] = [v for v in result.get(name, []) if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, list) and isinstance(result.get(key), list):
            result[key] = _merge_list(key, result[key], value)
        elif isinstance(value, list):
            result[key] = _merge_list(key, [], value)
        else:
            result[key] = strategic_merge(result.get(key), value)
    return result


def apply_patch(content_type: str, target: Any, body: Any, builtin: bool) -> Any:
    """Dispatch on the PATCH content type; 415 for strategic merge on custom resources (as upstream)."""
    media = content_type.split(";")[0].strip().lower()
    if media == "application/merge-patch+json":
        return merge_patch(target, body)
    if media == "application/json-patch+json":
        return json_patch(target, body)
    if media == "application/strategic-merge-patch+json":
        if not builtin:
            raise errors.unsupported_media_type(media)
        return strategic_merge(target, body)
    raise errors.unsupported_media_type(media or "(none)")
