"""A run (one job uid) is its own record, on the simulated pool (#24.4, #24.6): events of one run only, the
final phase of a stopped or finished run in its archive, true archive metadata, resubmit of a stopped run
from its record, and a crash-looping run marked failing in the live job table."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ranktable.cli import main
from ranktable.cluster.jobtable import JobTable
from ranktable.cluster.observing import archive_root
from ranktable.compose.spec import EntryPoint, JobSpec
from ranktable.errors import NotFoundError
from ranktable.observe.archive import list_runs, run_dir
from ranktable.observe.text import kube_time
from ranktable.usecases.jobs import ClusterSettings, Jobs
from ranktable.usecases.observe import LiveRuns, observe_run
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.sim_helpers import eventually

TRAIN = str(Path(__file__).resolve().parents[2] / "examples" / "train.py")
CRASH = ["--steps", "300", "--interval", "0.1", "--fail-at", "2"]  # exit 1 after 2 steps, restarted in place
HEALTHY = ["--steps", "3000", "--interval", "0.1"]


@pytest.fixture
def pool(sim_pool_factory: Callable[..., SimPoolHandle]) -> SimPoolHandle:
    return sim_pool_factory(ranktable_delay=0.2)


@pytest.fixture
def jobs(pool: SimPoolHandle, tmp_path: Path) -> Jobs:
    return Jobs(
        ClusterSettings(
            kubeconfig=str(pool.kubeconfig),
            context=pool.context,
            state_dir=str(tmp_path / "state"),
            keep_logs_s=10.0,
        )
    )


def spec(args: list[str], name: str = "loop") -> JobSpec:
    return JobSpec(name=name, image="i", nodes=2, npus_per_node=8, entry=EntryPoint(TRAIN, args))


def until(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """Poll `check` until it returns something true (the pool's controllers move on their own)."""
    return eventually(check, timeout, what, every=0.2)


def events_of(jobs: Jobs, name: str) -> list[dict[str, Any]]:
    return list(jobs.describe(None, name)["events"])


def running(jobs: Jobs, name: str) -> bool:
    pods = jobs.client().job_pods(name)
    return len(pods) == 2 and all((p.get("status") or {}).get("phase") == "Running" for p in pods)


def test_events_are_the_runs_own(jobs: Jobs) -> None:
    jobs.submit(spec(CRASH))
    until(lambda: any(e["reason"] == "BackOff" for e in events_of(jobs, "loop")), "the crash loop's BackOff")
    jobs.stop(None, "loop")
    jobs.client().wait_deleted("loop", 30)
    second = jobs.submit(spec(HEALTHY))
    started = until(
        lambda: (
            [e for e in events_of(jobs, "loop") if e["reason"] == "Started"] if running(jobs, "loop") else []
        ),
        "the healthy run's pods started",
    )
    assert {e["object"] for e in started} == {"Pod/loop-loop-1-0", "Pod/loop-loop-1-1"}
    reasons = [e["reason"] for e in events_of(jobs, "loop")]
    assert "BackOff" not in reasons, reasons  # the stopped run's events, same pod names, other uids
    # the live table's description (the Job view's overview) keeps to the run too
    table = JobTable(jobs.client())
    table.start()
    try:
        described = until(lambda: table.describe("loop"), "the table's description")
        assert described[1]["job"]["uid"] == second["uid"]
        assert "BackOff" not in [e["reason"] for e in described[1]["events"]]
    finally:
        table.close()


def test_stopped_run_is_recorded_and_resubmitted_from_its_record(
    jobs: Jobs, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = jobs.submit(spec(HEALTHY))
    until(lambda: running(jobs, "loop"), "the pods running")
    created = kube_time(jobs.client().get_job("loop")["metadata"]["creationTimestamp"])
    live = LiveRuns(state_dir=tmp_path / "state")
    try:  # the Job view follows the run: its archive says "Running" until the stop
        until(lambda: live.observation(jobs.client(), "loop").observer.metrics_json()["ranks"], "metrics")
    finally:
        live.close()
    before = time.time()
    jobs.stop(None, "loop")
    root = archive_root(tmp_path / "state")
    (run,) = list_runs(root, "default", "loop")
    assert run.uid == first["uid"] and run.phase == "Stopped"
    assert run.created == created  # when the run was submitted, not when its archive was opened
    assert run.ended is not None and before <= run.ended <= time.time()
    on_disk = sum(p.stat().st_size for p in run_dir(root, "default", "loop", run.uid).glob("*.log*"))
    assert run.bytes == on_disk > 0
    diagnosis = observe_run(jobs.client(), "loop", run=run.uid[:8], state_dir=tmp_path / "state").diagnosis()
    assert diagnosis["summary"].startswith("Stopped: "), diagnosis["summary"]

    # `job logs --runs` prints the record as it is
    argv = ["job", "logs", "loop", "--runs", "--state-dir", str(tmp_path / "state")]
    assert main(argv) == 0
    header, row = capsys.readouterr().out.splitlines()[:2]
    assert header.split() == ["Run", "Submitted", "Ended", "Phase", "Pods", "Size"]
    assert row.split()[3:5] == ["Stopped", "2"] and row.endswith(" KiB")

    # the stopped run's view resubmits it: the spec comes from its record (nothing is on the cluster)
    again = jobs.resubmit(None, "loop", run.uid[:8])
    assert again["uid"] != first["uid"]
    job = jobs.client().get_job("loop")
    container = job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    assert "--steps 3000 --interval 0.1" in " ".join(container.get("command") or container.get("args") or [])
    # resubmitting over the running run stops it first, and records it
    third = jobs.resubmit(None, "loop")
    assert third["uid"] not in (first["uid"], again["uid"])
    phases = {r.uid: r.phase for r in list_runs(root, "default", "loop")}
    assert phases[again["uid"]] == "Stopped"


def test_resubmit_of_an_unknown_run_names_it(jobs: Jobs) -> None:
    with pytest.raises(NotFoundError) as caught:
        jobs.resubmit(None, "nothing", "abc")
    assert "nothing" in caught.value.message


def test_finished_run_keeps_its_final_phase(jobs: Jobs, tmp_path: Path) -> None:
    jobs.submit(spec(["--steps", "3", "--interval", "0"], name="short"))
    until(lambda: jobs.client().get_job("short")["status"]["state"]["phase"] == "Completed", "completion")
    observation = observe_run(jobs.client(), "short", state_dir=tmp_path / "state")
    assert observation.diagnosis()["summary"].startswith("Completed")
    (run,) = list_runs(archive_root(tmp_path / "state"), "default", "short")
    assert run.phase == "Completed" and run.ended is not None and run.ended >= run.created
    jobs.stop(None, "short")  # a stop after the end keeps the phase it ended in
    (run,) = list_runs(archive_root(tmp_path / "state"), "default", "short")
    assert run.phase == "Completed"


def rows_of(table: JobTable, stop: threading.Event) -> Iterator[dict[str, Any]]:
    for rows in table.follow(stop):
        yield from rows


def test_crash_loop_is_marked_failing_in_the_job_table(jobs: Jobs) -> None:
    jobs.submit(spec(CRASH))
    table = JobTable(jobs.client())
    table.start()
    stop = threading.Event()
    try:
        deadline = time.monotonic() + 60
        for row in rows_of(table, stop):
            assert time.monotonic() < deadline, "the crash loop was never marked failing"
            if row["name"] == "loop" and row["health"].get("failing"):
                break
        assert row["phase"] == "Running"  # what the sidebar showed alone before
        assert "exit code 1" in row["health"]["failing"]
    finally:
        stop.set()
        table.close()
