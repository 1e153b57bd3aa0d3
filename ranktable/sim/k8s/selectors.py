"""Label and field selectors with the syntax and error wording of apimachinery."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ranktable.sim.k8s import errors

Obj = dict[str, Any]
Predicate = Callable[[Obj], bool]

_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_SET_EXPR = re.compile(r"^\s*([^\s!=()]+)\s+(in|notin)\s+\(([^)]*)\)\s*$")

# Fields each resource type can be selected by, beyond metadata.name / metadata.namespace.
FIELD_PATHS = {
    "pods": ("status.phase", "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "status.podIP"),
    "events": (  # the real server's field labels for core/v1 Events (pkg/registry/core/event)
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ),
    "nodes": ("spec.unschedulable",),
    "namespaces": ("status.phase",),
    "secrets": ("type",),
}


def _split_top(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p for p in (p.strip() for p in parts) if p]


def _check_key(key: str, selector: str) -> None:
    if not _LABEL_KEY.match(key) or len(key.split("/")[-1]) > 63:
        raise errors.bad_request(
            f'unable to parse requirement: invalid label key "{key}": name part must consist of alphanumeric '
            f"characters, '-', '_' or '.', and must start and end with an alphanumeric character "
            f"(in selector {selector!r})"
        )


@dataclass(frozen=True)
class Requirement:
    """One clause of a label selector: `key op values` (op: =, !=, in, notin, exists, !)."""

    key: str
    op: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: dict[str, str]) -> bool:
        value = labels.get(self.key)
        if self.op == "exists":
            return self.key in labels
        if self.op == "!":
            return self.key not in labels
        if self.op in ("=", "in"):
            return value in self.values
        return value not in self.values  # != and notin


def _requirement(part: str, selector: str) -> Requirement:
    m = _SET_EXPR.match(part)
    if m:
        key, op = m.group(1), m.group(2)
        values = frozenset(v.strip() for v in m.group(3).split(",") if v.strip())
    else:
        for sep in ("!=", "==", "="):
            if sep in part:
                key, value = (x.strip() for x in part.split(sep, 1))
                op, values = ("!=" if sep == "!=" else "="), frozenset({value})
                break
        else:
            op = "!" if part.startswith("!") else "exists"
            key, values = part.lstrip("!").strip(), frozenset()
    _check_key(key, selector)
    return Requirement(key, op, values)


def parse_label_selector(selector: str | None) -> Predicate:
    """`a=b,c!=d,e in (x,y),f notin (z),g,!h` -> predicate over an object's metadata.labels."""
    requirements = [_requirement(part, selector or "") for part in _split_top(selector or "")]

    def match(obj: Obj) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(r.matches(labels) for r in requirements)

    return match


def match_label_selector(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A structured LabelSelector (matchLabels + matchExpressions), as in pod affinity terms."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and labels.get(key) in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


# field labels that name another place in the object
FIELD_ALIASES = {"source": "source.component"}


def _field_value(obj: Obj, path: str) -> str:
    cur: Any = obj
    path = FIELD_ALIASES.get(path, path)
    for part in path.split("."):
        if not isinstance(cur, dict):
            return ""
        cur = cur.get(part)
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    return str(cur)


def parse_field_selector(selector: str | None, plural: str) -> Predicate:
    """`metadata.name=x,status.phase!=Running` for the fields the real server indexes."""
    allowed = ("metadata.name", "metadata.namespace", *FIELD_PATHS.get(plural, ()))
    clauses: list[tuple[str, bool, str]] = []  # (path, equal, value)
    for part in _split_top(selector or ""):
        for op in ("!=", "==", "="):
            if op in part:
                path, value = (x.strip() for x in part.split(op, 1))
                break
        else:
            raise errors.bad_request(f"invalid selector: '{selector}'; can't understand '{part}'")
        if path not in allowed:
            raise errors.bad_request(f"field label not supported: {path}")
        clauses.append((path, op != "!=", value))

    def match(obj: Obj) -> bool:
        return all((_field_value(obj, path) == value) == equal for path, equal, value in clauses)

    return match
