"""The first hour through the CLI (docs/first-hour.md, #24), on the simulated pool and instance: sync the
example project to the instance's shared storage, compose and submit the example job that runs it from
there, read its logs, see the deliberate failure diagnosed on rank 5, fix the script, sync, run again,
see it complete, and compare the two runs' metrics."""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from ranktable.cli import main
from tests.integration.journey_helpers import STEPS, Journey, journey, wait_for

__all__ = ["journey"]  # the fixture


def cli(capsys: pytest.CaptureFixture[str], *args: str, expect: int = 0) -> tuple[str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == expect, (args, out, err)
    return out, err


def phase(capsys: pytest.CaptureFixture[str]) -> str:
    rows = cli(capsys, "job", "list")[0].splitlines()
    return next((row.split()[2] for row in rows[1:] if row.split()[0] == "bert-demo"), "")


def test_first_hour_through_the_cli(journey: Journey, capsys: pytest.CaptureFixture[str]) -> None:
    shared = journey.instance.shared
    out, _ = cli(capsys, "sync", "sim-notebook", str(journey.workspace))
    assert "uploaded" in out
    assert (shared / "project" / "train.py").read_text() == journey.script.read_text()

    # compose: the script's instance path runs as is (same path in the pods); the volume is added
    spec = yaml.safe_load(journey.job_file.read_text())
    spec_file = journey.workspace.parent / "spec.json"
    spec_file.write_text(json.dumps(spec))
    out, err = cli(capsys, "job", "compose", "--spec", str(spec_file))
    assert "info: volumes: added volume 'shared'" in err and "warning" not in err
    job = next(d for d in yaml.safe_load_all(out) if d["kind"] == "Job")
    pod = job["spec"]["tasks"][0]["template"]["spec"]
    assert {"name": "shared", "hostPath": {"path": str(shared)}} in pod["volumes"]
    assert {"name": "shared", "mountPath": str(shared)} in pod["containers"][0]["volumeMounts"]
    container = pod["containers"][0]
    assert f"{shared}/project/train.py" in json.dumps([container.get("command"), container.get("args")])

    cli(capsys, "job", "submit", str(journey.job_file))
    wait_for(lambda: "epoch: 1 step: 3," in cli(capsys, "job", "logs", "bert-demo")[0], 120, "progress")
    logs = cli(capsys, "job", "logs", "bert-demo")[0]
    assert "can't open file" not in logs and f"script {shared}/project/train.py" in logs

    def first_failure() -> dict[str, Any] | None:
        found = json.loads(cli(capsys, "job", "diagnose", "bert-demo", "--json")[0])
        return found.get("first_failure")

    first = wait_for(first_failure, 120, "the deliberate failure")
    assert (first["rank"], first["node_rank"], first["device"]) == (5, 0, 5), first
    assert "IndexError: [Rank 5] step 5" in first["line"]
    failed_run = json.loads(cli(capsys, "job", "metrics", "bert-demo", "--json")[0])

    journey.fix_the_bug()
    out, _ = cli(capsys, "sync", "sim-notebook", str(journey.workspace))
    assert "uploaded 1 file(s)" in out and "# the bug" not in (shared / "project" / "train.py").read_text()
    cli(capsys, "job", "stop", "bert-demo")
    cli(capsys, "job", "submit", str(journey.job_file))
    wait_for(lambda: phase(capsys) == "Completed", 180, "the fixed run to complete")
    assert json.loads(cli(capsys, "job", "diagnose", "bert-demo", "--json")[0])["first_failure"] is None

    fixed_run = json.loads(cli(capsys, "job", "metrics", "bert-demo", "--json")[0])
    runs = cli(capsys, "job", "logs", "bert-demo", "--runs")[0].splitlines()[1:]
    assert len(runs) == 2
    archived = json.loads(
        cli(capsys, "job", "metrics", "bert-demo", "--run", runs[1].split()[0], "--json")[0]
    )
    # the first run, read back from its archive (its failing pod may have restarted since, adding lines)
    assert set(archived["ranks"]) == set(failed_run["ranks"])
    assert min(max(r["step"]) for r in archived["ranks"].values()) < STEPS
    assert all(max(r["step"]) == STEPS for r in fixed_run["ranks"].values())
    assert min(max(r["step"]) for r in failed_run["ranks"].values()) < STEPS  # the failed pod stopped

    # the journey's last step: the two runs side by side (A the failed one, B the fixed one)
    compared = json.loads(cli(capsys, "job", "compare", "bert-demo", "--json")[0])
    a, b = compared["a"], compared["b"]
    assert (a["run"], b["run"]) == (runs[1].split()[0], runs[0].split()[0])
    assert a["first_failure"]["rank"] == 5 and b["first_failure"] is None
    assert b["outcome"] == "Completed" and a["outcome"] != "Completed"
    assert b["last_step"] == STEPS and a["least_step"] < STEPS
    assert compared["changes"]["step_time_s"]["a"] > 0 and compared["changes"]["step_time_s"]["b"] > 0
    assert b["duration_s"] > 0 and compared["changes"]["loss"]["b"] is not None
    assert f"the failure of A (rank 5 {a['first_failure']['code']}) is gone in B" in compared["notes"]
    out, _ = cli(capsys, "job", "compare", "bert-demo", "--runs", runs[0].split()[0][:8], runs[1].split()[0])
    assert out.splitlines()[0].startswith(f"job bert-demo: run A {runs[0].split()[0]}")  # as named
    assert "outcome: Completed -> " in out and "step time (s)" in out and "final loss" in out
    cli(capsys, "job", "compare", "bert-demo", "--runs", "nosuchrun", runs[0].split()[0], expect=1)
