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


UNREAD_CONTAINER_FIELDS = ("env", "envFrom")


def slimmed_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """`pod` without what the product never reads of a pod and a large job makes big, so the pods it
    holds (the job table's watch, a run's follower) stay small: each container's env (Volcano's svc plugin
    writes every pod's host name into `VC_<TASK>_HOSTS` of every pod: 33 KB a pod at 1,024 pods, ~110 MB
    for one copy of the job's pods, #28) and `metadata.managedFields`. The job's own env is read from the
    Volcano job, never from its pods. Changes `pod` in place."""
    spec = pod.get("spec")
    if isinstance(spec, dict):
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or ():
                if isinstance(container, dict):
                    for field in UNREAD_CONTAINER_FIELDS:
                        container.pop(field, None)
    meta = pod.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
    return pod
