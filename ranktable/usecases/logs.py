"""Log use cases: follow a run's logs (archiving every line), catch up after a reconnect, share job tables.

One flow for every surface: the panel's `logs` channel, `ranktable job logs -f` and the magics open a
`LogSession` here, so a followed run is archived the same way whoever follows it (the run's one stream is
`LiveRuns.logs`, shared with its metrics and diagnosis). `JobTables` is the registry of live job lists (one
`JobTable` per namespace, shared by every `jobs` subscriber); the Job view and the observability polls read
a job and its pods from it instead of the API.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ranktable.errors import InputError, NotFoundError, RanktableError
from ranktable.limits import brief

if TYPE_CHECKING:
    from ranktable.cluster.client import ClusterClient
    from ranktable.cluster.jobtable import JobTable
    from ranktable.cluster.runlog import RunLogs

RUN_CHECK_SECONDS = 1.0  # how often a follow checks that its run is still the job's current one
MESSAGE_LINES = 5000  # a logs message's lines, about: a round of ~13,000 in one made the page's tasks long
LOG = logging.getLogger("ranktable.logs")


class Stop(Protocol):
    """A follower's stop flag (a `threading.Event` that runs interrupters when set, as the hub's)."""

    def set(self) -> None: ...
    def is_set(self) -> bool: ...
    def wait(self, timeout: float | None = None) -> bool: ...
    def on_set(self, callback: Any) -> None: ...


class StopFlag(threading.Event):
    """A `Stop` for a caller without a hub (the CLI): set runs the registered interrupters."""

    def __init__(self) -> None:
        super().__init__()
        self._callbacks: list[Any] = []

    def on_set(self, callback: Any) -> None:
        if self.is_set():
            callback()
        else:
            self._callbacks.append(callback)

    def set(self) -> None:
        super().set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()


# -- job tables -------------------------------------------------------------------------------------------
class JobTables:
    """The live `JobTable` of each namespace, shared by every subscriber of its job list."""

    def __init__(self, settle: float) -> None:
        self.settle = settle
        self._tables: dict[str, JobTable] = {}
        self._lock = threading.Lock()

    def table(self, namespace: str) -> JobTable | None:
        with self._lock:
            return self._tables.get(namespace)

    def watched(self, namespace: str, name: str) -> Any:
        """(job, pods) of `name` from the namespace's live table, or None when no job list is open or it
        does not hold the job."""
        table = self.table(namespace)
        return table.job_and_pods(name) if table is not None else None

    def describe(self, namespace: str, name: str) -> tuple[str | None, dict[str, Any]] | None:
        """(version, description) from the live table, or None when it cannot answer."""
        table = self.table(namespace)
        return table.describe(name) if table is not None else None

    def follow(
        self, client: ClusterClient, namespace: str, stop: threading.Event
    ) -> Iterator[list[dict[str, Any]]]:
        """The namespace's job rows whenever one changed, until `stop`."""
        table = self._join(client, namespace)
        try:
            yield from table.follow(stop)
        finally:
            self._leave(namespace, table)

    def _join(self, client: ClusterClient, namespace: str) -> JobTable:
        """The namespace's shared table (started on first use; a failed one is replaced)."""
        from ranktable.cluster.jobtable import JobTable

        with self._lock:
            table = self._tables.get(namespace)
            if table is None or table.error is not None or table.stop.is_set():
                table = JobTable(client, settle=self.settle)
                table.start()
                self._tables[namespace] = table
            table.users += 1
            return table

    def _leave(self, namespace: str, table: JobTable) -> None:
        with self._lock:
            table.users -= 1
            if table.users > 0:
                return
            if self._tables.get(namespace) is table:
                del self._tables[namespace]
        table.close()


# -- following a run's logs -------------------------------------------------------------------------------
def since_keys(raw: Any) -> dict[str, tuple[str, int]]:
    """`{pod: timestamp}` a reconnecting reader already shows, as comparable keys (catch-up)."""
    from ranktable.cluster.logs import timestamp_key

    if not raw:
        return {}
    if not isinstance(raw, dict):
        raise InputError("must be an object {pod: timestamp}", where="since")
    since = {}
    for pod, ts in raw.items():
        try:  # a bad one is the client's error naming it, not an "internal" one (#26.10)
            since[str(pod)] = timestamp_key(ts if isinstance(ts, str) else repr(ts))
        except ValueError:
            raise InputError(
                f"{brief(ts)} is not an RFC 3339 timestamp",
                where=f"since.{str(pod)[:60]}",
                fix="send the timestamp of the last line shown for that pod",
            ) from None
    return since


def archive_logs(state_dir: str | Path | None) -> RunLogs:
    """The process' shared run streams, archiving under `state_dir` (None: RANKTABLE_HOME)."""
    from ranktable.cluster.observing import archive_root
    from ranktable.cluster.runlog import RunLogs

    return RunLogs(archive_root(state_dir))


class LogSession:
    """One reader of a run's logs: rounds of per-pod line batches (archived first when followed)."""

    def __init__(self, client: ClusterClient, name: str, uid: str | None, stream: Any, opened: float) -> None:
        self.client, self.name, self.uid, self.stream = client, name, uid, stream
        self.opened = opened
        self.job_read = opened
        self.run_uid: str | None = uid  # set by open_logs to the run it read
        self.started = time.monotonic()

    def rounds(self, stop: Stop, log: logging.Logger = LOG) -> Iterator[list[list[Any]]]:
        """Every round of new lines until the logs end or `stop`; with a `uid`, ends once the job is no
        longer that run (a resubmit reuses the pod names)."""
        stream = self.stream

        def close_stream() -> None:  # joins the per-pod readers: off the caller's thread
            threading.Thread(target=stream.close, name="ranktable-log-close", daemon=True).start()

        stop.on_set(close_stream)
        if self.uid:
            watch = (self.client, self.name, self.uid, stop)
            threading.Thread(
                target=_end_with_run, args=watch, name="ranktable-run-watch", daemon=True
            ).start()
        first = True
        try:
            for got in stream.rounds():
                if first:
                    first = False
                    log.info(
                        "ranktable: logs of %s: job read %.3f s, readers starting %.3f s, first lines "
                        "%.3f s after the subscribe (%d readers started, %d pods)",
                        self.name,
                        self.job_read - self.opened,
                        self.started - self.opened,
                        time.monotonic() - self.opened,
                        stream.readers_started,
                        len(stream.pods),
                    )
                yield got
        finally:
            stop.set()
            stats = stream.stats
            log.info(
                "ranktable: log stream of %s ended: %d lines, %d reconnects, %d duplicates dropped, "
                "%d problems %s",
                self.name,
                stats.lines,
                stats.reconnects,
                stats.duplicates_dropped,
                len(stats.problems),
                stats.problems[:3],
            )

    @property
    def problems(self) -> list[str]:
        return list(self.stream.stats.problems)


def open_logs(
    client: ClusterClient,
    name: str,
    *,
    runs: RunLogs,
    follow: bool = True,
    uid: str | None = None,
    watched: dict[str, Any] | None = None,
) -> LogSession | None:
    """A reader of the job's logs: followed, through the run's one archiving stream (`runs`); else read
    once. ``watched``: the job as a live watch holds it (no API read). None when ``uid`` names a run that
    is no longer the job's (stopped or resubmitted)."""
    from ranktable.cluster.job_shape import job_uid

    if uid is not None and not isinstance(uid, str):
        raise InputError("must be the run's uid (a string)", where="uid")
    opened = time.monotonic()
    if watched is not None and (not uid or job_uid(watched) == uid):
        job = watched  # under load the API read took ~0.9 s of the Job view's first 1.1 s
    else:
        try:
            job = client.get_job(name)
        except NotFoundError:
            if uid:
                return None
            raise
    if uid and job_uid(job) != uid:
        return None
    job_read = time.monotonic()
    if follow:
        # never waited for: a reader that stops reading (a hung tab) is skipped and later catches up from
        # the archive, so it cannot freeze the stream for the job's other viewers (#26.1)
        stream: Any = runs.subscribe(client, name, job, catch_up=True)
    else:
        stream = client.logs(name, False, job=job, plan_later=True)
    session = LogSession(client, name, uid, stream, opened)
    session.job_read = job_read
    session.run_uid = job_uid(job)  # the run read, whether or not the caller named it
    return session


class LogLines:
    """A terminal's view of a job's logs (`ranktable job logs [-f]`), lines in order: a followed run is
    archived as the panel's is (`job logs NAME --runs` lists it). `problems`: what went wrong reading."""

    def __init__(
        self,
        client: ClusterClient,
        name: str,
        *,
        follow: bool,
        rank: int | None = None,
        state_dir: str | Path | None = None,
    ) -> None:
        self.client, self.name, self.follow, self.rank = client, name, follow, rank
        self.state_dir = state_dir
        self.problems: list[str] = []
        self.stop = StopFlag()
        self._lines = self._followed() if follow else self._read_once()

    def __iter__(self) -> Iterator[Any]:
        return self._lines

    def _followed(self) -> Iterator[Any]:
        runs = archive_logs(self.state_dir)
        try:
            session = open_logs(self.client, self.name, runs=runs, follow=True)
            if session is None:  # no uid was asked for: only a vanished job, which get_job reports
                return
            _check_rank(session.stream.pods, self.rank)
            try:
                for got in session.rounds(self.stop):
                    for batch in got:
                        for line in batch:
                            if self.rank is None or line.node_rank == self.rank:
                                yield line
            finally:
                self.problems = session.problems
        finally:
            runs.close()  # the archive gets every line read before the reader leaves
        from ranktable.usecases.runs import record_phase

        record_phase(self.client, self.name, session.run_uid, self.state_dir)

    def _read_once(self) -> Iterator[Any]:
        stream = self.client.logs(self.name, follow=False, rank=self.rank)
        try:
            yield from stream
        finally:
            stream.close()
            self.problems = list(stream.stats.problems)

    def close(self) -> None:
        self.stop.set()
        self._lines.close()  # type: ignore[attr-defined]


def _check_rank(pods: list[tuple[str, int]], rank: int | None) -> None:
    if rank is not None and not 0 <= rank < len(pods):  # node ranks are 0..pods-1, planned or not
        raise InputError(f"no pod has node rank {rank} (0..{len(pods) - 1})", where="--rank")


def pod_group(lines: list[Any]) -> dict[str, Any]:
    """One pod's lines as the `logs` channel sends them: `{pod, rank, n, ts, text}`, the stamps and the
    texts each joined by newlines (no line holds one). The JSON of an object per line was a third of the
    server's time at 100,000 lines/s; a group builds and encodes ~3x faster (1.5 -> 0.5 µs a line)."""
    first = lines[0]
    return {
        "pod": first.pod,
        "rank": first.node_rank,
        "n": len(lines),
        "ts": "\n".join([line.timestamp for line in lines]),
        "text": "\n".join([line.text for line in lines]),
    }


def round_messages(got: list[list[Any]], since: dict[str, tuple[str, int]]) -> Iterator[list[dict[str, Any]]]:
    """A read round's per-pod batches as the `logs` channel's groups, in order, cut into messages of about
    MESSAGE_LINES lines (a big round in one message is one long task for the page); a pod's lines before
    its `since` key (shown before a reconnect) are left out."""
    from ranktable.cluster.logs import timestamp_key

    out: list[dict[str, Any]] = []
    size = 0
    for lines in got:  # one pod's new lines each
        if lines and lines[0].pod in since:
            cut = since[lines[0].pod]
            lines = [line for line in lines if timestamp_key(line.timestamp) >= cut]
        if lines:
            out.append(pod_group(lines))
            size += len(lines)
            if size >= MESSAGE_LINES:
                yield out
                out, size = [], 0
    if out:
        yield out


def group_size(group: dict[str, Any]) -> int:
    """A group's weight in a batch cap: its lines."""
    return int(group["n"])


def _is_run(client: ClusterClient, name: str, uid: str) -> bool:
    """Whether the job called `name` is still the run `uid` (not stopped, not resubmitted)."""
    from ranktable.cluster.job_shape import job_uid

    try:
        job = client.get_job(name)
    except NotFoundError:
        return False
    return job_uid(job) == uid


def _end_with_run(client: ClusterClient, name: str, uid: str, stop: Stop) -> None:
    while not stop.wait(RUN_CHECK_SECONDS):
        try:
            current = _is_run(client, name, uid)
        except RanktableError:
            continue  # the cluster is unreachable: the stream itself reports that
        if not current:
            stop.set()
            return
