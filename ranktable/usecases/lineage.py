"""A job's lineage (its runs, each resuming the one before) with its goodput, for every surface.

The runs come from the archive: each run's logs (steps and their times, the checkpoint it saved last) and
its record (the run it resumed, from which checkpoint, by whom, and the fault blamed on it, written by
`usecases.resume`). The current run is read (and archived) first when a cluster client is given, so a
training run's lineage is up to date. The arithmetic is the core's (`observe.lineage`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ranktable.errors import NotFoundError, RanktableError
from ranktable.observe.checkpoints import last_checkpoint
from ranktable.observe.lineage import RunFacts, lineage_report

if TYPE_CHECKING:
    from ranktable.observe import RunObserver
    from ranktable.observe.archive import RunInfo


def run_facts(root: Path, info: RunInfo) -> RunFacts:
    """What one archived run's logs and record say."""
    from ranktable.cluster.observing import archived_observer
    from ranktable.observe.archive import read_run, run_meta

    meta = run_meta(root, info)
    observer = archived_observer(root, info)
    first, first_time, step_s = _first_step(observer)
    last = max(observer.progress.values(), key=lambda p: (p[1] or -1, p[0]), default=None)
    saved = last_checkpoint(text for _, _, _, text in read_run(root, info))
    resumed: dict[str, Any] = meta["resumed"] if isinstance(meta.get("resumed"), dict) else {}
    fault: dict[str, Any] = meta["fault"] if isinstance(meta.get("fault"), dict) else {}
    return RunFacts(
        uid=info.uid,
        created=info.created,
        ended=info.ended,
        phase=info.phase,
        first_step=first,
        first_step_time=first_time,
        last_step=None if last is None else last[1],
        last_step_time=None if last is None else last[0],
        step_time_s=step_s,
        resumed_from=resumed.get("from_run") or None,
        from_step=resumed.get("checkpoint_step"),
        resumed_by=resumed.get("by"),
        fault=dict(fault),
        last_checkpoint=None if saved is None else saved.step,
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
    archive_current: Callable[[], object] | None = None,
    state_dir: str | Path | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """The lineage of job `name`'s newest run: runs, faults with their cost, goodput, one text line.
    ``archive_current`` brings the current run's logs into the archive first (a one-off read in the CLI;
    the server's live follower, so the Job view's live logs go on)."""
    from ranktable.cluster.observing import archive_root
    from ranktable.observe.archive import list_runs

    if archive_current is not None:
        try:
            archive_current()
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
    report = lineage_report([run_facts(root, r) for r in runs], time.time() if now is None else now)
    return {"job": name, "namespace": namespace, **report}
