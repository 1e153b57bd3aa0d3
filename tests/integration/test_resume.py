"""Resume by hand on the simulated pool (#29.4): a 4-node job saving Megatron-style checkpoints loses an NPU
to an injected fault, stops (on_fault=resume), and `ranktable job resume` starts the next run of its
lineage from the last checkpoint, off the faulty node."""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ranktable.cli import main
from ranktable.compose.manifests import compose
from ranktable.compose.spec import EntryPoint, JobSpec
from ranktable.usecases.jobs import ClusterSettings, Jobs
from ranktable.usecases.resume import LINEAGE_LABEL, RESUMED_FROM_LABEL
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.sim_helpers import eventually
from tests.integration.test_sim_faults import _core, ranktable

TRAIN = str(Path(__file__).resolve().parents[2] / "examples" / "train.py")
STEP = re.compile(r"\brank 0 step (\d+) ")


def resumable_training(name: str, saves: Path, save_every: int, nodes: int, npus_per_node: int) -> JobSpec:
    """examples/train.py on `nodes` x `npus_per_node`, a step each 0.2 s and a checkpoint in `saves` every
    `save_every` steps, resumed on a fault."""
    args = [
        "--steps",
        "100000",
        "--interval",
        "0.2",
        "--save",
        str(saves),
        "--save-interval",
        str(save_every),
    ]
    entry = EntryPoint(TRAIN, args)
    return JobSpec(
        name=name, image="i", nodes=nodes, npus_per_node=npus_per_node, on_fault="resume", entry=entry
    )


def pods_running(core: Any, name: str, count: int) -> list[Any] | None:
    pods = core.list_namespaced_pod("default", label_selector=f"volcano.sh/job-name={name}").items
    running = [p for p in pods if p.status.phase == "Running" and p.metadata.annotations]
    return sorted(running, key=lambda p: p.metadata.name) if len(running) == count else None


def test_resume_starts_from_the_last_checkpoint_off_the_faulty_node(
    sim_pool_factory: Callable[..., SimPoolHandle],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    request: pytest.FixtureRequest,
) -> None:
    pool = sim_pool_factory(nodes=5, leaves=2, ranktable_delay=0.2, backoff_seconds=0.5)
    state = str(tmp_path / "state")
    jobs = Jobs(ClusterSettings(kubeconfig=str(pool.kubeconfig), context=pool.context, state_dir=state))
    saves = Path(tempfile.mkdtemp(prefix="ranktable-ckpt-"))  # shared storage the unprivileged pods write
    saves.chmod(0o777)
    request.addfinalizer(lambda: shutil.rmtree(saves, ignore_errors=True))
    args = ["--steps", "100000", "--interval", "0.1", "--save", str(saves), "--save-interval", "5"]
    spec = JobSpec(
        name="ck", image="i", nodes=4, npus_per_node=1, on_fault="resume", entry=EntryPoint(TRAIN, args)
    )
    first = jobs.client().submit(compose(spec)).to_json()
    core = _core(pool)
    pods = eventually(lambda: pods_running(core, "ck", 4), timeout=60, what="4 pods running")
    # the user follows the run (`job logs -f`, the Job view): its lines reach the archive as they come,
    # so they outlive the pods the abort deletes
    follower = threading.Thread(target=lambda: list(jobs.log_lines(None, "ck", follow=True)), daemon=True)
    follower.start()
    victim = pods[1]  # not rank 0's pod: the failing rank is not the one saving
    node = victim.spec.node_name
    device = int(victim.metadata.annotations["huawei.com/AscendReal"].split(",")[0].rsplit("-", 1)[1])

    injected = ranktable(pool, "fault", node, "--npu", str(device), "--at-step", "12", "--timeout", "60")
    assert injected.returncode == 0

    def ended() -> str | None:
        phase = jobs.client().get_job("ck")["status"]["state"]["phase"]
        return phase if phase in ("Aborted", "Failed") else None

    eventually(ended, timeout=60, what="the job to stop on the failed pod")
    saved = int((saves / "latest_checkpointed_iteration.txt").read_text())
    assert saved >= 5  # at least one save before the fault (rank 0 may lag the faulted rank)

    assert main(["job", "resume", "ck", "--state-dir", state, "--kubeconfig", str(pool.kubeconfig),
                 "--context", pool.context]) == 0  # fmt: skip
    said = capsys.readouterr().out.strip()
    assert said.startswith(f"resumed ck from checkpoint step {saved} ({saves})"), said
    assert f"excluding {node}" in said

    job = jobs.client().get_job("ck")
    labels = job["metadata"]["labels"]
    assert job["metadata"]["uid"] != first["uid"]
    assert labels[LINEAGE_LABEL] == labels[RESUMED_FROM_LABEL] == first["uid"]
    again = eventually(lambda: pods_running(core, "ck", 4), timeout=60, what="the resumed run's pods")
    assert node not in {p.spec.node_name for p in again}
    command = " ".join(again[0].spec.containers[0].command or [])
    assert f"--load {saves}" in command

    def first_lines() -> list[str] | None:
        log = core.read_namespaced_pod_log(again[0].metadata.name, "default")
        lines = log.splitlines()
        return lines if any(STEP.search(line) for line in lines) else None

    lines = eventually(first_lines, timeout=30, what="rank 0's first step")
    assert f"loading checkpoint from {saves} at iteration {saved}" in "\n".join(lines)
    first_step = next(int(m.group(1)) for line in lines if (m := STEP.search(line)))
    assert saved < first_step <= saved + 1

    # the lineage, as the CLI tells it: run 1 -> the fault on that node -> run 2 from the checkpoint
    def told() -> str | None:
        assert main(["job", "lineage", "ck", "--state-dir", state, "--kubeconfig", str(pool.kubeconfig),
                     "--context", pool.context]) == 0  # fmt: skip
        out = capsys.readouterr().out
        return out if "run 2" in out and "steps" in out.split("run 2", 1)[1].split("\n", 1)[0] else None

    out = eventually(told, timeout=30, what="the lineage with the resumed run's steps")
    assert (
        f"fault on {node} NPU {device}" in out
        and f"run 2 ({job['metadata']['uid'][:8]}) from checkpoint" in out
    )
    assert "detected in" in out and "step(s) replayed" in out
    jobs.stop(None, "ck")


def test_resume_without_a_checkpoint_needs_from_scratch(
    sim_pool_factory: Callable[..., SimPoolHandle], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = sim_pool_factory(nodes=2, leaves=1, ranktable_delay=0.2)
    state = str(tmp_path / "state")
    jobs = Jobs(ClusterSettings(kubeconfig=str(pool.kubeconfig), context=pool.context, state_dir=state))
    spec = JobSpec(
        name="nock",
        image="i",
        nodes=1,
        npus_per_node=1,
        entry=EntryPoint(TRAIN, ["--steps", "2", "--interval", "0"]),
    )
    first = jobs.client().submit(compose(spec)).to_json()
    eventually(
        lambda: jobs.client().get_job("nock")["status"]["state"]["phase"] == "Completed",
        timeout=60,
        what="done",
    )
    flags = ["--state-dir", state, "--kubeconfig", str(pool.kubeconfig), "--context", pool.context]
    assert main(["job", "resume", "nock", *flags]) != 0
    err = capsys.readouterr().err
    assert "logged no finished checkpoint save" in err and "--from-scratch" in err
    assert jobs.client().get_job("nock")["metadata"]["uid"] == first["uid"]  # nothing was resubmitted
    assert main(["job", "resume", "nock", "--from-scratch", *flags]) == 0
    assert "resumed nock from scratch" in capsys.readouterr().out
    assert jobs.client().get_job("nock")["metadata"]["labels"][RESUMED_FROM_LABEL] == first["uid"]
    jobs.stop(None, "nock")
