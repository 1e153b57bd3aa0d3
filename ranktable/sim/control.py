"""Run a pool in the background and find or stop it again (what `ranktable sim start/stop` do)."""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from ranktable.errors import RanktableError
from ranktable.sim.paths import CONTEXT

START_TIMEOUT = 30.0


@dataclass(frozen=True)
class Running:
    pid: int
    port: int
    url: str
    kubeconfig: Path
    context: str
    pods: str = ""  # how pod processes are confined, or why they are not (Confinement.describe)
    confined: bool = True


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def healthy(url: str, ca_file: Path, timeout: float = 1.0) -> bool:
    try:
        context = ssl.create_default_context(cafile=str(ca_file))
        with urllib.request.urlopen(f"{url}/healthz", timeout=timeout, context=context) as resp:  # noqa: S310
            return bool(resp.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def recorded_pid(state_dir: Path) -> int:
    """The pid `server.json` names if that process is still alive (answering or not), else 0."""
    try:
        pid = int(json.loads((state_dir / "server.json").read_text()).get("pid", 0))
    except (OSError, ValueError):
        return 0
    return pid if pid > 0 and _alive(pid) else 0


def find_running(state_dir: Path) -> Running | None:
    """The pool serving from `state_dir`, if its process is alive and answers."""
    try:
        info = json.loads((state_dir / "server.json").read_text())
    except (OSError, ValueError):
        return None
    pid, url = int(info.get("pid", 0)), str(info.get("url", ""))
    if pid <= 0 or not _alive(pid) or not healthy(url, state_dir / "server.crt"):
        return None
    return Running(
        pid,
        int(info["port"]),
        url,
        state_dir / "kubeconfig",
        str(info.get("context", CONTEXT)),
        str(info.get("pods", "")),
        bool(info.get("confined", True)),
    )


def start_background(state_dir: Path, serve_args: list[str], timeout: float | None = None) -> Running:
    """Spawn `ranktable sim serve` detached and wait until it answers (within `timeout` seconds)."""
    timeout = timeout or START_TIMEOUT
    state_dir.mkdir(parents=True, exist_ok=True)
    stuck = recorded_pid(state_dir)
    if stuck:
        raise RanktableError(
            f"a pool process (pid {stuck}) owns {state_dir} but does not answer",
            where=str(state_dir / "server.json"),
            fix="run `ranktable sim stop` first",
        )
    (state_dir / "server.json").unlink(missing_ok=True)
    log = open(state_dir / "serve.log", "ab")  # noqa: SIM115 - handed to the child
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ranktable", "sim", "serve", "--state-dir", str(state_dir), *serve_args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    finally:
        log.close()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = (state_dir / "serve.log").read_text(errors="replace").strip().splitlines()[-3:]
            raise RanktableError(
                f"the simulated pool exited at start (code {proc.returncode}): " + " | ".join(tail),
                where=str(state_dir / "serve.log"),
            )
        running = find_running(state_dir)
        if running is not None and running.pid == proc.pid:
            return running
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGTERM)
    raise RanktableError(
        f"the simulated pool did not answer within {timeout:.0f}s",
        where=str(state_dir / "serve.log"),
        fix="see the log for why",
    )


def stop_running(state_dir: Path, timeout: float = 15.0) -> Running | None:
    """SIGTERM the pool serving from `state_dir` (it stops its pod processes) and wait for it to exit."""
    pid = recorded_pid(state_dir)
    if not pid:
        return None
    running = find_running(state_dir) or Running(pid, 0, "", state_dir / "kubeconfig", CONTEXT)
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _alive(pid):
        time.sleep(0.1)
    if _alive(pid):
        os.kill(pid, signal.SIGKILL)
    return running


def ensure_running(state_dir: Path | None = None, serve_args: list[str] | None = None) -> Running:
    """The default pool, started in the background if it is not running (the product's embedded default)."""
    from ranktable.sim.paths import default_state_dir

    where = state_dir or default_state_dir()
    return find_running(where) or start_background(where, serve_args or [])


def live_pod_processes(state_dir: Path) -> list[int]:
    """Pids of pod processes a pool in ``state_dir`` started that still run: what a pool killed with
    -9 leaves behind, with its saved jobs and pods (a start that is not a resume would wipe them)."""
    pids = []
    for info in sorted((state_dir / "pods").glob("*/*/logs/*/*.run.json")):
        try:
            pid = int(json.loads(info.read_text()).get("pid") or 0)
        except (OSError, ValueError, AttributeError):
            continue
        if pid > 0 and _alive(pid):
            pids.append(pid)
    return pids
