"""Sync against a real sshd: ignore rules, change detection, conflicts, deletes, interruption, download."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from ranktable.errors import ConflictError, InputError, Unavailable
from ranktable.remote import SyncSettings
from ranktable.remote.errors import ConnectionLost, RemotePathError, SshError
from ranktable.remote.sync import IgnoreRules, ProgressEvent, Syncer
from tests.integration.fixtures.sshd import SshdProfile
from tests.integration.tree_helpers import tree_files, write_tree


@pytest.fixture
def local(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    write_tree(
        root,
        {
            "train.py": b"print('train')\n",
            "pkg/model.py": b"W = 1\n",
            "pkg/__pycache__/model.cpython-311.pyc": b"\0pyc",
            "data/big.bin": os.urandom(300_000),
            ".git/HEAD": b"ref: refs/heads/main\n",
            "notes.ipynb": b"{}",
            ".~notes.ipynb": b"{}",
            ".ipynb_checkpoints/notes-checkpoint.ipynb": b"{}",
            "logs/run.log": b"log",
            "logs/keep.log": b"keep",
            "build/out.txt": b"x",
            ".gitignore": b"*.log\n!keep.log\nbuild/\n",
            ".ranktableignore": b"secret.txt\n",
            "secret.txt": b"token",
        },
    )
    return root


EXPECTED = {
    "train.py",
    "pkg/model.py",
    "data/big.bin",
    "notes.ipynb",
    "logs/keep.log",
    ".gitignore",
    ".ranktableignore",
}


def test_ignore_rules_follow_gitignore_semantics(tmp_path: Path) -> None:
    rules = IgnoreRules(["*.log", "!keep.log", "build/", "/top.txt", "docs/**/*.tmp"])
    assert rules.ignored("a/b.log") and not rules.ignored("a/keep.log")
    assert rules.ignored("build", is_dir=True) and not rules.ignored("build")  # dir/ matches directories only
    assert rules.ignored("top.txt") and not rules.ignored("sub/top.txt")  # anchored
    assert rules.ignored("docs/x/y/z.tmp")
    assert rules.ignored_path("build/keep.log")  # cannot re-include under an excluded directory


@pytest.mark.parametrize("method", ["tar", "sftp"])
def test_first_sync_uploads_what_is_not_ignored_then_noop(
    sshd_profile: SshdProfile, local: Path, method: str
) -> None:
    syncer = Syncer(sshd_profile.connection(), local, method=method)
    events: list[ProgressEvent] = []
    result = syncer.sync(progress=events.append)
    assert set(result.uploaded) == EXPECTED
    assert result.method == method
    remote = tree_files(sshd_profile.remote_dir)
    assert set(remote) == EXPECTED
    assert remote["data/big.bin"] == (local / "data/big.bin").read_bytes()
    assert int((sshd_profile.remote_dir / "train.py").stat().st_mtime) == int(
        (local / "train.py").stat().st_mtime
    )
    assert events[-1].phase == "done"
    assert events[-1].files_done == len(EXPECTED) and events[-1].bytes_done == events[-1].bytes_total
    assert events[-1].rate > 0
    again = syncer.sync()
    assert again.uploaded == [] and again.unchanged == len(EXPECTED) and again.method == "none"


def test_change_detection_uses_size_mtime_then_hash(sshd_profile: SshdProfile, local: Path) -> None:
    syncer = Syncer(sshd_profile.connection(), local)
    syncer.sync()
    future = time.time() + 5
    os.utime(local / "train.py", (future, future))  # touched only: same content
    (local / "pkg/model.py").write_bytes(b"W = 2\n")  # same size, new content
    os.utime(local / "pkg/model.py", (future, future))
    (local / "pkg/new.py").write_bytes(b"new\n")
    dry = syncer.sync(dry_run=True)
    assert sorted(dry.uploaded) == ["pkg/model.py", "pkg/new.py"] and dry.dry_run
    assert not (sshd_profile.remote_dir / "pkg/new.py").exists()
    result = syncer.sync()
    assert sorted(result.uploaded) == ["pkg/model.py", "pkg/new.py"]
    assert (sshd_profile.remote_dir / "pkg/model.py").read_bytes() == b"W = 2\n"
    assert syncer.sync().uploaded == []


def test_conflict_is_reported_not_overwritten_then_forced_or_downloaded(
    sshd_profile: SshdProfile, local: Path
) -> None:
    syncer = Syncer(sshd_profile.connection(), local)
    syncer.sync()
    remote_file = sshd_profile.remote_dir / "train.py"
    remote_file.write_bytes(b"print('edited on the instance')\n")
    os.utime(remote_file, (time.time() + 10, time.time() + 10))
    (local / "train.py").write_bytes(b"print('edited locally')\n")
    result = syncer.sync()
    assert [c.path for c in result.conflicts] == ["train.py"]
    assert "train.py" not in result.uploaded
    assert remote_file.read_bytes() == b"print('edited on the instance')\n"
    assert "conflict" in result.summary()

    syncer.download_conflict("train.py")
    assert (local / "train.py").read_bytes() == b"print('edited on the instance')\n"
    assert syncer.sync().conflicts == []

    (local / "train.py").write_bytes(b"print('mine again')\n")
    remote_file.write_bytes(b"print('theirs again!')\n")
    assert [c.path for c in syncer.sync().conflicts] == ["train.py"]
    forced = syncer.sync(force=True)
    assert forced.uploaded == ["train.py"] and remote_file.read_bytes() == b"print('mine again')\n"


def test_unknown_remote_file_identical_is_adopted_different_is_conflict(
    sshd_profile: SshdProfile, local: Path
) -> None:
    write_tree(sshd_profile.remote_dir, {"train.py": b"print('train')\n", "pkg/model.py": b"W = 9\n"})
    result = Syncer(sshd_profile.connection(), local).sync()
    assert result.adopted == ["train.py"]
    assert [c.path for c in result.conflicts] == ["pkg/model.py"]
    assert (sshd_profile.remote_dir / "pkg/model.py").read_bytes() == b"W = 9\n"


def test_delete_mode_only_removes_files_we_uploaded(sshd_profile: SshdProfile, local: Path) -> None:
    syncer = Syncer(sshd_profile.connection(), local)
    syncer.sync()
    (sshd_profile.remote_dir / "results").mkdir()
    (sshd_profile.remote_dir / "results/ckpt.bin").write_bytes(b"remote-made")
    (local / "notes.ipynb").unlink()
    kept = syncer.sync()
    assert kept.kept_remote == ["notes.ipynb"] and (sshd_profile.remote_dir / "notes.ipynb").exists()
    deleting = Syncer(sshd_profile.connection(), local, SyncSettings(delete_remote=True))
    result = deleting.sync()
    assert result.deleted == ["notes.ipynb"]
    assert not (sshd_profile.remote_dir / "notes.ipynb").exists()
    assert (sshd_profile.remote_dir / "results/ckpt.bin").read_bytes() == b"remote-made"
    # A remote change to a locally deleted file is a conflict, not a silent delete.
    (local / "train.py").unlink()
    (sshd_profile.remote_dir / "train.py").write_bytes(b"changed remotely, longer")
    result = deleting.sync()
    assert [c.path for c in result.conflicts] == ["train.py"]
    assert (sshd_profile.remote_dir / "train.py").exists()


@pytest.mark.parametrize("method", ["tar", "sftp"])
@pytest.mark.fault
def test_interrupted_sync_leaves_no_partial_file_and_next_sync_completes(
    sshd_profile: SshdProfile, tmp_path: Path, method: str
) -> None:
    root = tmp_path / "many"
    files = {f"d{i % 7}/f{i}.bin": os.urandom(40_000 + i) for i in range(60)}
    write_tree(root, files)
    syncer = Syncer(sshd_profile.connection(), root, method=method, workers=3)
    killed: list[int] = []
    once = threading.Lock()  # never released

    def kill_midway(event: ProgressEvent) -> None:
        # the workers report progress from several threads: only the first past a third kills
        if event.bytes_done > event.bytes_total // 3 and once.acquire(blocking=False):
            killed.append(sshd_profile.server.kill_connections())

    with pytest.raises(ConnectionLost) as info:
        syncer.sync(progress=kill_midway)
    assert killed and killed[0] >= 1
    assert "run the sync again" in info.value.message
    partial = tree_files(sshd_profile.remote_dir)
    final = {rel: data for rel, data in partial.items() if ".ranktable-" not in rel}
    for rel, data in final.items():  # a file at its final name is always complete
        assert rel in files and data == files[rel], f"half-written or stray file {rel}"
    assert len(final) < len(files)

    result = syncer.sync()
    assert not result.conflicts
    assert tree_files(sshd_profile.remote_dir) == files  # complete, and no staging/temporary leftovers
    assert [p.name for p in sshd_profile.remote_dir.iterdir() if p.name.startswith(".")] == []


@pytest.mark.fault
def test_a_sync_cut_by_kill_9_of_sshd_says_so_and_resumes_after_its_restart_without_doubling(
    sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    """#26: sshd dies (kill -9, listener and connections) a third into a sync: the sync fails with the
    connection named, a sync while sshd is down says it cannot reach the instance (503 to the API), and
    once sshd is back on its port the next sync completes: every file once, nothing staged left over."""
    root = tmp_path / "many"
    files = {f"d{i % 5}/f{i}.bin": os.urandom(30_000 + i) for i in range(40)}
    write_tree(root, files)
    syncer = Syncer(sshd_profile.connection(), root, workers=3)
    once = threading.Lock()  # never released

    def kill_midway(event: ProgressEvent) -> None:
        if event.bytes_done > event.bytes_total // 3 and once.acquire(blocking=False):
            sshd_profile.server.kill9()

    with pytest.raises(SshError) as cut:
        syncer.sync(progress=kill_midway)
    assert once.locked(), "the sync finished before sshd was killed"
    assert isinstance(cut.value, Unavailable), cut.value  # an outage, not the user's input
    with pytest.raises(Unavailable) as down:
        syncer.sync()
    assert "refused" in down.value.message or "lost" in down.value.message, down.value.message

    sshd_profile.server.restart()
    result = syncer.sync()
    assert not result.conflicts
    assert tree_files(sshd_profile.remote_dir) == files  # each file exactly once, complete
    assert [p.name for p in sshd_profile.remote_dir.iterdir() if p.name.startswith(".")] == []  # no staging
    again = syncer.sync()
    assert not again.uploaded and again.unchanged == len(files), again.summary()  # nothing sent twice


def test_download_files_and_folders_confined_to_remote_root(
    sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    write_tree(sshd_profile.remote_dir, {"out/a.txt": b"A", "out/sub/b.txt": b"B" * 100_000, "log.txt": b"L"})
    (tmp_path / "outside.txt").write_text("secret")
    syncer = Syncer(sshd_profile.connection(), tmp_path)
    dest = tmp_path / "fetched"
    written = syncer.download("out", dest)
    assert sorted(p.relative_to(dest).as_posix() for p in written) == ["a.txt", "sub/b.txt"]
    assert (dest / "sub/b.txt").read_bytes() == b"B" * 100_000
    dest.mkdir(exist_ok=True)
    syncer.download(str(sshd_profile.remote_dir / "log.txt"), dest)
    assert (dest / "log.txt").read_bytes() == b"L"
    for bad in ("../outside.txt", "/etc/passwd", "out/../../outside.txt"):
        with pytest.raises(RemotePathError):
            syncer.download(bad, tmp_path / "nope")
    with pytest.raises(InputError):
        syncer.download_conflict("../outside.txt")
    assert not list(dest.rglob("*.ranktable-tmp-*"))


def test_tar_upload_without_remote_python_applies_with_mv(sshd_profile: SshdProfile, tmp_path: Path) -> None:
    from ranktable.remote.sync.progress import Meter
    from ranktable.remote.sync.transfer import Upload, UploadItem, upload_tar

    root = tmp_path / "src"
    write_tree(root, {"a b/c.txt": b"spaces", "x'y.txt": b"quote", "deep/er/z.bin": os.urandom(5000)})
    (sshd_profile.remote_dir / "old.txt").write_bytes(b"old")
    done: dict[str, object] = {}
    items = [UploadItem(rel, root / rel) for rel in ("a b/c.txt", "x'y.txt", "deep/er/z.bin")]
    meter = Meter("upload", 3, 0, None)
    upload = Upload(str(sshd_profile.remote_dir), items, ["old.txt"], meter, done.__setitem__)
    upload_tar(sshd_profile.connection(), upload, python=False)
    assert tree_files(sshd_profile.remote_dir) == {
        rel: (root / rel).read_bytes() for rel in ("a b/c.txt", "x'y.txt", "deep/er/z.bin")
    }
    assert sorted(done) == ["a b/c.txt", "deep/er/z.bin", "x'y.txt"]


def test_unusable_remote_directory_is_a_clear_error(sshd_profile: SshdProfile, tmp_path: Path) -> None:
    from ranktable.remote import ConnectionManager, ProfileStore
    from ranktable.remote.errors import SshError

    store = ProfileStore(sshd_profile.home)
    store.add(sshd_profile.server.profile("bad", "/etc/passwd/not-a-dir"))
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.txt").write_text("a")
    manager = ConnectionManager(store)
    with pytest.raises(SshError) as info:
        Syncer(manager.get("bad"), tmp_path / "src").sync()
    assert "/etc/passwd/not-a-dir" in info.value.message and "--remote-dir" in info.value.message
    manager.close()


def test_nested_ignore_files_apply_relative_to_their_folder(tmp_path: Path) -> None:
    write_tree(
        tmp_path,
        {
            ".gitignore": b"*.log\n/data/\n",
            "a/.gitignore": b"!keep.log\n/local.txt\ncache/\n",
            "a/b/.ranktableignore": b"keep.log\n*.txt\n!public.txt\n",
            "c/.gitignore": b"!*.log\n",
        },
    )
    rules = IgnoreRules.for_folder(tmp_path)
    assert rules.ignored("x.log") and rules.ignored("a/x.log")  # the root rule still reaches down
    assert not rules.ignored("a/keep.log")  # a deeper file overrides a shallower one
    assert rules.ignored("a/b/keep.log")  # ... and the deepest has the last word
    assert rules.ignored("a/local.txt") and not rules.ignored("local.txt")  # anchored to its own folder
    assert not rules.ignored("a/d/local.txt")  # "/local.txt" in a/ does not match a/d/local.txt
    assert rules.ignored("a/b/notes.txt") and not rules.ignored("a/b/public.txt")
    assert rules.ignored("a/b/cache", is_dir=True) and not rules.ignored("cache", is_dir=True)
    assert not rules.ignored("c/run.log")  # re-included by c/.gitignore
    # A file under an excluded directory cannot be re-included, even by an ignore file inside it.
    write_tree(tmp_path, {"data/.gitignore": b"!*\n", "data/x.csv": b"1"})
    assert rules.ignored_path("data/x.csv") and rules.ignored_path("a/cache/keep.log")
    assert not rules.ignored_path("c/deep/run.log")
    # Each folder's ignore files are read once and cached, not re-read per path.
    (tmp_path / "a/.gitignore").write_bytes(b"")
    assert not rules.ignored("a/keep.log") and rules.ignored("a/local.txt")
    # Without a root folder only the given lines apply.
    assert not IgnoreRules(["*.log", "!keep.log"]).ignored("a/b/keep.log")


def test_quick_ignore_test_agrees_with_pattern_by_pattern_checks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one-regex pre-test only skips specs none of whose patterns match: same verdicts as checking
    every pattern, for negations, anchors, folder-only patterns, ``**``, classes and escapes."""
    from ranktable.remote.sync import ignore

    write_tree(
        tmp_path,
        {
            ".gitignore": b"*.log\n/data/\n**/tmp/**\nbuild*/\n[Bb]ackup?.txt\n\\#hash\n# comment\n\n",
            "a/.gitignore": b"!keep.log\n/local.txt\ncache/\nsub/**/deep.py\n",
            "a/b/.ranktableignore": b"keep.log\n*.txt\n!public.txt\n",
        },
    )
    paths = [
        f"{d}{name}"
        for d in ("", "a/", "a/b/", "a/sub/x/", "c/tmp/", "data/", "build1/", "a/b/c/")
        for name in (
            "x.log",
            "keep.log",
            "local.txt",
            "public.txt",
            "backup1.txt",
            "Backup2.txt",
            "#hash",
            "deep.py",
            "plain.py",
            "cache",
            "tmp",
            "build2",
        )
    ]
    quick = IgnoreRules.for_folder(tmp_path)
    monkeypatch.setattr(ignore, "_quick_test", lambda spec: None)
    slow = IgnoreRules.for_folder(tmp_path)
    verdicts = []
    for path in paths:
        for is_dir in (False, True):
            verdicts.append(quick.ignored(path, is_dir=is_dir))
            assert verdicts[-1] == slow.ignored(path, is_dir=is_dir), (path, is_dir)
    assert 0 < sum(verdicts) < len(verdicts)  # both answers occur


def test_scan_prunes_nested_ignored_folders_and_sync_keeps_them_local(
    sshd_profile: SshdProfile, local: Path
) -> None:
    write_tree(
        local,
        {
            "pkg/.gitignore": b"scratch/\n/draft.py\n",
            "pkg/scratch/tmp.py": b"x",
            "pkg/draft.py": b"draft",
            "pkg/sub/draft.py": b"kept",
            "logs/.ranktableignore": b"!run.log\n",
        },
    )
    syncer = Syncer(sshd_profile.connection(), local)
    result = syncer.sync()
    expected = EXPECTED | {"pkg/.gitignore", "pkg/sub/draft.py", "logs/.ranktableignore", "logs/run.log"}
    assert set(result.uploaded) == expected
    assert set(tree_files(sshd_profile.remote_dir)) == expected


def _many(root: Path, count: int) -> None:
    write_tree(root, {f"src/f{i:02d}.py": f"x = {i}\n".encode() for i in range(count)})


def test_bulk_deletion_stops_before_deleting_anything_until_forced(
    sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    local = tmp_path / "many"
    _many(local, 20)
    remote = sshd_profile.remote_dir
    syncer = Syncer(sshd_profile.connection(), local, SyncSettings(delete_remote=True))
    syncer.sync()
    for i in range(10):  # half, but not more than half: allowed
        (local / f"src/f{i:02d}.py").unlink()
    assert len(syncer.sync().deleted) == 10
    _many(local, 20)
    syncer.sync()
    for i in range(11):  # 11 of 20: stopped
        (local / f"src/f{i:02d}.py").unlink()
    (local / "src/f19.py").write_bytes(b"changed = True\n")
    assert len(syncer.sync(dry_run=True).deleted) == 11  # a dry run shows what would happen
    with pytest.raises(ConflictError, match=r"delete 11 of the 20 remote files.*--force"):
        syncer.sync()
    assert len(tree_files(remote)) == 20  # nothing deleted, nothing uploaded
    assert (remote / "src/f19.py").read_bytes() == b"x = 19\n"
    kept = Syncer(sshd_profile.connection(), local).sync()  # without delete mode nothing is in danger
    assert len(kept.kept_remote) == 11 and kept.uploaded == ["src/f19.py"]
    forced = syncer.sync(force=True)
    assert len(forced.deleted) == 11 and forced.uploaded == []
    assert sorted(tree_files(remote)) == [f"src/f{i:02d}.py" for i in range(11, 20)]


def test_tar_headers_are_tarfiles_own_bytes() -> None:
    """The fast ustar header is byte for byte what tarfile writes; long, non-ASCII or huge entries go
    through tarfile (PAX)."""
    import tarfile

    from ranktable.remote.sync.transfer import tar_header

    names = ["a", "pkg1/sub2/file3.py", "x" * 99, "x" * 100, "y" * 101, "a b/c d.txt", "é/x", "q\\t\"'$"]
    shapes = [(0, 0, 0o644), (12345, 1_700_000_000, 0o755), (8**11 - 1, 8**11 - 1, 0o600), (8**11, 5, 0o600)]
    for name in names:
        for size, mtime, mode in shapes:
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = size, mtime, mode
            assert tar_header(info) == info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"), name


class _Recorder:
    """A channel that takes at most 32 KiB per send (like paramiko's packets) and keeps the bytes."""

    def __init__(self, closed_after: int | None = None) -> None:
        self.data = bytearray()
        self.closed_after = closed_after

    def send(self, view: memoryview) -> int:
        if self.closed_after is not None and len(self.data) >= self.closed_after:
            return 0
        part = bytes(view[: 1 << 15])
        self.data += part
        return len(part)


def test_tar_stream_of_big_and_small_files_reads_back(tmp_path: Path) -> None:
    """Blocks of big files are queued without copying, small ones gathered: the stream is still a valid
    archive with every byte, and the recorded hashes are the files' own."""
    import hashlib
    import io
    import tarfile

    from ranktable.remote.sync.progress import Meter
    from ranktable.remote.sync.transfer import UploadItem, write_tar

    files = {"big.bin": os.urandom(3 * (1 << 20) + 77), "é/small.txt": b"s" * 700, "empty": b""}
    files |= {f"many/f{i}.py": os.urandom(i * 13) for i in range(40)}
    write_tree(tmp_path, files)
    channel = _Recorder()
    items = [UploadItem(rel, tmp_path / rel) for rel in files]
    done = write_tar(channel, "/r", ".staging", items, ["gone.txt"], Meter("upload", 0, 0, None), True)  # type: ignore[arg-type]
    assert {rel: e.sha256 for rel, e in done} == {
        rel: hashlib.sha256(d).hexdigest() for rel, d in files.items()
    }
    with tarfile.open(fileobj=io.BytesIO(bytes(channel.data)), mode="r:") as archive:
        members = {m.name: archive.extractfile(m).read() for m in archive if m.isfile()}  # type: ignore[union-attr]
    assert members.pop(".ranktable-apply.list") == b"\0".join(
        [*(b"U" + rel.encode() for rel in files), b"Dgone.txt"]
    )
    assert members == files


def test_a_channel_closed_mid_stream_fails_the_upload(tmp_path: Path) -> None:
    from ranktable.remote.sync.progress import Meter
    from ranktable.remote.sync.transfer import UploadItem, write_tar

    write_tree(tmp_path, {"big.bin": os.urandom(2 << 20)})
    with pytest.raises(EOFError, match="closed the channel"):
        write_tar(
            _Recorder(closed_after=1 << 20),  # type: ignore[arg-type]
            "/r",
            ".staging",
            [UploadItem("big.bin", tmp_path / "big.bin")],
            [],
            Meter("upload", 0, 0, None),
            True,
        )


def test_find_walk_equals_the_python_walk(tmp_path: Path) -> None:
    """GNU find's listing, with the ignore rules applied here, gives exactly the Python walk's files:
    pruned folders (and ignore files inside them), links, odd names, modes and nanosecond times."""
    from ranktable.remote.sync import scan as scanning

    if not scanning._gnu_find():  # macOS: the Python walk is the only one, and scan() uses it
        assert scanning.scan(tmp_path, IgnoreRules.for_folder(tmp_path)) == scanning._scan_python(
            tmp_path, IgnoreRules.for_folder(tmp_path)
        )
        return
    write_tree(
        tmp_path,
        {
            ".gitignore": b"*.log\nbuild/\n!keep.log\n",
            "a/.gitignore": b"/local.txt\n",
            "a/local.txt": b"x",
            "a/b/c.py": b"print()\n",
            "a/b/run.log": b"log",
            "a/keep.log": b"keep",
            "build/.gitignore": b"!*\n",
            "build/out/x.o": b"o",
            "sp ace/new\nline.txt": b"n",
            "dash/-x": b"-",
            "empty.txt": b"",
            "__pycache__/m.pyc": b"c",
        },
    )
    (tmp_path / "dir-empty").mkdir()
    (tmp_path / "odd-\udcff.bin").write_bytes(b"\xff")  # not UTF-8
    (tmp_path / "a/b/c.py").chmod(0o751)
    os.utime(tmp_path / "empty.txt", ns=(1_700_000_000_123_456_789, 1_700_000_000_123_456_789))
    (tmp_path / "link.txt").symlink_to(tmp_path / "a/keep.log")
    (tmp_path / "linkdir").symlink_to(tmp_path / "a")
    rules = IgnoreRules.for_folder(tmp_path)
    found = scanning._scan_find(tmp_path, rules, "")
    assert found is not None
    assert found == scanning._scan_python(tmp_path, IgnoreRules.for_folder(tmp_path))
    assert "a/b/c.py" in found and found["a/b/c.py"].mode == 0o751
    assert found["empty.txt"].mtime_ns == 1_700_000_000_123_456_789
    assert "sp ace/new\nline.txt" in found and "odd-\udcff.bin" in found and "a/keep.log" in found
    assert not {"build/out/x.o", "a/local.txt", "a/b/run.log", "link.txt", "__pycache__/m.pyc"} & set(found)
    assert not [r for r in found if r.startswith("linkdir/")]
    assert scanning._scan_find(tmp_path, rules, "a") == scanning._scan_python(tmp_path, rules, "a")
    assert scanning.scan(tmp_path, rules) == found
    (tmp_path / "locked").mkdir(mode=0o000)  # find reports an error: the Python walk takes over
    try:
        if os.geteuid() != 0:
            assert scanning._scan_find(tmp_path, rules, "") is None
    finally:
        (tmp_path / "locked").chmod(0o755)
