"""The simulated pool measured against what the real platform does (issue 10, item 5): kubelet
back-off, rank tables that stay completed, Volcano's admission rules and plugins, topology-aware
scheduling, and dry-run, protobuf bodies, field selectors and explain for kubectl."""

from __future__ import annotations

import json
import time
from typing import Any

from kubernetes import client

from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.sim_helpers import eventually, rank_table_configmap, volcano_job

JOBS = ("batch.volcano.sh", "v1alpha1", "default", "jobs")


def _apis(pool: SimPoolHandle) -> tuple[client.CoreV1Api, client.CustomObjectsApi]:
    api = pool.api_client()
    return client.CoreV1Api(api), client.CustomObjectsApi(api)


def _phase(custom: client.CustomObjectsApi, name: str) -> str:
    return str(custom.get_namespaced_custom_object(*JOBS, name)["status"]["state"]["phase"])


def _crasher(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "restartPolicy": "Always",
            "containers": [{"name": "main", "image": "x", "command": ["sh", "-c", "echo boom; exit 1"]}],
        },
    }


def test_a_crashing_container_backs_off_like_the_kubelet(sim_pool: SimPoolHandle) -> None:
    """First restart at once, then 10 s: after 4 s a crash loop has restarted once, not five times."""
    core, _ = _apis(sim_pool)
    core.create_namespaced_pod("default", _crasher("loop"))

    def waiting() -> Any:
        st = (core.read_namespaced_pod("loop", "default").status.container_statuses or [None])[0]
        return st if st is not None and st.restart_count == 1 and st.state.waiting else None

    status = eventually(waiting, what="the first restart to crash and wait")
    assert status.state.waiting.reason == "CrashLoopBackOff"
    assert status.state.waiting.message.startswith("back-off 10s restarting failed container=main pod=loop_")
    assert status.last_state.terminated.exit_code == 1
    time.sleep(4)
    assert core.read_namespaced_pod("loop", "default").status.container_statuses[0].restart_count == 1


def test_the_rank_table_stays_completed_after_the_pods_finish(sim_pool_factory: Any) -> None:
    pool = sim_pool_factory(nodes=2, leaves=1, ranktable_delay=0.1)
    core, custom = _apis(pool)
    core.create_namespaced_config_map("default", rank_table_configmap("short"))
    custom.create_namespaced_custom_object(*JOBS, volcano_job("short", 2, ["sleep", "1.5"], restart="Never"))

    def table() -> dict[str, Any]:
        cm = core.read_namespaced_config_map("configmap1980-short", "default")
        return dict(json.loads(cm.data["jobstart_hccl.json"]))

    eventually(lambda: table()["status"] == "completed", what="rank table completed")
    eventually(lambda: _phase(custom, "short") == "Completed", what="job Completed")
    done = table()
    assert done["status"] == "completed" and done["server_count"] == "2"
