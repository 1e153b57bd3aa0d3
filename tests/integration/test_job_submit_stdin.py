"""`ranktable job compose ... | ranktable job submit -` through a real pipe, into the simulated pool."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from ranktable.cli import main
from tests.integration.fixtures.simpool import SimPoolHandle

RANKTABLE = [sys.executable, "-m", "ranktable"]


@pytest.fixture
def pool(sim_pool_factory: Callable[..., SimPoolHandle]) -> SimPoolHandle:
    return sim_pool_factory()


def cluster(pool: SimPoolHandle) -> list[str]:
    return ["--kubeconfig", str(pool.kubeconfig), "--context", pool.context]


def test_compose_piped_into_submit_dash(
    pool: SimPoolHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = {**os.environ, "RANKTABLE_HOME": str(tmp_path / "home")}
    compose = [*RANKTABLE, "job", "compose", "--name", "piped", "--image", "img:v1", "--command", "sleep 1"]
    with subprocess.Popen(compose, stdout=subprocess.PIPE, env=env) as producer:
        submitted = subprocess.run(
            [*RANKTABLE, "job", "submit", "-", *cluster(pool)],
            stdin=producer.stdout,
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
    assert producer.returncode == 0
    assert submitted.returncode == 0, submitted.stderr
    assert "job piped submitted in default" in submitted.stdout
    assert main(["job", "list", *cluster(pool)]) == 0
    assert "piped" in capsys.readouterr().out


def test_a_job_spec_on_stdin_is_composed_and_submitted(pool: SimPoolHandle, tmp_path: Path) -> None:
    env = {**os.environ, "RANKTABLE_HOME": str(tmp_path / "home")}
    spec = '{"name": "fromspec", "image": "img:v1", "nodes": 1, "command": ["sleep", "1"]}'
    submitted = subprocess.run(
        [*RANKTABLE, "job", "submit", "-", *cluster(pool)],
        input=spec,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert submitted.returncode == 0, submitted.stderr
    assert "job fromspec submitted" in submitted.stdout
