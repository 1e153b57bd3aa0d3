"""`job diagnose --logs` / `job metrics --logs`: logs from anywhere (files, folders, a tar export)."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from ranktable.cli import main

HEALTHY = "2026-01-01T00:00:0{s}.000000000Z [rank{r}]: step {s} loss {loss}\n"


def write_run(folder: Path) -> Path:
    """A 4-rank run exported one file per rank: rank 2 runs out of NPU memory, the others time out."""
    folder.mkdir()
    for rank in range(4):
        lines = [HEALTHY.format(s=s, r=rank, loss=3.0 - 0.1 * s) for s in (1, 2, 3)]
        if rank == 2:
            lines.append(
                "2026-01-01T00:00:04.000000000Z RuntimeError: NPU out of memory. Tried to allocate 2 GiB\n"
            )
        else:
            lines.append(
                f"2026-01-01T00:01:04.000000000Z [Rank {rank}] Watchdog caught collective operation timeout\n"
            )
        (folder / f"worker_{rank}.log").write_text("".join(lines).replace(f"[rank{rank}]: ", ""))
    return folder


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["job", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture(autouse=True)
def no_cluster(monkeypatch: pytest.MonkeyPatch) -> None:
    """--logs needs no cluster: choosing one (which starts the simulated pool) fails the test."""
    import ranktable.cli.cluster as cluster

    def refuse(*_: object) -> None:
        raise AssertionError("--logs chose a cluster")

    monkeypatch.setattr(cluster, "choose_cluster", refuse)


def test_diagnose_a_folder_of_logs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logs = write_run(tmp_path / "export")
    code, out, _ = run_cli(capsys, "diagnose", "--logs", str(logs), "--json")
    assert code == 0
    result = json.loads(out)
    assert (result["first_failure"]["rank"], result["first_failure"]["code"]) == (2, "DEVICE_OOM")
    assert result["first_failure"]["pod"].endswith("worker_2.log")
    assert sorted(e["rank"] for e in result["errors"]) == [0, 1, 2, 3]
    code, out, _ = run_cli(capsys, "diagnose", "--logs", str(logs))
    assert code == 0 and "4 log file(s)" in out and "rank 2" in out and "DEVICE_OOM" in out


def test_metrics_of_a_tar_export_and_a_custom_rank_pattern(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = write_run(tmp_path / "export")
    for path in logs.iterdir():  # names that the default pattern does not read
        path.rename(logs / path.name.replace("worker_", "node-"))
    archive = tmp_path / "export.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(logs, arcname="job-logs")
    code, out, _ = run_cli(capsys, "metrics", "--logs", str(archive), "--rank-from", r"node-(\d+)", "--json")
    assert code == 0
    data = json.loads(out)
    assert sorted(data["ranks"], key=int) == ["0", "1", "2", "3"]
    assert data["ranks"]["3"]["loss"] == [pytest.approx(2.9), pytest.approx(2.8), pytest.approx(2.7)]


def test_bad_log_arguments_are_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "diagnose", "--logs", str(tmp_path / "nope"))
    assert code != 0 and "nope: no such file or folder" in err
    logs = write_run(tmp_path / "export")
    code, _, err = run_cli(capsys, "diagnose", "--logs", str(logs), "--rank-from", "rank")
    assert code != 0 and "--rank-from: the pattern has no group for the rank" in err
    code, _, err = run_cli(capsys, "diagnose", "somejob", "--logs", str(logs))
    assert code != 0 and "give a job name or --logs, not both" in err
    code, _, err = run_cli(capsys, "diagnose")
    assert code != 0 and "no job given" in err
    bad = tmp_path / "bad.tar"
    bad.write_bytes(b"not a tar")
    code, _, err = run_cli(capsys, "metrics", "--logs", str(bad))
    assert code != 0 and "not a readable tar archive" in err
