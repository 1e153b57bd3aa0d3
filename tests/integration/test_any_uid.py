"""SSH features under a UID with no passwd entry and no USER/LOGNAME (OpenShift-style hosted JupyterLab):
the user name comes from the profile, then the environment, then a documented default (#30.5)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.integration.fixtures.anyuid import ANY_UID, ranktable_as_any_uid
from tests.integration.fixtures.sshd import SshServer


@pytest.fixture
def uid_home() -> Iterator[Path]:
    """A folder the UID owns (pytest's tmp_path is under root's 0700 folder)."""
    home = Path(tempfile.mkdtemp(prefix="ranktable-anyuid-", dir="/tmp"))
    try:
        yield home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _own(tree: Path) -> None:
    for path in [tree, *tree.rglob("*")]:
        os.chown(path, ANY_UID, ANY_UID)


def test_ssh_test_and_sync_work_without_a_passwd_entry(
    sshd: SshServer, uid_home: Path, tmp_path: Path
) -> None:
    from ranktable.remote import ProfileStore

    state = uid_home / "ranktable"
    state.mkdir()
    key = uid_home / "id_ed25519"
    shutil.copy(sshd.client_key, key)
    key.chmod(0o600)
    remote = tmp_path / "remote"
    remote.mkdir()
    profile = sshd.profile("box", remote)
    ProfileStore(state).add(type(profile)(**{**profile.__dict__, "key_file": str(key)}))
    sshd.write_known_hosts(state / "known_hosts")
    project = uid_home / "project"
    project.mkdir()
    (project / "train.py").write_text("print('hello from any uid')\n")
    (uid_home / "ssh_config").write_text("")
    _own(uid_home)
    env = dict(
        os.environ,
        HOME=str(uid_home),
        RANKTABLE_HOME=str(state),
        RANKTABLE_SSH_CONFIG=str(uid_home / "ssh_config"),
        RANKTABLE_USER_KNOWN_HOSTS=str(uid_home / "known_hosts"),
        RANKTABLE_AGENT="0",
    )
    tested = ranktable_as_any_uid("ssh", "test", "box", env=env)
    assert tested.returncode == 0, tested.stderr
    assert "a bug in ranktable" not in tested.stderr
    synced = ranktable_as_any_uid("sync", "box", str(project), env=env)
    assert synced.returncode == 0, synced.stderr
    assert (remote / "train.py").read_text() == "print('hello from any uid')\n"
