"""The import-linter contracts in pyproject.toml catch layer violations (lint-imports on a mutated copy)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _copy_tree(tmp_path: Path) -> Path:
    shutil.copytree(
        ROOT / "ranktable",
        tmp_path / "ranktable",
        ignore=shutil.ignore_patterns("labextension", "__pycache__", "node_modules", "*.json", "*.svg"),
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tree,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def _module_file(tree: Path, dotted: str) -> Path:
    base = tree.joinpath(*dotted.split("."))
    return base / "__init__.py" if base.is_dir() else base.with_suffix(".py")


def test_the_tree_keeps_every_contract(tmp_path: Path) -> None:
    result = _lint(_copy_tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "line", "contract"),
    [
        ("ranktable.cost", "import jupyter_server", "The core imports no Jupyter"),
        ("ranktable.plan.planner", "from ranktable import magics", "never upwards"),
        ("ranktable.remote.sync", "import ranktable.server_ext.routes", "Adapters don't import interfaces"),
        ("ranktable.magics", "from ranktable.cli import jobs", "Interfaces don't import each other"),
        ("ranktable.usecases.jobs", "import ranktable.sim.pool", "Only the CLI and the demo"),
        ("ranktable.cli.jobs", "from ranktable.cluster import client", "only through the use cases"),
        ("ranktable.magic_results", "import ranktable.remote.run", "only through the use cases"),
    ],
)
def test_a_layer_violation_breaks_its_contract(tmp_path: Path, module: str, line: str, contract: str) -> None:
    tree = _copy_tree(tmp_path)
    target = _module_file(tree, module)
    target.write_text(target.read_text() + f"\n{line}  # mutation\n")
    result = _lint(tree)
    assert result.returncode == 1, result.stdout + result.stderr
    broken = [row for row in result.stdout.splitlines() if row.endswith(" BROKEN")]
    assert any(contract in row for row in broken), result.stdout
