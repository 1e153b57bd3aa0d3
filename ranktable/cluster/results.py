"""What the cluster client returns: small typed records with ``to_json()`` for the CLI and the web UI."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ranktable.cluster.describe import NpuCapacity
from ranktable.compose.tenancy import owner_of
from ranktable.observe.health import PodHealth, job_health
from ranktable.observe.lineage import resumed_labels

if TYPE_CHECKING:
    from ranktable.hccl import ValidationReport


def _age(created: str | None) -> float | None:
    if not created:
        return None
    try:
        then = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except ValueError:
        return None
    return max((datetime.now(timezone.utc) - then).total_seconds(), 0.0)


def _first_image(spec: dict[str, Any]) -> str:
    """The image of the first task's first container ("" when the job names none)."""
    for task in spec.get("tasks") or []:
        for container in ((task.get("template") or {}).get("spec") or {}).get("containers") or []:
            return str(container.get("image") or "")
    return ""


@dataclass
class JobSummary:
    name: str
    namespace: str
    phase: str
    nodes: int
    min_available: int
    pending: int
    running: int
    succeeded: int
    failed: int
    retries: int
    queue: str
    created: str | None
    age_seconds: float | None
    uid: str = ""
    # the first container's image (a new job in the panel starts from the last job's image)
    image: str = ""
    owner: str = ""  # the submitting user (compose.tenancy.OWNER_LABEL), "" for a job without the label
    # pod health over the job's pods: {"restarts", "reasons", "exit_code", "ready", "total"} (observe.health)
    health: dict[str, Any] = field(default_factory=dict)
    # the run it resumed, as its labels say: {"from", "by" (auto/hand), "step", "lineage"}; None: a first run
    resumed: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_job(cls, job: dict[str, Any], pods: list[dict[str, Any]] | None = None) -> JobSummary:
        meta, spec, status = job.get("metadata") or {}, job.get("spec") or {}, job.get("status") or {}
        replicas = sum(int(t.get("replicas") or 0) for t in spec.get("tasks") or [])
        return cls(
            name=str(meta.get("name")),
            namespace=str(meta.get("namespace") or ""),
            phase=str((status.get("state") or {}).get("phase") or "Pending"),
            nodes=replicas,
            min_available=int(spec.get("minAvailable") or replicas),
            pending=int(status.get("pending") or 0),
            running=int(status.get("running") or 0),
            succeeded=int(status.get("succeeded") or 0),
            failed=int(status.get("failed") or 0),
            retries=int(status.get("retryCount") or 0),
            queue=str(spec.get("queue") or "default"),
            created=meta.get("creationTimestamp"),
            age_seconds=_age(meta.get("creationTimestamp")),
            uid=str(meta.get("uid") or ""),
            image=_first_image(spec),
            owner=owner_of(meta.get("labels")) or "",
            health=job_health(pods) if pods is not None else {},
            resumed=resumed_labels(meta.get("labels") or {}),
        )


@dataclass
class PodInfo:
    name: str
    index: int
    node: str | None
    host_ip: str | None
    leaf: str | None
    phase: str
    restarts: int
    has_devices: bool
    state: str = "unknown"  # waiting | running | terminated (the worst container)
    reason: str | None = None  # CrashLoopBackOff, ImagePullBackOff, OOMKilled, Error, Completed...
    exit_code: int | None = None
    last_reason: str | None = None  # the previous termination (lastState), e.g. before a restart
    last_exit_code: int | None = None
    ready: bool = False

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def health(self) -> str:
        """``CrashLoopBackOff (exit 2) x3``, or "" when healthy."""
        return PodHealth(
            self.state,
            self.reason,
            self.exit_code,
            self.last_reason,
            self.last_exit_code,
            None,
            self.restarts,
            self.ready,
        ).mark()


@dataclass
class EventInfo:
    type: str
    reason: str
    object: str
    message: str
    count: int
    last_seen: str | None
    hint: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class JobDescription:
    job: JobSummary
    pods: list[PodInfo]
    events: list[EventInfo]
    rank_table_status: str
    capacity: NpuCapacity | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "job": self.job.to_json(),
            "pods": [p.to_json() for p in self.pods],
            "events": [e.to_json() for e in self.events],
            "rank_table_status": self.rank_table_status,
            "capacity": self.capacity.to_json() if self.capacity else None,
        }


@dataclass
class SubmitResult:
    name: str
    namespace: str
    configmap: str
    uid: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class RankTableResult:
    """The completed rank table as the platform wrote it, with the core's verdict on it."""

    text: str
    report: ValidationReport
    waited_seconds: float

    @property
    def ok(self) -> bool:
        return self.report.ok

    def to_json(self) -> dict[str, Any]:
        return {"report": self.report.to_json(), "waited_seconds": self.waited_seconds, "text": self.text}


@dataclass
class PhaseChange:
    name: str
    phase: str
    previous: str | None
    retries: int
    running: int
    at: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def pod_index(pod: dict[str, Any]) -> int:
    meta = pod.get("metadata") or {}
    value = (meta.get("labels") or {}).get("volcano.sh/task-index") or (meta.get("annotations") or {}).get(
        "volcano.sh/task-index"
    )
    if value is not None and str(value).isdigit():
        return int(value)
    tail = str(meta.get("name", "")).rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else -1
