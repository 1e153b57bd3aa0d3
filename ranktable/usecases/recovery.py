"""Auto-resume: the opt-in policy that resumes a job without a person after a hardware fault or a hang.

Off unless the server is told (`c.Ranktable.auto_resume = True`). Every `poll_s` it reads the namespace's
jobs and follows each running one's logs (`LiveRuns`, shared with the Job view: the lines reach the archive
as they come, so they outlive the pods an abort deletes); a run that ended Failed or Aborted is diagnosed
once, and resumed from its last checkpoint, its
blamed node excluded (`usecases.resume`, as the next run of its lineage, `by="auto"`) when the first failure
is the hardware's (NPU, link, heartbeat, ECC, RoCE); a running job is checked for hung ranks every
`hang_check_s` and resumed the same way. Jobs composed with `on_fault: stop` are left alone (their owner
asked for a stop), and a lineage is resumed at most `budget` times (a label on the job counts them). Each
decision, resumed or not, is handed to `notify` once per run (the panel's notification, the server log).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ranktable.cluster.job_shape import job_uid
from ranktable.errors import RanktableError
from ranktable.usecases.observe import ENDED_PHASES
from ranktable.usecases.polling import poll_in_background

if TYPE_CHECKING:
    from ranktable.cluster.client import ClusterClient
    from ranktable.usecases.jobs import Jobs
    from ranktable.usecases.observe import LiveRuns, Observation

AUTO_RESUMES_LABEL = "ranktable.io/auto-resumes"  # how many times the policy resumed this lineage
FAILED_PHASES = ("Failed", "Aborted")
MAX_EVENTS = 200
MAX_TRIES = 3  # passes that may fail on one run before the policy gives up on it


@dataclass(frozen=True)
class Decision:
    """What the policy did about one run: resumed it, or why not."""

    namespace: str
    job: str
    run: str
    action: str  # "resumed", "skipped" or "budget"
    message: str
    at: float
    result: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "namespace": self.namespace,
            "job": self.job,
            "run": self.run,
            "action": self.action,
            "message": self.message,
            "at": self.at,
        }
        if self.result is not None:
            out["new_run"] = self.result.get("uid")
            out["checkpoint"] = self.result.get("checkpoint")
            out["avoided"] = self.result.get("avoided")
        return out


def _on_fault(job: dict[str, Any]) -> str | None:
    from ranktable.compose.fault_policy import preset_of

    spec = job.get("spec") or {}
    return preset_of(spec.get("policies"), int(spec.get("maxRetry", 3)))


class AutoResume:
    """The policy over one cluster's namespaces; `check` once, or `start` a thread that polls."""

    def __init__(
        self,
        jobs: Jobs,
        *,
        budget: int = 3,
        notify: Callable[[Decision], None] | None = None,
        live: LiveRuns | None = None,
        namespaces: list[str] | None = None,
        poll_s: float = 2.0,
        hang_check_s: float = 30.0,
        log: logging.Logger | None = None,
        watched: Callable[[str, str], tuple[dict[str, Any], list[dict[str, Any]]] | None] | None = None,
    ) -> None:
        self.jobs = jobs
        # (job, pods) as the job list's watches hold them (the server's): a poll then lists no pods (a
        # 1,024-pod list every poll cost the server and the pool more than the rest of the policy)
        self.watched = watched
        self.budget = budget
        self.notify = notify or (lambda decision: None)
        self._own_live = live is None
        if live is None:
            from ranktable.usecases.observe import LiveRuns

            live = LiveRuns(jobs.settings.state_dir)
        self.live = live
        self.namespaces = namespaces or [jobs.settings.namespace]
        self.poll_s = poll_s
        self.hang_check_s = hang_check_s
        self.log = log or logging.getLogger("ranktable.auto_resume")
        self.events: deque[Decision] = deque(maxlen=MAX_EVENTS)
        self._decided: set[str] = set()  # run uids already acted on (or judged not to be)
        self._hang_checked: dict[str, float] = {}
        self._tries: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- one pass ---------------------------------------------------------------------------------------
    def check(self, now: float | None = None) -> list[Decision]:
        """Look at every job once; the decisions taken in this pass."""
        taken = []
        for namespace in self.namespaces:
            client = self.jobs.client(namespace)
            try:
                objects = client.job_objects()
            except RanktableError as exc:
                self.log.warning("auto-resume: cannot list jobs in %s: %s", namespace, exc.message)
                continue
            for job in objects:
                try:
                    decision = self._consider(client, job, time.monotonic() if now is None else now)
                except Exception:  # this job's turn failed (tried again next pass); the others go on
                    self.log.exception("auto-resume: %s", (job.get("metadata") or {}).get("name"))
                    continue
                if decision is not None:
                    taken.append(decision)
        return taken

    def _consider(self, client: ClusterClient, job: dict[str, Any], now: float) -> Decision | None:
        meta = job.get("metadata") or {}
        uid, name = str(meta.get("uid") or ""), str(meta.get("name") or "")
        if not uid or uid in self._decided or _on_fault(job) == "stop":
            return None
        phase = str(((job.get("status") or {}).get("state") or {}).get("phase") or "")
        if phase in FAILED_PHASES:
            tries = self._tries.get(uid, 0) + 1
            self._tries[uid] = tries
            try:
                decision = self._failed(client, name, uid, job)
            except Exception:  # a half-deleted job, an API hiccup: tried again next pass, MAX_TRIES times
                if tries < MAX_TRIES:
                    raise
                self._decided.add(uid)
                self.log.exception("auto-resume: gave up on run %s of %s", uid[:8], name)
                return None
            self._decided.add(uid)
            return decision
        if phase in ENDED_PHASES:
            self._decided.add(uid)
            return None
        try:
            observation = self._observation(client, name, job)  # keeps the run's follower going
        except RanktableError:
            return None
        if phase == "Running" and now - self._hang_checked.get(uid, -1e18) >= self.hang_check_s:
            self._hang_checked[uid] = now
            return self._maybe_hung(client, name, uid, job, observation)
        return None

    def _observation(
        self, client: ClusterClient, name: str, job: dict[str, Any] | None = None
    ) -> Observation:
        known = None
        if job is not None:
            known = self.watched(client.namespace, name) if self.watched is not None else None
            if known is None or job_uid(known[0]) != job_uid(job):
                known = (job, client.job_pods(name))
        return self.live.observation(client, name, known=known)

    def _failed(self, client: ClusterClient, name: str, uid: str, job: dict[str, Any]) -> Decision:
        from ranktable.usecases.resume import blamed_node

        diagnosis = self._observation(client, name).diagnosis()
        node, why = blamed_node(client, name, diagnosis)
        if node is None:
            return self._record(client, name, uid, "skipped", f"not resumed: {why}")
        return self._resume(client, name, uid, job, f"{why} on {node}")

    def _maybe_hung(
        self, client: ClusterClient, name: str, uid: str, job: dict[str, Any], observation: Observation
    ) -> Decision | None:
        diagnosis = observation.diagnosis()
        hung = diagnosis.get("hung") or []
        if not hung:
            return None
        self._decided.add(uid)
        ranks = ", ".join(str(h.get("rank")) for h in hung[:8])
        return self._resume(client, name, uid, job, f"rank(s) {ranks} hung")

    def _resume(self, client: ClusterClient, name: str, uid: str, job: dict[str, Any], why: str) -> Decision:
        from ranktable.usecases.resume import resume

        labels = (job.get("metadata") or {}).get("labels") or {}
        try:
            used = int(labels.get(AUTO_RESUMES_LABEL) or 0)
        except ValueError:
            used = 0
        if used >= self.budget:
            return self._record(
                client,
                name,
                uid,
                "budget",
                f"not resumed: {why}, but its lineage was resumed {used} time(s), the budget "
                f"(c.Ranktable.auto_resume_budget = {self.budget}); resume it by hand",
            )
        self.live.release(client.namespace, name)  # one writer per archive: the live follower stops first
        try:
            result = resume(
                client,
                name,
                state_dir=self.jobs.settings.state_dir,
                keep_logs_s=self.jobs.settings.keep_logs_s,
                timeout=float(self.jobs.settings.request_timeout),
                by="auto",
                labels={AUTO_RESUMES_LABEL: str(used + 1)},
                settings=self.live.settings,  # the thresholds that judged it, judging it again
            )
        except RanktableError as exc:
            return self._record(client, name, uid, "skipped", f"not resumed ({why}): {exc.message}")
        message = f"auto-resume ({why}; {used + 1} of {self.budget}): {result['message']}"
        return self._record(client, name, uid, "resumed", message, result)

    def _record(
        self,
        client: ClusterClient,
        name: str,
        uid: str,
        action: str,
        message: str,
        result: dict[str, Any] | None = None,
    ) -> Decision:
        decision = Decision(client.namespace, name, uid, action, message, time.time(), result)
        self.events.append(decision)
        self.log.info("%s/%s run %s: %s", client.namespace, name, uid[:8], message)
        try:
            self.notify(decision)
        except Exception:  # a notifier's failure must not stop the policy
            self.log.exception("auto-resume: notify failed")
        return decision

    # -- the polling thread -----------------------------------------------------------------------------
    def start(self) -> AutoResume:
        self._thread = poll_in_background(
            "ranktable-auto-resume",
            self._stop,
            self.poll_s,
            self.check,
            self.log,
            "auto-resume: a pass failed",
        )
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30.0)
        if self._own_live:
            self.live.close()

    def recent(self, since: float = 0.0) -> list[dict[str, Any]]:
        return [d.to_json() for d in list(self.events) if d.at > since]
