"""Faults in the simulated pool, as MindCluster publishes them (#29.1): `ranktable sim fault` marks an NPU,
its link or a node faulty (device-info and node-info ConfigMaps, events, allocatable NPUs), the kubelet
fails the pods using it with the lines a real fault prints, scheduling avoids it until `sim repair`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable

from ranktable.compose.manifests import compose
from ranktable.sim.controllers.devices import allocate
from ranktable.sim.controllers.faults import faults_of
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.sim_helpers import eventually
from tests.integration.test_cluster_sim import client_for, train_job

NPU = "huawei.com/ascend-1980"


def ranktable(pool: SimPoolHandle, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ranktable", "sim", *argv, "--state-dir", str(pool.state_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ},
    )


def device_list(core, node: str) -> dict[str, str]:  # type: ignore[no-untyped-def]
    cm = core.read_namespaced_config_map(f"mindx-dl-deviceinfo-{node}", "kube-system")
    return dict(json.loads(cm.data["DeviceInfoCfg"])["DeviceInfo"]["DeviceList"])


def _core(pool: SimPoolHandle):  # type: ignore[no-untyped-def]
    from kubernetes import client

    return client.CoreV1Api(pool.api_client())


def test_an_npu_fault_fails_its_pod_and_is_kept_out_until_repair(
    sim_pool_factory: Callable[..., SimPoolHandle],
) -> None:
    pool = sim_pool_factory(nodes=4, leaves=2, ranktable_delay=0.2, backoff_seconds=0.5)
    jobs = client_for(pool)
    jobs.submit(compose(train_job("ft", nodes=2, steps=100_000, interval=0.05)))
    core = _core(pool)

    def first_pod_running():  # type: ignore[no-untyped-def]
        pods = core.list_namespaced_pod("default", label_selector="volcano.sh/job-name=ft").items
        running = [p for p in pods if p.status.phase == "Running" and p.metadata.annotations]
        return sorted(running, key=lambda p: p.metadata.name)[0] if len(running) == 2 else None

    pod = eventually(first_pod_running, timeout=60, what="both pods running")
    node = pod.spec.node_name
    device = int(pod.metadata.annotations["huawei.com/AscendReal"].split(",")[3].rsplit("-", 1)[1])

    injected = ranktable(pool, "fault", node, "--npu", str(device), "--at-step", "3")
    assert injected.returncode == 0, injected.stderr
    assert "reached step 3" in injected.stdout and f"fault injected on {node}" in injected.stdout

    # published as MindCluster does
    info = json.loads(
        core.read_namespaced_config_map(f"mindx-dl-deviceinfo-{node}", "kube-system").data["DeviceInfoCfg"]
    )
    devices = info["DeviceInfo"]["DeviceList"]
    assert devices["huawei.com/Ascend910-Unhealthy"] == f"Ascend910-{device}"
    assert f"Ascend910-{device}" not in devices["huawei.com/Ascend910"].split(",")
    (fault,) = json.loads(devices["huawei.com/Ascend910-Fault"])
    assert fault["fault_type"] == "CardUnhealthy" and fault["npu_name"] == f"Ascend910-{device}"
    node_info = json.loads(
        core.read_namespaced_config_map(f"mindx-dl-nodeinfo-{node}", "mindx-dl").data["NodeInfo"]
    )
    assert node_info["NodeInfo"]["NodeStatus"] == "PreSeparate"
    assert [d["DeviceId"] for d in node_info["NodeInfo"]["FaultDevList"]] == [device]
    events = core.list_namespaced_event("default").items
    assert any(e.reason == "Occur" and e.involved_object.name == node for e in events)

    # the pod fails with the fault's lines, its rank named as torch_npu names it
    def failed_container():  # type: ignore[no-untyped-def]
        live = core.read_namespaced_pod(pod.metadata.name, "default")
        for status in live.status.container_statuses or []:
            done = status.last_state.terminated or status.state.terminated
            if done is not None:
                return done
        return None

    terminated = eventually(failed_container, timeout=30, what="the pod to fail on its NPU")
    assert terminated.exit_code == 1
    log = core.read_namespaced_pod_log(pod.metadata.name, "default", previous=True)
    assert f"Device[{device}] lost heartbeat." in log
    assert f"Device:{device}, RankID:" in log and "ERR02200" in log

    # kept out of scheduling: 7 NPUs allocatable, the faulty one never handed out
    live_node = core.read_node(node)
    assert live_node.status.allocatable[NPU] == "7"
    raw_node = {
        "metadata": {"annotations": live_node.metadata.annotations},
        "status": {"capacity": {NPU: "8"}},
    }
    assert faults_of(raw_node).unhealthy == {device}
    eight = {"metadata": {"uid": "x"}, "spec": {"containers": [{"resources": {"requests": {NPU: "7"}}}]}}
    granted = allocate(eight, raw_node, [])
    assert granted is not None and device not in granted

    repaired = ranktable(pool, "repair", node)
    assert repaired.returncode == 0, repaired.stderr
    assert core.read_node(node).status.allocatable[NPU] == "8"
    info = json.loads(
        core.read_namespaced_config_map(f"mindx-dl-deviceinfo-{node}", "kube-system").data["DeviceInfoCfg"]
    )
    assert info["DeviceInfo"]["DeviceList"]["huawei.com/Ascend910-Unhealthy"] == ""
    assert any(e.reason == "Recovery" for e in core.list_namespaced_event("default").items)
    jobs.stop("ft")


def test_a_node_fault_cordons_the_node(sim_pool_factory: Callable[..., SimPoolHandle]) -> None:
    pool = sim_pool_factory(nodes=2, leaves=1)
    core = _core(pool)
    node = core.list_node().items[0].metadata.name
    done = ranktable(pool, "fault", node, "--kind", "node")
    assert done.returncode == 0, done.stderr
    live = core.read_node(node)
    assert live.spec.unschedulable is True and live.status.allocatable[NPU] == "0"
    assert ranktable(pool, "repair", node).returncode == 0
    assert not core.read_node(node).spec.unschedulable


def test_bad_fault_requests_are_one_line_errors(sim_pool_factory: Callable[..., SimPoolHandle]) -> None:
    pool = sim_pool_factory(nodes=2, leaves=1)
    for argv, where in (
        (["fault", "no-such-node", "--npu", "0"], "NODE"),
        (["fault", _core(pool).list_node().items[0].metadata.name, "--npu", "8"], "--npu"),
        (["fault", _core(pool).list_node().items[0].metadata.name], "--npu"),
    ):
        done = ranktable(pool, *argv)
        assert done.returncode != 0
        assert len(done.stderr.strip().splitlines()) == 1 and where in done.stderr, done.stderr
