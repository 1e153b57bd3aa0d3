"""Pod health from Kubernetes pod objects (as dicts): state, reason, exit codes, restarts.

``kubectl get pods`` hides a crash loop behind "Running" phases; the container statuses say
CrashLoopBackOff (a Waiting reason, restart back-off capped at 5 min), OOMKilled (Terminated, exit 137),
ImagePullBackOff, and keep the previous exit in ``lastState``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

BAD_WAITING = frozenset(
    {
        "CrashLoopBackOff",
        "ImagePullBackOff",
        "ErrImagePull",
        "CreateContainerConfigError",
        "InvalidImageName",
        "CreateContainerError",
        "RunContainerError",
    }
)


@dataclass(frozen=True)
class PodHealth:
    state: str  # waiting | running | terminated | unknown
    reason: str | None  # CrashLoopBackOff, ImagePullBackOff, OOMKilled, Error, Completed, ...
    exit_code: int | None  # of the current termination
    last_reason: str | None  # lastState.terminated.reason
    last_exit_code: int | None
    last_finished: str | None
    restarts: int
    ready: bool
    message: str | None = None

    @property
    def ok(self) -> bool:
        bad_exit = self.exit_code not in (None, 0) or self.last_exit_code not in (None, 0)
        return (
            not bad_exit
            and self.reason not in BAD_WAITING
            and self.reason != "OOMKilled"
            and not self.restarts
        )

    def mark(self) -> str:
        """Short text for tables: ``CrashLoopBackOff (exit 2) x3``; "" when healthy."""
        if self.ok:
            return ""
        parts = [self.reason or self.last_reason or self.state]
        code = self.exit_code if self.exit_code not in (None, 0) else self.last_exit_code
        if code not in (None, 0):
            parts.append(f"(exit {code})")
        if self.restarts:
            parts.append(f"x{self.restarts}")
        return " ".join(str(p) for p in parts)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def pod_health(pod: dict[str, Any]) -> PodHealth:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    restarts = sum(int(c.get("restartCount") or 0) for c in statuses)
    ready = bool(statuses) and all(c.get("ready") for c in statuses)
    state, reason, exit_code, message = "unknown", None, None, None
    last_reason = last_exit = last_finished = None
    # the worst container decides: a waiting/terminated one over a running one
    for status in sorted(statuses, key=lambda c: "running" in (c.get("state") or {})):
        current = status.get("state") or {}
        if "waiting" in current:
            state, reason = "waiting", current["waiting"].get("reason")
            message = current["waiting"].get("message")
        elif "terminated" in current:
            term = current["terminated"]
            state, reason, exit_code = "terminated", term.get("reason"), term.get("exitCode")
            message = term.get("message")
        elif "running" in current:
            state = "running"
        last = (status.get("lastState") or {}).get("terminated") or {}
        if last:
            last_reason, last_exit, last_finished = (
                last.get("reason"),
                last.get("exitCode"),
                last.get("finishedAt"),
            )
        if state != "running":
            break
    if not statuses:
        reason = (pod.get("status") or {}).get("reason")
    return PodHealth(
        state, reason, _int(exit_code), last_reason, _int(last_exit), last_finished, restarts, ready, message
    )


def _int(value: Any) -> int | None:
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def job_health(pods: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"restarts", "reasons", "exit_code"}`` over a job's pods (reasons of unhealthy pods, sorted)."""
    healths = [pod_health(p) for p in pods]
    reasons = sorted({h.reason or h.last_reason or h.state for h in healths if not h.ok} - {None, "unknown"})
    codes = [c for h in healths for c in (h.exit_code, h.last_exit_code) if c not in (None, 0)]
    return {
        "restarts": sum(h.restarts for h in healths),
        "reasons": reasons,
        "exit_code": codes[0] if codes else None,
        "ready": sum(1 for h in healths if h.ready),
        "total": len(healths),
        "failing": failing(healths),
    }


def failing(healths: list[PodHealth]) -> str | None:
    """Why a run is failing, worst first (``CrashLoopBackOff, exit code 1``); None when it is not.

    Pods in a crash loop are "Running" and ready between restarts, so a job's phase and ready count hide
    it: a bad waiting reason, an OOM kill or a non-zero exit (now or before the last restart) is failing."""
    waiting = sorted({h.reason for h in healths if h.reason in BAD_WAITING})
    oom = any("OOMKilled" in (h.reason, h.last_reason) for h in healths)
    codes = sorted({c for h in healths for c in (h.exit_code, h.last_exit_code) if c not in (None, 0)})
    parts = [*(str(r) for r in waiting), *(["OOMKilled"] if oom else [])]
    parts += [f"exit code {c}" for c in codes[:1]]
    return ", ".join(parts) or None


def health_text(health: dict[str, Any]) -> str:
    """``CrashLoopBackOff, restarts 3, exit 2`` or "" for a healthy job."""
    parts = list(health.get("reasons") or [])
    if health.get("restarts"):
        parts.append(f"restarts {health['restarts']}")
    if health.get("exit_code") is not None:
        parts.append(f"exit {health['exit_code']}")
    return ", ".join(parts)
