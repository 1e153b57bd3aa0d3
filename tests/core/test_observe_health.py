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

    def reason(state: str) -> str:
        queue = {"status": {"state": state}}
        result = pending_reason(
            job=me, npus_per_pod=8, free_per_node=free, node_leaf={}, queue=queue, queue_jobs=others
        )
        return result["reason"]

    assert reason("Open") == "waiting in queue default: position 2 of 2 pending job(s)"
    assert reason("Closed").startswith("queue default is Closed")


def _pending(me: dict, totals: dict[str, int], labels: dict[str, dict[str, str]] | None = None) -> dict:
    return pending_reason(
        job=me,
        npus_per_pod=8,
        free_per_node=dict(totals),  # an idle pool: everything free, still never runnable
        node_leaf={},
        queue={"status": {"state": "Open"}},
        queue_jobs=[me],
        total_per_node=totals,
        node_labels=labels or {},
    )


def test_a_job_the_pool_can_never_run_is_named_with_the_fix() -> None:
    pool = {f"n{i}": 8 for i in range(4)}
    labels = {n: {"accelerator-type": "module-910b-8"} for n in pool}
    selected = job("sel", "2026-01-01T00:00:01Z")
    selected["spec"]["tasks"] = [
        {"replicas": 2, "template": {"spec": {"nodeSelector": {"accelerator-type": "module-910c-16"}}}}
    ]
    result = _pending(selected, pool, labels)
    assert result["never"] is True
    assert result["reason"].startswith("can never run: no node matches accelerator-type=module-910c-16")
    affinity = job("aff", "2026-01-01T00:00:01Z")
    term = {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["gold"]}]}
    affinity["spec"]["tasks"] = [
        {
            "replicas": 2,
            "template": {
                "spec": {
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
                        }
                    }
                }
            },
        }
    ]
    assert _pending(affinity, pool, labels)["reason"].startswith("can never run: no node matches")
    small = {f"n{i}": 4 for i in range(4)}
    too_big = _pending(job("big-pod", "2026-01-01T00:00:01Z"), small)
    assert too_big["reason"].startswith("can never run: each pod requests 8 NPUs and the largest node has 4")
    gang = _pending(job("gang", "2026-01-01T00:00:01Z", nodes=6), pool)
    assert gang["reason"].startswith("can never run: the gang needs 6 pods of 8 NPUs at once")
    fits = _pending(job("ok", "2026-01-01T00:00:01Z"), pool)
    assert fits["never"] is False and not fits["reason"].startswith("can never run")


def test_a_jobs_volume_mounts_reach_the_missing_script_advice() -> None:
    from ranktable.cluster.observing import volume_mounts

    spec = {
        "tasks": [
            {
                "template": {
                    "spec": {
                        "containers": [
                            {"volumeMounts": [{"mountPath": "/mnt/sfs_turbo"}, {"mountPath": "/user/config"}]}
                        ]
                    }
                }
            }
        ]
    }
    assert volume_mounts({"spec": spec}) == ("/mnt/sfs_turbo", "/user/config")
    assert volume_mounts({}) == ()


def test_the_jobs_own_script_path_decides_relative_or_absolute_advice() -> None:
    from ranktable.cluster.observing import entry_script
    from ranktable.compose.manifests import compose_job
    from ranktable.compose.spec import EntryPoint, JobSpec
    from ranktable.observe import RankLayout, RunObserver

    manifest = compose_job(
        JobSpec(name="rel", image="i", nodes=1, npus_per_node=1, entry=EntryPoint("train.py"))
    )
    assert entry_script(manifest) == "train.py"
    observer = RunObserver(RankLayout.uniform([("p0", 0)], 1))
    observer.script = "train.py"  # Python prints the path it resolved: /work/train.py
    line = "python3: can't open file '/work/train.py': [Errno 2] No such file or directory"
    observer.feed("p0", 0, [("", line)])
    first = observer.diagnose("Failed")["first_failure"]
    assert "'train.py': a relative path is resolved" in first["explanation"]
    assert "(Python looked for /work/train.py)" in first["explanation"]
