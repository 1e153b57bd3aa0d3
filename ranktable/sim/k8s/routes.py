"""Kubernetes REST paths: `/api/v1/namespaces/ns/pods/x/log`, `/apis/g/v/...` -> resource, namespace, name."""

from __future__ import annotations

from dataclasses import dataclass

from ranktable.sim.k8s.resources import ResourceType, find

TRUE_WORDS = {"1", "t", "T", "TRUE", "true", "True"}


@dataclass
class Route:
    rtype: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None


def parse_bool(value: str | None) -> bool:
    return value is not None and value in TRUE_WORDS


def resolve(path: str) -> Route | None:
    """Map `/api/v1/namespaces/ns/pods/x/log` and `/apis/g/v/...` to a resource, namespace, name."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 2 and parts[0] == "api" and parts[1] == "v1":
        group, version, rest = "", "v1", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if not rest:
        return None
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3:
        namespace, rest = rest[1], rest[2:]
    rtype = find(group, version, rest[0])
    if rtype is None:
        return None
    name = rest[1] if len(rest) > 1 else None
    sub = rest[2] if len(rest) > 2 else None
    if len(rest) > 3 or (namespace is not None and not rtype.namespaced):
        return None
    if sub is not None and sub not in rtype.subresources:
        return None
    return Route(rtype, namespace, name, sub)
