"""On the simulated pool: an 8-node job with a straggler, a hung rank and a first failure (EI0006) that
`diagnose` names with its server and leaf; metrics and the archive outlive `job stop`."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ranktable.cluster.client import ClusterClient
from ranktable.compose.manifests import compose
from ranktable.compose.spec import EntryPoint, JobSpec
from ranktable.observe import ObserveSettings
from ranktable.observe.archive import list_runs
from ranktable.usecases.observe import observe_run
from tests.integration.fixtures.simpool import SimPoolHandle

TRAIN = str(Path(__file__).resolve().parents[2] / "examples" / "train.py")
SLOW, HUNG, FIRST = 13, 6, 10  # rank ids; 2 NPUs per pod, so node ranks 6, 3 and 5


@pytest.fixture
def pool(sim_pool_factory: Callable[..., SimPoolHandle]) -> SimPoolHandle:
    return sim_pool_factory(ranktable_delay=0.2)


def scenario() -> JobSpec:
    args = [
        "--steps", "200", "--interval", "0.2",
        "--slow-rank", str(SLOW), "--slow-factor", "1.5",
        "--hang-rank", str(HUNG), "--hang-at", "8",
        "--fail-rank", str(FIRST), "--fail-rank-at", "30",
        "--victims-fail-at", "48",
    ]  # fmt: skip
    return JobSpec(name="diag", image="i", nodes=8, npus_per_node=2, entry=EntryPoint(TRAIN, args))


def manifests() -> list[dict]:
    docs = compose(scenario())
    job = next(d for d in docs if d["kind"] == "Job")
    job["spec"]["tasks"][0]["template"]["spec"]["restartPolicy"] = "Never"  # failed ranks stay failed
    return docs


def test_diagnose_names_straggler_hung_and_first_failing_rank(pool: SimPoolHandle, tmp_path: Path) -> None:
    client = ClusterClient(str(pool.kubeconfig), pool.context, "default")
    client.submit(manifests())
    client.wait_rank_table("diag", timeout=60)
    settings = ObserveSettings(hang_floor_s=3.0)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # every pod ends: its first rank to fail stops the other
        pods = client.job_pods("diag")
        if len(pods) == 8 and all(
            (p.get("status") or {}).get("phase") in ("Succeeded", "Failed") for p in pods
        ):
            break
        time.sleep(1)
    observation = observe_run(client, "diag", state_dir=tmp_path, settings=settings)
    result = observation.diagnosis()
    described = {p.name: p for p in client.describe("diag").pods}
    first = result["first_failure"]
    assert first is not None, result["errors"]
    assert (first["rank"], first["node_rank"], first["code"]) == (FIRST, 5, "EI0006"), first
    pod = described[first["pod"]]
    assert pod.index == 5 and first["server"] == pod.host_ip and first["leaf"] == pod.leaf and pod.leaf
    assert first["device"] == 0
    others = [e for e in result["errors"] if e["rank"] != FIRST]
    assert others and all(e["code"] == "EI0006" and e["time"] > first["time"] for e in others)
    assert [(s["rank"], s["node_rank"]) for s in result["stragglers"]] == [(SLOW, 6)]
    assert 1.35 <= result["stragglers"][0]["ratio"] <= 1.7
    assert result["stragglers"][0]["leaf"] == described["diag-diag-1-6"].leaf
    assert [(h["rank"], h["node_rank"], h["last_step"]) for h in result["hung"]] == [(HUNG, 3, 7)]
    assert result["summary"].startswith(
        f"{result['phase']}: rank {FIRST} (diag-diag-1-5, server {pod.host_ip}"
    )

    metrics = observation.metrics()
    assert set(metrics["ranks"]) == {str(r) for r in range(16)}
    assert metrics["ranks"]["0"]["step"][:3] == [1, 2, 3] and metrics["ranks"]["0"]["loss"][0] > 2.4

    uid = observation.uid
    client.stop("diag")
    archived = observe_run(client, "diag", state_dir=tmp_path, settings=settings)  # the job is gone
    assert archived.source == "archive" and archived.uid == uid
    again = archived.diagnosis()
    assert again["first_failure"]["rank"] == FIRST and again["first_failure"]["leaf"] == pod.leaf
    assert [r.uid for r in list_runs(tmp_path / "logs", "default", "diag")] == [uid]


def test_crash_loop_from_a_relative_script_path_is_explained(pool: SimPoolHandle, tmp_path: Path) -> None:
    client = ClusterClient(str(pool.kubeconfig), pool.context, "default")
    client.submit(
        compose(JobSpec(name="rel", image="i", nodes=1, npus_per_node=1, entry=EntryPoint("train.py")))
    )
    deadline = time.monotonic() + 60
    summary = None
    while time.monotonic() < deadline:
        summary = next(j for j in client.list_jobs() if j.name == "rel")
        if summary.health.get("exit_code") == 2:
            break
        time.sleep(0.5)
    assert summary is not None and summary.health["exit_code"] == 2, summary
    assert summary.health["reasons"] and summary.uid
    pod = client.describe("rel").pods[0]
    assert pod.last_exit_code == 2 or pod.exit_code == 2
    assert pod.health.startswith(pod.reason or pod.last_reason or "")
    result = observe_run(client, "rel", state_dir=tmp_path).diagnosis()
    first = result["first_failure"]
    assert first["code"] == "CANT_OPEN_FILE" and first["node_rank"] == 0
    # the job gave a relative path: the working directory explains it (Python prints the resolved path)
    assert (
        "'train.py': a relative path is resolved against the container's working directory"
        in (first["explanation"])
    )
    assert "the volumes mounted in the pod are" in first["fix"]


def test_pending_job_says_why_and_where_it_waits(pool: SimPoolHandle, tmp_path: Path) -> None:
    from ranktable.usecases.observe import job_pending

    client = ClusterClient(str(pool.kubeconfig), pool.context, "default")
    client.submit(compose(JobSpec(name="small", image="i", nodes=6, command=["sleep", "60"])))
    client.wait_rank_table("small", timeout=30)
    client.submit(compose(JobSpec(name="big", image="i", nodes=4, command=["sleep", "60"])))
    time.sleep(0.5)
    client.submit(compose(JobSpec(name="later", image="i", nodes=4, command=["sleep", "60"])))
    pending = job_pending(client, "big")
    assert pending is not None and not pending["satisfiable"]
    assert pending["nodes_needed"] == 4 and pending["nodes_fit"] == 2
    assert sum(pending["fit_per_leaf"].values()) == 2
    assert pending["reason"].startswith("gang not satisfiable: needs 4 pod(s) x 8 NPUs at once")
    assert pending["queue"]["state"] == "Open" and pending["queue"]["pending_jobs"] == 2
    assert pending["queue"]["position"] == 1
    later = job_pending(client, "later")
    assert later is not None and later["queue"]["position"] == 2 and later["queue"]["ahead"] == ["big"]
    diagnosis = observe_run(client, "later", state_dir=tmp_path).diagnosis()
    assert diagnosis["pending"]["queue"]["position"] == 2 and "gang not satisfiable" in diagnosis["summary"]


EARLY = (
    "sleep 2; echo 'EI0006: [PID: 7] Getting socket times out. Reason: Remote Rank did not send the data "
    "in time.'; sleep 60"
)


def test_a_run_followed_before_its_rank_table_completes_is_placed_later(
    sim_pool_factory: Callable[..., SimPoolHandle], tmp_path: Path
) -> None:
    """A Job view opened at submit time starts the follower while the rank table is still initializing:
    its first failure must still name the server and leaf once the table is complete."""
    from ranktable.usecases.observe import LiveRuns

    pool = sim_pool_factory(ranktable_delay=1.5)
    client = ClusterClient(str(pool.kubeconfig), pool.context, "default")
    spec = JobSpec(name="early", image="i", nodes=2, npus_per_node=1, command=["/bin/bash", "-c", EARLY])
    client.submit(compose(spec))
    live = LiveRuns(tmp_path)
    try:
        first = live.observation(client, "early")
        assert not any(p.server for p in first.observer.layout.by_rank.values())  # numbered by pod order
        client.wait_rank_table("early", timeout=30)
        deadline = time.monotonic() + 60
        while True:
            diagnosis = live.observation(client, "early").diagnosis()
            if diagnosis["first_failure"] is not None or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        live.close()
    failure = diagnosis["first_failure"]
    assert failure is not None and failure["code"] == "EI0006", diagnosis
    pod = {p.name: p for p in client.describe("early").pods}[failure["pod"]]
    assert failure["server"] == pod.host_ip and failure["leaf"] == pod.leaf and pod.leaf


def test_a_followed_run_takes_its_job_and_pods_from_the_watch_it_is_given(
    sim_pool_factory: Callable[..., SimPoolHandle], tmp_path: Path
) -> None:
    """The server hands the job list's watched job and pods to the run's follower: it keeps those very
    objects, and reads neither the job nor its pods from the API (at 1,024 pods a second copy of the
    pods, kept for the follower's life, was ~110 MB of the server's memory, #28)."""
    from ranktable.cluster.jobtable import JobTable
    from ranktable.usecases.observe import LiveRuns

    pool = sim_pool_factory()
    client = ClusterClient(str(pool.kubeconfig), pool.context, "default")
    spec = JobSpec(name="watched", image="i", nodes=2, npus_per_node=1, command=["sleep", "60"])
    client.submit(compose(spec))
    table = JobTable(client, settle=0.05)
    table.start()
    live = LiveRuns(tmp_path)
    try:
        deadline = time.monotonic() + 30
        while (known := table.job_and_pods("watched")) is None or len(known[1]) < 2:
            assert time.monotonic() < deadline, "the watch never held the job's two pods"
            time.sleep(0.1)
        calls: list[str] = []
        call = client.kube.call

        def counting(fn: Any, *args: Any, what: str, **kwargs: Any) -> Any:
            calls.append(what)
            return call(fn, *args, what=what, **kwargs)

        client.kube.call = counting  # type: ignore[method-assign]
        live.observation(client, "watched", known=known)
        assert not [c for c in calls if c.startswith(("pods of job", "job watched"))], calls
        follower = live._followers[next(iter(live._followers))][0]
        assert {id(p) for p in follower.pods} == {id(p) for p in known[1]}
    finally:
        live.close()
        table.close()
        client.stop("watched")
