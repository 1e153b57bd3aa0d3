"""Calls to the ranktable REST API through pytest-jupyter's ``jp_fetch``, shared by the server tests."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.http_helpers import recv_head
from tests.integration.sim_helpers import eventually


async def call(jp_fetch: Any, *path: str, method: str = "GET", body: Any = None, expect: int = 200) -> Any:
    """One request whose status must be ``expect``; the decoded JSON reply (errors included)."""
    kwargs: dict[str, Any] = {"method": method, "raise_error": False}
    if body is not None:
        kwargs["body"] = json.dumps(body)
    response = await jp_fetch(*path, **kwargs)
    assert response.code == expect, response.body
    return json.loads(response.body)


def extension_without_cluster(tmp_path: Path, **server_app: Any) -> dict[str, Any]:
    """`jp_server_config` for the extension with a private state dir and no cluster configured."""
    return {
        "ServerApp": {"jpserver_extensions": {"ranktable": True}, **server_app},
        "Ranktable": {"state_dir": str(tmp_path / "state"), "kubeconfig": str(tmp_path / "no-kubeconfig")},
    }


def extension_with_state(state_dir: Path) -> dict[str, Any]:
    """`jp_server_config` for the extension keeping its state in `state_dir`, with no cluster to reach."""
    return {
        "ServerApp": {"jpserver_extensions": {"ranktable": True}},
        "Ranktable": {"state_dir": str(state_dir), "kubeconfig": "/nonexistent"},
    }


def extension_on_pool(pool: SimPoolHandle, tmp_path: Path, **settings: Any) -> dict[str, Any]:
    """`jp_server_config` for the extension on the simulated `pool`: a private state dir and `settings`."""
    ranktable = {
        "kubeconfig": str(pool.kubeconfig),
        "context": pool.context,
        "state_dir": str(tmp_path / "state"),
    }
    return {"ServerApp": {"jpserver_extensions": {"ranktable": True}}, "Ranktable": {**ranktable, **settings}}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def jupyter_server_process(
    tmp: Path, port: int, token: str, ranktable: dict[str, Any], *args: str
) -> subprocess.Popen[bytes]:
    """A Jupyter server with the extension as its own process, as a user starts it: its config, runtime,
    data, home and root dirs private under `tmp`, its output in `tmp/server.log`."""
    root = tmp / "root"
    root.mkdir()
    config = {
        "ServerApp": {
            "jpserver_extensions": {"ranktable": True},
            "root_dir": str(root),
            "ip": "127.0.0.1",
            "port": port,
            "port_retries": 0,
            "open_browser": False,
            "allow_root": True,
        },
        "IdentityProvider": {"token": token},
        "Ranktable": ranktable,
    }
    config_file = tmp / "jupyter_server_config.json"
    config_file.write_text(json.dumps(config))
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp / "config"),
        "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
        "JUPYTER_DATA_DIR": str(tmp / "data"),
        "RANKTABLE_HOME": str(tmp / "home"),
    }
    with (tmp / "server.log").open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", f"--config={config_file}", *args],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
        )


def wait_answering(proc: subprocess.Popen[bytes], url: str, token: str, log: Path, timeout: float) -> None:
    """Until `url` answers 200 with the token; the tail of the server's `log` when it ends first."""

    def answering() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(log.read_text(errors="replace")[-3000:])
        request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    eventually(answering, timeout, "the Jupyter server to start", every=0.3)


async def submit_bash(jp_fetch: Any, name: str, script: str, nodes: int, image: str = "i") -> Any:
    """Submit job `name` running `script` in bash on `nodes` pods of 8 NPUs; the submitted run."""
    spec = {
        "name": name,
        "image": image,
        "nodes": nodes,
        "npus_per_node": 8,
        "command": ["/bin/bash", "-c", script],
    }
    return await call(jp_fetch, "ranktable", "jobs", method="POST", body={"spec": spec}, expect=201)


def log_lines(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The lines of a `logs` stream message (`{pods: [{pod, rank, n, ts, text}]}`, stamps and texts joined
    by newlines), one `{pod, rank, ts, text}` each; checks each group holds `n` of both."""
    out = []
    for group in data["pods"]:
        stamps, texts = group["ts"].split("\n"), group["text"].split("\n")
        assert len(stamps) == len(texts) == group["n"] > 0, group
        out += [
            {"pod": group["pod"], "rank": group["rank"], "ts": ts, "text": text}
            for ts, text in zip(stamps, texts, strict=True)
        ]
    return out


def stalled_reader(port: int, path: str, headers: dict[str, str], job: str) -> socket.socket:
    """A websocket on `path` that subscribes to the job's logs, then never reads (a 4 KiB receive buffer)."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    extra = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    sock.sendall(
        (
            f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n"
        ).encode()
    )
    answer = recv_head(sock, 1)
    if not answer.startswith(b"HTTP/1.1 101"):
        raise RuntimeError(f"the stalled reader's upgrade failed: {answer[:200]!r}")
    payload = json.dumps({"op": "subscribe", "id": "stalled", "channel": "logs", "job": job}).encode()
    assert len(payload) < 126  # one short masked frame
    mask = os.urandom(4)
    sock.sendall(
        bytes([0x81, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    )
    return sock  # and nothing is ever read from it
