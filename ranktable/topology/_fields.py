"""Typed access to parsed JSON/YAML that remembers where each value sits, so errors can name it.

Every loader walks untrusted documents; wrapping values in :class:`Field` lets a bad value be reported
as ``hypernodes.yaml: items[3].spec.members[0].selector: <reason>`` without threading paths by hand.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from ranktable.errors import InputError
from ranktable.limits import brief, load_json, load_yaml_all

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def location(source: str, path: str) -> str | None:
    """The ``where`` text of an error: ``source: path``, either part optional."""
    if source and path:
        return f"{source}: {path}"
    return source or path or None


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


class Field:
    """A value from a document plus its field path and the document's name.

    The path is built only when an error needs it (loaders walk hundreds of thousands of fields).
    """

    __slots__ = ("_key", "_parent", "_path", "source", "value")

    def __init__(self, value: Any, path: str = "", source: str = "") -> None:
        self.value = value
        self.source = source
        self._path: str | None = path
        self._parent: Field | None = None
        self._key: str | int = ""

    @property
    def path(self) -> str:
        if self._path is None:
            assert self._parent is not None
            self._path = self._parent.child_path(self._key)
        return self._path

    # -- errors ---------------------------------------------------------------------------------
    def error(self, reason: str, fix: str | None = None) -> InputError:
        return InputError(reason, where=location(self.source, self.path), fix=fix)

    # -- navigation -----------------------------------------------------------------------------
    def child_path(self, key: str | int) -> str:
        if isinstance(key, int):
            return f"{self.path}[{key}]"
        if _PLAIN_KEY.match(key):
            return f"{self.path}.{key}" if self.path else key
        return f"{self.path}[{json.dumps(key)}]"

    def child(self, key: str | int, value: Any) -> Field:
        out = Field(value, "", self.source)
        out._path = None
        out._parent = self
        out._key = key
        return out

    def mapping(self) -> dict[str, Any]:
        if not isinstance(self.value, dict):
            raise self.error(f"expected a mapping, got {type_name(self.value)}")
        return self.value

    def has(self, key: str) -> bool:
        return isinstance(self.value, dict) and self.value.get(key) is not None

    def opt(self, key: str) -> Field | None:
        """The child ``key``, or None when it is absent or null."""
        value = self.mapping().get(key)
        return None if value is None else self.child(key, value)

    def key(self, key: str, fix: str | None = None) -> Field:
        """The child ``key``; an error naming the field when it is missing."""
        found = self.opt(key)
        if found is None:
            raise self.child(key, None).error("is required but missing", fix=fix)
        return found

    def items(self) -> Iterator[Field]:
        if not isinstance(self.value, list):
            raise self.error(f"expected a list, got {type_name(self.value)}")
        for index, value in enumerate(self.value):
            yield self.child(index, value)

    def entries(self) -> Iterator[tuple[str, Field]]:
        for key, value in self.mapping().items():
            yield str(key), self.child(str(key), value)

    # -- scalars --------------------------------------------------------------------------------
    def text(self, allow_empty: bool = False) -> str:
        """A string (numbers are accepted and turned into text: IPs and ids are often unquoted)."""
        value = self.value
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise self.error(f"expected a string, got {type_name(value)}")
        out = str(value).strip()
        if not out and not allow_empty:
            raise self.error("must not be empty")
        return out

    def integer(self, minimum: int | None = None, maximum: int | None = None) -> int:
        """An int, accepting the platform's string-typed numbers ("8"), within [minimum, maximum]."""
        value = self.value
        if isinstance(value, bool):
            raise self.error(f"expected an integer, got {type_name(value)}")
        if isinstance(value, int):
            out = value
        elif (isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value)) or (
            isinstance(value, float) and value.is_integer()
        ):
            out = int(value)
        else:
            raise self.error(f"expected an integer, got {brief(value)}")
        if minimum is not None and out < minimum:
            raise self.error(f"must be at least {minimum}, got {out}")
        if maximum is not None and out > maximum:
            raise self.error(f"must be at most {maximum:,} (the limit), got {brief(out)}")
        return out

    def number(self, positive: bool = True) -> float:
        value = self.value
        if isinstance(value, bool):
            raise self.error(f"expected a number, got {type_name(value)}")
        try:
            out = float(value)
        except (TypeError, ValueError):
            raise self.error(f"expected a number, got {brief(value)}") from None
        if out != out or out in (float("inf"), float("-inf")):
            raise self.error(f"expected a finite number, got {brief(value)}")
        if positive and out <= 0:
            raise self.error(f"must be greater than 0, got {brief(value)}")
        return out

    def string_list(self) -> list[str]:
        return [item.text() for item in self.items()]


# -- parsing ------------------------------------------------------------------------------------
def parse_json(text: str, source: str, path: str = "") -> Any:
    """JSON within the nesting and integer limits of `ranktable.limits`; errors name the line."""
    return load_json(text, location(source, path), line_in_where=bool(source and not path))


def parse_yaml_documents(text: str, source: str) -> list[Any]:
    """Every document of a (possibly multi-document) YAML stream; JSON is YAML too.

    Aliases are counted expanded, so an alias bomb is refused instead of reaching an error message.
    """
    return load_yaml_all(text, source or None, line_in_where=True)


def parse_documents(text: str, source: str) -> list[Any]:
    """Every document of a file: JSON as JSON (one document; ~10x faster than YAML's reader, which
    reads JSON too), else YAML's (possibly many) documents."""
    if text.lstrip().startswith(("{", "[")):
        return [parse_json(text, source)]
    return parse_yaml_documents(text, source)


def parse_document(text: str, source: str) -> Any:
    """One JSON or YAML document (JSON first: it is faster and its errors are clearer for JSON)."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        return parse_json(text, source)
    return single_document([doc for doc in parse_yaml_documents(text, source) if doc is not None], source)


def single_document(docs: list[Any], source: str) -> Any:
    """The one document of a file that must hold exactly one."""
    if len(docs) != 1:
        raise InputError(f"expected one YAML document, found {len(docs)}", where=source or None)
    return docs[0]
