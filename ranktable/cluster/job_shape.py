"""What a Volcano job's manifest says about its run: pods and their indexes, NPUs per pod, when it was
created and when it ended (read by the run's log stream and its observer alike)."""

from __future__ import annotations

from typing import Any

from ranktable.compose.names import NPU_RESOURCE
from ranktable.observe.text import kube_time


def job_uid(job: dict[str, Any]) -> str:
    """The run's id: a resubmitted job of the same name is another run."""
    return str((job.get("metadata") or {}).get("uid") or "")


def run_created(job: dict[str, Any]) -> dict[str, float]:
    """``{"created": epoch seconds}`` of the run (its job's creationTimestamp) for its archive's meta, so
    the archive says when the run was submitted, not when its logs were first archived; {} if unknown."""
    created = kube_time(str((job.get("metadata") or {}).get("creationTimestamp") or ""))
    return {} if created is None else {"created": created}


def run_ended(job: dict[str, Any]) -> float | None:
    """When the run reached its current phase (the job's lastTransitionTime), for an ended run."""
    return kube_time(str(((job.get("status") or {}).get("state") or {}).get("lastTransitionTime") or ""))


def npus_per_pod(job: dict[str, Any]) -> int:
    try:
        container = job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
        return int(str(((container.get("resources") or {}).get("requests") or {}).get(NPU_RESOURCE, 1)))
    except (KeyError, IndexError, ValueError, TypeError):
        return 1


def pod_names(name: str, job: dict[str, Any]) -> list[tuple[str, int]]:
    task = job["spec"]["tasks"][0]
    return [(f"{name}-{task['name']}-{i}", i) for i in range(int(task.get("replicas") or 1))]
