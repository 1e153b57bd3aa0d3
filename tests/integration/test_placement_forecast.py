"""The layout preview predicts the simulated pool's placement; the job layout shows it beside the actual."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ranktable.cluster.observing import pod_index_of
from ranktable.usecases.jobs import ClusterSettings, Jobs
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.sim_helpers import eventually


def _jobs(pool: SimPoolHandle) -> Jobs:
    return Jobs(ClusterSettings(kubeconfig=str(pool.kubeconfig), context=pool.context, keep_logs_s=0))


def _spec(jobs: Jobs, name: str, nodes: int) -> object:
    return jobs.spec(
        {"name": name, "image": "busybox", "nodes": nodes, "npus_per_node": 8, "command": ["sleep", "60"]}
    )


def _bound(jobs: Jobs, name: str, count: int) -> list[str] | None:
    pods = jobs.client("default").job_pods(name)
    nodes = [(pod_index_of(p["metadata"]["name"]), (p.get("spec") or {}).get("nodeName")) for p in pods]
    if len(nodes) < count or not all(node for _, node in nodes):
        return None
    return [str(node) for _, node in sorted(nodes)]


def _submit_partitioned(
    pool: SimPoolHandle, name: str, nodes: int, partitions: int, job_topology: dict[str, object] | None = None
) -> Any:
    """A Volcano job of `nodes` pods in `partitions` partitions of 2, each partition under one leaf (tier 1),
    the job itself under `job_topology` when given; answers the pool's CoreV1Api."""
    from kubernetes import client

    from tests.integration.sim_helpers import volcano_job

    job = volcano_job(name, nodes, ["sleep", "60"], npus=8)
    if job_topology is not None:
        job["spec"]["networkTopology"] = job_topology
    job["spec"]["tasks"][0]["partitionPolicy"] = {
        "totalPartitions": partitions,
        "partitionSize": 2,
        "minPartitions": partitions,
        "networkTopology": {"mode": "hard", "highestTierAllowed": 1},
    }
    api = pool.api_client()
    client.CustomObjectsApi(api).create_namespaced_custom_object(
        "batch.volcano.sh", "v1alpha1", "default", "jobs", job
    )
    return client.CoreV1Api(api)


def test_preview_predicts_the_spread_over_leaves_and_the_layout_shows_both(
    sim_pool_factory: Callable[..., SimPoolHandle],
) -> None:
    pool = sim_pool_factory(nodes=4, leaves=2)
    jobs = _jobs(pool)
    spec = _spec(jobs, "fore", 4)
    preview = jobs.layout_preview(spec)  # type: ignore[arg-type]
    placement = preview["placement"]
    assert placement["exact"] and placement["policy"] == "spread-by-leaf", placement
    [case] = placement["cases"]
    # the first nodes by name would be 0 leaf changes; the pool's scheduler alternates the leaves
    assert case["crossings_per_tier"][0] == 4 and case["speedup"] > 1.2, case
    assert preview["warnings"][0].startswith(f"preview: expected on {', '.join(case['nodes'])}")
    assert placement["summary"] == preview["warnings"][0]  # the panel shows it once, above the figures
    jobs.submit(spec)  # type: ignore[arg-type]
    actual = eventually(lambda: _bound(jobs, "fore", 4), timeout=60)
    assert actual == case["nodes"]
    jobs.client("default").wait_rank_table("fore", timeout=60)
    layout = jobs.layout("default", "fore").to_json()
    assert layout["placement"]["verdict"] == "as predicted", layout["placement"]
    assert layout["placement"]["actual"]["nodes"] == actual
    assert "placement: as predicted" in jobs.layout("default", "fore").report_text


def test_network_topology_hard_1_is_predicted_under_one_leaf_and_lands_there(
    sim_pool_factory: Callable[..., SimPoolHandle],
) -> None:
    """Without networkTopology the pool spreads two pods over both leaves; with hard:1 the preview says
    one leaf, no crossing, and the scheduler puts them there."""
    pool = sim_pool_factory(nodes=4, leaves=2)
    jobs = _jobs(pool)
    spread = jobs.layout_preview(_spec(jobs, "loose", 2))["placement"]["cases"][0]  # type: ignore[arg-type]
    assert spread["crossings_per_tier"][0] > 0, spread
    spec = jobs.spec(
        {
            "name": "tight",
            "image": "busybox",
            "nodes": 2,
            "npus_per_node": 8,
            "command": ["sleep", "60"],
            "network_topology": "hard:1",
        }
    )
    placement = jobs.layout_preview(spec)["placement"]
    [case] = placement["cases"]
    assert (
        placement["exact"] and "networkTopology hard:1 keeps the gang under one leaf" in placement["reason"]
    )
    assert case["crossings_per_tier"][0] == 0 and case["nodes"] != spread["nodes"], case
    jobs.submit(spec)
    actual = eventually(lambda: _bound(jobs, "tight", 2), timeout=60)
    assert actual == case["nodes"]
    jobs.client("default").wait_rank_table("tight", timeout=60)
    assert jobs.layout("default", "tight").to_json()["placement"]["verdict"] == "as predicted"
    # three pods fit under no leaf of two nodes: the preview says the job would never start
    never = jobs.spec({**spec.to_dict(), "name": "never", "nodes": 3})
    assert any("even on an idle pool" in w for w in jobs.layout_preview(never)["warnings"])


def test_partition_policy_places_every_partition_in_its_own_leaf(
    sim_pool_factory: Callable[..., SimPoolHandle],
) -> None:
    """Volcano's partitionPolicy with a tier-1 networkTopology: every pod placed, each partition in a leaf."""
    from kubernetes import client

    pool = sim_pool_factory(nodes=4, leaves=2)
    core = _submit_partitioned(pool, "parts", 4, 2)

    def bound() -> list[client.V1Pod] | None:
        pods = core.list_namespaced_pod("default", label_selector="volcano.sh/job-name=parts").items
        return pods if len([p for p in pods if p.spec.node_name]) == 4 else None

    leaves: dict[str, set[str]] = {}
    for pod in eventually(bound, timeout=30):
        leaf = core.read_node(pod.spec.node_name).metadata.labels["topology.ranktable.io/leaf"]
        leaves.setdefault(pod.metadata.labels["volcano.sh/partition-id"], set()).add(leaf)
    assert sorted(leaves) == ["0", "1"] and all(len(v) == 1 for v in leaves.values()), leaves


TWO_SPINES = """\
SwitchName=leaf0 Nodes=node[0-1]
SwitchName=leaf1 Nodes=node[2-3]
SwitchName=leaf2 Nodes=node[4-5]
SwitchName=leaf3 Nodes=node[6-7]
SwitchName=spine0 Switches=leaf[0-1]
SwitchName=spine1 Switches=leaf[2-3]
"""


def test_partitions_stay_inside_the_jobs_own_network_topology(
    sim_pool_factory: Callable[..., SimPoolHandle], tmp_path: Path
) -> None:
    """3 partitions of 2, each in a leaf, the job in one spine (4 nodes): the gang can never fit, so
    nothing binds (partitions spread over two spines broke the job's own networkTopology)."""
    from kubernetes import client

    conf = tmp_path / "topology.conf"
    conf.write_text(TWO_SPINES)
    pool = sim_pool_factory(topology=conf)
    core = _submit_partitioned(pool, "spines", 6, 3, {"mode": "hard", "highestTierAllowed": 2})

    def unschedulable() -> list[client.CoreV1Event] | None:
        events = core.list_namespaced_event("default", field_selector="reason=FailedScheduling").items
        return [e for e in events if e.involved_object.name.startswith("spines-")] or None

    eventually(unschedulable, timeout=30)
    pods = core.list_namespaced_pod("default", label_selector="volcano.sh/job-name=spines").items
    assert len(pods) == 6 and not [p.spec.node_name for p in pods if p.spec.node_name]
