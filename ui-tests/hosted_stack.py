"""A hosted JupyterLab for the browser test `tests/hosted.spec.ts` (#30): under a base_url, behind a
reverse proxy that can refuse WebSocket upgrades (as some proxies in front of a hosted Notebook do).

Starts the simulated pool (with one running job), JupyterLab with the extension under
`/notebook/abc123/`, and the proxy; prints one JSON line `{"url", "control", "lab", "server"}` and serves
until SIGTERM. `POST control` with body `allow` or `block` switches websockets (blocked at start). `lab` is
JupyterLab itself, without the proxy; `POST server` with `kill` kills it with SIGKILL (an outage, as the
browser sees it: connections refused) and with `start` starts it again on the same port and state, answering
once it serves (the fault test `tests/outage.spec.ts`, #26).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from tornado import httpclient, web, websocket

from serve_stack import announce_and_serve

BASE = "/notebook/abc123/"
HERE = Path(__file__).parent
SKIP_HEADERS = {"content-length", "transfer-encoding", "connection", "content-encoding"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class State:
    allow_websockets = False
    upstream = ""
    lab: subprocess.Popen[bytes] | None = None
    lab_argv: list[str] = []
    lab_log: Path = Path(os.devnull)


def start_lab() -> None:
    """Start JupyterLab in its own process group (so a kill reaches all of it), logging to `State.lab_log`."""
    with State.lab_log.open("ab") as log:
        State.lab = subprocess.Popen(
            State.lab_argv, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True
        )


def kill_lab(sig: int) -> None:
    if State.lab is not None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(State.lab.pid, sig)
        with contextlib.suppress(subprocess.TimeoutExpired):
            State.lab.wait(20)


class Control(web.RequestHandler):
    def post(self) -> None:
        State.allow_websockets = self.request.body.strip() == b"allow"
        self.finish({"websockets": State.allow_websockets})


class ServerControl(web.RequestHandler):
    """`kill`: SIGKILL JupyterLab, no shutdown of any kind; `start`: the same command again, once serving."""

    async def post(self) -> None:
        action = self.request.body.strip()
        if action == b"kill":
            kill_lab(signal.SIGKILL)
        elif action == b"start" and State.lab is not None and State.lab.poll() is not None:
            start_lab()
            await asyncio.to_thread(_wait, f"{State.upstream}{BASE}api/status")
        elif action != b"start":
            raise web.HTTPError(400)
        self.finish({"running": State.lab is not None and State.lab.poll() is None})


class Proxy(websocket.WebSocketHandler):
    """Plain HTTP is relayed; a WebSocket upgrade is refused while blocked (the server never sees it)."""

    upstream_ws: websocket.WebSocketClientConnection | None = None
    pump: asyncio.Future[None] | None = None

    def check_origin(self, origin: str) -> bool:
        return True

    async def get(self, *args: Any, **kwargs: Any) -> None:
        if self.request.headers.get("Upgrade", "").lower() != "websocket":
            await self._relay()
        elif not State.allow_websockets:
            self.set_status(400)
            self.finish("this proxy does not pass WebSocket upgrades")
        else:
            await super().get(*args, **kwargs)

    async def post(self) -> None:
        await self._relay()

    put = patch = delete = head = options = post

    async def _relay(self) -> None:
        headers = {k: v for k, v in self.request.headers.get_all() if k.lower() not in ("host", "connection")}
        request = httpclient.HTTPRequest(
            State.upstream + self.request.uri,
            method=self.request.method,
            headers=headers,
            body=self.request.body if self.request.method in ("POST", "PUT", "PATCH", "DELETE") else None,
            allow_nonstandard_methods=True,
            follow_redirects=False,
            decompress_response=True,
            request_timeout=120,
        )
        resp = await httpclient.AsyncHTTPClient().fetch(request, raise_error=False)
        self.set_status(resp.code, resp.reason)
        self.clear_header("Content-Type")
        for name, value in resp.headers.get_all():
            if name.lower() not in SKIP_HEADERS:
                self.add_header(name, value)
        if resp.body and resp.code != 304:
            self.write(resp.body)
        self.finish()

    async def open(self, *args: Any, **kwargs: Any) -> None:
        url = State.upstream.replace("http", "ws", 1) + self.request.uri
        headers = {
            k: v for k, v in self.request.headers.get_all() if k.lower() in ("cookie", "authorization")
        }
        self.upstream_ws = await websocket.websocket_connect(httpclient.HTTPRequest(url, headers=headers))
        self.pump = asyncio.ensure_future(self._pump())  # kept: a task without a reference may be collected

    async def _pump(self) -> None:
        assert self.upstream_ws is not None
        while True:
            message = await self.upstream_ws.read_message()
            if message is None:
                self.close()
                return
            with contextlib.suppress(websocket.WebSocketClosedError):
                await self.write_message(message, binary=isinstance(message, bytes))

    async def on_message(self, message: str | bytes) -> None:
        if self.upstream_ws is not None:
            await self.upstream_ws.write_message(message, binary=isinstance(message, bytes))

    def on_close(self) -> None:
        if self.upstream_ws is not None:
            self.upstream_ws.close()


def _wait(url: str, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as resp:  # noqa: S310 - http://127.0.0.1 only
            if resp.status == 200:
                return
        time.sleep(0.3)
    raise TimeoutError(f"{url} did not answer in {timeout:.0f} s")


async def main() -> None:
    from ranktable.sim.pool import Pool, PoolConfig
    from ranktable.usecases.jobs import ClusterSettings, Jobs

    home = Path(tempfile.mkdtemp(prefix="ranktable-hosted-"))
    pool = Pool(PoolConfig(state_dir=home / "sim", nodes=4, leaves=2, tenants=0)).start()
    jobs = Jobs(ClusterSettings(kubeconfig=str(pool.kubeconfig), namespace="default", owner="hosted"))
    jobs.submit(
        jobs.spec(
            {
                "name": "hosted-job",
                "image": "train:v1",
                "nodes": 1,
                "npus_per_node": 8,
                "command": ["/bin/sh", "-c", "echo hosted step 1; sleep 600"],
            }
        )
    )
    lab_port = free_port()
    State.upstream = f"http://127.0.0.1:{lab_port}"
    State.lab_log = home / "lab.log"
    State.lab_argv = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        f"--port={lab_port}",
        "--ServerApp.port_retries=0",  # a restart takes the same port or fails, never moves
        f"--ServerApp.base_url={BASE}",
        f"--config={HERE / 'jupyter_server_test_config.py'}",
        f"--Ranktable.kubeconfig={pool.kubeconfig}",
        f"--Ranktable.state_dir={home / 'state'}",
        f"--ServerApp.root_dir={home}",
        "--ServerApp.allow_root=True",
    ]
    start_lab()
    try:
        await asyncio.to_thread(_wait, f"{State.upstream}{BASE}api/status")
        port = free_port()
        app = web.Application(
            [(r"/__proxy__/websockets", Control), (r"/__proxy__/server", ServerControl), (r"/.*", Proxy)]
        )
        app.listen(port, address="127.0.0.1")
        url = f"http://127.0.0.1:{port}"
        urls = {
            "url": url + BASE.rstrip("/"),
            "control": f"{url}/__proxy__/websockets",
            "lab": State.upstream + BASE.rstrip("/"),
            "server": f"{url}/__proxy__/server",
        }
        await announce_and_serve(urls)
    finally:
        kill_lab(signal.SIGTERM)
        pool.stop()
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    asyncio.run(main())
