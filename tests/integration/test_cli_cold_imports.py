"""A cluster command run cold (no warm server) imports neither the kubernetes package nor numpy: the
client's generated APIs import ~250 pydantic model modules and its config loader the whole client, most of
the cold command's time (#28); `ranktable.cluster.transport` reads the kubeconfig and `cluster.rest` makes
the same calls as plain REST requests. numpy is for the planner and the log readers, which `job submit`,
`list` and `describe` never use (`stop` archives the run's logs through the observer, which does)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable

from tests.integration.fixtures.simpool import SimPoolHandle

# Runs the CLI in this process, then prints how many kubernetes and numpy/msgspec (the columnar rank-table
# reader's) modules were loaded.
PROBE = """
import atexit, sys
def count(*tops):  # a lazily loaded module (hccl.lazy) that was never used counts as not imported
    loaded = [n for n, m in list(sys.modules.items()) if type(m).__name__ != "_LazyModule"]
    return sum(n.split(".")[0] in tops for n in loaded)
atexit.register(lambda: print("MODELS", count("kubernetes"), count("numpy", "msgspec"), count("urllib3"),
                              file=sys.stderr))
from ranktable.cli import run
sys.exit(run(sys.argv[1:]))
"""


URLLIB3: dict[str, int] = {}


def cold(pool: SimPoolHandle, *argv: str) -> tuple[subprocess.CompletedProcess[str], tuple[int, int]]:
    """The command's result and how many kubernetes and numpy modules it loaded (and, in `URLLIB3`, how
    many urllib3 modules: whole-body requests go through http.client in a cold command)."""
    env = {**os.environ, "KUBECONFIG": str(pool.kubeconfig), "RANKTABLE_WARM": "0"}
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], env=env, capture_output=True, text=True, timeout=120
    )
    models = [line for line in done.stderr.splitlines() if line.startswith("MODELS ")]
    assert models, done.stderr
    kubernetes, numpy, urllib3 = models[-1].split()[1:]
    URLLIB3[" ".join(argv[:2])] = int(urllib3)
    return done, (int(kubernetes), int(numpy))


def test_cold_cluster_commands_import_neither_kubernetes_nor_numpy(
    sim_pool_factory: Callable[..., SimPoolHandle],
) -> None:
    pool = sim_pool_factory()
    submitted, models = cold(
        pool, "job", "submit", "--name", "cold", "--image", "img", "--nodes", "1", "--npus", "8",
        "--command", "echo cold start",
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr
    assert models == (0, 0)
    listed, models = cold(pool, "job", "list")
    assert listed.returncode == 0 and "cold" in listed.stdout
    assert models == (0, 0)
    described, models = cold(pool, "job", "describe", "cold")
    assert described.returncode == 0 and "Job cold (default)" in described.stdout
    assert models == (0, 0)
    missing, models = cold(pool, "job", "describe", "nosuch")  # a 404 through the REST call
    assert missing.returncode == 1 and "job nosuch in default not found" in missing.stderr
    assert URLLIB3["job list"] == 0 and URLLIB3["job describe"] == 0  # only streams need urllib3
    assert models == (0, 0)
    stopped, models = cold(pool, "job", "stop", "cold")  # the DELETEs
    assert stopped.returncode == 0, stopped.stderr
    assert models[0] == 0
