"""Why a job is pending: gang scheduling that cannot be satisfied, or its place in its queue.

Volcano starts a job only when ``minAvailable`` pods fit at once (one per server here, by anti-affinity).
The answer counts the nodes that have the NPUs one pod needs free, overall and per leaf, and the job's
position among its queue's pending jobs (oldest first, as Volcano's default FIFO within a queue).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

QUEUE_WAITING = ("Pending", "Inqueue")


def pending_reason(
    *,
    job: dict[str, Any],
    npus_per_pod: int,
    free_per_node: dict[str, int],
    node_leaf: dict[str, str],
    queue: dict[str, Any] | None,
    queue_jobs: list[dict[str, Any]],
) -> dict[str, Any]:
    spec = job.get("spec") or {}
    meta = job.get("metadata") or {}
    needed = int(
        spec.get("minAvailable") or sum(int(t.get("replicas") or 0) for t in spec.get("tasks") or [])
    )
    fits = sorted(node for node, free in free_per_node.items() if free >= npus_per_pod)
    fit_per_leaf = dict(sorted(Counter(node_leaf.get(node, "?") for node in fits).items()))
    free_per_leaf: Counter[str] = Counter()
    for node, free in free_per_node.items():
        free_per_leaf[node_leaf.get(node, "?")] += free
    queue_name = str(spec.get("queue") or "default")
    queue_state = str(
        ((queue or {}).get("status") or {}).get("state") or ("Missing" if queue is None else "Unknown")
    )
    waiting = sorted(
        (
            j
            for j in queue_jobs
            if str((j.get("spec") or {}).get("queue") or "default") == queue_name
            and ((j.get("status") or {}).get("state") or {}).get("phase", "Pending") in QUEUE_WAITING
        ),
        key=lambda j: (
            str((j.get("metadata") or {}).get("creationTimestamp") or ""),
            str(j["metadata"]["name"]),
        ),
    )
    names = [str(j["metadata"]["name"]) for j in waiting]
    position = names.index(str(meta.get("name"))) + 1 if meta.get("name") in names else None
    satisfiable = len(fits) >= needed
    if queue_state not in ("Open", "Unknown"):
        reason = f"queue {queue_name} is {queue_state}: no job in it starts until it is Open"
    elif not satisfiable:
        reason = (
            f"gang not satisfiable: needs {needed} pod(s) x {npus_per_pod} NPUs at once, one per node; "
            f"{len(fits)} node(s) have {npus_per_pod} NPUs free"
            + (
                f" ({', '.join(f'{leaf} {n}' for leaf, n in fit_per_leaf.items())} per leaf)"
                if fit_per_leaf
                else ""
            )
        )
    elif position and position > 1:
        reason = f"waiting in queue {queue_name}: position {position} of {len(names)} pending job(s)"
    else:
        reason = "resources are free: the scheduler should place it shortly"
    return {
        "reason": reason,
        "satisfiable": satisfiable,
        "nodes_needed": needed,
        "npus_per_pod": npus_per_pod,
        "nodes_fit": len(fits),
        "fit_per_leaf": fit_per_leaf,
        "free_npus_per_leaf": dict(sorted(free_per_leaf.items())),
        "queue": {
            "name": queue_name,
            "state": queue_state,
            "position": position,
            "pending_jobs": len(names),
            "ahead": names[: (position or 1) - 1][:20],
        },
    }
