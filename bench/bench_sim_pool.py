"""Simulated pool throughput: a 64-pod Volcano job whose processes each print 10,000 lines.

Prints the time from submit to every pod Running, to every pod Succeeded with its log complete, the
pump's lines per second into the pod logs, and a full read of every pod log through the API.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from kubernetes import client

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.integration.fixtures.simpool import start_pool
from tests.integration.sim_helpers import eventually, volcano_job

PODS, LINES = 64, 10_000


def main() -> None:
    handle = start_pool(Path(tempfile.mkdtemp(prefix="bench-sim-")), nodes=8, leaves=2)
    try:
        api = handle.api_client()
        core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
        job = volcano_job(
            "bench",
            PODS,
            ["sh", "-c", f'seq -f "step %g loss 0.123" 1 {LINES}'],
            npus=1,
            plugins={"env": [], "svc": []},
        )
        job["spec"]["tasks"][0]["template"]["spec"].pop("affinity")  # 8 one-NPU pods per server
        start = time.monotonic()
        custom.create_namespaced_custom_object("batch.volcano.sh", "v1alpha1", "default", "jobs", job)

        def phases() -> list[str]:
            time.sleep(0.2)  # poll gently: the client's own decoding competes for the same cores
            pods = core.list_namespaced_pod("default", _preload_content=False).json()["items"]
            return [(p.get("status") or {}).get("phase", "") for p in pods]

        eventually(
            lambda: len(phases()) == PODS and all(p in ("Running", "Succeeded") for p in phases()),
            timeout=120,
            what="all pods started",
        )
        started = time.monotonic() - start
        eventually(lambda: phases().count("Succeeded") == PODS, timeout=300, what="all pods done")
        done = time.monotonic() - start
        read_start = time.monotonic()
        total = sum(
            core.read_namespaced_pod_log(f"bench-worker-{i}", "default").count("\n") for i in range(PODS)
        )
        read = time.monotonic() - read_start
        assert total == PODS * LINES, total
        print(f"pods: {PODS}, lines per pod: {LINES}")
        print(f"submit -> all pods started: {started:.2f} s")
        print(
            f"submit -> all pods succeeded, logs complete: {done:.2f} s ({PODS * LINES / done:,.0f} lines/s)"
        )
        print(f"read all {total:,} lines through the API: {read:.2f} s ({total / read:,.0f} lines/s)")
    finally:
        handle.stop()


if __name__ == "__main__":
    main()
