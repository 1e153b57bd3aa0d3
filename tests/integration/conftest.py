"""Fixtures for the integration tests only: real OpenSSH sshd, the simulated pool and pytest-jupyter's server.

Each area keeps its fixtures in tests/integration/fixtures/<area>.py. They are imported here, not listed in
the top-level `pytest_plugins`, so the core tests run without paramiko, kubernetes or Jupyter installed.
"""

import os
import signal
from collections.abc import Iterator

import pytest
from pytest_jupyter.jupyter_server import *  # noqa: F403

from tests.integration.fixtures.simpool import *  # noqa: F403
from tests.integration.fixtures.sshd import *  # noqa: F403


@pytest.fixture(autouse=True)
def no_warm_cli(monkeypatch: pytest.MonkeyPatch) -> None:
    """`ranktable job ...` subprocesses run in-process: a warm server per test's RANKTABLE_HOME would
    outlive the test (tests/integration/test_cli_warm.py turns it on and stops it)."""
    monkeypatch.setenv("RANKTABLE_WARM", "0")


@pytest.fixture
def ctrl_c() -> Iterator[None]:
    """Ctrl-C raises KeyboardInterrupt during the test even when the runner was started with SIGINT
    ignored (a background job of a non-interactive shell), as a terminal user's Ctrl-C does."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture(autouse=True)
def _restore_ranktable_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server extension exports `c.Ranktable.state_dir` as RANKTABLE_HOME (one state root for the
    process and its children); put the test process' value back after each test."""
    value = os.environ.get("RANKTABLE_HOME")
    if value is None:
        monkeypatch.delenv("RANKTABLE_HOME", raising=False)
    else:
        monkeypatch.setenv("RANKTABLE_HOME", value)
