"""One log follower per run and process, shared by everyone reading that run's logs.

The Job view's logs channel and the metrics/diagnosis follower (`LiveRuns`) used to follow a running
job's pods each on their own: two reader loops and two kubelet log requests per pod (2,048 streams for a
1,024-pod job). A `RunLog` is the one `LogStream` of a run (a Volcano job uid); every line it reads goes
to the run's archive first (the same files the follower wrote, so lines are never lost and a restarted
server resumes where the archive ends), then to each subscriber. A subscriber that joins late gets what is
archived up to the moment it joined, then every new line: each line once, whenever it subscribed.

A slow subscriber holds the stream back (each has a bounded queue), as a slow reader of a `LogStream`
does, unless it subscribed with ``catch_up``: the metrics/diagnosis follower, slower than the Job view at
1,024 pods, made the view wait (63,298 -> 38,145 lines/s with the overview shown). Such a subscriber is
skipped while its queue is full; once it has read its queue it reads, from the archive, every line
archived since it fell behind (`RunArchive.marks`), then goes on live. The run's stream stops when its
last subscriber leaves or its pods' logs end.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ranktable import probe
from ranktable.cluster.idle_queue import IDLE, QUIET, IdleQueue
from ranktable.cluster.logs import LogLine, LogStream, StreamStats
from ranktable.compose.manifests import metric_patterns_of
from ranktable.observe import RankLayout
from ranktable.observe.archive import RunArchive

if TYPE_CHECKING:
    from ranktable.cluster.client import ClusterClient

QUEUE_ROUNDS = 8  # per subscriber: rounds waiting for it, past that the run's stream waits (which has 64)
# A `catch_up` subscriber is skipped past these: rounds at 1,024 pods are many and small (a line or two
# per pod), so 8 rounds were a few milliseconds: a healthy viewer was skipped at every hiccup and re-read
# 1,024 archive files each time, falling further behind (#26.1). The rounds are the run's own lists,
# shared by every subscriber, so a stalled one holds at most these references, not copies.
CATCH_UP_ROUNDS = 1024
CATCH_UP_LINES = 50_000
REPLAY_BATCH = 2000  # lines per replayed batch
WRITE_SECONDS = 0.5  # lines are held this long per pod before the archive gets them (a write per pod)
WRITE_LINES = 50_000  # or until this many are held
RELEASE_WAIT_S = 30.0  # a released stream has closed its archive by then (the stop then writes the rest)
_END = object()


class Subscription:
    """One reader of a `RunLog`: the archive up to its join, then live rounds (a list of per-pod batches)."""

    def __init__(self, run: RunLog, cut: list[Any] | None, catch_up: bool = False) -> None:
        self.run = run
        self._cut = cut
        # bounded by `put` (the stream waits) or, for a catch-up subscriber, by `offer` (it is skipped)
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=0 if catch_up else QUEUE_ROUNDS)
        self._queued = [0, 0]  # a catch-up subscriber's queued rounds and lines
        self._queued_lock = threading.Lock()
        self.closed = threading.Event()
        self.catch_up = catch_up  # the run's stream never waits for it: it re-reads what it missed
        self.behind: dict[str, tuple[int, int]] | None = None  # fell behind: the archive's marks then
        self.caught_up = 0  # times it read what it missed from the archive

    def offer(self, got: list[list[LogLine]]) -> None:
        """From the run's thread, under the run's lock, for a ``catch_up`` subscriber: never waits."""
        if self.behind is not None:
            return
        lines = sum(map(len, got))
        with self._queued_lock:
            rounds, held = self._queued
            if rounds < CATCH_UP_ROUNDS and held + lines <= max(CATCH_UP_LINES, lines):
                self._queued[0], self._queued[1] = rounds + 1, held + lines
                self._queue.put_nowait(got)
                return
        # everything before `got` is queued; it and all after will be in the archive
        self.run.write()
        self.behind = self.run.archive.marks()

    # what the Job view's logs channel reads of a LogStream
    @property
    def stats(self) -> StreamStats:
        return self.run.stream.stats

    @property
    def readers_started(self) -> int:
        return self.run.stream.readers_started

    @property
    def pods(self) -> list[tuple[str, int]]:
        return self.run.stream.pods

    @property
    def archive(self) -> RunArchive:
        return self.run.archive

    @property
    def lock(self) -> threading.Lock:
        """Held while the run's thread writes the archive: hold it to touch the archive too."""
        return self.run.lock

    def put(self, item: Any) -> bool:
        """From the run's thread; False once this subscriber has gone."""
        while not self.closed.is_set():
            try:
                self._queue.put(item, timeout=0.5)
                return True
            except queue.Full:
                continue
        return False

    def _catch_up(self) -> Iterator[list[list[LogLine]]]:
        """What was archived since the subscriber fell behind; live rounds come again after it."""
        with self.run.lock:
            self.run.write()
            marks, self.behind = self.behind, None
            cut = self.run.archive.cut_since(marks or {})
            if cut:  # as `RunLog.subscribe`: no rotation until it is replayed
                self.run.archive.holds += 1
            self._cut = cut or None
            self.caught_up += 1
        yield from self._replay()

    def _replay(self) -> Iterator[list[list[LogLine]]]:
        cut, self._cut = self._cut, None
        if not cut:
            return
        try:
            rank_of = self.run.stream.node_rank
            for pod, index, files in cut:
                rank = rank_of(pod) if pod in self.run.ranks else index
                batch: list[LogLine] = []
                for stamp, text in self.run.archive.read_cut(files):
                    batch.append(LogLine(pod, rank, stamp, text))
                    if len(batch) >= REPLAY_BATCH:
                        yield [batch]
                        batch = []
                    if self.closed.is_set():
                        return
                if batch:
                    yield [batch]
        finally:
            self.run.replayed()

    def rounds(self, idle: float | None = None) -> Iterator[list[list[LogLine]]]:
        """Rounds of per-pod batches until the run's logs end or `close`; with ``idle``, an empty list
        after that many quiet seconds."""
        yield from self._replay()
        polls = IdleQueue(self._queue, idle)
        while not self.closed.is_set():
            if self.behind is not None and self._queue.empty():
                yield from self._catch_up()
                continue
            item = polls.get()
            if item is QUIET:
                continue
            if item is IDLE:
                yield []
                continue
            if item is _END:
                if self.behind is not None:  # the stream ended while it was behind: the archive's rest
                    yield from self._catch_up()
                return
            if self.catch_up:
                with self._queued_lock:
                    self._queued[0] -= 1
                    self._queued[1] -= sum(map(len, item))
            yield item

    def batches(self, idle: float | None = None) -> Iterator[list[LogLine]]:
        for got in self.rounds(idle):
            if not got:
                yield []
            yield from got

    def close(self) -> None:
        if self.closed.is_set():
            return
        if self._cut is not None:  # never replayed: let the archive rotate again
            self._cut = None
            self.run.replayed()
        self.closed.set()
        self.run.leave(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class Keeper(Subscription):
    """Holds a run's stream open so its archive gets every line, reading nothing itself (the server's
    archiver of runs nobody follows): never waited for, no replay, `ended` once the stream has ended."""

    def __init__(self, run: RunLog) -> None:
        super().__init__(run, None, catch_up=True)
        self.ended = threading.Event()

    def offer(self, got: list[list[LogLine]]) -> None:
        return None

    def put(self, item: Any) -> bool:
        if item is _END:
            self.ended.set()
        return True

    def flush(self) -> None:
        """What the run's stream holds, onto the disk (the archiver's period bounds what a crash loses)."""
        with self.run.lock:
            if not self.run.ending:
                self.run.write()
                self.run.archive.flush()


class RunLog:
    """The one `LogStream` of a run, its archive writer and its subscribers (a thread)."""

    def __init__(
        self, client: ClusterClient, name: str, job: dict[str, Any], uid: str, root: Path, on_end: Any
    ) -> None:
        from ranktable.cluster.job_shape import npus_per_pod, pod_names, run_created

        pods = dict(pod_names(name, job))
        self.key = (client.namespace, name, uid)
        self.ranks = pods
        npus = npus_per_pod(job)
        self.archive = RunArchive(
            root,
            client.namespace,
            name,
            uid or "unknown",
            pods,
            extra={  # the follower puts the real layout here once it has it (`RunFollower._place`)
                "patterns": metric_patterns_of(job.get("metadata") or {}),
                "layout": [
                    p.to_json() for p in RankLayout.uniform(list(pods.items()), npus).by_rank.values()
                ],
                "npus_per_pod": npus,
                **run_created(job),
            },
        )
        self._resume = self.archive.last_stamps()  # what an earlier server (or follower) archived
        # lines held per pod before they are written: the archive keeps 64 pod files open, and a round
        # has ~100 pods' lines: written each round, 1,024 pods meant a file opened per pod and round
        self._pending: dict[str, list[tuple[str, str]]] = {}
        self._pending_lines = 0
        self._write_at = 0.0
        self.lock = threading.Lock()
        self._subs: list[Subscription] = []
        self._on_end = on_end
        self.ending = False
        self.ended = threading.Event()
        # the Job view's first lines first: a routed job's plan is made after the readers started
        self.stream: LogStream = client.logs(name, True, job=job, previous=True, plan_later=True)
        self._thread = threading.Thread(target=self._run, name=f"runlog-{name}", daemon=True)
        self._thread.start()

    def subscribe(self, catch_up: bool = False) -> Subscription:
        """A new reader: what is archived now, then every line read from now on (LookupError: ending).
        ``catch_up``: the stream does not wait for it (it re-reads from the archive what it missed)."""
        with self.lock:
            if self.ending:
                raise LookupError("ending")
            self.write()
            cut = self.archive.cut()
            if cut:
                self.archive.holds += 1
            sub = Subscription(self, cut or None, catch_up)
            self._subs.append(sub)
        return sub

    def keep(self) -> Keeper:
        """A `Keeper` of this run (LookupError: ending)."""
        with self.lock:
            if self.ending:
                raise LookupError("ending")
            keeper = Keeper(self)
            self._subs.append(keeper)
        return keeper

    def replayed(self) -> None:
        with self.lock:
            self.archive.holds = max(0, self.archive.holds - 1)

    def leave(self, sub: Subscription) -> None:
        with self.lock:
            with contextlib.suppress(ValueError):
                self._subs.remove(sub)
            last = not self._subs and not self.ending
            if last:
                self.ending = True  # a new reader now waits for `ended`, then starts a new stream
        if last:
            self.stream.close()  # the run's thread ends with the stream, closing the archive

    def close(self, wait: float = 5.0) -> None:
        """End the stream and every subscription (the job is being stopped: one writer per archive);
        wait at most `wait` s for the run's thread to close the archive."""
        with self.lock:
            self.ending = True
            subs = list(self._subs)
        for sub in subs:
            sub.closed.set()
        self.stream.close()
        self._thread.join(timeout=wait)

    def _run(self) -> None:
        try:
            for got in self.stream.rounds(idle=WRITE_SECONDS):  # [] when quiet: held lines are written
                with self.lock:
                    got = self._new(got)
                    waited = []
                    for sub in self._subs:
                        # catching up reads the archive: only when this process writes it
                        if not sub.catch_up or (not self.archive.writer and not isinstance(sub, Keeper)):
                            waited.append(sub)
                        elif got:  # before `got` is held: falling behind marks the archive without it
                            sub.offer(got)
                    self._hold(got)
                if got:
                    at = time.monotonic()
                    for sub in waited:
                        sub.put(got)
                    probe.count("server.runlog_put_wait_s", time.monotonic() - at)
        finally:
            with self.lock:
                self.ending = True
                subs = list(self._subs)
                self.write()
                self.archive.close()
            self._on_end(self)
            for sub in subs:
                sub.put(_END)
            self.ended.set()

    def _new(self, got: list[list[LogLine]]) -> list[list[LogLine]]:
        """A round without what the archive already had (a resumed run's old lines)."""
        if not self._resume:
            return got
        out = []
        for batch in got:
            pod = batch[0].pod
            since = self._resume.get(pod)
            if since is not None:
                batch = [line for line in batch if line.timestamp > since]
                if not batch:
                    continue
                del self._resume[pod]
            out.append(batch)
        return out

    def _hold(self, got: list[list[LogLine]]) -> None:
        """Archive a round: held per pod for up to WRITE_SECONDS (or WRITE_LINES), then one write per pod."""
        pending = self._pending
        for batch in got:
            pod = batch[0].pod
            held = pending.get(pod)
            if held is None:
                pending[pod] = [(line.timestamp, line.text) for line in batch]
            else:
                held += [(line.timestamp, line.text) for line in batch]
            self._pending_lines += len(batch)
        if self._pending_lines >= WRITE_LINES or time.monotonic() >= self._write_at:
            self.write()

    def write(self) -> None:
        """The held lines into the archive, a write per pod (its file is opened once, not per round)."""
        ranks = self.ranks
        for pod, lines in self._pending.items():
            self.archive.append(pod, ranks.get(pod, 0), lines)
        self._pending = {}
        self._pending_lines = 0
        self._write_at = time.monotonic() + WRITE_SECONDS


class RunLogs:
    """The process' `RunLog`s by (namespace, job, uid): the first reader starts one, the last ends it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._runs: dict[tuple[str, str, str], RunLog] = {}
        self._stopping: dict[tuple[str, str], int] = {}  # jobs being stopped: no keeper starts a stream
        self._lock = threading.Lock()

    def subscribe(
        self, client: ClusterClient, name: str, job: dict[str, Any], catch_up: bool = False
    ) -> Subscription:
        return self._join(client, name, job, lambda run: run.subscribe(catch_up))

    def keep(self, client: ClusterClient, name: str, job: dict[str, Any]) -> Keeper | None:
        """Keep the run's stream (and so its archive) going without reading it; None while the job is
        being stopped (the stop archives the rest itself: one writer per archive)."""
        return self._join(client, name, job, lambda run: run.keep(), unless_stopping=True)

    def _join(
        self, client: ClusterClient, name: str, job: dict[str, Any], join: Any, unless_stopping: bool = False
    ) -> Any:
        from ranktable.cluster.job_shape import job_uid

        key = (client.namespace, name, job_uid(job))
        for _ in range(20):
            with self._lock:
                # checked under the lock that creates streams: a stop that began after the check
                # would otherwise find a new stream (and its archive writer) that it never released
                if unless_stopping and key[:2] in self._stopping:
                    return None
                run = self._runs.get(key)
                if run is None:
                    run = self._runs[key] = RunLog(client, name, job, key[2], self.root, self._forget)
                    return join(run)
            try:
                return join(run)
            except LookupError:  # that stream is ending: wait until its archive is closed, then a new one
                run.ended.wait(5)
                self._forget(run)
        raise RuntimeError(f"the log stream of {name} kept ending")

    @contextlib.contextmanager
    def stopping(self, namespace: str, name: str) -> Iterator[None]:
        """While the job is stopped: its streams ended, no keeper starts another."""
        with self._lock:
            self._stopping[(namespace, name)] = self._stopping.get((namespace, name), 0) + 1
        try:
            self.release(namespace, name)
            yield
        finally:
            with self._lock:
                left = self._stopping.pop((namespace, name)) - 1
                if left:
                    self._stopping[(namespace, name)] = left

    def _forget(self, run: RunLog) -> None:
        with self._lock:
            if self._runs.get(run.key) is run:
                del self._runs[run.key]

    def running(self, namespace: str, name: str) -> list[RunLog]:
        with self._lock:
            return [r for k, r in self._runs.items() if k[:2] == (namespace, name)]

    def release(self, namespace: str, name: str) -> None:
        """End the job's streams and wait until their archives are closed (at most RELEASE_WAIT_S each,
        a loaded machine included): the stop that follows archives the rest as the run's one writer."""
        for run in self.running(namespace, name):
            run.close(wait=RELEASE_WAIT_S)

    def close(self) -> None:
        with self._lock:
            runs = list(self._runs.values())
        for run in runs:
            run.close()
