"""`/ranktable/jobs/{ns}/{name}/metrics|diagnosis|runs...`: the observability use cases as JSON.

A live follower per running job (``LiveRuns``) archives its logs under the state dir while answering;
stopped or deleted jobs are answered from the archive.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ranktable.errors import InputError
from ranktable.observe import ObserveSettings
from ranktable.observe.export import metrics_csv
from ranktable.usecases.observe import MAX_LINES, LiveRuns, archived_lines, job_runs

if TYPE_CHECKING:
    from ranktable.server_ext.services import Services


class ObserveService:
    def __init__(self, services: Services) -> None:
        self.services = services
        config = services.config
        self.state_dir = config.state_dir or None
        self.settings = ObserveSettings.from_mapping(
            dict(config.observability), where="c.Ranktable.observability"
        )
        self.live = LiveRuns(self.state_dir, self.settings)

    def _client(self, namespace: str) -> Any:
        return self.services.jobs.usecases.client(namespace)

    def metrics(self, namespace: str, name: str, run: str | None, fmt: str) -> dict[str, Any] | str:
        if fmt not in ("json", "csv"):
            raise InputError(f"unknown format {fmt!r}", where="format", fix="use json or csv")
        data = self.live.observation(self._client(namespace), name, run).metrics()
        return metrics_csv(data) if fmt == "csv" else data

    def diagnosis(self, namespace: str, name: str, run: str | None) -> dict[str, Any]:
        return self.live.observation(self._client(namespace), name, run).diagnosis()

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
