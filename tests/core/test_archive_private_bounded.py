"""#26.5: run-log archives are private (0600 files in 0700 folders) and bounded: the per-run cap holds
also while a reader replays, and one global cap (bytes and runs) across jobs evicts the oldest runs first,
never one being written or read."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ranktable.observe.archive import RunArchive, enforce_global_cap, find_run, list_runs, read_run


@pytest.fixture(autouse=True)
def _loose_umask() -> object:
    old = os.umask(0o022)  # what a user's shell has: files would be 0644 unless we ask for less
    yield
    os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_files_are_0600_in_0700_folders(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    archive = RunArchive(root, "ns", "job", "u1", {"p0": 0}, cap_bytes=2 * 64 * 1024 * 2)
    for i in range(3):  # past the pod's share of the cap: the rotated file too
        archive.append("p0", 0, [("s", f"{i} " + "x" * 70_000)])
    archive.close()
    folders = [root, root / "ns", root / "ns" / "job", archive.dir]
    assert [oct(_mode(f)) for f in folders] == [oct(0o700)] * 4
    files = sorted(archive.dir.iterdir())
    assert {f.name for f in files} == {"meta.json", "meta.lock", "p0.log", "p0.log.1", "writer.lock"}
    assert all(_mode(f) == 0o600 for f in files), [(f.name, oct(_mode(f))) for f in files]


def test_an_older_world_readable_archive_is_tightened_when_reopened(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    run = root / "ns" / "job" / "u1"
    run.mkdir(parents=True, mode=0o755)
    for folder in (root, root / "ns", root / "ns" / "job", run):
        folder.chmod(0o755)
    (run / "p0.log").write_text("s old line\n")
    (run / "p0.log").chmod(0o644)
    RunArchive(root, "ns", "job", "u1", {"p0": 0}).append("p0", 0, [("s", "new")])
    assert _mode(root) == _mode(root / "ns") == _mode(run) == 0o700
    assert _mode(run / "p0.log") == 0o600


def test_the_per_run_cap_holds_while_a_reader_replays(tmp_path: Path) -> None:
    cap = 2 * 64 * 1024 * 2  # two pods: each pod's files stay under 2 x 64 KiB
    archive = RunArchive(tmp_path, "ns", "j", "u", {"a": 0, "b": 1}, cap_bytes=cap)
    first = [(f"s{i:04d}", f"a line {i} " + "y" * 1000) for i in range(50)]
    archive.append("a", 0, first)
    cut = archive.cut()  # a reader joins and holds this replay
    archive.holds += 1
    for i in range(2000):  # ~2 MiB more, 16 times the cap, while it holds
        archive.append("a", 0, [(f"t{i:05d}", "z" * 1000)])
        archive.append("b", 1, [(f"t{i:05d}", "w" * 1000)])
    archive.flush()
    on_disk = sum(f.stat().st_size for f in archive.dir.glob("*.log*"))
    assert on_disk <= cap + 4096, on_disk
    # The held replay reads only lines of its cut, never another generation's bytes under the same name.
    replayed = [line for _, _, files in cut for line in archive.read_cut(files)]
    assert set(replayed) <= set(first)
    archive.holds -= 1
    archive.close()
    assert sum(f.stat().st_size for f in archive.dir.glob("*.log*")) <= cap + 4096


def _run(root: Path, job: str, uid: str, created: float, size: int = 1000) -> RunArchive:
    archive = RunArchive(root, "ns", job, uid, {"p": 0})
    archive.meta["created"] = created
    archive.append("p", 0, [("s", "x" * size)])
    archive.close()
    return archive


def test_a_global_cap_on_runs_evicts_the_oldest_of_any_job(tmp_path: Path) -> None:
    for n, job in enumerate(["a", "b", "c", "d", "e"]):
        _run(tmp_path, job, f"u{n}", created=1000.0 + n)
    removed = enforce_global_cap(tmp_path, max_bytes=10**9, max_runs=3)
    assert sorted(p.parent.name for p in removed) == ["a", "b"]
    assert [bool(list_runs(tmp_path, "ns", j)) for j in "abcde"] == [False, False, True, True, True]


def test_a_global_cap_on_bytes_never_evicts_a_run_being_read_or_written(tmp_path: Path) -> None:
    _run(tmp_path, "old", "u0", created=1.0, size=50_000)
    _run(tmp_path, "mid", "u1", created=2.0, size=50_000)
    reader = read_run(tmp_path, find_run(tmp_path, "ns", "old"))
    assert next(reader)[3].startswith("x")  # someone is reading the oldest run
    writing = RunArchive(tmp_path, "ns", "new", "u2", {"p": 0}, max_bytes=60_000)
    writing.append("p", 0, [("s", "x" * 50_000)])  # the cap is checked as it grows
    assert list_runs(tmp_path, "ns", "old") and not list_runs(tmp_path, "ns", "mid")
    reader.close()
    enforce_global_cap(tmp_path, max_bytes=60_000)
    assert not list_runs(tmp_path, "ns", "old") and list_runs(tmp_path, "ns", "new")  # the writer stays
    writing.close()
