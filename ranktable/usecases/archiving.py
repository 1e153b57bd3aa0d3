"""The server archives every run it can see, followed or not (so a run deleted with kubectl is diagnosable).

Only runs someone followed (the Job view, `job logs -f`) or stopped through the product used to reach the
archive; a run nobody watched and then deleted with kubectl left nothing. `RunArchiver` lists the jobs of
the server's namespaces every ``every`` seconds and keeps each visible run's one log stream going
(`RunLogs.keep`: the stream the Job view and the metrics follower share, so a run is read once whoever
reads it), at most ``max_streams`` at a time. A stream reads restarted pods' previous containers too; it
ends with the run's logs, and the run's record then gets its phase. A run that ended is read to its end
once. A job being stopped through the product is left to the stop, which archives the rest itself.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ranktable.errors import RanktableError
from ranktable.usecases.polling import poll_in_background

if TYPE_CHECKING:
    from ranktable.cluster.client import ClusterClient
    from ranktable.cluster.results import JobSummary
    from ranktable.cluster.runlog import Keeper, RunLogs

LOG = logging.getLogger("ranktable.archiving")
ENDED_PHASES = ("Completed", "Failed", "Aborted", "Terminated")
MAX_DONE = 4096  # ended runs remembered as archived to their end (not read again)

Key = tuple[str, str, str]  # (namespace, job, uid)


class RunArchiver:
    """Keeps the log stream of every run in `namespaces` going (bounded), so each is archived."""

    def __init__(
        self,
        client_of: Callable[[str], ClusterClient],
        namespaces: Sequence[str],
        runs: RunLogs,
        *,
        every: float,
        max_streams: int,
        state_dir: str | Path | None = None,
        log: logging.Logger = LOG,
    ) -> None:
        self.client_of, self.namespaces, self.runs = client_of, list(namespaces), runs
        self.every, self.max_streams, self.state_dir, self.log = every, max_streams, state_dir, log
        self.kept: dict[Key, tuple[Keeper, ClusterClient]] = {}
        self.done: dict[Key, None] = {}  # ended runs read to their end
        self.skipped = 0  # runs left out at the last sweep: more than max_streams
        self.sweeps = 0
        self._told: set[str] = set()  # problems logged once
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()  # one sweep at a time (the loop, a test, close)

    def start(self) -> RunArchiver:
        if self.every > 0 and self._thread is None:
            self._thread = poll_in_background(
                "ranktable-archiver",
                self._stop,
                self.every,
                self.sweep,
                self.log,
                "ranktable: archiving sweep failed",
            )
        return self

    def sweep(self) -> None:
        """List the namespaces' jobs; keep a stream for each run with logs; let go of ended streams."""
        with self._lock:
            if self._stop.is_set():
                return
            seen: set[Key] = set()
            skipped = 0
            for namespace in self.namespaces:
                try:
                    client = self.client_of(namespace)
                    jobs = client.list_jobs()
                except RanktableError as exc:
                    self._tell(f"{namespace}: {exc.message}")
                    continue
                for job in jobs:
                    key = (namespace, job.name, job.uid)
                    if not job.uid or not _has_logs(job):
                        continue
                    seen.add(key)
                    if key in self.kept or key in self.done:
                        continue
                    if len(self.kept) >= self.max_streams:
                        skipped += 1
                        continue
                    self._keep(client, key, job)
            self._let_go(seen)
            if skipped and not self.skipped:
                self.log.warning(
                    "ranktable: archiving %d of %d runs (c.Ranktable.archive_max_streams); %d not archived "
                    "unless followed",
                    len(self.kept),
                    len(self.kept) + skipped,
                    skipped,
                )
            self.skipped = skipped
            self.sweeps += 1

    def _keep(self, client: ClusterClient, key: Key, summary: JobSummary) -> None:
        from ranktable.cluster.job_shape import job_uid

        try:
            job = client.get_job(summary.name)
            if job_uid(job) != summary.uid:
                return  # resubmitted since the list: the next sweep sees the new run
            keeper = self.runs.keep(client, summary.name, job)
        except (RanktableError, RuntimeError) as exc:
            self._tell(f"{key[0]}/{key[1]}: {exc}")
            return
        if keeper is not None:  # None: being stopped through the product
            self.kept[key] = (keeper, client)
            if summary.phase in ENDED_PHASES:
                self._done(key)  # read to its end by this stream; not again by a later one

    def _let_go(self, seen: set[Key]) -> None:
        """Streams that ended (the run's logs did) or whose job is gone: close, record the run's phase."""
        from ranktable.usecases.runs import record_phase

        for key, (keeper, client) in list(self.kept.items()):
            if keeper.ended.is_set() or key not in seen:
                keeper.close()  # a stream still going writes what it holds and closes the archive
                del self.kept[key]
                record_phase(client, key[1], key[2], self.state_dir)
            else:
                keeper.flush()  # readable on disk (`job logs --run`, a stop from another process)

    def _done(self, key: Key) -> None:
        self.done[key] = None
        while len(self.done) > MAX_DONE:
            self.done.pop(next(iter(self.done)))

    def _tell(self, problem: str) -> None:
        if problem not in self._told:
            self._told.add(problem)
            self.log.info("ranktable: archiving: %s", problem)

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        with self._lock:
            for keeper, _ in self.kept.values():
                keeper.close()
            self.kept.clear()


def _has_logs(job: JobSummary) -> bool:
    """A run whose pods have printed (or may print) something: any pod started."""
    return job.running + job.succeeded + job.failed > 0 or job.phase not in ("Pending", *ENDED_PHASES)


def run_archiver(
    client_of: Callable[[str], Any],
    namespaces: Sequence[str],
    runs: RunLogs,
    *,
    every: float,
    max_streams: int,
    state_dir: str | Path | None = None,
) -> RunArchiver | None:
    """The server's archiver, started; None when ``every`` is 0 (archiving only what is followed)."""
    if every <= 0:
        return None
    return RunArchiver(
        client_of, namespaces, runs, every=every, max_streams=max_streams, state_dir=state_dir
    ).start()
