"""Auto-resume on both control planes (#29): an NPU fault injected through the API (`ranktable sim fault`)
fails the job; the policy diagnoses it on the right node and NPU and resumes the job from the last
checkpoint off that node, and the lineage shows at most one checkpoint interval trained twice."""

from __future__ import annotations

import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

from kubernetes import client

from ranktable.compose.manifests import compose
from ranktable.usecases.jobs import ClusterSettings, Jobs
from ranktable.usecases.recovery import AutoResume, Decision
from tests.conformance.planes import Plane, conform, wait_until
from tests.integration.test_resume import resumable_training

SAVE_EVERY = 5


def _running(core: Any, name: str) -> list[Any] | None:
    pods = core.list_namespaced_pod("default", label_selector=f"volcano.sh/job-name={name}").items
    running = [p for p in pods if p.status.phase == "Running" and p.metadata.annotations]
    return sorted(running, key=lambda p: p.metadata.name) if len(running) == 2 else None


def test_an_npu_fault_is_resumed_without_a_person(plane: Plane) -> None:
    name = f"heal-{uuid.uuid4().hex[:5]}"
    saves = Path(tempfile.mkdtemp(prefix="ranktable-ckpt-"))
    saves.chmod(0o777)
    jobs = Jobs(ClusterSettings(kubeconfig=str(plane.kubeconfig), state_dir=str(plane.home / "state")))
    core = client.CoreV1Api(plane.api())

    def scenario() -> None:
        spec = resumable_training(name, saves, SAVE_EVERY, 2, 8)
        first = jobs.client().submit(compose(spec)).to_json()
        pods = wait_until("both pods running", lambda: _running(core, name), timeout=240)
        decisions: list[Decision] = []
        node = pods[1].spec.node_name
        npu = pods[1].metadata.annotations["huawei.com/AscendReal"].split(",")[0].rsplit("-", 1)[1]
        policy = AutoResume(jobs, notify=decisions.append, poll_s=0.5, hang_check_s=1e9).start()
        try:
            injected = plane.ranktable(
                "sim", "fault", node, "--npu", npu, "--at-step", "12", "--timeout", "120",
                "--state-dir", str(plane.state_dir),
            )  # fmt: skip
            assert injected.returncode == 0, injected.stderr
            decision = wait_until("the policy's decision", lambda: decisions[0] if decisions else None, 180)
            assert decision.action == "resumed" and decision.run == first["uid"], decision.message
            assert decision.result is not None
            fault = decision.result["fault"]
            assert fault["node"] == node and str(fault["device"]) == npu, fault
            # the old run's pods were deleted before the resubmit: two running pods are the new run's
            again = wait_until("the resumed run's pods", lambda: _running(core, name), timeout=240)
            assert node not in {p.spec.node_name for p in again}

            def trained() -> dict[str, Any] | None:
                found = jobs.lineage(None, name)
                runs = found["runs"]
                return found if len(runs) == 2 and (runs[1]["first_step"] or 0) > 0 else None

            lineage = wait_until("the resumed run's first step", trained, timeout=120)
            step = decision.result["checkpoint"]["step"]
            print(lineage["text"])  # shown when it fails
            assert lineage["runs"][1]["from_step"] == step and lineage["runs"][1]["first_step"] == step + 1
            assert 0 <= lineage["faults"][0]["replayed_steps"] <= SAVE_EVERY, lineage["faults"]
        finally:
            policy.stop()
            jobs.stop(None, name, keep_logs_s=0)
            plane.ranktable("sim", "repair", node, "--state-dir", str(plane.state_dir))

    try:
        conform(plane, "recovery-auto-resume", scenario)
    finally:
        shutil.rmtree(saves, ignore_errors=True)
