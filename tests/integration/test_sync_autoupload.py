"""Automatic upload: a save through Jupyter's Contents API, and edits made outside Jupyter (watchdog)."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ranktable.remote.autoupload import AutoUploader, post_save_hook, register_uploader, unregister_uploader
from ranktable.remote.sync import Syncer
from tests.integration.fixtures.sshd import SshdProfile


def _wait_for(check: Callable[[], bool], timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.05)
    return check()


def _started_uploader(
    sshd_profile: SshdProfile, local: Path, mode: str, debounce: float
) -> tuple[Path, AutoUploader]:
    """An empty folder `local` and its started AutoUploader to the profile (`mode`, `debounce` s)."""
    local.mkdir()
    return local, AutoUploader(Syncer(sshd_profile.connection(), local), mode, debounce=debounce).start()


@pytest.fixture
def jp_server_config() -> dict[str, Any]:
    return {"FileContentsManager": {"post_save_hook": "ranktable.remote.autoupload.post_save_hook"}}


@pytest.fixture
def explicit_uploader(sshd_profile: SshdProfile, jp_root_dir: Path) -> Iterator[AutoUploader]:
    uploader = AutoUploader(Syncer(sshd_profile.connection(), jp_root_dir), "explicit", debounce=0.2).start()
    register_uploader(uploader)
    try:
        yield uploader
    finally:
        unregister_uploader(uploader)
        uploader.stop()


async def test_save_through_contents_api_is_uploaded_after_the_request(
    jp_fetch: Any, explicit_uploader: AutoUploader, sshd_profile: SshdProfile, jp_root_dir: Path
) -> None:
    body = {"type": "file", "format": "text", "content": "print('saved in jupyter')\n"}
    response = await jp_fetch("api", "contents", "train.py", method="PUT", body=json.dumps(body))
    assert response.code in (200, 201)
    remote = sshd_profile.remote_dir / "train.py"
    assert _wait_for(lambda: remote.exists() and remote.read_text() == "print('saved in jupyter')\n")
    assert _wait_for(lambda: explicit_uploader.status()["syncs"] >= 1)  # the file lands before sync() returns
    assert explicit_uploader.status()["last_error"] is None
    # Outside edits are not uploaded in "explicit" mode: not even queued; a later save goes up without it.
    (jp_root_dir / "other.py").write_text("x = 1\n")
    explicit_uploader.notify_external(str(jp_root_dir / "other.py"))
    assert explicit_uploader.status()["pending"] == 0
    (jp_root_dir / "later.py").write_text("y = 2\n")
    explicit_uploader.notify_save(str(jp_root_dir / "later.py"))
    assert _wait_for(lambda: (sshd_profile.remote_dir / "later.py").exists())
    assert not (sshd_profile.remote_dir / "other.py").exists()


def test_hook_never_raises_and_ignores_paths_outside(sshd_profile: SshdProfile, tmp_path: Path) -> None:
    local = tmp_path / "synced"
    local.mkdir()
    uploader = AutoUploader(Syncer(sshd_profile.connection(), local), "explicit")  # not started: a queue
    register_uploader(uploader)
    try:
        post_save_hook(model=None, os_path=str(tmp_path / "nowhere.py"), contents_manager=None)
        post_save_hook()  # Jupyter may call it with nothing: no error reaches the user's save
        assert uploader.status()["pending"] == 0  # outside the synced folder: ignored
        post_save_hook(model=None, os_path=str(local / "inside.py"), contents_manager=None)
        assert uploader.status()["pending"] == 1  # the hook does reach the uploader
    finally:
        unregister_uploader(uploader)


def test_external_edits_are_watched_in_always_mode(sshd_profile: SshdProfile, tmp_path: Path) -> None:
    local = tmp_path / "work"
    local.mkdir()
    (local / "keep.py").write_text("a = 1\n")
    results: list[object] = []
    uploader = AutoUploader(
        Syncer(sshd_profile.connection(), local),
        "always",
        debounce=0.3,
        on_result=lambda r, e: results.append(r or e),
    ).start()
    try:
        assert uploader.status()["watching"]
        remote = sshd_profile.remote_dir
        (local / "pkg").mkdir()
        (local / "pkg" / "mod.py").write_text("from terminal\n")  # like `echo > file` in a terminal
        assert _wait_for(lambda: (remote / "pkg/mod.py").exists())
        # vim-style save: write a swap file, then rename it over the original
        swap = local / ".keep.py.swp-new"
        swap.write_text("a = 2  # vim\n")
        os.replace(swap, local / "keep.py")
        assert _wait_for(
            lambda: (remote / "keep.py").exists() and (remote / "keep.py").read_text() == "a = 2  # vim\n"
        )
        # Ignored files never go up: a file written after them (the watcher keeps the order) arrives alone.
        (local / "__pycache__").mkdir()
        (local / "__pycache__" / "x.pyc").write_bytes(b"\0")
        (local / ".~keep.py").write_text("jupyter backup")
        (local / "after.py").write_text("b = 1\n")
        assert _wait_for(lambda: (remote / "after.py").exists())
        assert not (remote / "__pycache__").exists() and not (remote / ".~keep.py").exists()
        assert not [r for r in results if isinstance(r, BaseException)]
    finally:
        uploader.stop()


def test_burst_of_changes_is_debounced_into_few_syncs(sshd_profile: SshdProfile, tmp_path: Path) -> None:
    local, uploader = _started_uploader(sshd_profile, tmp_path / "burst", "explicit", 0.5)
    try:
        for i in range(40):
            path = local / f"f{i}.txt"
            path.write_text(str(i))
            uploader.notify_save(str(path))
        assert _wait_for(lambda: len(list(sshd_profile.remote_dir.glob("f*.txt"))) == 40)
        assert uploader.syncs <= 2
    finally:
        uploader.stop()


def test_never_mode_uploads_nothing(sshd_profile: SshdProfile, tmp_path: Path) -> None:
    local, uploader = _started_uploader(sshd_profile, tmp_path / "never", "never", 0.1)
    try:
        (local / "a.txt").write_text("a")
        uploader.notify_save(str(local / "a.txt"))
        uploader.notify_external(str(local / "a.txt"))
        assert uploader.status()["pending"] == 0  # nothing queued, so nothing can go up later
        assert uploader.syncs == 0 and not (sshd_profile.remote_dir / "a.txt").exists()
    finally:
        uploader.stop()


def test_a_renamed_folder_is_applied_remotely_in_one_command(
    sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    """Watch mode: renaming a folder copies it remotely (delete mode off: the old name stays), sends no
    file again, and looks at the two subtrees alone (the rest of the tree is not listed again)."""
    local = tmp_path / "proj"
    for i in range(30):
        (local / "data").mkdir(parents=True, exist_ok=True)
        (local / "data" / f"d{i}.txt").write_text(f"{i}\n")
        (local / "other").mkdir(exist_ok=True)
        (local / "other" / f"o{i}.txt").write_text(f"{i}\n")
    syncer = Syncer(sshd_profile.connection(), local)
    syncer.sync()
    results: list[Any] = []
    uploader = AutoUploader(syncer, "always", debounce=0.2, on_result=lambda r, e: results.append(r)).start()
    try:
        assert uploader.status()["watching"]  # the watch is in place once start() returns
        os.rename(local / "data", local / "renamed")
        target = sshd_profile.remote_dir / "renamed"
        assert _wait_for(lambda: any(r is not None and r.relocated for r in results))
        assert sorted(os.listdir(target)) == sorted(f"d{i}.txt" for i in range(30))
        assert (target / "d7.txt").read_text() == "7\n"
        relocating = next(r for r in results if r is not None and r.relocated)
        assert relocating.relocated == ["data -> renamed"] and relocating.uploaded == []
        assert relocating.unchanged == 30  # "renamed/" checked against the manifest; "other/" not looked at
        assert (sshd_profile.remote_dir / "data" / "d7.txt").exists()  # delete mode off: kept remotely
        assert syncer.sync().uploaded == []  # a full sync agrees: nothing left to send
    finally:
        uploader.stop()


def test_a_save_inside_a_large_folder_syncs_that_file_alone(
    sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    """watchdog reports the saved file and "its folder changed": only the file is looked at."""
    local = tmp_path / "big"
    (local / "data").mkdir(parents=True)
    for i in range(40):
        (local / "data" / f"d{i}.txt").write_text(f"{i}\n")
    syncer = Syncer(sshd_profile.connection(), local)
    syncer.sync()
    results: list[Any] = []
    uploader = AutoUploader(
        syncer, "always", debounce=0.1, on_result=lambda r, e: results.append(r or e)
    ).start()
    try:
        assert uploader.status()["watching"]  # the watch is in place once start() returns
        (local / "data" / "d3.txt").write_text("saved\n")
        remote = sshd_profile.remote_dir / "data" / "d3.txt"
        assert _wait_for(lambda: remote.read_text() == "saved\n")
        assert _wait_for(lambda: bool(results))
        # A later save elsewhere: the watcher keeps the order, so whatever the first save still caused
        # (a second sync of data/) is synced before it or with it.
        (local / "marker.txt").write_text("after\n")
        assert _wait_for(lambda: any(getattr(r, "uploaded", None) == ["marker.txt"] for r in results))
        assert [r.uploaded for r in results] == [["data/d3.txt"], ["marker.txt"]]
        assert results[0].unchanged == 0  # the 39 other files of data/ were not re-examined
        assert results[1].unchanged == 0  # nor with the later save
    finally:
        uploader.stop()


def test_status_changes_are_announced_queued_uploading_then_synced(
    sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    """What the status bar follows (`uploads` stream channel): each change calls on_change, and status()
    says how many files wait or are in flight, then when the last sync finished."""
    local = tmp_path / "synced"
    local.mkdir()
    seen: list[dict[str, Any]] = []
    uploader: AutoUploader | None = None

    def changed() -> None:
        assert uploader is not None
        status = uploader.status()
        seen.append({k: status[k] for k in ("pending", "uploading", "syncs", "last_sync", "last_error")})

    uploader = AutoUploader(
        Syncer(sshd_profile.connection(), local), "explicit", debounce=0.2, on_change=changed
    )
    uploader.start()
    try:
        assert uploader.status()["uploading"] == 0 and uploader.status()["last_sync"] is None
        before = time.time()
        for name in ("a.py", "b.py"):
            (local / name).write_text(f"# {name}\n")
            uploader.notify_save(str(local / name))
        assert _wait_for(lambda: uploader.status()["syncs"] >= 1)
    finally:
        uploader.stop()
    assert seen[0]["pending"] == 1 and seen[0]["syncs"] == 0  # queued
    assert {"pending": 0, "uploading": 2, "syncs": 0} in [
        {k: s[k] for k in ("pending", "uploading", "syncs")} for s in seen
    ]  # in flight: the two files of one batch
    last = seen[-1]
    assert last["uploading"] == 0 and last["syncs"] == 1 and last["last_error"] is None
    assert last["last_sync"] is not None and last["last_sync"] >= before
    assert (sshd_profile.remote_dir / "b.py").read_text() == "# b.py\n"
