"""Volcano behaviour of the simulated pool: gang scheduling, pods, plugins, the rank table, policies."""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ranktable.hccl.validate import check_document
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.sim_helpers import eventually, rank_table_configmap, volcano_job

GROUP, VERSION, PLURAL = "batch.volcano.sh", "v1alpha1", "jobs"
SLEEP = ["sleep", "1000000000000000000"]


def _apis(pool: SimPoolHandle) -> tuple[client.CoreV1Api, client.CustomObjectsApi]:
    api = pool.api_client()
    return client.CoreV1Api(api), client.CustomObjectsApi(api)


def _job(custom: client.CustomObjectsApi, name: str) -> dict[str, Any]:
    return dict(custom.get_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, name))


def _phase(custom: client.CustomObjectsApi, name: str) -> str:
    return str(((_job(custom, name).get("status") or {}).get("state") or {}).get("phase", ""))


def _submit(core: client.CoreV1Api, custom: client.CustomObjectsApi, job: dict[str, Any]) -> None:
    core.create_namespaced_config_map("default", rank_table_configmap(job["metadata"]["name"]))
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, job)


def test_four_node_job_gets_pods_plugins_and_a_completed_rank_table(sim_pool_factory: Any) -> None:
    pool = sim_pool_factory(ranktable_delay=0.2)
    core, custom = _apis(pool)
    _submit(core, custom, volcano_job("train", 4, SLEEP))
    eventually(lambda: _phase(custom, "train") == "Running", what="job Running")
    pods = sorted(
        core.list_namespaced_pod("default", label_selector="volcano.sh/job-name=train").items,
        key=lambda p: p.metadata.name,
    )
    assert [p.metadata.name for p in pods] == [f"train-worker-{i}" for i in range(4)]
    assert len({p.spec.node_name for p in pods}) == 4  # anti-affinity: one pod per server
    first = pods[0]
    assert first.metadata.labels["volcano.sh/task-spec"] == "worker"
    assert first.metadata.annotations["scheduling.k8s.io/group-name"].startswith("train-")
    assert first.metadata.owner_references[0].kind == "Job" and first.metadata.owner_references[0].controller
    env = {e.name: e.value for e in first.spec.containers[0].env}
    assert env["VC_WORKER_HOSTS"] == ",".join(f"train-worker-{i}.train" for i in range(4))
    assert env["VC_WORKER_NUM"] == "4" and env["VK_TASK_INDEX"] == "0" and env["VC_TASK_INDEX"] == "0"
    assert first.spec.hostname == "train-worker-0" and first.spec.subdomain == "train"
    svc_cm = core.read_namespaced_config_map("train-svc", "default")
    assert svc_cm.data["worker.host"].splitlines()[-1] == "train-worker-3.train"
    assert core.read_namespaced_service("train", "default").spec.cluster_ip == "None"

    def completed() -> dict[str, str] | None:
        data = core.read_namespaced_config_map("configmap1980-train", "default").data
        return data if json.loads(data["jobstart_hccl.json"])["status"] == "completed" else None

    data = eventually(completed, what="rank table completed")
    report = check_document(data["jobstart_hccl.json"], "jobstart_hccl.json")
    assert report.ok, report.to_json()
    table = json.loads(data["jobstart_hccl.json"])
    pods = sorted(
        core.list_namespaced_pod("default", label_selector="volcano.sh/job-name=train").items,
        key=lambda p: int(p.metadata.labels["volcano.sh/task-index"]),
    )
    assert table["version"] == "1.0" and table["server_count"] == "4"
    assert [s["server_id"] for s in table["server_list"]] == [
        p.status.host_ip for p in pods
    ]  # pod-index order
    assert [d["rank_id"] for s in table["server_list"] for d in s["device"]] == [str(i) for i in range(32)]
    annotation = json.loads(
        pods[0].metadata.annotations["cce.kubectl.kubernetes.io/ascend-1980-configuration"]
    )
    assert annotation["server_id"] == pods[0].status.host_ip and len(annotation["devices"]) == 8
    tor = json.loads(gzip.decompress(base64.b64decode(data["ranktable_tor.json"])))
    assert [s["pod_name"] for s in tor["server_list"]] == [p.metadata.name for p in pods]
    assert {d["tor_ip"] for d in tor["server_list"][0]["device"]} == {annotation["devices"][0]["tor_ip"]}


def test_gang_scheduling_keeps_an_oversized_job_pending(sim_pool: SimPoolHandle) -> None:
    core, custom = _apis(sim_pool)
    _submit(core, custom, volcano_job("big", 9, SLEEP))

    def failed_scheduling() -> list[Any]:
        return [
            e
            for e in core.list_namespaced_event(
                "default", field_selector="involvedObject.name=big-worker-8"
            ).items
            if e.reason == "FailedScheduling"
        ]

    event = eventually(failed_scheduling, what="FailedScheduling event")[0]
    assert event.type == "Warning"
    assert event.message == "0/8 nodes are available: 8 Insufficient huawei.com/ascend-1980."
    pods = core.list_namespaced_pod("default", label_selector="volcano.sh/job-name=big").items
    assert len(pods) == 9
    assert all(p.spec.node_name is None and p.status.phase == "Pending" for p in pods)  # nobody starts
    assert _phase(custom, "big") == "Pending"
    assert (
        json.loads(
            core.read_namespaced_config_map("configmap1980-big", "default").data["jobstart_hccl.json"]
        )["status"]
        == "initializing"
    )


def test_resources_are_released_when_pods_end(sim_pool_factory: Any) -> None:
    pool = sim_pool_factory(nodes=2, leaves=1)
    core, custom = _apis(pool)
    _submit(core, custom, volcano_job("first", 2, ["sleep", "0.5"]))
    _submit(core, custom, volcano_job("second", 2, ["true"]))
    eventually(lambda: _phase(custom, "first") == "Completed", what="first job Completed")
    eventually(lambda: _phase(custom, "second") == "Completed", what="second job Completed after the first")
    first_end = max(
        p.status.container_statuses[0].state.terminated.finished_at
        for p in core.list_namespaced_pod("default", label_selector="volcano.sh/job-name=first").items
    )
    second_start = min(
        p.status.start_time
        for p in core.list_namespaced_pod("default", label_selector="volcano.sh/job-name=second").items
    )
    assert second_start >= first_end


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda j: j["spec"].update(tasks=[]), "spec.tasks"),
        (lambda j: j["spec"]["tasks"].append(dict(j["spec"]["tasks"][0])), "spec.tasks[1].name"),
        (lambda j: j["spec"].update(minAvailable=5), "spec.minAvailable"),
        (lambda j: j["spec"]["plugins"].update(nccl=[]), "spec.plugins.nccl"),
        (lambda j: j["spec"].update(queue="gold"), "spec.queue"),
        (
            lambda j: j["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"][
                "limits"
            ].update({"huawei.com/ascend-1980": "4"}),
            "spec.tasks[0].template.spec.containers[0].resources.requests",
        ),
    ],
)
def test_invalid_jobs_are_rejected_with_the_field(sim_pool: SimPoolHandle, mutate: Any, field: str) -> None:
    _, custom = _apis(sim_pool)
    job = volcano_job("bad", 4, SLEEP)
    mutate(job)
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, job)
    assert err.value.status == 422
    body = json.loads(err.value.body)
    assert body["reason"] == "Invalid"
    assert field in [c["field"] for c in body["details"]["causes"]]


def test_evicted_pod_restarts_the_job_until_max_retry(sim_pool_factory: Any) -> None:
    pool = sim_pool_factory(nodes=4, leaves=2, ranktable_delay=0.1)
    core, custom = _apis(pool)
    _submit(core, custom, volcano_job("retry", 2, SLEEP, max_retry=1))
    eventually(lambda: _phase(custom, "retry") == "Running", what="Running")
    first_uids = {p.metadata.uid for p in core.list_namespaced_pod("default").items}
    core.delete_namespaced_pod("retry-worker-1", "default")  # an eviction from the job's point of view

    def restarted() -> bool:
        job = _job(custom, "retry")
        pods = core.list_namespaced_pod("default", label_selector="volcano.sh/job-name=retry").items
        return (
            job["status"].get("retryCount") == 1
            and job["status"]["state"]["phase"] == "Running"
            and len(pods) == 2
            and not {p.metadata.uid for p in pods} & first_uids
            and all(p.metadata.annotations["volcano.sh/job-version"] == "1" for p in pods)
        )

    eventually(restarted, what="job restarted with new pods, version 1")
    core.delete_namespaced_pod("retry-worker-0", "default")
    eventually(lambda: _phase(custom, "retry") == "Failed", what="Failed after maxRetry")
    eventually(
        lambda: not [p for p in core.list_namespaced_pod("default").items if p.status.phase == "Running"],
        what="pods stopped",
    )


def test_deleting_a_job_removes_its_pods_and_plugin_objects(sim_pool: SimPoolHandle) -> None:
    core, custom = _apis(sim_pool)
    _submit(core, custom, volcano_job("gone", 2, SLEEP))
    eventually(lambda: _phase(custom, "gone") == "Running", what="Running")
    custom.delete_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, "gone")
    eventually(lambda: not core.list_namespaced_pod("default").items, what="pods deleted")
    eventually(
        lambda: (
            not [c for c in core.list_namespaced_config_map("default").items if c.metadata.name == "gone-svc"]
        ),
        what="svc ConfigMap deleted",
    )
    # the user's rank-table ConfigMap is not owned by the job: it stays until the user deletes it
    assert core.read_namespaced_config_map("configmap1980-gone", "default")


def test_rank_table_keeps_surviving_ranks_when_a_node_is_replaced(sim_pool_factory: Any) -> None:
    pool = sim_pool_factory(nodes=4, leaves=2, ranktable_delay=0.1)
    core, custom = _apis(pool)
    _submit(core, custom, volcano_job("keep", 3, SLEEP))

    def table(version: int) -> dict[str, Any] | None:
        job = _job(custom, "keep")
        data = json.loads(
            core.read_namespaced_config_map("configmap1980-keep", "default").data["jobstart_hccl.json"]
        )
        ok = data.get("status") == "completed" and job["status"].get("version") == version
        return data if ok and job["status"]["state"]["phase"] == "Running" else None

    before = eventually(lambda: table(0), what="first table")
    ranks_before = {s["server_id"]: [d["rank_id"] for d in s["device"]] for s in before["server_list"]}
    lost = before["server_list"][1]["server_id"]
    lost_node = next(n.metadata.name for n in core.list_node().items if n.status.addresses[0].address == lost)
    core.patch_node(lost_node, {"spec": {"unschedulable": True}})  # cordon: the replacement goes elsewhere
    core.delete_namespaced_pod("keep-worker-1", "default")  # PodEvicted -> RestartJob
    after = eventually(lambda: table(1), what="table after the restart")
    ranks_after = {s["server_id"]: [d["rank_id"] for d in s["device"]] for s in after["server_list"]}
    assert lost not in ranks_after
    for server, ranks in ranks_after.items():
        if server in ranks_before:
            assert ranks == ranks_before[server]  # survivors keep their rank ids
        else:
            assert ranks == [str(r) for r in range(8, 16)]  # the newcomer takes the freed, smallest ids
    assert check_document(json.dumps(after), "after").ok


def test_task_completed_policy_completes_the_job_and_ttl_deletes_it(sim_pool_factory: Any) -> None:
    pool = sim_pool_factory(nodes=4, leaves=2)
    core, custom = _apis(pool)
    job = volcano_job("mw", 2, SLEEP, plugins={"env": [], "svc": []})
    launcher = json.loads(json.dumps(job["spec"]["tasks"][0]))
    launcher.update(
        name="launcher", replicas=1, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}]
    )
    launcher["template"]["spec"]["containers"][0]["command"] = ["sh", "-c", "sleep 0.5"]
    launcher["template"]["spec"].pop("affinity")
    job["spec"]["tasks"].insert(0, launcher)
    job["spec"]["minAvailable"] = 3
    job["spec"]["ttlSecondsAfterFinished"] = 1
    custom.create_namespaced_custom_object(GROUP, VERSION, "default", PLURAL, job)
    eventually(lambda: _phase(custom, "mw") == "Completed", what="CompleteJob after the launcher finished")
    assert not [p for p in core.list_namespaced_pod("default").items if p.status.phase == "Running"]

    def deleted() -> bool:
        try:
            _job(custom, "mw")
        except ApiException as err:
            return err.status == 404
        return False

    eventually(deleted, timeout=10, what="job deleted by ttlSecondsAfterFinished")


def test_losing_a_node_evicts_its_pod_and_restarts_the_job_elsewhere(sim_pool_factory: Any) -> None:
    pool = sim_pool_factory(nodes=3, leaves=1)
    core, custom = _apis(pool)
    _submit(core, custom, volcano_job("lose", 2, SLEEP))
    eventually(lambda: _phase(custom, "lose") == "Running", what="Running")
    victim = core.read_namespaced_pod("lose-worker-1", "default").spec.node_name
    core.delete_node(victim)

    def moved() -> bool:
        pods = core.list_namespaced_pod("default", label_selector="volcano.sh/job-name=lose").items
        return (
            _job(custom, "lose")["status"].get("retryCount") == 1
            and len(pods) == 2
            and all(p.status.phase == "Running" and p.spec.node_name != victim for p in pods)
        )

    eventually(moved, what="job restarted on the remaining nodes")
