"""The simulated pool says how its pods are confined, and says it loudly when they are not (#30.7)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ranktable.sim.controllers.sandbox import Confinement


def ranktable(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ranktable", *argv], capture_output=True, text=True, env=env, timeout=120
    )


def test_detect_names_why_pods_would_run_unconfined(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no bubblewrap on PATH
    conf = Confinement.detect()
    assert not conf.active
    assert "bubblewrap is not installed" in conf.reason
    assert conf.describe().startswith("UNCONFINED")


def test_detect_confines_with_bubblewrap() -> None:
    """`make system-deps` installs bubblewrap: the default pool confines its pods."""
    conf = Confinement.detect()
    assert conf.active and conf.reason == ""
    assert conf.describe().startswith("confined")


def test_start_warns_and_status_reports_an_unconfined_pool(tmp_path: Path) -> None:
    state = tmp_path / "sim"
    empty_path = tmp_path / "bin"
    empty_path.mkdir()
    env = dict(os.environ, RANKTABLE_HOME=str(tmp_path / "home"), PATH=str(empty_path))
    started = ranktable("sim", "start", "--state-dir", str(state), "--nodes", "2", "--leaves", "1", env=env)
    try:
        assert started.returncode == 0, started.stderr
        assert "pods: UNCONFINED" in started.stdout
        assert "warning: the simulated pool's UNCONFINED" in started.stderr
        assert "bubblewrap is not installed" in started.stderr
        status = ranktable("sim", "status", "--state-dir", str(state), env=env)
        assert status.returncode == 0, status.stderr
        assert "running (pid" in status.stdout
        assert "KUBECONFIG=" in status.stdout and "pods: UNCONFINED" in status.stdout
    finally:
        ranktable("sim", "stop", "--state-dir", str(state), env=env)
    stopped = ranktable("sim", "status", "--state-dir", str(state), env=env)
    assert stopped.returncode == 1
    assert "not running" in stopped.stdout
