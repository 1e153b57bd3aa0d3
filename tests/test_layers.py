"""The pure core must not import Jupyter, SSH or Kubernetes: dependencies point inward."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "ranktable"
CORE = ["topology", "hccl", "plan", "cost.py", "collectives", "render", "errors.py", "observe"]
# The job composer is core too: it builds manifests as data and may use kubernetes.utils (quantity
# parsing) but never a client, SSH or Jupyter.
COMPOSER = [
    "jobs/spec.py",
    "jobs/compose.py",
    "jobs/validate.py",
    "jobs/launchers.py",
    "jobs/launch.py",
    "jobs/flavours.py",
]
FORBIDDEN = (
    "jupyter",
    "jupyterlab",
    "tornado",
    "paramiko",
    "kubernetes",
    "ipywidgets",
    "IPython",
    "ranktable.remote",
    "ranktable.jobs",
    "ranktable.sim",
    "ranktable.server_ext",
    "ranktable.cli",
)


def core_files() -> list[Path]:
    files: list[Path] = []
    for name in CORE + COMPOSER:
        path = PACKAGE / name
        if path.is_dir():
            files.extend(sorted(path.rglob("*.py")))
        elif path.exists():
            files.append(path)
    return files


def imported_modules(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", core_files(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_core_module_imports_nothing_outward(path: Path) -> None:
    allowed = (
        "kubernetes.utils",
        *(f"ranktable.{name[:-3].replace('/', '.')}" for name in COMPOSER),
    )
    bad = sorted(
        m
        for m in imported_modules(path)
        if any(m == f or m.startswith(f + ".") for f in FORBIDDEN) and not m.startswith(allowed)
    )
    assert bad == [], f"{path.name} imports {bad}; the core must stay free of adapters and interfaces"
