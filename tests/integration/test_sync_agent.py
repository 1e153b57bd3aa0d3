"""The per-user connection agent: CLI syncs reuse one SSH connection across runs; its socket is private;
it is never required (a refused agent folder or RANKTABLE_AGENT=0 means the CLI syncs itself)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from ranktable.cli import main
from ranktable.remote import agent
from ranktable.remote.manager import default_manager
from tests.integration.fixtures.sshd import SshdProfile


@pytest.fixture
def with_agent(
    sshd_profile: SshdProfile, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[SshdProfile]:
    monkeypatch.setenv("RANKTABLE_AGENT", "1")
    monkeypatch.setenv("RANKTABLE_AGENT_IDLE", "60")
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    (tmp_path / "run").mkdir(mode=0o700)
    try:
        yield sshd_profile
    finally:
        agent.stop()
        default_manager().close()


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text("print('v1')\n")
    return project


def test_cli_syncs_reuse_one_connection_through_the_agent(
    with_agent: SshdProfile, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server, remote = with_agent.server, with_agent.remote_dir
    project = _project(tmp_path)
    assert main(["sync", "box", str(project)]) == 0
    assert "uploaded 1 file(s)" in capsys.readouterr().out
    assert (remote / "train.py").read_text() == "print('v1')\n"
    connections = server.connection_pids()
    assert len(connections) == 1  # the agent's connection (the CLI process opened none)
    (project / "train.py").write_text("print('v2')\n")
    assert main(["sync", "box", str(project)]) == 0
    assert main(["sync", "box", str(project)]) == 0
    out = capsys.readouterr().out
    assert "uploaded 1 file(s)" in out and "unchanged 1" in out
    assert (remote / "train.py").read_text() == "print('v2')\n"
    assert server.connection_pids() == connections  # same SSH connection for every run
    # Conflicts and errors come back through the agent as usual (exit 1, one line).
    (remote / "train.py").write_text("edited remotely\n")
    (project / "train.py").write_text("print('v3')\n")
    assert main(["sync", "box", str(project)]) == 1
    assert "conflict: train.py" in capsys.readouterr().out
    assert main(["sync", "ghost", str(project)]) == 1
    assert "no SSH profile named 'ghost'" in capsys.readouterr().err
    assert main(["ssh", "agent", "status"]) == 0
    assert "agent running" in capsys.readouterr().out


def test_agent_socket_is_private(with_agent: SshdProfile, tmp_path: Path) -> None:
    assert main(["sync", "box", str(_project(tmp_path))]) == 0
    path = agent.socket_path()
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path.parent.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert os.stat(path).st_uid == os.getuid()


def test_a_folder_others_can_enter_is_refused_and_the_cli_syncs_itself(
    with_agent: SshdProfile, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shared = tmp_path / "run" / f"ranktable-{os.getuid()}"
    shared.mkdir(mode=0o700)
    shared.chmod(0o777)  # as if someone prepared it for us
    with pytest.raises(agent.AgentUnavailable, match="not a private folder"):
        agent.socket_path()
    project = _project(tmp_path)
    assert main(["sync", "box", str(project)]) == 0  # in-process, as before the agent existed
    assert (with_agent.remote_dir / "train.py").exists()
    assert not list(shared.iterdir())  # nothing was created in the unsafe folder
