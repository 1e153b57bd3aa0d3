"""A folder renamed locally is applied remotely as one ``mv`` (delete mode) or ``cp -pR`` — only when
that can hide or lose nothing; otherwise the sync uploads the folder as before."""

from __future__ import annotations

import os
from pathlib import Path

from ranktable.remote import SyncSettings
from ranktable.remote.sync import Syncer
from tests.integration.fixtures.sshd import SshdProfile


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".ranktable" not in p.name
    }


def _project(tmp_path: Path) -> Path:
    local = tmp_path / "proj"
    for i in range(12):
        (local / "pkg" / "sub").mkdir(parents=True, exist_ok=True)
        (local / "pkg" / f"m{i}.py").write_text(f"m = {i}\n")
        (local / "pkg" / "sub" / f"s{i}.py").write_text(f"s = {i}\n")
    (local / "top.py").write_text("top\n")
    return local


def _synced(
    sshd_profile: SshdProfile, tmp_path: Path, settings: SyncSettings | None = None
) -> tuple[Path, Syncer, Path]:
    """The project synced once: (its local folder, the syncer, the remote folder)."""
    local = _project(tmp_path)
    syncer = Syncer(sshd_profile.connection(), local, settings)
    syncer.sync()
    return local, syncer, sshd_profile.remote_dir


def test_a_folder_rename_in_delete_mode_is_one_move_and_the_remote_ends_identical(
    sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    local, syncer, remote = _synced(sshd_profile, tmp_path, SyncSettings(delete_remote=True))
    inode = (remote / "pkg" / "m3.py").stat().st_ino
    (local / "lib").mkdir()
    os.rename(local / "pkg", local / "lib" / "pkg2")
    result = syncer.sync(only=["pkg/", "lib/pkg2/"], moves=[("pkg", "lib/pkg2")])
    assert result.relocated == ["pkg -> lib/pkg2"]
    assert result.uploaded == [] and result.deleted == [] and result.unchanged == 24
    assert (remote / "lib" / "pkg2" / "m3.py").stat().st_ino == inode  # moved, not sent again
    assert not (remote / "pkg").exists()
    assert _tree(remote) == _tree(local)
    again = syncer.sync()  # the manifest followed the move: a full sync finds nothing to do
    assert again.uploaded == [] and again.deleted == [] and again.conflicts == []


def test_a_remote_edit_or_foreign_file_in_the_old_folder_means_upload_instead(
    sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    local, syncer, remote = _synced(sshd_profile, tmp_path, SyncSettings(delete_remote=True))
    (remote / "pkg" / "results.csv").write_text("someone's output\n")  # never uploaded by us
    os.rename(local / "pkg", local / "pkg2")
    result = syncer.sync(only=["pkg/", "pkg2/"], moves=[("pkg", "pkg2")], force=True)
    assert result.relocated == [] and len(result.uploaded) == 24
    assert (remote / "pkg" / "results.csv").read_text() == "someone's output\n"  # not carried away
    assert _tree(remote / "pkg2") == _tree(local / "pkg2")


def test_a_symlink_at_the_new_name_is_never_written_through(
    sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    local, syncer, remote = _synced(sshd_profile, tmp_path)
    outside = tmp_path / "outside"
    outside.mkdir()
    (remote / "lib").symlink_to(outside)
    (local / "lib").mkdir()
    os.rename(local / "pkg", local / "lib" / "pkg2")
    result = syncer.sync(only=["pkg/", "lib/pkg2/"], moves=[("pkg", "lib/pkg2")])
    assert result.relocated == [] and result.uploaded == []
    assert result.conflicts and all("symbolic link" in c.reason for c in result.conflicts)
    assert list(outside.iterdir()) == []


def test_the_remote_command_rechecks_links_and_an_existing_target(
    sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    """A link or a folder that appears between the listing and the move stops the command itself."""
    from ranktable.remote.sync.relocate import relocate_command

    conn = sshd_profile.connection()
    remote = sshd_profile.remote_dir
    (remote / "a").mkdir()
    (remote / "a" / "f.txt").write_text("f\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (remote / "link").symlink_to(outside)
    root = str(remote.resolve())
    assert conn.run(relocate_command(root, "a", "link/b", move=True)).exit_status == 3
    (remote / "taken").mkdir()
    assert conn.run(relocate_command(root, "a", "taken", move=True)).exit_status == 5
    assert list(outside.iterdir()) == [] and (remote / "a" / "f.txt").exists()
    assert conn.run(relocate_command(root, "a", "new dir/b", move=False)).exit_status == 0
    assert (remote / "new dir" / "b" / "f.txt").read_text() == "f\n" and (remote / "a" / "f.txt").exists()
