"""Observability use cases: metrics and diagnosis of a run (live or archived), archived runs and lines.

``observe_run`` reads the job's logs once (archiving them) for the CLI and magics. ``LiveRuns`` keeps a
follower per running job for the server, so the Job view's metrics and diagnosis are fresh without
re-reading every log: a follower starts on first request and stops when the job ends or is not asked
about for ``IDLE_STOP_S``.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ranktable.errors import InputError, NotFoundError, RanktableError
from ranktable.limits import KEEP_LOGS_S
from ranktable.observe import ObserveSettings, RunObserver
from ranktable.observe.archive import RunInfo, find_run, list_runs, read_run
from ranktable.observe.catalogue import catalogue

if TYPE_CHECKING:
    from ranktable.cluster.client import ClusterClient
    from ranktable.cluster.observing import RunFollower
    from ranktable.cluster.runlog import RunLogs
    from ranktable.hccl.model import RankTable

IDLE_STOP_S = 300.0
FIRST_READ_WAIT_S = 3.0  # a new follower's first answer waits this long for the backlog
ENDED_PHASES = ("Completed", "Failed", "Aborted", "Terminated")
MAX_ENDED = 16
MAX_LINES = 100_000  # per archived-lines request


class Observation:
    """A run's observer plus what the cluster says about it (phase, pending reason)."""

    def __init__(
        self,
        name: str,
        uid: str,
        phase: str,
        observer: RunObserver,
        source: str,
        pending: dict[str, Any] | None,
        lock: Any = None,
    ) -> None:
        self.name, self.uid, self.phase, self.observer = name, uid, phase, observer
        self.source, self.pending = source, pending
        self.lock = lock or threading.Lock()  # a live follower's: its thread feeds the observer meanwhile

    def metrics(self) -> dict[str, Any]:
        with self.lock:
            data = self.observer.metrics_json()
        return {"job": self.name, "run": self.uid, "source": self.source, **data}

    def diagnosis(self) -> dict[str, Any]:
        with self.lock:
            result = self.observer.diagnose(self.phase, pending=self.pending)
        return {"job": self.name, "run": self.uid, "source": self.source, **result}


def _run_logs(state_dir: str | Path | None) -> RunLogs:
    from ranktable.cluster.observing import archive_root
    from ranktable.cluster.runlog import RunLogs

    return RunLogs(archive_root(state_dir))


def _phase(job: dict[str, Any]) -> str:
    return str(((job.get("status") or {}).get("state") or {}).get("phase") or "Pending")


def _finish(
    follower: RunFollower,
    client: ClusterClient,
    job: dict[str, Any],
    watched_pods: list[dict[str, Any]] | None = None,
) -> Observation:
    """Pod exits and the pending reason on top of what the logs said."""
    from ranktable.cluster.job_shape import run_ended
    from ranktable.cluster.observing import pending_info, pod_exits

    pods = follower.refresh_pods(watched_pods)
    node_ranks = {p.pod: p.node_rank for p in follower.layout.by_rank.values()}
    phase = _phase(job)
    with follower.lock:
        pod_exits(follower.observer, pods, node_ranks)
    follower.set_phase(phase, (run_ended(job) or time.time()) if phase in ENDED_PHASES else None)
    pending = pending_info(client, job, pods)
    return Observation(follower.name, follower.uid, phase, follower.observer, "live", pending, follower.lock)


def observe_run(
    client: ClusterClient,
    name: str,
    *,
    run: str | None = None,
    state_dir: str | Path | None = None,
    settings: ObserveSettings | None = None,
) -> Observation:
    """The current run (logs read once, archived) when ``run`` is it or None; else the archived run."""
    from ranktable.cluster.job_shape import job_uid
    from ranktable.cluster.observing import RunFollower, archive_root, archived_observer

    try:
        job: dict[str, Any] | None = client.get_job(name)
    except NotFoundError:
        job = None
    if job is not None and (run is None or job_uid(job).startswith(run)):
        follower = RunFollower(client, name, state_dir=state_dir, settings=settings, follow=False)
        follower.run()
        try:
            return _finish(follower, client, job)
        finally:
            follower.archive.close()
    root = archive_root(state_dir)
    info = find_run(root, client.namespace, name, run)
    return Observation(
        name, info.uid, info.phase or "Deleted", archived_observer(root, info, settings), "archive", None
    )


def keep_run_logs(
    client: ClusterClient,
    name: str,
    *,
    state_dir: str | Path | None = None,
    timeout: float = KEEP_LOGS_S,
) -> str:
    """Before a stop deletes the pods: read what the current run printed since it was last archived into
    its archive (a run nobody streamed has none yet), at most `timeout` s; one line saying what was kept."""
    from ranktable.cluster.observing import RunFollower

    try:
        follower = RunFollower(client, name, state_dir=state_dir, follow=False, observe=False)
    except NotFoundError:
        return "no logs kept: the job is not on the cluster"
    except RanktableError as exc:
        return f"no logs kept: {exc.message}"
    where = f"`ranktable job logs {name} --run {follower.uid[:8]}`"
    if not follower.archive.writer:  # e.g. the Jupyter server archives the run while it runs
        from ranktable.observe.archive import archived_lines

        follower.archive.close()
        held = archived_lines(follower.archive.dir)
        return f"{held:,} log lines of run {follower.uid[:8]} archived by the process following it ({where})"
    reader = threading.Thread(target=follower.run, name=f"keep-logs-{name}", daemon=True)
    reader.start()
    reader.join(timeout)
    cut = reader.is_alive()
    if cut:
        follower.stop()
    else:
        follower.archive.close()
    if follower.error and not follower.taken:
        return f"no new logs kept ({follower.error}); what was archived before: {where}"
    kept = f"{follower.taken:,} new log lines of run {follower.uid[:8]} archived ({where})"
    return kept + (f"; stopped reading after the {timeout:g} s limit" if cut else "")


def diagnosis_marks(diagnosis: dict[str, Any] | None, planned: RankTable) -> dict[int, str]:
    """A diagnosis as layout marks {planned rank: kind}: the first failing rank, hung ranks, stragglers.

    Entries are found by their NPU (server, device) in the planned table when they carry one, so the mark
    lands on the right NPU whether or not the job trained in the planned order; else by rank id.
    """
    if not diagnosis:
        return {}
    at = {(s.server_id, d.device_id): d.rank_id for s in planned.servers for d in s.devices}
    known = set(at.values())
    entries = [("straggler", e) for e in diagnosis.get("stragglers") or []]
    entries += [("hung", e) for e in diagnosis.get("hung") or []]
    if diagnosis.get("first_failure"):
        entries.append(("first-failure", diagnosis["first_failure"]))
    marks: dict[int, str] = {}
    for kind, entry in entries:  # later kinds win: first failure over hung over straggler
        rank = at.get((entry.get("server"), entry.get("device")))
        if rank is None and entry.get("rank") in known:
            rank = int(entry["rank"])
        if rank is not None:
            marks[rank] = kind
    return marks


def job_pending(client: ClusterClient, name: str) -> dict[str, Any] | None:
    """Why the job waits (gang fit overall and per leaf, queue state and position), or None when placed."""
    from ranktable.cluster.observing import pending_info

    return pending_info(client, client.get_job(name), client.job_pods(name))


def job_runs(namespace: str, name: str, state_dir: str | Path | None = None) -> list[RunInfo]:
    """Archived runs of a job, newest first (no cluster needed)."""
    from ranktable.cluster.observing import archive_root

    return list_runs(archive_root(state_dir), namespace, name)


def archived_lines(
    namespace: str,
    name: str,
    run: str | None,
    *,
    state_dir: str | Path | None = None,
    node_rank: int | None = None,
    errors_only: bool = False,
    limit: int = MAX_LINES,
) -> Iterator[dict[str, Any]]:
    """Lines of an archived run as ``{pod, node_rank, timestamp, text}``, at most ``limit``."""
    from ranktable.cluster.observing import archive_root

    root = archive_root(state_dir)
    info = find_run(root, namespace, name, run)
    errors = catalogue() if errors_only else None
    count = 0
    for pod, rank, stamp, text in read_run(root, info):
        if node_rank is not None and rank != node_rank:
            continue
        if errors is not None and errors.classify(text) is None:
            continue
        yield {"pod": pod, "node_rank": rank, "timestamp": stamp, "text": text}
        count += 1
        if count >= limit:
            return


def compare_runs(
    namespace: str,
    name: str,
    observe: Callable[[str | None], Observation],
    runs: Sequence[str | None] | None = None,
    state_dir: str | Path | None = None,
) -> dict[str, Any]:
    """Two runs of the job side by side (`observe.compare`): ``runs`` (uids or prefixes, A then B; either
    None for its default), else the newest run as B and the one before it as A. ``observe(uid)`` reads one
    run (the CLI and magics read the logs once, the server asks its live followers), so each surface
    compares runs the way it reads one."""
    from ranktable.cluster.observing import archive_root
    from ranktable.observe.compare import compare_summaries, run_summary

    if runs is not None and len(runs) != 2:
        raise InputError(
            f"{len(runs)} run(s) given", where="runs", fix="name two runs: A B (`--runs` lists them)"
        )
    if runs is None or runs[0] is None:  # A defaults to the run before B, B to the newest run
        later = observe(runs[1] if runs is not None else None)  # None: the current or newest archived run
        uids = [r.uid for r in job_runs(namespace, name, state_dir)]
        after = uids.index(later.uid) + 1 if later.uid in uids else 0  # newest first: what follows is older
        earlier = [u for u in uids[after:] if u != later.uid]
        if not earlier:
            raise NotFoundError(
                f"job {name} has only one run ({later.uid}) so far: nothing to compare it with"
                if runs is None
                else f"job {name} has no run before {later.uid}: nothing to compare it with",
                where="runs",
                fix="run the job again (resubmit), then compare",
            )
        pair = [observe(earlier[0]), later]
    else:
        pair = [observe(uid) for uid in runs]  # B None: the current or newest archived run
    if pair[0].uid == pair[1].uid:
        raise InputError(f"both runs are {pair[0].uid}", where="runs", fix="name two different runs")
    records = {r.uid: r for r in list_runs(archive_root(state_dir), namespace, name)}
    summaries = []
    for observation in pair:
        record = records.get(observation.uid)
        summaries.append(
            run_summary(
                observation.metrics(),
                observation.diagnosis(),
                created=record.created if record else None,
                ended=record.ended if record else None,
            )
        )
    return {"job": name, "namespace": namespace, **compare_summaries(summaries[0], summaries[1])}


class LiveRuns:
    """One log follower per running job (server side): answers metrics/diagnosis without re-reading logs."""

    def __init__(self, state_dir: str | Path | None = None, settings: ObserveSettings | None = None) -> None:
        self.state_dir = state_dir
        self.settings = settings or ObserveSettings()
        self._followers: dict[tuple[str, str, str], tuple[RunFollower, float]] = {}
        self._ended: dict[tuple[str, str, str], Observation] = {}  # finished runs, read once
        self._lock = threading.Lock()
        self.logs = _run_logs(state_dir)  # each run's one log stream, shared with the Job view's logs

    def observation(
        self,
        client: ClusterClient,
        name: str,
        run: str | None = None,
        known: tuple[dict[str, Any], list[dict[str, Any]]] | None = None,
    ) -> Observation:
        """``known``: the job and its pods as a live watch holds them (`JobTable.job_and_pods`): a running
        job's poll then reads nothing from the API."""
        from ranktable.cluster.job_shape import job_uid
        from ranktable.cluster.observing import RunFollower

        if known is not None:
            job: dict[str, Any] | None = known[0]
        else:
            try:
                job = client.get_job(name)
            except NotFoundError:
                job = None
        if job is None or (run is not None and not job_uid(job).startswith(run)):
            return observe_run(client, name, run=run, state_dir=self.state_dir, settings=self.settings)
        if _phase(job) in ENDED_PHASES:  # nothing left to follow: read (and archive) once, then remember
            key = (client.namespace, name, job_uid(job))
            with self._lock:
                done = self._ended.get(key)
                entry = self._followers.pop(key, None)
            if entry is not None:
                entry[0].stop()
            if done is None:
                done = observe_run(client, name, state_dir=self.state_dir, settings=self.settings)
                with self._lock:
                    self._ended[key] = done
                    while len(self._ended) > MAX_ENDED:
                        self._ended.pop(next(iter(self._ended)))
            return done
        key = (client.namespace, name, job_uid(job))
        self._reap()
        with self._lock:
            entry = self._followers.get(key)
            if entry is None:
                follower = RunFollower(
                    client,
                    name,
                    state_dir=self.state_dir,
                    settings=self.settings,
                    logs=self.logs,
                    known=known,
                ).start()
            else:
                follower = entry[0]
            self._followers[key] = (follower, time.monotonic())
        if entry is None:  # a new follower: give it a moment to read what the pods printed so far
            follower.caught_up.wait(FIRST_READ_WAIT_S)
        return _finish(follower, client, job, known[1] if known is not None else None)

    def release(self, namespace: str, name: str) -> None:
        """Stop following the job's runs (before a stop archives the rest: one writer per archive)."""
        self._stop_followers(namespace, name)
        self.logs.release(namespace, name)

    @contextlib.contextmanager
    def stopping(self, namespace: str, name: str) -> Iterator[None]:
        """`release`, and the server's archiver starts no stream of the job until the block ends (the
        stop, resubmit or resume in it archives the run's rest itself)."""
        self._stop_followers(namespace, name)
        with self.logs.stopping(namespace, name):
            yield

    def _stop_followers(self, namespace: str, name: str) -> None:
        with self._lock:
            keys = [k for k in self._followers if k[:2] == (namespace, name)]
            followers = [self._followers.pop(k)[0] for k in keys]
        for follower in followers:
            follower.stop()

    def use_settings(self, settings: ObserveSettings) -> None:
        """New settings: forget what was read with the old ones, so every run is read again."""
        with self._lock:
            self.settings = settings
            followers = [f for f, _ in self._followers.values()]
            self._followers.clear()
            self._ended.clear()
        for follower in followers:
            follower.stop()

    def _reap(self) -> None:
        """Stop followers of runs nobody asked about lately, or whose logs ended."""
        now = time.monotonic()
        with self._lock:
            stale = [
                k for k, (f, seen) in self._followers.items() if f.done.is_set() or now - seen > IDLE_STOP_S
            ]
            followers = [self._followers.pop(k)[0] for k in stale]
        for follower in followers:
            follower.stop()

    def close(self) -> None:
        with self._lock:
            followers = [f for f, _ in self._followers.values()]
            self._followers.clear()
        for follower in followers:
            follower.stop()
        self.logs.close()
