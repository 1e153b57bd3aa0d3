"""`/ranktable/jobs/{ns}/{name}/metrics|diagnosis|runs...` and `/ranktable/logs`: the observability use
cases as JSON.

A live follower per running job (``LiveRuns``) archives its logs under the state dir while answering, and
the archiver (``RunArchiver``) keeps every other run of the server's namespaces archived; stopped or
deleted jobs are answered from the archive.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ranktable.errors import ContentError, InputError, PermissionDenied
from ranktable.observe import ObserveSettings, compile_user_patterns
from ranktable.observe.export import metrics_csv
from ranktable.server_ext.errors import content_checks
from ranktable.usecases.archiving import run_archiver
from ranktable.usecases.observe import (
    MAX_LINES,
    LiveRuns,
    Observation,
    archived_lines,
    compare_runs,
    job_runs,
)

if TYPE_CHECKING:
    from ranktable.server_ext.services import Services


class ObserveService:
    def __init__(self, services: Services) -> None:
        self.services = services
        config = services.config
        self.state_dir = config.state_dir or None
        self.server_settings = dict(config.observability)
        self.settings = ObserveSettings.from_mapping(self.server_settings, where="c.Ranktable.observability")
        self.user_settings: dict[str, Any] = {}
        self.live = LiveRuns(self.state_dir, self.settings)
        # every run in the server's namespaces is archived, followed or not (`usecases.archiving`)
        # empty: the user's own namespace as resolved for a shared pool (`usecases.jobs.team_settings`)
        own = [] if services.jobs.setup_error else [services.jobs.usecases.settings.namespace]
        self.archiver = run_archiver(
            self._client,
            list(config.archive_namespaces) or own,
            self.live.logs,
            every=float(config.archive_every_seconds),
            max_streams=int(config.archive_max_streams),
            state_dir=self.state_dir,
        )

    def settings_json(self) -> dict[str, Any]:
        """The settings in force, the JupyterLab settings' part and the server config's part."""
        effective = asdict(self.settings)
        effective["patterns"] = list(self.settings.patterns)
        return {"settings": effective, "user": self.user_settings, "server": self.server_settings}

    def update_settings(self, body: dict[str, Any]) -> dict[str, Any]:
        """The user's JupyterLab settings over the server config (user patterns are added to the
        server's); checked in full before anything changes, then every run is read again with them."""
        user = body.get("settings")
        if not isinstance(user, dict):
            raise InputError("expected an object", where="settings", fix='send {"settings": {...}}')
        own = ObserveSettings.from_mapping(user, where="settings")  # the user's part alone first
        merged = {**self.server_settings, **user}
        merged["patterns"] = [*self.server_settings.get("patterns", ()), *own.patterns]
        settings = ObserveSettings.from_mapping(merged, where="settings")
        with content_checks():  # a regex that does not compile or names no metric: no schema says so
            compile_user_patterns(settings.patterns, where="settings.patterns")
        if settings != self.settings:  # a page load sends the same settings again: keep what was read
            self.live.use_settings(settings)
        self.settings, self.user_settings = settings, dict(user)
        return self.settings_json()

    def logs(
        self,
        uploads: list[tuple[str, bytes]],
        paths: list[str],
        rank_from: str | None,
        *,
        may_read_files: bool,
    ) -> dict[str, Any]:
        """Diagnosis and metrics of logs from anywhere: files sent in the request, or files and folders
        named in the Jupyter root (confined, symlinks included; needs `contents:read`)."""
        from ranktable.usecases.log_files import observe_log_files, observe_uploaded_logs

        if uploads and paths:
            raise ContentError("send files or name paths, not both", where="paths", fix="make two requests")
        if paths:
            if not may_read_files:
                raise PermissionDenied(
                    "naming files of the Jupyter root needs permission to read files (contents:read)",
                    where="paths",
                    fix="send the files' content instead",
                )
            root = self.services.root_dir
            local = [str(self.services.local_path(p, f"paths[{i}]")) for i, p in enumerate(paths)]
            with content_checks():  # the logs' content and the `rank_from` regex
                seen = observe_log_files(local, rank_from, self.settings, root=root)
        else:
            with content_checks():
                seen = observe_uploaded_logs(uploads, rank_from, self.settings)
        return {
            "source": seen.source,
            "files": [{"name": f.name, "rank": f.rank, "bytes": len(f.data)} for f in seen.files],
            "diagnosis": seen.diagnosis(),
            "metrics": seen.metrics(),
        }

    def _client(self, namespace: str) -> Any:
        return self.services.jobs.usecases.client(namespace)

    def metrics(self, namespace: str, name: str, run: str | None, fmt: str) -> dict[str, Any] | str:
        if fmt not in ("json", "csv"):
            raise InputError(f"unknown format {fmt!r}", where="format", fix="use json or csv")
        data = self._observation(namespace, name, run).metrics()
        return metrics_csv(data) if fmt == "csv" else data

    def diagnosis(self, namespace: str, name: str, run: str | None) -> dict[str, Any]:
        return self._observation(namespace, name, run).diagnosis()

    def compare(self, namespace: str, name: str, a: str | None, b: str | None) -> dict[str, Any]:
        """Two runs side by side, each read as the metrics and diagnosis routes read it."""
        runs = [a, b] if a is not None or b is not None else None  # one alone: the other its default
        return compare_runs(
            namespace, name, lambda run: self._observation(namespace, name, run), runs, self.state_dir
        )

    def _observation(self, namespace: str, name: str, run: str | None) -> Observation:
        """The run's observation, its job and pods taken from the job list's watches when it holds them."""
        known = self.services.jobs.watched(namespace, name)
        return self.live.observation(self._client(namespace), name, run, known)

    def runs(self, namespace: str, name: str) -> dict[str, Any]:
        return {"runs": [r.to_json() for r in job_runs(namespace, name, self.state_dir)]}

    def run_logs(
        self,
        namespace: str,
        name: str,
        run: str,
        node_rank: str | None,
        errors: str | None,
        limit: str | None,
    ) -> dict[str, Any]:
        rank = _integer(node_rank, "node_rank", 0, 1 << 20)
        count = _integer(limit, "limit", 1, MAX_LINES) or MAX_LINES
        lines = list(
            archived_lines(
                namespace, name, run, state_dir=self.state_dir, node_rank=rank,
                errors_only=(errors or "").lower() in ("1", "true", "yes"), limit=count + 1,
            )
        )  # fmt: skip
        return {"run": run, "lines": lines[:count], "truncated": len(lines) > count}

    def close(self) -> None:
        if self.archiver is not None:
            self.archiver.close()
        self.live.close()


def _integer(value: str | None, where: str, low: int, high: int) -> int | None:
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except ValueError:
        raise InputError(f"{value!r} is not an integer", where=where) from None
    if not low <= number <= high:
        raise InputError(f"{number} is outside [{low}, {high}]", where=where)
    return number
