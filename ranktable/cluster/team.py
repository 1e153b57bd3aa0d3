"""The team's view of a shared pool: every job (who owns it, what is queued) and the free NPUs per leaf
and per queue, read-only and across namespaces, as far as this user may list them."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ranktable.cluster.client import GROUP, PLURAL, VERSION, ClusterClient
from ranktable.cluster.describe import ENDED_PHASES, npu_capacity
from ranktable.cluster.results import JobSummary
from ranktable.compose.manifests import NPU_RESOURCE
from ranktable.errors import PermissionDenied

QUEUES = ("scheduling.volcano.sh", "v1beta1", "queues")


def _pod_npus(pod: dict[str, Any]) -> int:
    total = 0
    for container in (pod.get("spec") or {}).get("containers") or []:
        value = ((container.get("resources") or {}).get("requests") or {}).get(NPU_RESOURCE)
        try:
            total += int(str(value)) if value is not None else 0
        except ValueError:
            continue
    return total


def team_view(client: ClusterClient, me: str | None) -> dict[str, Any]:
    """Every Volcano job the user may list (all namespaces; else only their own namespace's), each with
    its owner, and free NPUs per leaf and per queue; `scope` says which of the two it is."""
    scope, jobs, pods = _list_jobs_and_pods(client)
    pod_items = pods.get("items") or []
    rows, queue_used, queue_waiting = _job_rows(jobs.get("items") or [], pod_items, me)
    capacity = (
        npu_capacity(client.list_nodes(), pod_items, client.node_leaves()) if scope == "cluster" else None
    )
    free_total = sum(capacity.per_node.values()) if capacity else None
    kube = client.kube
    try:
        listed = kube.call(kube.custom.list_cluster_custom_object, *QUEUES, what="Volcano queues")
    except PermissionDenied:
        listed = {"items": []}
    queues = [_queue_row(queue, queue_used, queue_waiting, free_total) for queue in listed.get("items") or []]
    return {
        "scope": scope,
        "jobs": rows,
        "free_per_leaf": capacity.per_leaf if capacity else None,
        "free_npus": free_total,
        "queues": queues,
    }


def _list_jobs_and_pods(client: ClusterClient) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(scope, Volcano jobs, pods): the whole cluster's when the user may list it, else their namespace's."""
    kube = client.kube
    try:
        jobs = kube.call(kube.custom.list_cluster_custom_object, GROUP, VERSION, PLURAL, what="Volcano jobs")
        pods = kube.call(kube.core.list_pod_for_all_namespaces, what="pods")
        return "cluster", jobs, pods
    except PermissionDenied:
        jobs = kube.call(
            kube.custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            client.namespace,
            PLURAL,
            what=f"Volcano jobs in {client.namespace}",
        )
        pods = kube.call(kube.core.list_namespaced_pod, client.namespace, what=f"pods in {client.namespace}")
        return "namespace", jobs, pods


def _job_rows(
    jobs: list[dict[str, Any]], pods: list[dict[str, Any]], me: str | None
) -> tuple[list[dict[str, Any]], dict[str, int], dict[str, int]]:
    """(a row per job sorted by namespace and name, NPUs used per queue, jobs waiting per queue)."""
    by_job: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for pod in pods:
        meta = pod.get("metadata") or {}
        job_name = (meta.get("labels") or {}).get("volcano.sh/job-name")
        if job_name:
            by_job[(str(meta.get("namespace")), str(job_name))].append(pod)
    rows: list[dict[str, Any]] = []
    queue_used: dict[str, int] = defaultdict(int)
    queue_waiting: dict[str, int] = defaultdict(int)
    for job in jobs:
        meta = job.get("metadata") or {}
        key = (str(meta.get("namespace")), str(meta.get("name")))
        summary = JobSummary.from_job(job, by_job.get(key, []))
        npus = sum(
            _pod_npus(p)
            for p in by_job.get(key, [])
            if (p.get("status") or {}).get("phase") not in ENDED_PHASES
        )
        queue_used[summary.queue] += npus
        if summary.phase in ("Pending", "Inqueue"):
            queue_waiting[summary.queue] += 1
        row = summary.to_json()
        row["npus"] = npus
        row["mine"] = bool(me) and summary.owner == me
        rows.append(row)
    rows.sort(key=lambda r: (r["namespace"], r["name"]))
    return rows, queue_used, queue_waiting


def _queue_row(
    queue: dict[str, Any], used: dict[str, int], waiting: dict[str, int], free_total: int | None
) -> dict[str, Any]:
    """A Volcano queue's line: its state, NPUs used, jobs queued, its NPU capability and what is free."""
    name = str((queue.get("metadata") or {}).get("name"))
    cap = ((queue.get("spec") or {}).get("capability") or {}).get(NPU_RESOURCE)
    limit = int(str(cap)) if cap is not None and str(cap).isdigit() else None
    free = free_total
    if limit is not None:
        free = max(limit - used[name], 0) if free is None else min(free, max(limit - used[name], 0))
    return {
        "name": name,
        "state": str((queue.get("status") or {}).get("state") or ""),
        "used_npus": used[name],
        "queued_jobs": waiting[name],
        "capability_npus": limit,
        "free_npus": free,
    }
