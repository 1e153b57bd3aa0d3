"""The server archives every run of its namespaces, followed or not (`usecases.archiving.RunArchiver`), and
a restarted pod's earlier containers count: its first error is named, whichever surface asks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.server_helpers import call, extension_on_pool, log_lines
from tests.integration.test_server_jobs import read, until

FAILS = (
    'for i in 1 2 3; do echo "step $i loss 2.$((9 - i))"; sleep 0.1; done; '
    "echo \"python3: can't open file '/x/data.py': [Errno 2] No such file or directory\"; sleep 60"
)
# pod 1 fails first (NPU out of memory, in its first container) and restarts twice; its later containers
# and pod 0 print what victims print, later
RESTARTS = """
case "$name" in
*-1)
  n=$(cat runs 2>/dev/null || echo 0); n=$((n + 1)); echo $n > runs
  echo "step 1 loss 2.5 container $n"
  if [ $n -eq 1 ]; then
    echo "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB"; sleep 2; exit 1
  fi
  sleep 0.5; echo "EI0006: Getting socket times out. Reason: Remote Rank did not send the data in time"
  if [ $n -lt 3 ]; then sleep 1; exit 1; fi
  sleep 60 ;;
*)
  echo "step 1 loss 2.5"; sleep 6
  echo "[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE)"
  sleep 60 ;;
esac
"""


@pytest.fixture
def pool(sim_pool_factory: Callable[..., SimPoolHandle]) -> SimPoolHandle:
    return sim_pool_factory(backoff_seconds=1.0)  # CrashLoopBackOff's first delay: 1 s, not 10


@pytest.fixture
def max_streams() -> int:
    return 64


@pytest.fixture
def jp_server_config(pool: SimPoolHandle, tmp_path: Path, max_streams: int) -> dict[str, Any]:
    return extension_on_pool(pool, tmp_path, archive_every_seconds=0.3, archive_max_streams=max_streams)


def archiver(jp_serverapp: Any) -> Any:
    return jp_serverapp.web_app.settings["ranktable_services"].observe.archiver


async def submit(jp_fetch: Any, name: str, script: str, nodes: int = 2) -> Any:
    spec = {
        "name": name,
        "image": "i",
        "nodes": nodes,
        "npus_per_node": 8,
        "command": ["/bin/sh", "-c", script],
    }
    return await call(jp_fetch, "ranktable", "jobs", method="POST", body={"spec": spec}, expect=201)


async def archived_errors(jp_fetch: Any, name: str, uid: str) -> list[dict[str, Any]]:
    path = ("ranktable", "jobs", "default", name, "runs", uid, "logs")
    response = await jp_fetch(*path, params={"errors": "true"}, raise_error=False)
    return json.loads(response.body)["lines"] if response.code == 200 else []


def delete_with_kubectl(pool: SimPoolHandle, name: str) -> None:
    """What `kubectl delete vcjob NAME` does: the API call, nothing of the product."""
    from kubernetes import client as k8s

    k8s.CustomObjectsApi(pool.api_client()).delete_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", "default", "jobs", name
    )


async def test_a_run_nobody_followed_and_deleted_with_kubectl_is_diagnosable(
    jp_fetch: Any, jp_serverapp: Any, pool: SimPoolHandle
) -> None:
    submitted = await submit(jp_fetch, "quiet", FAILS)

    async def both_errors_archived() -> Any:  # nothing asks for its logs, metrics or diagnosis
        return len(await archived_errors(jp_fetch, "quiet", submitted["uid"])) == 2 or None

    await until(both_errors_archived, 60)
    assert ("default", "quiet", submitted["uid"]) in archiver(jp_serverapp).kept
    delete_with_kubectl(pool, "quiet")

    async def let_go() -> Any:
        return not archiver(jp_serverapp).kept or None

    await until(let_go, 30)
    diagnosis = await call(jp_fetch, "ranktable", "jobs", "default", "quiet", "diagnosis")
    assert diagnosis["source"] == "archive" and diagnosis["run"] == submitted["uid"]
    assert diagnosis["first_failure"]["code"] == "CANT_OPEN_FILE"
    assert {e["node_rank"] for e in diagnosis["errors"]} == {0, 1}
    metrics = await call(jp_fetch, "ranktable", "jobs", "default", "quiet", "metrics")
    assert {tuple(s["step"]) for s in metrics["ranks"].values()} == {(1, 2, 3)}


async def test_the_first_failing_pod_restarting_twice_is_named_with_its_first_error(
    jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any, pool: SimPoolHandle, tmp_path: Path
) -> None:
    """Pod 1 runs out of NPU memory, then restarts twice (its later containers time out, as pod 0 does
    after it); `diagnose` runs only then. The archive, the Job view's diagnosis and the CLI all name pod
    1's out-of-memory error with the time its first container printed it."""
    submitted = await submit(jp_fetch, "flaky", RESTARTS)

    async def restarted_twice() -> Any:
        described = await call(jp_fetch, "ranktable", "jobs", "default", "flaky")
        pods = {p["name"]: p for p in described["pods"]}
        pod = pods.get("flaky-flaky-1-1") or {}
        return pod if pod.get("restarts", 0) >= 2 and len(pods) == 2 else None

    await until(restarted_twice, 90)

    async def victims_archived() -> Any:
        lines = await archived_errors(jp_fetch, "flaky", submitted["uid"])
        return lines if sum("Watchdog" in line["text"] for line in lines) == 1 else None

    lines = await until(victims_archived, 60)
    oom = [line for line in lines if "out of memory" in line["text"]]
    assert [(line["pod"], line["node_rank"]) for line in oom] == [("flaky-flaky-1-1", 1)]  # the archive
    first_time = oom[0]["timestamp"]
    assert sum("EI0006" in line["text"] for line in lines) == 2  # the second and third containers

    def named(diagnosis: dict[str, Any]) -> None:
        first = diagnosis["first_failure"]
        assert (first["pod"], first["code"]) == ("flaky-flaky-1-1", "DEVICE_OOM"), first
        assert first["time"][:19] == first_time[:19], (first["time"], first_time)

    named(await call(jp_fetch, "ranktable", "jobs", "default", "flaky", "diagnosis"))  # the Job view's
    ws = await jp_ws_fetch("ranktable", "stream")  # the Job view's Logs tab: the first container's lines too
    try:
        ws.write_message(json.dumps({"op": "subscribe", "id": "logs", "channel": "logs", "job": "flaky"}))
        texts: list[str] = []
        while not any("container 3" in t for t in texts):
            msg = await read(ws, 60)
            if msg["id"] == "logs" and msg["type"] == "data":
                texts += [line["text"] for line in log_lines(msg["data"]) if line["pod"] == "flaky-flaky-1-1"]
        assert [t for t in texts if t.startswith("step 1")] == [
            f"step 1 loss 2.5 container {n}" for n in (1, 2, 3)
        ]
        assert texts.index("RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB") == 1
    finally:
        ws.close()
    env = {**os.environ, "RANKTABLE_HOME": str(tmp_path / "home")}
    argv = [sys.executable, "-m", "ranktable", "job", "diagnose", "flaky", "--json"]
    argv += ["--kubeconfig", str(pool.kubeconfig), "--context", pool.context]
    argv += ["--state-dir", str(tmp_path / "state")]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    named(json.loads(done.stdout))  # the CLI's, reading the archive, then the pods' logs


@pytest.mark.parametrize("max_streams", [1])
async def test_the_number_of_streams_is_bounded(jp_fetch: Any, jp_serverapp: Any) -> None:
    await submit(jp_fetch, "one", FAILS, nodes=1)
    await submit(jp_fetch, "two", FAILS, nodes=1)

    async def both_seen() -> Any:
        kept = archiver(jp_serverapp)
        return (len(kept.kept) == 1 and kept.skipped == 1) or None

    await until(both_seen, 60)
    for name in ("one", "two"):
        await call(jp_fetch, "ranktable", "jobs", "default", name, method="DELETE")


async def test_a_stop_while_the_server_archives_the_run_keeps_its_lines_and_records_it_stopped(
    jp_fetch: Any, jp_serverapp: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server's own stream of a run lets go of its archive before the stop reads the rest, however long
    it takes to close (a loaded machine: over the 5 s a thread join used to wait), so the stop says how
    many lines it kept and its "Stopped" record is not overwritten by the stream's late close."""
    import time

    from ranktable.observe.archive import RunArchive

    loop = 'i=0; while true; do i=$((i + 1)); echo "step $i loss 2.0"; sleep 0.05; done'
    submitted = await submit(jp_fetch, "busy", loop, nodes=1)

    async def kept() -> Any:
        return ("default", "busy", submitted["uid"]) in archiver(jp_serverapp).kept or None

    await until(kept, 60)
    slow_close = RunArchive.close

    def close_slowly(self: RunArchive) -> None:
        if self.writer and not self._closed:
            time.sleep(6)
        slow_close(self)

    monkeypatch.setattr(RunArchive, "close", close_slowly)
    stopped = await call(jp_fetch, "ranktable", "jobs", "default", "busy", method="DELETE")
    assert stopped["logs"].split(" new log lines of run ")[0].replace(",", "").isdigit(), stopped["logs"]
    runs = await call(jp_fetch, "ranktable", "jobs", "default", "busy", "runs")
    assert [(r["uid"], r["phase"]) for r in runs["runs"]] == [(submitted["uid"], "Stopped")]
