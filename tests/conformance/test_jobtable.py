"""The live job table's watches (Volcano jobs, pods, rank-table ConfigMaps) on each control plane."""

from __future__ import annotations

import contextlib
import threading
import uuid
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from ranktable.cluster.client import ClusterClient
from ranktable.cluster.jobtable import JobTable
from tests.conformance.jobs import shell_job
from tests.conformance.planes import Plane
from tests.integration.sim_helpers import rank_table_configmap
from tests.integration.test_cluster_jobtable import rows_until

NS = "default"


def test_the_job_table_follows_job_pods_and_rank_table(plane: Plane) -> None:
    name = f"jt-{uuid.uuid4().hex[:6]}"
    core = client.CoreV1Api(plane.api())
    custom = client.CustomObjectsApi(plane.api())
    table = JobTable(ClusterClient(str(plane.kubeconfig), None, NS), settle=0.05)
    stop = threading.Event()
    table.start()
    rows = table.follow(stop)

    def until(check: Any) -> dict[str, Any]:
        found: dict[str, Any] = rows_until(rows, check, timeout=120)
        return found

    try:
        assert name not in {r["name"] for r in next(rows)}
        core.create_namespaced_config_map(NS, rank_table_configmap(name))
        custom.create_namespaced_custom_object(
            "batch.volcano.sh", "v1alpha1", NS, "jobs", shell_job(name, "sleep 300")
        )
        running = until(lambda r: r.get(name, {}).get("health", {}).get("ready") == 1)
        assert running[name]["rank_table"] == "initializing" and running[name]["nodes"] == 1
        core.patch_namespaced_config_map(
            f"configmap1980-{name}", NS, {"data": {"jobstart_hccl.json": '{"status":"completed"}'}}
        )
        until(lambda r: r[name]["rank_table"] == "completed")
        custom.delete_namespaced_custom_object("batch.volcano.sh", "v1alpha1", NS, "jobs", name)
        until(lambda r: name not in r)
    finally:
        stop.set()
        table.close()
        with contextlib.suppress(ApiException):
            custom.delete_namespaced_custom_object("batch.volcano.sh", "v1alpha1", NS, "jobs", name)
        with contextlib.suppress(ApiException):
            core.delete_namespaced_config_map(f"configmap1980-{name}", NS)
