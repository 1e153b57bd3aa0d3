"""The remote kernel the way JupyterLab uses it: Jupyter Server's REST API and kernel websocket
(``AsyncKernelManager`` inside the server's event loop), against the real sshd."""

from __future__ import annotations

import asyncio
import datetime
import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ranktable.remote import manager as manager_module
from ranktable.remote.kernelspec import install_kernelspec


@pytest.fixture
def remote_kernelspec(jp_environ: None, sshd_profile: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Profile "box" on the sshd, and its kernelspec installed where the test server looks."""
    monkeypatch.setattr(manager_module, "_default", None)
    yield install_kernelspec("box", python=sys.executable)
    manager_module.default_manager().close()


def _message(code: str, session: str) -> dict[str, Any]:
    return {
        "header": {
            "msg_id": uuid.uuid4().hex,
            "msg_type": "execute_request",
            "username": "test",
            "session": session,
            "version": "5.3",
            "date": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        },
        "parent_header": {},
        "metadata": {},
        "content": {
            "code": code,
            "silent": False,
            "store_history": False,
            "user_expressions": {},
            "allow_stdin": False,
            "stop_on_error": True,
        },
        "channel": "shell",
        "buffers": [],
    }


async def _execute(ws: Any, code: str, session: str) -> tuple[str, dict[str, Any]]:
    """Send one execute_request over the websocket; collect stdout until its reply and idle status."""
    msg = _message(code, session)
    ws.write_message(json.dumps(msg))
    out, reply, idle = [], None, False
    while reply is None or not idle:
        raw = await asyncio.wait_for(ws.read_message(), 60)
        data = json.loads(raw)
        if data.get("parent_header", {}).get("msg_id") != msg["header"]["msg_id"]:
            continue
        kind = data["msg_type"]
        if kind == "stream":
            out.append(data["content"]["text"])
        elif kind == "execute_reply":
            reply = data["content"]
        elif kind == "status" and data["content"]["execution_state"] == "idle":
            idle = True
    return "".join(out), reply


def _live_group(pgid: int) -> list[str]:
    result = subprocess.run(["pgrep", "-g", str(pgid)], capture_output=True, text=True)
    live = []
    for pid in result.stdout.split():
        try:
            if Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
                live.append(pid)
        except (OSError, IndexError):
            continue
    return live


async def test_notebook_on_the_remote_kernel_through_jupyter_server(
    jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any, remote_kernelspec: str, sshd_profile: Any
) -> None:
    specs = json.loads((await jp_fetch("api", "kernelspecs")).body)["kernelspecs"]
    assert specs[remote_kernelspec]["spec"]["display_name"] == "Python (box)"  # what the launcher shows

    created = await jp_fetch("api", "kernels", method="POST", body=json.dumps({"name": remote_kernelspec}))
    kernel_id = json.loads(created.body)["id"]
    km = jp_serverapp.kernel_manager.get_kernel(kernel_id)
    pgid = km.provisioner.pid
    assert pgid is not None and _live_group(pgid)

    ws = await jp_ws_fetch("api", "kernels", kernel_id, "channels")
    session = uuid.uuid4().hex
    try:
        out, reply = await _execute(ws, "import os; print(os.getcwd())", session)
        assert reply["status"] == "ok"
        assert out.strip() == str(sshd_profile.remote_dir.resolve())

        # interrupt a long cell through the REST API, as the toolbar's stop button does
        msg = _message("import time; time.sleep(60)", session)
        ws.write_message(json.dumps(msg))
        await asyncio.sleep(1.0)
        await jp_fetch("api", "kernels", kernel_id, "interrupt", method="POST", body="")
        while True:
            data = json.loads(await asyncio.wait_for(ws.read_message(), 15))
            if (
                data["msg_type"] == "execute_reply"
                and data["parent_header"]["msg_id"] == msg["header"]["msg_id"]
            ):
                break
        assert data["content"]["status"] == "error" and data["content"]["ename"] == "KeyboardInterrupt"
    finally:
        ws.close()

    await jp_fetch("api", "kernels", kernel_id, method="DELETE")
    for _ in range(50):
        if not _live_group(pgid):
            break
        await asyncio.sleep(0.1)
    assert _live_group(pgid) == []
