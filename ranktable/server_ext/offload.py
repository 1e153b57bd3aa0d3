"""Large layout requests (a rank table or topology sent inline) are parsed and computed in a worker
process, not on the event loop nor in a thread.

`json.loads` of a 60 MB body holds the GIL for seconds (3.6 s on a busy 2-core machine, and so would
unpickling its result), so a thread stalled every other request as much as the loop did: `/api/status`
waited 12 s. The worker gets the raw bytes and returns only the (small) answer; its errors come back as
the same `RanktableError` classes, so the client sees the same 4xx body.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import traceback
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from ranktable.errors import (
    ConflictError,
    ContentError,
    InputError,
    MissingFileError,
    NotFoundError,
    PermissionDenied,
    RanktableError,
    Unavailable,
)
from ranktable.server_ext.bodies import parse_body
from ranktable.server_ext.paths import confined_file

_KINDS = (
    MissingFileError,
    NotFoundError,
    PermissionDenied,
    ConflictError,
    Unavailable,
    ContentError,  # before InputError: a large body's 422 stays a 422
    InputError,
    RanktableError,
)


@dataclass(frozen=True)
class LayoutContext:
    """What `LayoutService` needs of the server, picklable: the Jupyter root, the configured topology, and
    whether this user may read files there (`contents:read`): without it, naming a file is refused, so its
    key names, content or absolute path never show in an error or an answer."""

    root_dir: str
    topology: str
    topology_format: str
    may_read_files: bool = True

    @property
    def config(self) -> LayoutContext:
        return self

    def local_file(self, relative: str, field: str) -> Path:
        if not self.may_read_files:
            raise PermissionDenied(
                "naming a file of the Jupyter root needs permission to read files (contents:read)",
                where=field,
                fix="send the document's content inline instead",
            )
        return confined_file(self.root_dir, relative, field)


def layout_call(context: LayoutContext, method: str, body: dict[str, Any]) -> Any:
    """`LayoutService.<method>(body)` for one request's context (in the server's threads)."""
    from ranktable.server_ext.layout_service import LayoutService

    return getattr(LayoutService(context), method)(body)  # type: ignore[arg-type]


def layout_request(context: LayoutContext, method: str, raw: bytes) -> tuple[str, Any]:
    """In the worker: ("ok", answer), ("error", (class name, reason, where, fix)) or ("bug", traceback)."""
    try:
        return "ok", layout_call(context, method, parse_body(raw))
    except RanktableError as err:
        kind = next(k for k in _KINDS if isinstance(err, k))
        return "error", (kind.__name__, err.reason, err.where, err.fix)
    except Exception:  # reported to the parent, which logs it and answers 500
        return "bug", traceback.format_exc()


def _lower_priority() -> None:
    """The worker yields the CPU to the server's event loop (2 busy cores: it competed for them)."""
    os.nice(10)


class BodyWorker:
    """One worker process, started on the first large body (forkserver: the server has threads)."""

    def __init__(self) -> None:
        self._pool: ProcessPoolExecutor | None = None
        self._lock = threading.Lock()

    def _executor(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._pool is None:
                self._pool = ProcessPoolExecutor(
                    max_workers=1,
                    mp_context=multiprocessing.get_context("forkserver"),
                    initializer=_lower_priority,
                )
            return self._pool

    async def layout(self, context: LayoutContext, method: str, raw: bytes) -> Any:
        # Submitted from a thread: the first submit starts the forkserver and the worker (~1 s), and
        # sending 60 MB down the pipe must not happen on the event loop either.
        future = await asyncio.to_thread(
            lambda: self._executor().submit(partial(layout_request, context, method, raw))
        )
        status, value = await asyncio.wrap_future(future)
        if status == "ok":
            return value
        if status == "error":
            name, reason, where, fix = value
            kind = next(k for k in _KINDS if k.__name__ == name)
            raise kind(reason, where=where, fix=fix)
        raise RuntimeError(f"the body worker failed:\n{value}")

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.shutdown(wait=False, cancel_futures=True)
                self._pool = None
