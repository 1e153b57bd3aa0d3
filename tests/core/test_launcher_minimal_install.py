"""The launcher's minimal install (docs/install.md): the standard library, PyYAML and numpy, nothing else.

A fresh venv sees only those and this checkout; the launcher then waits, routes and starts the ranks, and a
command that needs an absent dependency says so in one line.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy
import pytest
import yaml

from tests.core.test_jobs_launch import launch_argv, ranks_started, server_ip, write_tables

ROOT = Path(__file__).resolve().parents[2]
MINIMAL = {"yaml": Path(yaml.__file__).parent, "numpy": Path(numpy.__file__).parent}


@pytest.fixture(scope="module")
def minimal_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv without pip or site packages, plus only ranktable, yaml (+ _yaml) and numpy (+ numpy.libs)."""
    base = tmp_path_factory.mktemp("launcher")
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(base / "venv")], check=True, timeout=120
    )
    site = base / "site"
    site.mkdir()
    (site / "ranktable").symlink_to(ROOT / "ranktable")
    for name, path in MINIMAL.items():
        (site / name).symlink_to(path)
        for extra in (path.parent / f"_{name}", path.parent / f"{name}.libs"):
            if extra.exists():
                (site / extra.name).symlink_to(extra)
    python = base / "venv" / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "ranktable-minimal.pth").write_text(f"{site}\n")
    return python


def run(python: Path, *argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(python), *argv],
        env={"PATH": "/usr/bin:/bin", "HOME": str(python.parents[2]), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize("module", ["paramiko", "kubernetes", "jupyter_server", "tornado", "ipywidgets"])
def test_the_minimal_venv_really_lacks_the_product_dependencies(minimal_python: Path, module: str) -> None:
    assert run(minimal_python, "-c", f"import {module}").returncode == 1


def test_the_launcher_routes_and_starts_every_local_rank(minimal_python: Path, tmp_path: Path) -> None:
    table = write_tables(tmp_path)
    done = run(
        minimal_python,
        *launch_argv(steps=1),
        RANK_TABLE_FILE=str(table),
        ip=server_ip(1),
        ROUTE_PLAN="true",
    )
    assert done.returncode == 0, done.stderr
    assert "route plan applied: NODE_RANK=2" in done.stderr
    assert [rank for rank, _ in ranks_started(done.stdout)] == list(range(16, 24))


@pytest.mark.parametrize(
    ("argv", "package"),
    # `job diagnose --logs` reads local files: the error catalogue (re2) is its first absent dependency
    # (`job list` needs none beyond PyYAML now: its calls go through http.client, #28)
    [(["ssh", "list"], "paramiko"), (["job", "diagnose", "--logs", "{log}"], "google-re2")],
)
def test_a_command_needing_an_absent_dependency_is_one_line(
    minimal_python: Path, tmp_path: Path, argv: list[str], package: str
) -> None:
    log = tmp_path / "rank_0.log"
    log.write_text("step 1 loss 2.5\n", encoding="utf-8")
    argv = [a.format(log=log) for a in argv]
    done = run(minimal_python, "-m", "ranktable", *argv, RANKTABLE_HOME=str(tmp_path), KUBECONFIG="/dev/null")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and f"'{package}'" in lines[0] and "pip install jupyter-ranktable" in lines[0]
