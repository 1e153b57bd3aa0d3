"""`make demo`'s stack (`python -m ranktable.server_ext.demo`, #24): what it prints, the workspace it
prepares, and Ctrl-C with a browser tab on a remote kernel: every process it started ends (the remote
kernel on the simulated instance included) and nothing prints a traceback."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml
from tornado.httpclient import AsyncHTTPClient, HTTPRequest
from tornado.websocket import websocket_connect

from ranktable.hccl import parse_rank_table
from ranktable.topology import load_topology
from tests.interrupt import interruptible

DEMO = [sys.executable, "-m", "ranktable.server_ext.demo"]


def _processes_mentioning(text: str) -> list[str]:
    """Live processes whose command line names `text` (zombies and this test's own excluded)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            found.append(f"{entry.name}: {cmdline[:200]}")
    return found


def _wait_for_line(proc: subprocess.Popen[str], marker: str, timeout: float) -> list[str]:
    assert proc.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"the demo exited early: {''.join(lines)}")
        lines.append(line)
        if marker in line:
            return lines
    raise AssertionError(f"no {marker!r} within {timeout} s: {''.join(lines)}")


async def test_demo_prints_what_runs_prepares_the_workspace_and_ctrl_c_stops_everything(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("RANKTABLE_HOME", None)
    proc = subprocess.Popen(
        [*DEMO, "--no-browser", "--home", str(home), "--nodes", "4", "--leaves", "2", "--fresh"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        start_new_session=True,  # as in a terminal: Ctrl-C is sent to the demo (its children have their own)
        **interruptible(),
    )
    try:
        printed = "".join(_wait_for_line(proc, "Ctrl-C stops everything", 240))
        url = re.search(r"(http://127\.0\.0\.1:\d+)/lab\?token=(\w+)", printed)
        assert url is not None, printed
        base, token = url.group(1), url.group(2)
        assert len(printed.strip().splitlines()) <= 12, printed  # only what the user needs
        shared = home / "notebook" / "shared"
        assert f"its shared storage {shared}" in printed

        workspace = home / "workspace"
        job = yaml.safe_load((workspace / "bert.rtjob.yaml").read_text())
        assert job["entry"]["script"] == f"{shared}/project/train.py"
        assert "DEMO_FAIL_RANK" in (workspace / "project" / "train.py").read_text()
        table = parse_rank_table((workspace / "layout" / "jobstart_hccl.json").read_text(), "table")
        topology = load_topology(workspace / "layout" / "topology.yaml")
        leaves = [topology.leaf_of(topology.resolve(s.server_id) or "") for s in table.servers]
        assert len(leaves) == 4 and leaves[0] != leaves[1] and None not in leaves  # leaf by leaf in turn

        # a remote kernel on the simulated instance, with a tab (a websocket) open on it
        kernel_env = {**env, "RANKTABLE_HOME": str(home), "JUPYTER_DATA_DIR": str(home / "jupyter-data")}
        subprocess.run(
            [
                sys.executable,
                "-m",
                "ranktable",
                "kernel",
                "install",
                "sim-notebook",
                "--python",
                sys.executable,
            ],
            check=True,
            env=kernel_env,
            capture_output=True,
        )
        http = AsyncHTTPClient()
        headers = {"Authorization": f"token {token}"}
        created = await http.fetch(
            HTTPRequest(
                f"{base}/api/kernels",
                method="POST",
                headers=headers,
                body=json.dumps({"name": "ranktable-sim-notebook"}),
                request_timeout=120,
            )
        )
        kernel_id = json.loads(created.body)["id"]
        ws_url = base.replace("http", "ws") + f"/api/kernels/{kernel_id}/channels"
        tab = await websocket_connect(HTTPRequest(ws_url, headers=headers))
        remote = home / "notebook"
        assert any("ipykernel" in p or "-c" in p for p in _processes_mentioning(str(remote))), (
            "no remote kernel"
        )

        proc.send_signal(signal.SIGINT)  # Ctrl-C
        assert proc.stdout is not None
        rest = proc.stdout.read()
        assert proc.wait(timeout=90) == 0
        tab.close()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in printed + rest, rest
    assert "stopped JupyterLab" in rest
    for log in (home / "demo-logs").iterdir():
        assert "Traceback" not in log.read_text(errors="replace"), log
    assert _processes_mentioning(str(home)) == []
