"""A cluster command run cold (no warm server) imports no kubernetes model: the client's generated
`CoreV1Api` and `CustomObjectsApi` import ~250 pydantic model modules, most of the cold command's time
(#28); `ranktable.cluster.rest` makes the same calls as plain REST requests."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

from tests.integration.fixtures.simpool import SimPoolHandle

# Runs the CLI in this process, then prints how many kubernetes model modules were loaded.
PROBE = """
import atexit, sys
atexit.register(lambda: print("MODELS", sum(n.startswith("kubernetes.client.models.") for n in sys.modules),
                              file=sys.stderr))
from ranktable.cli import run
sys.exit(run(sys.argv[1:]))
"""


def cold(pool: SimPoolHandle, *argv: str) -> tuple[subprocess.CompletedProcess[str], int]:
    env = {**os.environ, "KUBECONFIG": str(pool.kubeconfig), "RANKTABLE_WARM": "0"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], env=env, capture_output=True, text=True, timeout=120
    )
    models = [line for line in done.stderr.splitlines() if line.startswith("MODELS ")]
    assert models, done.stderr
    return done, int(models[-1].split()[1])


def test_cold_cluster_commands_import_no_kubernetes_model(
    sim_pool_factory: Callable[..., SimPoolHandle],
) -> None:
    pool = sim_pool_factory()
    submitted, models = cold(
        pool, "job", "submit", "--name", "cold", "--image", "img", "--nodes", "1", "--npus", "8",
        "--command", "echo cold start",
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    assert models == 0
    listed, models = cold(pool, "job", "list")
    assert listed.returncode == 0 and "cold" in listed.stdout
    assert models == 0
    described, models = cold(pool, "job", "describe", "cold")
    assert described.returncode == 0 and "Job cold (default)" in described.stdout
    assert models == 0
    missing, models = cold(pool, "job", "describe", "nosuch")  # a 404 through the REST call
    assert missing.returncode == 1 and "job nosuch in default not found" in missing.stderr
    assert models == 0
    stopped, models = cold(pool, "job", "stop", "cold")  # the DELETEs
    assert stopped.returncode == 0, stopped.stderr
    assert models == 0
