"""One state root (#30.6): `c.Ranktable.state_dir` holds every record (profiles, forwards, remote-kernel
records, host keys), and the CLI started from JupyterLab's terminal sees the profiles the panel added."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.fixtures.sshd import SshServer
from tests.integration.server_helpers import call, extension_with_state
from tests.integration.test_server_remote import profile_body


@pytest.fixture
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RANKTABLE_HOME", str(tmp_path / "elsewhere"))  # what the server must not use
    return tmp_path / "state"


@pytest.fixture
def jp_server_config(state_dir: Path) -> dict[str, Any]:
    return extension_with_state(state_dir)


async def test_the_terminal_cli_sees_the_panels_profiles(
    jp_fetch: Any, sshd: SshServer, state_dir: Path, tmp_path: Path
) -> None:
    from ranktable.remote.forwards import _forwards_dir as forwards_dir
    from ranktable.remote.kernel_records import KernelRecords

    await call(
        jp_fetch, "ranktable", "profiles", method="POST", body=profile_body(sshd, tmp_path), expect=201
    )
    assert (state_dir / "profiles.json").is_file()
    assert not (tmp_path / "elsewhere").exists()
    # a terminal or a kernel started by this server inherits its environment
    listed = subprocess.run(
        [sys.executable, "-m", "ranktable", "ssh", "list"],
        capture_output=True,
        text=True,
        env=dict(os.environ),
    )
    assert listed.returncode == 0, listed.stderr
    assert "box" in listed.stdout
    assert forwards_dir().resolve() == (state_dir / "forwards").resolve()
    assert KernelRecords().directory.resolve() == (state_dir / "remote-kernels").resolve()
