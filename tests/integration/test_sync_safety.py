"""Sync and download never write or read through a symbolic link out of their root, and a remote edit
that kept size and modification time (``cp -p``, ``rsync -t``) is a conflict, not silently overwritten.
Against a real sshd."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ranktable.errors import InputError
from ranktable.remote.errors import RemotePathError, SshError
from ranktable.remote.sync import Syncer
from ranktable.remote.sync.progress import Meter
from ranktable.remote.sync.transfer import Upload, UploadItem, upload_tar
from tests.integration.fixtures.sshd import SshdProfile
from tests.integration.tree_helpers import outside_of


@pytest.fixture
def outside(sshd_profile: SshdProfile) -> Path:
    """A folder next to the remote root, reachable from it through ``linkdir -> ../outside``."""
    target = outside_of(sshd_profile.remote_dir)
    (sshd_profile.remote_dir / "linkdir").symlink_to("../outside")
    return target


def test_sync_never_writes_through_a_remote_symlink(
    sshd_profile: SshdProfile, outside: Path, tmp_path: Path
) -> None:
    local = tmp_path / "project"
    (local / "linkdir").mkdir(parents=True)
    (local / "linkdir" / "victim.txt").write_text("overwritten!")
    (local / "ok.txt").write_text("fine")
    result = Syncer(sshd_profile.connection(), local).sync()
    assert (outside / "victim.txt").read_text() == "precious"
    assert [c.path for c in result.conflicts] == ["linkdir/victim.txt"]
    assert "symbolic link" in result.conflicts[0].reason
    assert result.uploaded == ["ok.txt"]
    assert (sshd_profile.remote_dir / "linkdir").is_symlink()  # the link itself is left alone


@pytest.mark.parametrize("python", [True, False])
def test_the_remote_apply_step_refuses_a_symlinked_folder_too(
    sshd_profile: SshdProfile, outside: Path, tmp_path: Path, python: bool
) -> None:
    """Defence in depth: a link created between the listing and the upload still stops the write."""
    (tmp_path / "v.txt").write_text("overwritten!")
    items = [UploadItem("linkdir/victim.txt", tmp_path / "v.txt")]
    with pytest.raises(SshError, match="symbolic link"):
        upload = Upload(
            str(sshd_profile.remote_dir.resolve()),
            items,
            ["linkdir/victim.txt"],
            Meter("upload", 1, 0, None),
            lambda rel, entry: None,
        )
        upload_tar(sshd_profile.connection(), upload, python=python)
    assert (outside / "victim.txt").read_text() == "precious"


def test_download_never_reads_through_a_remote_symlink(
    sshd_profile: SshdProfile, outside: Path, tmp_path: Path
) -> None:
    syncer = Syncer(sshd_profile.connection(), tmp_path)
    with pytest.raises(RemotePathError, match="symbolic link"):
        syncer.download("linkdir/victim.txt", tmp_path / "got.txt")
    with pytest.raises(RemotePathError, match="symbolic link"):
        syncer.download("linkdir", tmp_path / "got")
    with pytest.raises(RemotePathError, match="symbolic link"):
        syncer.download_conflict("linkdir/victim.txt")
    assert not (tmp_path / "got.txt").exists() and not (tmp_path / "got").exists()


def test_download_never_writes_through_a_local_symlink(sshd_profile: SshdProfile, tmp_path: Path) -> None:
    remote = sshd_profile.remote_dir
    (remote / "out" / "sub").mkdir(parents=True)
    (remote / "out" / "sub" / "secret.txt").write_text("from remote")
    root = tmp_path / "jupyter-root"
    elsewhere = tmp_path / "elsewhere"
    (root / "dest").mkdir(parents=True)
    elsewhere.mkdir()
    (root / "dest" / "sub").symlink_to(elsewhere)
    syncer = Syncer(sshd_profile.connection(), root)
    with pytest.raises(InputError, match="symbolic link"):
        syncer.download("out", root / "dest")
    assert list(elsewhere.iterdir()) == []


def _same_size_and_time_edit(path: Path, data: bytes) -> None:
    """What ``cp -p`` / ``rsync -t`` of another file does: new content, same size, same mtime."""
    st = path.stat()
    assert len(data) == st.st_size
    path.write_bytes(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_remote_edit_keeping_size_and_mtime_is_a_conflict(sshd_profile: SshdProfile, tmp_path: Path) -> None:
    local = tmp_path / "project"
    local.mkdir()
    (local / "cfg.yaml").write_bytes(b"lr: 0.1\n")
    (local / "old.txt").write_bytes(b"old!")
    syncer = Syncer(sshd_profile.connection(), local)
    syncer.sync()
    remote = sshd_profile.remote_dir
    _same_size_and_time_edit(remote / "cfg.yaml", b"lr: 0.5\n")
    _same_size_and_time_edit(remote / "old.txt", b"new!")
    (local / "cfg.yaml").write_bytes(b"lr: 0.01\n")
    (local / "old.txt").unlink()
    result = syncer.sync(delete=True)
    assert sorted(c.path for c in result.conflicts) == ["cfg.yaml", "old.txt"]
    assert "same size and time" in result.conflicts[0].reason
    assert (remote / "cfg.yaml").read_bytes() == b"lr: 0.5\n"
    assert (remote / "old.txt").read_bytes() == b"new!"
    # An unedited file is still overwritten and deleted normally (the check costs no false conflicts).
    forced = syncer.sync(delete=True, force=True)
    assert forced.uploaded == ["cfg.yaml"] and forced.deleted == ["old.txt"]
    assert (remote / "cfg.yaml").read_bytes() == b"lr: 0.01\n"
    (local / "cfg.yaml").write_bytes(b"lr: 0.02\n")
    assert syncer.sync().uploaded == ["cfg.yaml"]


def test_incremental_sync_of_saved_files_looks_at_them_alone(
    sshd_profile: SshdProfile, outside: Path, tmp_path: Path
) -> None:
    """An automatic upload of a few saved files lists just those paths (and their folders) remotely,
    with the same rules: a linked remote folder is still refused, deletions still need delete mode."""
    local = tmp_path / "project"
    for i in range(50):
        (local / "pkg").mkdir(parents=True, exist_ok=True)
        (local / "pkg" / f"m{i}.py").write_text(f"V = {i}\n")
    syncer = Syncer(sshd_profile.connection(), local)
    assert len(syncer.sync().uploaded) == 50
    (local / "pkg" / "m3.py").write_text("V = 'changed'\n")
    (local / "pkg" / "m4.py").unlink()
    (local / "linkdir").mkdir()
    (local / "linkdir" / "victim.txt").write_text("overwritten!")
    only = ["pkg/m3.py", "pkg/m4.py", "linkdir/victim.txt"]
    result = syncer.sync(only=only, delete=True)
    assert result.uploaded == ["pkg/m3.py"] and result.deleted == ["pkg/m4.py"]
    assert result.unchanged == 0  # the 47 other files were not even looked at
    assert [c.path for c in result.conflicts] == ["linkdir/victim.txt"]
    assert (outside / "victim.txt").read_text() == "precious"
    remote = sshd_profile.remote_dir
    assert (remote / "pkg" / "m3.py").read_text() == "V = 'changed'\n" and not (
        remote / "pkg" / "m4.py"
    ).exists()
    full = syncer.sync()  # a full sync afterwards agrees: nothing left to do but the refused file
    assert (
        full.uploaded == []
        and full.unchanged == 49
        and [c.path for c in full.conflicts] == ["linkdir/victim.txt"]
    )
