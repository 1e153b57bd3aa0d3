"""Progress events for a transfer: files and bytes done out of the totals, rate and ETA."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ProgressEvent:
    phase: str  # "scan" | "upload" | "download" | "done"
    files_done: int
    files_total: int
    bytes_done: int
    bytes_total: int
    rate: float  # bytes per second since the transfer started
    eta: float | None  # seconds left, None when unknown
    path: str | None = None


ProgressCallback = Callable[[ProgressEvent], None]


class Meter:
    """Thread-safe counters that emit events at most every ``interval`` seconds (and on every file)."""

    def __init__(
        self,
        phase: str,
        files_total: int,
        bytes_total: int,
        callback: ProgressCallback | None,
        interval: float = 0.1,
    ) -> None:
        self.phase = phase
        self.files_total = files_total
        self.bytes_total = bytes_total
        self.callback = callback
        self.interval = interval
        self.files_done = 0
        self.bytes_done = 0
        self.started = time.monotonic()
        self._last = 0.0
        self._lock = threading.Lock()

    def add_bytes(self, n: int) -> None:
        with self._lock:
            self.bytes_done += n
            due = time.monotonic() - self._last >= self.interval
        if due:
            self.emit()

    def file_done(self, path: str) -> None:
        with self._lock:
            self.files_done += 1
        self.emit(path)

    def event(self, path: str | None = None, phase: str | None = None) -> ProgressEvent:
        elapsed = max(time.monotonic() - self.started, 1e-6)
        rate = self.bytes_done / elapsed
        left = self.bytes_total - self.bytes_done
        eta = left / rate if rate > 0 else None
        return ProgressEvent(
            phase or self.phase,
            self.files_done,
            self.files_total,
            self.bytes_done,
            self.bytes_total,
            rate,
            eta,
            path,
        )

    def emit(self, path: str | None = None, phase: str | None = None) -> None:
        if self.callback is None:
            return
        self._last = time.monotonic()
        self.callback(self.event(path, phase))
