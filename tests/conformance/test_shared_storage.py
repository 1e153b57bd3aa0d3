"""A job that runs its script from shared storage (#24): the folder every node mounts, reached by a
hostPath volume at the same path, as ModelArts Lite templates mount SFS Turbo at /mnt/sfs_turbo."""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from tests.conformance.planes import Plane, conform, wait_until

PROJECT = Path(__file__).resolve().parents[2] / "examples" / "demo" / "project"


def test_a_job_runs_its_script_from_shared_storage(plane: Plane) -> None:
    name = f"shared-{uuid.uuid4().hex[:5]}"
    project = plane.shared / name
    project.mkdir(mode=0o755)
    shutil.copy(PROJECT / "train.py", project / "train.py")
    (project / "train.py").chmod(0o644)
    script = str(project / "train.py")
    manifest = plane.home / f"{name}.yaml"

    def scenario() -> None:
        composed = plane.ranktable(
            "job", "compose", "--name", name, "--image", "img", "--nodes", "2", "--script", script,
            "--script-args", "--steps 3 --interval 0.2",
            "--hostpath", f"shared:{plane.shared}:{plane.shared}", "-o", str(manifest),
        )  # fmt: skip
        assert composed.returncode == 0, composed.stderr
        assert "outside every mounted volume" not in composed.stderr, composed.stderr
        submitted = plane.ranktable("job", "submit", str(manifest))
        assert submitted.returncode == 0, submitted.stderr
        waited = plane.ranktable("job", "wait-ranktable", name, "--timeout", "240")
        assert waited.returncode == 0, waited.stderr
        logs = plane.ranktable("job", "logs", name, "-f")
        assert logs.returncode == 0, logs.stderr
        assert "can't open file" not in logs.stdout, logs.stdout[-2000:]
        assert logs.stdout.count(f"script {script}") == 16, logs.stdout[-2000:]
        assert logs.stdout.count("training finished after 3 steps") == 16, logs.stdout[-2000:]
        stopped = plane.ranktable("job", "stop", name)
        assert stopped.returncode == 0, stopped.stderr
        wait_until(
            "the job's pods to go",
            lambda: (
                plane.kubectl("get", "pods", "-l", f"volcano.sh/job-name={name}", "-o", "name").stdout == ""
            ),
            timeout=120,
        )

    conform(plane, "flow-shared-storage", scenario)
