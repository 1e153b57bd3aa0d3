"""Volcano's job controller: PodGroup, pods `<job>-<task>-<i>`, job phases, lifecycle policies, retries.

Phases follow Volcano: Pending -> Running (minAvailable pods running) -> Completed / Failed; a policy
`PodEvicted -> RestartJob` (a pod deleted or evicted under a running job) kills every pod, bumps
`retryCount` and the job version, and starts again, until `maxRetry` is used up (then Failed).
"""

from __future__ import annotations

import contextlib
import copy
import threading
from datetime import datetime, timezone
from typing import Any

from ranktable.sim.controllers import ssh_plugin, svc_plugin
from ranktable.sim.controllers.common import (
    GROUP_NAME,
    JOB_NAME,
    JOB_VERSION,
    PARTITION_ID,
    TASK_INDEX,
    TASK_SPEC,
    Obj,
    owner_reference,
    record_event,
)
from ranktable.sim.controllers.kubelet import Kubelet
from ranktable.sim.k8s import errors
from ranktable.sim.k8s.resources import JOBS, PODGROUPS, PODS
from ranktable.sim.k8s.store import Event, Store, now_rfc3339

FINISHED = ("Completed", "Failed", "Aborted", "Terminated")
WINDING_DOWN = {"Aborting": "Aborted", "Terminating": "Terminated", "Completing": "Completed"}


def podgroup_name(job: Obj) -> str:
    return f"{job['metadata']['name']}-{job['metadata']['uid']}"


def job_phase(job: Obj) -> str:
    return ((job.get("status") or {}).get("state") or {}).get("phase") or ""


class JobController:
    def __init__(self, store: Store, kubelet: Kubelet) -> None:
        self.store = store
        self.kubelet = kubelet
        self._lock = threading.Lock()
        self._own_deletes: set[str] = set()
        self._evicted: set[str] = set()  # uids of jobs that lost a pod they did not delete
        self._handled: set[str] = set()
        store.subscribe(self._on_event)

    def _on_event(self, event: Event) -> None:
        if event.resource != "pods" or event.type != "DELETED":
            return
        meta = event.obj["metadata"]
        with self._lock:
            if meta["uid"] in self._own_deletes:
                self._own_deletes.discard(meta["uid"])
                return
            for owner in meta.get("ownerReferences") or []:
                if owner.get("kind") == "Job" and owner.get("controller"):
                    self._evicted.add(owner.get("uid", ""))

    def _delete_pod(self, pod: Obj) -> None:
        with self._lock:
            self._own_deletes.add(pod["metadata"]["uid"])
        self.kubelet.delete_pod(pod["metadata"]["namespace"], pod["metadata"]["name"])

    # -- the pass -----------------------------------------------------------------------------------------
    def sync(self) -> list[tuple[Obj, list[Obj]]]:
        """Reconcile every job; returns each job with its pods for the plugins that follow."""
        jobs, _ = self.store.list(JOBS)
        pods, _ = self.store.list(PODS)
        out = []
        for job in jobs:
            mine = [
                p
                for p in pods
                if (p["metadata"].get("labels") or {}).get(JOB_NAME) == job["metadata"]["name"]
                and p["metadata"]["namespace"] == job["metadata"]["namespace"]
                and any(
                    o.get("uid") == job["metadata"]["uid"] for o in p["metadata"].get("ownerReferences") or []
                )
            ]
            if self._expire(job):
                continue
            try:
                job = self._sync_job(job, mine)
            except Exception as exc:  # one broken job must not stop the pool
                record_event(self.store, job, "SyncFailed", f"sim job controller: {exc}", "Warning")
            out.append((job, mine))
        return out

    def _sync_job(self, job: Obj, pods: list[Obj]) -> Obj:
        spec = job["spec"]
        status = copy.deepcopy(job.get("status") or {})
        if not status.get("state"):
            status = {
                "state": {"phase": "Pending", "lastTransitionTime": now_rfc3339()},
                "minAvailable": int(spec.get("minAvailable", 0)),
                "retryCount": 0,
                "version": 0,
            }
        self._ensure_podgroup(job)
        if "svc" in (spec.get("plugins") or {}):
            svc_plugin.ensure_objects(self.store, job)
        if "ssh" in (spec.get("plugins") or {}):
            ssh_plugin.ensure_secret(self.store, job)
        phase = status["state"]["phase"]
        key = job["metadata"]["uid"]
        with self._lock:
            evicted = key in self._evicted
            self._evicted.discard(key)
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        if phase in ("Pending", "Running"):
            events = ["PodEvicted"] if evicted else []
            for p in live:
                if (p.get("status") or {}).get("phase") == "Failed" and p["metadata"][
                    "uid"
                ] not in self._handled:
                    self._handled.add(p["metadata"]["uid"])
                    events.append("PodFailed")
            events += self._completed_tasks(job, live)
            for event in events:
                action = self._action(job, event)
                if action:
                    phase = self._apply_action(job, status, action, event, live)
                    break
        if phase == "Restarting":
            for p in live:
                self._delete_pod(p)
            if not pods:
                status["version"] = int(status.get("version", 0)) + 1
                phase = self._transition(status, "Pending", "Restarted", "all pods stopped; starting again")
        elif phase in WINDING_DOWN:
            active = [p for p in live if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]
            for p in active:
                self._delete_pod(p)
            if not [p for p in pods if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")]:
                phase = self._transition(status, WINDING_DOWN[phase], "", "")
        if phase in ("Pending", "Running"):
            self._create_missing(job, status, {p["metadata"]["name"] for p in pods}, live)
        counts = self._count(live)
        status.update(counts)
        status["minAvailable"] = int(spec.get("minAvailable", 0))
        total = sum(int(t.get("replicas", 1)) for t in spec.get("tasks") or [])
        min_available = int(spec.get("minAvailable", 0))
        if phase == "Pending" and counts["running"] + counts["succeeded"] >= max(min_available, 1):
            phase = self._transition(status, "Running", "", "")
        if (
            phase in ("Pending", "Running")
            and len(live) >= total
            and counts["pending"] == 0
            and counts["running"] == 0
            and total > 0
        ):
            min_success = spec.get("minSuccess")
            ok = counts["succeeded"] >= (int(min_success) if min_success else max(min_available, 1))
            phase = self._transition(status, "Completed" if ok else "Failed", "", "")
        if job.get("status") != status:
            job["status"] = status
            job = self.store.write(JOBS, job)
        self._update_podgroup(job, counts, phase)
        return job

    def _completed_tasks(self, job: Obj, live: list[Obj]) -> list[str]:
        """`TaskCompleted` once per task whose pods have all succeeded (e.g. a launcher task)."""
        out = []
        for task in job["spec"].get("tasks") or []:
            key = f"{job['metadata']['uid']}/{task['name']}"
            mine = [p for p in live if (p["metadata"].get("labels") or {}).get(TASK_SPEC) == task["name"]]
            done = len(mine) == int(task.get("replicas", 1)) and all(
                (p.get("status") or {}).get("phase") == "Succeeded" for p in mine
            )
            if done and mine and key not in self._handled:
                self._handled.add(key)
                out.append("TaskCompleted")
        return out

    def _expire(self, job: Obj) -> bool:
        """`ttlSecondsAfterFinished`: delete a finished job once its time is up."""
        ttl = job["spec"].get("ttlSecondsAfterFinished")
        state = (job.get("status") or {}).get("state") or {}
        if ttl is None or state.get("phase") not in FINISHED or not state.get("lastTransitionTime"):
            return False
        finished = datetime.strptime(state["lastTransitionTime"], "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=timezone.utc
        )
        if (datetime.now(timezone.utc) - finished).total_seconds() < int(ttl):
            return False
        with contextlib.suppress(errors.ApiError):
            self.store.delete(
                JOBS, job["metadata"]["namespace"], job["metadata"]["name"], uid=job["metadata"]["uid"]
            )
        return True

    @staticmethod
    def _transition(status: Obj, phase: str, reason: str, message: str) -> str:
        if status["state"].get("phase") != phase:
            status["state"] = {
                "phase": phase,
                "reason": reason,
                "message": message,
                "lastTransitionTime": now_rfc3339(),
            }
            status.setdefault("conditions", []).append({"status": phase, "lastTransitionTime": now_rfc3339()})
            status["conditions"] = status["conditions"][-10:]
        return phase

    @staticmethod
    def _action(job: Obj, event: str) -> str | None:
        policies = list(job["spec"].get("policies") or [])
        for task in job["spec"].get("tasks") or []:
            policies += task.get("policies") or []
        for policy in policies:
            names = [policy.get("event"), *list(policy.get("events") or [])]
            if event in names or "*" in names:
                return str(policy.get("action") or "")
        return None

    def _apply_action(self, job: Obj, status: Obj, action: str, event: str, live: list[Obj]) -> str:
        phase = status["state"]["phase"]
        if action == "RestartJob":
            retries = int(status.get("retryCount", 0))
            if retries >= int(job["spec"].get("maxRetry", 3)):
                for p in live:
                    self._delete_pod(p)
                record_event(
                    self.store, job, "MaxRetryExceeded", f"job reached maxRetry after {event}", "Warning"
                )
                return self._transition(status, "Failed", "MaxRetryExceeded", f"{event}: retry limit reached")
            status["retryCount"] = retries + 1
            record_event(
                self.store, job, "RestartJob", f"{event}: restarting job (retry {retries + 1})", "Warning"
            )
            return self._transition(status, "Restarting", event, f"{event} -> RestartJob")
        if action == "AbortJob":
            return self._transition(status, "Aborting", event, f"{event} -> AbortJob")
        if action == "TerminateJob":
            return self._transition(status, "Terminating", event, f"{event} -> TerminateJob")
        if action == "CompleteJob":
            return self._transition(status, "Completing", event, f"{event} -> CompleteJob")
        if action in ("RestartTask", "RestartPod"):
            for p in live:
                if (p.get("status") or {}).get("phase") == "Failed":
                    self._delete_pod(p)
        return phase

    @staticmethod
    def _count(pods: list[Obj]) -> dict[str, Any]:
        counts = {"pending": 0, "running": 0, "succeeded": 0, "failed": 0, "terminating": 0, "unknown": 0}
        per_task: dict[str, dict[str, dict[str, int]]] = {}
        for p in pods:
            phase = (p.get("status") or {}).get("phase") or "Pending"
            counts[phase.lower() if phase.lower() in counts else "unknown"] += 1
            task = (p["metadata"].get("labels") or {}).get(TASK_SPEC, "")
            bucket = per_task.setdefault(task, {"phase": {}})["phase"]
            bucket[phase] = bucket.get(phase, 0) + 1
        return {**counts, "taskStatusCount": per_task}

    def _ensure_podgroup(self, job: Obj) -> None:
        name = podgroup_name(job)
        ns = job["metadata"]["namespace"]
        if self.store.find(PODGROUPS, ns, name) is not None:
            return
        self.store.create(
            PODGROUPS,
            {
                "metadata": {
                    "name": name,
                    "namespace": ns,
                    "ownerReferences": [owner_reference(job)],
                    "annotations": {JOB_NAME: job["metadata"]["name"]},
                },
                "spec": {
                    "minMember": int(job["spec"].get("minAvailable", 0)),
                    "queue": job["spec"].get("queue", "default"),
                    "minTaskMember": {
                        t["name"]: int(t.get("minAvailable", t.get("replicas", 1)))
                        for t in job["spec"].get("tasks") or []
                    },
                    "priorityClassName": job["spec"].get("priorityClassName", ""),
                    **subgroup_policy(job["spec"].get("tasks") or []),
                    **(
                        {"networkTopology": job["spec"]["networkTopology"]}
                        if job["spec"].get("networkTopology")
                        else {}
                    ),
                },
                "status": {"phase": "Pending"},
            },
        )

    def _update_podgroup(self, job: Obj, counts: dict[str, Any], phase: str) -> None:
        def update(pg: Obj) -> None:
            status = pg.setdefault("status", {})
            status["running"], status["succeeded"], status["failed"] = (
                counts["running"],
                counts["succeeded"],
                counts["failed"],
            )
            if phase in FINISHED:
                status["phase"] = "Completed"
            elif counts["running"] >= int(pg["spec"].get("minMember", 1)) and counts["running"] > 0:
                status["phase"] = "Running"
            elif phase == "Restarting" or (status.get("phase") == "Running" and counts["running"] == 0):
                status["phase"] = "Pending"

        self.store.mutate(PODGROUPS, job["metadata"]["namespace"], podgroup_name(job), update)

    @staticmethod
    def _task_ready(job: Obj, task_name: str, pods: list[Obj]) -> bool:
        """Volcano's `isDependsOnPodsReady`: at least minAvailable pods of the task run ready or succeeded."""
        task = next((t for t in job["spec"].get("tasks") or [] if t.get("name") == task_name), None)
        if task is None:
            return True
        ready = 0
        for p in pods:
            if (p["metadata"].get("labels") or {}).get(TASK_SPEC) != task_name:
                continue
            status = p.get("status") or {}
            if status.get("phase") == "Succeeded" or (
                status.get("phase") == "Running"
                and all(c.get("ready") for c in status.get("containerStatuses") or [{}])
            ):
                ready += 1
        return ready >= int(task.get("minAvailable", task.get("replicas", 1)))

    def _dependencies_met(self, job: Obj, task: Obj, pods: list[Obj]) -> bool:
        """`dependsOn`: a task's pods are created once the tasks it names are ready (all, or any)."""
        depends = task.get("dependsOn") or {}
        names = list(depends.get("name") or [])
        if not names:
            return True
        ready = [self._task_ready(job, name, pods) for name in names]
        return any(ready) if len(names) > 1 and depends.get("iteration") == "any" else all(ready)

    def _create_missing(self, job: Obj, status: Obj, existing: set[str], pods: list[Obj]) -> None:
        meta = job["metadata"]
        for task in job["spec"].get("tasks") or []:
            if not self._dependencies_met(job, task, pods):
                continue
            for index in range(int(task.get("replicas", 1))):
                name = f"{meta['name']}-{task['name']}-{index}"
                if name in existing:
                    continue
                pod = self._pod(job, task, index, status)
                if len(name) > 63 and "svc" in (job["spec"].get("plugins") or {}):
                    record_event(
                        self.store,
                        job,
                        "FailedCreate",
                        f'pod "{name}": spec.hostname: must be no more than 63 characters',
                        "Warning",
                    )
                    continue
                self.store.create(PODS, pod)

    def _pod(self, job: Obj, task: Obj, index: int, status: Obj) -> Obj:
        meta = job["metadata"]
        template = copy.deepcopy(task.get("template") or {})
        tmeta = template.get("metadata") or {}
        name = f"{meta['name']}-{task['name']}-{index}"
        queue = job["spec"].get("queue", "default")
        volcano = {
            JOB_NAME: meta["name"],
            TASK_SPEC: task["name"],
            TASK_INDEX: str(index),
            "volcano.sh/job-namespace": meta["namespace"],
            "volcano.sh/queue-name": queue,
        }
        labels = {**(tmeta.get("labels") or {}), **volcano}
        size = (task.get("partitionPolicy") or {}).get("partitionSize")
        if task.get("partitionPolicy") is not None:  # Volcano: index / partitionSize (0 if not positive)
            labels[PARTITION_ID] = str(index // size if isinstance(size, int) and size > 0 else 0)
        annotations = {
            **(tmeta.get("annotations") or {}),
            **volcano,
            GROUP_NAME: podgroup_name(job),
            JOB_VERSION: str(status.get("version", 0)),
            "volcano.sh/template-uid": f"{meta['name']}-{task['name']}",
            "volcano.sh/job-retry-count": str(status.get("retryCount", 0)),
        }
        spec = template.get("spec") or {}
        spec["schedulerName"] = job["spec"].get("schedulerName") or "volcano"
        spec.setdefault("restartPolicy", "Always")
        spec.setdefault("terminationGracePeriodSeconds", 30)
        pod = {
            "metadata": {
                "name": name,
                "namespace": meta["namespace"],
                "labels": labels,
                "annotations": annotations,
                "ownerReferences": [owner_reference(job)],
            },
            "spec": spec,
            "status": {"phase": "Pending"},
        }
        svc_plugin.decorate_pod(job, pod, task["name"], index)
        return pod


def subgroup_policy(tasks: list[Obj]) -> Obj:
    """The PodGroup's `subGroupPolicy`, one per task with a `partitionPolicy`, as Volcano's job controller
    writes it: the task's pods, grouped by their partition id, each group under the partition's
    networkTopology."""
    policies = []
    for task in tasks:
        partitions = task.get("partitionPolicy")
        if not isinstance(partitions, dict):
            continue
        policy: Obj = {
            "name": task.get("name", ""),
            "subGroupSize": partitions.get("partitionSize"),
            "minSubGroups": partitions.get("minPartitions", 0),
            "labelSelector": {"matchLabels": {TASK_SPEC: task.get("name", "")}},
            "matchLabelKeys": [PARTITION_ID],
        }
        if partitions.get("networkTopology"):
            policy["networkTopology"] = partitions["networkTopology"]
        policies.append(policy)
    return {"subGroupPolicy": policies} if policies else {}
