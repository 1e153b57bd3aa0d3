"""A pool restarted in this process (`sim_pool.restart()`) behaves like `ranktable sim serve --resume`:
pod processes that end during or after the restart finish their pods with their exit codes, the job
phase follows, and the stopped server answers nothing more (its store is frozen)."""

from __future__ import annotations

import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from kubernetes import client

from ranktable.sim.controllers.kubelet import WRAPPER, Kubelet, Run
from ranktable.sim.k8s.server import ApiServer
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.sim_helpers import eventually, shell_pod, volcano_job

JOBS = ("batch.volcano.sh", "v1alpha1", "default", "jobs")


def _terminated(core: client.CoreV1Api, name: str) -> tuple[str, int | None]:
    pod = core.read_namespaced_pod(name, "default")
    state = pod.status.container_statuses[0].state if pod.status.container_statuses else None
    return pod.status.phase, state.terminated.exit_code if state and state.terminated else None


def _wait_for(flag: Path) -> str:
    return f"while [ ! -e {flag} ]; do sleep 0.05; done"


def test_pods_and_jobs_finish_after_an_in_process_restart(
    sim_pool: SimPoolHandle, pod_shared_dir: Path
) -> None:
    core = client.CoreV1Api(sim_pool.api_client())
    custom = client.CustomObjectsApi(sim_pool.api_client())
    down, up = (
        pod_shared_dir / "down",
        pod_shared_dir / "up",
    )  # created while the pool is down / once it is back
    core.create_namespaced_pod("default", shell_pod("during", f"echo up; {_wait_for(down)}; exit 3"))
    core.create_namespaced_pod("default", shell_pod("after", f"echo up; {_wait_for(up)}; exit 5"))
    job = volcano_job("pair", 2, ["sh", "-c", f"{_wait_for(up)}; echo done"], npus=8, restart="Never")
    custom.create_namespaced_custom_object(*JOBS, job)
    names = ("during", "after", "pair-worker-0", "pair-worker-1")
    eventually(
        lambda: (
            all(_exists(core, n) for n in names) and all(_terminated(core, n)[0] == "Running" for n in names)
        ),
        what="all pods Running",
    )
    old = sim_pool.pool
    assert old is not None

    def end_while_down() -> None:
        old._stop.wait(30)  # the pool has begun to stop: no kubelet sees this process end
        down.touch()

    trigger = threading.Thread(target=end_while_down, daemon=True)
    trigger.start()
    sim_pool.restart(down_seconds=1.0)
    trigger.join(timeout=5)
    up.touch()
    core = client.CoreV1Api(sim_pool.api_client())
    custom = client.CustomObjectsApi(sim_pool.api_client())
    eventually(lambda: _terminated(core, "during") == ("Failed", 3), what="'during' Failed with 3")
    eventually(lambda: _terminated(core, "after") == ("Failed", 5), what="'after' Failed with 5")
    for name in ("pair-worker-0", "pair-worker-1"):
        eventually(lambda n=name: _terminated(core, n) == ("Succeeded", 0), what=f"{name} Succeeded")
    eventually(
        lambda: custom.get_namespaced_custom_object(*JOBS, "pair")["status"]["state"]["phase"] == "Completed",
        what="job Completed",
    )
    assert core.read_namespaced_pod_log("pair-worker-0", "default") == "done\n"
    assert core.read_namespaced_pod_log("during", "default") == "up\n"


def _ended(pid: int) -> bool:
    """A zombie (ended, not yet reaped) or gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def _exists(core: client.CoreV1Api, name: str) -> bool:
    return bool(core.list_namespaced_pod("default", field_selector=f"metadata.name={name}").items)


def test_a_stopped_server_answers_nothing_on_a_late_connection(sim_pool: SimPoolHandle) -> None:
    """A connection the old server picked up while shutting down must not be served from its frozen
    store (in one process the old server object lives on; the client would see pods stuck Running)."""
    core = client.CoreV1Api(sim_pool.api_client())
    core.create_namespaced_pod("default", shell_pod("short", "sleep 0.5"))
    eventually(lambda: _terminated(core, "short")[0] == "Running", what="Running")
    assert sim_pool.pool is not None and sim_pool.pool.api is not None
    old: ApiServer = sim_pool.pool.api
    assert old.httpd is not None
    handler_class, httpd = old.httpd.RequestHandlerClass, old.httpd
    sim_pool.restart()
    eventually(lambda: _terminated(core, "short")[0] == "Succeeded", what="Succeeded on the new server")

    ours, theirs = socket.socketpair()  # as if the old accept loop had just handed over this connection
    ours.settimeout(5)
    request = (
        "GET /api/v1/namespaces/default/pods/short HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {sim_pool.token}\r\n\r\n"
    )
    ours.sendall(request.encode())
    worker = threading.Thread(target=handler_class, args=(theirs, ("127.0.0.1", 0), httpd), daemon=True)
    worker.start()
    started = time.monotonic()
    answer = b""
    try:
        while chunk := ours.recv(65536):
            answer += chunk
    except TimeoutError:
        pass
    worker.join(timeout=5)
    ours.close()
    theirs.close()
    assert answer == b"", f"the stopped server answered: {answer[:120]!r}"
    assert time.monotonic() - started < 4  # it hung up at once


def test_an_adopted_process_ending_between_two_looks_keeps_its_exit_code(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The restart flake: after an in-process restart the kubelet adopts its own children by pid. A
    process that wrote its exit file and ended just after the kubelet looked for that file was a
    zombie at the next look, and was reported killed (137) instead of its real exit code."""
    flag, exit_file = tmp_path / "flag", tmp_path / "0.exit"
    child = subprocess.Popen(
        ["/bin/sh", "-c", WRAPPER, str(exit_file), "sh", "-c", f"{_wait_for(flag)}; exit 0"],
        start_new_session=True,
    )
    run = Run("default", "p", "uid", "main", 0, tmp_path, child.pid, None, None, "")  # type: ignore[arg-type]
    original = Path.is_file
    looked = []

    def is_file_then_end(path: Path) -> bool:
        found = original(path)
        if path == exit_file and not looked:  # the process ends right after this first look
            looked.append(path)
            flag.touch()
            eventually(lambda: _ended(child.pid), what="the process to end")
        return found

    monkeypatch.setattr(Path, "is_file", is_file_then_end)
    codes = []
    for _ in range(100):
        code = Kubelet._poll_exit(run)
        if code is not None:
            codes.append(code)
            break
        flag.touch()
        time.sleep(0.02)
    child.wait(timeout=5)
    assert codes == [0]
