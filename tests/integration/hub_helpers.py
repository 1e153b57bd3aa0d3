"""A JupyterHub for the team tests (#30): docs/teams.md's `jupyterhub_config.py` and single-user
authorizer, run by the Hub (PyPI) behind configurable-http-proxy (npm), local processes for alice, bob
and carol. Used by tests/integration/test_jupyterhub.py and the browser stack ui-tests/hub_stack.py."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tornado.httpclient import AsyncHTTPClient, HTTPRequest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "teams.md"
PROXY = ROOT / "node_modules" / ".bin" / "configurable-http-proxy"
START_TIMEOUT = 120.0


def doc_blocks() -> tuple[str, str]:
    """docs/teams.md's `jupyterhub_config.py` and `jupyter_server_config.py`, as an admin copies them."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    hub = next(b for b in blocks if b.startswith("# jupyterhub_config.py"))
    server = next(b for b in blocks if "jupyter_server_config.py" in b.splitlines()[0])
    return hub, server


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Hub:
    url: str
    service_token: str
    proc: subprocess.Popen[bytes]
    log: Path

    async def api(self, method: str, path: str, body: Any = None, token: str | None = None) -> Any:
        return await request(
            method,
            f"{self.url}/hub/api/{path}",
            body,
            token or self.service_token,
            expect=(200, 201, 202, 204),
        )


async def request(
    method: str, url: str, body: Any = None, token: str = "", expect: tuple[int, ...] = (200,)
) -> Any:
    got = await fetch(method, url, body, token)
    assert got[0] in expect, f"{method} {url} -> {got[0]}: {got[1]}"
    return got[1]


async def fetch(method: str, url: str, body: Any = None, token: str = "") -> tuple[int, Any]:
    req = HTTPRequest(
        url,
        method=method,
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"},
        body=json.dumps(body) if body is not None else (b"" if method in ("POST", "PUT") else None),
        allow_nonstandard_methods=True,
        follow_redirects=False,
        request_timeout=60,
    )
    resp = await AsyncHTTPClient().fetch(req, raise_error=False)
    text = resp.body.decode() if resp.body else ""
    try:
        return resp.code, json.loads(text) if text else None
    except ValueError:
        return resp.code, text


@contextlib.contextmanager
def start_hub(pool_dir: Path, tmp_path: Path) -> Iterator[Hub]:
    """docs/teams.md's Hub for alice, bob and carol, their kubeconfigs from `pool_dir` (`sim --user`)."""
    if not PROXY.exists() or shutil.which("node") is None:
        raise RuntimeError("configurable-http-proxy is missing: `make env` installs it (package.json)")
    hub_config, server_config = doc_blocks()
    server_file = tmp_path / "jupyter_server_config.py"
    server_file.write_text(server_config)
    homes = tmp_path / "homes"
    homes.mkdir()
    port, token = free_port(), secrets.token_hex(16)
    config = tmp_path / "jupyterhub_config.py"
    config.write_text(
        hub_config
        + f"""
# -- the test's own part: local processes, dummy passwords, a service that drives the Hub --------------
import sys
c.JupyterHub.authenticator_class = "dummy"
c.Authenticator.allowed_users = {{"alice", "bob", "carol"}}
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = {str(homes)!r} + "/{{username}}"
c.Spawner.cmd = [sys.executable, "-m", "jupyterhub.singleuser"]
c.Spawner.args = ["--config={server_file}", "--allow-root"]  # the test runs as root
c.Spawner.start_timeout = {int(START_TIMEOUT)}
c.Spawner.http_timeout = {int(START_TIMEOUT)}
c.Spawner.environment["KUBECONFIG"] = lambda s: {str(pool_dir)!r} + f"/kubeconfig-{{s.user.name}}"
c.Spawner.environment["RANKTABLE_HOME"] = lambda s: {str(homes)!r} + f"/{{s.user.name}}/.ranktable"
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{free_port()}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{free_port()}"
c.ConfigurableHTTPProxy.command = [{str(PROXY)!r}]
c.ConfigurableHTTPProxy.pid_file = {str(tmp_path / "proxy.pid")!r}
c.JupyterHub.db_url = "sqlite:///{tmp_path / "hub.sqlite"}"
c.JupyterHub.cookie_secret_file = {str(tmp_path / "cookie_secret")!r}
c.JupyterHub.cleanup_servers = True
c.JupyterHub.services = [{{"name": "driver", "api_token": {token!r}}}]
c.JupyterHub.load_roles.append(
    {{"name": "driver", "scopes": ["admin:users", "admin:servers", "tokens"], "services": ["driver"]}}
)
"""
    )
    log = tmp_path / "hub.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterhub", "-f", str(config)],
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env={**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"},
        )
    handle = Hub(f"http://127.0.0.1:{port}", token, proc, log)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while not _answers(f"{handle.url}/hub/api/"):  # the proxy answers 404/503 until the Hub routes
            assert proc.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.3)
        yield handle
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
        _stop_proxy(tmp_path / "proxy.pid")


def _stop_proxy(pid_file: Path) -> None:
    """The proxy runs in its own session: a Hub stopped before it took charge of it leaves it running."""
    with contextlib.suppress(OSError, ValueError):
        pid = int(pid_file.read_text().strip())
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)


async def start_server(hub: Hub, user: str) -> str:
    """Start `user`'s server and return a token of theirs (it inherits their Hub roles)."""
    await hub.api("POST", f"users/{user}/server")
    deadline = time.monotonic() + START_TIMEOUT
    while not ((await hub.api("GET", f"users/{user}"))["servers"].get("") or {}).get("ready"):
        assert time.monotonic() < deadline, hub.log.read_text()[-4000:]
        await asyncio.sleep(0.5)
    return str((await hub.api("POST", f"users/{user}/tokens", {"note": "test"}))["token"])


def spec(name: str) -> dict[str, Any]:
    script = 'for i in 1 2 3; do echo "step $i loss 0.$i"; sleep 0.5; done; sleep 120'
    return {
        "name": name,
        "image": "train:v1",
        "nodes": 1,
        "npus_per_node": 8,
        "command": ["/bin/sh", "-c", script],
    }
