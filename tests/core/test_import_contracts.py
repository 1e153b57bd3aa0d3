"""The import-linter contracts in pyproject.toml catch layer violations (lint-imports on a mutated copy)."""

from __future__ import annotations

import json
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
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree), "COLUMNS": "400"},
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
        ("ranktable.choice.cost", "import jupyter_server", "The core imports no Jupyter"),
        ("ranktable.plan.planner", "from ranktable import magics", "never upwards"),
        ("ranktable.plan.planner", "from ranktable.choice import cost", "never upwards"),
        ("ranktable.remote.sync", "import ranktable.server_ext.routes", "Adapters don't import interfaces"),
        ("ranktable.sim.notebook", "import ranktable.remote.profiles", "never upwards"),  # adapters apart
        ("ranktable.magics", "from ranktable.cli import jobs", "never upwards"),  # interfaces apart
        ("ranktable.usecases.jobs", "import ranktable.sim.pool", "Only the CLI imports the simulators"),
        ("ranktable.cli.jobs", "from ranktable.cluster import client", "only through the use cases"),
        ("ranktable.magic_results", "import ranktable.remote.run", "only through the use cases"),
        ("ranktable.stray", "import json", "every module in a layer"),  # a new module in no layer
        ("ranktable.usecases.jobs", "import kubernetes", "kubernetes and urllib3"),
        ("ranktable.cluster.client", "import paramiko", "paramiko and watchdog"),
        ("ranktable.cluster.client", "import tornado", "Jupyter, Tornado"),
        ("ranktable.remote.connection", "from ranktable.remote import sync", "Inside remote/"),
        ("ranktable.sim.k8s.server", "import ranktable.sim.pool", "Inside sim/"),
        ("ranktable.hccl.model", "import ranktable.hccl.io", "No import cycles"),
    ],
)
def test_a_layer_violation_breaks_its_contract(tmp_path: Path, module: str, line: str, contract: str) -> None:
    tree = _copy_tree(tmp_path)
    target = _module_file(tree, module)
    before = target.read_text() if target.exists() else '"""A module nobody placed in a layer."""\n'
    target.write_text(before + f"\n{line}  # mutation\n")
    result = _lint(tree)
    assert result.returncode == 1, result.stdout + result.stderr
    broken = [row for row in result.stdout.splitlines() if " BROKEN" in row]
    assert any(contract in row for row in broken), result.stdout


# The core's third-party packages: an allow-list (what it truly needs), checked on the import graph.
CORE = ["topology", "hccl", "plan", "choice", "collectives", "render", "observe", "compose", "launch"]
CORE += ["errors", "limits", "home", "probe", "pump", "_version", "examples"]
CORE_ALLOWED = {
    "numpy",  # hccl columns, observe series
    "yaml",  # topology and job files
    "msgspec",  # platform rank tables at json.load speed (hccl/fastread.py)
    "re2",  # linear-time regexes for the error catalogue and users' patterns
    "jupyter_core",  # home.py: Jupyter's data dir when it is installed (optional)
}


def core_third_party(root: Path) -> dict[str, set[str]]:
    """{third-party package: core modules importing it} for the package at `root`."""
    code = (
        "import json, sys, grimp\n"
        "g = grimp.build_graph('ranktable', include_external_packages=True, cache_dir=None)\n"
        f"core = {CORE!r}\n"
        "out = {}\n"
        "for m in g.modules:\n"
        "    if m.startswith('ranktable.') and m.split('.')[1] in core:\n"
        "        for i in g.find_modules_directly_imported_by(m):\n"
        "            top = i.split('.')[0]\n"
        "            if top != 'ranktable' and top not in sys.stdlib_module_names:\n"
        "                out.setdefault(top, []).append(m)\n"
        "print(json.dumps(out))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=root, env={"PYTHONPATH": str(root)}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return {name: set(users) for name, users in json.loads(done.stdout).items()}


def test_the_core_imports_only_allowed_third_party_packages() -> None:
    found = core_third_party(ROOT)
    assert set(found) <= CORE_ALLOWED, {k: v for k, v in found.items() if k not in CORE_ALLOWED}


def test_a_new_third_party_import_in_the_core_is_caught(tmp_path: Path) -> None:
    tree = _copy_tree(tmp_path)
    target = _module_file(tree, "ranktable.plan.planner")
    target.write_text(target.read_text() + "\nimport pathspec  # mutation\n")
    assert core_third_party(tree)["pathspec"] == {"ranktable.plan.planner"}
