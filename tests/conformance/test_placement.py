"""The layout preview's placement forecast against each control plane's scheduler, and partitionPolicy."""

from __future__ import annotations

import uuid
from typing import Any

from kubernetes import client

from ranktable.usecases.jobs import ClusterSettings, Jobs
from tests.conformance.jobs import shell_job
from tests.conformance.planes import Plane, conform, wait_until

NS = "default"
LEAF = "topology.ranktable.io/leaf"


def _jobs(plane: Plane) -> Jobs:
    return Jobs(ClusterSettings(kubeconfig=str(plane.kubeconfig), keep_logs_s=0))


def _pod_nodes(plane: Plane, job: str) -> list[Any]:
    return (
        client.CoreV1Api(plane.api())
        .list_namespaced_pod(NS, label_selector=f"volcano.sh/job-name={job}")
        .items
    )


def test_preview_predicts_the_placement(plane: Plane) -> None:
    """Exact where the scheduler is deterministic (the simulated pool), a range where it picks at random
    (Volcano); the job's layout then names its verdict, which must hold."""
    name = f"fore-{uuid.uuid4().hex[:5]}"
    jobs = _jobs(plane)
    spec = jobs.spec(
        {"name": name, "image": "img", "nodes": 4, "npus_per_node": 8, "command": ["sleep", "120"]}
    )

    def scenario() -> None:
        placement = jobs.layout_preview(spec)["placement"]
        expected = "spread-by-leaf" if plane.name == "python" else "random-among-equals"
        assert placement["policy"] == expected, placement
        jobs.submit(spec)
        wait_until(
            "all 4 pods bound",
            lambda: len([p for p in _pod_nodes(plane, name) if p.spec.node_name]) == 4,
            timeout=120,
        )
        jobs.client(NS).wait_rank_table(name, timeout=180)
        found = jobs.layout(NS, name).to_json()["placement"]
        wanted = "as predicted" if placement["exact"] else "within the predicted range"
        assert found["verdict"] == wanted, found

    try:
        conform(plane, "placement-forecast", scenario)
    finally:
        jobs.client(NS).stop(name)


def test_preview_predicts_network_topology_under_one_leaf(plane: Plane) -> None:
    """A job composed with network_topology hard:1: the preview predicts one leaf (exact on both planes:
    any leaf Volcano picks has no crossing), and the scheduler keeps both pods under one leaf."""
    name = f"tier-{uuid.uuid4().hex[:5]}"
    jobs = _jobs(plane)
    spec = jobs.spec(
        {
            "name": name,
            "image": "img",
            "nodes": 2,
            "npus_per_node": 8,
            "command": ["sleep", "120"],
            "network_topology": "hard:1",
        }
    )

    def scenario() -> None:
        placement = jobs.layout_preview(spec)["placement"]
        [case] = placement["cases"]
        assert placement["exact"] and case["crossings_per_tier"][0] == 0, placement
        jobs.submit(spec)
        wait_until(
            "both pods bound",
            lambda: len([p for p in _pod_nodes(plane, name) if p.spec.node_name]) == 2,
            timeout=120,
        )
        core = client.CoreV1Api(plane.api())
        leaves = {core.read_node(p.spec.node_name).metadata.labels[LEAF] for p in _pod_nodes(plane, name)}
        assert len(leaves) == 1, leaves
        jobs.client(NS).wait_rank_table(name, timeout=180)
        found = jobs.layout(NS, name).to_json()["placement"]
        assert found["verdict"] in ("as predicted", "same layout as predicted, on other nodes"), found
        assert found["actual"]["crossings_per_tier"][0] == 0, found

    try:
        conform(plane, "placement-network-topology", scenario)
    finally:
        jobs.client(NS).stop(name)


def test_partition_policy_puts_each_partition_in_one_leaf(plane: Plane) -> None:
    """Volcano's partitionPolicy: pods get `volcano.sh/partition-id` (index / partitionSize) and each
    partition's networkTopology holds for it alone; every pod of the job is placed."""
    name = f"part-{uuid.uuid4().hex[:5]}"
    job = shell_job(name, "sleep 120", replicas=4, npus=8)
    job["spec"]["tasks"][0]["partitionPolicy"] = {
        "totalPartitions": 2,
        "partitionSize": 2,
        "minPartitions": 2,
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
    }
    custom = client.CustomObjectsApi(plane.api())
    core = client.CoreV1Api(plane.api())

    def scenario() -> None:
        custom.create_namespaced_custom_object("batch.volcano.sh", "v1alpha1", NS, "jobs", job)
        pods = wait_until(
            "all 4 pods bound",
            lambda: p if len(p := [x for x in _pod_nodes(plane, name) if x.spec.node_name]) == 4 else None,
            timeout=120,
        )
        leaves: dict[str, set[str]] = {}
        for pod in pods:
            partition = (pod.metadata.labels or {}).get("volcano.sh/partition-id")
            assert partition is not None, pod.metadata.labels
            leaves.setdefault(partition, set()).add(core.read_node(pod.spec.node_name).metadata.labels[LEAF])
        assert sorted(leaves) == ["0", "1"] and all(len(v) == 1 for v in leaves.values()), leaves

    try:
        conform(plane, "volcano-partition-policy", scenario)
    finally:
        custom.delete_namespaced_custom_object("batch.volcano.sh", "v1alpha1", NS, "jobs", name)
