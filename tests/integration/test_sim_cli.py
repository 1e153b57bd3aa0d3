"""`ranktable sim start|stop` and the pool's topology views (labels, HyperNodes, tor ConfigMap) agreeing."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client, config

from ranktable.topology.hypernode import topology_from_hypernodes
from ranktable.topology.labels import topology_from_node_labels
from ranktable.topology.model import Topology
from ranktable.topology.tor_info import topology_from_tor_configmap
from tests.integration.fixtures.simpool import SimPoolHandle


def _ranktable(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ranktable", *args], env=env, capture_output=True, text=True, timeout=60
    )


def test_start_prints_kubeconfig_then_stop_ends_pool_and_pods(tmp_path: Path) -> None:
    env = {**os.environ, "RANKTABLE_HOME": str(tmp_path / "home")}
    started = _ranktable("sim", "start", "--nodes", "3", "--leaves", "1", env=env)
    try:
        assert started.returncode == 0, started.stderr
        lines = dict(line.split("=", 1) for line in started.stdout.splitlines() if "=" in line)
        kubeconfig = Path(lines["KUBECONFIG"])
        assert kubeconfig == tmp_path / "home" / "sim" / "kubeconfig"
        assert "context: ranktable-sim" in started.stdout
        assert stat.S_IMODE(kubeconfig.stat().st_mode) == 0o600
        assert yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"].startswith(
            "https://127.0.0.1:"
        )
        api = config.new_client_from_config(config_file=str(kubeconfig), context="ranktable-sim")
        core = client.CoreV1Api(api)
        assert [n.metadata.name for n in core.list_node().items] == ["node-0", "node-1", "node-2"]
        core.create_namespaced_pod(
            "default",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "s"},
                "spec": {"containers": [{"name": "c", "command": ["sh", "-c", "echo $$; exec sleep 1000"]}]},
            },
        )
        again = _ranktable("sim", "start", env=env)  # a second start finds the running pool
        assert again.returncode == 0 and "already running" in again.stderr
        pid = _wait_for_pid(core)
    finally:
        stopped = _ranktable("sim", "stop", env=env)
    assert stopped.returncode == 0 and "stopped the simulated pool" in stopped.stdout
    assert not _running(pid), "sim stop must end the pods' processes"
    assert "no simulated pool is running" in _ranktable("sim", "stop", env=env).stderr


def _running(pid: int) -> bool:
    """Alive and not a zombie (an orphan nobody has reaped yet has already ended)."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _wait_for_pid(core: client.CoreV1Api) -> int:
    from tests.integration.sim_helpers import eventually

    text = eventually(lambda: _log(core), what="pod printed its pid")
    return int(text.strip())


def _log(core: client.CoreV1Api) -> str | None:
    try:
        return core.read_namespaced_pod_log("s", "default") or None
    except client.exceptions.ApiException:
        return None


def test_bad_options_are_one_clear_line(tmp_path: Path) -> None:
    env = {**os.environ, "RANKTABLE_HOME": str(tmp_path)}
    out = _ranktable("sim", "start", "--nodes", "2", "--leaves", "5", env=env)
    assert out.returncode == 1 and out.stderr.startswith("ranktable sim start: --leaves: --leaves 5")
    out = _ranktable("sim", "start", "--tenants", "2", "--nodes", "2", env=env)
    assert out.returncode == 1 and out.stderr.startswith("ranktable sim start: --tenants: 2 tenant nodes")
    assert out.stderr.count("\n") == 1
    out = _ranktable("sim", "start", "--topology", str(tmp_path / "missing.conf"), env=env)
    assert out.returncode == 1 and "missing.conf: no such file" in out.stderr
    assert "Traceback" not in out.stderr


def _leaves(topo: Topology, nodes: list[dict[str, Any]]) -> dict[str, str]:
    """node name -> leaf, whatever name the source used for the server (name or InternalIP)."""
    out = {}
    for node in nodes:
        ip = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
        server = topo.resolve(node["metadata"]["name"], ip)
        assert server is not None
        out[node["metadata"]["name"]] = topo.leaf_of(server) or ""
    return out


def test_every_topology_source_describes_the_same_tree(sim_pool_factory: Any, tmp_path: Path) -> None:
    conf = tmp_path / "topology.conf"
    conf.write_text(
        "SwitchName=s0 Nodes=tux[0-2]\nSwitchName=s1 Nodes=tux[3-4]\nSwitchName=top Switches=s[0-1]\n"
    )
    pool: SimPoolHandle = sim_pool_factory(topology=conf)
    api = pool.api_client()
    nodes = [api.sanitize_for_serialization(n) for n in client.CoreV1Api(api).list_node().items]
    assert [n["metadata"]["name"] for n in nodes] == [f"tux{i}" for i in range(5)]
    hypernodes = client.CustomObjectsApi(api).list_cluster_custom_object(
        "topology.volcano.sh", "v1alpha1", "hypernodes"
    )["items"]
    tor_cm = api.sanitize_for_serialization(
        client.CoreV1Api(api).read_namespaced_config_map("basic-tor-node-cm", "kube-system")
    )
    by_labels = _leaves(topology_from_node_labels(nodes), nodes)
    by_hypernodes = _leaves(topology_from_hypernodes(hypernodes, nodes), nodes)
    by_tor = topology_from_tor_configmap(tor_cm)
    expected = {"tux0": "s0", "tux1": "s0", "tux2": "s0", "tux3": "s1", "tux4": "s1"}
    assert by_labels == expected and by_hypernodes == expected
    groups: dict[str, set[str]] = {}
    for node in nodes:  # the tor file names ToRs by index/IP, so compare the grouping
        ip = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
        server = by_tor.resolve(ip)
        assert server is not None
        groups.setdefault(by_tor.leaf_of(server) or "", set()).add(node["metadata"]["name"])
    assert sorted(map(sorted, groups.values())) == [["tux0", "tux1", "tux2"], ["tux3", "tux4"]]


@pytest.mark.fault
def test_serve_subprocess_restarts_and_adopts_running_pods(sim_pool_process: SimPoolHandle) -> None:
    from tests.integration.sim_helpers import eventually

    core = client.CoreV1Api(sim_pool_process.api_client())
    script = "i=0; while true; do i=$((i+1)); echo beat $i; sleep 0.1; done"
    core.create_namespaced_pod(
        "default",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "beat"},
            "spec": {"containers": [{"name": "c", "command": ["sh", "-c", script]}]},
        },
    )
    eventually(lambda: (_beats(core) or 0) >= 3, what="some beats")
    uid = core.read_namespaced_pod("beat", "default").metadata.uid
    sim_pool_process.restart(
        down_seconds=0.5
    )  # SIGUSR1: server down, pod process keeps running; then --resume
    core = client.CoreV1Api(sim_pool_process.api_client())
    pod = core.read_namespaced_pod("beat", "default")
    assert pod.metadata.uid == uid and pod.status.phase == "Running"
    before = _beats(core) or 0
    eventually(lambda: (_beats(core) or 0) > before + 2, what="beats continue after the restart")
    text = core.read_namespaced_pod_log("beat", "default")
    numbers = [int(line.split()[1]) for line in text.splitlines()]
    assert numbers == list(range(1, len(numbers) + 1))  # nothing lost or repeated across the restart


def _beats(core: client.CoreV1Api) -> int | None:
    try:
        return len(core.read_namespaced_pod_log("beat", "default").splitlines())
    except client.exceptions.ApiException:
        return None


@pytest.mark.fault
def test_start_after_a_kill_9_refuses_to_wipe_live_pods_and_resumes_on_request(tmp_path: Path) -> None:
    """#26.6: `sim start` on the state folder of a pool killed with -9 silently wiped its jobs and pods."""
    import signal

    from ranktable.sim.control import recorded_pid

    env = {**os.environ, "RANKTABLE_HOME": str(tmp_path / "home")}
    state = tmp_path / "home" / "sim"
    started = _ranktable("sim", "start", "--nodes", "2", "--leaves", "1", env=env)
    try:
        assert started.returncode == 0, started.stderr
        kubeconfig = state / "kubeconfig"
        core = client.CoreV1Api(config.new_client_from_config(str(kubeconfig), context="ranktable-sim"))
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "s"},
            "spec": {"containers": [{"name": "c", "command": ["sh", "-c", "echo $$; exec sleep 1000"]}]},
        }
        core.create_namespaced_pod("default", pod)
        pid = _wait_for_pid(core)
        server = recorded_pid(state)
        assert server is not None
        from tests.integration.sim_helpers import eventually

        # the pool saves its objects every 0.5 s: the kill comes once the pod is in the saved state
        saved = state / "objects.json"
        eventually(lambda: saved.is_file() and '"s"' in saved.read_text(), what="the pod to be saved")
        os.kill(server, signal.SIGKILL)  # the pool dies; its pod goes on
        eventually(lambda: not _running(server), what="the pool to die")
        refused = _ranktable("sim", "start", env=env)
        assert refused.returncode == 1 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "1 pod processes still running" in refused.stderr and "--resume" in refused.stderr
        assert _running(pid)  # nothing was wiped
        resumed = _ranktable("sim", "start", "--resume", env=env)
        assert resumed.returncode == 0, resumed.stderr
        core = client.CoreV1Api(config.new_client_from_config(str(kubeconfig), context="ranktable-sim"))
        assert [p.metadata.name for p in core.list_namespaced_pod("default").items] == ["s"]
        assert _running(pid)
    finally:
        _ranktable("sim", "stop", env=env)
