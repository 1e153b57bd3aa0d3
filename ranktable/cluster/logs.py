"""Follow the logs of every pod of a job at once, without losing or repeating lines.

A thread per pod opens ``/log?follow=true&timestamps=true`` and decides what to read next (pod state,
restarts, the previous container); the bodies of all the pods' responses are read by one `BodyLoop`
thread, not a thread each (1,024 readers trading the GIL cost ~60 µs per line). Each line's timestamp
moves a cursor (last timestamp, how many lines carried it); after a dropped connection, a container
restart or a recreated pod the stream reopens with ``sinceTime`` = that timestamp and drops what the
cursor has already seen. The loop's rounds (every pod's new lines) go through a bounded queue, so a slow
reader stalls the HTTP streams (which the server buffers) instead of growing memory.
"""

from __future__ import annotations

import contextlib
import queue
import re
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, NamedTuple

from ranktable import probe
from ranktable.cluster.bodyloop import Body, BodyLoop
from ranktable.cluster.idle_queue import IDLE, QUIET, IdleQueue
from ranktable.cluster.kube import Kube, UnreachableError, interrupt, network_errors
from ranktable.cluster.transport import ApiException
from ranktable.errors import NotFoundError

LOG_READ_TIMEOUT = 120.0
OPENING = 32  # readers waiting for their log stream's first answer at a time (LogStream._start_readers)
GIVE_UP_SECONDS = 120.0
EPOCH = "1970-01-01T00:00:00Z"
CHUNK_BYTES = 16384  # per read of a response read the ordinary way (no socket to hand to the loop)
ENDED = ("Succeeded", "Failed")


class LogLine(NamedTuple):  # a tuple: built ~3x faster than a frozen dataclass, 100,000 a second
    pod: str
    node_rank: int | None  # None: a routed job's plan is still being computed (`LogStream(plan=...)`)
    timestamp: str
    text: str

    def to_json(self) -> dict[str, Any]:
        return self._asdict()

    def __str__(self) -> str:
        return f"[{self.node_rank} {self.pod}] {self.text}"


_HEADS: set[str] = set()  # recent stamps' seconds parts already matched by _STAMP (a line's fast path)
_STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$")
# the kubelet's stamps, `2026-12-02T07:41:11.123456789Z`: fixed width, so they order as strings; matched
# all at once, joined (a regex over each whole line cost a third of the server's time at 100,000 lines/s)
_KUBELET_STAMPS = re.compile(r"(?:[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{9}Z)+")
_new_line = tuple.__new__  # LogLine's own __new__ is a Python function: ~4x slower


def timestamp_key(stamp: str) -> tuple[str, int]:
    """Sortable key of an RFC 3339 timestamp with up to nanosecond precision (UTC seconds, nanoseconds)."""
    if (  # the kubelet's own form, 2026-12-02T07:41:11.123456789Z, its seconds already matched: no regex
        len(stamp) == 30
        and stamp[29] == "Z"
        and stamp[19] == "."
        and stamp[:19] in _HEADS
        and stamp[20:29].isdigit()
        and stamp.isascii()
    ):
        return stamp[:19], int(stamp[20:29])
    match = _STAMP.match(stamp)
    if match is None:
        raise ValueError(f"not an RFC 3339 timestamp: {stamp!r}")
    base, frac, zone = match.groups()
    if zone == "Z":
        if len(_HEADS) > 4096:
            _HEADS.clear()
        _HEADS.add(base)
    else:  # an explicit offset: normalise to UTC
        moment = datetime.fromisoformat(base + zone).astimezone(timezone.utc)
        base = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return base, int((frac or "").ljust(9, "0"))


@dataclass
class Cursor:
    """The newest timestamp delivered for a pod and how many lines carried exactly that timestamp."""

    stamp: str = ""
    key: tuple[str, int] = ("", -1)
    count: int = 0


@dataclass
class StreamStats:
    lines: int = 0
    reconnects: int = 0
    duplicates_dropped: int = 0
    problems: list[str] = field(default_factory=list)


_DONE = object()
# Lines read and not yet taken by the consumer, at most (besides the 64 rounds): rounds are up to ~1 MiB,
# so a consumer that fell behind (a busy GIL) let 64 of them hold ~650,000 lines (~1 GiB of objects);
# past this the loop waits and the lines wait in the pods' sockets, late, not lost.
QUEUED_LINES = 100_000


class Backoff:
    """Waits that double from 0.1 s to 2 s between reconnects, reset after a good read."""

    def __init__(self) -> None:
        self.delay = 0.1

    def next(self) -> float:
        delay, self.delay = self.delay, min(self.delay * 2, 2.0)
        return delay

    def reset(self) -> None:
        self.delay = 0.1


class LogStream:
    """Iterate to get ``LogLine``s from all pods; ends when every pod's log has ended (or on ``close``)."""

    def __init__(
        self,
        kube: Kube,
        namespace: str,
        job: str,
        pods: list[tuple[str, int]],
        follow: bool = True,
        queue_size: int = 64,
        rank_of: Callable[[str], int | None] | None = None,
        previous: bool = False,
        plan: Callable[[], dict[str, int]] | None = None,
    ) -> None:
        self.kube = kube
        self._rank_of = rank_of  # the planned node rank of a pod, once its rank table is complete
        self._ranks: dict[str, int | None] = dict(pods)
        # `plan`: a routed job's pod -> planned node rank, computed in the background once the readers
        # started (the plan reads the rank table and every pod): lines read before it is known carry
        # no node rank rather than a wrong one; the pod index is kept where the plan has no entry
        self._plan = plan
        self._planned: dict[str, int] | None = None
        if plan is not None:
            self._ranks = dict.fromkeys(self._ranks)
        self._resolved: set[str] = set()
        self.namespace = namespace
        self.job = job
        self.pods = pods
        self.follow = follow
        self.stats = StreamStats()
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=queue_size)
        self._queued_lines = 0  # of the rounds in `_queue`, at most QUEUED_LINES (one round always fits)
        self._room = threading.Condition()
        self._stop = threading.Event()
        self._responses: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._starter: threading.Thread | None = None
        self._opening = threading.BoundedSemaphore(OPENING)
        self._waiting: set[str] = set()
        self._restarts_seen: dict[str, tuple[str, int]] = {}
        self._backoffs: dict[str, Backoff] = {pod: Backoff() for pod, _ in pods}
        self._previous = previous  # also read the log of a restarted pod's previous container, once
        self._loop = BodyLoop(self._put, self._stop, name=f"log-read-{job}")  # reads every pod's response
        self._ended = 0  # pods whose reader ended (the last one stops the loop)

    def start(self) -> None:
        """Start the per-pod readers from a background thread, in pod order, and return at once: the first
        pods' lines can be read while the rest start (starting 1,024 readers took ~3 s)."""
        starter = threading.Thread(target=self._start_readers, name=f"log-start-{self.job}", daemon=True)
        self._starter = starter
        starter.start()
        if self._plan is not None:
            threading.Thread(target=self._make_plan, name=f"log-plan-{self.job}", daemon=True).start()

    def _make_plan(self) -> None:
        """The routed job's node ranks, after the readers started; retried while the table is not complete."""
        assert self._plan is not None
        index = dict(self.pods)
        delay = 0.5
        while not self._stop.is_set():
            try:
                planned = self._plan()
            except Exception as exc:  # the API is away: the lines keep flowing, untagged, and we retry
                self.stats.problems.append(f"route plan: {type(exc).__name__}: {exc}")
                planned = {}
            if planned:
                with self._lock:
                    self._planned = planned
                    for pod in self._ranks:
                        self._ranks[pod] = planned.get(pod, index[pod])
                return
            if self._stop.wait(delay):
                return
            delay = min(delay * 2, 5.0)

    @property
    def readers_started(self) -> int:
        """How many per-pod readers have started so far (they start in the background, OPENING at a time)."""
        with self._lock:
            return len(self._threads)

    def node_rank(self, pod: str) -> int | None:
        """The node rank lines of `pod` carry now (None while a routed job's plan is computed)."""
        return self._ranks[pod]

    def _start_readers(self) -> None:
        for pod, _ in self.pods:
            # at most OPENING readers wait for their stream at a time: 1,024 at once queue the first pods'
            # requests behind the others' at the API server
            while not self._opening.acquire(timeout=0.5):
                if self._stop.is_set():
                    return
            if self._stop.is_set():
                return  # closed: the reader stops on the stop flag, not on the count
            thread = threading.Thread(target=self._run, args=(pod,), name=f"log-{pod}", daemon=True)
            with self._lock:
                self._threads.append(thread)
            thread.start()

    def __iter__(self) -> Iterator[LogLine]:
        for batch in self.batches():
            yield from batch

    def batches(self, idle: float | None = None) -> Iterator[list[LogLine]]:
        """Lines as they arrive, one pod's batch at a time; with ``idle``, an empty list after that many
        quiet seconds (so a consumer can re-check silent ranks)."""
        for got in self.rounds(idle):
            if not got:
                yield []
            yield from got

    def rounds(self, idle: float | None = None) -> Iterator[list[list[LogLine]]]:
        """Lines as they arrive, a round of reads at a time: a batch per pod that had new lines (one
        hand-over for ~100 pods' chunks, not one each); with ``idle``, an empty list after that many quiet
        seconds."""
        remaining = len(self.pods)  # every pod's reader (started or skipped) reports its end once
        polls = IdleQueue(self._queue, idle)
        while remaining and not self._stop.is_set():
            batch = polls.get()
            if batch is QUIET:
                continue
            if batch is IDLE:
                yield []
                continue
            if batch is _DONE:
                remaining -= 1
                continue
            with self._room:
                self._queued_lines -= sum(map(len, batch))
                self._room.notify_all()
            yield batch

    def close(self) -> None:
        self._stop.set()
        with self._room:
            self._room.notify_all()  # a round waiting for room gives up at once
        self._loop.close()  # every response the loop reads is closed, their pods' threads wake at once
        with self._lock:
            responses = list(self._responses.values())
        for resp in responses:
            interrupt(resp)  # wakes a reader blocked in recv() (read in its thread); close() would not
            with contextlib.suppress(Exception):
                resp.close()
        if self._starter is not None:
            self._starter.join(timeout=2)
        with self._lock:
            threads = list(self._threads)
        for thread in threads:
            thread.join(timeout=2)

    def __enter__(self) -> LogStream:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- per-pod worker ------------------------------------------------------------------------------
    def _put(self, item: Any) -> None:
        if item is not _DONE:
            lines = sum(map(len, item))
            with self._room:
                while self._queued_lines and self._queued_lines + lines > QUEUED_LINES:
                    if self._stop.is_set():
                        return
                    self._room.wait(0.5)
                self._queued_lines += lines
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=0.5)
                return
            except queue.Full:
                continue

    def _opened(self, pod: str) -> None:
        """The pod's reader no longer waits for its first answer: the next reader may start."""
        with self._lock:
            if pod in self._waiting:
                self._waiting.discard(pod)
                self._opening.release()

    def _run(self, pod: str) -> None:
        with self._lock:
            self._waiting.add(pod)
        try:
            self._follow_pod(pod)
        except Exception as exc:  # a worker must always report its end, or the reader would wait forever
            self.stats.problems.append(f"{pod}: {type(exc).__name__}: {exc}")
        finally:
            self._opened(pod)
            self._put(_DONE)
            with self._lock:
                self._ended += 1
                last = self._ended == len(self.pods)
            if last:
                self._loop.close()

    def _pod_state(self, pod: str) -> dict[str, Any] | None:
        """The pod, or None when it does not exist; raises UnreachableError while the API is down."""
        try:
            return self.kube.call(self.kube.core.read_namespaced_pod, pod, self.namespace, what=f"pod {pod}")
        except NotFoundError:
            return None

    def _job_over(self) -> bool:
        try:
            job = self.kube.call(
                self.kube.custom.get_namespaced_custom_object,
                "batch.volcano.sh",
                "v1alpha1",
                self.namespace,
                "jobs",
                self.job,
                what=f"job {self.job}",
            )
        except NotFoundError:
            return True
        phase = ((job.get("status") or {}).get("state") or {}).get("phase")
        return phase in ("Completed", "Failed", "Aborted", "Terminated")

    def _follow_pod(self, pod: str) -> None:
        cursor = Cursor()
        unreachable_since: float | None = None
        retried: tuple[type[BaseException], ...] = (UnreachableError, *network_errors())
        while not self._stop.is_set():
            try:
                if not self._follow_once(pod, cursor):
                    return
                unreachable_since = None
            except retried:
                now = time.monotonic()
                unreachable_since = unreachable_since or now
                if not self.follow or now - unreachable_since > GIVE_UP_SECONDS:
                    raise
                self.stats.reconnects += 1
            finally:
                self._opened(pod)  # answered (or not started yet, or unreachable): let the next reader start
            self._stop.wait(self._backoffs[pod].next())

    def _follow_once(self, pod: str, cursor: Cursor) -> bool:
        """Read what the pod has now (following it while it runs); False when its log has ended for good."""
        state = self._pod_state(pod)
        if state is None:  # not created yet, or deleted for a job restart
            return self.follow and not self._job_over()
        statuses = (state.get("status") or {}).get("containerStatuses") or []
        started = any({"running", "terminated"} & set(c.get("state") or {}) for c in statuses)
        restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
        phase = (state.get("status") or {}).get("phase")
        uid = str((state.get("metadata") or {}).get("uid"))
        # not held while the log is followed (the read below blocks for the pod's life): 1,024 readers each
        # held their whole pod, Volcano's 33 KB host list env included (#28)
        del state
        if self._previous and restarts and pod not in self._restarts_seen and not cursor.stamp:
            self._read_quietly(pod, self._ranks[pod], cursor, previous=True)  # e.g. a crash-looping pod
        if not started and phase not in ENDED:
            if self._previous and restarts:
                self._restarts_seen[pod] = (uid, restarts)
            return self.follow
        if self._rank_of is not None and pod not in self._resolved:
            planned = self._rank_of(pod)
            if planned is not None:
                self._ranks[pod] = planned
                self._resolved.add(pod)
        rank = self._ranks[pod]
        seen = self._restarts_seen.get(pod)
        if seen is not None and seen[0] == uid and restarts > seen[1] and cursor.stamp:
            self._read_quietly(pod, rank, cursor, previous=True)  # the tail of the container that died
        self._restarts_seen[pod] = (uid, restarts)
        try:
            if self._read(pod, rank, cursor, follow=self.follow, previous=False):
                self._backoffs[pod].reset()  # progress: reconnect at once; an empty read backs off
        except ApiException as exc:
            if exc.status not in (400, 404):
                raise
        if not self.follow or self._stop.is_set():
            return False
        after = self._pod_state(pod)
        if after is not None and (after.get("status") or {}).get("phase") in ENDED:
            self._read_quietly(pod, rank, cursor, previous=False)  # anything written after a drop
            return False
        again = not (after is None and self._job_over())
        self.stats.reconnects += again
        return again

    def _read_quietly(self, pod: str, rank: int | None, cursor: Cursor, *, previous: bool) -> None:
        try:
            self._read(pod, rank, cursor, follow=False, previous=previous)
        except ApiException as exc:
            if exc.status not in (400, 404):
                raise

    def _read(self, pod: str, rank: int | None, cursor: Cursor, *, follow: bool, previous: bool) -> int:
        """Stream one log request into the queue; returns how many new lines it delivered."""
        query: list[tuple[str, Any]] = [("timestamps", "true")]
        if follow:
            query.append(("follow", "true"))
        if previous:
            query.append(("previous", "true"))
        if cursor.stamp:
            query.append(("sinceTime", cursor.stamp))
        resp = self.kube.get_raw(
            f"/api/v1/namespaces/{self.namespace}/pods/{pod}/log",
            query,
            (self.kube.timeout[0], LOG_READ_TIMEOUT),
        )
        self._opened(pod)
        reading = _Reading(self, pod, rank, cursor)
        try:
            if self._stop.is_set():  # closed while this stream was opening: close() did not see it
                return 0
            body = Body(resp, reading.take, LOG_READ_TIMEOUT)
            if body.sock is None:  # not a plain urllib3 response: read in this thread
                self._read_here(pod, resp, reading)
                return reading.delivered
            self._loop.add(body)  # the loop reads it with every other pod's; this thread only waits
            body.done.wait()
            if body.error is not None:
                raise body.error
            return reading.delivered
        finally:
            resp.release_conn()

    def _read_here(self, pod: str, resp: Any, reading: _Reading) -> None:
        with self._lock:
            self._responses[pod] = resp
        try:
            if self._stop.is_set():
                return
            for piece in resp.stream(CHUNK_BYTES, decode_content=False):
                got = reading.take(piece)
                if got:
                    self._put([got])
        finally:
            with self._lock:
                self._responses.pop(pod, None)


class _Reading:
    """The lines of one log response: a line cut between reads waits for its end (a dropped connection's
    cut line is never delivered: the resume reads it whole), duplicates of the resume window are dropped,
    the pod's cursor moves. Fed by the body loop, a chunk at a time."""

    def __init__(self, stream: LogStream, pod: str, rank: int | None, cursor: Cursor) -> None:
        self.stream, self.pod, self.rank, self.cursor = stream, pod, rank, cursor
        self.resumed_key, self.already = cursor.key, cursor.count
        # the resume key as the kubelet writes stamps (fixed width: such stamps order as strings)
        self.resumed = f"{cursor.key[0]}.{cursor.key[1]:09d}Z" if cursor.key[1] >= 0 else ""
        self.seen_at_resume = 0
        self.delivered = 0
        self.pending = b""

    def take(self, data: bytes) -> list[LogLine] | None:
        """The complete lines `data` ends (with what was pending), as new `LogLine`s."""
        buf = self.pending + data if self.pending else data
        cut = buf.rfind(b"\n")
        if cut < 0:
            self.pending = buf
            return None
        self.pending = buf[cut + 1 :]
        if self.rank is None:  # the plan may have come in since the last batch
            self.rank = self.stream.node_rank(self.pod)
        text = buf[:cut].decode("utf-8", errors="replace")
        batch = self._kubelet_lines(text)
        if batch is None:
            batch = self._each_line(text.split("\n"))
        if not batch:
            return None
        self.delivered += len(batch)
        self.stream.stats.lines += len(batch)
        probe.count("server.read", len(batch))
        return batch

    def _kubelet_lines(self, text: str) -> list[LogLine] | None:
        """The fast path, a chunk at a time: every line has the kubelet's fixed-width stamp and all are past
        the resume point; None otherwise (then `_each_line` decides line by line)."""
        if "\r" in text:
            return None
        lines = text.split("\n")
        stamps = [line[:30] for line in lines]
        if (
            "".join([line[30:31] for line in lines]) != " " * len(lines)
            or _KUBELET_STAMPS.fullmatch("".join(stamps)) is None
            or min(stamps) <= self.resumed
        ):
            return None
        last = stamps[-1]
        run = 1  # the lines carrying the last stamp, at the end
        while run < len(stamps) and stamps[-1 - run] == last:
            run += 1
        key = (last[:19], int(last[20:29]))
        cursor = self.cursor
        if run == len(stamps) and cursor.key == key:
            cursor.count += run
        else:
            cursor.key, cursor.stamp, cursor.count = key, last, run
        pod, rank, new = self.pod, self.rank, _new_line
        return [new(LogLine, (pod, rank, s, line[31:])) for s, line in zip(stamps, lines, strict=True)]

    def _each_line(self, lines: list[str]) -> list[LogLine]:
        """The exact path: each line's stamp parsed, the resume window's duplicates counted off."""
        pod, rank, cursor, stats = self.pod, self.rank, self.cursor, self.stream.stats
        batch: list[LogLine] = []
        for line in lines:
            stamp, _, text = line.partition(" ")
            if not stamp:
                continue
            try:
                key = timestamp_key(stamp)
            except ValueError:  # not a kubelet-stamped line: pass it on, the cursor stays put
                batch.append(LogLine(pod, rank, cursor.stamp or EPOCH, line.rstrip("\r")))
                continue
            if key < self.resumed_key:
                stats.duplicates_dropped += 1
                continue
            if key == self.resumed_key:
                self.seen_at_resume += 1
                if self.seen_at_resume <= self.already:
                    stats.duplicates_dropped += 1
                    continue
            if key == cursor.key:
                cursor.count += 1
            else:
                cursor.key, cursor.stamp, cursor.count = key, stamp, 1
            batch.append(LogLine(pod, rank, stamp, text.rstrip("\r")))
        return batch
