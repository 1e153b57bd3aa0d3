"""What one JobSpec field means to a person, declared on the field itself (``dataclasses.field(metadata=)``).

The JSON Schema, the CLI flags, the web form's sections, the ipywidgets composer and the docs' field table
are all derived from this, so a new field is declared once, beside its type and default.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ranktable.limits import MAX_COUNT

#: the form's sections, in the order it shows them (``FieldInfo.group`` names one)
GROUPS = (
    "Basics",
    "What runs",
    "Resources",
    "Environment and secrets",
    "Storage",
    "Scheduling and faults",
    "Advanced",
)
_KEY = "ranktable"


@dataclass(frozen=True)
class FieldInfo:
    """Title, help, form section, CLI flag and limits of one field.

    ``minimum``/``maximum``/``pattern``/``max_length`` go into the JSON Schema (what the form and the API
    reject); ``limit`` and ``floor`` are what ``from_dict`` itself refuses (a named limit of
    ``ranktable.limits`` by default); ``check`` normalises or refuses a read value with an error naming
    the field; ``flag_style`` "line" reads a list from one shell-split line instead of a repeated flag.
    """

    title: str
    help: str = ""
    group: str = "Advanced"
    flag: str = ""
    metavar: str = ""
    choices: tuple[str, ...] = ()
    minimum: int | None = None
    maximum: int | None = None
    pattern: str = ""
    max_length: int | None = None
    limit: int = MAX_COUNT
    floor: int | None = None
    flag_style: str = ""
    example: Any = None
    required_fix: str = ""
    check: Callable[[Any, str], Any] | None = None
    schema: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.group not in GROUPS:
            raise ValueError(f"unknown group {self.group!r}; use one of {GROUPS}")


def info(title: str, **kwargs: Any) -> dict[str, FieldInfo]:
    """The ``metadata=`` of a dataclass field: ``x: int = field(default=1, metadata=info("X", ...))``."""
    return {_KEY: FieldInfo(title, **kwargs)}


def info_of(f: dataclasses.Field[Any]) -> FieldInfo:
    """A field's info; a field declared without one is titled after its name (in the Advanced section)."""
    found = f.metadata.get(_KEY)
    return found if isinstance(found, FieldInfo) else FieldInfo(f.name.replace("_", " ").capitalize())


def default_of(f: dataclasses.Field[Any]) -> Any:
    """The field's default value (a fresh one for factories), or ``dataclasses.MISSING`` when required."""
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING
