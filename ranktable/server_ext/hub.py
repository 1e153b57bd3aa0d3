"""Background operations and thread-to-asyncio bridges behind the `/ranktable/stream` websocket.

Blocking producers (a Kubernetes log follow, a watch, an SSH sync) run in their own threads and hand
items to the event loop; the websocket only ever awaits. Everything started here is stopped by `close()`,
which the extension calls on server shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from ranktable import probe
from ranktable.errors import NotFoundError
from ranktable.server_ext.errors import body_for

Emit = Callable[[dict[str, Any]], None]
HANDOVER_SLOTS = 64  # a producer thread's yields waiting for the event loop (Hub.iterate), at most
OpFunction = Callable[[Emit, threading.Event], Any]


@dataclass
class Operation:
    """A long job (sync, download, remote run) whose events any number of subscribers can follow.

    Its events are kept once, numbered, in a bounded buffer; each follower keeps only its cursor (the
    number of the last event it sent) and is woken when there are more. A follower that does not read
    holds nothing and slows nobody: when it reads again it goes on from its cursor, told how many events
    the buffer no longer had (#26.1)."""

    id: str
    kind: str
    title: str
    events: deque[dict[str, Any]]
    cancel: threading.Event = field(default_factory=threading.Event)
    done: bool = False
    result: Any = None
    error: dict[str, Any] | None = None
    dropped: int = 0
    started: float = field(default_factory=time.time)
    waiters: set[asyncio.Event] = field(default_factory=set)

    @property
    def last(self) -> int:
        """The number of the newest event (1 for the first; 0 before any)."""
        return self.dropped + len(self.events)

    def after(self, cursor: int) -> tuple[int, list[dict[str, Any]]]:
        """(events the buffer no longer holds, the events it holds) numbered after `cursor`."""
        first = self.dropped + 1  # the number of the oldest event held
        lost = max(0, first - 1 - cursor)
        skip = max(0, cursor - self.dropped)
        return lost, list(itertools.islice(self.events, skip, None))

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "title": self.title,
            "done": self.done,
            "result": self.result,
            "error": self.error,
            "started": self.started,
        }


class StopEvent(threading.Event):
    """A producer's stop flag that also runs its interrupters when set.

    A producer blocked in a socket read (a watch or a log follow waiting for the next event) cannot see
    the flag; it registers `on_set(fn)` to have that read ended (`cluster.kube.interrupt`), so an
    unsubscribe or a closed websocket frees its thread and API connection at once, not at the next event.
    """

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: list[Callable[[], None]] = []
        self._callbacks_lock = threading.Lock()

    def on_set(self, callback: Callable[[], None]) -> None:
        with self._callbacks_lock:
            if not self.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def set(self) -> None:
        super().set()
        with self._callbacks_lock:
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            with contextlib.suppress(Exception):  # best effort: each interrupter closes one resource
                callback()


class Hub:
    """Owns the extension's threads, operations and subscriptions."""

    def __init__(self, buffer: int = 2000) -> None:
        self.buffer = buffer
        self.operations: dict[str, Operation] = {}
        self._ids = itertools.count(1)
        self._stops: set[threading.Event] = set()
        self._tasks: set[asyncio.Task[Any]] = set()
        self.closed = False

    # -- operations -------------------------------------------------------------------------------
    def start(self, kind: str, title: str, fn: OpFunction) -> Operation:
        """Run `fn(emit, cancel)` in a thread; its events are buffered (bounded) and fanned out."""
        loop = asyncio.get_running_loop()
        op = Operation(
            id=f"{kind}-{next(self._ids)}", kind=kind, title=title, events=deque(maxlen=self.buffer)
        )
        self.operations[op.id] = op
        self._stops.add(op.cancel)

        def deliver(event: dict[str, Any] | None) -> None:
            if event is not None:
                if len(op.events) == op.events.maxlen:
                    op.dropped += 1
                op.events.append(event)
            for wake in op.waiters:  # never waits: each follower reads from its own cursor
                wake.set()

        def emit(event: dict[str, Any]) -> None:
            if not self.closed:
                loop.call_soon_threadsafe(deliver, event)

        def finish(result: Any, error: dict[str, Any] | None) -> None:
            op.done, op.result, op.error = True, result, error
            deliver({"type": "done", "result": result, "error": error})
            deliver(None)
            self._stops.discard(op.cancel)

        def run() -> None:
            try:
                result = fn(emit, op.cancel)
            except BaseException as exc:  # reported to subscribers as {message, reason, field}
                if not self.closed:
                    loop.call_soon_threadsafe(finish, None, body_for(exc))
                return
            if not self.closed:
                loop.call_soon_threadsafe(finish, result, None)

        threading.Thread(target=run, name=f"ranktable-{op.id}", daemon=True).start()
        return op

    def get(self, op_id: str) -> Operation:
        try:
            return self.operations[op_id]
        except KeyError:
            raise NotFoundError(
                "no such operation (finished operations are kept until restart)", where=op_id
            ) from None

    async def follow(self, op_id: str) -> AsyncIterator[dict[str, Any]]:
        """Replay an operation's buffered events, then follow it live until it is done.

        A `{"type": "dropped", "count": N}` event stands for N events the buffer no longer held when this
        follower came to them (it started late, or read slower than the operation produced)."""
        op = self.get(op_id)
        wake = asyncio.Event()
        op.waiters.add(wake)
        cursor = 0
        try:
            while True:
                wake.clear()
                done = op.done
                lost, events = op.after(cursor)
                cursor = op.last
                if lost:
                    yield {"type": "dropped", "count": lost}
                for event in events:
                    yield event
                if done:
                    return
                await wake.wait()
        finally:
            op.waiters.discard(wake)

    # -- thread bridges ------------------------------------------------------------------------------
    async def iterate(
        self,
        make: Callable[[StopEvent], Iterator[Any]],
        *,
        batch_seconds: float = 0.0,
        max_batch: int = 5000,
        lists: bool = False,
        weight: Callable[[Any], int] = lambda _: 1,
    ) -> AsyncIterator[list[Any]]:
        """Drive a blocking iterator in its own thread; yield what it produced, in batches.

        ``lists``: the iterator yields lists of items (e.g. a round of every pod's new log lines), handed
        to the event loop whole: one wake-up per list, not per item (per line it cost ~100,000 a second).
        ``weight``: what an item counts towards ``max_batch`` (a pod's group of log lines: its lines).

        At most ``HANDOVER_SLOTS`` yields wait for the event loop: past that the thread waits too, so a
        subscriber slower than its producer holds the producer back (a log stream then stops reading its
        sockets) instead of queueing without bound. A batch is at most ``max_batch`` items; while a
        backlog fills them, they go without the ``batch_seconds`` wait (else the wait would cap the rate
        at max_batch / batch_seconds: 50,000 log lines a second).

        Stopping early (the subscriber went away) sets the iterator's stop event; producers check it
        between items and register interrupters for blocking reads (`StopEvent.on_set`), so the thread
        ends at once.
        """
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        stop = StopEvent()
        self._stops.add(stop)

        slots = threading.Semaphore(HANDOVER_SLOTS)

        def pump() -> None:
            _pump(
                make,
                stop,
                slots,
                lambda entry: loop.call_soon_threadsafe(queue.put_nowait, entry),
                lists,
            )

        threading.Thread(target=pump, name="ranktable-stream", daemon=True).start()
        full = True  # the first batch goes at once (a Job view's first lines), as does a backlog's
        try:
            while True:
                kind, value = await queue.get()
                if kind == "end":
                    return
                if kind == "error":
                    raise value
                slots.release()
                batch = list(value) if kind == "items" else [value]
                size = sum(map(weight, batch))
                if batch_seconds and not full:
                    await asyncio.sleep(batch_seconds)
                ended: tuple[str, Any] | None = None
                while size < max_batch and not queue.empty():
                    kind, value = queue.get_nowait()
                    if kind in ("items", "item"):
                        slots.release()
                    if kind == "items":
                        batch.extend(value)
                        size += sum(map(weight, value))
                    elif kind == "item":
                        batch.append(value)
                        size += weight(value)
                    else:
                        ended = (kind, value)
                        break
                full = size >= max_batch
                yield batch
                if ended is not None:
                    if ended[0] == "error":
                        raise ended[1]
                    return
        finally:
            stop.set()
            self._stops.discard(stop)

    def track(self, task: asyncio.Task[Any]) -> None:
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        """Stop every producer thread and subscription task (server shutdown)."""
        self.closed = True
        for stop in list(self._stops):
            stop.set()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)


def _pump(
    make: Callable[[StopEvent], Iterator[Any]],
    stop: StopEvent,
    slots: threading.Semaphore,
    hand: Callable[[tuple[str, Any]], Any],
    lists: bool,
) -> None:
    """`Hub.iterate`'s producer thread: hand each item over (once a slot is free), then `end` or the error."""
    try:
        kind = "items" if lists else "item"
        for item in make(stop):
            if not slots.acquire(blocking=False):
                at = time.monotonic()
                while not slots.acquire(timeout=0.5):
                    if stop.is_set():
                        break
                probe.count("server.hub_slots_wait_s", time.monotonic() - at)
            if stop.is_set():
                break
            hand((kind, item))
        hand(("end", None))
    except BaseException as exc:
        if not stop.is_set():
            with contextlib.suppress(RuntimeError):  # loop closed during shutdown
                hand(("error", exc))
