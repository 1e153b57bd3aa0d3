"""The simulated pool measured against what the real platform does (issue 10, item 5): kubelet
back-off, rank tables that stay completed, Volcano's admission rules and plugins, topology-aware
scheduling, and dry-run, protobuf bodies, field selectors and explain for kubectl."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ranktable.sim.regex import search
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.sim_helpers import eventually, rank_table_configmap, shell_pod, volcano_job

JOBS = ("batch.volcano.sh", "v1alpha1", "default", "jobs")


def _apis(pool: SimPoolHandle) -> tuple[client.CoreV1Api, client.CustomObjectsApi]:
    api = pool.api_client()
    return client.CoreV1Api(api), client.CustomObjectsApi(api)


def _phase(custom: client.CustomObjectsApi, name: str) -> str:
    return str(custom.get_namespaced_custom_object(*JOBS, name)["status"]["state"]["phase"])


def test_a_crashing_container_backs_off_like_the_kubelet(sim_pool: SimPoolHandle) -> None:
    """First restart at once, then 10 s: after 4 s a crash loop has restarted once, not five times."""
    core, _ = _apis(sim_pool)
    core.create_namespaced_pod("default", shell_pod("loop", "echo boom; exit 1", restart="Always"))

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
    from ranktable.cluster.client import ClusterClient

    waited = ClusterClient(str(pool.kubeconfig), pool.context, "default").wait_rank_table("short", timeout=10)
    assert waited.report.completed  # `ranktable job wait-ranktable` on a finished short job succeeds


def _create_job(custom: client.CustomObjectsApi, job: dict[str, Any]) -> dict[str, Any]:
    return dict(custom.create_namespaced_custom_object(*JOBS, job))


def _refusal(custom: client.CustomObjectsApi, job: dict[str, Any]) -> str:
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object(*JOBS, job)
    assert err.value.status == 422
    return str(json.loads(err.value.body)["message"])


def test_duplicate_policy_events_are_denied_like_volcanos_webhook(sim_pool: SimPoolHandle) -> None:
    _, custom = _apis(sim_pool)
    job = volcano_job("twice", 1, ["true"])
    job["spec"]["policies"] = [
        {"event": "PodFailed", "action": "RestartJob"},
        {"events": ["PodEvicted", "PodFailed"], "action": "AbortJob"},
    ]
    assert "duplicate event PodFailed across different policy" in _refusal(custom, job)
    job["spec"]["policies"] = [
        {"event": "*", "action": "AbortJob"},
        {"event": "PodEvicted", "action": "RestartJob"},
    ]
    assert "if there's * here, no other policy should be here" in _refusal(custom, job)
    job["spec"]["policies"] = [{"event": "PodFailed", "exitCode": 3, "action": "AbortJob"}]
    assert "must not specify event and exitCode simultaneously" in _refusal(custom, job)
    job["spec"]["policies"] = []
    job["spec"]["tasks"][0]["policies"] = [{"event": "PodRunning", "action": "AbortJob"}]
    assert 'spec.tasks[0].policies[0].event: Invalid value: "PodRunning"' in _refusal(custom, job)
    job["spec"]["tasks"][0]["policies"] = [{"event": "PodFailed", "action": "RestartTask"}]
    assert _create_job(custom, job)["metadata"]["name"] == "twice"


def _two_task_job(name: str, worker_selector: dict[str, str] | None = None) -> dict[str, Any]:
    """An MPI-style job: `master` depends on `worker` (Volcano's task-start-dependency example)."""
    job = volcano_job(name, 2, ["sleep", "30"], npus=1, plugins={"svc": []})
    worker = job["spec"]["tasks"][0]
    worker["template"]["spec"].pop("affinity")
    if worker_selector is not None:
        worker["template"]["spec"]["nodeSelector"] = worker_selector
    master = json.loads(json.dumps(worker))
    master.update(name="master", replicas=1, dependsOn={"name": ["worker"]})
    master["template"]["spec"]["nodeSelector"] = {"accelerator/huawei-npu": "ascend-1980"}
    job["spec"]["tasks"] = [master, worker]
    job["spec"]["minAvailable"] = 2
    return job


def test_depends_on_creates_a_task_once_the_tasks_it_names_are_ready(sim_pool: SimPoolHandle) -> None:
    core, custom = _apis(sim_pool)

    def pods(job: str) -> list[str]:
        items = core.list_namespaced_pod("default", label_selector=f"volcano.sh/job-name={job}").items
        return sorted(p.metadata.name for p in items)

    _create_job(custom, _two_task_job("stuck", {"no-such": "label"}))  # workers can never run
    eventually(lambda: pods("stuck") == ["stuck-worker-0", "stuck-worker-1"], what="worker pods")
    time.sleep(2)
    assert pods("stuck") == ["stuck-worker-0", "stuck-worker-1"]  # no master: its dependency is not ready

    _create_job(custom, _two_task_job("chain"))
    eventually(lambda: "chain-master-0" in pods("chain"), what="the master pod")
    workers = [core.read_namespaced_pod(f"chain-worker-{i}", "default") for i in range(2)]
    master = core.read_namespaced_pod("chain-master-0", "default")
    assert all(w.status.phase == "Running" for w in workers)
    assert all(master.metadata.creation_timestamp >= w.status.start_time for w in workers)
    bad = _two_task_job("loop")
    bad["spec"]["tasks"][1]["dependsOn"] = {"name": ["master"]}
    assert "doesn't form a DAG" in _refusal(custom, bad)


def _nodes_of(core: client.CoreV1Api, job: str) -> list[str]:
    items = core.list_namespaced_pod("default", label_selector=f"volcano.sh/job-name={job}").items
    return [p.spec.node_name for p in items if p.spec.node_name]


def _leaf(core: client.CoreV1Api, node: str) -> str:
    return str(core.read_node(node).metadata.labels["topology.ranktable.io/leaf"])


def test_network_topology_hard_mode_keeps_a_job_inside_one_hypernode(sim_pool: SimPoolHandle) -> None:
    core, custom = _apis(sim_pool)
    tight = volcano_job("tight", 3, ["sleep", "30"], plugins={})
    tight["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    _create_job(custom, tight)
    nodes = eventually(lambda: len(_nodes_of(core, "tight")) == 3 and _nodes_of(core, "tight"), what="placed")
    assert len({_leaf(core, n) for n in nodes}) == 1  # one leaf, though spreading would cross

    toobig = volcano_job("toobig", 5, ["sleep", "30"], plugins={})  # 5 pods, leaves of 4 nodes
    toobig["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 1}
    _create_job(custom, toobig)

    def refusal() -> str | None:
        events = core.list_namespaced_event(
            "default", field_selector="involvedObject.name=toobig-worker-0"
        ).items
        return next((e.message for e in events if e.reason == "FailedScheduling"), None)

    assert "no HyperNode of tier <= 1 can hold the gang" in eventually(refusal, what="FailedScheduling")
    assert _nodes_of(core, "toobig") == []
    wide = volcano_job("wide", 4, ["sleep", "30"], plugins={})
    wide["spec"]["networkTopology"] = {"mode": "hard", "highestTierAllowed": 2}  # the spine may hold it
    custom.delete_namespaced_custom_object(*JOBS, "tight")
    _create_job(custom, wide)
    eventually(lambda: len(_nodes_of(core, "wide")) == 4, what="wide placed across the spine")


def test_hypernode_status_counts_the_nodes_under_it(sim_pool: SimPoolHandle) -> None:
    api = sim_pool.api_client()
    custom = client.CustomObjectsApi(api)
    hn = ("topology.volcano.sh", "v1alpha1", "hypernodes")

    def hypernode(name: str, tier: int, members: list[dict[str, Any]]) -> dict[str, Any]:
        body = {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name}}
        return {**body, "spec": {"tier": tier, "members": members}}

    regex = {"type": "Node", "selector": {"regexMatch": {"pattern": "^node-[0-2]$"}}}
    custom.create_cluster_custom_object(*hn, hypernode("rack-a", 1, [regex]))
    # a pattern that makes a backtracking engine run for ever: RE2 answers at once (and matches nothing)
    evil = {"type": "Node", "selector": {"regexMatch": {"pattern": "^(a+)+$|^(n|o|d|e|-|[0-9])+x$"}}}
    custom.create_cluster_custom_object(*hn, hypernode("rack-evil", 1, [evil]))
    up = {"type": "HyperNode", "selector": {"exactMatch": {"name": "rack-a"}}}
    leaf1 = {"type": "HyperNode", "selector": {"exactMatch": {"name": "leaf-1"}}}
    custom.create_cluster_custom_object(*hn, hypernode("row-1", 2, [up, leaf1]))

    def counts() -> dict[str, int] | None:
        items = custom.list_cluster_custom_object(*hn)["items"]
        found = {h["metadata"]["name"]: (h.get("status") or {}).get("nodeCount") for h in items}
        return found if None not in found.values() else None

    found = eventually(counts, what="nodeCount on every HyperNode")
    assert found["rack-a"] == 3 and found["rack-evil"] == 0 and found["row-1"] == 7
    assert found["leaf-0"] == 4 and found["spine-0"] == 8


def test_re2_patterns_do_not_backtrack() -> None:
    started = time.monotonic()
    assert not search("^(a+)+$", "a" * 64 + "b")  # 2^64 steps for a backtracking engine
    assert search("node-[0-9]+", "pool/node-12")
    assert not search("(", "(")  # invalid: matches nothing
    assert time.monotonic() - started < 1


def test_the_ssh_plugin_makes_a_secret_and_mounts_it(sim_pool: SimPoolHandle) -> None:
    core, custom = _apis(sim_pool)
    _create_job(custom, volcano_job("mpi", 2, ["sleep", "30"], npus=1, plugins={"ssh": [], "svc": []}))
    secret = eventually(
        lambda: core.list_namespaced_secret("default", field_selector="metadata.name=mpi-ssh").items,
        what="Secret mpi-ssh",
    )[0]
    assert sorted(secret.data) == ["authorized_keys", "config", "id_rsa", "id_rsa.pub"]
    private = base64.b64decode(secret.data["id_rsa"])
    key = serialization.load_pem_private_key(private, password=None)
    assert private.startswith(b"-----BEGIN RSA PRIVATE KEY-----") and key.key_size == 2048
    public = base64.b64decode(secret.data["id_rsa.pub"])
    assert public.startswith(b"ssh-rsa ") and base64.b64decode(secret.data["authorized_keys"]) == public
    config = base64.b64decode(secret.data["config"]).decode()
    assert "Host mpi-worker-1\n  HostName mpi-worker-1.mpi\n  Port 22\n" in config
    assert secret.metadata.owner_references[0].kind == "Job"
    pod = eventually(
        lambda: core.read_namespaced_pod("mpi-worker-0", "default").status.phase == "Running" and 1
    )
    assert pod
    box = next((sim_pool.state_dir / "pods" / "default").glob("mpi-worker-0-*"))
    mounted = box / "work" / ".ssh" / "id_rsa"
    eventually(mounted.is_file, what="the key in the pod's ~/.ssh")
    assert mounted.read_bytes() == private and (mounted.stat().st_mode & 0o777) == 0o600


def test_a_four_node_job_crosses_leaves_in_a_shared_pool(sim_pool_factory: Any) -> None:
    """Other tenants hold nodes and the scheduler spreads a gang over leaves, so routing has work."""
    from ranktable.cluster.client import ClusterClient
    from ranktable.compose.manifests import compose
    from ranktable.compose.spec import JobSpec
    from ranktable.usecases.jobs import job_layout

    pool = sim_pool_factory(tenants=2, ranktable_delay=0.1)
    core, _ = _apis(pool)
    tenants = core.list_namespaced_pod("tenant-b").items
    assert len(tenants) == 2
    eventually(
        lambda: all(p.status.phase == "Running" for p in core.list_namespaced_pod("tenant-b").items),
        what="the other tenant's pods Running",
    )
    cluster = ClusterClient(str(pool.kubeconfig), pool.context, "default")
    cluster.submit(compose(JobSpec(name="demo", image="i", nodes=4, routing=True, command=["sleep", "30"])))
    cluster.wait_rank_table("demo", timeout=30)
    held = {p.spec.node_name for p in tenants}
    placed = _nodes_of(core, "demo")
    assert not held & set(placed)
    assert len({_leaf(core, n) for n in placed}) == 2
    report = job_layout(cluster, "demo").report
    assert report["speedup"] > 1.0


def test_a_watch_from_before_the_server_started_is_gone(sim_pool: SimPoolHandle) -> None:
    """A fresh API server's watch cache starts at its first list: resourceVersion 1 gets 410 Gone."""
    core, _ = _apis(sim_pool)
    resp = core.list_namespaced_config_map(
        "default", watch=True, resource_version="1", timeout_seconds=2, _preload_content=False
    )
    first = json.loads(resp.read().decode().splitlines()[0])
    assert first["type"] == "ERROR" and first["object"]["code"] == 410
    current = core.list_namespaced_config_map("default").metadata.resource_version
    resp = core.list_namespaced_config_map(
        "default", watch=True, resource_version=current, timeout_seconds=1, _preload_content=False
    )
    assert b"ERROR" not in resp.read()
