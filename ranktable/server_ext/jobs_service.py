"""`/ranktable/jobs...` and the `logs` / `jobs` stream channels: JSON in, one job use case, JSON out."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from ranktable import probe
from ranktable.errors import InputError, RanktableError
from ranktable.server_ext.errors import content_checks
from ranktable.server_ext.hub import StopEvent
from ranktable.usecases.jobs import ClusterSettings, Jobs, team_settings
from ranktable.usecases.layout import message_bytes_of
from ranktable.usecases.logs import JobTables, group_size, open_logs, round_messages, since_keys

if TYPE_CHECKING:
    from ranktable.server_ext.services import Services
    from ranktable.usecases.recovery import AutoResume


class JobsService:
    def __init__(self, services: Services) -> None:
        self.services = services
        config = services.config
        self.config = config
        self.tables = JobTables(settle=float(config.jobs_poll_seconds))  # the `jobs` channel's live tables
        self.hub_user = os.environ.get("JUPYTERHUB_USER") or None
        self.setup_error: RanktableError | None = None
        try:
            owner, namespace = team_settings(
                config.namespace or ("u-{username}" if self.hub_user else "{context}"),
                self.hub_user,
                config.kubeconfig or None,
                config.context or None,
            )
        except RanktableError as exc:  # every job request answers with it (never a silent shared default)
            self.setup_error = exc
            owner, namespace = self.hub_user, "default"
        self._usecases = Jobs(
            ClusterSettings(
                kubeconfig=config.kubeconfig or None,
                context=config.context or None,
                namespace=namespace,
                owner=owner,
                request_timeout=float(config.request_timeout),
                topology=config.topology or None,
                topology_format=config.topology_format or None,
                extra_flavours=dict(config.flavours),
                extra_flavours_source="c.Ranktable.flavours",
                state_dir=config.state_dir or None,
                keep_logs_s=float(config.keep_logs_seconds),
            )
        )
        self.auto_resume: AutoResume | None = None

    @property
    def usecases(self) -> Jobs:
        if self.setup_error is not None:
            raise self.setup_error
        return self._usecases

    @property
    def namespace(self) -> str:
        """The user's namespace (c.Ranktable.namespace resolved for this user), the default of requests."""
        return self._usecases.settings.namespace

    def permissions(self, jupyter: dict[str, bool]) -> dict[str, Any]:
        """What the user may do: Jupyter's authorizer (`jupyter`) and the pool's RBAC in their namespace."""
        try:
            cluster = self.usecases.permissions()
        except RanktableError as exc:
            cluster = {
                "user": self._usecases.settings.owner,
                "namespace": self.namespace,
                "error": exc.to_json(),
            }
        return {**cluster, "jupyter": jupyter}

    def team(self) -> dict[str, Any]:
        return self.usecases.team()

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
            with content_checks():  # manifests that do not read as ours
                return self.usecases.submit_yaml(body["yaml"], "yaml")
        if isinstance(body.get("spec"), dict):
            spec = self.usecases.spec(body["spec"])
            with content_checks():  # the findings compose reports (a command and an entry point, ...)
                return self.usecases.submit(spec)
        raise InputError("is required", where="spec", fix="send the job `spec` (or `yaml` manifests)")

    def describe(self, namespace: str, name: str) -> tuple[str | None, dict[str, Any]]:
        """(version, the job with its pods and events). When the job list is open, its live `JobTable`
        answers from its watches, built again only when an input changed, with a version (the same version:
        the same description, so the Job view's 2 s refresh costs a comparison); else the API is read
        (version None)."""
        got = self.tables.describe(namespace, name)
        if got is not None:
            return got
        return None, self.usecases.describe(namespace, name, self.watched(namespace, name))

    def watched(self, namespace: str, name: str) -> Any:
        """(job, pods) of `name` from the namespace's live `JobTable` (the job list's watches), or None
        when no job list is open or it does not hold the job."""
        return self.tables.watched(namespace, name)

    def stop(self, namespace: str, name: str) -> dict[str, Any]:
        with self.services.observe.live.stopping(namespace, name):  # the stop archives the rest itself
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
        if path is not None and not isinstance(path, str):
            raise InputError("must be a file path relative to the Jupyter root", where="topology_path")
        topology = str(self.services.local_file(path, "topology_path")) if path is not None else None
        size = message_bytes_of(body)
        with content_checks():  # a job the pool or the topology cannot hold
            return self.usecases.layout_preview(spec, topology, size)

    def resubmit(self, namespace: str, name: str, run: str | None = None) -> dict[str, Any]:
        with self.services.observe.live.stopping(namespace, name):
            return self.usecases.resubmit(namespace, name, run)

    def resume(self, namespace: str, name: str, from_scratch: bool = False) -> dict[str, Any]:
        with self.services.observe.live.stopping(namespace, name):
            return self.usecases.resume(namespace, name, from_scratch)

    def lineage(self, namespace: str, name: str) -> dict[str, Any]:
        # the run's live follower archives it: releasing its stream ended every open Job view's live logs
        return self.usecases.lineage(namespace, name, live=self.services.observe.live)

    # -- auto-resume (opt-in) -------------------------------------------------------------------------
    def start_auto_resume(self) -> None:
        """`c.Ranktable.auto_resume`: the policy's thread over the default namespace."""
        from ranktable.usecases.recovery import AutoResume

        if not self.config.auto_resume or self.auto_resume is not None:
            return
        self.auto_resume = AutoResume(
            self.usecases,
            budget=int(self.config.auto_resume_budget),
            live=self.services.observe.live,
            poll_s=float(self.config.auto_resume_poll_seconds),
            log=self.services.log,
            watched=self.watched,
        ).start()

    def recovery(self, since: float = 0.0) -> dict[str, Any]:
        """The policy's state and its recent decisions (the panel notifies each once)."""
        policy = self.auto_resume
        return {
            "enabled": policy is not None,
            "budget": int(self.config.auto_resume_budget),
            "events": [] if policy is None else policy.recent(since),
        }

    def close(self) -> None:
        if self.auto_resume is not None:
            self.auto_resume.stop()

    # -- streams ------------------------------------------------------------------------------------------
    async def logs(self, msg: dict[str, Any]) -> AsyncIterator[Any]:
        name = msg.get("job")
        if not isinstance(name, str) or not name:
            raise InputError("is required", where="job", fix="the job whose pods' logs to follow")
        namespace = str(msg.get("namespace") or self.namespace)
        since = since_keys(msg.get("since"))
        client = await self.services.run_blocking(self.usecases.client, namespace)
        known = self.tables.watched(namespace, name)
        session = await self.services.run_blocking(
            partial(
                open_logs,
                client,
                name,
                runs=self.services.observe.live.logs,  # the run's one stream, shared with its observer
                follow=bool(msg.get("follow", True)),
                uid=msg.get("uid"),
                watched=known[0] if known is not None else None,
            )
        )
        if session is None:
            return  # that run ended: its pods (same names) now belong to another run

        def groups(stop: StopEvent) -> Iterator[list[dict[str, Any]]]:
            for got in session.rounds(stop, self.services.log):  # a read round: one hand-over each
                yield from round_messages(got, since)

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
        namespace = str(msg.get("namespace") or self.namespace)
        client = await self.services.run_blocking(self.usecases.client, namespace)  # bad namespace: now

        def snapshots(stop: StopEvent) -> Iterator[dict[str, Any]]:
            for rows in self.tables.follow(client, namespace, stop):
                yield {"event": "snapshot", "jobs": rows}

        async for batch in self.services.hub.iterate(snapshots):
            for item in batch:
                yield item
