"""A real Jupyter server is stopped in the middle of a cell on a remote kernel and started again: the new
server re-attaches the kernel by itself (same id), the client reconnects and gets every line the cell
printed — including those printed while no server ran — in order, once. Real sshd, real servers.

The cell prints for 60 s (the issue's own test), so the new server is up while it still runs: the
client's websocket must connect at once, not when the busy kernel finally answers on its shell channel."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.websocket import websocket_connect

from ranktable.remote.kernelspec import install_kernelspec
from tests.integration.fixtures.sshd import SshdProfile
from tests.integration.test_kernel_server import _message

pytestmark = pytest.mark.fault

TOKEN = "restart-test-token"
CELL_SECONDS = 60


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Server:
    """``jupyter server`` in a subprocess with the ranktable extension, sharing one RANKTABLE_HOME."""

    def __init__(self, root: Path, env: dict[str, str], log: Path) -> None:
        self.port = _free_port()
        self.log = log
        argv = [
            sys.executable, "-m", "jupyter_server", "--no-browser", f"--port={self.port}",
            "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
            "--ServerApp.jpserver_extensions={'ranktable': True}", "--allow-root",
        ]  # fmt: skip
        self.process = subprocess.Popen(argv, env=env, stdout=log.open("ab"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while True:
            assert self.process.poll() is None, log.read_text()[-3000:]
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()[-3000:]
                time.sleep(0.2)

    def url(self, path: str, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}/{path}"

    async def call(self, method: str, path: str, body: Any = None) -> Any:
        request = HTTPRequest(
            self.url(path),
            method=method,
            headers={"Authorization": f"token {TOKEN}"},
            body=None if body is None else json.dumps(body),
            request_timeout=120,
        )
        response = await AsyncHTTPClient().fetch(request)
        return json.loads(response.body) if response.body else None

    def kill9(self) -> None:
        """kill -9: the server vanishes without detaching anything (a crash, the OOM killer)."""
        self.process.kill()
        self.process.wait(30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # a clean stop, like Ctrl+C / systemd
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


async def _lines(ws: Any, msg_id: str, until_line: str | None, timeout: float) -> list[str]:
    """Stream lines of ``msg_id`` until ``until_line`` is seen, or (None) until the idle status."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        raw = await asyncio.wait_for(ws.read_message(), max(deadline - time.monotonic(), 0.1))
        assert raw is not None, "websocket closed"
        data = json.loads(raw)
        if data.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        if data["msg_type"] == "stream":
            lines += data["content"]["text"].splitlines()
            if until_line in lines:
                return lines
        elif (
            until_line is None
            and data["msg_type"] == "status"
            and data["content"]["execution_state"] == "idle"
        ):
            return lines


@pytest.fixture
def server_env(
    sshd_profile: SshdProfile, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[dict[str, str]]:
    for name in ("JUPYTER_DATA_DIR", "JUPYTER_PATH", "JUPYTER_RUNTIME_DIR", "JUPYTER_CONFIG_DIR"):
        monkeypatch.setenv(name, str(tmp_path / "jupyter" / name.lower()))
    install_kernelspec("box", python=sys.executable)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[2]), env.get("PYTHONPATH", "")])
    yield env


@pytest.mark.parametrize("how", ["SIGTERM", "SIGKILL"])
async def test_restarted_server_reattaches_the_kernel_and_replays_missed_output(
    server_env: dict[str, str], tmp_path: Path, how: str
) -> None:
    """Stopped cleanly or killed with -9 mid-cell, a new server attaches the remote kernel by itself and the
    notebook gets every line of the cell once, in order (#26's fault suite)."""
    log = tmp_path / "servers.log"
    first = Server(tmp_path, server_env, log)
    second: Server | None = None
    try:
        kernel = await first.call("POST", "api/kernels", {"name": "ranktable-box"})
        kernel_id, session = kernel["id"], uuid.uuid4().hex
        channels = f"api/kernels/{kernel_id}/channels?session_id={session}&token={TOKEN}"
        ws = await websocket_connect(first.url(channels, "ws"))
        cell = f"import time\nfor i in range({CELL_SECONDS}):\n    print(f'line {{i}}', flush=True)\n"
        cell += "    time.sleep(1)\n"
        request = _message(cell, session)
        ws.write_message(json.dumps(request))
        seen = await _lines(ws, request["header"]["msg_id"], "line 1", timeout=90)
        ws.close()
        first.stop() if how == "SIGTERM" else first.kill9()  # mid-cell: the kernel prints on, no server
        time.sleep(2)

        second = Server(tmp_path, server_env, log)
        deadline = time.monotonic() + 60
        while True:  # the new server attaches it by itself, under the same id
            listed = await second.call("GET", "ranktable/remote-kernels")
            if any(k["kernel_id"] == kernel_id and k["attached"] for k in listed["kernels"]):
                break
            assert time.monotonic() < deadline, (listed, log.read_text()[-3000:])
            await asyncio.sleep(0.5)
        assert kernel_id in [k["id"] for k in await second.call("GET", "api/kernels")]
        asked = time.monotonic()
        ws = await websocket_connect(second.url(channels, "ws"))
        assert time.monotonic() - asked < 15, "the websocket waited for the busy kernel"
        rest = await _lines(ws, request["header"]["msg_id"], None, timeout=CELL_SECONDS + 90)
        assert seen + rest == [f"line {i}" for i in range(CELL_SECONDS)]  # all, in order, once
        ws.close()

        # Shut down from the list: the remote process group goes away and the record with it.
        await second.call("DELETE", f"ranktable/remote-kernels/{kernel_id}")
        listed = await second.call("GET", "ranktable/remote-kernels")
        assert listed["kernels"] == []
        assert kernel_id not in [k["id"] for k in await second.call("GET", "api/kernels")]
    finally:
        first.stop()
        if second is not None:
            second.stop()
