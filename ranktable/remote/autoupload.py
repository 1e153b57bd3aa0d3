"""Automatic upload: saves and outside edits are queued, debounced and synced by one worker thread.

Two feeds, as in the IDEs users know (modes ``always`` / ``explicit`` / ``never``):

* ``post_save_hook(model, os_path, contents_manager)`` — wire it as ``FileContentsManager.post_save_hook``.
  It runs inside the user's save request, so it only enqueues: it never uploads and never raises.
  Jupyter passes no "explicit" flag; every save through the Contents API (Ctrl+S, and autosave) counts
  as an explicit save.
* a ``watchdog`` observer for changes made outside Jupyter (git checkout, terminal, editors that save
  by writing a swap file and renaming it — handled as moves). Only used in ``always`` mode.

A burst of events (a checkout touching 500 files) becomes one sync of exactly those paths after
``debounce`` seconds of quiet. A failed sync (connection dropped) is retried with backoff; results and
errors are kept for the UI (``status()``) and passed to ``on_result``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from ranktable.errors import InputError
from ranktable.remote.profiles import UPLOAD_MODES
from ranktable.remote.sync import IgnoreRules, Syncer, SyncResult
from ranktable.remote.sync.ignore import IGNORE_FILES

log = logging.getLogger(__name__)
ResultCallback = Callable[[SyncResult | None, BaseException | None], None]
ChangeCallback = Callable[[], None]
FULL = "\0full"  # marker: a directory changed, sync the whole folder


class _Watcher(FileSystemEventHandler):
    def __init__(self, uploader: AutoUploader) -> None:
        self.uploader = uploader

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if event.is_synthetic:
            return  # the contents of a moved or created folder: covered by that folder's own event
        if event.is_directory and event.event_type == "modified":
            return  # "something in this folder changed": that change comes with its own event (a saved
            # file's close-write would otherwise re-examine its whole folder on every save)
        if event.event_type == "moved" and event.is_directory:
            self.uploader.notify_folder_moved(os.fsdecode(event.src_path), os.fsdecode(event.dest_path))
            return
        paths = [event.src_path]
        dest = getattr(event, "dest_path", "")
        if dest:
            paths.append(dest)  # a move: the old name is gone, the new one appears (vim, atomic saves)
        for path in paths:
            self.uploader.notify_external(os.fsdecode(path), is_dir=event.is_directory)


class AutoUploader:
    def __init__(
        self,
        syncer: Syncer,
        mode: str = "explicit",
        *,
        debounce: float = 0.5,
        on_result: ResultCallback | None = None,
        max_backoff: float = 60.0,
        on_change: ChangeCallback | None = None,
    ) -> None:
        if mode not in UPLOAD_MODES:
            raise InputError(f"unknown upload mode {mode!r}", where="mode", fix=f"use one of {UPLOAD_MODES}")
        self.syncer = syncer
        self.mode = mode
        self.debounce = debounce
        self.on_result = on_result
        self.on_change = on_change  # any change of status() (queued, uploading, done, failed): for live UIs
        self.max_backoff = max_backoff
        self.last_result: SyncResult | None = None
        self.last_error: BaseException | None = None
        self.syncs = 0
        self.last_sync: float | None = None  # wall-clock time of the last successful sync
        self._uploading = 0  # files in the sync under way (0: none)
        self._pending: set[str] = set()
        self._moves: list[tuple[str, str]] = []  # folders renamed locally: applied remotely in one command
        self._last_event = 0.0
        self._cond = threading.Condition()
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._observer: Any = None
        self._rules = syncer.rules()

    # -- feeding ------------------------------------------------------------------------------------
    def _relative(self, os_path: str) -> str | None:
        try:
            rel = Path(os_path).resolve().relative_to(self.syncer.local_root)
        except (ValueError, OSError):
            return None  # outside the synced folder
        text = rel.as_posix()
        return None if text in ("", ".") else text

    def _enqueue(self, rel: str) -> None:
        with self._cond:
            self._pending.add(rel)
            self._last_event = time.monotonic()
            self._cond.notify()
        self._changed()

    def notify_save(self, os_path: str) -> None:
        """A save through the Contents API (explicit). Cheap, never raises."""
        if self.mode == "never":
            return
        rel = self._relative(os_path)
        if rel is not None:
            self._enqueue(rel)

    def notify_external(self, os_path: str, *, is_dir: bool = False) -> None:
        """A change seen by the file watcher (uploaded only in ``always`` mode)."""
        if self.mode != "always":
            return
        rel = self._relative(os_path)
        if rel is None:
            return
        if rel.rsplit("/", 1)[-1] in IGNORE_FILES:  # any folder's ignore file changes the rules
            self._rules = self.syncer.rules()
        if self._rules.ignored_path(rel):
            return
        self._enqueue(f"{rel}/" if is_dir else rel)  # a folder: that subtree alone (a rename, a checkout)

    def notify_folder_moved(self, src_path: str, dest_path: str) -> None:
        """A folder renamed by the watcher: its two subtrees are synced, and the sync first tries to
        apply the rename remotely as one move/copy (``Syncer.sync(moves=...)``)."""
        if self.mode != "always":
            return
        source, target = self._relative(src_path), self._relative(dest_path)
        pair = (source, target) if source is not None and target is not None else None
        if pair and not any(self._rules.ignored_path(rel) for rel in pair):
            with self._cond:
                self._moves.append(pair)
        self.notify_external(src_path, is_dir=True)
        self.notify_external(dest_path, is_dir=True)

    # -- running ------------------------------------------------------------------------------------
    def start(self, *, watch: bool | None = None) -> AutoUploader:
        """Start the worker, and the file watcher when ``watch`` (default: mode is ``always``)."""
        if self._thread is None:
            self._stopping = False
            self._thread = threading.Thread(target=self._run, name="ranktable-autoupload", daemon=True)
            self._thread.start()
        if (self.mode == "always" if watch is None else watch) and self._observer is None:
            observer = Observer()
            observer.schedule(_Watcher(self), str(self.syncer.local_root), recursive=True)
            observer.daemon = True
            observer.start()
            self._observer = observer
        return self

    def stop(self, timeout: float = 10.0) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout)
            self._observer = None
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def _take_batch(self) -> tuple[set[str], list[tuple[str, str]]] | None:
        """Wait for events, then for ``debounce`` seconds of quiet; None when stopping."""
        with self._cond:
            while not self._pending and not self._stopping:
                self._cond.wait()
            if self._stopping:
                return None
            while not self._stopping:
                quiet_for = time.monotonic() - self._last_event
                if quiet_for >= self.debounce:
                    break
                self._cond.wait(self.debounce - quiet_for)
            batch, self._pending = self._pending, set()
            moves, self._moves = self._moves, []
            return batch, moves

    def _run(self) -> None:
        backoff = 1.0
        while True:
            taken = self._take_batch()
            if taken is None:
                return
            batch, moves = taken
            only = None if FULL in batch else sorted(batch)
            self._uploading = len(batch)
            self._changed()
            try:
                result = self.syncer.sync(only=only, moves=moves)
            except Exception as exc:  # a worker must survive anything; the error is surfaced via status()
                log.warning("automatic upload to %s failed: %s", self.syncer.conn.name, exc)
                self.last_error = exc
                self._uploading = 0
                self._notify(None, exc)
                self._changed()
                with self._cond:
                    self._pending |= batch  # retry these later
                    self._moves[:0] = moves
                    self._last_event = time.monotonic()
                    self._cond.wait(backoff)
                backoff = min(backoff * 2, self.max_backoff)
                continue
            backoff = 1.0
            self.syncs += 1
            self.last_result, self.last_error = result, None
            self.last_sync, self._uploading = time.time(), 0
            self._notify(result, None)
            self._changed()

    def record_sync(self, result: SyncResult) -> None:
        """A sync of this folder made outside the uploader ("Upload now", `ranktable sync`): the status says
        synced then, not "not synced yet"."""
        self.last_result, self.last_error = result, None
        self.last_sync = time.time()
        self._changed()

    def _changed(self) -> None:
        if self.on_change is not None:
            try:
                self.on_change()
            except Exception:
                log.exception("automatic upload change callback failed")

    def _notify(self, result: SyncResult | None, error: BaseException | None) -> None:
        if self.on_result is not None:
            try:
                self.on_result(result, error)
            except Exception:
                log.exception("automatic upload result callback failed")

    def status(self) -> dict[str, Any]:
        with self._cond:
            pending = len(self._pending)
        result = self.last_result
        return {
            "profile": self.syncer.conn.name,
            "local_root": str(self.syncer.local_root),
            "mode": self.mode,
            "pending": pending,
            "uploading": self._uploading,
            "syncs": self.syncs,
            "last_sync": self.last_sync,
            "last_summary": result.summary() if result else None,
            "conflicts": [c.path for c in result.conflicts] if result else [],
            "last_error": str(self.last_error) if self.last_error else None,
            "watching": self._observer is not None,
        }


_uploaders: list[AutoUploader] = []
_registry_lock = threading.Lock()


def register_uploader(uploader: AutoUploader) -> None:
    """Make ``post_save_hook`` feed ``uploader`` (for saves under its local folder)."""
    with _registry_lock:
        if uploader not in _uploaders:
            _uploaders.append(uploader)


def unregister_uploader(uploader: AutoUploader) -> None:
    with _registry_lock:
        if uploader in _uploaders:
            _uploaders.remove(uploader)


def registered_uploaders() -> list[AutoUploader]:
    with _registry_lock:
        return list(_uploaders)


def post_save_hook(model: Any = None, os_path: str = "", contents_manager: Any = None, **_: Any) -> None:
    """``FileContentsManager.post_save_hook``: enqueue the saved file. Never raises, never blocks."""
    try:
        for uploader in registered_uploaders():
            uploader.notify_save(os_path)
    except Exception:  # a failing hook would turn the user's save into an HTTP 500
        log.exception("ranktable post-save hook failed for %s", os_path)


__all__ = ["AutoUploader", "IgnoreRules", "post_save_hook", "register_uploader", "unregister_uploader"]
