"""Training that survives a fault without a person (#29): a 16-node job on the simulated pool loses an NPU
at a random step; the auto-resume policy diagnoses it on the right node and NPU, resumes the job from the
last checkpoint on healthy nodes, and the lineage shows no step trained twice beyond the checkpoint
interval."""

from __future__ import annotations

import random
import shutil
import tempfile
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ranktable.compose.manifests import compose
from ranktable.compose.spec import EntryPoint, JobSpec
from ranktable.usecases.jobs import ClusterSettings, Jobs
from ranktable.usecases.recovery import AUTO_RESUMES_LABEL, AutoResume, Decision
from ranktable.usecases.resume import RESUMED_BY_LABEL, RESUMED_FROM_LABEL
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.sim_helpers import eventually
from tests.integration.test_resume import TRAIN, pods_running, resumable_training
from tests.integration.test_sim_faults import _core, ranktable

NODES = 16
SAVE_EVERY = 10


def test_a_16_node_job_resumes_by_itself_after_an_npu_fault(
    sim_pool_factory: Callable[..., SimPoolHandle], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    print(f"seed {seed}")  # shown when the test fails
    pool = sim_pool_factory(nodes=NODES + 1, leaves=2, ranktable_delay=0.2, backoff_seconds=0.5)
    state = str(tmp_path / "state")
    settings = ClusterSettings(
        kubeconfig=str(pool.kubeconfig), context=pool.context, state_dir=state, keep_logs_s=10.0
    )
    jobs = Jobs(settings)
    saves = Path(tempfile.mkdtemp(prefix="ranktable-ckpt-"))  # shared storage the unprivileged pods write
    saves.chmod(0o777)
    request.addfinalizer(lambda: shutil.rmtree(saves, ignore_errors=True))
    spec = resumable_training("big", saves, SAVE_EVERY, NODES, 1)
    first = jobs.client().submit(compose(spec)).to_json()
    core = _core(pool)
    pods = eventually(lambda: pods_running(core, "big", NODES), timeout=120, what="16 pods running")

    decisions: list[Decision] = []
    policy = AutoResume(jobs, budget=2, notify=decisions.append, poll_s=0.3, hang_check_s=1e9).start()
    request.addfinalizer(policy.stop)

    victim = rng.choice(pods[1:])  # not rank 0's pod: the failing rank is not the one saving
    node = victim.spec.node_name
    device = int(victim.metadata.annotations["huawei.com/AscendReal"].split(",")[0].rsplit("-", 1)[1])
    at_step = rng.randint(15, 45)
    injected = ranktable(
        pool, "fault", node, "--npu", str(device), "--at-step", str(at_step), "--timeout", "90"
    )
    assert injected.returncode == 0, injected.stderr

    def acted() -> Decision | None:
        return decisions[0] if decisions else None

    decision = eventually(acted, timeout=120, what="the policy to act on the failed run")
    assert decision.action == "resumed", decision.message
    assert decision.run == first["uid"] and decision.result is not None
    fault = decision.result["fault"]
    assert fault["node"] == node and str(fault["device"]) == str(device), fault  # the right node and NPU
    assert fault["code"] and fault["step"] is not None
    saved = int((saves / "latest_checkpointed_iteration.txt").read_text())
    checkpoint = decision.result["checkpoint"]
    assert checkpoint["step"] >= SAVE_EVERY and checkpoint["path"] == str(saves)
    assert decision.result["avoided"] == [node]

    job = jobs.client().get_job("big")
    labels = job["metadata"]["labels"]
    assert job["metadata"]["uid"] != first["uid"]
    assert labels[RESUMED_FROM_LABEL] == first["uid"] and labels[RESUMED_BY_LABEL] == "auto"
    assert labels[AUTO_RESUMES_LABEL] == "1"
    again = eventually(lambda: pods_running(core, "big", NODES), timeout=120, what="the resumed run's pods")
    assert node not in {p.spec.node_name for p in again}  # healthy nodes only

    def trained_on() -> dict | None:  # type: ignore[type-arg]
        found = jobs.lineage(None, "big")
        runs = found["runs"]
        return found if len(runs) == 2 and (runs[1]["last_step"] or 0) >= checkpoint["step"] + 3 else None

    lineage = eventually(trained_on, timeout=90, what="the resumed run's first steps in its lineage")
    print(lineage["text"], lineage["faults"])
    run1, run2 = lineage["runs"]
    assert run1["uid"] == first["uid"] and run2["resumed_by"] == "auto"
    assert run2["from_step"] == checkpoint["step"] and run2["first_step"] == checkpoint["step"] + 1
    (cost,) = lineage["faults"]
    assert cost["node"] == node and str(cost["device"]) == str(device)
    assert cost["at_step"] == fault["step"]
    # no step trained twice beyond the checkpoint interval
    assert 0 <= cost["replayed_steps"] <= SAVE_EVERY, cost
    assert cost["detection_s"] is not None and cost["restart_s"] is not None
    assert f"fault on {node} NPU {device}" in lineage["text"]
    assert saved >= checkpoint["step"]  # the resumed run went on saving (or has not yet)
    policy.stop()
    jobs.stop(None, "big", keep_logs_s=0)


def test_a_failure_that_is_not_the_hardwares_is_not_resumed(
    sim_pool_factory: Callable[..., SimPoolHandle], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    pool = sim_pool_factory(nodes=2, leaves=1, ranktable_delay=0.2, backoff_seconds=0.5)
    jobs = Jobs(
        ClusterSettings(kubeconfig=str(pool.kubeconfig), context=pool.context, state_dir=str(tmp_path))
    )
    # rank 1 fails with an HCCL timeout (EI0006): a software-class failure, no node to blame
    args = ["--steps", "100000", "--interval", "0.1", "--fail-rank", "1", "--fail-rank-at", "5"]
    spec = JobSpec(
        name="sw", image="i", nodes=2, npus_per_node=1, on_fault="resume", entry=EntryPoint(TRAIN, args)
    )
    first = jobs.client().submit(compose(spec)).to_json()
    decisions: list[Decision] = []
    policy = AutoResume(jobs, notify=decisions.append, poll_s=0.3, hang_check_s=1e9).start()
    request.addfinalizer(policy.stop)
    decision = eventually(lambda: decisions[0] if decisions else None, timeout=90, what="a decision")
    assert decision.action == "skipped" and "not resumed" in decision.message, decision.message
    assert "not a hardware fault" in decision.message
    assert jobs.client().get_job("sw")["metadata"]["uid"] == first["uid"]  # nothing was resubmitted


def test_a_hung_rank_is_resumed_off_its_node(
    sim_pool_factory: Callable[..., SimPoolHandle],
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Also: with the job list's watches at hand (the server's `watched`), the polls list no pods."""
    from ranktable.cluster.client import ClusterClient
    from ranktable.observe import ObserveSettings
    from ranktable.usecases.observe import LiveRuns

    pool = sim_pool_factory(nodes=3, leaves=1, ranktable_delay=0.2, backoff_seconds=0.5)
    state = str(tmp_path / "state")
    jobs = Jobs(ClusterSettings(kubeconfig=str(pool.kubeconfig), context=pool.context, state_dir=state))
    saves = Path(tempfile.mkdtemp(prefix="ranktable-ckpt-"))
    saves.chmod(0o777)
    request.addfinalizer(lambda: shutil.rmtree(saves, ignore_errors=True))
    # rank 1 stops printing at step 15 and stays alive: a hung collective
    args = ["--steps", "100000", "--interval", "0.1", "--save", str(saves), "--save-interval", "5",
            "--hang-rank", "1", "--hang-at", "15"]  # fmt: skip
    spec = JobSpec(name="hang", image="i", nodes=2, npus_per_node=1, entry=EntryPoint(TRAIN, args))
    first = jobs.client().submit(compose(spec)).to_json()
    core = _core(pool)
    pods = eventually(lambda: pods_running(core, "hang", 2), timeout=60, what="2 pods running")
    hung_node = pods[1].spec.node_name
    live = LiveRuns(state, ObserveSettings(hang_floor_s=3.0, hang_factor=5.0))
    request.addfinalizer(live.close)
    decisions: list[Decision] = []
    watch = jobs.client()
    real_job_pods = ClusterClient.job_pods
    watched_calls: list[str] = []

    def watched(namespace: str, name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        watched_calls.append(name)  # as the server's job table answers: the job and its pods, no list call
        return watch.get_job(name), real_job_pods(watch, name)

    listed: list[str] = []  # the polls' own pod lists (a new follower and the resume list pods once each)

    def job_pods(self: ClusterClient, name: str) -> list[dict[str, Any]]:
        if traceback.extract_stack()[-2].name == "_observation":  # called by the poll itself
            listed.append(name)
        return real_job_pods(self, name)

    monkeypatch.setattr(ClusterClient, "job_pods", job_pods)
    policy = AutoResume(
        jobs, notify=decisions.append, live=live, poll_s=0.3, hang_check_s=1.0, watched=watched
    ).start()
    request.addfinalizer(policy.stop)
    decision = eventually(lambda: decisions[0] if decisions else None, timeout=90, what="the hang's decision")
    assert watched_calls and not listed, (len(watched_calls), listed)
    monkeypatch.undo()
    assert decision.action == "resumed" and decision.run == first["uid"], decision.message
    assert "hung" in decision.message and decision.result is not None
    assert decision.result["avoided"] == [hung_node] and decision.result["fault"]["code"] == "HANG"
    policy.stop()
    job = jobs.client().get_job("hang")
    assert job["metadata"]["uid"] != first["uid"]
    jobs.stop(None, "hang", keep_logs_s=0)
