"""A run (one job uid) as its own record: stop it, resubmit it, from the cluster or from its record.

A stop deletes the job and its pods, so what the run was (its final phase, when it ended, the spec it ran)
is written to the run's archive first: the Job view, the picker and `job logs --runs` then say "Stopped"
rather than the last phase seen, and a stopped run can be resubmitted from its own view.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ranktable.compose.manifests import compose, configmap_name
from ranktable.compose.spec import JobSpec
from ranktable.errors import InputError, NotFoundError, RanktableError
from ranktable.limits import KEEP_LOGS_S
from ranktable.usecases.observe import ENDED_PHASES

if TYPE_CHECKING:
    from ranktable.cluster.client import ClusterClient

STOPPED = "Stopped"  # the final phase of a run stopped before it ended


def kept_logs(client: ClusterClient, name: str, state_dir: str | None, keep_logs_s: float) -> str | None:
    """The run's logs into its archive before its pods go (at most `keep_logs_s` s; 0: skipped)."""
    if keep_logs_s <= 0:
        return None
    from ranktable.usecases.observe import keep_run_logs

    return keep_run_logs(client, name, state_dir=state_dir, timeout=keep_logs_s)


def stop_job(
    client: ClusterClient, name: str, *, state_dir: str | None = None, keep_logs_s: float = KEEP_LOGS_S
) -> tuple[list[str], str | None]:
    """(what was deleted, what was kept of the logs): the pods' logs go with the job, so they are
    archived first; the run's final phase, end and spec are recorded after the delete."""
    try:
        job: dict[str, Any] | None = client.get_job(name)
    except NotFoundError:
        job = None
    spec = _cluster_spec(client, name, job) if job is not None else None
    kept = kept_logs(client, name, state_dir, keep_logs_s)
    deleted = client.stop(name)
    if job is not None:
        record_stopped(client.namespace, job, spec, state_dir)
    return deleted, kept


def record_phase(client: ClusterClient, name: str, uid: str | None, state_dir: str | Path | None) -> None:
    """A followed run's phase as the cluster says it now (and when it ended, once final), so its
    archive's record is true when the reader leaves (`job logs -f` ends with the run)."""
    from ranktable.cluster.job_shape import job_uid, run_ended
    from ranktable.cluster.observing import archive_root
    from ranktable.observe.archive import record_run

    try:
        job = client.get_job(name)
    except RanktableError:
        return  # gone: its record keeps what was last seen
    if not uid or job_uid(job) != uid:
        return
    phase = str(((job.get("status") or {}).get("state") or {}).get("phase") or "Pending")
    fields: dict[str, Any] = {"phase": phase}
    if phase in ENDED_PHASES:
        fields["ended"] = run_ended(job) or time.time()
    record_run(archive_root(state_dir), client.namespace, name, uid, **fields)


def record_stopped(
    namespace: str, job: dict[str, Any], spec: JobSpec | None, state_dir: str | Path | None
) -> None:
    """The stopped run's record: its phase if it had ended, else "Stopped"; when; what it ran."""
    from ranktable.cluster.job_shape import job_uid, run_created, run_ended
    from ranktable.cluster.observing import archive_root
    from ranktable.observe.archive import record_run

    uid = job_uid(job)
    if not uid:
        return
    phase = str(((job.get("status") or {}).get("state") or {}).get("phase") or "Pending")
    ended = (run_ended(job) if phase in ENDED_PHASES else None) or time.time()
    fields: dict[str, Any] = {
        "phase": phase if phase in ENDED_PHASES else STOPPED,
        "ended": ended,
        **run_created(job),
    }
    if spec is not None:
        fields["spec"] = spec.to_dict()
    name = str((job.get("metadata") or {}).get("name") or "")
    record_run(archive_root(state_dir), namespace, name, uid, **fields)


def resubmit_run(
    client: ClusterClient,
    name: str,
    run: str | None = None,
    *,
    state_dir: str | None = None,
    keep_logs_s: float = KEEP_LOGS_S,
    timeout: float = 30.0,
) -> dict[str, Any]:
    """Submit run `run` of job `name` again (None: the current run, else the newest recorded one).

    The spec comes from the cluster while the run is there, else from the run's record (a stopped run).
    A job of that name still on the cluster is stopped first, its logs archived (the caller confirmed)."""
    from ranktable.cluster.job_shape import job_uid

    try:
        current: dict[str, Any] | None = client.get_job(name)
    except NotFoundError:
        current = None
    if current is not None and (run is None or job_uid(current).startswith(run)):
        spec = _cluster_spec(client, name, current)
        if spec is None:
            raise RanktableError(
                f"job {name} was not composed by ranktable: its spec cannot be read back",
                where=name,
                fix="submit it again from its spec file",
            )
    else:
        spec = recorded_spec(client.namespace, name, run, state_dir)
    kept = None
    if current is not None:
        _, kept = stop_job(client, name, state_dir=state_dir, keep_logs_s=keep_logs_s)
        client.wait_deleted(name, timeout)
    return {**client.submit(compose(spec)).to_json(), "logs": kept}


def recorded_spec(namespace: str, name: str, run: str | None, state_dir: str | Path | None) -> JobSpec:
    """The spec a recorded run ran (written when it was stopped)."""
    from ranktable.cluster.observing import archive_root
    from ranktable.observe.archive import find_run, run_meta

    root = archive_root(state_dir)
    info = find_run(root, namespace, name, run)
    data = run_meta(root, info).get("spec")
    if not isinstance(data, dict):
        raise InputError(
            f"run {info.uid[:8]} of job {name} has no recorded spec (it was not stopped by ranktable)",
            where="run",
            fix="submit it again from its spec file",
        )
    return JobSpec.from_dict(data)


def _cluster_spec(client: ClusterClient, name: str, job: dict[str, Any]) -> JobSpec | None:
    """The job's spec read back from its manifests; None when it was not composed by ranktable."""
    from ranktable.compose.manifests import spec_from_manifests

    try:
        return spec_from_manifests([client.get_configmap(configmap_name(name)), job])
    except RanktableError:
        return None
