"""What we uploaded last time, per profile + local folder + remote root, kept under RANKTABLE_HOME.

For each file: the local (size, mtime_ns, sha256) we uploaded and the remote (size, mtime in whole
seconds) it had right after. A local file is "changed" if its size/mtime differ and its hash differs;
a remote file is "changed by someone else" if its size/mtime differ from what we recorded.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import msgspec

from ranktable.home import ranktable_home
from ranktable.remote.state import write_private_json

try:  # POSIX: also exclude a second process syncing the same folder
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


class Entry(NamedTuple):
    size: int
    mtime_ns: int
    sha256: str
    remote_size: int
    remote_mtime: int


FIELDS = list(Entry._fields)
_thread_locks: dict[str, threading.Lock] = {}
_cache: dict[str, tuple[tuple[int, int], dict[str, Entry]]] = {}  # path -> (mtime_ns, size), entries
_thread_locks_guard = threading.Lock()


class Manifest:
    def __init__(self, profile: str, local_root: Path, remote_dir: str, home: Path | None = None) -> None:
        key = hashlib.sha256(f"{local_root.resolve()}\0{remote_dir}".encode()).hexdigest()[:16]
        self.path = (home or ranktable_home()) / "sync" / profile / f"{key}.json"
        self.local_root = str(local_root.resolve())
        self.remote_dir = remote_dir
        self.entries: dict[str, Entry] = {}
        self._saved: dict[str, Entry] = {}

    def load(self) -> Manifest:
        self.entries = {}
        try:
            st = self.path.stat()
        except FileNotFoundError:
            st = None
        cached = _cache.get(str(self.path))
        if st is not None and cached is not None and cached[0] == (st.st_mtime_ns, st.st_size):
            self.entries = dict(cached[1])  # unchanged since we last read or wrote it: no JSON parse
            self._saved = dict(self.entries)
            return self
        if st is not None:
            try:
                data = msgspec.json.decode(self.path.read_bytes())
                if data.get("fields") == FIELDS:
                    self.entries = {rel: Entry(*values) for rel, values in data.get("files", {}).items()}
            except (msgspec.DecodeError, ValueError, TypeError, AttributeError):
                self.entries = {}  # a damaged manifest only costs a full comparison
        self._saved = dict(self.entries)
        self._remember()
        return self

    def _remember(self) -> None:
        """Keep what the file holds now, keyed by its mtime and size (watch mode reloads it per save)."""
        with contextlib.suppress(FileNotFoundError):
            st = self.path.stat()
            _cache[str(self.path)] = ((st.st_mtime_ns, st.st_size), dict(self.entries))

    def save(self) -> None:
        """Write the manifest if it changed (compact JSON: thousands of entries load and save fast)."""
        if self.entries == self._saved:
            return
        data = {
            "version": 1,
            "local_root": self.local_root,
            "remote_dir": self.remote_dir,
            "fields": FIELDS,
            "files": self.entries,  # written with sorted keys
        }
        write_private_json(self.path, data, compact=True)
        self._saved = dict(self.entries)
        self._remember()

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """One sync at a time per folder (threads of this process, and other processes)."""
        with _thread_locks_guard:
            lock = _thread_locks.setdefault(str(self.path), threading.Lock())
        with lock:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            with open(self.path.with_suffix(".lock"), "a") as fh:
                if fcntl is not None:
                    fcntl.flock(fh, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    if fcntl is not None:
                        fcntl.flock(fh, fcntl.LOCK_UN)
