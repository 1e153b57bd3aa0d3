"""Our own flows through the `ranktable` CLI: compose, submit, wait-ranktable, logs, stop, resubmit."""

from __future__ import annotations

import uuid
from pathlib import Path

from tests.conformance.planes import Plane, conform, wait_until

TRAIN = str(Path(__file__).resolve().parents[2] / "examples" / "train.py")


def test_compose_submit_wait_logs_stop_resubmit(plane: Plane) -> None:
    name = f"flow-{uuid.uuid4().hex[:5]}"
    manifest = plane.home / f"{name}.yaml"

    def scenario() -> None:
        composed = plane.ranktable(
            "job",
            "compose",
            "--name",
            name,
            "--image",
            "img",
            "--nodes",
            "2",
            "--script",
            TRAIN,
            "--script-args",
            "--steps 3 --interval 0.5",
            "-o",
            str(manifest),
        )
        assert composed.returncode == 0, composed.stderr
        for attempt in ("submit", "resubmit"):
            submitted = plane.ranktable("job", "submit", str(manifest))
            assert submitted.returncode == 0 and f"job {name} submitted" in submitted.stdout, (
                attempt,
                submitted.stderr,
            )
            waited = plane.ranktable("job", "wait-ranktable", name, "--timeout", "240")
            assert waited.returncode == 0, (attempt, waited.stderr)
            assert "valid, status completed (2 servers, 16 ranks)" in waited.stdout, waited.stdout
            logs = plane.ranktable("job", "logs", name, "-f", "--rank", "1")
            assert logs.returncode == 0, logs.stderr
            lines = logs.stdout.splitlines()
            assert lines and all(line.startswith(f"[1 {name}-") for line in lines), lines[:3]
            assert sum("loss" in line for line in lines) == 8 * 3, lines
            stopped = plane.ranktable("job", "stop", name)
            assert stopped.returncode == 0 and f"deleted job/{name}" in stopped.stdout, stopped.stderr
            wait_until(
                "the job's pods to go",
                lambda: (
                    plane.kubectl("get", "pods", "-l", f"volcano.sh/job-name={name}", "-o", "name").stdout
                    == ""
                ),
                timeout=120,
            )

    conform(plane, "flow-compose-submit-wait-logs-stop-resubmit", scenario)
