"""Lazy package exports (PEP 562), shared by the packages whose names are imported on first use.

A package names the submodule each public name lives in; a command that needs one submodule (a cold
`ranktable job list`) then does not pay for the others' imports, numpy among them (#28).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, homes: dict[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The package's module `__getattr__`: `name` from `package.<homes[name]>`, kept in `namespace`."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{home}"), name)
        namespace[name] = value
        return value

    return __getattr__
