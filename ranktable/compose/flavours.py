"""Node flavours: how many NPUs, vCPUs and GiB of memory one server of a pool offers.

Validation checks per-pod requests against the flavour. The table is configurable so other pools
(or future server types) need no code change: a JSON or YAML file named by ``RANKTABLE_FLAVOURS``,
or ``$RANKTABLE_HOME/flavours.yaml``, maps names to ``{npus, vcpus, memory_gib}``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ranktable.errors import InputError
from ranktable.home import ranktable_home

DEFAULT_FLAVOUR = "Snt9B"


@dataclass(frozen=True)
class Flavour:
    name: str
    npus: int
    vcpus: int
    memory_gib: int

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "npus": self.npus, "vcpus": self.vcpus, "memory_gib": self.memory_gib}


BUILTIN_FLAVOURS: dict[str, Flavour] = {
    "Snt9B": Flavour("Snt9B", npus=8, vcpus=192, memory_gib=1536),
}


def flavour_file() -> Path:
    configured = os.environ.get("RANKTABLE_FLAVOURS")
    return Path(configured) if configured else ranktable_home() / "flavours.yaml"


def parse_flavours(data: Any, where: str) -> dict[str, Flavour]:
    """Turn ``{name: {npus, vcpus, memory_gib}}`` into flavours, naming the bad field on error."""
    if not isinstance(data, dict):
        raise InputError("expected a mapping of flavour name -> {npus, vcpus, memory_gib}", where=where)
    out: dict[str, Flavour] = {}
    for name, entry in data.items():
        if not isinstance(entry, dict):
            raise InputError("expected {npus, vcpus, memory_gib}", where=f"{where}: {name}")
        values: dict[str, int] = {}
        for key in ("npus", "vcpus", "memory_gib"):
            value = entry.get(key)
            if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
                raise InputError(
                    f"{key} must be a positive integer, got {value!r}",
                    where=f"{where}: {name}.{key}",
                    fix=f"set {key} to the server's {key.replace('_', ' ')}",
                )
            values[key] = value
        out[str(name)] = Flavour(str(name), **values)
    return out


def load_flavours(path: Path | None = None) -> dict[str, Flavour]:
    """Built-in flavours overlaid with the configured file (when it exists)."""
    table = dict(BUILTIN_FLAVOURS)
    file = path or flavour_file()
    if file.is_file():
        try:
            data = yaml.safe_load(file.read_text())
        except yaml.YAMLError as exc:
            raise InputError(f"not valid YAML/JSON: {exc}", where=str(file)) from exc
        table.update(parse_flavours(data or {}, str(file)))
    return table
