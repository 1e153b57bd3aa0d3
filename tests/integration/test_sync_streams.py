"""A big upload goes as two tar streams on two channels, extracted by two ``tar`` processes at once (on the
instance, writing the files is the first sync's longest part). Against a real sshd: the same remote tree
and manifest as one stream, deletions applied, each stream applied only once complete, and a sync whose
second stream was cut records only what the first applied (the next sync sends the rest)."""

from __future__ import annotations

import os
import posixpath
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from ranktable.remote.errors import ConnectionLost
from ranktable.remote.sync import Syncer
from ranktable.remote.sync import syncer as syncer_module
from ranktable.remote.sync.transfer import (
    FEW_FILES,
    FILE_WEIGHT,
    PARALLEL_MIN_BYTES,
    PARALLEL_MIN_FILES,
    Upload,
    UploadItem,
    apply_command,
    split_upload,
)
from tests.integration.fixtures.sshd import SshdProfile
from tests.integration.tree_helpers import tree_files, write_tree


def _items(n: int) -> list[UploadItem]:
    return [UploadItem(f"d{i % 7}/f{i}", Path(f"/x/f{i}")) for i in range(n)]


def test_split_upload_balances_bytes_and_files_and_keeps_the_order() -> None:
    items = _items(PARALLEL_MIN_FILES)
    index = {item.rel: i for i, item in enumerate(items)}
    sizes = [1000] * (len(items) - 2) + [40 << 20, 40 << 20]  # two big files: one in each stream
    split = split_upload(items, sizes)
    assert split is not None
    first, second = split
    assert sorted(i.rel for i in first + second) == sorted(i.rel for i in items)
    assert items[-1] in first + second and (items[-1] in first) != (items[-2] in first)
    folders = [{posixpath.dirname(i.rel) for i in group} for group in (first, second)]
    assert not folders[0] & folders[1]  # no folder in both streams: the apply steps never share a folder
    costs = [sum(sizes[index[i.rel]] + FILE_WEIGHT for i in group) for group in (first, second)]
    largest = max(sum(sizes[j] + FILE_WEIGHT for j in range(k, len(items), 7)) for k in range(7))
    assert abs(costs[0] - costs[1]) <= largest  # balanced to within one folder's cost
    order = {item.rel: index for index, item in enumerate(items)}
    for group in (first, second):  # each stream sends in the original (folder-grouped) order
        assert [order[i.rel] for i in group] == sorted(order[i.rel] for i in group)
    few = _items(2 * FEW_FILES - 1)
    assert split_upload(few, [PARALLEL_MIN_BYTES] * len(few)) is None  # too few files to split
    small = _items(PARALLEL_MIN_FILES - 1)
    assert split_upload(small, [10] * len(small)) is None  # too small: one stream
    assert split_upload(small[:20], [PARALLEL_MIN_BYTES // 10] * 20) is not None  # few, but big


def test_split_upload_splits_a_folder_only_when_it_alone_outweighs_half() -> None:
    items = [UploadItem(f"big/f{i}", Path(f"/x/{i}")) for i in range(PARALLEL_MIN_FILES)]
    items += [UploadItem(f"small/f{i}", Path(f"/y/{i}")) for i in range(20)]
    split = split_upload(items, [1000] * len(items))
    assert split is not None  # one folder holds almost everything: its files go to both streams
    first, second = split
    assert {i.rel for i in first + second} == {i.rel for i in items}
    assert abs(len(first) - len(second)) <= 1
    small = [i for i in first + second if i.rel.startswith("small/")]
    assert small == [i for i in first if i.rel.startswith("small/")] or small == [
        i for i in second if i.rel.startswith("small/")
    ]  # the small folder stays whole


def test_spare_session_never_waits_for_a_slot(sshd_profile: SshdProfile) -> None:
    conn = sshd_profile.connection()
    leases = [conn.open_session() for _ in range(conn.max_channels - 1)]
    try:
        spare = conn.spare_session()
        assert spare is not None  # the last free slot
        assert conn.spare_session() is None  # none left: None at once, not channel_wait seconds
        spare.close()
        again = conn.spare_session()
        assert again is not None
        again.close()
    finally:
        for lease in leases:
            lease.close()


def _big_tree(local: Path, files: int) -> dict[str, bytes]:
    tree = {f"pkg{i % 9}/sub{i % 4}/f{i}.py": os.urandom(50 + i % 300) for i in range(files)}
    write_tree(local, tree)
    return tree


def _count_second_streams(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = syncer_module.upload_tar

    def counting(conn: Any, upload: Upload, *args: Any, **kwargs: Any) -> None:
        calls.append(len(upload.items))
        real(conn, upload, *args, **kwargs)

    monkeypatch.setattr(syncer_module, "upload_tar", counting)
    return calls


def test_a_big_sync_goes_in_two_streams_with_the_same_result(
    sshd_profile: SshdProfile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = tmp_path / "project"
    tree = _big_tree(local, PARALLEL_MIN_FILES + 100)
    write_tree(local, {"old/gone.txt": b"bye"})
    calls = _count_second_streams(monkeypatch)
    syncer = Syncer(sshd_profile.connection(), local)
    first = syncer.sync()
    assert len(calls) == 1 and PARALLEL_MIN_FILES // 3 < calls[0] < len(tree)  # a share in the second
    assert len(first.uploaded) == len(tree) + 1 and first.method == "tar" and not first.conflicts
    remote = sshd_profile.remote_dir
    assert tree_files(remote) == {**tree, "old/gone.txt": b"bye"}
    assert not [p for p in remote.iterdir() if p.name.startswith(".ranktable")]  # staging folders removed
    for rel in list(tree)[:50]:  # mode and mtime as tar sets them, in either stream
        assert int((remote / rel).stat().st_mtime) == int((local / rel).stat().st_mtime)
    assert syncer.sync().unchanged == len(tree) + 1  # the manifest has both streams' files

    # Many changed files and a deletion: two streams again, the deletion applied
    (local / "old/gone.txt").unlink()
    changed = {rel: os.urandom(77) for rel in list(tree)[: PARALLEL_MIN_FILES + 10]}
    write_tree(local, changed)
    second = syncer.sync(delete=True)
    assert len(calls) == 2 and second.deleted == ["old/gone.txt"] and len(second.uploaded) == len(changed)
    assert tree_files(remote) == {**tree, **changed}


def test_without_a_spare_channel_the_sync_uses_one_stream(
    sshd_profile: SshdProfile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = tmp_path / "project"
    tree = _big_tree(local, PARALLEL_MIN_FILES + 10)
    calls = _count_second_streams(monkeypatch)
    conn = sshd_profile.connection()
    monkeypatch.setattr(conn, "spare_session", lambda: None)  # every other slot busy
    result = Syncer(conn, local).sync()
    assert not calls and len(result.uploaded) == len(tree)
    assert tree_files(sshd_profile.remote_dir) == tree


def test_a_cut_second_stream_applies_nothing_of_its_own_and_the_next_sync_sends_only_it(
    sshd_profile: SshdProfile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = tmp_path / "project"
    tree = _big_tree(local, PARALLEL_MIN_FILES + 50)
    second_stream: list[str] = []
    real = syncer_module.upload_tar

    def cut(conn: Any, upload: Upload, *args: Any, lease: Any, **kwargs: Any) -> None:
        """The second stream starts its remote apply, sends part of an archive, then the channel drops."""
        second_stream.extend(item.rel for item in upload.items)
        with lease as channel:
            from ranktable.remote.sync.transfer import apply_command

            channel.exec_command(
                f"cd -- {shlex.quote(upload.root)} && {apply_command('.ranktable-stage-cut', True)}"
            )
            channel.sendall(b"\0" * 512)
        raise EOFError("the channel dropped")

    monkeypatch.setattr(syncer_module, "upload_tar", cut)
    syncer = Syncer(sshd_profile.connection(), local)
    with pytest.raises(ConnectionLost):
        syncer.sync()
    remote = sshd_profile.remote_dir
    landed = {rel for rel in tree if (remote / rel).exists()}
    assert second_stream and landed == set(tree) - set(second_stream)  # the first stream applied alone
    assert all((remote / rel).read_bytes() == tree[rel] for rel in landed)
    monkeypatch.setattr(syncer_module, "upload_tar", real)
    result = Syncer(sshd_profile.connection(), local).sync()
    assert sorted(result.uploaded) == sorted(second_stream) and result.unchanged == len(landed)
    assert not result.adopted  # the first stream's files were recorded as it applied them
    assert tree_files(remote) == tree  # the cut stream's staging folder removed by the next listing


@pytest.mark.parametrize(
    ("version", "option"), [("tar (GNU tar) 1.34", "-b256"), ("tar (busybox) 1.36.1", "-o"), ("", "-o")]
)
def test_gnu_tar_reads_the_stream_in_large_records_and_others_get_no_new_option(
    tmp_path: Path, version: str, option: str
) -> None:
    """10 KiB records made sshd send a window adjustment per 10-20 KiB (our client's transport thread took
    0.6-0.9 s of CPU per first sync on them); busybox tar has no ``-b``, so only GNU tar is given one."""
    fake = tmp_path / "tar"
    fake.write_text(
        f"#!/bin/sh\n[ \"$1\" = --version ] && {{ printf '%s\\n' '{version}'; exit 0; }}\necho \"$1\"\n"
    )
    fake.chmod(0o755)
    command = apply_command("staging", python=False).split("mkdir -- staging; ", 1)[1].split("; .", 1)[0]
    done = subprocess.run(
        ["sh", "-c", command],
        env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}"},
        capture_output=True,
    )
    assert done.stdout.decode().strip() == option
