"""A job's lineage (its runs, each resuming the one before) with its goodput, for every surface.

The runs come from the archive: each run's logs (steps and their times, the checkpoint it saved last) and
its record (the run it resumed, from which checkpoint, by whom, and the fault blamed on it, written by
`usecases.resume`). The current run is read first (the server's live follower, or once in the CLI) and its
own observer gives its facts, so a training run's lineage is up to date without parsing its archive again;
an ended run's archive is parsed once per process. The arithmetic is the core's (`observe.lineage`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ranktable.errors import NotFoundError, RanktableError
from ranktable.observe.lineage import RunFacts, lineage_report

if TYPE_CHECKING:
    from ranktable.observe import RunObserver
    from ranktable.observe.archive import RunInfo
    from ranktable.usecases.observe import Observation


# What an ended run's logs say, by its archive (root, namespace, job, uid, bytes, end): its archive no longer
# changes, so a lineage read again (each Job view opened) does not parse every run's lines again.
_ENDED_LOG_FACTS: dict[tuple[Any, ...], _LogFacts] = {}
MAX_CACHED_RUNS = 256


@dataclass(frozen=True)
class _LogFacts:
    first_step: int | None
    first_step_time: float | None
    step_time_s: float | None
    last: tuple[float, int | None] | None
    checkpoint: int | None


def _log_facts(observer: RunObserver) -> _LogFacts:
    first, first_time, step_s = _first_step(observer)
    last = max(observer.progress.values(), key=lambda p: (p[1] or -1, p[0]), default=None)
    saved = observer.last_checkpoint
    return _LogFacts(first, first_time, step_s, last, None if saved is None else saved.step)


def _run_log_facts(root: Path, info: RunInfo, current: Observation | None) -> _LogFacts:
    """From the run's own observer when it is the one just read (live in the server, read once in the
    CLI), else from its archive: once for an ended run."""
    from ranktable.cluster.observing import archived_observer

    if current is not None:
        with current.lock:  # a live follower feeds it meanwhile
            return _log_facts(current.observer)
    key = (str(root), info.namespace, info.job, info.uid, info.bytes, info.ended)
    cached = _ENDED_LOG_FACTS.get(key) if info.ended is not None else None
    if cached is not None:
        return cached
    facts = _log_facts(archived_observer(root, info))
    if info.ended is not None:
        while len(_ENDED_LOG_FACTS) >= MAX_CACHED_RUNS:
            _ENDED_LOG_FACTS.pop(next(iter(_ENDED_LOG_FACTS)))
        _ENDED_LOG_FACTS[key] = facts
    return facts


def run_facts(root: Path, info: RunInfo, current: Observation | None = None) -> RunFacts:
    """What one archived run's logs and record say (`current`: that run's observation just read)."""
    from ranktable.observe.archive import run_meta

    meta = run_meta(root, info)  # read each time: a resume writes the fault into the ended run's record
    logs = _run_log_facts(root, info, current)
    resumed: dict[str, Any] = meta["resumed"] if isinstance(meta.get("resumed"), dict) else {}
    fault: dict[str, Any] = meta["fault"] if isinstance(meta.get("fault"), dict) else {}
    return RunFacts(
        uid=info.uid,
        created=info.created,
        ended=info.ended,
        phase=info.phase,
        first_step=logs.first_step,
        first_step_time=logs.first_step_time,
        last_step=None if logs.last is None else logs.last[1],
        last_step_time=None if logs.last is None else logs.last[0],
        step_time_s=logs.step_time_s,
        resumed_from=resumed.get("from_run") or None,
        from_step=resumed.get("checkpoint_step"),
        resumed_by=resumed.get("by"),
        fault=dict(fault),
        last_checkpoint=logs.checkpoint,
    )


def _first_step(observer: RunObserver) -> tuple[int | None, float | None, float | None]:
    """(first step, when it was logged, the median step time) over every rank's series."""
    first: tuple[int, float] | None = None
    medians = []
    for series in observer.series.values():
        steps, times = series.columns["step"], series.columns["time"]
        for step, when in zip(steps, times, strict=False):
            if step == step and when == when:  # not NaN
                if first is None or (int(step), when) < first:
                    first = (int(step), float(when))
                break
        if (m := series.median_step_time()) is not None:
            medians.append(m)
    step_s = sorted(medians)[len(medians) // 2] if medians else None
    return (None, None, step_s) if first is None else (first[0], first[1], step_s)


def job_lineage(
    namespace: str,
    name: str,
    *,
    archive_current: Callable[[], Observation | None] | None = None,
    state_dir: str | Path | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """The lineage of job `name`'s newest run: runs, faults with their cost, goodput, one text line.
    ``archive_current`` brings the current run's logs into the archive first (a one-off read in the CLI;
    the server's live follower, so the Job view's live logs go on)."""
    from ranktable.cluster.observing import archive_root
    from ranktable.observe.archive import list_runs

    current = None
    if archive_current is not None:
        try:
            current = archive_current()
        except NotFoundError:
            pass
        except RanktableError:
            pass  # unreachable: the archive still says what it knew
    root = archive_root(state_dir)
    runs = list_runs(root, namespace, name)
    if not runs:
        raise NotFoundError(
            f"no archived runs of job {name} in {namespace}",
            where=name,
            fix="a run joins its lineage once its logs are read (`ranktable job logs`, the Job view)",
        )
    facts = [
        run_facts(root, r, current if current is not None and current.uid == r.uid else None) for r in runs
    ]
    report = lineage_report(facts, time.time() if now is None else now)
    return {"job": name, "namespace": namespace, **report}
