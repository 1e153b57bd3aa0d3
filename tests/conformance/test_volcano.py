"""Volcano: the platform guide's manifest, gang scheduling, policies, plugins, queues, dependsOn, topology."""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from typing import Any

from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.conformance.jobs import reference_manifest, shell_job
from tests.conformance.planes import Plane, conform, wait_until

NS = "default"
GROUP, VERSION = "batch.volcano.sh", "v1alpha1"


def _jobs(plane: Plane) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(plane.api())


def _create(plane: Plane, job: dict[str, Any]) -> None:
    _jobs(plane).create_namespaced_custom_object(GROUP, VERSION, NS, "jobs", job)


def _delete(plane: Plane, name: str) -> None:
    with contextlib.suppress(ApiException):
        _jobs(plane).delete_namespaced_custom_object(GROUP, VERSION, NS, "jobs", name)


def _pods(plane: Plane, job: str) -> list[Any]:
    return (
        client.CoreV1Api(plane.api())
        .list_namespaced_pod(NS, label_selector=f"volcano.sh/job-name={job}")
        .items
    )


def _rejected(plane: Plane, job: dict[str, Any]) -> str:
    try:
        _create(plane, job)
    except ApiException as exc:
        assert exc.status in (400, 403, 422), exc.status
        return str(exc.body)
    _delete(plane, job["metadata"]["name"])
    raise AssertionError(f"the job was admitted: {job['spec']}")


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def test_reference_manifest_gets_a_completed_rank_table(plane: Plane) -> None:
    name = _name("guide")
    docs = reference_manifest(name)
    core = client.CoreV1Api(plane.api())

    def scenario() -> None:
        core.create_namespaced_config_map(NS, docs[0])
        _create(plane, docs[1])

        def table() -> dict[str, Any] | None:
            data = core.read_namespaced_config_map(f"configmap1980-{name}", NS).data or {}
            doc = json.loads(data.get("jobstart_hccl.json") or "{}")
            return doc if doc.get("status") == "completed" else None

        done = wait_until("a completed rank table", table, timeout=180)
        assert done["server_count"] == "1" and len(done["server_list"][0]["device"]) == 1, done
        pod = _pods(plane, name)[0]
        assert pod.spec.scheduler_name == "volcano" and pod.status.phase == "Running"
        assert "huawei.com/AscendReal" in pod.metadata.annotations

    try:
        conform(plane, "volcano-reference-manifest", scenario)
    finally:
        _delete(plane, name)
        core.delete_namespaced_config_map(f"configmap1980-{name}", NS)


def test_gang_binds_nothing_until_all_fit(plane: Plane) -> None:
    name = _name("gang")
    job = shell_job(name, "sleep 60", replicas=5, npus=8)  # 5 x 8 NPUs on a 4-node pool: never fits

    def scenario() -> None:
        _create(plane, job)
        wait_until("the pods or the pod group", lambda: _pods(plane, name) or _podgroup_phase(plane, name))
        time.sleep(5)
        bound = [p.metadata.name for p in _pods(plane, name) if p.spec.node_name]
        assert bound == [], f"gang broken: {bound} bound while 5 x 8 NPUs cannot fit"
        assert _podgroup_phase(plane, name) in ("Pending", "Inqueue"), _podgroup_phase(plane, name)

    try:
        conform(plane, "volcano-gang", scenario)
    finally:
        _delete(plane, name)


def _podgroup_phase(plane: Plane, job: str) -> str | None:
    groups = _jobs(plane).list_namespaced_custom_object("scheduling.volcano.sh", "v1beta1", NS, "podgroups")[
        "items"
    ]
    mine = [g for g in groups if g["metadata"]["name"].startswith(f"{job}-")]
    return ((mine[0].get("status") or {}).get("phase") or "Pending") if mine else None


def test_policies_admission(plane: Plane) -> None:
    def scenario() -> None:
        dup = shell_job(
            _name("pol"),
            "true",
            policies=[
                {"event": "PodFailed", "action": "RestartJob"},
                {"event": "PodFailed", "action": "AbortJob"},
            ],
        )
        assert "duplicate" in _rejected(plane, dup).lower()
        both = shell_job(
            _name("pol"), "true", policies=[{"event": "PodFailed", "exitCode": 3, "action": "AbortJob"}]
        )
        _rejected(plane, both)

    conform(plane, "volcano-policies", scenario)


def test_plugins(plane: Plane) -> None:
    name = _name("plug")
    job = shell_job(name, "sleep 60", replicas=2)
    job["spec"]["plugins"] = {"svc": [], "ssh": [], "env": []}
    core = client.CoreV1Api(plane.api())

    def scenario() -> None:
        _create(plane, job)
        wait_until("the svc plugin's Service", lambda: _exists(core.read_namespaced_service, name))
        hosts = wait_until(
            "the svc plugin's ConfigMap", lambda: _exists(core.read_namespaced_config_map, f"{name}-svc")
        )
        assert hosts.data["worker.host"].split() == [f"{name}-worker-0.{name}", f"{name}-worker-1.{name}"]
        wait_until("the ssh plugin's Secret", lambda: _exists(core.read_namespaced_secret, f"{name}-ssh"))
        unknown = shell_job(_name("plug"), "true")
        unknown["spec"]["plugins"] = {"no-such-plugin": []}
        assert "no-such-plugin" in _rejected(plane, unknown)

    try:
        conform(plane, "volcano-plugins", scenario)
    finally:
        _delete(plane, name)


def _exists(read: Any, name: str) -> Any:
    try:
        return read(name, NS)
    except ApiException:
        return None


def test_queues(plane: Plane) -> None:
    def scenario() -> None:
        queue = _jobs(plane).get_cluster_custom_object(
            "scheduling.volcano.sh", "v1beta1", "queues", "default"
        )
        assert (queue.get("status") or {}).get("state") == "Open", queue.get("status")
        _rejected(plane, shell_job(_name("q"), "true", queue="no-such-queue"))

    conform(plane, "volcano-queues", scenario)


def test_depends_on(plane: Plane) -> None:
    name = _name("dep")
    job = shell_job(name, "sleep 60")
    second = json.loads(json.dumps(job["spec"]["tasks"][0]))
    second["name"] = "second"
    second["dependsOn"] = {"name": ["worker"]}
    job["spec"]["tasks"].append(second)
    job["spec"]["minAvailable"] = 1

    def scenario() -> None:
        _create(plane, job)
        wait_until(
            "the first task running",
            lambda: any(
                p.status.phase == "Running"
                for p in _pods(plane, name)
                if p.metadata.name.startswith(f"{name}-worker")
            ),
            timeout=120,
        )
        wait_until(
            "the second task's pod",
            lambda: any(p.metadata.name == f"{name}-second-0" for p in _pods(plane, name)),
            timeout=60,
        )

    def waits() -> None:
        blocked = shell_job(_name("dep"), "sleep 60", npus=8, replicas=5)  # the first task never runs
        blocked["spec"]["minAvailable"] = 1
        after = json.loads(json.dumps(blocked["spec"]["tasks"][0]))
        after.update(name="second", replicas=1, dependsOn={"name": ["worker"]})
        blocked["spec"]["tasks"][0]["minAvailable"] = 5
        blocked["spec"]["tasks"].append(after)
        _create(plane, blocked)
        try:
            time.sleep(6)
            assert not any(
                p.metadata.name.startswith(f"{blocked['metadata']['name']}-second")
                for p in _pods(plane, blocked["metadata"]["name"])
            ), "dependsOn ignored: the second task started"
        finally:
            _delete(plane, blocked["metadata"]["name"])

    try:
        conform(plane, "volcano-depends-on", lambda: (waits(), scenario()))
    finally:
        _delete(plane, name)


def test_network_topology_hard_mode(plane: Plane) -> None:
    name = _name("topo")
    job = shell_job(
        name, "sleep 60", replicas=2, npus=8, networkTopology={"mode": "hard", "highestTierAllowed": 1}
    )

    def scenario() -> None:
        hypernodes = _jobs(plane).list_cluster_custom_object("topology.volcano.sh", "v1alpha1", "hypernodes")[
            "items"
        ]
        leaves = {h["metadata"]["name"]: h for h in hypernodes if h["spec"]["tier"] == 1}
        assert leaves, "no leaf HyperNodes"
        counts = wait_until(
            "HyperNode status.nodeCount",
            lambda: (
                [
                    (h.get("status") or {}).get("nodeCount")
                    for h in _jobs(plane).list_cluster_custom_object(
                        "topology.volcano.sh", "v1alpha1", "hypernodes"
                    )["items"]
                    if h["spec"]["tier"] == 1
                ]
                if all(
                    (h.get("status") or {}).get("nodeCount")
                    for h in _jobs(plane).list_cluster_custom_object(
                        "topology.volcano.sh", "v1alpha1", "hypernodes"
                    )["items"]
                    if h["spec"]["tier"] == 1
                )
                else None
            ),
            timeout=30,
        )
        assert sum(counts) == 4, counts
        _create(plane, job)
        nodes = wait_until(
            "both pods bound",
            lambda: (
                n
                if len(n := [p.spec.node_name for p in _pods(plane, name) if p.spec.node_name]) == 2
                else None
            ),
            timeout=120,
        )
        core = client.CoreV1Api(plane.api())
        leaf_of = {n: core.read_node(n).metadata.labels.get("topology.ranktable.io/leaf") for n in nodes}
        assert len(set(leaf_of.values())) == 1, f"hard network topology broken: {leaf_of}"

    try:
        conform(plane, "volcano-network-topology", scenario)
    finally:
        _delete(plane, name)
