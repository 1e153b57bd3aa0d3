"""The `ranktable ssh|sync|download|exec` commands against a real sshd: output and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ranktable.cli import main
from ranktable.remote.manager import default_manager
from tests.integration.fixtures.sshd import SshServer, keygen


@pytest.fixture(autouse=True)
def _fresh_manager(ranktable_home: Path) -> object:
    yield
    default_manager().close()


def _add(sshd: SshServer, remote: Path, *extra: str) -> None:
    argv = ["ssh", "add", "box", "--host", sshd.host, "--port", str(sshd.port), "--user", sshd.user]
    argv += ["--key", str(sshd.client_key), "--remote-dir", str(remote), *extra]
    assert main(argv) == 0


def _add_trusted(sshd: SshServer, home: Path, remote: Path) -> None:
    """Profile ``box`` with the server's host key already pinned in ``home``'s known_hosts."""
    _add(sshd, remote)
    sshd.write_known_hosts(home / "known_hosts")


def _project_on_box(sshd: SshServer, home: Path, tmp_path: Path, a_py: str) -> tuple[Path, Path]:
    """A trusted ``box`` profile (remote ``tmp_path/remote``, not yet created), a project with ``a.py``."""
    remote = tmp_path / "remote"
    _add_trusted(sshd, home, remote)
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.py").write_text(a_py)
    return remote, project


def test_profile_lifecycle_and_host_key_acceptance(
    sshd: SshServer, ranktable_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _add(sshd, tmp_path / "remote")
    profiles = json.loads((ranktable_home / "profiles.json").read_text())
    assert profiles["profiles"]["box"]["port"] == sshd.port
    assert (ranktable_home / "profiles.json").stat().st_mode & 0o777 == 0o600
    assert main(["ssh", "add", "box", "--host", "h"]) == 1  # duplicate
    assert "already exists" in capsys.readouterr().err
    assert main(["ssh", "add", "9bad", "--host", "h"]) == 1
    assert "invalid profile name" in capsys.readouterr().err

    assert main(["ssh", "list"]) == 0
    assert "box" in capsys.readouterr().out

    assert main(["ssh", "test", "box"]) == 1
    err = capsys.readouterr().err
    assert sshd.host_key_fingerprint in err
    assert f"ranktable ssh test box --accept-host-key {sshd.host_key_fingerprint}" in err

    assert main(["ssh", "test", "box", "--accept-host-key", "SHA256:" + "B" * 43]) == 1
    assert "nothing was saved" in capsys.readouterr().err
    assert main(["ssh", "test", "box", "--accept-host-key", sshd.host_key_fingerprint]) == 0
    assert "ok: " in capsys.readouterr().out
    assert main(["ssh", "test", "box"]) == 0

    assert main(["ssh", "remove", "box"]) == 0
    assert main(["ssh", "test", "box"]) == 1
    assert "no SSH profile named 'box'" in capsys.readouterr().err


def test_sync_download_and_exec(
    sshd: SshServer, ranktable_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    remote, project = _project_on_box(sshd, ranktable_home, tmp_path, "print('a')\n")
    assert main(["sync", "box", str(project), "--dry-run"]) == 0
    assert "would upload 1 file(s)" in capsys.readouterr().out and not remote.exists()
    assert main(["sync", "box", str(project)]) == 0
    assert (remote / "a.py").read_text() == "print('a')\n"

    (remote / "a.py").write_text("print('changed on the instance')\n")
    (project / "a.py").write_text("print('changed locally!')\n")
    assert main(["sync", "box", str(project)]) == 1
    assert "conflict: a.py" in capsys.readouterr().out
    assert main(["sync", "box", str(project), "--force"]) == 0
    assert (remote / "a.py").read_text() == "print('changed locally!')\n"

    (project / "a.py").unlink()
    assert main(["sync", "box", str(project)]) == 0 and (remote / "a.py").exists()
    assert main(["sync", "box", str(project), "--delete"]) == 0 and not (remote / "a.py").exists()

    (remote / "out").mkdir()
    (remote / "out" / "r.txt").write_text("result")
    assert main(["download", "box", "out", str(tmp_path / "got")]) == 0
    assert (tmp_path / "got" / "r.txt").read_text() == "result"
    assert main(["download", "box", "../project", str(tmp_path / "x")]) == 1
    assert "outside the profile's remote directory" in capsys.readouterr().err

    capsys.readouterr()
    assert main(["exec", "box", "--shell", "echo hi; pwd; exit 3"]) == 3
    assert capsys.readouterr().out == f"hi\n{remote}\n"
    assert main(["exec", "box", "--"]) == 1


def test_passphrase_without_terminal_is_a_clear_error(
    sshd: SshServer, ranktable_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key = keygen(tmp_path / "locked", passphrase="pw-123456")
    sshd.authorize(Path(f"{key}.pub"))
    sshd.write_known_hosts(ranktable_home / "known_hosts")
    argv = ["ssh", "add", "box", "--host", sshd.host, "--port", str(sshd.port), "--user", sshd.user]
    assert main([*argv, "--key", str(key)]) == 0
    assert main(["exec", "box", "--", "true"]) == 1
    err = capsys.readouterr().err
    assert "needs its passphrase and there is no terminal" in err
    assert "pw-123456" not in (ranktable_home / "profiles.json").read_text()


def test_loose_key_permissions_exit_non_zero_with_fix(
    sshd: SshServer, ranktable_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _add_trusted(sshd, ranktable_home, tmp_path / "remote")
    sshd.client_key.chmod(0o640)
    assert main(["ssh", "test", "box"]) == 1
    assert f"chmod 600 {sshd.client_key}" in capsys.readouterr().err


def test_passphrase_is_asked_on_a_terminal(
    sshd: SshServer, ranktable_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import getpass
    import sys

    key = keygen(tmp_path / "locked", passphrase="pw-123456")
    sshd.authorize(Path(f"{key}.pub"))
    sshd.write_known_hosts(ranktable_home / "known_hosts")
    argv = ["ssh", "add", "box", "--host", sshd.host, "--port", str(sshd.port), "--user", sshd.user]
    assert main([*argv, "--key", str(key), "--remote-dir", str(tmp_path / "r")]) == 0
    answers = iter(["wrong", "pw-123456"])
    prompts: list[str] = []
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True)
    monkeypatch.setattr(getpass, "getpass", lambda prompt: prompts.append(prompt) or next(answers))
    assert main(["exec", "box", "--", "true"]) == 0
    assert len(prompts) == 2 and str(key) in prompts[0]


def test_sync_delete_stops_on_bulk_deletion_until_forced(
    sshd: SshServer, ranktable_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    remote, project = _project_on_box(sshd, ranktable_home, tmp_path, "print('a')\n")
    for i in range(11):
        (project / f"m{i}.py").write_text(f"x = {i}\n")
    assert main(["sync", "box", str(project)]) == 0
    for i in range(11):
        (project / f"m{i}.py").unlink()
    capsys.readouterr()
    assert main(["sync", "box", str(project), "--delete"]) == 1
    err = capsys.readouterr().err.strip()
    assert "would delete 11 of the 12 remote files" in err and "--force" in err and "\n" not in err
    assert (remote / "m0.py").exists()
    assert main(["sync", "box", str(project), "--delete", "--force"]) == 0
    assert sorted(p.name for p in remote.iterdir()) == ["a.py"]


def test_sync_watch_uploads_changes_until_interrupted(
    sshd: SshServer,
    ranktable_home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    ctrl_c: None,
) -> None:
    import os
    import signal
    import threading
    import time

    remote, project = _project_on_box(sshd, ranktable_home, tmp_path, "a\n")
    seen: list[bool] = []

    def edit_then_interrupt() -> None:
        deadline = time.monotonic() + 20
        while not (remote / "a.py").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # let the watcher start
        (project / "b.py").write_text("b\n")
        while not (remote / "b.py").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        seen.append((remote / "b.py").exists())
        os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=edit_then_interrupt, daemon=True).start()
    assert main(["sync", "box", str(project), "--watch"]) == 0
    assert seen == [True]
    out = capsys.readouterr().out
    assert "watching" in out and "stopped watching" in out
