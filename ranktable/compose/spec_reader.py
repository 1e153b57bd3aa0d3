"""JSON-like input -> a spec dataclass, read by its type hints and field info, so errors name the exact path.

Every JobSpec field (and every field added later) is read the same way: absent or ``""`` means "not
set" (the default), and so does ``None`` where the type allows it (``X | None``, as the schema says);
scalars are type-checked against their named limits, records are read recursively, and a field's own
``check`` has the last word.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from ranktable.compose.argv import shell_words
from ranktable.compose.field_info import FieldInfo, default_of, info_of
from ranktable.errors import ContentError, InputError
from ranktable.limits import brief

T = TypeVar("T")


def read_record(cls: type[T], value: Any, where: str) -> T:
    """One dataclass from a mapping: unknown keys refused, missing ones defaulted, each field checked."""
    data = _mapping(value, where)
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    names = [f.name for f in fields]
    unknown = sorted(set(data) - set(names))
    if unknown:
        raise InputError(
            f"unknown field(s) {', '.join(map(str, unknown))}",
            where=where,
            fix=f"use only: {', '.join(names)}",
        )
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for f in fields:
        about, path, raw = info_of(f), f"{where}.{f.name}", data.get(f.name)
        if raw is None and f.name in data and not _nullable(hints[f.name]):
            raise InputError("must not be null", where=path, fix=f"set {about.title} or leave the field out")
        if raw is None or (isinstance(raw, str) and raw == ""):  # not set: the default
            if default_of(f) is dataclasses.MISSING:
                raise InputError(
                    "is required", where=path, fix=about.required_fix or f"give the {about.title}"
                )
            continue
        value = read_value(hints[f.name], raw, path, about)
        values[f.name] = _content(about.check, value, path) if about.check else value
    return cls(**values)


def _nullable(tp: Any) -> bool:
    """``X | None``: the schema says null is allowed (for every other type it says it is not)."""
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in typing.get_args(tp)


def read_value(tp: Any, raw: Any, where: str, about: FieldInfo) -> Any:
    """One value of annotation ``tp`` (scalars, ``X | None``, lists, str-keyed dicts, records)."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        (inner,) = [a for a in typing.get_args(tp) if a is not type(None)]
        if inner is str and isinstance(raw, int | float) and not isinstance(raw, bool):
            return str(raw)  # a quantity given as a number, e.g. cpu: 96
        return read_value(inner, raw, where, about)
    if origin is list:
        (item,) = typing.get_args(tp)
        if isinstance(raw, str) and about.flag_style == "line":
            return shell_words(raw, where)
        return [read_value(item, v, f"{where}[{i}]", about) for i, v in enumerate(_list(raw, where))]
    if origin is dict:
        item = typing.get_args(tp)[1]
        return {
            str(k): read_value(item, _text(v, item), f"{where}.{k}", about)
            for k, v in _mapping(raw, where).items()
        }
    if dataclasses.is_dataclass(tp):
        return read_record(typing.cast(type, tp), raw, where)
    if tp is str:
        return _choice(_str(raw, where), where, about.choices)
    if tp is bool:
        return _bool(raw, where)
    if tp is int:
        return _int(raw, where, about)
    raise TypeError(f"{where}: unsupported field type {tp!r}")


def _text(value: Any, tp: Any) -> Any:
    """Map values may be numbers in YAML/JSON (``A: 1``); the spec keeps them as text."""
    if tp is str and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def _choice(text: str, where: str, choices: tuple[str, ...]) -> str:
    if choices and text not in choices:
        raise InputError(
            f"unknown value {text!r}",
            where=where,
            fix=f"use one of {', '.join(c or '(empty)' for c in choices)}",
        )
    return text


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"expected an object, got {type(value).__name__}", where=where)
    return value


def _content(check: Callable[[Any, str], Any], value: Any, where: str) -> Any:
    """A field's own check (an HCCL algorithm, a regex, a topology rule) judges what a well-typed value
    means; what it refuses is a `ContentError` (a 422 to the API: no schema can state it)."""
    try:
        return check(value, where)
    except ContentError:
        raise
    except InputError as exc:
        raise ContentError(exc.reason, where=exc.where, fix=exc.fix) from exc


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise InputError(f"expected a list, got {type(value).__name__}", where=where)
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise InputError(f"expected a string, got {value!r}", where=where)
    return value


def _int(value: Any, where: str, about: FieldInfo) -> int:
    """A whole number (or its decimal text) within the field's ``floor`` and named ``limit``."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 20:
            value = int(value)
        elif isinstance(value, float) and value.is_integer() and abs(value) <= 2**53:
            value = int(value)  # JSON Schema's integer: 8.0 is one (clients that only have doubles send it)
        else:
            raise InputError(f"expected a whole number, got {brief(value)}", where=where)
    if value > about.limit:
        raise InputError(f"must be at most {about.limit:,} (the limit), got {brief(value)}", where=where)
    if about.floor is not None and value < about.floor:
        raise InputError(f"must be from {about.floor} to {about.limit}; got {value}", where=where)
    return value


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise InputError(f"expected true or false, got {value!r}", where=where)
