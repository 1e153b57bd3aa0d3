"""Pod health (CrashLoopBackOff, OOMKilled, ImagePullBackOff, exit codes) and pending reasons."""

from __future__ import annotations

from typing import Any

from ranktable.observe.health import health_text, job_health, pod_health
from ranktable.observe.pending import pending_reason


def pod(
    state: dict[str, Any], last: dict[str, Any] | None = None, restarts: int = 0, ready: bool = False
) -> dict:
    status = {"state": state, "restartCount": restarts, "ready": ready}
    if last:
        status["lastState"] = {"terminated": last}
    return {"status": {"phase": "Running", "containerStatuses": [status]}}


def test_crash_loop_shows_reason_restarts_and_last_exit() -> None:
    health = pod_health(
        pod(
            {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off 20s"}},
            {"reason": "Error", "exitCode": 2},
            3,
        )
    )
    assert (health.state, health.reason, health.last_exit_code, health.restarts) == (
        "waiting",
        "CrashLoopBackOff",
        2,
        3,
    )
    assert health.mark() == "CrashLoopBackOff (exit 2) x3" and not health.ok


def test_oom_killed_image_pull_and_healthy() -> None:
    oom = pod_health(pod({"terminated": {"reason": "OOMKilled", "exitCode": 137}}))
    assert oom.mark() == "OOMKilled (exit 137)"
    pull = pod_health(pod({"waiting": {"reason": "ImagePullBackOff"}}))
    assert pull.mark() == "ImagePullBackOff"
    fine = pod_health(pod({"running": {"startedAt": "x"}}, ready=True))
    assert fine.ok and fine.mark() == "" and fine.ready
    health = job_health(
        [pod({"running": {}}, ready=True), pod({"terminated": {"reason": "OOMKilled", "exitCode": 137}})]
    )
    assert health == {
        "restarts": 0,
        "reasons": ["OOMKilled"],
        "exit_code": 137,
        "ready": 1,
        "total": 2,
        "failing": "OOMKilled, exit code 137",
    }
    assert health_text(health) == "OOMKilled, exit 137"


def job(name: str, created: str, phase: str = "Pending", queue: str = "default", nodes: int = 4) -> dict:
    return {
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": {"minAvailable": nodes, "queue": queue, "tasks": [{"replicas": nodes}]},
        "status": {"state": {"phase": phase}},
    }


def test_gang_not_satisfiable_counts_nodes_per_leaf() -> None:
    free = {"n1": 8, "n2": 8, "n3": 4, "n4": 0, "n5": 8}
    leaves = {"n1": "leaf-a", "n2": "leaf-a", "n3": "leaf-b", "n4": "leaf-b", "n5": "leaf-b"}
    me = job("big", "2026-01-01T00:00:02Z")
    result = pending_reason(
        job=me,
        npus_per_pod=8,
        free_per_node=free,
        node_leaf=leaves,
        queue={"status": {"state": "Open"}},
        queue_jobs=[job("old", "2026-01-01T00:00:01Z"), me],
    )
    assert result["satisfiable"] is False and result["nodes_fit"] == 3
    assert result["fit_per_leaf"] == {"leaf-a": 2, "leaf-b": 1}
    assert result["free_npus_per_leaf"] == {"leaf-a": 16, "leaf-b": 12}
    assert result["reason"].startswith("gang not satisfiable: needs 4 pod(s) x 8 NPUs at once")
    assert result["queue"] == {
        "name": "default",
        "state": "Open",
        "position": 2,
        "pending_jobs": 2,
        "ahead": ["old"],
    }


def test_queue_position_and_closed_queue() -> None:
    free = {f"n{i}": 8 for i in range(8)}
    me = job("second", "2026-01-01T00:00:05Z")
    others = [job("first", "2026-01-01T00:00:01Z"), job("running", "2026-01-01T00:00:00Z", "Running"), me]
    result = pending_reason(
        job=me,
        npus_per_pod=8,
        free_per_node=free,
        node_leaf={},
        queue={"status": {"state": "Open"}},
        queue_jobs=others,
    )
    assert result["reason"] == "waiting in queue default: position 2 of 2 pending job(s)"
    closed = pending_reason(
        job=me,
        npus_per_pod=8,
        free_per_node=free,
        node_leaf={},
        queue={"status": {"state": "Closed"}},
        queue_jobs=others,
    )
    assert closed["reason"].startswith("queue default is Closed")
