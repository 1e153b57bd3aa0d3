"""The simulated pool's API server against hostile clients (issue 11, section 3): the token is checked
before a body is read, bodies are capped, slow or half-open requests time out, connections are bounded,
and bodies that explode when parsed (deep JSON, YAML aliases) get a 400."""

from __future__ import annotations

import json
import socket
import ssl
import threading
import time
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from ranktable.sim.k8s.server import Limits
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.http_helpers import recv_head
from tests.integration.sim_helpers import eventually, volcano_job


def _connect(pool: SimPoolHandle, timeout: float = 10) -> ssl.SSLSocket:
    context = ssl.create_default_context(cafile=str(pool.state_dir / "server.crt"))
    raw = socket.create_connection(("127.0.0.1", int(pool.url.rsplit(":", 1)[1])), timeout=timeout)
    return context.wrap_socket(raw, server_hostname="127.0.0.1")


def _answer(sock: ssl.SSLSocket) -> tuple[int, dict[str, Any]]:
    """Status code and JSON body of one response (read until the body is complete or closed)."""
    head, _, body = recv_head(sock).partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        part = sock.recv(65536)
        if not part:
            break
        body += part
    return int(head.split()[1]), json.loads(body[:length])


def _headers(
    method: str, path: str, length: int, token: str | None, ctype: str = "application/json"
) -> bytes:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Type: {ctype}\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


def test_the_token_is_checked_before_the_body_is_read(sim_pool: SimPoolHandle) -> None:
    """A client without a token announces 1 MiB and sends none of it: the 401 comes at once."""
    with _connect(sim_pool) as sock:
        sock.sendall(_headers("POST", "/api/v1/namespaces/default/configmaps", 1 << 20, None))
        started = time.monotonic()
        code, body = _answer(sock)
    assert code == 401 and body["reason"] == "Unauthorized"
    assert time.monotonic() - started < 3


def test_a_body_over_the_cap_gets_413_naming_the_limit(sim_pool: SimPoolHandle) -> None:
    with _connect(sim_pool) as sock:
        sock.sendall(_headers("POST", "/api/v1/namespaces/default/configmaps", 4 << 20, sim_pool.token))
        code, body = _answer(sock)
    assert code == 413 and body["reason"] == "RequestEntityTooLarge"
    assert "limit is 3145728 bytes" in body["message"]
    # under the cap still works, on a fresh connection
    core = client.CoreV1Api(sim_pool.api_client())
    cm = {"metadata": {"name": "big"}, "data": {"k": "x" * (2 << 20)}}
    assert core.create_namespaced_config_map("default", cm).metadata.name == "big"


def test_half_open_requests_time_out_and_connections_are_bounded(sim_pool_factory: Any) -> None:
    pool = sim_pool_factory(nodes=1, leaves=1, limits=Limits(request_seconds=1.0, max_connections=8))
    before = threading.active_count()
    port = int(pool.url.rsplit(":", 1)[1])
    idle = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(40)]  # no handshake
    time.sleep(0.5)
    assert threading.active_count() - before <= 8, "one thread per connection beyond the cap"
    for sock in idle:  # each is closed: beyond the cap at once, within the cap when its time is up
        assert sock.recv(1) == b""
        sock.close()
    with _connect(pool) as sock:  # headers that never end
        sock.sendall(b"GET /api/v1/namespaces HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.monotonic()
        assert sock.recv(1) == b""
        assert time.monotonic() - started < 5
    with _connect(pool) as sock:  # a body that never comes
        sock.sendall(_headers("POST", "/api/v1/namespaces/default/configmaps", 100, pool.token) + b"{")
        code, body = _answer(sock)
        assert code == 408 and "within 1s" in body["message"]
    eventually(lambda: threading.active_count() <= before + 1, what="connection threads to end")
    assert client.CoreV1Api(pool.api_client()).list_namespace().items  # still serving


def test_bodies_that_explode_when_parsed_get_400(sim_pool: SimPoolHandle) -> None:
    deep = b"[" * 100_000 + b"]" * 100_000
    with _connect(sim_pool) as sock:
        sock.sendall(
            _headers("POST", "/api/v1/namespaces/default/configmaps", len(deep), sim_pool.token) + deep
        )
        code, body = _answer(sock)
    assert code == 400 and "nested too deeply" in body["message"]
    bomb = b"a: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: [*b, *b, *b]\n"
    path = "/api/v1/namespaces/default/configmaps/bomb?fieldManager=t"
    with _connect(sim_pool) as sock:
        sock.sendall(
            _headers("PATCH", path, len(bomb), sim_pool.token, "application/apply-patch+yaml") + bomb
        )
        code, body = _answer(sock)
    assert code == 400 and "aliases" in body["message"]


def test_a_job_with_too_many_replicas_is_refused_naming_the_limit(sim_pool: SimPoolHandle) -> None:
    custom = client.CustomObjectsApi(sim_pool.api_client())
    job = volcano_job("huge", 1, ["true"])
    job["spec"]["tasks"][0]["replicas"] = 100_000_000
    job["spec"]["minAvailable"] = 1
    with pytest.raises(ApiException) as err:
        custom.create_namespaced_custom_object("batch.volcano.sh", "v1alpha1", "default", "jobs", job)
    status = json.loads(err.value.body)
    assert err.value.status == 422
    assert "spec.tasks[0].replicas" in status["message"] and "10000" in status["message"]
    pods = client.CoreV1Api(sim_pool.api_client()).list_namespaced_pod("default").items
    assert pods == []


def test_kubectl_keeps_working_during_a_slowloris(sim_pool_factory: Any, tmp_path: Any) -> None:
    """#26.8: unauthenticated connections that never finish (no TLS handshake, headers never ending) may
    not fill the connection cap: each new client connection evicts the oldest of them, and the reserve
    is kept for authenticated ones. Before, kubectl got EOF for 30 s at a time."""
    import shutil
    import subprocess

    pool = sim_pool_factory(nodes=1, leaves=1, limits=Limits(request_seconds=30.0, max_connections=16))
    port = int(pool.url.rsplit(":", 1)[1])
    stop = threading.Event()
    opened = [0]

    def slowloris() -> None:
        held: list[socket.socket] = []
        while not stop.is_set():
            try:
                sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            except OSError:
                continue
            held.append(sock)
            opened[0] += 1
            held = [s for s in held if not _closed_by_peer(s)]
            time.sleep(0.005)
        for sock in held:
            sock.close()

    attacker = threading.Thread(target=slowloris, daemon=True)
    attacker.start()
    try:
        eventually(lambda: opened[0] >= 100, what="the slowloris to open 100 connections")
        env = pool.kubectl_env(tmp_path)
        kubectl = shutil.which("kubectl") or "/usr/bin/kubectl"
        for _ in range(10):
            proc = subprocess.run(
                [
                    kubectl,
                    "--context",
                    pool.context,
                    "get",
                    "namespaces",
                    "-o",
                    "name",
                    "--request-timeout=10s",
                ],
                capture_output=True,
                text=True,
                env=env,
                timeout=60,
                check=False,
            )
            assert proc.returncode == 0 and "namespace/default" in proc.stdout, proc.stderr
    finally:
        stop.set()
        attacker.join(10)
    assert opened[0] >= 100


def _closed_by_peer(sock: socket.socket) -> bool:
    sock.setblocking(False)
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        sock.setblocking(True)
