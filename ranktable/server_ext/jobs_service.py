"""`/ranktable/jobs...` and the `logs` / `jobs` stream channels: JSON in, one job use case, JSON out."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from ranktable import probe
from ranktable.errors import InputError, NotFoundError
from ranktable.server_ext.hub import StopEvent
from ranktable.server_ext.layout_service import message_bytes
from ranktable.usecases.jobs import ClusterSettings, Jobs

if TYPE_CHECKING:
    from ranktable.server_ext.services import Services


class JobsService:
    def __init__(self, services: Services) -> None:
        self.services = services
        config = services.config
        self.config = config
        self._tables: dict[str, Any] = {}  # namespace -> the live JobTable its `jobs` subscribers share
        self._tables_lock = threading.Lock()
        self.usecases = Jobs(
            ClusterSettings(
                kubeconfig=config.kubeconfig or None,
                context=config.context or None,
                namespace=config.namespace,
                request_timeout=float(config.request_timeout),
                topology=config.topology or None,
                topology_format=config.topology_format or None,
                extra_flavours=dict(config.flavours),
                extra_flavours_source="c.Ranktable.flavours",
                state_dir=config.state_dir or None,
                keep_logs_s=float(config.keep_logs_seconds),
            )
        )

    def _spec(self, body: dict[str, Any]) -> Any:
        raw = body.get("spec")
        if not isinstance(raw, dict):
            raise InputError("must be a JSON object (the job spec)", where="spec")
        return raw

    def compose(self, body: dict[str, Any]) -> dict[str, Any]:
        return self.usecases.compose(self._spec(body))

    def list_jobs(self, namespace: str | None) -> dict[str, Any]:
        return {"jobs": self.usecases.job_rows(namespace)}

    def submit(self, body: dict[str, Any]) -> dict[str, Any]:
        if body.get("yaml") is not None:
            if not isinstance(body["yaml"], str):
                raise InputError("must be a string (YAML manifests)", where="yaml")
            return self.usecases.submit_yaml(body["yaml"], "yaml")
        if isinstance(body.get("spec"), dict):
            return self.usecases.submit(self.usecases.spec(body["spec"]))
        raise InputError("is required", where="spec", fix="send the job `spec` (or `yaml` manifests)")

    def describe(self, namespace: str, name: str) -> tuple[str | None, dict[str, Any]]:
        """(version, the job with its pods and events). When the job list is open, its live `JobTable`
        answers from its watches, built again only when an input changed, with a version (the same version:
        the same description, so the Job view's 2 s refresh costs a comparison); else the API is read
        (version None)."""
        with self._tables_lock:
            table = self._tables.get(namespace)
        if table is not None:
            got = table.describe(name)
            if got is not None:
                return got
        return None, self.usecases.describe(namespace, name, self.watched(namespace, name))

    def watched(self, namespace: str, name: str) -> Any:
        """(job, pods) of `name` from the namespace's live `JobTable` (the job list's watches), or None
        when no job list is open or it does not hold the job."""
        with self._tables_lock:
            table = self._tables.get(namespace)
        return table.job_and_pods(name) if table is not None else None

    def stop(self, namespace: str, name: str) -> dict[str, Any]:
        self.services.observe.live.release(namespace, name)  # the stop archives the rest itself
        return self.usecases.stop(namespace, name)

    def job_ranktable(self, namespace: str, name: str) -> dict[str, Any]:
        return self.usecases.rank_table(namespace, name)

    def job_layout(
        self, namespace: str, name: str, topology_path: str | None, diagnosis: str | None = None
    ) -> dict[str, Any]:
        path = str(self.services.local_file(topology_path, "topology_path")) if topology_path else None
        if diagnosis not in (None, "", "true", "false", "1", "0"):
            raise InputError(f"must be true or false; got {diagnosis!r}", where="diagnosis")
        found = self.services.observe.diagnosis(namespace, name, None) if diagnosis in ("true", "1") else None
        layout = self.usecases.layout(namespace, name, path, found)
        return {
            "marks": [{"rank": rank, "kind": kind} for rank, kind in sorted(layout.marks.items())],
            "report": layout.report,
            "svg": layout.svg,
            "warnings": list(layout.report.get("warnings") or []),
            "rank_mapping": layout.report.get("rank_mapping"),
            "source": layout.topology_source,
            "algorithm": layout.report["algorithm"],
            "algorithm_reason": layout.report["algorithm_reason"],
            "groups": layout.report["groups"],
            "placement": layout.placement,
        }

    def layout_preview(self, body: dict[str, Any]) -> dict[str, Any]:
        spec = self.usecases.spec(self._spec(body))
        path = body.get("topology_path")
        topology = str(self.services.local_file(str(path), "topology_path")) if path else None
        return self.usecases.layout_preview(spec, topology, message_bytes(body))

    def resubmit(self, namespace: str, name: str, run: str | None = None) -> dict[str, Any]:
        self.services.observe.live.release(namespace, name)
        return self.usecases.resubmit(namespace, name, run)

    # -- streams ------------------------------------------------------------------------------------------
    async def logs(self, msg: dict[str, Any]) -> AsyncIterator[Any]:
        from ranktable.cluster.logs import timestamp_key
        from ranktable.cluster.observing import job_uid

        name = msg.get("job")
        if not isinstance(name, str) or not name:
            raise InputError("is required", where="job", fix="the job whose pods' logs to follow")
        namespace = msg.get("namespace") or self.config.namespace
        follow = bool(msg.get("follow", True))
        since_raw = msg.get("since") or {}
        if not isinstance(since_raw, dict):
            raise InputError("must be an object {pod: timestamp}", where="since")
        since = {str(pod): timestamp_key(str(ts)) for pod, ts in since_raw.items()}
        uid = msg.get("uid")
        if uid is not None and not isinstance(uid, str):
            raise InputError("must be the run's uid (a string)", where="uid")
        opened = time.monotonic()  # the steps to the first lines are logged (bench_logview reads them)
        client = await self.services.run_blocking(self.usecases.client, str(namespace))
        known = self.watched(str(namespace), name)
        watched = known[0] if known is not None else None
        if watched is not None and (not uid or job_uid(watched) == uid):
            # the job list's watch holds the run: no API read (under load that read took ~0.9 s of the
            # Job view's first 1.1 s; the API server is busy with the overview and 1,024 log streams)
            job = watched
        else:
            try:  # one read of the job for the run check and the pods
                job = await self.services.run_blocking(client.get_job, name)
            except NotFoundError:
                if uid:
                    return  # that run was stopped
                raise
        if uid and job_uid(job) != uid:
            return  # that run ended: its pods (same names) now belong to another run
        job_read = time.monotonic()
        if follow:  # the run's one stream, shared with its metrics and diagnosis (`LiveRuns`)
            stream: Any = await self.services.run_blocking(
                partial(self.services.observe.live.logs.subscribe, client, name, job)
            )
        else:
            stream = await self.services.run_blocking(
                partial(client.logs, name, follow, job=job, plan_later=True)
            )
        started = time.monotonic()

        def close_stream() -> None:  # joins the per-pod readers: off the event loop
            threading.Thread(target=stream.close, name="ranktable-log-close", daemon=True).start()

        def groups(stop: StopEvent) -> Iterator[list[dict[str, Any]]]:
            stop.on_set(close_stream)
            if uid:  # a resubmit reuses the pod names: end this run's follow when the run is gone
                threading.Thread(
                    target=_end_with_run,
                    args=(client, name, uid, stop),
                    name="ranktable-run-watch",
                    daemon=True,
                ).start()
            first = True
            try:
                for got in stream.rounds():  # every pod's new lines of a read round: one hand-over each
                    if first:
                        first = False
                        self.services.log.info(
                            "ranktable: logs of %s: job read %.3f s, readers starting %.3f s, first lines "
                            "%.3f s after the subscribe (%d readers started, %d pods)",
                            name,
                            job_read - opened,
                            started - opened,
                            time.monotonic() - opened,
                            stream.readers_started,
                            len(stream.pods),
                        )
                    yield from round_messages(got, since)
            finally:
                stop.set()
                stats = stream.stats
                self.services.log.info(
                    "ranktable: log stream of %s ended: %d lines, %d reconnects, %d duplicates dropped, "
                    "%d problems %s",
                    name,
                    stats.lines,
                    stats.reconnects,
                    stats.duplicates_dropped,
                    len(stats.problems),
                    stats.problems[:3],
                )

        async for batch in self.services.hub.iterate(
            groups, batch_seconds=self.config.log_batch_seconds, lists=True, weight=group_size
        ):
            at = time.monotonic()
            yield {"pods": batch}  # resumed once the websocket took it
            if probe.enabled():
                probe.count("server.ws_lines", sum(map(group_size, batch)))
                probe.count("server.ws_write_s", time.monotonic() - at)

    async def jobs(self, msg: dict[str, Any]) -> AsyncIterator[Any]:
        """The job table, followed by watches on jobs, pods and rank-table ConfigMaps (`JobTable`, one per
        namespace shared by every subscriber): a snapshot whenever a row changed, `jobs_poll_seconds` after
        the change reached the API server.

        Each watch resumes from its resourceVersion and relists only after 410 Gone or a reconnect, so a
        1,024-pod job is listed once, not every second; an unreachable API server ends the subscription
        with the reason (the client shows it and subscribes again).
        """
        namespace = str(msg.get("namespace") or self.config.namespace)
        client = await self.services.run_blocking(self.usecases.client, namespace)  # bad namespace: now

        def snapshots(stop: StopEvent) -> Iterator[dict[str, Any]]:
            table = self._join_table(client, namespace)
            try:
                for rows in table.follow(stop):
                    yield {"event": "snapshot", "jobs": rows}
            finally:
                self._leave_table(namespace, table)

        async for batch in self.services.hub.iterate(snapshots):
            for item in batch:
                yield item

    def _join_table(self, client: Any, namespace: str) -> Any:
        """The namespace's shared `JobTable` (started on first use; a failed one is replaced)."""
        from ranktable.cluster.jobtable import JobTable

        with self._tables_lock:
            table = self._tables.get(namespace)
            if table is None or table.error is not None or table.stop.is_set():
                table = JobTable(client, settle=float(self.config.jobs_poll_seconds))
                table.start()
                self._tables[namespace] = table
            table.users += 1
            return table

    def _leave_table(self, namespace: str, table: Any) -> None:
        with self._tables_lock:
            table.users -= 1
            if table.users > 0:
                return
            if self._tables.get(namespace) is table:
                del self._tables[namespace]
        table.close()


RUN_CHECK_SECONDS = 1.0
MESSAGE_LINES = 5000  # a logs message's lines, about: a round of ~13,000 in one made the page's tasks long


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
    """A group's weight in the hub's batch cap: its lines."""
    return int(group["n"])


def _is_run(client: Any, name: str, uid: str) -> bool:
    """Whether the job called `name` is still the run `uid` (not stopped, not resubmitted)."""
    from ranktable.cluster.observing import job_uid

    try:
        job = client.get_job(name)
    except NotFoundError:
        return False
    return job_uid(job) == uid


def _end_with_run(client: Any, name: str, uid: str, stop: StopEvent) -> None:
    from ranktable.errors import RanktableError

    while not stop.wait(RUN_CHECK_SECONDS):
        try:
            current = _is_run(client, name, uid)
        except RanktableError:
            continue  # the cluster is unreachable: the stream itself reports that
        if not current:
            stop.set()
            return
