"""Diagnosis through the `ranktable` CLI on both planes (#25): a pod that restarts twice keeps its first
error, and jobs that can never run are named as such (a selector no node matches, a pod bigger than any
node, a gang bigger than the pool)."""

from __future__ import annotations

import contextlib
import copy
import json
import signal
import subprocess
import sys
import time
import uuid
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.conformance.planes import Plane, conform, wait_until
from tests.integration.sim_helpers import volcano_job
from tests.interrupt import interruptible

NS = "default"
GROUP, VERSION = "batch.volcano.sh", "v1alpha1"
# pod 1 runs out of NPU memory in its first container (10 s in: the follower has started by then), then
# restarts twice; its later containers and pod 0 print what victims print, later
RESTARTS = """
case "$HOSTNAME" in
*-1)
  n=$(cat runs 2>/dev/null || echo 0); n=$((n + 1)); echo $n > runs
  echo "step 1 loss 2.5 container $n"
  if [ $n -eq 1 ]; then
    sleep 10; echo "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB"; sleep 2; exit 1
  fi
  sleep 0.5; echo "EI0006: Getting socket times out. Reason: Remote Rank did not send the data in time"
  if [ $n -lt 3 ]; then sleep 1; exit 1; fi
  sleep 120 ;;
*)
  echo "step 1 loss 2.5"; sleep 16
  echo "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE)"
  sleep 120 ;;
esac
"""


def _job(name: str, script: str, replicas: int, npus: int, restart: str = "Never") -> dict[str, Any]:
    job = volcano_job(name, replicas, ["sh", "-c", script], npus=npus, plugins={"svc": []}, restart=restart)
    job["metadata"]["namespace"] = NS
    return job


def _create(plane: Plane, job: dict[str, Any]) -> None:
    client.CustomObjectsApi(plane.api()).create_namespaced_custom_object(GROUP, VERSION, NS, "jobs", job)


def _delete(plane: Plane, name: str) -> None:
    with contextlib.suppress(ApiException):
        client.CustomObjectsApi(plane.api()).delete_namespaced_custom_object(GROUP, VERSION, NS, "jobs", name)


def _pods(plane: Plane, name: str) -> list[Any]:
    pods = client.CoreV1Api(plane.api()).list_namespaced_pod(NS, label_selector=f"volcano.sh/job-name={name}")
    return list(pods.items)


def _restarts(pod: Any) -> int:
    return sum(s.restart_count for s in (pod.status.container_statuses or []))


def _diagnose(plane: Plane, name: str, *extra: str) -> dict[str, Any]:
    done = plane.ranktable("job", "diagnose", name, "--json", *extra)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_first_failing_pod_restarting_twice_is_named_with_its_first_error(plane: Plane) -> None:
    """`job logs -f` archives each container as it runs (the kubelet keeps only the previous one), so
    `job diagnose` after two restarts names pod 1's out-of-memory error, before every victim's error."""
    name = f"restart-{uuid.uuid4().hex[:5]}"
    state = plane.home / f"state-{name}"

    def scenario() -> None:
        _create(plane, _job(name, RESTARTS, replicas=2, npus=1, restart="OnFailure"))
        wait_until("the job's pods", lambda: len(_pods(plane, name)) == 2, timeout=120)
        follow = subprocess.Popen(
            [sys.executable, "-m", "ranktable", "job", "logs", name, "-f", "--state-dir", str(state)],
            env=plane.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            **interruptible(),
        )
        try:

            def restarted_twice() -> bool:
                pods = {p.metadata.name: p for p in _pods(plane, name)}
                first = next((p for n, p in pods.items() if n.endswith("-1")), None)
                return first is not None and _restarts(first) >= 2

            wait_until("pod 1's second restart", restarted_twice, timeout=180)
            time.sleep(3)  # the third container's lines
        finally:
            follow.send_signal(signal.SIGINT)  # the follower writes what it read into the archive
            out, err = follow.communicate(timeout=60)
        assert "out of memory" in out, (out[-2000:], err[-2000:])
        diagnosis = _diagnose(plane, name, "--state-dir", str(state))
        first = diagnosis["first_failure"]
        assert first["pod"].endswith("-1") and first["code"] == "DEVICE_OOM", first
        others = [e for e in diagnosis["errors"] if e["pod"] != first["pod"]]
        assert others and all(e["time"] > first["time"] for e in others), (first, others)

    try:
        conform(plane, "diagnosis-restarted-pod-first-error", scenario)
    finally:
        _delete(plane, name)


def _selector_nobody_has(job: dict[str, Any]) -> dict[str, Any]:
    job = copy.deepcopy(job)
    job["spec"]["tasks"][0]["template"]["spec"]["nodeSelector"] = {"ranktable.test/pool": "nowhere"}
    return job


NEVER = {
    "selector": (lambda n: _selector_nobody_has(_job(n, "sleep 60", 1, 8)), "no node matches"),
    "bigger-pod": (
        lambda n: _job(n, "sleep 60", 1, 16),
        "requests 16 NPUs and the largest node has 8",
    ),
    "bigger-gang": (lambda n: _job(n, "sleep 60", 5, 8), "the gang needs 5 pods of 8 NPUs at once"),
}


@pytest.mark.parametrize("case", sorted(NEVER))
def test_a_job_that_can_never_run_is_named_so(plane: Plane, case: str) -> None:
    make, words = NEVER[case]
    name = f"never-{case}-{uuid.uuid4().hex[:4]}"

    def scenario() -> None:
        _create(plane, make(name))  # real Volcano creates no pod for a gang that cannot be admitted

        def pending() -> dict[str, Any] | None:
            found = _diagnose(plane, name).get("pending") or {}
            return found if str(found.get("reason", "")).startswith("can never run") else None

        found = wait_until("a never-runnable pending reason", pending, timeout=120, every=2)
        assert words in found["reason"], found
        assert not [p.metadata.name for p in _pods(plane, name) if p.spec.node_name]

    try:
        conform(plane, f"diagnosis-never-runnable-{case}", scenario)
    finally:
        _delete(plane, name)
