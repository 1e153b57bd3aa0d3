"""`ranktable job ...` against the simulated pool: output and exit codes; kubectl accepts what we compose."""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ranktable.cli import main
from ranktable.cluster.client import ClusterClient
from ranktable.observe.archive import RunArchive
from ranktable.usecases.observe import keep_run_logs
from tests.integration.fixtures.simpool import SimPoolHandle

TRAIN = str(Path(__file__).resolve().parents[2] / "examples" / "train.py")


@pytest.fixture
def pool(sim_pool_factory: Callable[..., SimPoolHandle]) -> SimPoolHandle:
    return sim_pool_factory(ranktable_delay=0.2)


def run(pool: SimPoolHandle, *args: str) -> int:
    return main([*args, "--kubeconfig", str(pool.kubeconfig), "--context", pool.context])


def test_job_commands_and_exit_codes(
    pool: SimPoolHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "job.yaml"
    compose = ["job", "compose", "--name", "demo", "--image", "img", "--nodes", "3", "--script", TRAIN]
    assert main([*compose, "--script-args", "--steps 3 --interval 0", "--routing", "-o", str(manifest)]) == 0
    assert run(pool, "job", "submit", str(manifest)) == 0
    assert "job demo submitted in default" in capsys.readouterr().out

    assert run(pool, "job", "wait-ranktable", "demo", "--timeout", "30") == 0
    captured = capsys.readouterr()
    assert "valid, status completed (3 servers, 24 ranks)" in captured.out
    assert "rank table configmap1980-demo:" in captured.err  # progress on stderr

    assert run(pool, "job", "list") == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].split()[:3] == ["Name", "Age", "Phase"]
    assert table[1].split()[0] == "demo"

    assert run(pool, "job", "layout", "demo", "--svg", str(tmp_path / "l.svg"), "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["topology_source"] and "rank_mapping" in report["report"]
    assert "<svg" in (tmp_path / "l.svg").read_text()

    followed = str(tmp_path / "followed")
    assert run(pool, "job", "logs", "demo", "-f", "--rank", "2", "--state-dir", followed) == 0
    out = capsys.readouterr().out.splitlines()
    # spread over both leaves (pods 0 and 2 under leaf-0): the route plan makes pod 1 node rank 2
    assert out and all(line.startswith("[2 demo-demo-1-1] ") for line in out)
    assert sum("loss" in line for line in out) == 8 * 3
    # #27: a followed run is archived as the panel's is (every pod's lines, not only the rank shown)
    assert run(pool, "job", "logs", "demo", "--runs", "--state-dir", followed) == 0
    runs = capsys.readouterr().out.splitlines()
    assert len(runs) == 2, runs  # one run
    header, cells = (re.split(r"\s{2,}", line.strip()) for line in runs)
    row = dict(zip(header, cells, strict=True))
    assert row["Pods"] == "3" and row["Phase"] == "Completed" and row["Ended"] != "-", runs
    uid = runs[1].split()[0]
    assert run(pool, "job", "logs", "demo", "--run", uid, "--state-dir", followed) == 0
    archived = capsys.readouterr().out.splitlines()
    assert len(archived) > len(out)  # every pod's lines
    # the archive holds every line of the followed pod, in order; the live `--rank 2` view shows them from
    # the moment the route plan names the pod node rank 2 (under load its first and last lines may still
    # carry the pod's default rank: a known edge, docs/observability.md)
    pod_lines = [line.split("] ", 1)[1] for line in archived if "demo-demo-1-1] " in line]
    live = [line.split("] ", 1)[1] for line in out]
    start = pod_lines.index(live[0])
    assert pod_lines[start : start + len(live)] == live

    assert run(pool, "job", "watch", "demo", "--timeout", "30") == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("demo: Completed")

    assert run(pool, "job", "describe", "demo") == 0
    described = capsys.readouterr().out
    assert described.startswith("Job demo (default): ") and "\nRank table: " in described
    assert "demo-demo-1-2  2      node-" in described

    assert run(pool, "job", "stop", "demo", "--state-dir", str(tmp_path / "state")) == 0
    assert "deleted job/demo, configmap/configmap1980-demo" in capsys.readouterr().out
    assert run(pool, "job", "stop", "demo") == 1
    assert "job demo not found in default" in capsys.readouterr().err
    assert run(pool, "job", "describe", "nothing") == 1
    assert "not found" in capsys.readouterr().err


def test_stop_archives_the_runs_logs_first(
    pool: SimPoolHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nobody streamed this run: before `stop` its logs lived only in the pods, which go with the job."""
    state = str(tmp_path / "state")
    script = """bash -c 'for i in 1 2 3 4 5; do echo "step $i loss 2.$i"; done; sleep 60'"""
    submit = ["job", "submit", "--name", "kept", "--image", "i", "--nodes", "2", "--command", script]
    assert run(pool, *submit) == 0
    assert run(pool, "job", "wait-ranktable", "kept", "--timeout", "30") == 0
    deadline = time.monotonic() + 30
    while run(pool, "job", "logs", "kept") == 0 and capsys.readouterr().out.count("step 5") < 2:
        assert time.monotonic() < deadline, "the pods never printed their 5 steps"
        time.sleep(0.3)
    assert run(pool, "job", "stop", "kept", "--keep-logs", "-1") == 2
    assert capsys.readouterr().err.strip().endswith("--keep-logs must be 0 or more seconds; got -1")

    client = ClusterClient(str(pool.kubeconfig), pool.context, "default")
    cut = keep_run_logs(client, "kept", state_dir=tmp_path / "cut", timeout=0.0)
    assert cut.endswith("; stopped reading after the 0 s limit"), cut
    # another process (the Jupyter server) writes the run: the stop says how many lines that one kept
    uid = client.get_job("kept")["metadata"]["uid"]
    held = RunArchive(tmp_path / "held" / "logs", "default", "kept", uid, {"kept-worker-0": 0})
    held.append("kept-worker-0", 0, [(f"2026-12-05T00:00:0{i}Z", f"line {i}") for i in range(3)])
    held.flush()
    try:
        said = keep_run_logs(client, "kept", state_dir=tmp_path / "held", timeout=5.0)
    finally:
        held.close()
    assert said.startswith(f"3 log lines of run {uid[:8]} archived by the process following it (`"), said
    assert run(pool, "job", "stop", "kept", "--state-dir", state) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "deleted job/kept, configmap/configmap1980-kept"
    assert (
        out[1].startswith("10 new log lines of run ") and "archived (`ranktable job logs kept --run" in out[1]
    )
    assert run(pool, "job", "logs", "kept", "--runs", "--state-dir", state) == 0
    uid = capsys.readouterr().out.splitlines()[1].split()[0]
    assert run(pool, "job", "logs", "kept", "--run", uid, "--state-dir", state) == 0
    lines = capsys.readouterr().out.splitlines()
    assert sorted(line.split("] ", 1)[1] for line in lines) == sorted(
        f"step {i} loss 2.{i}" for i in range(1, 6) for _ in range(2)
    )


def test_stop_with_keep_logs_0_keeps_none(
    pool: SimPoolHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    assert (
        run(pool, "job", "submit", "--name", "bare", "--image", "i", "--nodes", "1", "--command", "sleep 60")
        == 0
    )
    assert run(pool, "job", "wait-ranktable", "bare", "--timeout", "30") == 0
    capsys.readouterr()
    assert run(pool, "job", "stop", "bare", "--keep-logs", "0", "--state-dir", str(state)) == 0
    assert capsys.readouterr().out.splitlines() == ["deleted job/bare, configmap/configmap1980-bare"]
    (record,) = (state / "logs" / "default" / "bare").iterdir()  # the run's record, no logs
    assert sorted(p.name for p in record.iterdir()) == ["meta.json", "meta.lock"]  # the record and its lock
    assert json.loads((record / "meta.json").read_text())["phase"] == "Stopped"


def test_wait_timeout_and_bad_rank_exit_non_zero(
    pool: SimPoolHandle, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        run(pool, "job", "submit", "--name", "huge", "--image", "i", "--nodes", "9", "--command", "sleep 9")
        == 0
    )
    assert run(pool, "job", "wait-ranktable", "huge", "--timeout", "1") == 1
    assert "pods without the device annotation" in capsys.readouterr().err
    assert run(pool, "job", "logs", "huge", "--rank", "9") == 1
    assert "--rank" in capsys.readouterr().err


def test_kubectl_applies_what_we_compose(
    pool: SimPoolHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = tmp_path / "job.yaml"
    args = [
        "job",
        "compose",
        "--name",
        "kc",
        "--image",
        "i",
        "--nodes",
        "2",
        "--command",
        "sleep 30",
        "-o",
        str(manifest),
    ]
    assert main(args) == 0
    env = pool.kubectl_env(tmp_path / "home")
    applied = subprocess.run(
        ["kubectl", "apply", "-f", str(manifest)], env=env, capture_output=True, text=True, timeout=60
    )
    assert applied.returncode == 0, applied.stderr
    assert run(pool, "job", "wait-ranktable", "kc", "--timeout", "30") == 0
    capsys.readouterr()
    assert run(pool, "job", "stop", "kc", "--keep-logs", "0") == 0
    got = subprocess.run(
        ["kubectl", "get", "vcjob", "kc"], env=env, capture_output=True, text=True, timeout=60
    )
    assert got.returncode != 0 and "NotFound" in got.stderr


def test_without_a_kubeconfig_the_cli_uses_the_simulated_pool_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ranktable.sim.control import stop_running
    from ranktable.sim.paths import default_state_dir

    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RANKTABLE_HOME", str(tmp_path / "rt"))
    try:
        assert main(["job", "list"]) == 0
        out = capsys.readouterr()
        assert out.out.strip() == "no jobs in default"
        assert "using the simulated pool" in out.err and "--kubeconfig" in out.err
        assert (default_state_dir() / "kubeconfig").is_file()
    finally:
        assert stop_running(default_state_dir()) is not None


def test_without_a_kubeconfig_the_cluster_adapter_refuses_and_starts_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ranktable.cluster.client import ClusterClient
    from ranktable.errors import NotFoundError
    from ranktable.sim.control import find_running
    from ranktable.sim.paths import default_state_dir

    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RANKTABLE_HOME", str(tmp_path / "rt"))
    with pytest.raises(NotFoundError) as caught:
        ClusterClient()
    assert "no cluster configured" in caught.value.message
    assert "ranktable sim start" in caught.value.message
    assert find_running(default_state_dir()) is None
