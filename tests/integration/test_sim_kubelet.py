"""The simulated kubelet: pod commands run as local processes, their output is the pod log."""

from __future__ import annotations

import json
import os
import ssl
import time
import urllib.parse
import urllib.request
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.sim_helpers import eventually, rank_table_configmap, shell_pod, volcano_job

TIMEOUT = (5, 30)


def _pod(
    name: str, script: str, restart: str = "Never", env: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return shell_pod(name, script, restart, env or [])


def _raw_log(pool: SimPoolHandle, name: str, **params: str) -> str:
    """GET .../log with query parameters the Python client does not expose (sinceTime)."""
    url = f"{pool.url}/api/v1/namespaces/default/pods/{name}/log?{urllib.parse.urlencode(params)}"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {pool.token}"})
    context = ssl.create_default_context(cafile=str(pool.state_dir / "server.crt"))
    with urllib.request.urlopen(request, context=context, timeout=30) as resp:
        return str(resp.read().decode())


def _read(core: client.CoreV1Api, name: str) -> Any:
    return core.read_namespaced_pod(name, "default")


def test_command_output_is_the_log_and_follow_ends_with_the_process(sim_pool: SimPoolHandle) -> None:
    core = client.CoreV1Api(sim_pool.api_client())
    core.create_namespaced_pod(
        "default", _pod("counter", "for i in 1 2 3 4 5; do echo line $i; sleep 0.2; done")
    )
    eventually(lambda: _read(core, "counter").status.phase == "Running", what="Running")
    started = time.monotonic()
    resp = core.read_namespaced_pod_log(
        "counter", "default", follow=True, _preload_content=False, _request_timeout=TIMEOUT
    )
    arrivals = []
    for raw in resp.stream(amt=None):
        arrivals.append((time.monotonic() - started, raw.decode()))
    text = "".join(chunk for _, chunk in arrivals)
    assert text == "".join(f"line {i}\n" for i in range(1, 6))
    assert len(arrivals) >= 3  # streamed as the process printed, not in one piece at the end
    pod = _read(core, "counter")
    assert pod.status.phase == "Succeeded"
    assert pod.status.container_statuses[0].state.terminated.exit_code == 0

    stamped = core.read_namespaced_pod_log("counter", "default", timestamps=True).splitlines()
    assert len(stamped) == 5 and all(line.split(" ", 1)[0].endswith("Z") for line in stamped)
    assert core.read_namespaced_pod_log("counter", "default", tail_lines=2) == "line 4\nline 5\n"
    since = stamped[3].split(" ", 1)[0]
    assert _raw_log(sim_pool, "counter", sinceTime=since) == "line 4\nline 5\n"  # kubectl --since-time
    assert core.read_namespaced_pod_log("counter", "default", limit_bytes=9) == "line 1\nli"


def test_exit_codes_restarts_and_previous_logs(sim_pool_factory: Any) -> None:
    sim_pool = sim_pool_factory(backoff_seconds=0.3)  # two restarts without the kubelet's real 10 s wait
    core = client.CoreV1Api(sim_pool.api_client())
    core.create_namespaced_pod("default", _pod("fails", "echo failing; exit 3"))
    eventually(lambda: _read(core, "fails").status.phase == "Failed", what="Failed")
    assert _read(core, "fails").status.container_statuses[0].state.terminated.exit_code == 3

    core.create_namespaced_pod("default", _pod("flaky", "echo attempt; exit 1", restart="OnFailure"))
    eventually(
        lambda: (
            (_read(core, "flaky").status.container_statuses or [None])[0] is not None
            and _read(core, "flaky").status.container_statuses[0].restart_count >= 2
        ),
        what="two restarts",
    )
    status = _read(core, "flaky").status
    assert status.phase != "Failed"  # OnFailure keeps restarting
    assert core.read_namespaced_pod_log("flaky", "default", previous=True) == "attempt\n"

    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("nope", "default")
    assert err.value.status == 404
    core.create_namespaced_pod(
        "default",
        {
            **_pod("waiting", "true"),
            "spec": {**_pod("waiting", "true")["spec"], "nodeSelector": {"no-such": "label"}},
        },
    )
    with pytest.raises(ApiException) as err:
        core.read_namespaced_pod_log("waiting", "default")
    assert err.value.status == 400
    assert 'container "main" in pod "waiting" is waiting to start' in json.loads(err.value.body)["message"]


def test_env_field_refs_and_the_rank_table_file_follow_the_configmap(sim_pool_factory: Any) -> None:
    pool = sim_pool_factory(nodes=2, leaves=1, ranktable_delay=0.2)
    api = pool.api_client()
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    core.create_namespaced_config_map("default", rank_table_configmap("envjob"))
    script = (
        'echo "name=$name ip=$ip pod=$podip"; while ! grep -q completed "$RANK_TABLE_FILE"; do sleep 0.05; '
        'done; echo "table:$(tr -d "\\n " < "$RANK_TABLE_FILE")"; echo "cwd=$(pwd)"; '
        "sleep 1000000000000000000"
    )
    env = [
        {"name": "name", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "ip", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
        {"name": "podip", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
    ]
    custom.create_namespaced_custom_object(
        "batch.volcano.sh",
        "v1alpha1",
        "default",
        "jobs",
        volcano_job("envjob", 2, ["sh", "-c", script], env=env),
    )

    def log_of(name: str) -> str | None:
        try:
            text = core.read_namespaced_pod_log(name, "default")
        except ApiException:
            return None
        return text if "cwd=" in text else None

    text = eventually(lambda: log_of("envjob-worker-1"), what="pod log with the table")
    pod = _read(core, "envjob-worker-1")
    lines = dict(line.split("=", 1) if "=" in line else line.split(":", 1) for line in text.splitlines())
    assert lines["name"].split(" ")[0] == "envjob-worker-1"
    assert f"ip={pod.status.host_ip} pod={pod.status.pod_ip}" in text
    table = core.read_namespaced_config_map("configmap1980-envjob", "default").data["jobstart_hccl.json"]
    assert json.loads(lines["table"]) == json.loads(table)
    assert lines["cwd"].startswith(str(pool.state_dir))  # a per-pod sandbox under the pool's state directory


def test_deleting_a_pod_kills_its_process(sim_pool: SimPoolHandle) -> None:
    core = client.CoreV1Api(sim_pool.api_client())
    core.create_namespaced_pod("default", _pod("sleeper", "echo $$; exec sleep 1000000000000000000"))
    eventually(lambda: _read(core, "sleeper").status.phase == "Running", what="Running")
    eventually(lambda: core.read_namespaced_pod_log("sleeper", "default").strip(), what="pid in log")
    pid = int(core.read_namespaced_pod_log("sleeper", "default").strip())
    os.kill(pid, 0)
    core.delete_namespaced_pod("sleeper", "default")

    def gone() -> bool:
        try:
            with open(f"/proc/{pid}/stat") as fh:
                return fh.read().rsplit(")", 1)[1].split()[0] == "Z"  # ended, not yet reaped by init
        except FileNotFoundError:
            return True

    eventually(gone, what="process killed")
    eventually(
        lambda: not core.list_namespaced_pod("default", field_selector="metadata.name=sleeper").items,
        what="pod removed",
    )


def test_logs_resume_after_the_pool_restarts_mid_stream(sim_pool: SimPoolHandle) -> None:
    core = client.CoreV1Api(sim_pool.api_client())
    core.create_namespaced_pod(
        "default", _pod("ticker", "i=0; while [ $i -lt 60 ]; do i=$((i+1)); echo tick $i; sleep 0.05; done")
    )
    eventually(lambda: _read(core, "ticker").status.phase == "Running", what="Running")
    resp = core.read_namespaced_pod_log(
        "ticker", "default", follow=True, timestamps=True, _preload_content=False, _request_timeout=TIMEOUT
    )
    seen: list[str] = []
    buffer = b""
    for chunk in resp.stream(amt=None):
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        seen += [c.decode() for c in complete]
        if len(seen) >= 10:
            break
    sim_pool.restart(down_seconds=0.5)  # the stream above is cut; the process keeps printing meanwhile
    resp.release_conn()
    core = client.CoreV1Api(sim_pool.api_client())
    last_stamp = seen[-1].split(" ", 1)[0]
    resumed = _raw_log(sim_pool, "ticker", follow="true", timestamps="true", sinceTime=last_stamp)
    after = [line for line in resumed.splitlines() if line.split(" ", 1)[0] > last_stamp]
    ticks = [int(line.rsplit(" ", 1)[1]) for line in seen + after]
    assert ticks == list(range(1, 61))


def test_log_reader_pages_through_large_files(tmp_path: Any) -> None:
    from ranktable.sim.controllers.logs import format_ts, read_log

    path = tmp_path / "0.log"
    base = 1_700_000_000 * 1_000_000_000
    path.write_bytes(b"".join(f"{format_ts(base + i)} line {i}\n".encode() for i in range(120_000)))  # ~5 MiB

    def read(**kw: Any) -> list[str]:
        chunks = read_log(path, follow=False, finished=lambda: True, wait=lambda _t: None, **kw)
        return b"".join(chunks).decode().splitlines()

    everything = read()
    assert len(everything) == 120_000 and everything[-1] == "line 119999"
    assert read(tail=70_000)[0] == "line 50000"  # the tail starts several back-blocks before the end
    assert read(since_ns=base + 119_998) == ["line 119998", "line 119999"]
    assert read(tail=0) == []
    assert read(timestamps=True, tail=1) == [f"{format_ts(base + 119_999)} line 119999"]
