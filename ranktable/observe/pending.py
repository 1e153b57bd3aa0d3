"""Why a job is pending: gang scheduling that cannot be satisfied, or its place in its queue.

Volcano starts a job only when ``minAvailable`` pods fit at once (one per server here, by anti-affinity).
The answer counts the nodes that have the NPUs one pod needs free, overall and per leaf, and the job's
position among its queue's pending jobs (oldest first, as Volcano's default FIFO within a queue).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

QUEUE_WAITING = ("Pending", "Inqueue")


def _selector(job: dict[str, Any]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """The first task's nodeSelector and required node-affinity terms (matchExpressions)."""
    tasks = (job.get("spec") or {}).get("tasks") or []
    pod = ((tasks[0] if tasks else {}).get("template") or {}).get("spec") or {}
    selector = {str(k): str(v) for k, v in (pod.get("nodeSelector") or {}).items()}
    required = (
        ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms") or []
    return selector, [t for t in required if isinstance(t, dict)]


def _term_matches(term: dict[str, Any], labels: dict[str, str]) -> bool:
    for expr in term.get("matchExpressions") or []:
        key, op, values = (
            str(expr.get("key")),
            str(expr.get("operator")),
            [str(v) for v in expr.get("values") or []],
        )
        have = labels.get(key)
        if op == "In" and have not in values:
            return False
        if op == "NotIn" and have in values:
            return False
        if op == "Exists" and have is None:
            return False
        if op == "DoesNotExist" and have is not None:
            return False
    return True


def never_runs(
    job: dict[str, Any],
    npus_per_pod: int,
    needed: int,
    total_per_node: dict[str, int],
    node_labels: dict[str, dict[str, str]],
) -> str | None:
    """Why the job can never run on this pool whatever else finishes (None: it can, once room frees up):
    no node satisfies its selector or affinity, one pod asks for more NPUs than any node has, or the gang
    needs more such nodes at once than the pool has."""
    selector, terms = _selector(job)
    eligible = [
        node
        for node in total_per_node
        if all(node_labels.get(node, {}).get(k) == v for k, v in selector.items())
        and (not terms or any(_term_matches(t, node_labels.get(node, {})) for t in terms))
    ]
    if total_per_node and not eligible:
        wanted = ", ".join(f"{k}={v}" for k, v in sorted(selector.items())) or "its node affinity"
        return (
            f"can never run: no node matches {wanted}; fix the job's node selector/affinity or label the "
            "nodes it should use"
        )
    sizes = [total_per_node[node] for node in eligible]
    if sizes and max(sizes) < npus_per_pod:
        return (
            f"can never run: each pod requests {npus_per_pod} NPUs and the largest node has {max(sizes)}; "
            f"request at most {max(sizes)} NPUs per pod (more pods instead)"
        )
    big = sum(1 for size in sizes if size >= npus_per_pod)
    if sizes and big < needed:
        return (
            f"can never run: the gang needs {needed} pods of {npus_per_pod} NPUs at once (one per node) and "
            f"the pool has {big} such node(s); use at most {big} nodes or a bigger pool"
        )
    return None


def pending_reason(
    *,
    job: dict[str, Any],
    npus_per_pod: int,
    free_per_node: dict[str, int],
    node_leaf: dict[str, str],
    queue: dict[str, Any] | None,
    queue_jobs: list[dict[str, Any]],
    total_per_node: dict[str, int] | None = None,
    node_labels: dict[str, dict[str, str]] | None = None,
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
    never = (
        never_runs(job, npus_per_pod, needed, total_per_node, node_labels or {})
        if total_per_node is not None
        else None
    )
    if never is not None:
        reason = never
    elif queue_state not in ("Open", "Unknown"):
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
        "never": never is not None,
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
