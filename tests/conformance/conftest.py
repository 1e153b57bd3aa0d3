"""The conformance suite: the same scenarios on the Python pool and the real control plane.

Run by `make conformance` (after `make controlplane`); the normal test run leaves it out because the
real control plane needs the Go build. `RANKTABLE_CONTROL_PLANES=python` limits it to one plane.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conformance.planes import Plane

HERE = Path(__file__).parent


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Collected only when asked for: by `make conformance` or by naming this folder on the command line."""
    if os.environ.get("RANKTABLE_CONFORMANCE") == "1":
        return None
    asked = any(str(Path(a.split("::")[0]).resolve()).startswith(str(HERE)) for a in config.args)
    return None if asked else True


def _planes() -> list[str]:
    return [p for p in os.environ.get("RANKTABLE_CONTROL_PLANES", "python,real").split(",") if p]


@pytest.fixture(scope="session", params=_planes())
def plane(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Plane]:
    """A pool started through the CLI switch (`ranktable sim start --control-plane NAME`)."""
    name = str(request.param)
    state = tmp_path_factory.mktemp(f"plane-{name}")
    home = tmp_path_factory.mktemp(f"home-{name}")
    shared = tmp_path_factory.mktemp(f"shared-{name}")  # node-mounted shared storage (SFS Turbo)
    shared.chmod(0o755)
    argv = [sys.executable, "-m", "ranktable", "sim", "start", "--control-plane", name]
    argv += ["--state-dir", str(state), "--nodes", "4", "--leaves", "2", "--shared-storage", str(shared)]
    argv += ["--user", "alice", "--user", "bob", "--user", "carol:viewer"]  # a team (test_team.py)
    out = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
    assert out.returncode == 0, f"sim start --control-plane {name} failed: {out.stderr}"
    lines = dict(line.split("=", 1) for line in out.stdout.splitlines() if line.startswith("KUBECONFIG="))
    handle = Plane(name, Path(lines["KUBECONFIG"]), state, home, shared)
    try:
        yield handle
    finally:
        subprocess.run(
            [sys.executable, "-m", "ranktable", "sim", "stop", "--state-dir", str(state)],
            capture_output=True,
            timeout=120,
            check=False,
        )
        shutil.rmtree(home, ignore_errors=True)
