"""A sync of a few files (a saved file, a one-file change) goes through ``tar-few``: each file is extracted
next to its target and moved into place, with the remote-edit check done in the same step. Against a real
sshd: same results, conflicts and link refusals as the staged path, and nothing half-written."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from ranktable.remote.errors import ConnectionLost, SshError
from ranktable.remote.sync import ProgressEvent, Syncer
from ranktable.remote.sync.manifest import Entry
from ranktable.remote.sync.progress import Meter
from ranktable.remote.sync.session import RemoteSession
from ranktable.remote.sync.transfer import UploadItem, few_names, few_script
from tests.integration.fixtures.sshd import SshdProfile
from tests.integration.tree_helpers import outside_of, tree_files, write_tree


def _same_size_and_time_edit(path: Path, data: bytes) -> None:
    st = path.stat()
    assert len(data) == st.st_size
    path.write_bytes(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


AWKWARD = {
    "a b/c d.txt": b"spaces",
    "x'y\".txt": b"quotes",
    "new\nline.txt": b"newline",
    "ünï/cödé.py": b"utf-8",
    "$(touch pwned)/`id`.txt": b"shell",
}


def test_a_few_files_with_awkward_names_land_in_new_folders_and_deletions_apply(
    sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    local = tmp_path / "project"
    write_tree(local, {**AWKWARD, "gone.txt": b"bye"})
    syncer = Syncer(sshd_profile.connection(), local)
    first = syncer.sync()
    assert sorted(first.uploaded) == sorted([*AWKWARD, "gone.txt"]) and first.method == "tar"
    remote = sshd_profile.remote_dir
    assert tree_files(remote) == {**AWKWARD, "gone.txt": b"bye"}
    for rel in AWKWARD:  # mode and mtime as tar sets them
        assert int((remote / rel).stat().st_mtime) == int((local / rel).stat().st_mtime)
    (local / "gone.txt").unlink()
    (local / "a b/c d.txt").write_bytes(b"spaces, changed")
    second = syncer.sync(delete=True)
    assert second.uploaded == ["a b/c d.txt"] and second.deleted == ["gone.txt"] and not second.conflicts
    assert tree_files(remote) == {**AWKWARD, "a b/c d.txt": b"spaces, changed"}
    assert not (remote / "pwned").exists()
    assert not [p for p in remote.rglob("*") if ".ranktable-" in p.name]  # no temporary name left
    assert syncer.sync().unchanged == len(AWKWARD)


def test_a_remote_edit_found_in_the_apply_step_leaves_that_file_alone_and_applies_the_rest(
    sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    local = tmp_path / "project"
    write_tree(local, {"a.txt": b"aaaa", "b.txt": b"bbbb", "c.txt": b"cccc", "d.txt": b"dddd"})
    syncer = Syncer(sshd_profile.connection(), local)
    syncer.sync()
    remote = sshd_profile.remote_dir
    _same_size_and_time_edit(remote / "b.txt", b"BBBB")
    _same_size_and_time_edit(remote / "d.txt", b"DDDD")
    for name in ("a.txt", "b.txt", "c.txt"):
        (local / name).write_bytes(name.encode() * 2)
    (local / "d.txt").unlink()
    result = syncer.sync(delete=True)
    assert [(c.path, "same size and time" in c.reason) for c in result.conflicts] == [
        ("b.txt", True),
        ("d.txt", True),
    ]
    assert result.uploaded == ["a.txt", "c.txt"] and result.deleted == []
    assert tree_files(remote) == {
        "a.txt": b"a.txta.txt",
        "b.txt": b"BBBB",
        "c.txt": b"c.txtc.txt",
        "d.txt": b"DDDD",
    }
    assert not [p for p in remote.rglob("*") if ".ranktable-" in p.name]
    again = syncer.sync(delete=True)  # not recorded as uploaded: still a conflict, never overwritten
    assert sorted(c.path for c in again.conflicts) == ["b.txt", "d.txt"] and not again.uploaded
    assert (remote / "b.txt").read_bytes() == b"BBBB"


def test_tar_few_refuses_a_folder_that_became_a_symbolic_link_after_the_listing(
    sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    remote = sshd_profile.remote_dir
    outside = outside_of(remote)
    (tmp_path / "v.txt").write_text("overwritten!")
    session = RemoteSession(sshd_profile.connection())
    try:
        session.survey()
        (remote / "linkdir").symlink_to("../outside")  # made between the listing and the upload
        items = [UploadItem("linkdir/victim.txt", tmp_path / "v.txt")]
        names = few_names(["linkdir/victim.txt"], session.staging[-12:])
        assert names is not None
        done: dict[str, Entry] = {}
        with pytest.raises(SshError, match="symbolic link"):
            session.upload_few(items, names, [], {}, Meter("upload", 1, 0, None), done.__setitem__)
    finally:
        session.close()
    assert (outside / "victim.txt").read_text() == "precious" and not done
    assert sorted(p.name for p in outside.iterdir()) == ["victim.txt"]


@pytest.mark.fault
def test_an_interrupted_few_file_upload_changes_no_final_file_and_the_next_sync_cleans_up(
    sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    local = tmp_path / "project"
    write_tree(local, {"model.bin": b"v1" * 10, "notes.txt": b"n1"})
    syncer = Syncer(sshd_profile.connection(), local)
    syncer.sync()
    big = os.urandom(30_000_000)
    (local / "model.bin").write_bytes(big)
    (local / "notes.txt").write_bytes(b"n2")
    killed: list[int] = []
    once = threading.Lock()  # never released

    def kill_midway(event: ProgressEvent) -> None:
        # the workers report progress from several threads: only the first past a third kills
        if event.bytes_done > event.bytes_total // 3 and once.acquire(blocking=False):
            killed.append(sshd_profile.server.kill_connections())

    with pytest.raises(ConnectionLost):
        syncer.sync(progress=kill_midway)
    assert killed and killed[0] >= 1
    remote = sshd_profile.remote_dir
    assert (remote / "model.bin").read_bytes() == b"v1" * 10 and (remote / "notes.txt").read_bytes() == b"n1"
    result = syncer.sync()
    assert sorted(result.uploaded) == ["model.bin", "notes.txt"] and not result.conflicts
    assert tree_files(remote) == {"model.bin": big, "notes.txt": b"n2"}  # temporary files removed


def test_few_names_and_script_quote_every_path() -> None:
    assert few_names(["a/b.py", "top.txt"], "t0k") == [
        "a/.b.py.ranktable-tmp-t0k",
        ".top.txt.ranktable-tmp-t0k",
    ]
    assert few_names(["d/" + "x" * 201], "t") is None  # too long once renamed: the staged path instead
    script = few_script(["a b/c;rm -rf ~"], ["a b/.c;rm -rf ~.ranktable-tmp-t"], ["d/e"], {"d/e": "f" * 64})
    assert "mv -f -- 'a b/.c;rm -rf ~.ranktable-tmp-t' 'a b/c;rm -rf ~'" in script
    assert "if [ -L 'a b' ]" in script and "if [ -L d ]" in script
    assert f"= {'f' * 64} ]; then rm -f -- d/e; else echo C 1; fi" in script


@pytest.mark.fault
def test_the_python_apply_started_alongside_tar_applies_nothing_from_a_cut_stream(
    sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    """Python starts while tar extracts (its start-up off the critical path) but moves files into place
    only after tar reported the whole stream extracted; then it removes the staging folder itself."""
    import io
    import shlex

    from ranktable.remote.sync.transfer import apply_command, write_tar

    remote = sshd_profile.remote_dir
    remote.mkdir(parents=True, exist_ok=True)
    write_tree(tmp_path / "src", {f"d{i}/f{i}.bin": os.urandom(3000) for i in range(20)})
    items = [UploadItem(f"d{i}/f{i}.bin", tmp_path / "src" / f"d{i}/f{i}.bin") for i in range(20)]

    class Capture:
        def __init__(self) -> None:
            self.data = io.BytesIO()

        def send(self, view: memoryview) -> int:
            return self.data.write(view)

    stream = Capture()
    write_tar(stream, str(remote), ".rt-stage", items, [], Meter("upload", 20, 0, None), True)  # type: ignore[arg-type]
    whole = stream.data.getvalue()
    conn = sshd_profile.connection()
    for data, status in ((whole[: len(whole) // 2], 2), (whole, 0)):
        with conn.open_session() as channel:
            channel.exec_command(f"cd -- {shlex.quote(str(remote))} && {apply_command('.rt-stage', True)}")
            channel.sendall(data)
            channel.shutdown_write()
            assert channel.recv_exit_status() == status
            if status:
                assert b"nothing applied" in channel.recv_stderr(65536)
                assert not list(remote.glob("d*"))  # nothing moved into place
                shutil.rmtree(remote / ".rt-stage")  # what the next survey would remove
    assert tree_files(remote) == {
        f"d{i}/f{i}.bin": (tmp_path / "src" / f"d{i}/f{i}.bin").read_bytes() for i in range(20)
    }
    assert not (remote / ".rt-stage").exists()  # removed by the apply step, no `rm` process
