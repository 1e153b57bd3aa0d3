"""Kubernetes LabelSelector matching (``matchLabels`` and ``matchExpressions`` with In, NotIn, Exists,
DoesNotExist), as HyperNode ``labelMatch`` members use it. The official client only serialises selectors;
evaluating them against a node list is the API server's job, which a file-based loader has no access to.
"""

from __future__ import annotations

from collections.abc import Callable

from ranktable.topology._fields import Field


def _requirement_matcher(expr: Field) -> tuple[str, str, set[str]]:
    key = expr.key("key").text()
    operator = expr.key("operator").text()
    values_field = expr.opt("values")
    values = set(values_field.string_list()) if values_field is not None else set()
    if operator in ("In", "NotIn"):
        if not values:
            raise expr.error(f"operator {operator} needs a non-empty `values` list")
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            raise expr.error(f"operator {operator} takes no `values`")
    else:
        raise expr.child("operator", operator).error(
            f"unknown operator {operator!r}", fix="use In, NotIn, Exists or DoesNotExist"
        )
    return key, operator, values


def label_selector_matches(selector: Field) -> Callable[[dict[str, str]], bool]:
    """A predicate ``labels -> bool`` for a Kubernetes LabelSelector (empty selector matches all)."""
    wanted = {k: v.text(allow_empty=True) for k, v in (selector.opt("matchLabels") or Field({})).entries()}
    exprs = selector.opt("matchExpressions")
    requirements = [_requirement_matcher(e) for e in exprs.items()] if exprs is not None else []

    def matches(labels: dict[str, str]) -> bool:
        if any(labels.get(k) != v for k, v in wanted.items()):
            return False
        for key, operator, values in requirements:
            present = key in labels
            if operator == "In" and not (present and labels[key] in values):
                return False
            if operator == "NotIn" and present and labels[key] in values:
                return False
            if operator == "Exists" and not present:
                return False
            if operator == "DoesNotExist" and present:
                return False
        return True

    return matches
